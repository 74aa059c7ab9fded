"""The README's Quick start stays true: two commands, the second is what CI runs."""

from __future__ import annotations

import re
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
