"""rmm_rs.pylibrmm.helper: ``parse_bytes``, the sizes RAPIDS RMM's Python API takes."""

from __future__ import annotations

import re
from typing import Union

__all__ = ["parse_bytes"]

# As RAPIDS: SI units are powers of 1000 ("1GB" = 10**9), binary ones powers of 1024 ("1GiB"),
# case-insensitive; a number alone is bytes. (rmm_rs.configure() and RMM_ALLOC_CONF read "GB"
# as GiB; this is RAPIDS' reading, for RAPIDS' API.)
_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4, "pb": 1000 ** 5,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50}
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]*)?)[\t ]*((?:[kmgtp]i?)?b)?$", re.IGNORECASE)


def parse_bytes(s: Union[int, str]) -> int:
    """Bytes from an int (returned as it is) or a string: a number, optionally with a unit
    (b, kb .. pb, kib .. pib, any case). ValueError when the string is not a size."""
    if isinstance(s, int):
        return s
    match = _SIZE.match(str(s).strip()) if isinstance(s, str) else None
    if match is None:
        raise ValueError(f"Could not parse {s} as a byte specification")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])
