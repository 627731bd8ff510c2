#!/usr/bin/env bash
# rmm-rs under the engines that run one process per GPU, on a GPU machine with no Rust and no
# network, on however many GPUs it has (one included): librmm.so comes from stage/
# (scripts/stage.sh), Dask's wheels from .whl/ (scripts/fetch-dask-wheels.sh) when the machine
# lacks Dask. Carry stage/ and .whl/ with the work tree.
#
#   scripts/gpu-distributed.sh          run from anywhere inside the repository
#
# 1. torch.distributed (bench/frameworks/distributed_torch.py): DDP and FSDP2 over NCCL with
#    torchrun, one rank per GPU, and a model split over two GPUs (skipped on one), under
#    PyTorch's allocator (plain and expandable_segments) and rmm-rs (default stack, pool).
# 2. Dask (bench/frameworks/dask_cupy.py): a LocalCluster of one worker per GPU set up by
#    rmm_rs.dask.RmmRsPlugin, a dask.array computation on CuPy chunks.
# 3. MPI (bench/frameworks/mpi_cupy.py): mpirun -n <GPUs>, a rank per GPU with its own rmm-rs
#    stack, allreduce and send/recv of CuPy buffers from rmm-rs.
# Each part has a time limit (TORCH_BUDGET, DASK_TIMEOUT, MPI_TIMEOUT seconds) so that the
# whole stays under about 8 minutes; each prints a Markdown table. Exit status: 0 when every
# part that could run passed (a part whose engine is missing is reported as skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
python=${PYTHON:-python3}

# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-distributed.sh "$stage/lib/librmm.so"
export RMM_RS_LIBRARY=$stage/lib/librmm.so PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
unset RMM_SIM_DEVICES RMM_SIM_ON_RACE RMM_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF CUDA_VISIBLE_DEVICES
work=$(mktemp -d /tmp/rmm-distributed.XXXXXX)

section "machine"
nvidia-smi -L || echo "nvidia-smi -L failed"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "${gpus:-0}" -ge 1 ] || { echo "gpu-distributed.sh: no GPU found" >&2; exit 2; }
echo "$gpus GPUs; $(nproc) CPUs"
[ -f "$stage/STAGED.txt" ] && cat "$stage/STAGED.txt"
# What this machine has of what the parts use (and so what .whl/ must bring).
"$python" - <<'PY'
import importlib, sys
print("python", sys.version.split()[0], sys.executable)
for name in ("torch", "cupy", "numpy", "mpi4py", "dask", "distributed", "numba"):
    try:
        module = importlib.import_module(name)
        print(f"  {name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001
        print(f"  {name}: not importable ({type(error).__name__}: {error})")
PY
command -v mpirun >/dev/null && mpirun --version 2>&1 | head -1

declare -A result seconds
run_part() {  # name, command...: runs it, records PASS/FAIL and its time
  local name=$1 start=$SECONDS
  shift
  section "$name"
  if "$@"; then result[$name]=PASS; else result[$name]="FAIL (exit $?)"; fi
  seconds[$name]=$((SECONDS - start))
}

# 1. torch.distributed. The PyTorch backend is built once here (about 7 s), not by every rank
# at once on first use.
if "$python" -c 'import torch' 2>/dev/null; then
  "$python" -c 'import rmm_rs, time; t = time.time(); print("PyTorch backend:", rmm_rs.build_torch_backend(), "in %.1f s" % (time.time() - t))'
  # No launch starts after the budget, and one launch may take 90 s: the tables always print.
  run_part torch timeout "$((${TORCH_BUDGET:-240} + 100))" "$python" bench/frameworks/distributed_torch.py \
    --budget "${TORCH_BUDGET:-240}" --timeout 90 --json "$work/torch.json"
else
  result[torch]="SKIP (no PyTorch)"
fi

# 2. Dask, from .whl/ when the machine lacks it: installed with --target into a folder of its
# own, on PYTHONPATH for this part only, so nothing of the machine's is replaced.
dask_path=
if "$python" -c 'import dask, distributed' 2>/dev/null; then
  dask_path=
elif ls .whl/dask-*.whl .whl/distributed-*.whl >/dev/null 2>&1; then
  section "Dask from .whl/"
  if "$python" -m pip install --quiet --disable-pip-version-check --no-index --find-links .whl \
      --target "$work/dask-site" dask distributed; then
    dask_path=$work/dask-site
  else
    result[dask]="FAIL (offline install from .whl/)"
  fi
else
  result[dask]="SKIP (no Dask here and no wheels in .whl/: run scripts/fetch-dask-wheels.sh where there is a network)"
fi
if [ -z "${result[dask]:-}" ]; then
  if ! "$python" -c 'import cupy' 2>/dev/null; then
    result[dask]="SKIP (no CuPy)"
  else
    run_part dask env PYTHONPATH="$PYTHONPATH${dask_path:+:$dask_path}" timeout "${DASK_TIMEOUT:-90}" \
      "$python" bench/frameworks/dask_cupy.py
  fi
fi

# 3. MPI: Open MPI refuses root without --allow-run-as-root and passes on only the variables
# named with -x; MPICH's mpirun passes the whole environment.
if ! command -v mpirun >/dev/null; then
  result[mpi]="SKIP (no mpirun)"
elif ! "$python" -c 'import mpi4py, cupy' 2>/dev/null; then
  result[mpi]="SKIP (no mpi4py or CuPy)"
else
  mpi=(mpirun -n "$gpus")
  if mpirun --version 2>&1 | grep -q "Open MPI"; then
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root) && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi+=(--oversubscribe -x RMM_RS_LIBRARY -x PYTHONPATH -x PYTHONUNBUFFERED -x PATH -x LD_LIBRARY_PATH)
  fi
  run_part mpi timeout "${MPI_TIMEOUT:-60}" "${mpi[@]}" "$python" bench/frameworks/mpi_cupy.py
fi

section "gpu-distributed summary ($gpus GPUs)"
status=0
for part in torch dask mpi; do
  printf '  %-6s %s%s\n' "$part" "${result[$part]}" "${seconds[$part]:+ (${seconds[$part]} s)}"
  case ${result[$part]} in FAIL*) status=1 ;; esac
done
echo "results: $work"
exit $status
