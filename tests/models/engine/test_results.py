"""Results are numbers: every result type's ``to_records()`` gives tidy rows (models.engine.results)."""

from __future__ import annotations

import collections
import math
import re

import numpy as np
import pytest

import topo
from models.engine.results import gpu_set, gpu_sets, tidy_records
from models.predict.collectives import estimate, subsets
from models.predict.measure import DEFAULT, measured
from models.predict.p2p import p2p_path, p2p_report
from models.studies.benchmarks import read_nccl_tests
from models.studies.bounds import bound, subset_bounds
from models.studies.calibration import Calibration, check
from models.studies.planner import gpus_ranking, plan, search
from topo.errors import DgxTopoError
from tests.conftest import DATA

SCALARS = (bool, int, float, str, type(None))


def _cell(value) -> bool:
    """A scalar, or a GPU set: a tuple of ints (or a tuple of such tuples: a task's images)."""
    if isinstance(value, tuple):
        return all(type(i) is int or (isinstance(i, tuple) and all(type(j) is int for j in i)) for i in value)
    return isinstance(value, SCALARS)


#: Quantities with a unit, which a column names with its SI suffix (``time_s``, ``busbw_Bps``).
BARE_UNITS = {"time", "latency", "busbw", "algbw", "bandwidth", "capacity", "duration", "start", "end",
              "step_time", "memory", "rate"}


def assert_tidy(rows, keys=None):
    """Flat rows of Python scalars (GPU sets as tuples of ints, hashable like a label), every row
    with the same keys in the same order, quantities named with their SI unit."""
    assert isinstance(rows, list) and rows
    first = list(rows[0])
    assert not set(first) & BARE_UNITS, sorted(set(first) & BARE_UNITS)
    for row in rows:
        assert isinstance(row, dict) and list(row) == first
        assert all(_cell(v) for v in row.values()), row
    if keys is not None:
        assert set(keys) <= set(first)
    return first


@pytest.fixture(scope="module")
def dgx1v():
    return topo.dgx1v()


@pytest.fixture(scope="module")
def sweep_estimate(dgx1v):
    return estimate(dgx1v, "all_reduce", [8, 2**20, 2**30], [0, 1, 2, 3])


def test_tidy_records_repeat_scalars_and_refuse_ragged_or_nested_columns():
    assert tidy_records({"a": 1, "b": np.array([1.5, 2.5])}) == [{"a": 1, "b": 1.5}, {"a": 1, "b": 2.5}]
    assert tidy_records({"a": np.int64(3), "b": np.array("x")}) == [{"a": 3, "b": "x"}]
    assert type(tidy_records({"a": np.float32(1)})[0]["a"]) is float
    with pytest.raises(DgxTopoError, match="has 3 entries, expected 2"):
        tidy_records({"a": [1, 2], "b": [1, 2, 3]})
    with pytest.raises(DgxTopoError, match="scalars only"):
        tidy_records({"a": [(1, 2)]})


def test_a_gpu_set_is_one_cell_a_tuple_of_ints_that_groups_like_a_label():
    rows = tidy_records({"gpus": gpu_set(np.array([3, 0])), "nbytes": [8, 16]})
    assert rows == [{"gpus": (3, 0), "nbytes": 8}, {"gpus": (3, 0), "nbytes": 16}]
    assert type(rows[0]["gpus"]) is tuple and {type(i) for i in rows[0]["gpus"]} == {int}
    rows = tidy_records({"gpus": [gpu_set([0, 1]), gpu_set([2, 3]), gpu_set([0, 1])], "images": gpu_sets([[4, 5]])})
    assert collections.Counter(r["gpus"] for r in rows) == {(0, 1): 2, (2, 3): 1}  # hashable: groups
    assert {r["images"] for r in rows} == {((4, 5),)}


def test_collective_estimate_records_are_its_arrays(sweep_estimate):
    e = sweep_estimate
    rows = e.to_records()
    assert_tidy(rows, {"nbytes", "time_s", "algbw_Bps", "busbw_Bps", "algorithm", "protocol", "nchannels"})
    assert len(rows) == 3 and [r["gpus"] for r in rows] == [(0, 1, 2, 3)] * 3
    for column, values in (("nbytes", e.nbytes), ("time_s", e.time), ("algbw_Bps", e.algbw),
                           ("busbw_Bps", e.busbw), ("algorithm", e.algorithm), ("nchannels", e.nchannels),
                           ("latency_s", e.latency), ("bandwidth_Bps", e.bandwidth), ("nccl_time_s", e.nccl_time)):
        assert [r[column] for r in rows] == np.asarray(values).tolist(), column
    assert e.point(0).to_records()[0] == {k: rows[0][k] for k in e.point(0).to_records()[0]}


def test_one_size_gives_one_row(dgx1v):
    e = estimate(dgx1v, "alltoall", "1M")
    (row,) = e.to_records()
    assert row["nbytes"] == 2**20 and row["busbw_Bps"] == float(e.busbw) and row["algorithm"] == "p2p"
    assert e.nbytes.dtype == np.int64  # sizes stay integers: one parse, no float round trip


def test_subset_ranking_and_bounds_records(dgx1v):
    ranking = subsets(dgx1v, "all_reduce", 2**30, 3)
    rows = ranking.to_records()
    assert_tidy(rows, {"rank", "gpus", "busbw_Bps", "representative"})
    assert len(rows) == math.comb(8, 3) and [r["rank"] for r in rows] == list(range(1, 57))
    assert [r["gpus"] for r in rows] == [r.gpus for r in ranking]
    assert [r["representative"] for r in rows] == [r.representative for r in ranking]
    assert [r["busbw_Bps"] for r in rows] == [r.busbw for r in ranking]
    results = subset_bounds(dgx1v, "all_gather", 2, edge_kinds=["nvlink"])
    rows = [row for r in results for row in r.to_records()]
    assert_tidy(rows, {"gpus", "bound_busbw_Bps"})
    assert [r["bound_busbw_Bps"] for r in rows] == [r.bound_busbw for r in results]


def test_p2p_records(dgx1v):
    report = p2p_report(dgx1v, "0,3,5")
    rows = report.to_records()
    assert_tidy(rows, {"src", "dst", "unidirectional_Bps", "bidirectional_Bps", "latency_s", "path_type"})
    assert [(r["src"], r["dst"]) for r in rows] == [(a, b) for a in (0, 3, 5) for b in (0, 3, 5)]
    assert [r["bidirectional_Bps"] for r in rows] == report.bidirectional.ravel().tolist()
    assert [r["path_type"] for r in rows] == report.path_type.ravel().tolist()
    (row,) = p2p_path(dgx1v, 0, 5).to_records()
    assert row["path_type"] == "SYS" and row["staged"] is True and row["smi_class"] == "SYS"


def test_bound_and_packing_records(dgx1v):
    b = bound(dgx1v, "all_gather", "1G", [0, 1, 2, 3], trees=True)
    (row,) = b.to_records()
    assert_tidy([row], {"bound_busbw_Bps", "nccl_busbw_Bps", "ratio", "cut_capacity_Bps"})
    assert row["gpus"] == (0, 1, 2, 3) and row["bound_busbw_Bps"] == b.bound_busbw and row["ratio"] == b.ratio
    assert row["cut_capacity_Bps"] == b.cut.capacity and b.cut.to_records()[0]["capacity_Bps"] == b.cut.capacity
    (packing,) = b.packings
    rows = packing.to_records()
    assert_tidy(rows, {"root", "tree_rate_Bps", "arcs"})
    assert [r["tree_rate_Bps"] for r in rows] == [t.rate for t in packing.trees]
    arcs = packing.trees[0].to_records()
    assert_tidy(arcs, {"from", "to", "hops"}) and len(arcs) == len(packing.trees[0].arcs)


def test_measurement_check_and_calibration_records(dgx1v, sweep_estimate):
    m = measured(sweep_estimate, dgx1v)
    rows = m.to_records()
    assert_tidy(rows, {"nbytes", "time_s", "host_time_s", "ratio"})
    assert [r["time_s"] for r in rows] == np.asarray(m.time).tolist()
    run = read_nccl_tests((DATA.parent.parent / "examples" / "data" / "dgx2_12gpu_all_reduce.txt").read_text())
    c = check(run, topo.dgx2())
    rows = c.to_records()
    assert_tidy(rows, {"nbytes", "measured_time_s", "predicted_busbw_Bps", "time_error", "busbw_error"})
    assert [r["time_error"] for r in rows] == [r.time_error for r in c.rows]
    assert rows[0]["busbw_error"] is None
    cal = Calibration(DEFAULT, (("launch_per_gpu", 5e-6, 0.0, 5e-5), ("efficiency:nvlink2", 0.9, 0.05, 1.0)),
                      {"rows": 4, "median_abs_time_error": 0.1, "max_abs_time_error": 0.2},
                      {"rows": 4, "median_abs_time_error": 0.01, "max_abs_time_error": 0.02},
                      np.array([]), np.array([]), "dgx2")
    rows = cal.to_records()
    assert_tidy(rows, {"name", "value", "lower", "upper"})
    assert [r["name"] for r in rows] == ["launch_per_gpu", "efficiency:nvlink2"] and rows[1]["value"] == 0.9


def test_plan_search_and_ranking_records(dgx1v):
    p = plan("bert-large", dgx1v, tp=1, pp=1, dp=8)
    rows = p.to_records()
    assert_tidy(rows, {"layout", "step_time_s", "component", "time_s", "exposed_s"})
    assert [r["component"] for r in rows] == [c.name for c in p.components]
    assert sum(r["exposed_s"] for r in rows) == pytest.approx(p.step_time)
    s = search("bert-large", dgx1v, tp=1, pp=1)
    rows = s.to_records()
    assert_tidy(rows, {"rank", "layout", "component"})
    assert {r["rank"] for r in rows} == set(range(1, len(s.plans) + 1))
    ranks = gpus_ranking("bert-large")
    rows = [row for r in ranks for row in r.to_records()]
    assert_tidy(rows, {"generation", "time_per_sample_s", "binding"})


def test_engine_results_give_tidy_rows(dgx1v):
    from models.engine.nccl.pipelining import pipelining
    from models.engine.nccl.search import search_channels
    from models.engine.nccl.tuning import ChannelGraph, Communicator, select_algorithm, tune
    from models.engine.routes import route

    ring = search_channels(dgx1v)
    rows = ring.to_records()
    assert_tidy(rows, {"channel", "order", "bw_intra_Bps", "type_intra", "timed_out"})
    assert [tuple(r["order"].split()) for r in rows] == list(ring.channels)
    assert {r["bw_intra_Bps"] for r in rows} == {ring.bw_intra} and {r["nic_in"] for r in rows} == {""}
    across = search_channels(topo.build("2xdgx1v"))
    assert [(r["nic_in"], r["nic_out"]) for r in across.to_records()] == [tuple(map(str, n)) for n in across.nets]

    # NVSwitch spray: the shares of the edges leaving the source carry the whole copy.
    dgx2 = topo.dgx2()
    copy = route(dgx2, "gpu0", "gpu9")
    rows = copy.to_records()
    assert_tidy(rows)
    assert len(rows) == len(copy.edges) and math.isclose(sum(r["share"] for r in rows if r["u"] == "gpu0"), 1.0)
    (self_copy,) = route(dgx2, "gpu0", "gpu0").to_records()
    assert self_copy["path_type"] == "LOC" and self_copy["u"] == ""

    # The doctest's communicator (models.engine.nccl.tuning.select_algorithm): one row per size,
    # each candidate's time the closed form latency + nbytes / bandwidth.
    g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    comm = Communicator(8, g, g, 90)
    s = select_algorithm("all_reduce", [8, 2**20, 2**30], comm)
    rows = s.to_records()
    assert_tidy(rows, {"nbytes", "algorithm", "protocol", "time_s", "busbw_Bps"})
    assert [(r["algorithm"], r["protocol"]) for r in rows] == [("ring", "LL"), ("ring", "LL"), ("ring", "Simple")]
    for candidate in s.candidates:
        for r in candidate.to_records():
            assert math.isclose(r["time_s"], r["latency_s"] + r["nbytes"] / r["bandwidth_Bps"])
    (off,) = tune("broadcast", "tree", "LL", comm).to_records()
    assert off["enabled"] is False and off["busbw_Bps"] is None and off["reason"] == "ring_only"

    (pipe,) = pipelining("2.12.12", "all_reduce", "Simple").to_records()
    assert (pipe["chunk_bytes"], pipe["slice_bytes"]) == (2097152, 1048576)
    assert pipe["chunk_bytes"] == pipe["step_bytes"] * pipe["chunk_steps"]



def test_predict_and_study_results_give_tidy_rows():
    import json

    from models.studies.planner import Memory

    # A real nccl-tests output (tests/data/dgx2_12gpu_nccl_tests.json: 12 GPUs of a DGX-2).
    raw = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]["all_reduce"]["raw"]
    run = read_nccl_tests(raw)
    rows = run.to_records()
    assert_tidy(rows, {"nbytes", "time_s", "algbw_Bps", "busbw_Bps", "inplace_time_s"})
    assert len(rows) == len(run.rows) > 3 and {r["nranks"] for r in rows} == {12}
    for r in rows:  # nccl-tests' busbw = algbw x 2(n-1)/n, within the printed decimals (0.005 GB/s each)
        assert math.isclose(r["busbw_Bps"], r["algbw_Bps"] * 22 / 12, abs_tol=0.005e9 * (1 + 22 / 12))

    across = estimate(topo.build("2xdgx1v"), "all_reduce", "1G")
    for load in across.network:
        (row,) = load.to_records()
        assert row["factor"] == min(1.0, row["network_rate_Bps"] / row["nccl_rate_Bps"])
        assert (row["bottleneck_u"], row["bottleneck_v"]) == tuple(map(str, load.bottleneck))

    dgx1v = topo.dgx1v()
    (fill,) = measured(estimate(dgx1v, "broadcast", "1G"), dgx1v).pipeline.to_records()
    assert (fill["pattern"], fill["fill_slices"]) == ("chain", fill["nranks"] - 2)  # a chain of 8 waits 6 slices
    assert fill["fill_bytes"] == fill["fill_slices"] * min(fill["slice_bytes"], math.ceil(2**30 / fill["nchannels"])) \
        * fill["nchannels"]

    (mem,) = Memory(1e9, 1e9, 2e9, 3e9, 16e9).to_records()
    assert mem["total_bytes"] == 7e9 and mem["fits"] is True


# ------------------------------------------------------------------ steps, copies, graphs, what-ifs, p2p outputs
# CollectiveSteps, StagedCopy, TaskGraph, WhatIf and P2PBenchmark: rows checked against the result's own
# fields and against answers known without the model (NCCL's latency closed form, link counts, a DGX-1V run).


def test_collective_steps_records_are_its_phases_and_links(dgx1v):
    from models.predict.decompose import Decomposer

    d = Decomposer(dgx1v)
    steps = d.collective("all_reduce", 2**30, range(8))
    rows = steps.to_records()
    assert_tidy(rows, {"phase", "start_s", "end_s", "duration_s", "u", "v", "usage", "nccl_latency_s"})
    assert {(r["op"], r["gpus"], r["nbytes"], r["algorithm"], r["nchannels"], r["blocks"]) for r in rows} \
        == {("all_reduce", tuple(range(8)), 2**30, steps.algorithm, steps.nchannels, steps.blocks)}
    startup, *transfer = rows
    assert (startup["phase"], startup["u"], startup["v"], startup["usage"]) == ("startup", "", "", 0.0)
    assert {r["phase"] for r in transfer} == {"transfer"} and len(transfer) == len(steps.edges) > 0
    assert [(r["u"], r["v"]) for r in transfer] == [tuple(map(str, e)) for e in steps.edges]
    assert [r["usage"] for r in transfer] == steps.usage.tolist() and all(0 < r["usage"] <= 1 for r in transfer)
    # The phases follow each other from 0, and their durations add up to the estimate's time alone.
    assert startup["start_s"] == 0.0 and {r["start_s"] for r in transfer} == {startup["end_s"]}
    assert {r["end_s"] for r in transfer} == {steps.time}
    assert startup["duration_s"] + transfer[0]["duration_s"] == pytest.approx(steps.time, rel=1e-15)
    assert steps.time == pytest.approx(float(estimate(dgx1v, "all_reduce", 2**30, range(8)).time), rel=1e-12)
    # Ring Simple on 8 GPUs of NVLink: NCCL's baseLat 8.4 us + 2(n - 1) = 14 steps of hwLat 3.4 us,
    # above the host's launch, so the start-up is NCCL's latency term.
    assert steps.algorithm == "ring" and steps.protocol == "Simple"
    assert startup["nccl_latency_s"] == pytest.approx(8.4e-6 + 14 * 3.4e-6, rel=1e-12)
    assert startup["duration_s"] == pytest.approx(startup["nccl_latency_s"], rel=1e-12)
    # On GPUs 0-3 the rings leave the NV2 bundle 2-3 half full: each row carries its own edge's usage.
    half = d.collective("all_reduce", 2**30, [0, 1, 2, 3])
    filled = {(r["u"], r["v"]): r["usage"] for r in half.to_records() if r["phase"] == "transfer"}
    assert filled == {(str(u), str(v)): float(x) for (u, v), x in zip(half.edges, half.usage)}
    assert filled["gpu2", "gpu3"] == 0.5 and filled["gpu0", "gpu1"] == 1.0

    # A send on the NV2 pair 0-3 of a DGX-1V fills its one bundle, one way; NCCL times no latency term.
    send = d.send(0, 3, 2**26)
    rows = send.to_records()
    assert [(r["phase"], r["u"], r["v"], r["usage"]) for r in rows] == \
        [("startup", "", "", 0.0), ("transfer", "gpu0", "gpu3", 1.0)]
    assert {r["nccl_latency_s"] for r in rows} == {None} and rows[0]["gpus"] == (0, 3)
    assert sum(r["duration_s"] for r in rows) == pytest.approx(float(estimate(dgx1v, "sendrecv", 2**26, [0, 3]).time),
                                                               rel=1e-12)
    # A copy on one GPU fills no link: still one row per phase, every row with the same keys.
    rows = d.collective("all_reduce", 2**20, [0]).to_records()
    assert_tidy(rows) and [(r["phase"], r["u"], r["usage"]) for r in rows] == [("startup", "", 0.0),
                                                                                ("transfer", "", 0.0)]

    # The module's example: NVLS on a DGX H100, its busiest GPU-to-switch link 0.971 full.
    nvls = Decomposer(topo.build("dgxh100")).collective("all_reduce", 2**30, range(8))
    usage = [r["usage"] for r in nvls.to_records() if r["phase"] == "transfer"]
    assert max(usage) == float(nvls.usage.max()) and round(max(usage), 3) == 0.971


def test_staged_copy_records_chain_its_legs(dgx1v):
    from models.predict.p2p import staged_copy

    # One PLX switch: the copy goes up the switch's uplink to cpu0's memory and back down.
    c = staged_copy(dgx1v, 0, 1)
    rows = c.to_records()
    assert_tidy(rows, {"src", "dst", "host_memory", "leg", "hop", "u", "v"})
    assert [(r["leg"], r["hop"]) for r in rows] == [("to_host", 0), ("to_host", 1), ("from_host", 0), ("from_host", 1)]
    assert [(r["u"], r["v"]) for r in rows] == list(c.edges)
    assert {(r["src"], r["dst"], r["host_memory"]) for r in rows} == {("gpu0", "gpu1", "cpu0")}
    assert [(r["u"], r["v"]) for r in rows].count(("pcie0", "cpu0")) == 1
    assert [(r["u"], r["v"]) for r in rows].count(("cpu0", "pcie0")) == 1
    assert sum(dgx1v.edges[r["u"], r["v"]]["latency"] for r in rows) == pytest.approx(c.latency(dgx1v), rel=1e-12)

    # Across the sockets: the bounce buffer is in the memory of the CPU nearest the destination, and
    # the rows, leg by leg, walk the node path P2PResult.nodes gives.
    staged = p2p_path(dgx1v, 0, 5).staged
    rows = staged.to_records()
    assert rows[0]["host_memory"] == "cpu1"
    for leg, path in (("to_host", staged.to_host), ("from_host", staged.from_host)):
        hops = [r for r in rows if r["leg"] == leg]
        assert [h["hop"] for h in hops] == list(range(len(path) - 1))
        assert [h["u"] for h in hops] + [hops[-1]["v"]] == list(path)
    assert rows[0]["u"] == "gpu0" and rows[-1]["v"] == "gpu5"
    assert [r["u"] for r in rows] + [rows[-1]["v"]] == list(p2p_path(dgx1v, 0, 5).nodes) \
        == ["gpu0", "pcie0", "cpu0", "cpu1", "pcie2", "gpu5"]


def test_task_graph_records_are_its_tasks(dgx1v):
    from models.predict.decompose import Decomposer
    from models.predict.simulate import simulate, task_graph

    graph = task_graph({"name": "chain", "tasks": [
        {"id": "fwd", "op": "compute", "gpu": 0, "seconds": 1e-3},
        {"id": "bwd", "op": "compute", "gpu": 0, "seconds": 2e-3, "after": ["fwd"], "kind": "backward"},
        {"id": "p2p", "op": "send", "src": 5, "dst": 0, "bytes": 2**26, "after": ["bwd"]},
        {"id": "bc", "op": "broadcast", "gpus": [0, 1, 2, 3], "bytes": 2**20, "root": 2, "after": ["fwd", "p2p"],
         "stream": "side"},
        {"id": "ar", "op": "all_reduce", "gpus": [0, 1], "bytes": 2**20, "images": [[2, 3], [4, 6]]}]})
    rows = graph.to_records()
    assert_tidy(rows, {"id", "op", "kind", "gpus", "nbytes", "compute_s", "after", "stream", "root", "copies"})
    assert len(rows) == len(graph) == 5
    for r, t in zip(rows, graph.tasks):
        assert (r["id"], r["op"], r["kind"], r["nbytes"], r["compute_s"], r["stream"], r["root"], r["copies"]) \
            == (t.id, t.op, t.label, t.nbytes, t.seconds, t.stream, t.root, t.copies)
        assert r["after"].split(",") == list(t.after) if t.after else r["after"] == ""
        assert r["images"] == t.images
    assert [r["gpus"] for r in rows] == [(0,), (0,), (5, 0), (0, 1, 2, 3), (0, 1)]  # a send's source first
    assert [r["kind"] for r in rows] == ["compute", "backward", "send", "broadcast", "all_reduce"]
    assert (rows[3]["root"], rows[3]["after"], rows[4]["images"], rows[4]["copies"]) \
        == (2, "fwd,p2p", ((2, 3), (4, 6)), 3)

    # The simulation's rows name the same tasks alike (kind is the breakdown label in both).
    simulated = simulate(dgx1v, graph, sm_share=False)
    keys = ("id", "op", "kind", "gpus", "nbytes")
    assert [tuple(r[k] for k in keys) for r in rows] == [tuple(r[k] for k in keys) for r in simulated.to_records()]

    # A chain on one GPU: the step is the compute times added up, then the send alone on an idle fabric.
    chain = task_graph({"tasks": [
        {"id": "fwd", "op": "compute", "gpu": 0, "seconds": 1e-3},
        {"id": "bwd", "op": "compute", "gpu": 0, "seconds": 2e-3, "after": ["fwd"]},
        {"id": "p2p", "op": "send", "src": 5, "dst": 0, "bytes": 2**26, "after": ["bwd"]}]})
    rows = chain.to_records()
    send = Decomposer(dgx1v).send(5, 0, 2**26)
    assert sum(r["compute_s"] for r in rows) == 3e-3
    assert simulate(dgx1v, chain).step_time == pytest.approx(sum(r["compute_s"] for r in rows) + send.time, rel=1e-12)
    assert task_graph({"tasks": []}).to_records() == []


def test_whatif_records_are_its_changes(dgx1v):
    from models.studies.whatif import apply_failures, components

    # DGX-1V: gpu0-gpu3 and gpu0-gpu4 are NV2 bundles (2 links of NVLink 2, 25 GB/s each per
    # direction), gpu0-gpu1 an NV1.
    w = apply_failures(dgx1v, ["gpu0-gpu3:1", "gpu0-gpu4", "gpu5", "mlx5_0"], degrade="gpu0-gpu1=0.5")
    rows = w.to_records()
    assert_tidy(rows, {"change", "action", "part", "u", "v", "factor", "links_before", "links_after",
                       "bandwidth_before_Bps", "bandwidth_after_Bps", "lost_gpu"})
    assert [r["change"] for r in rows] == [str(c) for c in w.changes] and len(rows) == 5
    by = {r["change"]: r for r in rows}
    half = by["gpu0-gpu1=0.5"]
    assert (half["action"], half["part"], half["u"], half["v"], half["factor"]) == ("degrade", "", "gpu0", "gpu1", 0.5)
    assert (half["links_before"], half["links_after"]) == (1, 1)  # a degrade keeps the links
    assert (half["bandwidth_before_Bps"], half["bandwidth_after_Bps"]) == (25e9, 12.5e9)
    one = by["gpu0-gpu3:1"]
    assert (one["action"], one["factor"], one["links_before"], one["links_after"]) == ("fail", None, 2, 1)
    assert (one["bandwidth_before_Bps"], one["bandwidth_after_Bps"]) == (50e9, 25e9)
    gone = by["gpu0-gpu4"]
    assert (gone["links_before"], gone["links_after"], gone["bandwidth_after_Bps"]) == (2, 0, 0.0)
    assert not w.graph.has_edge("gpu0", "gpu4")
    for part, lost in (("gpu5", True), ("mlx5_0", False)):
        r = by[part]
        assert (r["part"], r["u"], r["v"], r["lost_gpu"]) == (part, "", "", lost)
        assert {r[k] for k in ("links_before", "links_after", "bandwidth_before_Bps", "bandwidth_after_Bps")} == {None}
    assert [r["part"] for r in rows if r["lost_gpu"]] == list(w.lost_gpus)
    for r in rows:  # against the graphs themselves
        if r["u"]:
            assert r["bandwidth_before_Bps"] == dgx1v.edges[r["u"], r["v"]]["bandwidth"]
            assert r["bandwidth_after_Bps"] == (w.graph.edges[r["u"], r["v"]]["bandwidth"]
                                                if w.graph.has_edge(r["u"], r["v"]) else 0.0)

    # A sweep's cases, one link of each of the 16 NVLink bundles: a bundle of L links keeps
    # L - 1, and (L - 1) / L of its bandwidth.
    cases = components(dgx1v, "nvlink")
    assert len(cases) == 16
    for case in cases:
        (r,) = apply_failures(dgx1v, case).to_records()
        assert r["links_after"] == r["links_before"] - 1 >= 0
        assert r["bandwidth_after_Bps"] == pytest.approx(r["bandwidth_before_Bps"] * r["links_after"]
                                                         / r["links_before"])
    assert apply_failures(dgx1v).to_records() == []


def test_p2p_benchmark_records_are_its_matrices(dgx1v):
    import json

    from models.studies.benchmarks import read_p2p_benchmark
    from tests.models.studies.test_benchmarks import _p2p_text

    b = read_p2p_benchmark(_p2p_text(), name="dgx1v")
    rows = b.to_records()
    assert_tidy(rows, {"p2p", "src", "dst", "connected", "unidirectional_Bps", "bidirectional_Bps", "latency_s",
                       "cpu_latency_s"})
    n = len(b.devices)
    assert n == 3 and len(rows) == 2 * n * n  # both settings, every pair and the diagonal
    assert [r["p2p"] for r in rows] == [True] * n * n + [False] * n * n
    assert sum(r["src"] != r["dst"] for r in rows if r["p2p"]) == n * (n - 1)
    for p, setting in ((True, "enabled"), (False, "disabled")):
        mine = [r for r in rows if r["p2p"] is p]
        assert [(r["src"], r["dst"]) for r in mine] == [(i, j) for i in range(n) for j in range(n)]
        for column, matrix in (("unidirectional_Bps", b.bandwidth["unidirectional", setting]),
                               ("bidirectional_Bps", b.bandwidth["bidirectional", setting]),
                               ("latency_s", b.latency[setting, "gpu"]), ("cpu_latency_s", b.latency[setting, "cpu"])):
            assert [r[column] for r in mine] == matrix.ravel().tolist(), column
        assert [r["connected"] for r in mine] == b.connectivity.ravel().tolist()
    assert {r["name"] for r in rows} == {"dgx1v"}

    # GPU0's row is the published DGX-1V run (tests/data/dgx1v_p2p_gpu0_row.json): the NV1 pair 0-1
    # moves 48.49 GB/s both ways, under the 2 x 25 GB/s of its one NVLink 2 link; measured and predicted
    # rows merge on (p2p, src, dst), and the model is within 1 % of it, either setting.
    published = json.loads((DATA / "dgx1v_p2p_gpu0_row.json").read_text())
    measured_rows = {(r["p2p"], r["src"], r["dst"]): r for r in rows}
    assert measured_rows[True, 0, 1]["bidirectional_Bps"] == pytest.approx(
        published["bidirectional_p2p_enabled_gbps"][1] * 1e9, rel=1e-12)
    assert measured_rows[True, 0, 1]["bidirectional_Bps"] <= 2 * dgx1v.edges["gpu0", "gpu1"]["bandwidth"]
    for setting in ("enabled", "disabled"):
        for predicted in p2p_report(dgx1v, "0,1", p2p=setting).to_records():
            key = (predicted["p2p"], predicted["src"], predicted["dst"])
            if key[1] == 0:  # only GPU0's row was published
                assert measured_rows[key]["bidirectional_Bps"] == pytest.approx(predicted["bidirectional_Bps"],
                                                                                rel=0.01), key

    # One matrix printed: the others' columns are NaN, the connectivity None; a connectivity matrix
    # alone gives one set of rows without a setting.
    one = read_p2p_benchmark("Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n"
                             "     0 783.95   9.56\n     1   9.50 780.00\n").to_records()
    assert_tidy(one) and len(one) == 4 and {r["p2p"] for r in one} == {False}
    assert [r["bidirectional_Bps"] for r in one] == pytest.approx([783.95e9, 9.56e9, 9.50e9, 780e9])
    assert all(math.isnan(r["unidirectional_Bps"]) and math.isnan(r["latency_s"]) and r["connected"] is None
               for r in one)
    alone = read_p2p_benchmark("P2P Connectivity Matrix\n     D\\D     0     1\n     0  1 0\n     1  0 1\n")
    assert [(r["p2p"], r["src"], r["dst"], r["connected"]) for r in alone.to_records()] == \
        [(None, 0, 0, True), (None, 0, 1, False), (None, 1, 0, False), (None, 1, 1, True)]


# ------------------------------------------------------------------ NCCL's trees, legacy rings, NET routes
from hypothesis import given, strategies as st  # noqa: E402

from models.engine.nccl.legacy_rings import legacy_rings  # noqa: E402
from models.engine.nccl.system import NcclSystem  # noqa: E402
from models.engine.nccl.trees import Chain, double_binary_tree, intra_chain, rank_tree  # noqa: E402


@given(st.integers(1, 64))
def test_double_binary_tree_records_link_each_child_to_its_parent(nranks):
    rows = double_binary_tree(nranks).to_records()
    assert_tidy(rows, ["tree", "rank", "up", "down0", "down1", "depth", "transform"])
    assert len(rows) == 2 * nranks
    for t in (0, 1):
        tree = {r["rank"]: r for r in rows if r["tree"] == t}
        assert sum(r["up"] is None for r in tree.values()) == 1  # one root
        for r in tree.values():
            for child in (r["down0"], r["down1"]):
                if child is not None:
                    assert tree[child]["up"] == r["rank"]
        # Every rank but the root is some rank's child, once.
        children = [c for r in tree.values() for c in (r["down0"], r["down1"]) if c is not None]
        assert sorted(children) == sorted(r["rank"] for r in tree.values() if r["up"] is not None)


def test_double_binary_tree_records_of_eight_nodes():
    """NCCL's tree 0 over 8 nodes (the module's known answer): root 0 above 4, 4 above 2 and 6;
    tree 1 mirrors it."""
    rows = {(r["tree"], r["rank"]): r for r in double_binary_tree(8).to_records()}
    assert (rows[0, 0]["up"], rows[0, 4]["up"], rows[0, 2]["up"], rows[0, 6]["up"]) == (None, 0, 4, 4)
    assert {rows[0, 4]["down0"], rows[0, 4]["down1"]} == {2, 6}
    assert rows[1, 7]["up"] is None and rows[1, 3]["up"] == 7
    assert {r["depth"] for r in rows.values()} == {3} and {r["transform"] for r in rows.values()} == {"mirror"}


def test_chain_and_rank_tree_records():
    chains = [intra_chain([0, 1, 2, 3], "balanced_tree"), intra_chain([4, 5, 6, 7], "balanced_tree")]
    rows = chains[0].to_records()
    assert [(r["rank"], r["up"], r["down"]) for r in rows] == [
        (c, chains[0].up(c), chains[0].down(c)) for c in chains[0].order]
    assert Chain((), "tree").to_records() == []
    tree = rank_tree(chains, double_binary_tree(2).trees[0])
    rows = tree.to_records()
    assert_tidy(rows, ["rank", "up", "down0", "down1", "down2", "root", "depth"])
    assert [r["up"] for r in rows] == list(tree.up)
    assert [tuple(c for c in (r["down0"], r["down1"], r["down2"]) if c is not None) for r in rows] == \
        [tuple(d) for d in tree.down]
    assert sum(r["up"] is None for r in rows) == 1 and rows[tree.root]["up"] is None


def test_legacy_rings_records_one_row_per_ring():
    """NCCL 2.3's rings on a DGX-1 (P100): 128 threads on Pascal NVLink rings (v2.3.7
    src/init.cu), every hop over NVLink (no shared memory)."""
    rings = legacy_rings(NcclSystem(topo.dgx1(), "2.3.7"), [f"gpu{i}" for i in range(8)])
    rows = rings.to_records()
    assert_tidy(rows, ["order", "nthreads", "fallback", "shm_hops"])
    assert len(rows) == rings.nchannels and {r["nthreads"] for r in rows} == {128}
    assert {r["shm_hops"] for r in rows} == {0} and not any(r["fallback"] for r in rows)
    assert [r["order"].split() for r in rows] == [list(c) for c in rings.search.channels]


def test_legacy_rings_count_their_shared_memory_hops():
    """DGX-1 GPUs 0 and 5 have no NVLink and sit on different sockets (no PCIe P2P across QPI):
    a ring 0 -> 1 -> 5 -> 0 crosses shared memory once (5 -> 0; 1 -> 5 is NVLink), the ring
    0 -> 5 -> 0 twice."""
    fabric = NcclSystem(topo.dgx1(), "2.3.7")
    assert [r["shm_hops"] for r in legacy_rings(fabric, ["gpu0", "gpu1", "gpu5"]).to_records()] == [1]
    assert [r["shm_hops"] for r in legacy_rings(fabric, ["gpu0", "gpu5"]).to_records()] == [2]


def test_net_route_records_are_its_edges_then_the_port():
    """A DGX-1V GPU reaches its PCIe switch's NIC over two PCIe edges (PIX), then the NIC's
    network port each way."""
    fabric = NcclSystem(topo.build("2xdgx1v"))
    rows = fabric.net_route("h0.gpu0", "h0.mlx5_0").to_records()
    assert_tidy(rows, ["part", "u", "v", "share", "path_type", "inward"])
    assert [(r["part"], r["u"], r["v"]) for r in rows] == [
        ("path", "h0.gpu0", "h0.pcie0"), ("path", "h0.pcie0", "h0.mlx5_0"),
        ("port_out", "h0.mlx5_0", "net.leaf0"), ("port_in", "net.leaf0", "h0.mlx5_0")]
    assert {r["path_type"] for r in rows} == {"PIX"} and all(r["share"] == 1.0 for r in rows)


def test_simulation_link_records_are_its_links_busiest_first():
    from models.predict.simulate import simulate, task_graph

    r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
        {"id": "mm", "op": "compute", "gpu": 0, "seconds": 1e-3},
        {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26, "after": ["mm"]}]}))
    rows = r.link_records()
    assert_tidy(rows, ["u", "v", "capacity_Bps", "mean", "peak"])
    assert [(x["u"], x["v"]) for x in rows] == [tuple(map(str, link.edge)) for link in r.links]
    assert [x["mean"] for x in rows] == sorted((x["mean"] for x in rows), reverse=True)
    # The links fill only while the all_reduce moves data, after the 1 ms kernel: the mean over
    # the step is below the peak by at least the kernel's share of the step.
    for x in rows:
        if not math.isnan(x["peak"]):
            assert x["mean"] <= x["peak"] * (1 - 1e-3 / r.step_time) + 1e-12 and x["peak"] <= 1 + 1e-9
    assert x["capacity_Bps"] == r.links[-1].capacity


#: Frozen dataclasses in a module's __all__ that are not results a user tabulates: inputs and
#: constants (a spec, a profile, a workload), or parts whose rows a parent's to_records() gives.
NOT_RESULTS = {
    # inputs, constants and rules
    "PipelineConstants", "DupRule", "NvlsRules", "PatRules", "NcclProfile", "Column", "ReleaseBehaviour",
    "ChannelGraph", "Communicator", "Collective", "StepParameters", "Parameter", "LinkClass",
    "MeasurementModel", "Calibrated", "Task", "Gpu", "ComputeModel", "Layout", "Failure",
    "Op", "Software", "Transformer", "ConvLayer", "CNN", "MoeTransformer", "GroupedQueryAttention",
    "LatentAttention",
    # a schedule's constants (models.schedules.msccl), and its parts, whose rows Schedule gives
    "Instruction", "RuntimeLimits", "Dialect", "Step", "Threadblock",
    # strategies: NCCL's algorithms (models.engine.nccl.algorithms) and what their latency reads
    "Algorithm", "Ring", "Tree", "Nvls", "NvlsTree", "Pat", "LatencyInputs",
    # the planner's strategies (models.studies.planner.cp_exchange, .ep_overlap, .recomputation, .dispatcher):
    # named in a plan's rows; a dispatcher's input, the expert-parallel group on the fabric (DispatchSite)
    "CpExchange", "RingExchange", "AllToAllExchange", "HierarchicalExchange", "EpOverlap", "BatchOverlap", "DualPipe", "Recompute",
    "Dispatcher", "FlatDispatch", "HierarchicalDispatch", "DispatchSite",
    # a block of DualPipe's program (models.studies.planner.dualpipe) and a layer's kernel times by
    # part (.pair_overlap): inputs of the step graph's builder and of the overlapped pairs' walk
    "PipeOp", "LayerPass",
    # parts: their parent's rows (ChannelSearch: LinkLoad, SearchStep; Tuning: the bandwidth and
    # latency terms; SimulationResult: TaskTiming, LinkUse (link_records); a benchmark's parse:
    # Device, NcclTestsRow, P2PDevice; Check: CheckRow; Plan: Component, Calibration; Sweep: SweepRow;
    # GraphDump: DumpGraph, DumpChannel; GraphComparison: GraphPair, ChannelPair)
    "LinkLoad", "SearchStep", "BandwidthStep", "BusBandwidth", "LatencyTerm", "Latency", "TaskTiming",
    "LinkUse", "Device", "NcclTestsRow", "P2PDevice", "CheckRow", "Component", "Calibration", "SweepRow",
    "DumpGraph", "DumpChannel", "GraphPair", "ChannelPair",
    # P2pSchedule: ScheduleRound (one row per round); P2pLayout: a schedule's inputs
    "ScheduleRound", "P2pLayout",
}


def _result_types():
    import dataclasses
    import importlib
    import pkgutil

    import models

    found = []
    for info in pkgutil.walk_packages(models.__path__, "models."):
        if info.name.startswith("models.present") or info.name.endswith("__main__") or info.ispkg:
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name, None)
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == info.name:
                found.append((info.name, name, value))
    return found


def test_every_result_type_gives_tidy_records():
    """Every frozen dataclass a module of engine, predict or studies exports is a result with
    to_records(), or is listed above as an input or a part (so a new result type cannot ship
    without its rows, and the list cannot keep a name that no longer exists)."""
    found = _result_types()
    missing = [f"{m}.{n}" for m, n, cls in found if n not in NOT_RESULTS and not callable(getattr(cls, "to_records", None))]
    assert not missing, f"result types without to_records(): {missing}"
    assert NOT_RESULTS <= {n for _, n, _ in found}, sorted(NOT_RESULTS - {n for _, n, _ in found})
    assert all(cls.__dataclass_params__.frozen for _, _, cls in found)


def test_sweep_records_are_its_cases_in_rank_order(dgx1v):
    """Failing one link of each of the DGX-1V's NV2 bundles: each case's row holds its busbw and
    time, and the bundle keeps running (status runs, no GPU lost)."""
    from models.studies.sweep import sweep

    result = sweep(dgx1v, "all_reduce", 2**30, fail_each="nvlink")
    rows = result.to_records()
    assert_tidy(rows, ["rank", "failed", "busbw_Bps", "time_s", "loss", "status", "gpus_lost"])
    assert [r["rank"] for r in rows] == list(range(1, len(result.rows) + 1))
    assert [(r["busbw_Bps"], r["time_s"]) for r in rows] == [(x.busbw, x.time) for x in result.rows]
    assert {r["status"] for r in rows} == {"runs"} and {r["gpus_lost"] for r in rows} == {0}


#: Fields of engine, predict and studies classes named as words are (reason, note, detail,
#: where, warnings, ...) that do hold text, and why that text is not a sentence a model built.
WORDS_KEPT = {
    ("NcclProfile", "notes"): "where each constant comes from (citations, with the constants)",
    ("NcclRelease", "text"): "the release as the user wrote it",
    ("Caveat", "text"): "a note read back from a calibration file (CaveatCode.READ)",
    ("Software", "description"): "a software stack's description, a constant of its table",
    ("CpExchange", "label"): "the exchange's mark in a layout's label (Layout.label: a2a), a code",
    ("AllToAllExchange", "label"): "the same, its value (a2a)",
    ("HierarchicalExchange", "label"): "the same, from its sizes (a2p4)",
}
_WORDS_NAME = re.compile(r"(reason|reasons|note|notes|detail|details|where|warning|warnings|skipped|explanation"
                         r"|text|message|description|why|label)$")


def test_result_fields_named_as_words_hold_codes_and_numbers():
    """Results are numbers: a field named reason, note, detail, where, warnings, ... of a class
    below models.present holds a code or a record of numbers (models.present words it), unless
    :data:`WORDS_KEPT` says why it is text (so a sentence cannot come back into a result)."""
    import ast
    from pathlib import Path

    import models

    root = Path(models.__file__).parent
    found = {}
    for path in root.rglob("*.py"):
        if "present" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for field in node.body:
                    if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) \
                            and _WORDS_NAME.search(field.target.id):
                        found[node.name, field.target.id] = ast.unparse(field.annotation)
    text = {key: kind for key, kind in found.items() if re.fullmatch(r"(str|tuple|tuple\[str.*\])( \| None)?", kind)}
    assert set(text) == set(WORDS_KEPT), sorted(set(text) ^ set(WORDS_KEPT))
    assert ("Tuning", "why") in found and ("Plan", "timing_why") in found  # the scan sees the fields
