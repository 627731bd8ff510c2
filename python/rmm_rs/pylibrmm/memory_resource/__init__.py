"""rmm_rs.pylibrmm.memory_resource (also ``rmm_rs.mr``): RAPIDS RMM's memory resources, adaptors
and per-device functions, defined in :mod:`._memory_resource` as RAPIDS lays them out, and the
experimental ones in :mod:`.experimental`."""

from . import experimental
from ._memory_resource import *  # noqa: F401,F403  (the names of its __all__)
from ._memory_resource import __all__ as _names
from ._memory_resource import _flush_logs, _size_t  # noqa: F401  (used by rmm_rs.mr, device_buffer)

__all__ = sorted(_names + ["experimental"])
