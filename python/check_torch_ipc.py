"""torch.multiprocessing over rmm-rs's expandable memory, on a GPU (scripts/gpu-ipc.sh).

The parent makes a shareable expandable resource device 0's resource, installs rmm-rs as
PyTorch's allocator and sends a CUDA tensor to spawned children through torch.multiprocessing
queues: PyTorch asks the backend for an IPC handle (``shareIpcHandle``; CUDA IPC refuses
virtual memory, so the backend answers PyTorch's own expandable-segment handle, 'e': the
pages that hold the tensor and their file descriptors). One child opens it with the backend
(``getIpcDevPtr``), the other with PyTorch's own allocator. Each child reads the tensor,
doubles it in place, and the parent sees the doubled values. Exits 0 when it all holds, 1
otherwise; 77 without a GPU or PyTorch.
"""

import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

N = 1 << 22


def child(inbox, outbox, backend):
    import rmm_rs
    import torch

    if backend:
        rmm_rs.use_for_torch()  # else PyTorch's own allocator opens the handle
    tensor = inbox.get()
    outbox.put(("sum", float(tensor.double().sum().item())))
    tensor.mul_(2)
    torch.cuda.synchronize()
    del tensor
    outbox.put(("done", None))


def main() -> int:
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        print("SKIP: no PyTorch")
        return 77
    import rmm_rs

    if rmm_rs.device_count() < 1 or rmm_rs.is_simulated():
        print("SKIP: no GPU")
        return 77
    mp.set_start_method("spawn")
    rmm_rs.ipc_allow_openers()  # the spawned child is no ancestor of this process (Yama scope 1)
    shareable = rmm_rs.Resource.shareable_expandable()
    previous = ctypes.c_void_p()
    rmm_rs._call("rmmSetPerDeviceResource", 0, shareable.handle, ctypes.byref(previous))
    if previous.value:
        rmm_rs.Resource(previous.value).close()
    rmm_rs.use_for_torch()
    expected = torch.arange(N, device="cuda", dtype=torch.float32)
    status = 0
    for backend, factor in ((True, 2), (False, 4)):
        tensor = expected * (factor // 2)
        inbox, outbox = mp.Queue(), mp.Queue()
        process = mp.Process(target=child, args=(inbox, outbox, backend))
        process.start()
        inbox.put(tensor)
        kind, total = outbox.get(timeout=300)
        ok = kind == "sum" and total == float((expected * (factor // 2)).double().sum().item())
        kind, _ = outbox.get(timeout=300)
        process.join(timeout=300)
        ok = ok and kind == "done" and process.exitcode == 0
        torch.cuda.synchronize()
        ok = ok and torch.equal(tensor, expected * factor)
        receiver = "rmm-rs's backend" if backend else "PyTorch's own allocator"
        print(f"torch.multiprocessing: a tensor of a shareable expandable resource read and doubled in a "
              f"spawned child on {receiver}: {'ok' if ok else 'WRONG'} (child exit code {process.exitcode})")
        status = status if ok else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
