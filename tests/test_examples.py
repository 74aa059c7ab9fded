"""Every example under examples/ runs (benchmarks excluded: they only time things)."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

#: The examples (not examples/_bootstrap.py, which each imports first).
ALL = sorted(p for p in (Path(__file__).parents[1] / "examples").glob("*.py") if not p.name.startswith("_"))
EXAMPLES = [p for p in ALL if "benchmark" not in p.name]

# Command-line arguments of the examples whose default question is slow to answer: the same
# code paths on a smaller question (the planner's full searches are tested in
# tests/models/studies/test_plan.py).
ARGUMENTS = {
    # One tensor-parallel degree (Megatron-LM's own, 8) instead of every degree: both systems,
    # their best layouts and the comparison are still printed (5 s -> 1 s).
    "megatron_dgx2_vs_dgx1v.py": ["--tp", "8"],
    # Two DGX A100 80 GB (16 GPUs; 19 of 136 layouts fit, so the best layout is explained: the
    # same as on two DGX H100, at half the channel searches' cost) instead of four DGX A100.
    "plan_llama3_70b.py": ["--system", "2xdgxa100-80g", "--top", "3"],
    # The published runs of at most 8 GPUs (one host each) instead of up to 3,072.
    "published_runs.py": ["--max-gpus", "8"],
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, capsys, monkeypatch, tmp_path):
    arguments = ARGUMENTS.get(path.name, [])
    if path.name == "architect_comparison.py":
        arguments = ["--out", str(tmp_path)]  # not a new temporary directory left behind
    monkeypatch.setattr(sys, "argv", [str(path), *arguments])
    monkeypatch.syspath_prepend(str(path.parent))  # as `python examples/NAME.py` runs it
    runpy.run_path(str(path), run_name="__main__")
    captured = capsys.readouterr()
    assert captured.out.strip(), f"{path.name} printed nothing"
    assert "ignoring arguments" not in captured.err


def test_there_are_examples():
    assert any(p.name == "fabrics.py" for p in EXAMPLES)


def test_every_example_imports_the_bootstrap_before_the_package():
    """Each example (the benchmarks too) runs as ``python examples/NAME.py`` without installing
    dgx-topo or setting PYTHONPATH: it imports examples/_bootstrap.py before topo or models."""
    late = []
    for path in ALL:
        lines = path.read_text().splitlines()
        package = next(i for i, line in enumerate(lines) if re.match(r"\s*(import|from) (topo|models)\b", line))
        if "import _bootstrap" not in [line.split("  #")[0] for line in lines[:package]]:
            late.append(path.name)
    assert late == []


def test_an_example_runs_from_anywhere_without_pythonpath(tmp_path):
    """A fresh interpreter, outside the repository and without PYTHONPATH (the package is not
    installed in the test environment, or is: either way the example runs)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = Path(__file__).parents[1] / "examples" / "fabrics.py"
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "dgx1" in done.stdout
