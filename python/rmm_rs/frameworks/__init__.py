"""rmm_rs.frameworks: rmm-rs as the device allocator of Python frameworks, one module each.

- :mod:`rmm_rs.frameworks.torch`: ``use_for_torch()`` (PyTorch's CUDA allocator: the backend
  ``rmm_rs_torch.cpp``, or ``CUDAPluggableAllocator``), ``build_torch_backend()``,
  ``write_torch_history_log()``;
- :mod:`rmm_rs.frameworks.cupy`: ``use_for_cupy()``, ``cupy_allocator``;
- :mod:`rmm_rs.frameworks.numba`: ``use_for_numba()``, the EMM plugin ``make_numba_manager()``;
- :mod:`rmm_rs.frameworks.dask`: ``RmmRsPlugin``, a stack on each Dask worker's GPU (imports
  Dask's ``distributed``).

None of them imports its framework until it is used, and ``rmm_rs`` re-exports their functions
(``rmm_rs.use_for_torch()``, ...). RAPIDS RMM's names for the same hooks are in
:mod:`rmm_rs.allocators`.
"""
