"""What the Python tests share: the devices they run on (simulated unless RMM_RS_TEST_GPU=1),
rmm_rs importable from python/, and child processes."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from typing import Dict, Optional

ON_GPU = os.environ.get("RMM_RS_TEST_GPU") == "1" or "--gpu" in sys.argv
if "--gpu" in sys.argv:
    sys.argv.remove("--gpu")
    os.environ["RMM_RS_TEST_GPU"] = "1"  # for the test modules loaded later, and children
if ON_GPU:
    os.environ.pop("RMM_SIM_DEVICES", None)
else:
    os.environ.setdefault("RMM_SIM_DEVICES", "1:1GiB")
    os.environ.setdefault("RMM_SIM_ON_RACE", "count")

if os.environ.get("RMM_RS_LIBRARY"):  # children run in folders of their own
    os.environ["RMM_RS_LIBRARY"] = os.path.abspath(os.environ["RMM_RS_LIBRARY"])

TESTS = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(TESTS)  # python/: the package rmm_rs and librmm_cffi.py
if PYTHON not in sys.path:
    sys.path.insert(0, PYTHON)


# sitecustomize.py there: shims for third-party version skew, in every child Python.
COMPAT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat")


def have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def run_child(code: str, timeout: float = 120.0, env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
              check: bool = True) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh Python (this environment, rmm_rs importable, `env` added)."""
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join([PYTHON, COMPAT, full.get("PYTHONPATH", "")])
    full.update(env or {})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)
    if check and done.returncode != 0:
        raise AssertionError(f"child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done
