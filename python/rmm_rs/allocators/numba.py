"""rmm_rs.allocators.numba: RAPIDS RMM's ``RMMNumbaManager``, Numba's External Memory
Management plugin over rmm-rs (``numba.cuda.set_memory_manager(RMMNumbaManager)``, or
``NUMBA_CUDA_MEMORY_MANAGER=rmm_rs.allocators.numba``, which reads ``_numba_memory_manager``).
Importing this module imports Numba."""

from __future__ import annotations

from ..frameworks.numba import make_numba_manager

RMMNumbaManager = make_numba_manager()

# What Numba looks up in the module NUMBA_CUDA_MEMORY_MANAGER names.
_numba_memory_manager = RMMNumbaManager

__all__ = ["RMMNumbaManager"]
