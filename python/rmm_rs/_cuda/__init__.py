"""rmm_rs._cuda: RAPIDS RMM's ``rmm._cuda``: :mod:`.gpu` (devices, versions and CUDA errors as
Python exceptions) and :mod:`.stream` (the stream class under its older name), which code
outside RAPIDS imports too."""

from . import gpu, stream

__all__ = ["gpu", "stream"]
