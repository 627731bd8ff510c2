#!/usr/bin/env bash
# Compiles small programs over the RAPIDS-shaped <rmm/...> headers with nvcc and RAPIDS RMM's
# CUDA test flags (-Werror=all-warnings ...), one per header concern, and prints each
# diagnostic in full: for nvcc-only warnings (#20011-D) that the host-compiler builds cannot
# show. Exits 1 when a program does not compile.
#   scripts/gpu-nvcc-headers.sh    (carry build/cccl/cccl.tar.gz; stage/ is not needed)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
work=$(mktemp -d /tmp/rmm-nvcc-headers.XXXXXX)
tar -xzf "$root/build/cccl/cccl.tar.gz" -C "$work"
flags=(-std=c++20 -arch=sm_90 -Werror=all-warnings -Xcompiler=-Wall,-Werror,-Wextra,-Wsign-conversion
  --expt-extended-lambda --expt-relaxed-constexpr -x cu -c)
cat >"$work/thrust_allocator.cu" <<'CU'
#include <rmm/mr/thrust_allocator_adaptor.hpp>
#include <rmm/device_vector.hpp>
template class rmm::mr::thrust_allocator<int>;
int main() { rmm::device_vector<int> v(10); return static_cast<int>(v.size()) - 10; }
CU
cat >"$work/device_buffer.cu" <<'CU'
#include <rmm/device_buffer.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <thrust/sequence.h>
#include <rmm/exec_policy.hpp>
int main() {
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::pool_memory_resource pool{cuda, 1 << 20};
  rmm::device_buffer buffer(1024, rmm::cuda_stream_view{}, pool);
  auto *data = static_cast<int *>(buffer.data());
  thrust::sequence(rmm::exec_policy(rmm::cuda_stream_view{}), data, data + 256);
  return 0;
}
CU
compile() { # <include dir> <label>
  for program in thrust_allocator device_buffer; do
    if "$nvcc" "${flags[@]}" -I"$work/cccl" -I"$1" "$work/$program.cu" -o "$work/$program.$2.o" >"$work/$program.$2.log" 2>&1; then
      echo "$2 $program: compiles"
    else
      echo "$2 $program: FAILS"; sed 's/^/    /' "$work/$program.$2.log" | head -n 12
      failed=1
    fi
  done
}
"$nvcc" --version | tail -n 1
failed=0
compile "$root/include" headers
rm -rf "$work"
exit $failed
