"""Whether CUDA IPC works on memory from each rmm-rs stack under PyTorch and CuPy: the
legacy IPC API (cudaIpcGetMemHandle) takes memory from cudaMalloc/cuMemAlloc, not memory the
virtual-memory API maps, which decides which stack the one-line installs may default to.
Each case runs in a process of its own (PyTorch picks its allocator before CUDA starts):

    python3 bench/frameworks/ipc_probe.py            every case, one line each
    python3 bench/frameworks/ipc_probe.py --child torch expandable

Environment: RMM_RS_LIBRARY (librmm.so).
"""

import os
import subprocess
import sys

SPECS = {"pool": "pool/cuda", "expandable": "expandable"}


def child(framework, stack):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import rmm_rs

    rmm_rs.configure_from_string(SPECS[stack])
    if framework == "torch":
        import torch

        rmm_rs.use_for_torch()
        tensor = torch.ones(1 << 20, device="cuda")
        # What torch.multiprocessing does to send a CUDA tensor to another process.
        tensor.untyped_storage()._share_cuda_()
    else:
        import cupy

        rmm_rs.use_for_cupy()
        array = cupy.ones(1 << 20, dtype=cupy.float32)
        cupy.cuda.runtime.ipcGetMemHandle(array.data.ptr)
    print("IPC handle made")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    for framework in ("torch", "cupy"):
        for stack in SPECS:
            run = subprocess.run([sys.executable, __file__, "--child", framework, stack],
                                 capture_output=True, text=True, timeout=300)
            error = (run.stderr.strip().splitlines() or ["?"])[-1]
            outcome = "IPC handle made" if run.returncode == 0 else f"refused: {error[:200]}"
            print(f"{framework} over rmm-rs {stack}: {outcome}", flush=True)


if __name__ == "__main__":
    main()
