"""Input parsers shared by the API and the CLI: sizes, counts, GPU selections."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from topo import CountError, GpuSelectionError, SizeError, parse_count, parse_gpu_ids, parse_nbytes
from topo.units import GiB, KiB, MiB, TiB


# -- sizes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    (8, 8), (0, 0), (np.int64(1024), 1024), (np.uint8(7), 7), (2.0**30, GiB), (np.float32(64), 64),
    ("8", 8), ("64K", 64 * KiB), ("64k", 64 * KiB), ("256M", 256 * MiB), ("1G", GiB), ("2T", 2 * TiB),
    (" 1G ", GiB), (2**62, 2**62), (np.array(5), 5),
])
def test_sizes_accepted(value, expected):
    result = parse_nbytes(value)
    assert result == expected and type(result) is int


def test_size_lists_and_arrays_give_int64_arrays():
    for value in (["8", "64K", 1024], (8, 65536, 1024.0), np.array([8, 65536, 1024]),
                  np.array([8.0, 65536.0, 1024.0]), np.array(["8", "64K", "1K"])):
        result = parse_nbytes(value)
        assert result.dtype == np.int64 and result.tolist() == [8, 65536, 1024]


@pytest.mark.parametrize("value, message", [
    (-1, "negative"), ("-8", "invalid size '-8'"), (1.5, "not a whole number"),
    (math.nan, "not a whole number"), (math.inf, "not a whole number"), (True, "bool"),
    (np.bool_(True), "bool"), (2**62 + 1, "too large"), (99999999999999999999, "too large"),
    ("9" * 5000, "too large"), ("1.5G", "invalid size"), ("1GB", "invalid size"), ("1 G", "invalid size"),
    ("", "invalid size ''"), ("0x10", "invalid size"), ("1e9", "invalid size"), (None, "NoneType"),
    ([], "empty list"), ([[1, 2]], "nested"), (np.zeros((2, 2)), "1-d array"), (np.array([-1, 2]), "negative"),
    (np.array([2**63 - 1]), "too large"), (np.array([1.5]), "not a whole number"), ({1: 2}, "dict"),
    (1 + 2j, "complex"), ("\u0661", "invalid size"),
])
def test_sizes_refused(value, message):
    with pytest.raises(SizeError, match=message) as info:
        parse_nbytes(value)
    assert "expected a whole number of bytes" in str(info.value)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                 st.booleans(), st.none(), st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=4),
                 st.from_regex(r"-?[0-9]{1,25}[KMGTkmgtB]?", fullmatch=True)))
def test_fuzzed_sizes_parse_or_raise_a_typed_error(value):
    try:
        result = parse_nbytes(value)
    except topo.DgxTopoError:
        return
    values = np.atleast_1d(result)
    assert ((values >= 0) & (values <= topo.MAX_NBYTES)).all()


@given(st.integers(0, 2**40), st.sampled_from(["", "K", "M", "G"]))
@settings(max_examples=100, deadline=None)
def test_suffixes_are_binary_multiples(number, suffix):
    factor = {"": 1, "K": KiB, "M": MiB, "G": GiB}[suffix]
    if number * factor <= topo.MAX_NBYTES:
        assert parse_nbytes(f"{number}{suffix}") == number * factor


# -- counts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [(5, 5), ("5", 5), (np.int32(3), 3), (4.0, 4), (1, 1)])
def test_counts_accepted(value, expected):
    assert parse_count(value, name="--top") == expected


@pytest.mark.parametrize("value", [0, -3, "-3", True, 2.5, math.nan, "3x", "", None, 2**31, "9" * 100, [3]])
def test_counts_refused_name_the_option(value):
    with pytest.raises(CountError, match=r"^--top must be a whole number from 1 to 2147483647, received"):
        parse_count(value, name="--top")


def test_count_bounds():
    assert parse_count(0, name="-k", minimum=0) == 0
    with pytest.raises(CountError, match="-k must be a whole number from 2 to 8, received 9"):
        parse_count(9, name="-k", minimum=2, maximum=8)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.text(max_size=8), st.booleans(), st.none()))
def test_fuzzed_counts(value):
    try:
        count = parse_count(value, name="--ngpus", maximum=64)
    except topo.DgxTopoError:
        return
    assert type(count) is int and 1 <= count <= 64


DGX1V = topo.dgx1v()


# -- GPU selections ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    ("0-3", (0, 1, 2, 3)), ("0,3,5-7", (0, 3, 5, 6, 7)), (" 1 , 2 ", (1, 2)), ([4, 0], (4, 0)),
    ((np.int64(2), 1), (2, 1)), (np.array([3, 1], dtype=np.uint8), (3, 1)), (range(2), (0, 1)),
    (iter([5]), (5,)),
])
def test_gpu_selections_accepted(value, expected):
    assert parse_gpu_ids(value) == expected


@pytest.mark.parametrize("value, message", [
    (-1, "single number -1"), (3, r"single number 3.*write \[3\]"), (np.int64(0), "single number"),
    ([-1], "GPU id -1 out of range"), ([True], "must be an integer, received True"),
    ([1.0], r"must be an integer, received 1.0 \(float\)"), (["0"], "must be an integer"),
    ([0, 0], "GPU id 0 given twice"), ("0-3,2", "GPU id 2 given twice"), ([], "empty GPU selection"),
    ("", "malformed GPU list"), ("3-1", "ascending range"), ("-1", "malformed"), ("0,,1", "malformed"),
    ("1.5", "malformed"), (np.array([1.0, 2.0]), "integer dtype"), (np.array([[1]]), "1-d"),
    (None, "NoneType"), ({0: 1}, "dict"), ("0-99999999999999", "out of range"),
    ("0-2000000", "GPU id 2000000 out of range"),
])
def test_gpu_selections_refused(value, message):
    with pytest.raises(GpuSelectionError, match=message):
        parse_gpu_ids(value)


def test_select_gpus_bounds_by_the_fabric():
    G = topo.dgx1v()
    assert topo.select_gpus(G, np.array([7, 0])) == ["gpu7", "gpu0"]
    assert topo.select_gpus(G, (np.int64(i) for i in range(3))) == ["gpu0", "gpu1", "gpu2"]
    with pytest.raises(GpuSelectionError, match="GPU id 8 out of range: expected 0 to 7 on DGX-1V"):
        topo.select_gpus(G, "0-8")
    with pytest.raises(GpuSelectionError, match="GPU id -1 out of range: expected 0 to 7"):
        topo.select_gpus(G, [-1])
    with pytest.raises(GpuSelectionError, match="given twice"):
        topo.select_gpus(G, iter(lambda: 1, None))  # endless: read no further than 9 ids


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789,- x.", max_size=15),
                 st.lists(st.one_of(st.integers(-3, 20), st.booleans(), st.floats(0, 3)), max_size=10),
                 st.integers(), st.none()))
def test_fuzzed_gpu_selections(value):
    G = DGX1V
    try:
        nodes = topo.select_gpus(G, value)
    except topo.DgxTopoError:
        return
    assert nodes and len(set(nodes)) == len(nodes) and set(nodes) <= set(topo.gpus(G))
