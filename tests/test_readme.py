"""The README and the docs pages stay true: the README is a tour of at most 40 KB whose Quick start
is two commands (the second is what CI runs) and whose links reach every docs page; every command
block of every page prints what its command prints, every generated table is what the code writes,
every documented JSON shape is what the command prints, and every Python example runs."""

from __future__ import annotations

import functools
import re

import pytest
from pathlib import Path

from tests.regen_readme import pages, page_name

ROOT = Path(__file__).parents[1]
#: The README's budget: a tour, with the reference under docs/ (issue 37 item 4).
README_MAX_BYTES = 40_000


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


def test_the_readme_is_a_tour_of_at_most_40_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes, expected at most {README_MAX_BYTES}: move reference to docs/")


# ------------------------------------------------------------------------------ links
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation (backticks, colons, ...) dropped,
    spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading's second is ``slug-1``, ...)."""
    found: dict[str, int] = {}
    for line in _FENCE.sub("", page.read_text()).splitlines():
        if re.match(r"#{1,6} ", line):
            base = slug(line.lstrip("#"))
            found[base] = found.get(base, -1) + 1
    return {base if n == 0 else f"{base}-{n}" for base, count in found.items() for n in range(count + 1)}


def local_links(page: Path) -> list[str]:
    """The page's links to files of the repository and to its own anchors (not to the web)."""
    targets = _LINK.findall(_FENCE.sub("", page.read_text()))
    return [t for t in targets if not re.match(r"[a-z]+:", t)]


def broken_links(page: Path) -> list[str]:
    """The page's local links whose file or heading does not exist."""
    broken = []
    for target in local_links(page):
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.is_file() or (anchor and path.suffix == ".md" and anchor not in anchors(path)):
            broken.append(target)
    return broken


def test_slugs_are_githubs():
    assert slug("What the machine measures: -g, calibrate and check") == \
        "what-the-machine-measures--g-calibrate-and-check"
    assert slug("NCCL versions and NVLS: --nccl") == "nccl-versions-and-nvls---nccl"
    assert slug("Simulating a step: where does the time go?") == "simulating-a-step-where-does-the-time-go"


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](#nowhere) [file](missing.md) [web](https://x.org)\n"
                    "```text\n# not a heading\n```\n[code](#not-a-heading)\n")
    assert broken_links(page) == ["#nowhere", "missing.md", "#not-a-heading"]


@pytest.mark.parametrize("page", pages(), ids=page_name)
def test_every_link_resolves(page):
    """Every link of the README and the docs pages to a file or heading of the repository exists."""
    assert broken_links(page) == []


def test_the_readme_links_to_docs():
    assert [t for t in local_links(ROOT / "README.md") if t.startswith("docs/")]


def test_every_docs_page_is_reachable_from_the_readme():
    """Following links from the README reaches every page under docs/."""
    seen, todo = set(), [(ROOT / "README.md").resolve()]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.is_file():
            continue
        seen.add(page)
        todo += [(page.parent / t.partition("#")[0]).resolve() for t in local_links(page)
                 if t.partition("#")[0]]
    docs = {p.resolve() for p in (ROOT / "docs").glob("*.md")}
    assert docs and docs - seen == set()


# ----------------------------------------------------------------------- Python examples
def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


def test_python_examples_run():
    """Every ```python block of the README runs, in order, in one namespace."""
    namespace: dict = {}
    for block in _python_blocks(ROOT / "README.md"):
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    assert "G" in namespace


@pytest.mark.parametrize("page", [p for p in pages()[1:] if _python_blocks(p)], ids=page_name)
def test_docs_python_examples_run(page):
    """Every ```python block of a docs page runs, in order, in one namespace per page."""
    namespace: dict = {}
    for block in _python_blocks(page):
        exec(compile(block, page_name(page), "exec"), namespace)  # noqa: S102
    assert namespace


# ---------------------------------------------------------------- printed output blocks
def _text_blocks() -> list[tuple[str, str]]:
    """(page, block) for every ```text block of the README and the docs pages."""
    from tests.regen_readme import TEXT_BLOCK
    return [(page_name(page), block) for page in pages() for block in TEXT_BLOCK.findall(page.read_text())]


def test_every_output_block_names_its_exact_command():
    """Each ```text block starts with the `$ dgxtopo ...` line that prints it."""
    from tests.regen_readme import command_of
    blocks = _text_blocks()
    assert len([page for page, _ in blocks if page == "README.md"]) >= 7
    assert [(page, b.split("\n", 1)[0]) for page, b in blocks if command_of(b) is None] == []


@functools.cache
def _expected_block(block: str) -> str:
    """:func:`tests.regen_readme.expected_block`, run once per block text: the README's tour shows
    some blocks of docs/cli.md again, command and output alike (the planner's search, the
    packing's export, subsets), and each ran its command twice. (With this cache the file runs
    whole on one worker: tests/conftest.py.)"""
    from tests.regen_readme import expected_block
    return expected_block(block)


@pytest.mark.parametrize("index", range(len(_text_blocks())),
                         ids=[f"{page}:{i}" for i, (page, _) in enumerate(_text_blocks())])
def test_output_block_is_what_its_command_prints(index):
    """The pages show only output their commands print (`python -m tests.regen_readme` rewrites)."""
    block = _text_blocks()[index][1]
    assert block == _expected_block(block), "run `python -m tests.regen_readme` and review the diff"


# ------------------------------------------------------------------------ generated tables
def _generated_sections() -> list[tuple[str, str, str]]:
    """(page, function name, current text) for every generated section of every page."""
    from tests.regen_readme import GENERATED
    return [(page_name(page), m.group("name"), m.group("body"))
            for page in pages() for m in GENERATED.finditer(page.read_text())]


def test_the_generated_tables_are_on_their_pages():
    from tests.regen_readme import generators
    placed = {name: page for page, name, _ in _generated_sections()}
    assert placed == {"topo.schema_markdown()": "docs/fabric-schema.md",
                      "models.present.versions_text.format_versions_table()": "docs/nccl-versions.md",
                      "models.present.versions_text.format_behaviour_table()": "docs/nccl-versions.md"}
    assert set(placed) == set(generators())


@pytest.mark.parametrize("index", range(len(_generated_sections())),
                         ids=[f"{page}:{name}" for page, name, _ in _generated_sections()])
def test_generated_section_is_what_the_code_writes(index):
    from tests.regen_readme import generated_section
    _, name, body = _generated_sections()[index]
    assert body == generated_section(name), "run `python -m tests.regen_readme` and review the diff"


def test_an_unknown_generated_section_is_refused():
    from tests.regen_readme import generated_section
    with pytest.raises(ValueError, match=re.escape("received 'topo.nothing()'")):
        generated_section("topo.nothing()")


# ------------------------------------------------------------------- documented JSON shapes
#: A ```json-shape block (docs/json.md): the command line (group 1) and the shape (group 2).
SHAPE_BLOCK = re.compile(r"```json-shape\n\$ (dgxtopo [^\n]*)\n(.*?)```", re.S)
_SHAPE_TOKEN = re.compile(r'\s*(?:(?P<key>"[^"]*")|(?P<name>NAME)|(?P<punct>[{}\[\]:,]))')


def parse_shape(text: str):
    """The shape notation of docs/json.md as data: an object is a dict of key -> sub-shape (None for a
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
    return [shape for page in pages() for shape in SHAPE_BLOCK.findall(page.read_text())]


def test_shape_notation_catches_differences():
    shape = parse_shape('{"a", "b": [{"c"}], "d": {NAME: {"e"}}}')
    assert shape == {"a": None, "b": [{"c": None}], "d": {"NAME": {"e": None}}}
    good = {"a": 1, "b": [{"c": 2}, {"c": 3}], "d": {"x": {"e": 4}, "y": {"e": 5}}}
    assert shape_mismatches(shape, good) == []
    assert shape_mismatches(shape, {**good, "z": 0}) == [": keys ['z'] not documented"]
    assert shape_mismatches(shape, {**good, "b": [{"c": 2, "f": 1}]}) == ["/b[0]: keys ['f'] not documented"]
    assert shape_mismatches(shape, {"a": 1, "b": [], "d": {"x": {}}}) == ["/d/x: documented keys ['e'] missing"]


def test_every_command_with_a_result_documents_its_json():
    """The JSON page has a shape for every command (each takes --json)."""
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


def test_the_shipped_calibration_is_what_the_documented_calibrate_writes(tmp_path):
    """docs/cli.md's `collective ... --calibration examples/data/dgx2_calibration.json` reads the
    file its `calibrate` block writes: in the pages' scratch directory each worker rewrites it, so
    a stale copy in the repository would make that block's figures depend on which ran first."""
    import json

    from models.present.cli import main

    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(ROOT / "examples/data/dgx2_12gpu_all_reduce.txt"), "--system", "dgx2",
                 "--out", str(out)]) == 0
    fresh, shipped = (json.loads(p.read_text()) for p in (out, ROOT / "examples/data/dgx2_calibration.json"))
    assert fresh["parameters"] == pytest.approx(shipped["parameters"], rel=1e-9)
