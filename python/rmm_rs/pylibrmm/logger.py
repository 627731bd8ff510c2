"""rmm_rs.pylibrmm.logger: the level of rmm-rs's diagnostics, as RAPIDS RMM's logger API
(``rmm.set_logging_level(rmm.level_enum.debug)``); the level is the library's own
(``rmmLogSetLevel``, also ``$RMM_LOG_LEVEL``), shared with C and C++ callers."""

from __future__ import annotations

import ctypes
import enum

from .._bindings import (
    LOG_LEVEL_CRITICAL,
    LOG_LEVEL_DEBUG,
    LOG_LEVEL_ERROR,
    LOG_LEVEL_INFO,
    LOG_LEVEL_OFF,
    LOG_LEVEL_TRACE,
    LOG_LEVEL_WARN,
    _call,
)

__all__ = [
    "flush_logger",
    "get_flush_level",
    "get_logging_level",
    "level_enum",
    "set_flush_level",
    "set_logging_level",
    "should_log",
]


class level_enum(enum.IntEnum):
    """The levels of rapids_logger (RMM_LOG_LEVEL_TRACE .. RMM_LOG_LEVEL_OFF of rmm.h)."""

    trace = LOG_LEVEL_TRACE
    debug = LOG_LEVEL_DEBUG
    info = LOG_LEVEL_INFO
    warn = LOG_LEVEL_WARN
    error = LOG_LEVEL_ERROR
    critical = LOG_LEVEL_CRITICAL
    off = LOG_LEVEL_OFF


# rmm-rs writes its diagnostics to stderr at once (or to the sinks of rmmLogSinkAdd): there is
# nothing to flush; the flush level is kept for get_flush_level().
_flush_level = level_enum.warn


def _validate_level_type(level: object) -> None:
    if not isinstance(level, level_enum):
        raise TypeError("level must be an instance of the level_enum enum")


def get_logging_level() -> level_enum:
    """The level below which rmm-rs writes nothing (``rmmLogGetLevel``)."""
    level = ctypes.c_int()
    _call("rmmLogGetLevel", ctypes.byref(level))
    return level_enum(level.value)


def set_logging_level(level: level_enum) -> None:
    """Sets the level below which rmm-rs writes nothing, for the whole process
    (``rmmLogSetLevel``). TypeError unless `level` is a :class:`level_enum`."""
    _validate_level_type(level)
    _call("rmmLogSetLevel", int(level))


def should_log(level: level_enum) -> bool:
    """Whether a message at `level` would be written."""
    _validate_level_type(level)
    return level != level_enum.off and level >= get_logging_level()


def flush_logger() -> None:
    """Writes out what the logger holds (rmm-rs holds nothing: a no-op)."""


def set_flush_level(level: level_enum) -> None:
    """Sets the level from which messages are flushed at once (rmm-rs flushes every message)."""
    global _flush_level
    _validate_level_type(level)
    _flush_level = level


def get_flush_level() -> level_enum:
    return _flush_level
