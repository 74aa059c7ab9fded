"""Parsers of nccl-tests and p2pBandwidthLatencyTest outputs: real texts, every layout, fuzzing.

Real texts: the five DGX-2 runs of tests/data/dgx2_12gpu_nccl_tests.json (wohlbier/nccl-tests
README, "Results on dgx-2" (2020)). The newer layouts below are written in the form current
nccl-tests prints (Group column, root column, #wrong, N/A) with made-up numbers.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from models.studies.benchmarks import (BenchmarkParseError, NcclTestsRun, P2PBenchmark, read_benchmark,
                               read_nccl_tests, read_p2p_benchmark)
from tests.conftest import DATA, watchdog

RUN = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())


@pytest.mark.parametrize("collective", sorted(RUN["collectives"]))
def test_real_dgx2_texts(collective):
    published = RUN["collectives"][collective]
    run = read_nccl_tests(published["raw"])
    assert run.collective == collective
    assert run.nthreads == 1 and run.gpus_per_thread == 12 and run.nranks == 12
    assert run.cuda_visible_devices == tuple(RUN["cuda_visible_devices"])
    assert run.hosts == ("seville",) and [d.device for d in run.devices] == list(range(12))
    assert run.devices[0].name == "Tesla V100-SXM3-32GB" and run.devices[0].bus_id == "0x36"
    assert len(run.rows) == len(published["rows"])
    for row, ref in zip(run.rows, published["rows"]):
        assert row.size == ref["size_bytes"]
        assert row.time == pytest.approx(ref["oop_time_us"] * 1e-6)
        assert row.inplace_busbw == pytest.approx(ref["ip_busbw_gbs"] * 1e9)
    # Without its command line the collective is told from the columns, where they tell: a size
    # counting every rank's part without a reduction is all_gather or alltoall alike.
    bare = "\n".join(line for line in published["raw"].splitlines() if "_perf" not in line)
    assert read_nccl_tests(bare).collective == (None if collective == "all_gather" else collective)
    assert read_nccl_tests(bare, collective=collective).collective == collective


MODERN = """\
# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  40001 on     node-a device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  40002 on     node-a device  1 [0x0f] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid  50001 on     node-b device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  50002 on     node-b device  1 [0x0f] NVIDIA A100-SXM4-80GB
node-a:40001:40001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
[1,0]<stdout>:#
[1,0]<stdout>:#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    30.10    0.00    0.00      0    29.90    0.00    0.00      0
node-a:40001:40010 [0] NCCL INFO Channel 00/02 :    0   1   2   3
[1,0]<stdout>:          16             4     float     sum      -1    30.20    0.00    0.00    N/A    30.00    0.00    0.00    N/A
         128            32     float     sum      -1    31.00    0.00    0.01      0      N/A     N/A     N/A    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.00333
#
# Collective test concluded: all_reduce_perf
"""


def test_modern_multinode_layout():
    run = read_nccl_tests(MODERN)
    assert run.collective == "all_reduce" and run.nranks == 4 and run.gpus_per_thread == 1
    assert run.hosts == ("node-a", "node-b") and run.devices[2].pid == 50001
    assert [r.size for r in run.rows] == [8, 16, 128]
    assert run.rows[0].redop == "sum" and run.rows[0].root == -1
    assert math.isnan(run.rows[1].error) and math.isnan(run.rows[2].inplace_time)
    assert run.avg_busbw == pytest.approx(3.33e6) and run.out_of_bounds == "0 OK"


def test_out_of_place_only_and_old_device_lines():
    text = ("#   Rank  0 on   kirby device  0 [0x06] Tesla P100-SXM2-16GB\n"
            "#   Rank  1 on   kirby device  1 [0x07] Tesla P100-SXM2-16GB\n"
            "     1048576        262144   float       0    75.00   13.98   13.98  0e+00\n")
    run = read_nccl_tests(text)
    assert run.collective == "broadcast" and run.rows[0].root == 0 and run.rows[0].redop is None
    assert math.isnan(run.rows[0].inplace_time) and run.devices[1].pid is None


@pytest.mark.parametrize("text, message", [
    ("", "found none"),
    ("# nThread 1 nGpus 2\n", "found none"),
    ("     8   2   float  sum  12.0  0.00\n", "line 1: expected 7 to 13 columns"),
    ("hello\n     8   2   float  sum  x  0.0 0.0 0\n", "line 2: expected a number or N/A"),
    ("     8   2   float  sum  1e999  0.0 0.0 0\n", "finite"),
    ("     8   2   float  sum  -1.0  0.0 0.0 0\n", "non-negative"),
    ("     8   2   float  3 sum  1.0  0.0 0.0 0\n", "reduction operation then a root"),
])
def test_malformed_nccl_tests(text, message):
    with pytest.raises(BenchmarkParseError, match=message):
        read_nccl_tests(text)


def _p2p_text():
    # The CUDA sample's layout; GPU0's row of the bidirectional matrices and latencies are the
    # DGX-1V's (tests/data/dgx1v_p2p_gpu0_row.json) cut to 3 GPUs, the other rows made up.
    return """[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]
Device: 0, Tesla V100-SXM2-16GB, pciBusID: 6, pciDeviceID: 0, pciDomainID:0
Device: 1, Tesla V100-SXM2-16GB, pciBusID: 7, pciDeviceID: 0, pciDomainID:0
Device: 2, Tesla V100-SXM2-16GB, pciBusID: a, pciDeviceID: 0, pciDomainID:0
Device=0 CAN Access Peer Device=1

P2P Connectivity Matrix
     D\\D     0     1     2
     0\t     1     1     0
     1\t     1     1     0
     2\t     0     0     1
Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1      2
     0 740.00   9.80  10.10
     1   9.70 741.00  10.00
     2  10.20  10.10 742.00
Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)
   D\\D     0      1      2
     0 740.00  24.20  10.10
     1  24.20 741.00  10.00
     2  10.20  10.10 742.00
Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1      2
     0 783.95   9.56  14.43
     1   9.50 780.00  14.40
     2  14.40  14.40 781.00
Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
   D\\D     0      1      2
     0 784.87  48.49  14.49
     1  48.49 785.00  14.40
     2  14.40  14.40 786.00
P2P=Disabled Latency Matrix (us)
   GPU     0      1      2
     0   1.78  17.52  16.41
     1  17.00   1.80  16.50
     2  16.40  16.60   1.79

   CPU     0      1      2
     0   3.55   8.60   8.35
     1   8.50   3.50   8.40
     2   8.30   8.40   3.60
P2P=Enabled Latency (P2P Writes) Matrix (us)
   GPU     0      1      2
     0   1.76   1.62  19.34
     1   1.60   1.77  19.00
     2  19.10  19.20   1.75

   CPU     0      1      2
     0   3.50   2.60   8.30
     1   2.70   3.40   8.40
     2   8.20   8.30   3.50

NOTE: The CUDA Samples are not meant for performance measurements.
"""


def test_p2p_every_matrix():
    b = read_benchmark(_p2p_text())
    assert isinstance(b, P2PBenchmark) and len(b.devices) == 3 and b.devices[2].pci_bus == 10
    assert b.connectivity.tolist() == [[True, True, False], [True, True, False], [False, False, True]]
    assert set(b.bandwidth) == {(d, p) for d in ("unidirectional", "bidirectional")
                                for p in ("enabled", "disabled")}
    assert b.bandwidth[("bidirectional", "enabled")][0, 1] == pytest.approx(48.49e9)
    assert set(b.latency) == {(p, s) for p in ("enabled", "disabled") for s in ("gpu", "cpu")}
    assert b.latency[("enabled", "gpu")][0, 2] == pytest.approx(19.34e-6)
    assert b.latency[("disabled", "cpu")][2, 2] == pytest.approx(3.6e-6)


@pytest.mark.parametrize("old, new, message", [
    ("     1  24.20 741.00  10.00", "     1  24.20 741.00", "expected 3 values"),
    ("     2  14.40  14.40 786.00", "     5  14.40  14.40 786.00", "expected row 2"),
    ("     0 784.87  48.49  14.49", "     0 784.87  abc  14.49", "expected a number"),
    ("   GPU     0      1      2\n     0   1.76", "   GPU     0      2      1\n     0   1.76",
     "device indices"),
    ("     0 740.00   9.80  10.10", "     0 740.00  -9.80  10.10", "non-negative"),
])
def test_malformed_p2p(old, new, message):
    text = _p2p_text()
    assert old in text
    with pytest.raises(BenchmarkParseError, match=message):
        read_p2p_benchmark(text.replace(old, new, 1))


def test_p2p_without_matrices_and_mixed_sizes():
    with pytest.raises(BenchmarkParseError, match="found none"):
        read_p2p_benchmark("Device: 0, Tesla V100, pciBusID: 6\n")
    text = _p2p_text() + "P2P Connectivity Matrix\n     D\\D     0     1\n     0  1 1\n     1  1 1\n"
    with pytest.raises(BenchmarkParseError, match="one size"):
        read_p2p_benchmark(text)


_LINES = (RUN["collectives"]["all_reduce"]["raw"].splitlines()[:20] + _p2p_text().splitlines()[:30]
          + MODERN.splitlines())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_LINES), st.text(max_size=40)), max_size=25),
       st.integers(0, 60), st.text(max_size=6))
def test_fuzz_only_typed_errors_escape(lines, cut, junk):
    text = "\n".join(lines)
    mutated = text[:cut] + junk + text[cut:]
    for candidate in (text, mutated):
        for parse in (read_nccl_tests, read_p2p_benchmark, read_benchmark):
            try:
                result = parse(candidate)
            except BenchmarkParseError:
                continue
            assert isinstance(result, (NcclTestsRun, P2PBenchmark))
            if isinstance(result, NcclTestsRun):
                assert result.rows and all(r.size >= 0 for r in result.rows)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**40), st.sampled_from(["float", "half", "int8"]),
       st.lists(st.one_of(st.floats(0, 1e6, allow_nan=False), st.just("N/A")), min_size=8, max_size=8))
def test_fuzz_rows_round_trip(size, dtype, values):
    shown = ["N/A" if v == "N/A" else f"{v:.2f}" for v in values]
    width = {"float": 4, "half": 2, "int8": 1}[dtype]
    run = read_nccl_tests(f"  {size}  {size // width}  {dtype}  sum  -1  " + "  ".join(shown) + "\n",
                          collective="all_reduce")
    row = run.rows[0]
    assert row.size == size and row.root == -1
    got = [row.time * 1e6, row.algbw / 1e9, row.busbw / 1e9, row.error]
    want = [math.nan if s == "N/A" else float(s) for s in shown[:4]]
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_not_text():
    for parse in (read_nccl_tests, read_p2p_benchmark, read_benchmark):
        with pytest.raises(BenchmarkParseError, match="expected text"):
            parse(b"bytes")


# -- structure-aware fuzzing: real runs as users paste them ------------------------------------
def _dgxtopo_text() -> str:
    """What `dgxtopo collective all_reduce --system dgx2 -b 8 -e 1G` printed (2026-12-01): header,
    a few rows and the closing line, as check takes it."""
    return ("# dgxtopo: predicted nccl-tests all_reduce on DGX-2 GPUs 0-15 (16 ranks); NCCL 2.27.7 tuning "
            "model; measurement constants: default (DGX-2 fit)\n"
            "#       size         count    type   redop   root       time    algbw    busbw   algo   proto  nch\n"
            "#        (B)    (elements)                              (us)   (GB/s)   (GB/s)\n"
            "           8             2   float     sum     -1      24.60     0.00     0.00   ring      LL    6\n"
            "     1048576        262144   float     sum     -1      74.04    14.16    26.56   ring      LL    6\n"
            "  1073741824     268435456   float     sum     -1   16563.10    64.83   121.55   ring  Simple    6\n"
            "# Avg bus bandwidth    : 36.54\n")


_TEXTS = {**{c: v["raw"] for c, v in RUN["collectives"].items()}, "modern": MODERN, "dgxtopo": _dgxtopo_text()}
_EXPECTED = {"modern": ("all_reduce", 4), "dgxtopo": ("all_reduce", 16),
             **{c: (c, 12) for c in RUN["collectives"]}}
_PREFIXES = ["", "[1,0]<stdout>:", "[1,3]<stderr>:", "0: ", "  12: "]
_TOKENS = ["N/A", "-1", "0", "1e30", "9" * 30, "nan", "inf", "sum", "x", "", "1.5", "#wrong", "-0"]


@st.composite
def pasted(draw):
    """A real run with lines dropped, duplicated, reordered and prefixed; maybe a column mutated."""
    key = draw(st.sampled_from(sorted(_TEXTS)))
    lines = _TEXTS[key].splitlines()
    edits = draw(st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "prefix"]),
                                    st.integers(0, len(lines) - 1), st.integers(0, len(lines) - 1),
                                    st.sampled_from(_PREFIXES)), max_size=8))
    for kind, i, j, prefix in edits:
        if not lines:
            break
        i, j = i % len(lines), j % len(lines)
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(j, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = prefix + lines[i]
    mutated = draw(st.booleans()) and bool(lines)
    if mutated:
        i = draw(st.integers(0, len(lines) - 1))
        tokens = lines[i].split()
        if tokens:
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(_TOKENS))
            lines[i] = "  ".join(tokens)
    return key, "\n".join(lines), mutated


@settings(max_examples=150, deadline=None, derandomize=True)
@given(pasted())
def test_fuzz_pasted_runs(case):
    """Only typed errors escape; what parses is a subset of the real run's rows, of its collective
    (or none named), of its rank count (or unknown): never a wrong answer."""
    key, text, mutated = case
    original = read_nccl_tests(_TEXTS[key])
    with watchdog(10):
        try:
            run = read_nccl_tests(text, name=key)
        except BenchmarkParseError:
            return
    assert run.rows and all(0 <= r.size <= 2**62 and 0 <= r.count <= 2**62 for r in run.rows)
    if mutated:
        return
    assert {repr(r) for r in run.rows} <= {repr(r) for r in original.rows}  # repr: NaN equals NaN
    collective, nranks = _EXPECTED[key]
    assert run.collective in (collective, None)
    assert run.nranks in (nranks, None), (run.nranks, run.ranks_source)


@pytest.mark.parametrize("row, message", [
    ("8 2 float sum -1 1e300 0.00 0.00 0", r"below 1e\+12"),
    (f"{10**30} 2 float sum -1 61.03 0.00 0.00 0", "size of at most 4611686018427387904"),
    ("8 2 float sum 99999999 61.03 0.00 0.00 0", "root rank from -1"),
])
def test_rows_out_of_any_measurement_are_refused(row, message):
    with pytest.raises(BenchmarkParseError, match=message):
        read_nccl_tests(row)


MPI_WITHOUT_RANKS = """\
[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
[1,1]<stdout>:# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:     1048576        262144     float     sum      -1    40.00   26.21   49.15      0    40.00   26.21   49.15      0
[1,0]<stdout>:  1073741824     268435456     float     sum      -1  10737.4  100.00  187.50      0  10737.4  100.00  187.50      0
"""


def test_several_processes_without_rank_lines():
    """mpirun --tag-output, one header per process (nThread 1 nGpus 1 each: not the rank count),
    no device lines: 16 ranks from busbw / algbw = 2(n-1)/n = 1.875 (made-up numbers)."""
    run = read_nccl_tests(MPI_WITHOUT_RANKS)
    assert (run.collective, run.nranks, run.ranks_source) == ("all_reduce", 16, "busbw / algbw")
    assert run.rows[1].busbw == pytest.approx(187.5e9) and run.rows[0].error == 0
    # Broadcast's busbw equals its algbw: several processes, no device lines -> unknown, not 1.
    text = MPI_WITHOUT_RANKS.replace("sum      -1", "none       0").replace("187.50", "100.00").replace(
        "49.15", "26.21")
    run = read_nccl_tests(text)
    assert run.collective == "broadcast" and run.nranks is None and "factor 1" in run.ranks_source
