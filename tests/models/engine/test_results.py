"""Results are numbers: every result type's ``to_records()`` gives tidy rows (models.engine.results),
and the methods whose words moved to models.present say where they went."""

from __future__ import annotations

import math

import numpy as np
import pytest

import topo
from models.engine.results import Moved, tidy_records
from models.predict.collectives import CollectiveEstimate, estimate, subsets
from models.predict.measure import DEFAULT, Parameter, measured
from models.predict.network import NetworkLoad
from models.predict.nicpath import NicPath
from models.predict.p2p import P2PReport, P2PResult, p2p_path, p2p_report
from models.studies.benchmarks import read_nccl_tests
from models.studies.bounds import Bound, Cut, bound, subset_bounds
from models.studies.calibration import Calibration, Check, check
from models.studies.packing import Tree, TreePacking
from models.studies.planner import Plan, Search, gpus_ranking, plan, search
from topo.errors import DgxTopoError
from topo.select import format_gpu_ids
from tests.conftest import DATA

SCALARS = (bool, int, float, str, type(None))


def assert_tidy(rows, keys=None):
    """Flat rows of Python scalars, every row with the same keys in the same order."""
    assert isinstance(rows, list) and rows
    first = list(rows[0])
    for row in rows:
        assert isinstance(row, dict) and list(row) == first
        assert all(isinstance(v, SCALARS) for v in row.values()), row
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


def test_collective_estimate_records_are_its_arrays(sweep_estimate):
    e = sweep_estimate
    rows = e.to_records()
    assert_tidy(rows, {"nbytes", "time_s", "algbw_Bps", "busbw_Bps", "algorithm", "protocol", "nchannels"})
    assert len(rows) == 3 and [r["gpus"] for r in rows] == ["0-3"] * 3
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
    assert [r["gpus"] for r in rows] == [format_gpu_ids(r.gpus) for r in ranking]
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
    assert row["gpus"] == "0-3" and row["bound_busbw_Bps"] == b.bound_busbw and row["ratio"] == b.ratio
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


@pytest.mark.parametrize("kind, name, new", [
    (CollectiveEstimate, "explain", "models.present.explain.explain"),
    (P2PResult, "explain", "models.present.explain.explain"),
    (P2PReport, "to_dict", "models.present.json_shapes.p2p_json"),
    (Bound, "explain", "models.present.explain.explain"), (Bound, "format", "bound_summary"),
    (Bound, "to_json", "json_shapes.bound_json"), (Cut, "describe", "describe_cut"),
    (TreePacking, "describe", "describe_packing"), (Tree, "to_json", "tree_json"),
    (Check, "to_json", "check_json"), (Check, "format", "check_table"), (Check, "explain", "explain"),
    (Calibration, "format", "calibration_table"),
    (NetworkLoad, "describe", "describe_network_load"), (Parameter, "describe", "describe_parameter"),
    (NicPath, "describe", "describe_nic_path"),
])
def test_moved_words_name_their_new_place(kind, name, new):
    assert isinstance(kind.__dict__[name], Moved)
    with pytest.raises(AttributeError, match=rf"{kind.__name__}\.{name} moved to .*{new}.* in dgx-topo 0\.3"):
        getattr(kind, name)


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
    assert off["enabled"] is False and off["busbw_Bps"] is None and "Ring only" in off["reason"]

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
