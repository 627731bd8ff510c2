#!/usr/bin/env bash
# Fetches CCCL's headers and the CUDA runtime's headers from PyPI (the nvidia-cuda-cccl,
# nvidia-cuda-runtime and nvidia-cuda-crt wheels) into DEST (default build/cccl): DEST/cccl
# holds <cuda/memory_resource>, <thrust/...>, DEST/include holds <cuda_runtime_api.h>. The
# RAPIDS-shaped <rmm/...> headers build against them with a host compiler and no CUDA toolkit
# (cxx.rapids_style, on simulated devices), and scripts/gpu-test.sh builds the same test with
# nvcc against the same CCCL (DEST/cccl.tar.gz, carried to the GPU machine).
set -euo pipefail
dest="${1:-build/cccl}"
cccl_version=13.3.5.0.6
runtime_version=13.5.37
stamp="$dest/.versions"
want="cccl=$cccl_version runtime=$runtime_version"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dest/cccl.tar.gz" ]; then
  exit 0
fi
rm -rf "$dest" && mkdir -p "$dest/wheels"
python3 "$(dirname "$0")/pip-download.py" "$dest/wheels" \
  "nvidia-cuda-cccl==$cccl_version" "nvidia-cuda-runtime==$runtime_version" "nvidia-cuda-crt==$runtime_version"
for wheel in "$dest"/wheels/*.whl; do
  python3 - "$wheel" "$dest" <<'PY'
import sys, zipfile, os
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        # nvidia/cu13/include/cccl/... -> cccl/...; nvidia/cu13/include/... -> include/...
        parts = name.split('/')
        if len(parts) < 4 or parts[2] != 'include' or name.endswith('/'):
            continue
        rel = '/'.join(parts[3:])
        target = os.path.join(dest, rel if rel.startswith('cccl/') else os.path.join('include', rel))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, 'wb') as out:
            out.write(z.read(name))
PY
done
rm -rf "$dest/wheels"
test -f "$dest/cccl/cuda/memory_resource" && test -f "$dest/include/cuda_runtime_api.h"
tar -C "$dest" -czf "$dest/cccl.tar.gz" cccl
echo "$want" > "$stamp"
echo "CCCL $cccl_version and CUDA runtime $runtime_version headers in $dest"
