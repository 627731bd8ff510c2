"""rmm_rs.rmm: RAPIDS RMM's ``rmm.reinitialize`` and its hooks, over :mod:`rmm_rs.mr`."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _core
from ._bindings import RMMError
from .pylibrmm import memory_resource as mr
from .pylibrmm.helper import parse_bytes

__all__ = ["RMMError", "is_initialized", "register_reinitialize_hook", "reinitialize", "unregister_reinitialize_hook"]

_reinitialize_hooks: List[Tuple[Callable[..., Any], Tuple[Any, ...], Dict[str, Any]]] = []


def reinitialize(pool_allocator: bool = False, managed_memory: bool = False,
                 initial_pool_size: Union[int, str, None] = None, maximum_pool_size: Union[int, str, None] = None,
                 devices: Union[int, List[int], None] = 0, logging: bool = False,
                 log_file_name: Optional[str] = None) -> None:
    """Sets each of `devices` (an int or a list; default device 0) up afresh, as RAPIDS RMM
    does: the hooks registered with :func:`register_reinitialize_hook` run first (last
    registered first); then each device gets device memory (``managed_memory``: managed memory),
    under a pool when `pool_allocator` (`initial_pool_size`, None: half the free memory;
    `maximum_pool_size`, None: no limit; ints or strings such as "1GiB"), under a logging
    adaptor when `logging` (`log_file_name`, None: ``$RMM_LOG_FILE``; ``.dev<ID>`` is added).
    The stacks are rmm-rs resources set as the devices' resources, the ones
    ``rmm_rs.configure()`` sets: the last call of either wins. Memory allocated before stays
    valid and is freed to the resource it came from."""
    for func, args, kwargs in reversed(_reinitialize_hooks):
        func(*args, **kwargs)

    upstream = mr.ManagedMemoryResource if managed_memory else mr.CudaMemoryResource
    if devices is None:
        devices = [0]
    elif isinstance(devices, int):
        devices = [devices]
    initial = None if initial_pool_size is None else parse_bytes(initial_pool_size)
    maximum = None if maximum_pool_size is None else parse_bytes(maximum_pool_size)

    original = _core.get_device()
    try:
        for device in devices:
            _core.set_device(device)  # a resource belongs to the device current when made
            resource: mr.DeviceMemoryResource = upstream()
            if pool_allocator:
                resource = mr.PoolMemoryResource(resource, initial_pool_size=initial, maximum_pool_size=maximum)
            if logging:
                resource = mr.LoggingResourceAdaptor(resource, log_file_name)
            mr.set_per_device_resource(device, resource)
    finally:
        _core.set_device(original)


def is_initialized() -> bool:
    """True while the resources set through RAPIDS' API are usable (as RAPIDS RMM: always,
    unless one was closed by hand)."""
    return mr.is_initialized()


def register_reinitialize_hook(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """Runs ``func(*args, **kwargs)`` at the start of every :func:`reinitialize` (hooks run
    last registered first), e.g. to drop caches of device memory. Returns `func`."""
    _reinitialize_hooks.append((func, args, kwargs))
    return func


def unregister_reinitialize_hook(func: Callable[..., Any]) -> None:
    """Removes every registration of `func`."""
    _reinitialize_hooks[:] = [hook for hook in _reinitialize_hooks if hook[0] != func]
