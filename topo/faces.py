"""Package faces: a few names a user calls, each imported from its module on first use.

The one helper of the ``topo`` and ``models`` faces: it lives on the ground floor, which ``topo``
may import and every floor of ``models`` imports from.

A face (a package's ``__init__``) lists what a user calls, about 30 names, and imports nothing
until one of them is asked for (PEP 562 module ``__getattr__``), so that importing one module of
the package (``models.engine.nccl.tuning``) does not import its siblings, and the command line
starts without the modules it does not use. A name an earlier face listed that this one no
longer does still resolves from the module that has it, with a DeprecationWarning naming it; a
submodule not imported yet (``topo.io``) resolves as a plain package gives it.

Examples
--------
>>> import warnings
>>> face_getattr, face_dir = lazy_face("topo", {"parse_nbytes": "topo.units"},
...                                    {"nbytes": "topo.units.parse_nbytes"})
>>> face_getattr("parse_nbytes")("64K")
65536
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     parse = face_getattr("nbytes")
>>> str(caught[0].message)
'topo.nbytes moved to topo.units.parse_nbytes in dgx-topo 0.3: import it from there'
>>> face_getattr("io").__name__  # a submodule
'topo.io'
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from collections.abc import Callable, Mapping

__all__ = ["lazy_face", "moved_names", "Face"]


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
        ``__getattr__(name)`` (a submodule for a name in neither mapping; else AttributeError)
        and ``__dir__()``.
    """
    moved = {} if moved is None else moved

    def face_getattr(name: str):
        if name in face:
            value = getattr(importlib.import_module(face[name]), name)
            setattr(sys.modules[package], name, value)  # asked once: later lookups skip this
            return value
        where = moved.get(name)
        if where is None:
            try:  # a submodule not imported yet (``topo.io``), as a plain package gives it
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return _moved(package, name, where)

    def face_dir() -> list:
        return sorted({*vars(sys.modules[package]), *face})

    return face_getattr, face_dir

def _moved(module: str, name: str, where: str) -> object:
    """``module.name``, which is ``where`` (``"module.name"``) now: warns and returns it."""
    # stacklevel 3: the warning points at the line that read the name, past the __getattr__ hook.
    warnings.warn(f"{module}.{name} moved to {where} in dgx-topo 0.3: import it from there",
                  DeprecationWarning, stacklevel=3)
    new_module, _, attribute = where.rpartition(".")
    return getattr(importlib.import_module(new_module), attribute)


def moved_names(module: str, moved: Mapping[str, str]) -> Callable[[str], object]:
    """The ``__getattr__`` (PEP 562) of a module whose functions in ``moved`` live elsewhere now.

    Reading one (``from models.studies.planner import format_plan``) warns with a
    DeprecationWarning naming the new place and returns the object from there (imported by name
    when asked: the module's floor never imports :mod:`models.present`). Any other missing name
    is an AttributeError, as without the hook. (:func:`lazy_face` does the same for a package's
    face, which also resolves submodules.)

    Parameters
    ----------
    module : str
        The module's ``__name__``.
    moved : mapping
        Old name -> ``"module.name"`` where it is now.

    Examples
    --------
    >>> import warnings
    >>> getattr_ = moved_names("old", {"format_us": "models.present.format.format_us"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_("format_us")(2e-6)
    '2.00'
    >>> str(caught[0].message)
    'old.format_us moved to models.present.format.format_us in dgx-topo 0.3: import it from there'
    """
    def module_getattr(name: str):
        where = moved.get(name)
        if where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return _moved(module, name, where)

    return module_getattr
