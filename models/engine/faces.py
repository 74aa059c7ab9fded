"""Package faces: a few names a user calls, each imported from its module on first use.

A face (a package's ``__init__``) lists what a user calls, about 30 names, and imports nothing
until one of them is asked for (PEP 562 module ``__getattr__``), so that importing one module of
the package (``models.engine.nccl.tuning``) does not import its siblings, and the command line
starts without the modules it does not use. A name an earlier face listed that this one no
longer does still resolves from the module that has it, with a DeprecationWarning naming it.

Examples
--------
>>> import warnings
>>> face_getattr, face_dir = lazy_face("models.engine.nccl", {"tune": "models.engine.nccl.tuning"},
...                                    {"nccl_tree_depth": "models.engine.nccl.trees.nccl_tree_depth"})
>>> face_getattr("tune").__name__
'tune'
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     depth = face_getattr("nccl_tree_depth")
>>> str(caught[0].message)
'models.engine.nccl.nccl_tree_depth moved to models.engine.nccl.trees.nccl_tree_depth in dgx-topo 0.3: import it from there'
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping

__all__ = ["lazy_face"]


def lazy_face(package: str, face: Mapping[str, str],
              moved: Mapping[str, str] | None = None) -> tuple[Callable[[str], object], Callable[[], list]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose face is ``face``.

    Parameters
    ----------
    package : str
        The package's dotted name (its ``__name__``).
    face : mapping
        Each listed name -> the dotted name of the module that defines it.
    moved : mapping, optional
        Names the face no longer lists -> ``"module.name"`` where each is now; reading one warns
        (DeprecationWarning) and returns it.

    Returns
    -------
    (callable, callable)
        ``__getattr__(name)`` (raises AttributeError for a name in neither mapping) and
        ``__dir__()``.
    """
    moved = {} if moved is None else moved

    def face_getattr(name: str):
        if name in face:
            value = getattr(importlib.import_module(face[name]), name)
            setattr(sys.modules[package], name, value)  # asked once: later lookups skip this
            return value
        where = moved.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        warnings.warn(f"{package}.{name} moved to {where} in dgx-topo 0.3: import it from there",
                      DeprecationWarning, stacklevel=2)
        module, _, attribute = where.rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    def face_dir() -> list:
        return sorted({*vars(sys.modules[package]), *face})

    return face_getattr, face_dir
