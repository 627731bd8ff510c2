"""librmm_cffi: RMM's 2019 Python interface (``from librmm_cffi import librmm as rmm``,
``from librmm_cffi import librmm_config as rmm_cfg``), installed with the rmm_rs package: a
name for :mod:`rmm_rs.legacy`, which runs it over rmm-rs."""

from rmm_rs.legacy import _install_legacy_modules, librmm, librmm_config

_install_legacy_modules()

__all__ = ["librmm", "librmm_config"]
