"""The public API is annotated, and the annotations are consistent (mypy, pyproject.toml's [tool.mypy])."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

#: The faces whose ``__all__`` is the public API.
FACES = ("topo", "topo.io", "models")


def _unannotated(function) -> list[str]:
    """Parameters (and ``return``) of ``function`` without an annotation."""
    signature = inspect.signature(function)
    missing = [p.name for p in signature.parameters.values()
               if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if function.__name__ != "__init__" and signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _public_functions():
    """``(name, function)`` of every public function of the faces and public method of their classes."""
    seen = set()
    for face in FACES:
        module = importlib.import_module(face)
        for name in module.__all__:
            item = getattr(module, name)
            if inspect.isfunction(item):
                yield f"{item.__module__}.{name}", item
            elif inspect.isclass(item) and item.__module__.split(".")[0] in ("topo", "models"):
                for attribute, value in vars(item).items():
                    if attribute.startswith("_") and attribute != "__init__":
                        continue
                    if attribute == "__init__" and dataclasses.is_dataclass(item):
                        continue  # written by dataclasses from the annotated fields
                    function = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                    if inspect.isfunction(function) and (item, attribute) not in seen:
                        seen.add((item, attribute))
                        yield f"{item.__module__}.{item.__name__}.{attribute}", function


def test_the_scan_sees_the_public_api():
    names = {name for name, _ in _public_functions()}
    assert {"models.predict.collectives.estimate", "topo.registry.build", "topo.io.fabric_file.from_json",
            "models.engine.routes.Router.route", "models.predict.collectives.CollectiveEstimate.busbw"} <= names


def test_every_public_function_is_annotated():
    """Parameters and return of every function and method the faces export."""
    missing = {name: gaps for name, function in _public_functions() if (gaps := _unannotated(function))}
    assert missing == {}


def test_unannotated_is_found():
    def half(x, y: int = 1):
        return x

    assert _unannotated(half) == ["x", "return"]


def test_mypy_passes_on_the_public_modules(tmp_path):
    """mypy (the test extra installs it) on the modules pyproject.toml's [tool.mypy] lists."""
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                             "--cache-dir", str(tmp_path / "mypy-cache"), "--no-error-summary"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
