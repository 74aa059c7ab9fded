"""The package layout's rules, read from the source: no import cycle (imports inside functions
included), no module reading another's private names, ``topo`` never importing ``models``, the
floors of ``models`` (topo < engine < predict < studies < schedules < present < the ``models`` face; nothing
imports upward) and no module of ``models`` importing a package's face (``__init__``) of ``models``.
Imports inside functions count: a lazy import is still an arrow between floors, and so does a
module's dotted name written as a string (a face's names, imported when read): no string outside a
docstring names a higher floor, and only one module of ``models`` calls importlib."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import NamedTuple

import networkx as nx

from topo.collector import collector_paused

ROOT = Path(__file__).parents[1]
PACKAGES = ("topo", "models")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``import from`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    base = package if is_package else package[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class _Scan(NamedTuple):
    """What the tests below read from one module's source (its syntax tree is not kept)."""

    imports: tuple  #: ``(target module, imported name or None, line)`` of every import, anywhere
    private_reads: tuple  #: ``(module alias, name, line)``: ``alias._name`` through an imported module
    word_builders: tuple  #: :func:`_word_builders` of the module
    dynamic_imports: tuple  #: lines of ``importlib.import_module(...)`` / ``__import__(...)`` calls
    by_name: tuple  #: :func:`_by_name` of the module


@functools.lru_cache(maxsize=None)
def _scan(module: str) -> _Scan:
    """The module's :class:`_Scan`, made once for every test of this file from one parse and one
    walk of its syntax tree. The tree is dropped at once, and parsed with the cyclic collector
    paused: a syntax tree holds no reference cycle, the collections that its hundreds of thousands
    of new nodes trigger free nothing (they were two thirds of the parse's time), and trees kept
    alive would be traversed again by every full collection of the rest of the worker's run."""
    with collector_paused():
        nodes = tuple(ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))))
        found = []
        aliases = set()
        reads = []
        for node in nodes:
            if isinstance(node, ast.Import):
                found += [(alias.name, None, node.lineno) for alias in node.names]
                aliases |= {alias.asname or alias.name for alias in node.names
                            if alias.name.split(".")[0] in PACKAGES}
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.append((sub, None, node.lineno) if sub in MODULES else (target, alias.name, node.lineno))
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name):
                    reads.append((base.id, node.attr, node.lineno))
        words = tuple(_word_builders(nodes))
        dynamic = tuple(node.lineno for node in nodes if isinstance(node, ast.Call)
                        and _call_name(node) in ("import_module", "__import__"))
        named = tuple(_by_name(nodes))
        del nodes  # freed here, while the collector is paused (no node is in a cycle)
    return _Scan(imports=tuple((t, n, line) for t, n, line in found if t.split(".")[0] in PACKAGES),
                 private_reads=tuple(read for read in reads if read[0] in aliases), word_builders=words,
                 dynamic_imports=dynamic, by_name=named)


def _call_name(node: ast.Call) -> str | None:
    return getattr(node.func, "id", None) or getattr(node.func, "attr", None)


def _by_name(nodes) -> list:
    """``(where, dotted name, line)`` of every string outside a docstring that names a scanned
    module or a name in one (``"models.engine.fabric"``, ``"topo.units.GB"``): a face's ``_FACE``
    entries, imported when first read (:func:`topo.faces.lazy_face`), or any other string
    (``where`` is ``"_FACE"`` or ``"string"``)."""
    docstrings = {id(node.body[0].value) for node in nodes
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    face = {id(value) for node in nodes if isinstance(node, ast.Assign) and len(node.targets) == 1
            and getattr(node.targets[0], "id", None) == "_FACE" for value in ast.walk(node.value)}
    return [("_FACE" if id(node) in face else "string", node.value, node.lineno) for node in nodes
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and node.value.startswith(tuple(f"{p}." for p in PACKAGES)) and " " not in node.value
            and node.value.rstrip(".") not in PACKAGES]


def _imports(module: str) -> tuple:
    """``(target module, imported name or None, line)`` for every import of a module, anywhere."""
    return _scan(module).imports


@functools.lru_cache(maxsize=None)
def _graph() -> nx.DiGraph:
    """The import graph (shared by the tests below, which only read it)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module in MODULES:
        for target, _, _ in _imports(module):
            # a package's __init__ runs before any of its modules: importing a.b imports a
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module and not module.startswith(target + "."):
                graph.add_edge(module, target)
    return graph


#: The floors, lowest first; a module imports only from its own floor and those below.
#: ``models.schedules`` (schedules as data) sits above studies: a schedule is checked on its own, and
#: evaluated or written from what the floors below compute.
FLOORS = ("topo", "models.engine", "models.predict", "models.studies", "models.schedules", "models.present")


def _floor(module: str) -> int:
    """Index of the module's floor in :data:`FLOORS`; the ``models`` face and its neighbours
    (``models/__init__.py``, ``__main__``) sit above every wing."""
    for i in reversed(range(len(FLOORS))):
        if module == FLOORS[i] or module.startswith(FLOORS[i] + "."):
            return i
    return len(FLOORS)


def _target_module(target: str) -> str:
    """The scanned module an import target lands in (``a.b.name`` -> ``a.b``)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target


def test_the_scan_sees_the_layers():
    assert {"topo.schema", "models.engine.nccl.search", "models.predict.collectives", "models.present.cli"} <= set(MODULES)
    assert _graph().has_edge("models.predict.collectives", "models.engine.nccl.channels")


def test_no_import_cycle_even_inside_functions():
    # A package's __init__ re-exports its modules, so edges into a package are the re-export
    # direction only; a cycle among modules is what must not exist.
    graph = _graph()
    modules = graph.subgraph(m for m in MODULES if MODULES[m].name != "__init__.py")
    cycles = list(nx.simple_cycles(modules))
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_topo_never_imports_models():
    offenders = [(m, t, line) for m in MODULES if m.startswith("topo")
                 for t, _, line in _imports(m) if t.startswith("models")]
    assert not offenders


# The checks of every module below run in one test each, naming every offending module (as one
# test per module they were ~850 tests, each a few milliseconds of pytest's and xdist's work
# around a dictionary lookup).
def test_no_module_reads_another_modules_private_names():
    def offenders(module):
        found = [(t, n, line) for t, n, line in _imports(module)
                 if n is not None and n.startswith("_") and not n.startswith("__") and t != module]
        return found + list(_scan(module).private_reads)  # topo._private / models.x._private through an imported module
    found = {module: bad for module in sorted(MODULES) if (bad := offenders(module))}
    assert not found, f"modules read private names of other modules: {found}"


def test_the_floor_scan_sees_every_wing():
    assert {_floor(m) for m in MODULES} == set(range(len(FLOORS) + 1))
    assert _floor("models.present.report.html") == 5 and _floor("models.schedules.check") == 4 and _floor("models.engine.nccl.search") == 1


# TODO(re-cut): empty once the words of these modules live in models.present.
PENDING_UPWARD = set()


def test_nothing_imports_upward():
    def upward(module):
        here = _floor(module)
        return [(t, line) for t, _, line in _imports(module) if _floor(_target_module(t)) > here
                and (module, _target_module(t)) not in PENDING_UPWARD]
    found = {f"{module} (floor {FLOORS[_floor(module)] if _floor(module) < len(FLOORS) else 'face'})": bad
             for module in sorted(MODULES) if module.startswith("models") and (bad := upward(module))}
    assert not found, f"modules import upward: {found}"


def test_no_module_imports_a_package_face_of_models():
    # A face re-exports its package: importing it from inside runs every module of the package
    # (an arrow to each, and a cycle through the face). Modules import modules.
    def faces(module):
        return [(t, line) for t, _, line in _imports(module)
                if (target := _target_module(t)).startswith("models")
                and MODULES[target].name == "__init__.py" and target != module]
    found = {module: bad for module in sorted(MODULES) if module.startswith("models.") and (bad := faces(module))}
    assert not found, f"modules import a package face: {found}"


#: Names that build words: a ``format_*`` function, or one of these methods (none below
#: models.present).
WORD_METHODS = frozenset({"to_dict", "to_json", "describe", "explain", "format"})


def _builds_words(name: str, *, method: bool) -> bool:
    return name.startswith("format_") or (method and name in WORD_METHODS)


def _word_builders(nodes) -> list:
    """``(name, line)`` of every word-building function or method, among the
    nodes of a module's syntax tree (all of them, as ``ast.walk`` gives them)."""
    found = []
    for node in nodes:
        if not isinstance(node, (ast.Module, ast.ClassDef)):
            continue
        method = isinstance(node, ast.ClassDef)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _builds_words(item.name, method=method):
                    found.append((item.name, item.lineno))
            elif isinstance(item, ast.Assign) and method:
                found += [(t.id, item.lineno) for t in item.targets
                          if isinstance(t, ast.Name) and _builds_words(t.id, method=True)]
    return found


def test_words_are_built_only_in_present():
    found = {module: list(_scan(module).word_builders) for module in sorted(MODULES)
             if _floor(module) in (1, 2, 3, 4) and _scan(module).word_builders}
    assert not found, f"modules build words below models.present (move them there): {found}"


def test_the_words_scan_finds_word_builders():
    sample = ast.parse("def format_x(): pass\n"
                       "def formatted(): pass\n"
                       "class R:\n"
                       "    to_dict = staticmethod(dict)\n"
                       "    def describe(self): pass\n"
                       "    explain = lambda self: ''\n"
                       "    def format_row(self): pass\n"
                       "    def to_records(self): pass\n")
    assert sorted(_word_builders(ast.walk(sample))) == [("describe", 5), ("explain", 6), ("format_row", 7),
                                                        ("format_x", 1), ("to_dict", 4)]


#: The only module of models that imports by name (importlib): the shipped report's decoder of
#: its own result classes (present.report.shipped, the top floor). (topo.faces imports a face's
#: names.)
IMPORTS_BY_NAME = {"models.present.report.shipped"}


def test_only_the_shipped_decoder_imports_by_name():
    found = {module: list(_scan(module).dynamic_imports) for module in sorted(MODULES)
             if module.startswith("models") and _scan(module).dynamic_imports and module not in IMPORTS_BY_NAME}
    assert not found, f"modules import by name (at these lines): {found}"


def test_no_string_names_a_higher_floor():
    """A name handed to a mechanism that imports it when read is an import all the same, and keeps
    to the floors: a face names its own floor and those below, and no other string outside a
    docstring names a module of a higher floor (or a name in one)."""
    def higher(module):
        return [(where, name, line) for where, name, line in _scan(module).by_name
                if _floor(_target_module(name.rstrip("."))) > _floor(module)]
    found = {module: bad for module in sorted(MODULES) if (bad := higher(module))}
    assert not found, f"modules name a higher floor: {found}"


def test_the_by_name_scan_sees_faces_and_strings():
    assert ("_FACE", "models.predict.collectives") in {(where, name) for where, name, _ in _scan("models").by_name}
    sample = ast.parse('"""models.present.text: a docstring."""\n'
                       'def f():\n    """models.present.text"""\n    return "models.present.text.caveat_text"\n'
                       'x = f"models.present.{f()}"\n')
    assert _by_name(tuple(ast.walk(sample))) == [("string", "models.present.text.caveat_text", 4),
                                                 ("string", "models.present.", 5)]
    assert _floor(_target_module("models.present.".rstrip("."))) == 5
    assert _scan("models.present.report.shipped").dynamic_imports
    assert not _scan("models.predict.collectives").dynamic_imports
