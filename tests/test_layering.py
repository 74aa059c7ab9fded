"""The package layout's rules, read from the source: no import cycle (imports inside functions
included), no module reading another's private names, ``topo`` never importing ``models``."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

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


@functools.lru_cache(maxsize=None)
def _tree(module: str) -> ast.Module:
    """The module's syntax tree, parsed once for every test of this file (read-only)."""
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _imports(module: str) -> tuple:
    """``(target module, imported name or None, line)`` for every import of a module, anywhere."""
    tree = _tree(module)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub, None, node.lineno) if sub in MODULES else (target, alias.name, node.lineno))
    return tuple((t, n, line) for t, n, line in found if t.split(".")[0] in PACKAGES)


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


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_reads_another_modules_private_names(module):
    offenders = [(t, n, line) for t, n, line in _imports(module)
                 if n is not None and n.startswith("_") and not n.startswith("__") and t != module]
    tree = _tree(module)
    aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name.split(".")[0] in PACKAGES}
    for node in ast.walk(tree):  # topo._private / models.x._private through an imported module
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                offenders.append((base.id, node.attr, node.lineno))
    assert not offenders, f"{module} reads private names of other modules: {offenders}"
