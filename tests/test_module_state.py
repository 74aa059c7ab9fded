"""No module of ``models``, ``topo`` or ``examples/`` holds mutable state: caches belong to the object whose lifetime they
share (a :class:`models.engine.fabric.PreparedFabric`), never to a module. Read from the source
(ast), anywhere at module level (inside ``if``/``try``/``with``/``for`` blocks too) and in class
bodies (a class attribute is shared by every instance): a name bound to a dict, list or set (a
display, a comprehension or a call such as ``dict()``, ``OrderedDict()``, ``defaultdict()``,
``WeakKeyDictionary()``, a memo of :mod:`models.engine.memo`), a numpy array (writeable), a
function cached with ``lru_cache``/``cache`` (as a decorator or called on it), and a ``global``
statement (a function rebinding a module name), each fails. Constants stay: tuples, frozensets,
strings and numbers, and tables wrapped read-only in ``types.MappingProxyType(...)`` whose
values are not themselves dicts, lists or sets."""

from __future__ import annotations

import ast
from pathlib import Path

from topo.collector import collector_paused

ROOT = Path(__file__).parents[1]
MUTABLE_CALLS = {"dict", "list", "set", "bytearray", "OrderedDict", "defaultdict", "Counter", "deque",
                 "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "ChainMap", "SimpleNamespace",
                 "BoundedMemo", "LazyTable"}
# numpy's constructors of (writeable) arrays, called as np.NAME or numpy.NAME.
ARRAY_CALLS = {"array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "fromiter",
               "zeros_like", "ones_like", "empty_like", "full_like", "concatenate", "stack"}
MUTABLE_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
CACHES = {"lru_cache", "cache", "cached_property"}
BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While)


def _called(node) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return getattr(f, "id", None) or getattr(f, "attr", None)
    return None


def _mutable(value) -> str | None:
    """What makes ``value`` (an assigned expression) mutable state, or None."""
    if isinstance(value, MUTABLE_DISPLAYS) or _called(value) in MUTABLE_CALLS:
        return type(value).__name__
    if _called(value) == "MappingProxyType" and value.args and isinstance(value.args[0], ast.Dict):
        table = value.args[0]
        inner = [v for k, v in zip(table.keys, table.values) if k is not None and _mutable(v) is not None]
        if inner:  # read-only outside, writable within: TABLE["k"]["x"] = 0 still changes it
            return f"MappingProxyType of mutable values ({_mutable(inner[0])})"
    if isinstance(value, ast.Call):
        f = value.func
        if isinstance(f, ast.Attribute) and f.attr in ARRAY_CALLS and ast.unparse(f.value) in ("np", "numpy"):
            return f"numpy.{f.attr} (a writeable array)"
        if _called(value) in CACHES or _called(f) in CACHES:  # cache(f), lru_cache(maxsize=8)(f)
            return "a cached function"
    return None


def module_state(source: str) -> list:
    """``(line, what)`` of every piece of module-level mutable state in a module's source.

    Parsed and read with the cyclic collector paused: a syntax tree holds no reference cycle, and
    the collections its many new nodes would trigger free nothing (most of the parse's time)."""
    with collector_paused():
        return _module_state(ast.parse(source))


def _bindings(body, where=""):
    """``(node, where)`` of every assignment of a module's (or class's) body, inside its blocks,
    and in the bodies of its classes (``where``: the class, for the message)."""
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            yield node, where
        elif isinstance(node, BLOCKS):
            inner = [*node.body, *getattr(node, "orelse", ()), *getattr(node, "finalbody", ())]
            for handler in getattr(node, "handlers", ()):
                inner += handler.body
            yield from _bindings(inner, where)
        elif isinstance(node, ast.ClassDef):
            yield from _bindings(node.body, f"{where}{node.name}.")


def _module_state(tree: ast.Module) -> list:
    found = []
    for node, where in _bindings(tree.body):
        if node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [ast.unparse(t) for t in targets]
        if names == ["__all__"] and not where:
            continue
        what = _mutable(node.value)
        if what is not None:
            found.append((node.lineno, f"{where}{', '.join(names)} = {what}"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                name = _called(d) or getattr(d, "id", None) or getattr(d, "attr", None)
                if name in CACHES:
                    found.append((node.lineno, f"@{name} on {node.name}"))
        elif isinstance(node, ast.Global):
            found.append((node.lineno, f"global {', '.join(node.names)} (a function rebinding module state)"))
    return sorted(found)


def test_no_module_level_mutable_state_in_the_package_or_the_examples():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for tree in ("models", "topo", "examples") for path in sorted((ROOT / tree).rglob("*.py"))
             for line, what in module_state(path.read_text(encoding="utf-8"))]
    assert not found, "module-level mutable state (keep it on the object that owns it):\n" + "\n".join(found)


def test_the_scan_catches_each_kind_of_state():
    source = """
import functools, weakref
import numpy as np
from collections import OrderedDict, defaultdict
from types import MappingProxyType
from models.engine.memo import BoundedMemo
__all__ = ["x"]
A = {}
B = [1]
C = {1, 2}
D = OrderedDict()
E = weakref.WeakKeyDictionary()
F = defaultdict(list)
G: dict = dict()
H = {k: k for k in range(3)}
@functools.lru_cache(maxsize=4)
def f(): pass
@functools.cache
def g(): pass
class K:
    table = {}
    @functools.lru_cache
    def m(self): pass
try:
    I = {}
except ImportError:
    I = []
if True:
    J = np.array([1.0])
L = functools.lru_cache(maxsize=2)(len)
M = functools.cache(len)
N = BoundedMemo(8)
def count():
    global COUNT
    COUNT = 1
P = MappingProxyType({"a": {"b": 1}})
OK1 = (1, 2)
OK2 = frozenset({1})
OK3 = MappingProxyType({"a": 1})
OK4 = "text"
OK5 = np.float64(1.0)
class OK6:
    __slots__ = ("a",)
    size = 4
"""
    found = module_state(source)
    assert [line for line, _ in found] == [8, 9, 10, 11, 12, 13, 14, 15, 17, 19, 21, 23, 25, 27, 29, 30, 31, 32,
                                           34, 36]
    assert any("K.table" in what for _, what in found) and any("global COUNT" in what for _, what in found)
