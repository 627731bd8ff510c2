"""rmm_rs.allocators: RAPIDS RMM's ``rmm.allocators`` names for the framework hooks, each
allocating from the current device's resource (``rmm_rs.mr.get_current_device_resource()``):
``cupy.rmm_cupy_allocator``, ``numba.RMMNumbaManager`` (``NUMBA_CUDA_MEMORY_MANAGER=
rmm_rs.allocators.numba``) and ``torch.rmm_torch_allocator``. Each submodule imports its
framework; rmm_rs's own hooks (``rmm_rs.use_for_cupy()``, ...) are in :mod:`rmm_rs.frameworks`."""
