"""No module of ``models`` holds mutable state: caches belong to the object whose lifetime they
share (a :class:`models.engine.fabric.PreparedFabric`), never to a module. Read from the source
(ast): a module-level name bound to a dict, list or set (a display, a comprehension or a call
such as ``dict()``, ``OrderedDict()``, ``defaultdict()``, ``WeakKeyDictionary()``), or a function
decorated with ``lru_cache``/``cache``, fails. Constants stay: tuples, frozensets, strings and
numbers, and tables wrapped read-only in ``types.MappingProxyType(...)``."""

from __future__ import annotations

import ast
from pathlib import Path

from topo.collector import collector_paused

ROOT = Path(__file__).parents[1]
MUTABLE_CALLS = {"dict", "list", "set", "bytearray", "OrderedDict", "defaultdict", "Counter", "deque",
                 "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "ChainMap", "SimpleNamespace"}
MUTABLE_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
CACHES = {"lru_cache", "cache", "cached_property"}


def _called(node) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return getattr(f, "id", None) or getattr(f, "attr", None)
    return None


def module_state(source: str) -> list:
    """``(line, what)`` of every piece of module-level mutable state in a module's source.

    Parsed and read with the cyclic collector paused: a syntax tree holds no reference cycle, and
    the collections its many new nodes would trigger free nothing (most of the parse's time)."""
    with collector_paused():
        return _module_state(ast.parse(source))


def _module_state(tree: ast.Module) -> list:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [ast.unparse(t) for t in targets]
            if names == ["__all__"]:
                continue
            if isinstance(node.value, MUTABLE_DISPLAYS) or _called(node.value) in MUTABLE_CALLS:
                found.append((node.lineno, f"{', '.join(names)} = {type(node.value).__name__}"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                name = _called(d) or getattr(d, "id", None) or getattr(d, "attr", None)
                if name in CACHES:
                    found.append((node.lineno, f"@{name} on {node.name}"))
    return found


def test_no_module_level_mutable_state_in_models():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for path in sorted((ROOT / "models").rglob("*.py"))
             for line, what in module_state(path.read_text(encoding="utf-8"))]
    assert not found, "module-level mutable state (keep it on the object that owns it):\n" + "\n".join(found)


def test_the_scan_catches_each_kind_of_state():
    source = """
import functools, weakref
from collections import OrderedDict, defaultdict
from types import MappingProxyType
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
    @functools.lru_cache
    def m(self): pass
OK1 = (1, 2)
OK2 = frozenset({1})
OK3 = MappingProxyType({"a": 1})
OK4 = "text"
"""
    found = module_state(source)
    assert [line for line, _ in found] == [6, 7, 8, 9, 10, 11, 12, 13, 15, 17, 20]
