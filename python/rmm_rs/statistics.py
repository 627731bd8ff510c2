"""rmm_rs.statistics: RAPIDS RMM's ``rmm.statistics`` helpers, over the current device's
resource (a :class:`~rmm_rs.mr.StatisticsResourceAdaptor` on top counts).

This module is also callable, as ``rmm_rs.statistics(device=None)`` was before it existed:
``rmm_rs.statistics()`` gives the counts of the device's stack (:func:`rmm_rs.configure`'s
statistics adaptor, else the first one in the stack), or None.
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Iterator, Optional

from . import _core
from ._core import Statistics
from .pylibrmm import memory_resource as _mr

__all__ = ["Statistics", "enable_statistics", "get_statistics", "pop_statistics", "push_statistics", "statistics"]


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
    """Counts the allocations of the block in a scope of their own: enables statistics (for
    the block only, when they were off) and pushes a scope, popped at the end."""
    previous = _mr.get_current_device_resource()
    enabled = isinstance(previous, _mr.StatisticsResourceAdaptor)
    if not enabled:
        enable_statistics()
    push_statistics()
    try:
        yield
    finally:
        pop_statistics()
        if not enabled:
            _mr.set_current_device_resource(previous)


class _CallableModule(types.ModuleType):
    def __call__(self, device: Optional[int] = None) -> Optional[Statistics]:
        return _core.statistics(device)


sys.modules[__name__].__class__ = _CallableModule
