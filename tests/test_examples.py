"""Every example under examples/ runs (benchmarks excluded: they only time things)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).parents[1] / "examples").glob("*.py")
                  if "benchmark" not in p.name)

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
    runpy.run_path(str(path), run_name="__main__")
    captured = capsys.readouterr()
    assert captured.out.strip(), f"{path.name} printed nothing"
    assert "ignoring arguments" not in captured.err


def test_there_are_examples():
    assert any(p.name == "fabrics.py" for p in EXAMPLES)
