"""Every example under examples/ runs (benchmarks excluded: they only time things)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).parents[1] / "examples").glob("*.py")
                  if "benchmark" not in p.name)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, capsys):
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip(), f"{path.name} printed nothing"


def test_there_are_examples():
    assert any(p.name == "fabrics.py" for p in EXAMPLES)
