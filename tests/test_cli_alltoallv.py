"""``dgxtopo alltoallv --matrix FILE``: an all-to-allv of a send-count matrix read from a file, run
in-process against :func:`models.predict.alltoall.alltoallv`, and the matrix parser
(:mod:`models.present.send_matrix`) fuzzed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from models.predict.alltoall import alltoallv
from models.present.cli import main
from models.present.send_matrix import MATRIX_INPUT, MatrixFileError, parse_matrix

# An uneven matrix of 4 ranks (rows send, columns receive), with suffixes and both separators.
UNEVEN_TEXT = "# bytes rank i sends rank j\n0, 1M, 64K, 3M\n2M 0 512K 1K\n\n0,0,0,8M\n4096 4096 4096 0\n"
UNEVEN = np.array([[0, 2**20, 2**16, 3 * 2**20], [2 * 2**20, 0, 2**19, 2**10],
                   [0, 0, 0, 8 * 2**20], [4096, 4096, 4096, 0]])


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture()
def matrix_file(tmp_path):
    def write(text, name="m.csv"):
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


def test_the_parser_reads_suffixes_comments_and_both_separators():
    assert parse_matrix(UNEVEN_TEXT, 4, source="m").tolist() == UNEVEN.tolist()


def test_an_uneven_matrix_prints_the_library_figures(capsys, matrix_file):
    """The time is alltoallv's; the size is the most a rank sends its peers (rank 2's 8 MiB) times
    n / (n - 1) = 4/3 (nccl-tests' alltoall size for equal counts), algbw size / time, busbw algbw x
    3/4 (nccl-tests' alltoall)."""
    path = matrix_file(UNEVEN_TEXT)
    status, out, err = run(capsys, "alltoallv", "--system", "dgxh100", "--gpus", "2,3,5,7", "--matrix", path,
                           "--json")
    e = alltoallv(topo.build("dgxh100"), UNEVEN, [2, 3, 5, 7])
    data = json.loads(out)
    (row,) = data["rows"]
    assert status == 0 and err == "" and data["gpus"] == [2, 3, 5, 7]
    size = round(8 * 2**20 * 4 / 3)
    assert row["size_bytes"] == size
    assert row["time_us"] == pytest.approx(e.time * 1e6, rel=1e-12)
    assert row["algbw_gbps"] == pytest.approx(size / e.time / 1e9, rel=1e-12)
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 3 / 4, rel=1e-12)
    assert data["schedule"]["nbytes"] == 8 * 2**20 and data["schedule"]["rounds"] == 3
    status, out, _ = run(capsys, "alltoallv", "--system", "dgxh100", "--gpus", "2,3,5,7", "--matrix", path)
    lines = out.splitlines()
    assert lines[1].endswith("the most a GPU sends 8388608 B (GPU 5), receives 11535360 B (GPU 7)")
    assert lines[3].split() == [str(size), f"{e.time * 1e6:.2f}", f"{size / e.time / 1e9:.2f}",
                                f"{size / e.time / 1e9 * 3 / 4:.2f}"]


def test_the_diagonal_changes_neither_the_time_nor_the_size(capsys, matrix_file):
    """A rank's copy to itself is not timed, so it does not count in the size either: 1 GiB on the
    diagonal printed an algbw of 26,625 GB/s when the size was the largest row's sum."""
    rows = []
    for diagonal in ("0", "1M", "1G"):
        text = "\n".join(",".join(diagonal if i == j else "1M" for j in range(8)) for i in range(8))
        status, out, _ = run(capsys, "alltoallv", "--system", "dgxh100", "--matrix", matrix_file(text), "--json")
        assert status == 0
        rows.append(json.loads(out)["rows"][0])
    assert rows[0] == rows[1] == rows[2] and rows[0]["size_bytes"] == 8 * 2**20


def test_an_empty_csv_field_is_refused(capsys, matrix_file):
    status, _, err = run(capsys, "alltoallv", "--system", "dgxh100", "--gpus", "0,1,2",
                         "--matrix", matrix_file("0,,1K\n1,0,2\n3,4,0\n"))
    assert status == 2 and "line 1, column 2" in err and "an empty field" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("system, block", [("dgxh100", "128M"), ("2xdgxh100", "1M"), ("dgx1v", "4K")])
def test_equal_counts_are_nccl_tests_alltoall(capsys, matrix_file, system, block):
    """Every rank sending one block to every rank (itself included) is nccl-tests' alltoall of n
    blocks: the same size, time, algbw and busbw as ``collective alltoall``."""
    n = len(topo.gpus(topo.build(system)))
    path = matrix_file("\n".join(" ".join([block] * n) for _ in range(n)))
    _, out, _ = run(capsys, "alltoallv", "--system", system, "--matrix", path, "--json")
    size = n * topo.units.parse_nbytes(block)
    _, ref, _ = run(capsys, "collective", "alltoall", "--system", system, "-b", str(size), "-e", str(size), "--json")
    (row,), (want,) = json.loads(out)["rows"], json.loads(ref)["rows"]
    assert row["size_bytes"] == want["size_bytes"] == size
    for key in ("time_us", "algbw_gbps", "busbw_gbps"):
        assert row[key] == pytest.approx(want[key], rel=1e-9), key


def test_explain_shows_the_per_peer_schedule(capsys, matrix_file):
    path = matrix_file(UNEVEN_TEXT)
    status, out, _ = run(capsys, "alltoallv", "--system", "dgxh100", "--gpus", "0-3", "--matrix", path, "--explain")
    assert status == 0 and "p2p schedule (NCCL's grouped sends" in out
    assert sum(line.lstrip().startswith("round") for line in out.splitlines()) == 3
    status, out, _ = run(capsys, "alltoallv", "--system", "dgxh100", "--gpus", "0-3", "--matrix", path, "--explain",
                         "--json")
    assert status == 0 and json.loads(out)["explanation"].startswith("alltoallv on GPUs 0-3 (4 ranks)")


@pytest.mark.parametrize("text, message", [
    ("0 1\n1 0\n", "expected 4 rows of 4 entries of bytes (one row per sending rank, one column per receiving "
                   "rank, 4 ranks), received 2 rows of 2"),
    ("0 1 2 3\n0 1 2\n0 1 2 3\n0 1 2 3\n", "line 2: expected 4 entries (one per receiving rank), received 3"),
    ("0 1 2 3\n0 -1 2 3\n0 1 2 3\n0 1 2 3\n", "line 2, column 2: expected bytes (digits with an optional binary "
                                               "suffix K, M, G, T), received '-1': negative"),
    ("0 1 2 3\n0 1 two 3\n0 1 2 3\n0 1 2 3\n", "received 'two': not a size"),
    ("0 1 2 3\n0 1 2 NaN\n0 1 2 3\n0 1 2 3\n", "received 'NaN': not a finite number"),
    ("0 1 2 3\n0 1 2 3\n0 1 2 3\n0 inf 2 3\n", "line 4, column 2: expected bytes"),
    ("0 1 2 3\n0 1.5 2 3\n0 1 2 3\n0 1 2 3\n", "received '1.5': a decimal number, not whole bytes"),
    ("0 4T 4T 4T\n" * 4, None),  # fits: 12 TiB a rank
    ("", "received no entries (an empty file, or only comments)"),
    ("# nothing\n\n", "received no entries"),
    ('{"matrix": [[0, 1], [1, 0]]}', "is JSON: expected a 4 x 4 send-count matrix"),
])
def test_bad_matrices_are_one_line_naming_expected_and_received(capsys, matrix_file, text, message):
    path = matrix_file(text)
    status, out, err = run(capsys, "alltoallv", "--system", "dgxh100", "--gpus", "0-3", "--matrix", path)
    if message is None:
        assert status == 0 and err == ""
        return
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err


def test_a_row_beyond_int64_is_refused():
    big = "4611686018427387904"  # 2**62, the largest size: two in a row exceed it
    with pytest.raises(MatrixFileError, match=r"line 1: expected a rank to send at most 2\*\*62 bytes"):
        parse_matrix(f"0 {big} {big}\n0 0 0\n0 0 0", 3, source="m")


@pytest.mark.parametrize("argv, message", [
    (["--matrix", "{dir}"], "it is a directory, expected a regular file"),
    (["--matrix", "{dir}/none.csv"], "No such file or directory"),
    (["--matrix", "{huge}"], f"is {MATRIX_INPUT.limit + 1} bytes, more than the limit of {MATRIX_INPUT.limit} bytes"),
    (["--matrix", "{ok}", "--max-input", "4"], "is 8 bytes, more than the limit of 4 bytes"),
    (["--system", "16xdgxh100", "--matrix", "{ok}", "--limit", "1000"],
     "an all-to-allv of 128 ranks routes 16256 GPU pairs, more than the limit of 1000: raise it with --limit N"),
    ([], "the following arguments are required: --matrix"),
    (["--gpus", "0", "--matrix", "{one}"], "alltoallv needs at least 2 GPUs"),
])
def test_bad_files_and_limits_are_one_line(capsys, tmp_path, argv, message):
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as handle:  # refused from its size alone: never read
        handle.truncate(MATRIX_INPUT.limit + 1)
    (tmp_path / "ok.csv").write_text("0 1\n1 0\n")
    (tmp_path / "one.csv").write_text("0\n")
    argv = [a.format(dir=tmp_path, huge=huge, ok=tmp_path / "ok.csv", one=tmp_path / "one.csv") for a in argv]
    system = [] if "--system" in argv else ["--system", "dgxh100"]
    status, out, err = run(capsys, "alltoallv", *system, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err


ENTRIES = st.one_of(
    st.sampled_from(["0", "1", "64K", "1m", "2G", "4T", "-1", "nan", "inf", "-inf", "1.5", "1e3", "0x10", "K", "",
                     "99999999999999999999999999999999", "4611686018427387905", "\ufeff7", "१"]),
    st.integers(min_value=-10, max_value=2**64).map(str),
    st.text(max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(ENTRIES, max_size=5), max_size=5), separators=st.sampled_from([",", " ", "\t", ", "]),
       n=st.integers(min_value=1, max_value=5), noise=st.text(max_size=20))
def test_the_parser_returns_a_matrix_or_its_typed_error(rows, separators, n, noise):
    """Any text: an ``n x n`` int64 matrix of sizes, or a MatrixFileError naming the source, never
    anything else."""
    for text in ("\n".join(separators.join(row) for row in rows), noise):
        try:
            m = parse_matrix(text, n, source="fuzz.csv")
        except MatrixFileError as error:
            assert str(error).startswith("fuzz.csv: ") and "\n" not in str(error)
            continue
        assert m.shape == (n, n) and m.dtype == np.int64 and (m >= 0).all()
        assert all(int(v) <= 2**62 for v in m.sum(axis=1))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=2**40), min_size=3, max_size=3), min_size=3, max_size=3),
       st.sampled_from([",", " ", " , "]))
def test_written_matrices_read_back(matrix, separator):
    text = "\n".join(separator.join(map(str, row)) for row in matrix)
    assert parse_matrix(text, 3, source="m").tolist() == matrix
