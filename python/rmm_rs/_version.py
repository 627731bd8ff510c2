"""rmm_rs._version: RAPIDS RMM's ``rmm._version``: ``__version__`` (python/pyproject.toml's
version) and ``__git_commit__``, the commit a wheel was built from (the file GIT_COMMIT the
build backend writes beside this module; "" when running from the repository, as RAPIDS has it
outside a built distribution)."""

import os

__version__ = "0.1.0"  # python/pyproject.toml's version


def _git_commit() -> str:
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "GIT_COMMIT"), encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


__git_commit__ = _git_commit()

__all__ = ["__git_commit__", "__version__"]
