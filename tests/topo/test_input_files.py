"""topo.inputs: the one reader of every input file (kinds, sizes, file types, stdin, JSON)."""

from __future__ import annotations

import io
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.errors import DgxTopoError
from topo.inputs import (INPUT_KINDS, MAX_JSON_DEPTH, InputFileError, InputKind, json_depth, parse_json,
                         read_input, read_json)
from tests.conftest import watchdog


def test_every_kind_has_a_documented_limit_and_a_name():
    assert set(INPUT_KINDS) == {"fabric", "nvidia-smi", "nccl-xml", "import", "benchmark", "calibration",
                                "task-graph"}
    for kind in INPUT_KINDS.values():
        assert kind.limit >= 2**20 and kind.what
    assert issubclass(InputFileError, DgxTopoError)


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"caf\xc3\xa9 \xff\n")
    assert read_input(path, "benchmark") == "caf\u00e9 \ufffd\n"  # logs: stray bytes replaced
    with pytest.raises(InputFileError, match=r"line 1: expected UTF-8 text, received byte 0xff"):
        read_input(path, "calibration")  # JSON is UTF-8 (RFC 8259)


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "a FIFO"), (lambda p: p.mkdir(), "a directory"),
])
def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path, make, kind):
    path = tmp_path / "thing"
    make(path)
    with watchdog(5), pytest.raises(InputFileError, match=f"it is {kind}.*, expected a regular file"):
        read_input(path, "benchmark")


def test_devices_and_missing_files_are_refused(tmp_path):
    with pytest.raises(InputFileError, match="it is a character device"):
        read_input("/dev/zero", "fabric")
    with pytest.raises(InputFileError, match="No such file"):
        read_input(tmp_path / "missing", "fabric")
    with pytest.raises(InputFileError, match="expected a file name"):
        read_input("", "fabric")
    with pytest.raises(InputFileError, match="unknown input kind 'x'"):
        read_input(tmp_path, "x")


def test_the_size_is_checked_before_reading(tmp_path):
    path = tmp_path / "big.txt"
    with open(path, "wb") as handle:  # sparse: 1 TiB would take minutes to read
        handle.truncate(2**40)
    with watchdog(5), pytest.raises(InputFileError, match=r"is 1099511627776 bytes, more than the limit of "
                                                          r"16777216 bytes.*raise it with --max-input SIZE"):
        read_input(path, "benchmark")
    small = tmp_path / "small.txt"
    small.write_text("x" * 100)
    assert read_input(small, "benchmark", limit=100) == "x" * 100
    with pytest.raises(InputFileError, match="limit of 99 bytes"):
        read_input(small, "benchmark", limit=99)
    with pytest.raises(InputFileError, match="expected a limit in bytes"):
        read_input(small, "benchmark", limit=-1)


def _stdin(monkeypatch, data: bytes, tty: bool = False):
    stream = io.TextIOWrapper(io.BytesIO(data))
    stream.isatty = lambda: tty
    monkeypatch.setattr("sys.stdin", stream)


def test_standard_input(monkeypatch):
    _stdin(monkeypatch, b'{"a": 1}')
    assert read_json("-", "calibration") == {"a": 1}
    _stdin(monkeypatch, b"x" * 101)
    with pytest.raises(InputFileError, match="standard input .* longer than 100 bytes"):
        read_input("-", "benchmark", limit=100)
    _stdin(monkeypatch, b"", tty=True)
    with pytest.raises(InputFileError, match="it is a terminal"):
        read_input("-", "benchmark")
    with pytest.raises(InputFileError, match="cannot be read from standard input"):
        read_input("-", InputKind("x", "x file", 10, stdin=False))


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000, f"nested at most {MAX_JSON_DEPTH} levels deep, received deeper nesting"),
    ("[" * 65 + "]" * 65, f"nested at most {MAX_JSON_DEPTH} levels deep, received 65"),
    ('{"a": NaN}', r"received NaN \(not a JSON number\)"), ("[Infinity]", "received Infinity"),
    ("1" * 5000, "numbers of at most 4300 digits"), ('{\n"a": 1,\n}', "line 3: expected JSON"),
])
def test_json_refused(text, message):
    with pytest.raises(InputFileError, match=message):
        parse_json(text, source="f.json")


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=5),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children,
                                                                                        max_size=3),
                    max_leaves=20)


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@settings(max_examples=60, deadline=None)
@given(JSON)
def test_json_round_trips_with_its_depth(value):
    assert parse_json(json.dumps(value)) == value
    assert json_depth(value) == _depth(value)
