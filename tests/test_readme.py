"""The README's Quick start stays true: two commands, the second is what CI runs."""

from __future__ import annotations

import re

import pytest
from pathlib import Path

ROOT = Path(__file__).parents[1]


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quick_start_has_exactly_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].startswith("pip install -e .") and "dgxtopo report" in commands[0]


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == quick_start_commands()[1]


def test_python_examples_run():
    """Every ```python block of the README runs, in order, in one namespace."""
    text = (ROOT / "README.md").read_text()
    namespace: dict = {}
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    assert "G" in namespace


# ---------------------------------------------------------------- printed output blocks
def _text_blocks() -> list[str]:
    from tests.regen_readme import TEXT_BLOCK
    return TEXT_BLOCK.findall((ROOT / "README.md").read_text())


def test_every_output_block_names_its_exact_command():
    """Each ```text block starts with the `$ dgxtopo ...` line that prints it."""
    from tests.regen_readme import command_of
    blocks = _text_blocks()
    assert len(blocks) >= 7
    assert [b.split("\n", 1)[0] for b in blocks if command_of(b) is None] == []


@pytest.mark.parametrize("index", range(len(_text_blocks())))
def test_output_block_is_what_its_command_prints(index):
    """The README shows only output its commands print (`python -m tests.regen_readme` rewrites)."""
    from tests.regen_readme import expected_block
    block = _text_blocks()[index]
    assert block == expected_block(block), "run `python -m tests.regen_readme` and review the diff"
