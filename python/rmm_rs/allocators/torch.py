"""rmm_rs.allocators.torch: RAPIDS RMM's ``rmm_torch_allocator`` for
``torch.cuda.memory.change_current_allocator(rmm_torch_allocator)``: PyTorch's CUDA memory from
each device's current resource, on PyTorch's current stream. None where PyTorch or CUDA is
missing, as in RAPIDS.

It is rmm-rs's PyTorch backend (``rmm_rs_torch.cpp``, built for the installed PyTorch on first
use: statistics, ``cudnn.benchmark``, CUDA graphs, MemPool, snapshots, IPC and
``torch.OutOfMemoryError`` behave as under PyTorch's own allocator), installed when PyTorch asks
for it, i.e. when ``change_current_allocator`` is called; where the backend cannot be built it
falls back, with a warning, to ``CUDAPluggableAllocator`` over ``librmm.so``, which is what
RAPIDS' allocator is. Unlike :func:`rmm_rs.use_for_torch`, nothing is configured here: each
device allocates from the resource it has (``rmm.mr.set_current_device_resource``)."""

from __future__ import annotations

from typing import Any

from ..frameworks import torch as _torch_hooks

__all__ = ["rmm_torch_allocator"]

rmm_torch_allocator: Any = None

try:
    from torch.cuda.memory import _CUDAAllocator
except ImportError:
    pass
else:
    import torch as _torch

    class _RmmTorchAllocator(_CUDAAllocator):
        """An allocator object for ``change_current_allocator``: asked for its allocator, it
        installs rmm-rs's backend (PyTorch then sets the same one again, which it allows while
        the allocator is unused)."""

        def __init__(self) -> None:  # the allocator is made when PyTorch asks for it
            pass

        def allocator(self) -> Any:
            installed = _torch_hooks.use_for_torch(apply_default=False)
            inner = getattr(installed, "allocator", None)
            return inner() if callable(inner) else _torch._C._cuda_getAllocator()

    if _torch.cuda.is_available():
        rmm_torch_allocator = _RmmTorchAllocator()
