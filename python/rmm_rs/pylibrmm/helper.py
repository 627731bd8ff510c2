"""rmm_rs.pylibrmm.helper: ``parse_bytes``, the sizes RAPIDS RMM's Python API takes."""

from __future__ import annotations

from typing import Union

from .._core import _parse_size

__all__ = ["parse_bytes"]


def parse_bytes(s: Union[int, str]) -> int:
    """Bytes from an int (returned as it is) or a string: a number, optionally with a unit
    (b, kb .. pb, kib .. pib, any case). ValueError when the string is not a size.

    The library reads the string, as it reads every size in rmm-rs (``rmmParseSize``, also
    RMM_ALLOC_CONF's sizes): kb .. pb are powers of 1000 ("1GB" is 10**9 bytes) and kib .. pib
    powers of 1024 ("1GiB" is 2**30), as RAPIDS has them. It computes exactly where RAPIDS goes
    through a float ("2.01kb" is 2010 bytes, where RAPIDS' float gives 2009)."""
    if isinstance(s, int):
        return s
    if not isinstance(s, str):
        raise ValueError(f"Could not parse {s} as a byte specification")
    try:
        return _parse_size(s)
    except ValueError as why:
        raise ValueError(f"Could not parse {s} as a byte specification: {why}") from None
