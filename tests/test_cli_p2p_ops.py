"""``dgxtopo dispatch`` (the MoE dispatch, flat against hierarchical) and ``dgxtopo grouped``
(gather, scatter), run in-process."""

from __future__ import annotations

import json

import pytest

import topo
from models.predict.alltoall import gather, scatter
from models.predict.dispatch import moe_dispatch
from models.present.cli import main

ARGS = ["dispatch", "--system", "2xdgxh100", "--tokens", "4096", "--hidden", "7168", "--top-k", "8",
        "--experts", "64", "--dtype-bytes", "1"]


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_table_names_the_library_figures(capsys):
    """The table's times are the library's (in us, one decimal) and it names the faster schedule."""
    status, out, err = run(capsys, *ARGS)
    d = moe_dispatch(topo.build("2xdgxh100"), 4096, 7168, 8, 64, dtype_bytes=1)
    assert status == 0 and err == ""
    rows = {line.split()[0]: line.split() for line in out.splitlines() if not line.startswith("#")}
    assert float(rows["flat"][1]) == pytest.approx(d.flat.time * 1e6, abs=0.05)
    assert float(rows["hierarchical"][1]) == pytest.approx(d.hierarchical.time * 1e6, abs=0.05)
    assert out.splitlines()[-1] == f"# faster: {d.faster}"


def test_json_is_one_object_with_both_schedules(capsys):
    status, out, _ = run(capsys, *ARGS, "--json")
    data = json.loads(out)
    assert status == 0 and [r["schedule"] for r in data["schedules"]] == ["flat", "hierarchical"]
    assert data["faster"] in ("flat", "hierarchical")


def test_explain_shows_each_schedule(capsys):
    status, out, _ = run(capsys, *ARGS, "--node-limit", "1", "--explain")
    assert status == 0 and "at most 1 node(s) per token" in out
    assert [line.split()[0] for line in out.splitlines()[2:4]] == ["flat", "hierarchical"]


@pytest.mark.parametrize("extra, message", [
    (["--top-k", "80"], "expected top_k at most the 64 experts, received 80"),
    (["--tokens", "0"], "--tokens"),
    (["--node-limit", "3"], "node"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, extra, message):
    argv = list(ARGS)
    for option, value in zip(extra[::2], extra[1::2]):
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err


@pytest.mark.parametrize("op, lib", [("gather", gather), ("scatter", scatter)])
def test_grouped_rows_are_the_library_with_nccl_tests_sizes(capsys, op, lib):
    """nccl-tests' size is the whole buffer, count x n x typesize: each rank's block is size / n; busbw
    is algbw x (n - 1) / n (nccl-tests src/gather.cu, scatter.cu)."""
    status, out, err = run(capsys, "grouped", op, "--system", "dgxh100", "-b", "8M", "-e", "8M",
                                     "--root", "3", "--json")
    data = json.loads(out)
    e = lib(topo.build("dgxh100"), 2**20, 3)
    (row,) = data["rows"]
    assert status == 0 and data["root"] == 3 and row["size_bytes"] == 8 * 2**20
    assert row["time_us"] == pytest.approx(e.time * 1e6, rel=1e-9)
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 7 / 8, rel=1e-9)
    assert row["algbw_gbps"] == pytest.approx(8 * 2**20 / e.time / 1e9, rel=1e-9)


def test_grouped_table_and_explain(capsys):
    status, out, _ = run(capsys, "grouped", "scatter", "--system", "dgxh100", "-b", "1K", "-e", "1M", "-f", "32",
                         "--explain")
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("# dgxtopo: predicted nccl-tests scatter on GPUs 0-7 (8 ranks)")
    assert [int(line.split()[0]) for line in lines[2:5]] == [1024, 32768, 1048576]
    assert any(line.startswith("p2p schedule") for line in lines)


@pytest.mark.parametrize("argv, message", [
    (["grouped", "gather", "--system", "dgxh100", "--root", "9"], "expected a root among the GPUs"),
    (["grouped", "broadcast", "--system", "dgxh100"], "invalid choice: 'broadcast'"),
    (["grouped", "gather"], "the following arguments are required: --system"),
])
def test_grouped_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err
