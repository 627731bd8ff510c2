"""rmm_rs.dask: an rmm-rs memory stack on each Dask worker's GPU, as Dask-CUDA sets up RMM.

``rmm_rs.dask`` is this module, ``rmm_rs.frameworks.dask`` (``from rmm_rs import dask`` imports
it on first access)::

    from distributed import Client, LocalCluster
    import rmm_rs

    cluster = LocalCluster(n_workers=2, threads_per_worker=1)   # one worker per GPU
    client = Client(cluster)
    client.register_plugin(rmm_rs.dask.RmmRsPlugin(device="name", spec="statistics/pool:initial=4GiB"))
    print(client.run(rmm_rs.dask.describe))                     # each worker's GPU and stack

Each worker process gets one GPU. Dask-CUDA gives each worker its own ``CUDA_VISIBLE_DEVICES``
(its GPU first); with ``device=None`` the plugin takes that first GPU, device 0. With
``device="name"`` (or an int, or a function of the worker) the plugin picks the GPU itself,
for a plain ``LocalCluster``, whose workers are named 0, 1, ...: it narrows the worker
process's ``CUDA_VISIBLE_DEVICES`` to that GPU before CUDA starts there, so every thread of
the worker (Dask runs tasks on threads of its own; CuPy, Numba and PyTorch keep a current
device per thread) sees it as device 0. On simulated devices (``RMM_SIM_DEVICES=N:...``) it
narrows the simulator to one device the same way: separate processes never share simulated
memory, so each worker owning one device is what happens on GPUs too.

Importing this module imports ``distributed`` (the plugin is a ``distributed.WorkerPlugin``,
which ``Client.register_plugin`` requires); ``import rmm_rs`` alone never does.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, Optional, Union

from distributed import WorkerPlugin

from .. import _core
from .._bindings import _lock
from . import cupy as _cupy, numba as _numba

__all__ = ["RmmRsPlugin", "describe"]

# What this process's plugin set up (describe() reports it). One worker per process is the
# layout the plugin needs (LocalCluster's default, processes=True).
_setup: Dict[str, Any] = {}
_setup_lock = threading.Lock()
# The GPU index this process was narrowed to: a plugin registered again (which Dask runs on
# running workers) finds the process narrowed already and must not narrow it twice.
_narrowed_to: Optional[int] = None


def _worker_index(worker: Any) -> int:
    try:
        return int(worker.name)
    except (TypeError, ValueError):
        raise ValueError(
            f"RmmRsPlugin(device='name'): worker name {worker.name!r} is not an integer "
            "(LocalCluster names its workers 0, 1, ...; elsewhere pass device=int or a function "
            "of the worker, or give each worker its CUDA_VISIBLE_DEVICES and device=None)") from None


def _narrow(index: int) -> str:
    """Makes GPU `index`, of those this process may see, its only device; returns what the
    process now sees. Must come before CUDA starts in the process: the driver reads
    CUDA_VISIBLE_DEVICES (and rmm-rs RMM_SIM_DEVICES) once, when it starts."""
    simulated = os.environ.get("RMM_SIM_DEVICES")
    if simulated:
        count, _, size = simulated.partition(":")
        if not 0 <= index < int(count):
            raise ValueError(f"RmmRsPlugin: device {index} does not exist (RMM_SIM_DEVICES={simulated})")
        os.environ["RMM_SIM_DEVICES"] = "1" + (":" + size if size else "")
        return f"RMM_SIM_DEVICES={os.environ['RMM_SIM_DEVICES']} (simulated device {index} of {count})"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()] if visible else None
    if entries is not None and not 0 <= index < len(entries):
        raise ValueError(f"RmmRsPlugin: device {index} does not exist (CUDA_VISIBLE_DEVICES={visible})")
    os.environ["CUDA_VISIBLE_DEVICES"] = entries[index] if entries is not None else str(index)
    return f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']}"


def _install_spec(spec: str, device: int) -> None:
    """Builds `spec` on `device` and makes it the device's current resource at once (what
    rmm_rs.configure() does for its resource kinds; rmmConfigure would apply only to a device
    that has no resource yet). A stack rmm_rs.configure() built earlier is forgotten, or
    rmm_rs.statistics() would keep reading its adaptor."""
    stack = _core.Resource.from_spec(spec, device)
    try:
        with _lock:
            _core._install(device, stack)
    finally:
        stack.close()  # the per-device registry holds its own reference


def _chain(device: int) -> str:
    names = []
    with _core.Resource.of_device(device) as top:
        node: Any = top.snapshot()
    while isinstance(node, dict):
        names.append(str(node.get("resource")))
        node = node.get("upstream")
    return "/".join(names)


class RmmRsPlugin(WorkerPlugin):
    """Sets up rmm-rs on each worker when the worker starts (or at once on running workers):
    picks the worker's GPU, builds its resource stack there and makes CuPy (and Numba) allocate
    from it.

    The stack is, as in the rest of rmm_rs: `spec`, a stack spec (``RMM_ALLOC_CONF``'s
    language, e.g. ``"statistics/pool:initial=4GiB,maximum=60GiB"``; ``{name}`` and
    ``{device}`` in it become the worker's name and device index, for a log path per worker);
    or `resource` with `initial_pool_size`, `maximum_pool_size`, `release_threshold` and `log`
    as :func:`rmm_rs.configure` takes them (the arguments of Dask-CUDA's ``rmm_pool_size`` and
    ``rmm_maximum_pool_size``); or neither: the worker's ``$RMM_ALLOC_CONF``, else
    :data:`rmm_rs.DEFAULT_SPEC` (a pool with statistics).

    `device`: None: the worker's device 0 (the first GPU of its ``CUDA_VISIBLE_DEVICES``, as
    Dask-CUDA starts its workers); ``"name"``: the worker's name as an index (``LocalCluster``
    names workers 0, 1, ...); an int; or a function of the worker returning an int. An index
    narrows the worker process to that one GPU (module docstring), which must happen before
    anything in the worker starts CUDA: register the plugin before the first GPU task.

    `cupy`: True: ``_cupy.use_for_cupy()`` (CuPy must be installed); None: the same when
    CuPy is importable; False: leave CuPy alone. `numba` likewise, ``_numba.use_for_numba()``:
    Dask moves CuPy arrays between workers into Numba device arrays (``distributed.protocol``
    without RAPIDS RMM), so without it that memory bypasses the worker's stack.
    """

    name = "rmm-rs"  # one plugin per worker: registering another replaces it

    def __init__(self, spec: Optional[str] = None, *, device: Union[None, int, str, Callable[[Any], int]] = None,
                 resource: Optional[str] = None, initial_pool_size: Union[int, str, None] = None,
                 maximum_pool_size: Union[int, str, None] = None,
                 release_threshold: Union[int, str, None] = None, log: Optional[str] = None,
                 cupy: Optional[bool] = None, numba: Optional[bool] = None):
        kind_arguments = (resource, initial_pool_size, maximum_pool_size, release_threshold, log)
        if spec is not None and any(value is not None for value in kind_arguments):
            raise ValueError("RmmRsPlugin: give a spec, or resource and pool sizes, not both")
        if not (device is None or device == "name" or isinstance(device, int) or callable(device)):
            raise ValueError(f"RmmRsPlugin: device={device!r}: expected None, 'name', an int or a function of the worker")
        if resource is None and any(value is not None for value in kind_arguments):
            resource = "pool"
        if resource is not None and str(resource).lower() not in _core.RESOURCES + ("async",):
            raise ValueError(f"RmmRsPlugin: resource={resource!r}: expected one of {', '.join(_core.RESOURCES)}")
        self.spec = spec
        self.device = device
        self.resource = resource
        self.initial_pool_size = initial_pool_size
        self.maximum_pool_size = maximum_pool_size
        self.release_threshold = release_threshold
        self.log = log
        self.cupy = cupy
        self.numba = numba

    def _index(self, worker: Any) -> Optional[int]:
        if self.device is None:
            return None
        if self.device == "name":
            return _worker_index(worker)
        if callable(self.device):
            return int(self.device(worker))
        return int(self.device)

    def setup(self, worker: Any) -> None:
        global _narrowed_to
        index = self._index(worker)
        visible = None
        if index is not None and _narrowed_to is not None:
            if index != _narrowed_to:
                raise RuntimeError(f"RmmRsPlugin: worker {worker.name!r} was set up on GPU {_narrowed_to} "
                                   f"already; a process cannot move to GPU {index}")
            visible = _setup.get("visible")
        elif index is not None:
            saved = {name: os.environ.get(name) for name in ("CUDA_VISIBLE_DEVICES", "RMM_SIM_DEVICES")}
            visible = _narrow(index)
            # The check that the narrowing took: a process whose CUDA had started already
            # keeps every device it saw (and one device is then all we can vouch for).
            count = _core.device_count()
            if count != 1:
                # The environment goes back to what the process sees, for its children.
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
                raise RuntimeError(
                    f"RmmRsPlugin: worker {worker.name!r} sees {count} devices after {visible}: "
                    "CUDA had started in this worker before the plugin ran. Register the plugin "
                    "before the worker's first GPU task, or give each worker its own "
                    "CUDA_VISIBLE_DEVICES and use device=None")
            _narrowed_to = index
        device = 0
        _core.set_device(device)
        name, gpu = str(worker.name), str(index if index is not None else device)
        if self.resource is not None:
            log = self.log.replace("{name}", name).replace("{device}", gpu) if self.log else None
            _core.configure(self.resource, self.initial_pool_size, self.maximum_pool_size, log=log,
                             devices=device, release_threshold=self.release_threshold)
            spec = None
        else:
            spec = self.spec if self.spec is not None else (os.environ.get("RMM_ALLOC_CONF") or _core.DEFAULT_SPEC)
            spec = spec.replace("{name}", name).replace("{device}", gpu)
            if spec.replace("+", "/").split("/")[0].split(":")[0].strip() in ("report", "async_free"):
                # Keywords of default stacks, which only rmmConfigure takes: the device gets
                # the stack at its first use (a fresh worker's device has none yet).
                _core.configure_from_string(spec)
            else:
                _install_spec(spec, device)
        hooked = {}
        for library, wanted in (("cupy", self.cupy), ("numba", self.numba)):
            hooked[library] = False
            if wanted is False:
                continue
            try:
                if library == "cupy":
                    import cupy

                    cupy.cuda.Device(device).use()
                    _cupy.use_for_cupy()
                else:
                    import numba.cuda  # noqa: F401 - what use_for_numba() needs

                    _numba.use_for_numba()
            except ImportError:
                if wanted:
                    raise
            else:
                hooked[library] = True
        with _setup_lock:
            _setup.clear()
            _setup.update(worker=name, index=index, visible=visible, spec=spec, resource=self.resource,
                          **hooked)

    def teardown(self, worker: Any) -> None:
        # The stack lives as long as the worker process (memory handed out stays valid);
        # what a logging adaptor buffered is written out now, while the process is whole.
        if self.resource is not None and self.log:
            _core.flush_log(0)


def describe() -> Dict[str, Any]:
    """What the plugin set up in this worker process (``client.run(rmm_rs.dask.describe)``):
    the worker, the GPU index it chose (None: the worker's own device 0), what the process sees
    (``CUDA_VISIBLE_DEVICES`` or ``RMM_SIM_DEVICES``), the device count, the stack from the
    outermost layer down, its statistics (None without a statistics adaptor) and whether CuPy
    and Numba allocate through rmm-rs."""
    with _setup_lock:
        info = dict(_setup)
    if not info:
        raise RuntimeError("rmm_rs.dask.describe(): no RmmRsPlugin has run in this process")
    info["device_count"] = _core.device_count()
    info["stack"] = _chain(0)
    counts = _core.statistics(0)
    info["statistics"] = None if counts is None else {
        "current_bytes": counts.current_bytes, "peak_bytes": counts.peak_bytes, "total_count": counts.total_count}
    return info
