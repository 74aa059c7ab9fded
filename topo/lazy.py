"""Package faces that import a name's module when the name is first read (PEP 562).

``import topo`` and ``import models`` would otherwise import every module their faces list
(networkx, numpy and the whole cost layer) before anything runs: ``dgxtopo --version`` paid
for the models it never used. A face lists where each public name lives; the module is imported
on first access and the name then kept in the package's namespace, so later reads are plain
attribute reads.

Examples
--------
>>> import topo
>>> type(topo).__name__, "build" in dir(topo), topo.cluster.__module__
('Face', True, 'topo.registry')
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping

__all__ = ["lazy_face", "Face"]


class Face(types.ModuleType):
    """The class of a lazy package: a public name that is also a submodule's (``topo.cluster``,
    the function, and ``topo/cluster.py``) stays the public name when the submodule is imported
    (the import system binds a submodule to its package's attribute), as it did when the face
    imported every name at once."""

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}" \
                and name in vars(self).get("__face__", ()):
            return  # the face's name wins; the submodule stays in sys.modules
        super().__setattr__(name, value)


def lazy_face(package: str, where: Mapping[str, str],
              missing: Callable[[str], object] | None = None) -> tuple:
    """``(__getattr__, __dir__)`` for the face of ``package``.

    Parameters
    ----------
    package : str
        The package's name (``__name__`` of its ``__init__``).
    where : mapping of str to str
        Public name -> the module that defines it (``"module:name"`` where the face renames it).
    missing : callable, optional
        Called with a name ``where`` does not list (``models``: the 0.2 names that moved); a
        name it does not know either (``AttributeError``) may be a submodule not imported yet.
    """

    face = sys.modules[package]
    face.__face__ = frozenset(where)
    face.__class__ = Face

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            try:
                if missing is None:
                    raise AttributeError(f"module {package!r} has no attribute {name!r}")
                return missing(name)
            except AttributeError:
                try:  # a submodule not imported yet (``topo.io``), as a plain package gives it
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as error:
                    if error.name != f"{package}.{name}":
                        raise
                raise
        path, _, attribute = module.partition(":")
        value = getattr(importlib.import_module(path), attribute or name)
        setattr(sys.modules[package], name, value)  # read once: later reads skip this function
        return value

    def __dir__() -> list:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
