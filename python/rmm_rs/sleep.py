"""rmm_rs.sleep: tagged memory that sleeps and wakes, as ``torch_memory_saver`` offers it, over
rmm-rs's sleep (docs/src/sleep.md)::

    from rmm_rs import sleep as tags

    with tags.region("weights", keep=True):      # parameters, optimizer state
        model = build_model()
    with tags.region("kv_cache"):                # contents may be dropped at a pause
        cache = allocate_cache()
    ...
    tags.pause("kv_cache")    # its device memory goes back to the device, contents dropped
    tags.pause()              # every tag still awake ("weights": contents to pinned host memory)
    ...                       # another engine or process uses the GPU
    tags.resume()             # same addresses; "weights" holds what it held

A tag is a resource: the first :func:`region` of a tag on a device makes an
:class:`~rmm_rs.mr.ExpandableMemoryResource` there (rmm-rs's virtual-memory resource, the one
that can sleep), kept for the life of the process. Inside the block it is the device's current
resource (``rmm.mr.get_current_device_resource()``), so everything that allocates from the
current resource lands in the tag: ``rmm_rs.DeviceBuffer``, the PyTorch backend
(``rmm_rs.use_for_torch()``, which asks for the current resource on every allocation), CuPy and
Numba through rmm_rs's allocators, :func:`rmm_rs.alloc`. Memory keeps its tag after the block:
it is freed to the resource it came from whenever it is freed, and sleeps with its tag.

:func:`pause` puts a tag's resources to sleep (``rmmResourceSleep``) with the tag's mode:
``keep=True`` copies the contents of live blocks to pinned host memory and back at
:func:`resume` (weights); ``keep=False`` drops them (activations, KV caches, scratch: after the
resume the blocks hold whatever the new memory holds). While a tag is paused its resources hold
no device memory, every address stays valid for after :func:`resume`, allocations from it raise
:class:`rmm_rs.RmmError` (``RMM_ERROR_INVALID_ARGUMENT``, "the resource sleeps"), and frees are
taken. Work on a paused tag's memory is a program error (a kernel that touches it faults): finish
or synchronize it before; :func:`pause` synchronizes the device itself.

The regions switch the device's resource for the whole process, not for the calling thread
(as ``set_current_device_resource`` does): a thread that allocates on the device while another
is inside a region allocates from that region's tag. Regions nest, on one thread or several:
the resource of the innermost region entered and not yet left is current, and when the last
one ends the device gets back the resource it had before the first (the stack
``rmm_rs.configure()`` built, an ``rmm.mr`` object set, or ``RMM_ALLOC_CONF``'s). If code in a
block sets another resource for the device, that one stays when the block ends.

Not ``time.sleep``: import the module under a name of your own (``from rmm_rs import sleep as
tags``) where ``sleep`` would be read as that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

from . import _core
from ._bindings import ERROR_INVALID_ARGUMENT, RmmError, _lock
from .pylibrmm.memory_resource import ExpandableMemoryResource

__all__ = ["pause", "region", "resource", "resume", "tags"]


@dataclasses.dataclass
class _Tag:
    name: str
    keep: bool
    resources: Dict[int, ExpandableMemoryResource] = dataclasses.field(default_factory=dict)

    @property
    def mode(self) -> str:
        return "keep" if self.keep else "discard"


@dataclasses.dataclass
class _Device:
    """The regions open on one device: `entries` (token, the tag's resource) in the order they
    were entered, and what the device had before the first (`replaced`)."""

    replaced: Optional[_core._Replaced] = None
    entries: List[Tuple[object, ExpandableMemoryResource]] = dataclasses.field(default_factory=list)


# Tags and open regions; _registry is taken before rmm_rs's _lock, never after. _pausing
# serializes pause() and resume() (which may copy for long) without holding _registry.
_registry = threading.RLock()
_pausing = threading.Lock()
_tags: Dict[str, _Tag] = {}
_devices: Dict[int, _Device] = {}


def _tag_resource(tag: str, keep: bool, device: int) -> ExpandableMemoryResource:
    """The resource of `tag` on `device`, made on first use. The caller holds _registry."""
    entry = _tags.get(tag)
    if entry is None:
        entry = _tags[tag] = _Tag(tag, keep)
    elif entry.keep != keep:
        raise ValueError(f"rmm_rs.sleep.region: tag {tag!r} was made with keep={entry.keep}; a tag is one "
                         f"resource with one mode, so region({tag!r}, keep={keep}) cannot be: use another tag")
    mr = entry.resources.get(device)
    if mr is None:
        original = _core.get_device()
        try:
            _core.set_device(device)  # a resource belongs to the device current when it is made
            mr = ExpandableMemoryResource()
        finally:
            _core.set_device(original)
        entry.resources[device] = mr
    return mr


def _enter(device: int, mr: ExpandableMemoryResource) -> object:
    token = object()
    with _lock:
        state = _devices.setdefault(device, _Device())
        if not state.entries:
            state.replaced = _core._swap_resource(device, mr.resource, mr)
        elif _core._device_objects.get(device) is not mr:
            _core._swap_resource(device, mr.resource, mr).close()
        state.entries.append((token, mr))
    return token


def _leave(device: int, token: object) -> None:
    with _lock:
        state = _devices[device]
        top = state.entries[-1][1]
        state.entries = [entry for entry in state.entries if entry[0] is not token]
        ours = _core._device_objects.get(device) is top  # else code in the block set another one
        if state.entries:
            if ours and state.entries[-1][1] is not top:
                _core._swap_resource(device, state.entries[-1][1].resource, state.entries[-1][1]).close()
            return
        replaced, state.replaced = state.replaced, None
        if replaced is not None:
            if ours:
                _core._restore_resource(replaced)
            else:
                replaced.close()


@contextlib.contextmanager
def region(tag: str = "default", keep: bool = False, device: Optional[int] = None) -> Iterator[ExpandableMemoryResource]:
    """Makes the resource of `tag` on `device` (None: the current device) the device's current
    resource for the block: what is allocated from the current resource inside it belongs to the
    tag (see the module's text). The first region of a tag on a device makes its resource, an
    :class:`~rmm_rs.mr.ExpandableMemoryResource`; the first region of a tag sets its mode for
    good: `keep` True, contents kept on the host over a :func:`pause`; False, dropped. A later
    region of the tag with the other `keep`: ValueError. Regions nest; at the end of the last one
    the device gets back the resource it had. Yields the tag's resource (``with region(...) as
    mr``). Entering the region of a paused tag is allowed: allocations in it raise until
    :func:`resume`."""
    if not isinstance(tag, str):
        raise TypeError(f"rmm_rs.sleep.region: tag must be a str, not {type(tag).__name__}")
    target = _core.get_device() if device is None else int(device)
    with _registry:
        mr = _tag_resource(tag, bool(keep), target)
        token = _enter(target, mr)
    try:
        yield mr
    finally:
        with _registry:
            _leave(target, token)


def _targets(tag: Optional[str], device: Optional[int], what: str) -> List[Tuple[_Tag, int, ExpandableMemoryResource]]:
    with _registry:
        if tag is None:
            chosen = list(_tags.values())
        else:
            if tag not in _tags:
                raise KeyError(f"rmm_rs.sleep.{what}: no tag {tag!r} (tags are made by region(); "
                               f"there are: {', '.join(map(repr, _tags)) or 'none'})")
            chosen = [_tags[tag]]
        found = [(entry, d, mr) for entry in chosen for d, mr in sorted(entry.resources.items())
                 if device is None or d == int(device)]
    if tag is not None and device is not None and not found:
        raise KeyError(f"rmm_rs.sleep.{what}: tag {tag!r} has no memory on device {device}")
    return found


def pause(tag: Optional[str] = None, device: Optional[int] = None, stream: Any = None) -> None:
    """Puts `tag` to sleep (None: every tag that is awake) on `device` (None: every device it
    has memory on): its resources give back all their device memory, live blocks' included,
    keeping their contents on the host if the tag was made with ``keep=True``, else dropping
    them. Copies run on `stream` (None: the default stream); the device is synchronized first.

    Errors: an unknown tag, KeyError; a tag named that is paused already, :class:`RmmError`
    ``ERROR_INVALID_ARGUMENT``; no pinned host memory for a copy, :class:`RmmOutOfMemoryError`.
    On an error, what this call had put to sleep wakes again: all or nothing."""
    with _pausing:
        targets = _targets(tag, device, "pause")
        done: List[ExpandableMemoryResource] = []
        try:
            for entry, d, mr in targets:
                if mr.asleep:
                    if tag is None:
                        continue
                    raise RmmError(ERROR_INVALID_ARGUMENT, f"tag {entry.name!r} is paused already on device {d} "
                                   "(rmm_rs.sleep.resume wakes it)", "rmm_rs.sleep.pause")
                mr.sleep(entry.mode, stream)
                done.append(mr)
        except BaseException:
            for mr in reversed(done):
                try:
                    mr.wake(stream)
                except RmmError:
                    pass  # it stays asleep; resume() takes it again
            raise


def resume(tag: Optional[str] = None, device: Optional[int] = None, stream: Any = None) -> None:
    """Wakes `tag` (None: every paused tag) on `device` (None: every device it has memory on):
    device memory is taken again at the same addresses, and what the tag kept is copied back on
    `stream` (synchronized before this returns).

    Errors: an unknown tag, KeyError; a tag named that is not paused, :class:`RmmError`
    ``ERROR_INVALID_ARGUMENT``; the device cannot give the memory back now (another process
    holds it), :class:`RmmOutOfMemoryError` (a MemoryError): the resources not woken stay
    asleep with their contents kept, and a later resume() takes them (those woken before stay
    awake)."""
    with _pausing:
        targets = _targets(tag, device, "resume")
        for entry, d, mr in targets:
            if not mr.asleep:
                if tag is None:
                    continue
                raise RmmError(ERROR_INVALID_ARGUMENT, f"tag {entry.name!r} is not paused on device {d} "
                               "(rmm_rs.sleep.pause puts it to sleep)", "rmm_rs.sleep.resume")
            mr.wake(stream)


def resource(tag: str, device: Optional[int] = None) -> ExpandableMemoryResource:
    """The resource of `tag` on `device` (None: the current device), e.g. to read its
    ``resource.snapshot()``; KeyError if no region of the tag ran there."""
    target = _core.get_device() if device is None else int(device)
    with _registry:
        entry = _tags.get(tag)
        if entry is None or target not in entry.resources:
            raise KeyError(f"rmm_rs.sleep.resource: tag {tag!r} has no memory on device {target}")
        return entry.resources[target]


def tags() -> List[Dict[str, Any]]:
    """One dict per tag and device, in the order the tags were made: ``tag``, ``device``,
    ``mode`` ("keep" or "discard"), ``asleep`` (bool), and from the resource's snapshot
    (``rmmResourceGetSnapshot``) ``used_bytes`` (live blocks), ``reserved_bytes`` (device memory
    held now: 0 while asleep), ``peak_used_bytes``, ``asleep_bytes`` (address space whose
    pages sleep) and ``kept_on_host_bytes`` (pinned host memory holding kept contents)."""
    with _registry:
        items = [(entry, d, mr) for entry in _tags.values() for d, mr in sorted(entry.resources.items())]
    result = []
    for entry, d, mr in items:
        snapshot = mr.resource.snapshot()
        result.append({
            "tag": entry.name,
            "device": d,
            "mode": entry.mode,
            "asleep": snapshot.get("asleep") is not None,
            "used_bytes": int(snapshot.get("used_bytes") or 0),
            "reserved_bytes": int(snapshot.get("reserved_bytes") or 0),
            "peak_used_bytes": int(snapshot.get("peak_used_bytes") or 0),
            "asleep_bytes": int(snapshot.get("asleep_bytes") or 0),
            "kept_on_host_bytes": int(snapshot.get("kept_on_host_bytes") or 0),
        })
    return result
