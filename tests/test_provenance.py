"""Provenance: every source the code cites can be checked from the repository.

Constants cite an NVIDIA/nccl file and release tag, an NVIDIA document title, or a ``[S#]`` key
of :data:`topo.sources.SOURCES`. Notes kept outside the repository are never cited: a reader of
the code (or of an error message) cannot open them.
"""

from __future__ import annotations

import re
from pathlib import Path

from topo.sources import SOURCES

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("topo", "models", "tests", "examples")

# Built from pieces so that this file does not match itself.
FORBIDDEN = tuple(part + suffix for part, suffix in (
    ("nccl-model", ".md"), ("hardware", ".md"), ("peers", ".md"), ("style-anchors", ".md"),
    ("../", "shared"), ("shared/", "reference")))


_KEY = re.compile(r"\[(S\d+[a-z]?)\]")


def _files():
    for top in SCANNED:
        yield from sorted((ROOT / top).rglob("*.py"))


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


FILES = [p for p in _files() if "__pycache__" not in p.parts]


def test_the_scan_sees_the_packages():
    names = {_relative(p) for p in FILES}
    assert {"topo/specs.py", "models/engine/nccl/profiles.py", "tests/test_provenance.py"} <= names


# Each check reads every file in one test, naming every offending file (as one test per file they
# were ~630 tests, each a few milliseconds of pytest's and xdist's work around a file read).
def test_no_citation_outside_the_repository():
    def cited(path):
        text = path.read_text(encoding="utf-8")
        return [(n, word) for n, line in enumerate(text.splitlines(), 1) for word in FORBIDDEN if word in line]
    found = {_relative(path): bad for path in FILES if (bad := cited(path))}
    assert not found, f"files cite notes outside the repository at (line, text): {found}"


def test_every_source_key_resolves():
    def unknown(path):
        return sorted(set(_KEY.findall(path.read_text(encoding="utf-8"))) - set(SOURCES))
    found = {_relative(path): bad for path in FILES if (bad := unknown(path))}
    assert not found, f"files cite source keys missing from topo.sources.SOURCES: {found}"


def test_the_key_pattern_and_the_forbidden_words_can_fail():
    """The checks above would catch a bad file (guards against a pattern that never matches)."""
    assert _KEY.findall("a figure [S3] and [S51b], not [U]") == ["S3", "S51b"]
    assert "S999" not in SOURCES
    assert any(word in "see " + "nccl-model" + ".md 5.2" for word in FORBIDDEN)
