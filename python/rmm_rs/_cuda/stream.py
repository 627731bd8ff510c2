"""rmm_rs._cuda.stream: the name RAPIDS RMM gave :mod:`rmm_rs.pylibrmm.stream` before
``rmm.pylibrmm`` existed (``from rmm._cuda.stream import Stream``); the same objects."""

from ..pylibrmm.stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CudaStreamFlags,
    Stream,
)

__all__ = ["CudaStreamFlags", "DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream"]
