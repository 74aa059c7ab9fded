"""Each package face is one mapping: ``_FACE`` (public name -> the module that defines it) is the
only place a face spells its names by hand.

``__all__`` is ``list(_FACE)``; the ``if TYPE_CHECKING:`` block (what mypy reads of a lazy face,
which it cannot derive from a computed import) imports exactly the mapping's names, each from the
module the mapping names. A face that adds a name to one place and not the other, or imports it
from another module, fails here.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

#: Every package face of the project (a package's ``__init__.py``).
FACES = sorted(".".join(path.relative_to(ROOT).parent.parts)
               for top in ("topo", "models") for path in (ROOT / top).rglob("__init__.py"))


def _absolute(package: str, node: ast.ImportFrom) -> str:
    """The module an ``import from`` inside ``package``'s face names."""
    if not node.level:
        return node.module
    base = package.split(".")[:len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def face_mismatches(package: str, source: str, face: dict) -> list:
    """What a face's source spells differently from its mapping ``face``: ``__all__`` not
    derived from it, a mapped name the face does not import (in ``if TYPE_CHECKING:`` or at its
    top level) from its module, a name the TYPE_CHECKING block imports that the mapping lacks or
    maps elsewhere."""
    tree = ast.parse(source)
    problems = []
    alls = [node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            and any(isinstance(t, ast.Name) and t.id == "__all__"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    if [ast.unparse(value) for value in alls] != ["list(_FACE)"]:
        problems.append(f"__all__ is {[ast.unparse(v) for v in alls]}, expected list(_FACE)")
    checking = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    typed = {alias.asname or alias.name: _absolute(package, node)
             for block in checking for node in block.body if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    eager = {alias.asname or alias.name: _absolute(package, node)
             for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    for name, module in face.items():
        if typed.get(name, eager.get(name)) != module:
            problems.append(f"{name}: mapped to {module}, imported from {typed.get(name, eager.get(name))}")
    problems += [f"{name}: imported for type checking from {module}, not in the mapping"
                 for name, module in typed.items() if name not in face]
    return problems


@pytest.mark.parametrize("package", FACES)
def test_every_face_spells_its_names_once(package):
    face = importlib.import_module(package)
    assert hasattr(face, "_FACE"), f"{package}: a face lists its names in one mapping, _FACE"
    source = (ROOT / Path(*package.split(".")) / "__init__.py").read_text(encoding="utf-8")
    assert face_mismatches(package, source, dict(face._FACE)) == []
    assert face.__all__ == list(face._FACE)
    for name, module in face._FACE.items():  # the mapping says where each name is defined
        assert getattr(importlib.import_module(module), name) is getattr(face, name), name


def test_the_check_sees_each_way_a_face_can_disagree_with_its_mapping():
    good = ("from typing import TYPE_CHECKING\n_FACE = {}\n__all__ = list(_FACE)\n"
            "if TYPE_CHECKING:\n    from .a import f, g\n    from models.b import h\n")
    face = {"f": "models.x.a", "g": "models.x.a", "h": "models.b"}
    assert face_mismatches("models.x", good, face) == []
    assert face_mismatches("models.x", good.replace("list(_FACE)", '["f", "g", "h"]'), face) == [
        "__all__ is [\"['f', 'g', 'h']\"], expected list(_FACE)"]
    assert face_mismatches("models.x", good, {**face, "k": "models.x.a"}) == [
        "k: mapped to models.x.a, imported from None"]
    assert face_mismatches("models.x", good, {"f": "models.x.a", "h": "models.b"}) == [
        "g: imported for type checking from models.x.a, not in the mapping"]
    assert face_mismatches("models.x", good, {**face, "h": "models.x.b"}) == [
        "h: mapped to models.x.b, imported from models.b"]
    eager = "from ..version import __version__\n_FACE = {}\n__all__ = list(_FACE)\n"
    assert face_mismatches("models.x", eager, {"__version__": "models.version"}) == []
    assert FACES[:2] == ["models", "models.engine"] and "topo.io" in FACES
