"""Fuzzing the command line in-process: any argument list ends in status 0 or 2, with exactly
one line on stderr for 2, no traceback, and no file left behind.

Each case is kept cheap by construction: the systems are single DGX systems or clusters that
the size guards refuse at once, sweeps are short, and subsets run only on 8-GPU systems. A
watchdog (SIGALRM, generous) turns a hang into a failure instead of a stuck suite.
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.present.cli import main
from tests.conftest import watchdog

SPECS = st.one_of(
    st.sampled_from(["dgx1", "dgx1v", "DGX-1V", "dgx_1", "dgx2", "dgx3", "", "x", ":rail", "2x", "xdgx1",
                     "0xdgx1", "-1xdgx2", "1-6xdgx2", "1.5xdgx2", "2xdgx1:ring", "dgx1v:rail",
                     "1000000xdgx2", "99999999999999999999999xdgx1", "300xdgx2", "5000xdgx1:rail",
                     "2 xdgx1", "2xDGX1\n"]),
    st.text(alphabet="0123456789xdgv:-_ra", max_size=12),
)
SIZES = st.one_of(
    st.sampled_from(["8", "1K", "64K", "1M", "256M", "1G", "0", "-8", "1.5G", "1GB", "1e9", "", "K",
                     "99999999999999999999", "4611686018427387905", " 1M ", "0x10", "1T"]),
    st.integers(min_value=-10, max_value=2**70).map(str),
)
COUNTS = st.one_of(st.sampled_from(["0", "1", "2", "3", "-3", "1.0", "", "abc", "99999999999999999999"]),
                   st.integers(min_value=-5, max_value=20).map(str))
GPU_LISTS = st.one_of(
    st.sampled_from(["0", "0-3", "0,3,5-7", "7-0", "0,0", "8", "0,", ",", "", "a", "-1", "0-99999999999999",
                     "0--3", " 1, 2 "]),
    st.lists(st.integers(min_value=-2, max_value=10), min_size=1, max_size=4).map(
        lambda ids: ",".join(map(str, ids))),
)
# Every case is cheap: at most 32 GPUs are built and at most 10 channel searches made.
SMALL_GPUS = st.sampled_from(["8", "16", "32", "0", "x"])
SMALL_LIMITS = st.sampled_from(["1", "5", "10", "0", "x"])
COLLECTIVES = st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                               "alltoall", "sendrecv", "allreduce", ""])


def _option(name, values):
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


@st.composite
def command_lines(draw):
    kind = draw(st.sampled_from(["systems", "topo", "p2p", "collective", "pairs", "subsets", "compare",
                                 "report", "nonsense"]))
    argv = [kind]
    if kind == "systems":
        argv += draw(st.sampled_from([[], ["--json"], ["--bogus"]]))
    elif kind == "topo":
        argv += draw(st.sampled_from([[], ["--json"], ["--no-legend"]]))
        argv += ["--max-gpus", draw(SMALL_GPUS), "--", draw(SPECS)]
    elif kind == "p2p":
        argv += draw(_option("--gpus", GPU_LISTS)) + draw(_option("--mode", st.sampled_from(["route", "maxflow", "x"])))
        argv += draw(st.sampled_from([[], ["--json"], ["--bidirectional", "--latency"]]))
        argv += draw(_option("--limit", COUNTS)) + ["--max-gpus", draw(SMALL_GPUS), "--", draw(SPECS)]
    elif kind in ("collective", "pairs", "subsets"):
        argv += [draw(COLLECTIVES), "--system", draw(SPECS)]
        if kind == "collective":
            argv += draw(_option("--gpus", GPU_LISTS)) + draw(_option("-b", SIZES)) + draw(_option("-e", SIZES))
            argv += draw(_option("-f", st.sampled_from(["2", "4", "1024", "1", "0", "x"])))
            argv += draw(_option("--algo", st.sampled_from(["ring", "tree", "nvls"])))
            argv += draw(_option("--proto", st.sampled_from(["LL", "LL128", "Simple", "x"])))
            argv += draw(st.sampled_from([[], ["--explain"], ["--json"], ["--json", "--explain"]]))
        else:
            argv += draw(_option("-s", SIZES))
            if kind == "subsets":
                argv += draw(_option("-k", COUNTS)) + draw(_option("--top", COUNTS))
            argv += draw(_option("--limit", COUNTS)) + draw(st.sampled_from([[], ["--json"]]))
            argv += ["--max-searches", draw(SMALL_LIMITS)]  # at most 10 channel searches
        argv += ["--max-gpus", draw(SMALL_GPUS)]
    elif kind == "compare":
        argv += draw(_option("--ngpus", COUNTS)) + ["--max-gpus", draw(SMALL_GPUS)]
        argv += ["-b", "1M", "-e", draw(st.sampled_from(["1M", "4M", "1K", "x"]))]
        argv += draw(_option("--out", st.sampled_from(["", "{tmp}", "{tmp}/missing/x.html", "{tmp}/fifo"])))
        argv += ["--", draw(SPECS), draw(SPECS)]
    elif kind == "report":
        argv += ["--max-gpus", draw(SMALL_GPUS)]
        argv += ["--out", draw(st.sampled_from(["", "{tmp}", "{tmp}/missing/x.html", "{tmp}/fifo"]))]
        argv += ["--", *draw(st.lists(SPECS, max_size=2))]
    else:
        argv += draw(st.lists(st.text(max_size=5), max_size=3))
    return argv




@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz")
    os.mkfifo(path / "fifo")
    return path


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argv=command_lines())
def test_any_command_line_is_status_0_or_2_with_one_line(workdir, argv):
    argv = [a.replace("{tmp}", str(workdir)) for a in argv]
    before = sorted(p.name for p in workdir.iterdir())
    out, err = io.StringIO(), io.StringIO()
    with watchdog(60), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status in (0, 2), (argv, status, err.getvalue())
    assert "Traceback" not in err.getvalue()
    if status == 2:
        assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("dgxtopo: error: "), (argv, err.getvalue())
        assert out.getvalue() == ""
    assert sorted(p.name for p in workdir.iterdir()) == before, argv
