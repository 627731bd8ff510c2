"""rmm_rs.timeline: the memory timeline page of a process (``rmmTimelineReportWrite``), the page
``rmm-replay report`` makes from a log. The log and statistics tools themselves are
:func:`rmm_rs.configure` (``log=``), :func:`rmm_rs.flush_log`, :func:`rmm_rs.statistics` and
``rmm_rs.frameworks.torch.write_torch_history_log``."""

from __future__ import annotations

import os
from typing import Optional, Union

from ._bindings import _call
from ._core import Resource

__all__ = ["write_timeline_report"]


def write_timeline_report(path: Union[str, "os.PathLike[str]"], resource: Optional[Resource] = None,
                          spec: Optional[str] = None) -> str:
    """Writes a memory timeline of this process to the HTML file `path`
    (``rmmTimelineReportWrite``): the page ``rmm-replay report`` makes from a log, one
    self-contained file that any browser opens offline.

    The page comes from the log of a logging adaptor: `resource` is a stack with one (None:
    the current device's resource, e.g. what ``configure(log=...)`` built). Every logging
    adaptor is flushed, then the log is replayed against a fresh stack built from `spec`
    (``rmm-replay``'s resource spec, e.g. ``"binning/pool"``; None: ``"pool"``) on the current
    device, to learn what a stack reserves for it: while the replay runs it holds up to that
    stack's peak footprint of device memory. A tracking adaptor in the stack names the call
    sites of allocations alive at the peak and still alive now. Raises :class:`RmmError`
    (``RMM_ERROR_INVALID_ARGUMENT`` when the stack has no logging adaptor). Returns `path`.
    """
    target = os.fspath(path)
    encoded_spec = spec.encode() if spec is not None else None
    if resource is None:
        with Resource.of_device() as current:
            _call("rmmTimelineReportWrite", current._h(), encoded_spec, os.fsencode(target))
    else:
        _call("rmmTimelineReportWrite", resource._h(), encoded_spec, os.fsencode(target))
    return target
