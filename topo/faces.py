"""Package faces: a few names a user calls, each imported from its module on first use.

The one helper of the ``topo`` and ``models`` faces: it lives on the ground floor, which ``topo``
may import and every floor of ``models`` imports from.

A face (a package's ``__init__``) lists what a user calls, about 30 names, and imports nothing
until one of them is asked for (PEP 562 module ``__getattr__``), so that importing one module of
the package (``models.engine.nccl.tuning``) does not import its siblings, and the command line
starts without the modules it does not use. A submodule not imported yet (``topo.io``) resolves
as a plain package gives it.

Examples
--------
>>> face_getattr, face_dir = lazy_face("topo", {"parse_nbytes": "topo.units"})
>>> face_getattr("parse_nbytes")("64K")
65536
>>> face_getattr("io").__name__  # a submodule
'topo.io'
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping

__all__ = ["lazy_face", "Face"]


class Face(types.ModuleType):
    """The class of a package whose face lists a name that is also one of its submodules
    (``topo.cluster``, the function, and ``topo/cluster.py``): importing the submodule, which
    binds it to the package's attribute, leaves the face's name in place, as a face that
    imported every name at once did. The package lists its face as ``_FACE`` and sets this
    class itself (``sys.modules[__name__].__class__ = Face``)."""

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}" \
                and name in vars(self).get("_FACE", ()):
            return  # the face's name wins; the submodule stays in sys.modules
        super().__setattr__(name, value)


def lazy_face(package: str, face: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose face is ``face``.

    Parameters
    ----------
    package : str
        The package's dotted name (its ``__name__``).
    face : mapping
        Each listed name -> the dotted name of the module that defines it.

    Returns
    -------
    (callable, callable)
        ``__getattr__(name)`` (a submodule for a name the face does not list; else
        AttributeError) and ``__dir__()``.
    """
    def face_getattr(name: str):
        module = face.get(name, f"{package}.{name}")
        try:
            imported = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if name in face or error.name != module:
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        if name not in face:
            return imported  # a submodule not imported yet (``topo.io``), as a plain package gives it
        value = getattr(imported, name)
        setattr(sys.modules[package], name, value)  # asked once: later lookups skip this
        return value

    def face_dir() -> list:
        return sorted({*vars(sys.modules[package]), *face})

    return face_getattr, face_dir
