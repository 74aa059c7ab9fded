"""The public API is annotated, and the annotations are consistent (mypy, pyproject.toml's [tool.mypy])."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

#: The faces whose ``__all__`` is the public API.
FACES = ("topo", "topo.io", "models")


def _public_modules() -> tuple[str, ...]:
    """The faces, and the wing modules pyproject.toml's [tool.mypy] checks (their ``__all__``)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the faces alone
        return FACES
    files = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["files"]
    wings = [f.removesuffix(".py").replace("/", ".") for f in files if f.startswith("models/") and
             not f.endswith("__init__.py")]
    return FACES + tuple(wings)


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
    for face in _public_modules():
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
            "models.engine.nccl.system.NcclSystem.capacity", "models.predict.collectives.CollectiveEstimate.busbw"} <= names
    if sys.version_info >= (3, 11):  # and the wing modules the type check lists
        assert {"models.engine.routes.Router.route", "models.studies.compute.compute_model"} <= names


def test_every_public_function_is_annotated():
    """Parameters and return of every function and method the public modules export."""
    missing = {name: gaps for name, function in _public_functions() if (gaps := _unannotated(function))}
    assert missing == {}


def test_unannotated_is_found():
    def half(x, y: int = 1):
        return x

    assert _unannotated(half) == ["x", "return"]


# A user's code: one call as documented, one with a GPU selection of the wrong type.
_USER_CODE = """\
import models
import topo
G = topo.build("dgx1v")
e: models.CollectiveEstimate = models.estimate(G, "all_reduce", 2**20, [0, 1])
models.estimate(G, "all_reduce", 2**20, gpus=1.5)
"""


def _mypy(*arguments: str) -> subprocess.CompletedProcess:
    # One run, so no cache is written (mypy's documented way: the null device as cache dir).
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", os.devnull, "--no-error-summary", *arguments],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def _mypy_files() -> list:
    """The files pyproject.toml's [tool.mypy] checks (named on the command line, which replaces
    them, when a user's file is checked in the same run)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: mypy's own TOML reader
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["files"]


@pytest.mark.slow  # ~8 s of a core: run apart (pyproject.toml, markers)
def test_mypy_passes_on_the_public_modules(tmp_path):
    """mypy (the test extra installs it) on the modules pyproject.toml's [tool.mypy] lists and, in
    the same run (one start-up, one analysis of numpy's and networkx's stubs), on a user's code,
    where it sees the face's annotations: the user's wrong call is the one error."""
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    user = tmp_path / "user.py"
    user.write_text(_USER_CODE)
    result = _mypy(*_mypy_files(), str(user))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 1, result.stdout + result.stderr  # 1: errors found (2 would be a crash)
    assert len(errors) == 1 and "user.py:5:" in errors[0] and '"estimate"' in errors[0], result.stdout
