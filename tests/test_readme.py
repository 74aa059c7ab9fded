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


def test_ci_runs_the_readme_test_command_verbatim_then_the_slow_checks():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().strip().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert quick_start_commands()[1] in ci and ci[-1] == "python -m pytest -m slow"


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


# ------------------------------------------------------------------- documented JSON shapes
#: A ```json-shape block of the README: the command line (group 1) and the shape (group 2).
SHAPE_BLOCK = re.compile(r"```json-shape\n\$ (dgxtopo [^\n]*)\n(.*?)```", re.S)
_SHAPE_TOKEN = re.compile(r'\s*(?:(?P<key>"[^"]*")|(?P<name>NAME)|(?P<punct>[{}\[\]:,]))')


def parse_shape(text: str):
    """The README's shape notation as data: an object is a dict of key -> sub-shape (None for a
    value whose structure is not given), ``NAME`` the key of any key; ``[{...}]`` a list of it."""
    tokens = [(m.lastgroup, m.group(m.lastgroup)) for m in _SHAPE_TOKEN.finditer(text)]
    assert "".join(t for _, t in tokens) == re.sub(r"\s+", "", text), f"unreadable shape: {text!r}"
    position = 0

    def take(expected=None):
        nonlocal position
        kind, token = tokens[position]
        assert expected is None or token == expected, f"expected {expected!r} at {token!r} in {text!r}"
        position += 1
        return kind, token

    def value():
        if tokens[position][1] == "[":
            take("[")
            inner = value()
            take("]")
            return [inner]
        take("{")
        members = {}
        while True:
            kind, token = take()
            key = "NAME" if kind == "name" else token.strip('"')
            members[key] = None
            if tokens[position][1] == ":":
                take(":")
                members[key] = value()
            if take()[1] == "}":
                return members

    shape = value()
    assert position == len(tokens), f"trailing text in {text!r}"
    return shape


def shape_mismatches(shape, data, where="") -> list:
    """Where ``data`` (parsed JSON) does not have the keys ``shape`` documents."""
    if shape is None:
        return []
    if isinstance(shape, list):
        if not isinstance(data, list):
            return [f"{where}: expected a list, received {type(data).__name__}"]
        return [m for i, item in enumerate(data) for m in shape_mismatches(shape[0], item, f"{where}[{i}]")]
    if not isinstance(data, dict):
        return [f"{where}: expected an object, received {type(data).__name__}"]
    if set(shape) == {"NAME"}:
        return [m for key, item in data.items() for m in shape_mismatches(shape["NAME"], item, f"{where}/{key}")]
    problems = []
    if set(data) - set(shape):
        problems.append(f"{where}: keys {sorted(set(data) - set(shape))} not documented")
    if set(shape) - set(data):
        problems.append(f"{where}: documented keys {sorted(set(shape) - set(data))} missing")
    return problems + [m for key, sub in shape.items() if key in data
                       for m in shape_mismatches(sub, data[key], f"{where}/{key}")]


def _shape_blocks() -> list:
    return SHAPE_BLOCK.findall((ROOT / "README.md").read_text())


def test_shape_notation_catches_differences():
    shape = parse_shape('{"a", "b": [{"c"}], "d": {NAME: {"e"}}}')
    assert shape == {"a": None, "b": [{"c": None}], "d": {"NAME": {"e": None}}}
    good = {"a": 1, "b": [{"c": 2}, {"c": 3}], "d": {"x": {"e": 4}, "y": {"e": 5}}}
    assert shape_mismatches(shape, good) == []
    assert shape_mismatches(shape, {**good, "z": 0}) == [": keys ['z'] not documented"]
    assert shape_mismatches(shape, {**good, "b": [{"c": 2, "f": 1}]}) == ["/b[0]: keys ['f'] not documented"]
    assert shape_mismatches(shape, {"a": 1, "b": [], "d": {"x": {}}}) == ["/d/x: documented keys ['e'] missing"]


def test_every_command_with_a_result_documents_its_json():
    """The README's JSON section has a shape for every command (each takes --json)."""
    from models.present.cli import COMMANDS, build_parser

    documented = {command.split()[1] for command, _ in _shape_blocks()}
    assert documented == {c.name for c in COMMANDS}
    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert [name for name, sub in choices.items() if "json" not in {a.dest for a in sub._actions}] == []


@pytest.mark.parametrize("index", range(len(_shape_blocks())))
def test_documented_json_shape_is_what_the_command_prints(index, monkeypatch):
    """Each documented shape has exactly the keys the real output has, at every level."""
    import json

    from tests.regen_readme import run_command

    command, text = _shape_blocks()[index]
    if command.split()[1] == "report":  # the page itself is tested elsewhere: write a small one
        from models.present.report import write as write_module
        monkeypatch.setattr(write_module, "render_report", lambda analysis: "<html></html>")
        monkeypatch.setattr(write_module, "analyse_report", lambda fabrics, **kw: None)
    data = json.loads(run_command(command))
    assert shape_mismatches(parse_shape(text), data) == []
