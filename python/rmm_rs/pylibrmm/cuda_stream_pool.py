"""rmm_rs.pylibrmm.cuda_stream_pool: RAPIDS RMM's ``CudaStreamPool``, a fixed set of streams
handed out in turn (``rmm.pylibrmm.cuda_stream_pool``)."""

from __future__ import annotations

import itertools
import threading
from typing import List, Optional

from .stream import CudaStreamFlags, Stream

__all__ = ["CudaStreamPool"]


class CudaStreamPool:
    """`pool_size` streams made on the current device; :meth:`get_stream` hands them out in
    turn (thread-safe), or the one of a given id (taken modulo the pool's size, as RAPIDS
    does). The streams live as long as the pool and every Stream it handed out. A size of 0:
    ValueError."""

    def __init__(self, pool_size: int = 16, flags: CudaStreamFlags = CudaStreamFlags.SYNC_DEFAULT) -> None:
        size = int(pool_size)
        if size < 0:
            raise OverflowError("can't convert negative value to size_t")
        if size == 0:
            raise ValueError("Stream pool size must be greater than zero")
        flags = CudaStreamFlags(flags)
        self._streams: List[Stream] = [Stream(flags=flags) for _ in range(size)]
        self._next = itertools.count()
        self._lock = threading.Lock()

    def get_stream(self, stream_id: Optional[int] = None) -> Stream:
        """The next stream of the pool, or the one numbered `stream_id` (modulo the size). The
        Stream keeps the pool's stream alive."""
        if stream_id is None:
            with self._lock:
                index = next(self._next) % len(self._streams)
        else:
            index = int(stream_id) % len(self._streams)
        return Stream(self._streams[index])

    def get_pool_size(self) -> int:
        """How many streams the pool holds."""
        return len(self._streams)

    def __len__(self) -> int:
        return len(self._streams)
