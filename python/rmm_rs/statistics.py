"""rmm_rs.statistics: RAPIDS RMM's ``rmm.statistics`` helpers, over the current device's
resource (a :class:`~rmm_rs.mr.StatisticsResourceAdaptor` on top counts).

This module is also callable, as ``rmm_rs.statistics(device=None)`` was before it existed:
``rmm_rs.statistics()`` gives the counts of the device's stack (:func:`rmm_rs.configure`'s
statistics adaptor, else the first one in the stack), or None.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import sys
import threading
import types
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar

from . import _core
from ._core import Statistics
from .pylibrmm import memory_resource as _mr

__all__ = [
    "ProfilerRecords",
    "Statistics",
    "default_profiler_records",
    "enable_statistics",
    "get_statistics",
    "pop_statistics",
    "profiler",
    "push_statistics",
    "statistics",
]


def enable_statistics() -> None:
    """Puts a StatisticsResourceAdaptor over the current device's resource unless it is one."""
    current = _mr.get_current_device_resource()
    if not isinstance(current, _mr.StatisticsResourceAdaptor):
        _mr.set_current_device_resource(_mr.StatisticsResourceAdaptor(current))


def _adaptor() -> Optional[_mr.StatisticsResourceAdaptor]:
    current = _mr.get_current_device_resource()
    return current if isinstance(current, _mr.StatisticsResourceAdaptor) else None


def get_statistics() -> Optional[Statistics]:
    """The counts of the current device's statistics adaptor; None when its resource is none."""
    adaptor = _adaptor()
    return adaptor.allocation_counts if adaptor is not None else None


def push_statistics() -> Optional[Statistics]:
    """Starts a nested scope on the current device's statistics adaptor; the counts before it
    (None without an adaptor)."""
    adaptor = _adaptor()
    return adaptor.push_counters() if adaptor is not None else None


def pop_statistics() -> Optional[Statistics]:
    """Ends the innermost scope; its counts (None without an adaptor)."""
    adaptor = _adaptor()
    return adaptor.pop_counters() if adaptor is not None else None


@contextlib.contextmanager
def statistics() -> Iterator[None]:
    """Counts the allocations of the block in a scope of their own (RAPIDS RMM's
    ``rmm.statistics.statistics``): where the current device's resource is a statistics adaptor,
    a scope is pushed on it and popped at the end; else a new adaptor over it is the device's
    resource for the block. ValueError at the end when the block changed the device's resource."""
    previous = None
    if push_statistics() is None:
        previous = _mr.get_current_device_resource()
        enable_statistics()
    current = _mr.get_current_device_resource()
    try:
        yield
    finally:
        if _mr.get_current_device_resource() is not current:
            raise ValueError("the current device's resource was changed inside the statistics context")
        if previous is None:
            pop_statistics()
        else:
            _mr.set_current_device_resource(previous)


class ProfilerRecords:
    """What :func:`profiler` measured, per function or code block: how often it ran, and the
    bytes it allocated in all and at most at once (RAPIDS RMM's ``ProfilerRecords``)."""

    @dataclasses.dataclass
    class MemoryRecord:
        num_calls: int = 0
        memory_total: int = 0
        memory_peak: int = 0

        def add(self, memory_total: int, memory_peak: int) -> None:
            self.num_calls += 1
            self.memory_total += memory_total
            self.memory_peak = max(self.memory_peak, memory_peak)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: Dict[str, "ProfilerRecords.MemoryRecord"] = {}

    def add(self, name: str, data: Statistics) -> None:
        """Counts one run of `name` whose scope's counts were `data`."""
        with self._lock:
            self._records.setdefault(name, ProfilerRecords.MemoryRecord()).add(data.total_bytes, data.peak_bytes)

    @property
    def records(self) -> Dict[str, "ProfilerRecords.MemoryRecord"]:
        """A copy of the records, by name."""
        with self._lock:
            return {name: dataclasses.replace(record) for name, record in self._records.items()}

    def report(self, ordered_by: str = "memory_peak") -> str:
        """The records as a table, largest `ordered_by` ("num_calls", "memory_peak" or
        "memory_total") first."""
        if ordered_by not in ("num_calls", "memory_peak", "memory_total"):
            raise ValueError(f"ordered_by must be num_calls, memory_peak or memory_total, not {ordered_by!r}")
        rows = sorted(self.records.items(), key=lambda item: getattr(item[1], ordered_by), reverse=True)
        if not rows:
            return "Memory Profiling\n================\n\nNo data: nothing was recorded (are statistics enabled?)\n"
        lines = [
            "Memory Profiling",
            "================",
            "",
            "Legends:",
            "  ncalls       - times the function or code block ran",
            "  memory_peak  - most bytes it held allocated at once",
            "  memory_total - bytes it allocated in all",
            "",
            f"Ordered by: {ordered_by}",
            "",
            f"{'ncalls':>8} {'memory_peak':>15} {'memory_total':>15}  filename:lineno(function)",
        ]
        lines += [f"{r.num_calls:>8} {r.memory_peak:>15,} {r.memory_total:>15,}  {name}" for name, r in rows]
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"ProfilerRecords({self.records!r})"


default_profiler_records = ProfilerRecords()

_Function = TypeVar("_Function", bound=Callable[..., Any])


def _where(code: types.CodeType, lineno: int, function: str) -> str:
    return f"{code.co_filename}:{lineno}({function})"


def _get_descriptive_name_of_object(obj: Any) -> str:
    """The name :func:`profiler` records a function under (RAPIDS'): its file, the line it is
    defined on (its first decorator's) and its qualified name, seen through wrappers
    (``functools.wraps``)."""
    unwrapped = inspect.unwrap(obj)
    code = getattr(unwrapped, "__code__", None)
    if code is None:
        _, line = inspect.getsourcelines(unwrapped)
        return f"{inspect.getfile(unwrapped)}:{line}({unwrapped.__qualname__})"
    return _where(code, code.co_firstlineno, unwrapped.__qualname__)


class _Profiler:
    """A decorator and a context manager (see :func:`profiler`)."""

    def __init__(self, records: ProfilerRecords, name: str) -> None:
        self._records, self._name, self._names = records, name, []

    def __call__(self, function: _Function) -> _Function:
        name = self._name or _get_descriptive_name_of_object(function)

        @functools.wraps(function)
        def profiled(*args: Any, **kwargs: Any) -> Any:
            push_statistics()
            try:
                return function(*args, **kwargs)
            finally:
                counts = pop_statistics()
                if counts is not None:
                    self._records.add(name, counts)

        return profiled  # type: ignore[return-value]

    def __enter__(self) -> "_Profiler":
        name = self._name
        if not name:
            caller = inspect.currentframe().f_back  # type: ignore[union-attr]
            name = _where(caller.f_code, caller.f_lineno, caller.f_code.co_name) if caller else "<block>"
        self._names.append(name)
        push_statistics()
        return self

    def __exit__(self, *exc: Any) -> None:
        counts = pop_statistics()
        name = self._names.pop()
        if counts is not None:
            self._records.add(name, counts)


def profiler(*, records: ProfilerRecords = default_profiler_records, name: str = "") -> _Profiler:
    """Records the memory the decorated function, or the ``with`` block, allocates on the
    current device into `records` (RAPIDS RMM's ``rmm.statistics.profiler``). Nothing is
    recorded unless statistics are on (:func:`enable_statistics`). `name` names the record
    (default: file, line and function, :func:`_get_descriptive_name_of_object`; for a block,
    the line of the ``with``)."""
    return _Profiler(records, name)


class _CallableModule(types.ModuleType):
    def __call__(self, device: Optional[int] = None) -> Optional[Statistics]:
        return _core.statistics(device)


sys.modules[__name__].__class__ = _CallableModule
