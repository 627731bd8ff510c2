"""``rmm``, the name RAPIDS RMM's Python package is imported by, given to :mod:`rmm_rs`: with
this folder on ``sys.path`` (``PYTHONPATH=python/as_rmm``, or ``pip install -C as-rmm=1
python/``, which installs it beside ``rmm_rs``), code written for RAPIDS RMM runs unchanged on
rmm-rs. ``import rmm`` gives the module :mod:`rmm_rs` itself, and ``import rmm.X`` /
``from rmm.X import Y`` give :mod:`rmm_rs.X` itself (not copies: ``rmm.mr.CudaMemoryResource is
rmm_rs.mr.CudaMemoryResource``), so both names can be used in one program.

It takes the place of RAPIDS' ``rmm``: install one or the other, not both."""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Dict, Optional, Sequence

_PREFIX = "rmm."
_TARGET = "rmm_rs"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``rmm.X`` with the module ``rmm_rs.X``: the import system then records that
    same module object under both names."""

    def __init__(self) -> None:
        # The spec of each module being aliased: the import system sets ``__spec__`` to the
        # alias's spec, which exec_module puts back (``rmm_rs.X.__spec__.name`` stays
        # "rmm_rs.X", for pickle, importlib.reload and the like).
        self._specs: Dict[str, Optional[importlib.machinery.ModuleSpec]] = {}

    def find_spec(self, name: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if not name.startswith(_PREFIX):
            return None
        real = _TARGET + name[len(_PREFIX) - 1:]
        found = importlib.util.find_spec(real)
        if found is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=found.submodule_search_locations is not None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(_TARGET + spec.name[len(_PREFIX) - 1:])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        if spec is not None and spec.name in self._specs:
            module.__spec__ = self._specs.pop(spec.name)


if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

# `import rmm` binds what sys.modules holds under the name once this body has run.
sys.modules[__name__] = importlib.import_module(_TARGET)
