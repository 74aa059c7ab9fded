"""Import paths of dgx-topo 0.2, kept working for a while.

In 0.3 ``models`` was re-cut into four wings (:mod:`models.engine`, :mod:`models.predict`,
:mod:`models.studies`, :mod:`models.present`). A 0.2 import path still works and warns once
with a :class:`DeprecationWarning` that names the new place:

- a module (``import models.collectives``, ``from models.nccl.search import ...``) resolves to
  the same module object under its new name (:data:`MOVED_MODULES`);
- a name of 0.2's ``models`` face that the 0.3 face no longer lists (``models.Router``) is
  looked up in its new module by ``models.__getattr__`` (:data:`MOVED_NAMES`).

:class:`MovedModuleFinder` is the import hook; ``models/__init__.py`` installs it once.

Examples
--------
>>> new_module_name("models.nccl.search"), new_module_name("models.engine.routes")
('models.engine.nccl.search', None)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import MappingProxyType

__all__ = ["MOVED_MODULES", "MOVED_NAMES", "MovedModuleFinder", "moved_name", "new_module_name"]

#: 0.2 module -> 0.3 module (a package maps its submodules too: models.nccl.search ->
#: models.engine.nccl.search).
MOVED_MODULES = MappingProxyType({
    "models.routes": "models.engine.routes",
    "models.nccl": "models.engine.nccl",
    "models.nccltests": "models.engine.nccltests",
    "models.measure": "models.predict.measure",
    "models.network": "models.predict.network",
    "models.collectives": "models.predict.collectives",
    "models.p2p": "models.predict.p2p",
    "models.maxflow": "models.predict.maxflow",
    "models.relays": "models.studies.relays",
    "models.bounds": "models.studies.bounds",
    "models.packing": "models.studies.packing",
    "models.whatif": "models.studies.whatif",
    "models.planner": "models.studies.planner",
    "models.workload": "models.studies.workload",
    "models.compute": "models.studies.compute",
    "models.calibration": "models.studies.calibration",
    "models.benchmarks": "models.studies.benchmarks",
    "models.text": "models.present.text",
    "models.output": "models.present.output",
    "models.progress": "models.present.progress",
    "models.plot": "models.present.plot",
    "models.bounds_plot": "models.present.bounds_plot",
    "models.whatif_plot": "models.present.whatif_plot",
    "models.plan_plot": "models.present.plan_plot",
    "models.report": "models.present.report",
    "models.cli": "models.present.cli",
})

#: Names of 0.2's ``models`` face that 0.3's face does not list -> the module that has them
#: now. Filled in as the faces are cut (models/__init__.py lists what stays).
MOVED_NAMES = MappingProxyType({
    "format_p2p_report": "models.present.text",  # words live in models.present
})


def new_module_name(old: str) -> str | None:
    """The 0.3 name of a 0.2 module (``None`` if ``old`` did not move)."""
    for prefix, new in MOVED_MODULES.items():
        if old == prefix or old.startswith(prefix + "."):
            return new + old[len(prefix):]
    return None


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new} in dgx-topo 0.3: import it from there", DeprecationWarning,
                  stacklevel=3)


def moved_name(name: str):
    """``models.<name>`` of 0.2, from the module that has it now (with a DeprecationWarning).

    Raises
    ------
    AttributeError
        If 0.2's face had no such name either.
    """
    module = MOVED_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    _warn(f"models.{name}", f"{module}.{name}")
    return getattr(importlib.import_module(module), name)


class _AliasLoader(importlib.abc.Loader):
    """Loads a 0.2 module name as the already imported 0.3 module (the same object)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        """Nothing to run: the 0.3 module ran when it was imported."""


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds a 0.2 module name of :data:`MOVED_MODULES` and loads the 0.3 module in its place."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_module_name(fullname)
        if new is None:
            return None
        _warn(fullname, new)
        spec = importlib.util.find_spec(new)
        alias = importlib.util.spec_from_loader(fullname, _AliasLoader(new),
                                                is_package=spec is not None and spec.submodule_search_locations is not None)
        return alias


def install() -> None:
    """Put :class:`MovedModuleFinder` on ``sys.meta_path`` unless it is there already."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        # First: the path finder would otherwise load a 0.2 package's submodules a second time
        # (models.nccl.search from the 0.3 package's directory, as a distinct module object).
        sys.meta_path.insert(0, MovedModuleFinder())
