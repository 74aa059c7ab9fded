"""What-if failures and failure sweeps (issue 13 items 4 and 5): models.studies.whatif, whatif_plot.

Known answers come from the fabrics' wiring (NVLink counts per bundle, 6 NVSwitches per DGX-2
baseboard) and from NCCL's ring count: each DGX-1V/DGX-2 GPU feeds its 6 NVLinks to 6 rings,
so losing any one link of a GPU leaves 5 rings, 5/6 of the busbw.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models
import topo
from models.present.json_shapes import sweep_json
from models.present.sweep_text import format_sweep, sweep_row_note, terminal_progress
from models.studies import whatif
from models.engine.nccltests import UnknownCollectiveError
from topo.errors import LimitError
from models.studies.sweep import ExecutorSpecError, SweepSizeError, SweepStatus, sweep
from models.studies.whatif import (FabricDisconnectedError, Failure, FailureSpecError, WhatIfError,
                                   apply_failures, parse_degrade, parse_failure, parse_failures)

GiB = 2**30
DGX1V = topo.dgx1v()
DGX2 = topo.dgx2()


@pytest.fixture(scope="module")
def dgx1v_nvlink():
    return sweep(DGX1V, "all_reduce", GiB, fail_each="nvlink")


@pytest.fixture(scope="module")
def dgx2_nvswitch():
    return sweep(DGX2, "all_reduce", GiB, fail_each="nvswitch", executor="inline")


# ------------------------------------------------------------------------------ specs
@pytest.mark.parametrize("text, expected", [
    ("gpu0-gpu3", Failure(("gpu0", "gpu3"))),
    (" gpu0-gpu3:1 ", Failure(("gpu0", "gpu3"), 1)),
    ("nvswitch3", Failure(("nvswitch3",))),
    ("h1.mlx5_1", Failure(("h1.mlx5_1",))),
])
def test_failure_specs_parse_without_a_fabric(text, expected):
    assert parse_failure(text) == expected
    assert parse_failure(str(expected)) == expected  # str() writes the spec back


def test_a_degrade_keeps_its_factor_and_prints_back():
    d = parse_degrade("gpu0-gpu3=0.5", DGX1V)
    assert (d.nodes, d.count, d.factor, str(d)) == (("gpu0", "gpu3"), None, 0.5, "gpu0-gpu3=0.5")


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("gpu0-", "not a node name"),
    ("gpu0-gpu3:0", "at least 1"),
    ("gpu0-gpu3:x", "link count 'x'"),
    ("gpu0-gpu3:3", "has 2, expected 1 to 2"),
    ("gpu0-gpu5", "not directly linked"),
    ("gpu9", "'gpu9'"),
    ("gpu0-gpu9", "'gpu9'"),
    ("nvswitch0", "'nvswitch0'"),
    ("gpu0:1", "link count to the part"),
    ("gpu0-gpu3=0.5", "degrade"),
    ("gpu 0", "not a node name"),
    (3, "must be text"),
])
def test_bad_failure_specs_name_what_was_received(text, words):
    with pytest.raises(FailureSpecError, match="expected|must be|lacks|degrade") as err:
        parse_failure(text, DGX1V)
    assert words in str(err.value)


@pytest.mark.parametrize("text, words", [
    ("gpu0-gpu3=1.5", "out of range"),
    ("gpu0-gpu3=0", "give the failure U-V instead"),
    ("gpu0-gpu3=-1", "'-1'"),
    ("gpu0-gpu3=nan", "'nan'"),
    ("gpu0-gpu3", "no '=FACTOR'"),
    ("gpu3=0.5", "names no link bundle"),
    ("gpu0-gpu5=0.5", "not directly linked"),
    ("=0.5", "lacks the link"),
])
def test_bad_degrades_are_refused(text, words):
    with pytest.raises(FailureSpecError) as err:
        parse_degrade(text, DGX1V)
    assert words in str(err.value)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="gpu0123nvswitch_-:=.,5 mlx", max_size=24))
def test_parsers_never_raise_anything_but_their_error(text):
    for parse in (parse_failure, parse_degrade, parse_failures):
        for fabric in (None, DGX1V):
            try:
                result = parse(text, fabric)
            except FailureSpecError:
                continue
            for f in (result if isinstance(result, tuple) else (result,)):
                assert isinstance(f, Failure) and all(isinstance(n, str) and n for n in f.nodes)
                if fabric is not None:
                    assert all(n in fabric for n in f.nodes)


# ------------------------------------------------------------------------------ applying
def test_failing_one_link_of_an_nv2_bundle_leaves_nv1_and_the_input_untouched():
    w = apply_failures(DGX1V, "gpu0-gpu3:1")
    for u, v in (("gpu0", "gpu3"), ("gpu3", "gpu0")):
        assert w.graph.edges[u, v]["links"] == 1
        assert w.graph.edges[u, v]["bandwidth"] == DGX1V.edges[u, v]["bandwidth"] / 2
    assert DGX1V.edges["gpu0", "gpu3"]["links"] == 2


def test_a_whole_bundle_fails_and_a_degrade_scales_the_bandwidth():
    w = apply_failures(DGX1V, fail=["gpu0-gpu3"], degrade="gpu1-gpu2=0.25")
    assert not w.graph.has_edge("gpu0", "gpu3") and not w.graph.has_edge("gpu3", "gpu0")
    assert w.graph.edges["gpu2", "gpu1"]["bandwidth"] == DGX1V.edges["gpu2", "gpu1"]["bandwidth"] / 4
    assert w.graph.edges["gpu2", "gpu1"]["links"] == 2
    assert [str(c) for c in w.changes] == ["gpu1-gpu2=0.25", "gpu0-gpu3"]


def test_losing_one_of_the_six_switches_of_a_board_leaves_5_links_per_gpu():
    H = apply_failures(DGX2, "nvswitch3").graph
    links = {g: sum(d["links"] for _, _, d in H.out_edges(g, data=True) if d["kind"] == "nvlink")
             for g in topo.gpus(H)}
    board = {g: DGX2.nodes[g]["baseboard"] for g in topo.gpus(DGX2)}
    assert {links[g] for g in links if board[g] == DGX2.nodes["nvswitch3"]["baseboard"]} == {5}
    assert {links[g] for g in links if board[g] != DGX2.nodes["nvswitch3"]["baseboard"]} == {6}


def test_a_failed_gpu_leaves_the_job_and_the_ids_after_it_move_down():
    w = apply_failures(DGX1V, "gpu2")
    assert w.lost_gpus == ("gpu2",)
    assert w.job_gpus() == tuple(range(7))
    assert w.job_gpus("1-4") == (1, 2, 3)  # gpu1, gpu3, gpu4 are now ids 1, 2, 3
    assert topo.gpus(w.graph)[2] == "gpu3"
    with pytest.raises(WhatIfError, match="every GPU of the job failed"):
        w.job_gpus([2])


def test_a_failure_that_cuts_a_gpu_off_disconnects_the_fabric():
    with pytest.raises(FabricDisconnectedError, match="pcie0 disconnects the fabric: GPU"):
        apply_failures(DGX1V, "pcie0")


@pytest.mark.parametrize("fail, degrade, words", [
    (["gpu0-gpu3", "gpu3-gpu0:1"], (), "changed twice"),
    (["gpu0-gpu3:1"], ["gpu0-gpu3=0.5"], "changed twice"),
    (["gpu0-gpu3", "gpu3"], (), "links of a failed part"),
    (["gpu0-gpu5"], (), "not directly linked"),
])
def test_conflicting_changes_are_refused(fail, degrade, words):
    with pytest.raises(FailureSpecError, match=words):
        apply_failures(DGX1V, fail, degrade)


# ------------------------------------------------------------------------------ sweeps
def test_dgx1v_an_nv2_link_halves_its_pair_and_an_nv1_link_leaves_pcie(dgx1v_nvlink):
    rows = {r.label: r for r in dgx1v_nvlink.rows}
    assert len(rows) == 16  # 8 NV2 and 8 NV1 bundles
    nv2, nv1 = rows["gpu0-gpu3:1"], rows["gpu0-gpu2:1"]
    # Either failure costs a GPU one of its six NVLinks, so NCCL's rings: 6 channels -> 5.
    for row in (nv2, nv1):
        assert row.busbw == pytest.approx(dgx1v_nvlink.baseline_busbw * 5 / 6, rel=1e-3)
        assert row.loss == pytest.approx(1 / 6, rel=1e-2)
    # P2P: the NV2 pair keeps one NVLink (half), the NV1 pair falls back to PCIe.
    assert nv2.p2p_pair == ("gpu0", "gpu3") and nv2.p2p_loss == pytest.approx(0.5)
    assert nv1.p2p_pair == ("gpu0", "gpu2") and nv1.p2p_loss > 0.5
    p2p = models.p2p_matrix(apply_failures(DGX1V, "gpu0-gpu2").graph)
    assert nv1.p2p == pytest.approx(p2p[0, 2])
    assert dgx1v_nvlink.evaluations < 16  # the cube-mesh's automorphisms merge cases


def test_rows_are_ranked_and_no_failure_raises_busbw(dgx1v_nvlink, dgx2_nvswitch):
    for s in (dgx1v_nvlink, dgx2_nvswitch):
        losses = [r.loss for r in s.rows]
        assert losses == sorted(losses, reverse=True)
        assert all(r.busbw <= s.baseline_busbw * (1 + 1e-12) and r.loss >= -1e-12 for r in s.rows)
        assert all(r.p2p_loss is None or r.p2p_loss >= 0 for r in s.rows)


def test_dgx2_every_nvswitch_failure_costs_the_same(dgx2_nvswitch):
    s = dgx2_nvswitch
    assert len(s.rows) == 12 and s.evaluations <= 2
    assert len({(r.busbw, r.time) for r in s.rows}) == 1
    assert s.rows[0].loss == pytest.approx(1 / 6, rel=1e-2)  # 5 links per GPU of the board
    assert [r.label for r in s.rows] == [f"nvswitch{i}" for i in range(12)]  # ties keep order


def test_symmetry_classes_give_what_computing_every_case_gives():
    G = topo.dgx1()
    a = sweep(G, "all_reduce", 64 * 2**20, fail_each="nvlink", executor="inline")
    b = sweep(G, "all_reduce", 64 * 2**20, fail_each="nvlink", executor="inline", symmetry=False)
    assert b.evaluations == 16 and a.evaluations < 8
    strip = lambda s: [(r.failed, r.busbw, r.time, r.p2p_pair, r.p2p, r.loss) for r in s.rows]  # noqa: E731
    assert strip(a) == strip(b)


def test_a_gpu_failure_runs_the_job_on_the_others():
    s = sweep(DGX1V, "all_reduce", GiB, fail_each="gpu", gpus="0-3", executor="inline")
    assert [r.label for r in sorted(s.rows, key=lambda r: r.label)] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert s.gpus == (0, 1, 2, 3)
    for r in s.rows:
        assert r.nranks == 3 and r.gpus_lost == 1 and r.status is SweepStatus.RUNS and r.cause == ""
        assert sweep_row_note(r) == "the job runs on 3 GPUs"
        others = [i for i in range(4) if f"gpu{i}" != r.label]
        assert r.busbw == models.estimate(DGX1V, "all_reduce", GiB, others).busbw


def test_a_disconnecting_failure_is_a_row_with_no_bandwidth():
    """Two DGX-1V joined by a network, host 0 left with one NIC: failing it cuts host 0 off."""
    G = topo.build("2xdgx1v")
    G = topo.remove_nodes(G, ["h0.mlx5_1", "h0.mlx5_2", "h0.mlx5_3"])
    s = sweep(G, "sendrecv", 2**20, fail_each="nic", gpus=[0, 8], executor="inline")
    worst = s.rows[0]
    assert worst.label == "h0.mlx5_0" and worst.loss == 1.0 and worst.busbw == 0.0
    assert math.isinf(worst.time) and worst.status is SweepStatus.DISCONNECTS_FABRIC and worst.cause
    assert sweep_row_note(worst) == f"disconnects the fabric: {worst.cause}"
    assert sweep_json(s)["rows"][0]["time_us"] is None
    assert all(r.loss < 1 for r in s.rows[1:])


def test_json_has_exactly_the_documented_shape(dgx2_nvswitch):
    data = json.loads(json.dumps(sweep_json(dgx2_nvswitch), allow_nan=False))
    assert data == sweep_json(dgx2_nvswitch) and data["count"] == len(dgx2_nvswitch.rows)
    assert set(data) == {"baseline", "count", "rows"}
    assert len(sweep_json(dgx2_nvswitch, top=1)["rows"]) == 1
    assert set(data["baseline"]) == {"busbw_gbps", "time_us"}
    assert all(set(row) == {"failed", "busbw_gbps", "time_us", "loss"} for row in data["rows"])
    assert data["baseline"]["busbw_gbps"] == dgx2_nvswitch.baseline_busbw / 1e9
    assert data["rows"][0]["time_us"] == pytest.approx(dgx2_nvswitch.rows[0].time * 1e6)


def test_the_table_lists_every_row_and_says_what_failed(dgx2_nvswitch):
    text = format_sweep(dgx2_nvswitch)
    assert "failing each NVSwitch: 12 cases" in text
    assert sum(line.split()[1].startswith("nvswitch") for line in text.splitlines()[3:]) == 12
    assert format_sweep(dgx2_nvswitch, top=3).endswith("... 9 more")


def test_pairs_fail_two_components_and_name_both():
    s = sweep(DGX1V, "all_reduce", GiB, fail_each="nic", pairs=True, executor="inline")
    assert len(s.rows) == math.comb(4, 2)
    assert all(len(r.failed) == 2 and parse_failures(r.label, DGX1V) == r.failed for r in s.rows)


def test_a_sweep_beyond_its_case_limit_is_refused_before_any_work():
    with pytest.raises(SweepSizeError, match=r"5,151 failure cases .* max_cases=2,000") as refused:
        sweep(DGX2, "all_reduce", GiB, fail_each="nvlink", pairs=True)
    # one limit type for every wing (topo.errors.LimitError), what-if errors all the same
    assert isinstance(refused.value, LimitError) and isinstance(refused.value, WhatIfError)
    assert (refused.value.keyword, refused.value.size, refused.value.limit) == ("max_cases", 5151, 2000)
    with pytest.raises(SweepSizeError, match="max_cases=11"):
        sweep(DGX2, "all_reduce", GiB, fail_each="nvswitch", max_cases=11)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(fail_each="pcie"), WhatIfError, "expected one of nvlink, nvswitch, nic, gpu"),
    (dict(fail_each="nvswitch"), WhatIfError, "has no nvswitch"),
    (dict(executor="threads"), ExecutorSpecError, "'dask://HOST:PORT'"),
    (dict(progress=5), WhatIfError, "progress=5"),
    (dict(max_cases=0), WhatIfError, "max_cases"),
    (dict(pairs="yes"), WhatIfError, "pairs must be"),
    (dict(gpus="0-9"), topo.GpuSelectionError, "out of range"),
])
def test_bad_sweep_arguments_are_typed_errors(kwargs, error, words):
    with pytest.raises(error, match=words):
        sweep(DGX1V, "all_reduce", GiB, **kwargs)


def test_bad_collectives_and_sizes_are_refused():
    with pytest.raises(UnknownCollectiveError):
        sweep(DGX1V, "allreduce", GiB)
    with pytest.raises(topo.SizeError, match="one message size"):
        sweep(DGX1V, "all_reduce", [GiB, 2 * GiB])


def test_dask_without_distributed_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(ExecutorSpecError, match=r"dgx-topo\[dask\]"):
        sweep(DGX1V, "all_reduce", GiB, executor="dask://127.0.0.1:8786")


# ------------------------------------------------------------------------------ executors
def _strip(s):
    return [(r.failed, r.busbw, r.time, r.p2p_pair, r.p2p, r.loss, r.status, r.cause, r.gpus_lost) for r in s.rows]


def test_progress_reaches_its_total_as_a_callback_and_as_a_bar():
    calls = []
    s = sweep(DGX1V, "all_reduce", GiB, fail_each="nic", executor="inline",
              progress=lambda done, total: calls.append((done, total)))
    assert [d for d, _ in calls] == list(range(1, len(calls) + 1))
    assert calls[-1][0] == calls[-1][1] == len(s.rows) + s.evaluations

    class Bar:
        total = None
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    sweep(DGX1V, "all_reduce", GiB, fail_each="nic", executor="inline", progress=bar)
    assert bar.n == bar.total == len(s.rows) + s.evaluations


def test_terminal_progress_draws_only_on_a_terminal():
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    piped, tty = io.StringIO(), Tty()
    for stream in (piped, tty):
        show = terminal_progress(stream, label="sweep")
        show(1, 2)
        show(2, 2)
    assert piped.getvalue() == "" and tty.getvalue() == "\rsweep: 1/2\rsweep: 2/2\n"


def test_results_are_identical_in_process_and_on_a_process_pool(dgx2_nvswitch):
    with ProcessPoolExecutor(max_workers=2) as pool:
        on_pool = sweep(DGX2, "all_reduce", GiB, fail_each="nvswitch", executor=pool)
    assert on_pool == dgx2_nvswitch


def test_results_are_identical_on_a_dask_cluster(dgx2_nvswitch, tmp_path):
    distributed = pytest.importorskip("distributed")
    dask_config = pytest.importorskip("dask.config")
    # Dask's workers keep a scratch space (lock files) in its temporary directory: the test's own.
    with dask_config.set({"temporary-directory": str(tmp_path)}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp", host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster:
        with distributed.Client(cluster) as client:
            on_dask = sweep(DGX2, "all_reduce", GiB, fail_each="nvswitch",
                            executor=client.get_executor())
        port = cluster.scheduler_address.rsplit(":", 1)[1]
        by_address = sweep(DGX2, "all_reduce", GiB, fail_each="nvswitch",
                           executor=f"dask://127.0.0.1:{port}")
    assert on_dask == dgx2_nvswitch
    assert _strip(by_address) == _strip(dgx2_nvswitch)


# ------------------------------------------------------------------------------ property
@functools.lru_cache(maxsize=1)
def _dgx2_baseline():
    return models.estimate(DGX2, "all_reduce", GiB).busbw, models.p2p_matrix(DGX2)


@settings(max_examples=3, deadline=None)
@given(st.sets(st.sampled_from([(g, f"nvswitch{s}") for g in range(8) for s in range(6)]),
               min_size=1, max_size=3))
def test_failing_links_never_raises_busbw_or_p2p(links):
    w = apply_failures(DGX2, [f"gpu{g}-{s}" for g, s in links])
    busbw, p2p = _dgx2_baseline()
    assert models.estimate(w.graph, "all_reduce", GiB).busbw <= busbw * (1 + 1e-12)
    assert np.all(models.p2p_matrix(w.graph) <= p2p * (1 + 1e-12))


# ------------------------------------------------------------------------------ figures
def test_the_fabric_figure_colours_each_bundle_by_its_loss(dgx1v_nvlink):
    from models.present.whatif_plot import sweep_fabric_figure, sweep_figure
    fig = sweep_fabric_figure(DGX1V, dgx1v_nvlink)
    assert fig.layout.title.text.startswith("DGX-1V: busbw loss of all_reduce 1 GiB")
    bar = [t for t in fig.data if getattr(t.marker, "colorbar", None) is not None
           and t.marker.colorbar.title.text == "busbw loss (%)"]
    assert bar and bar[0].marker.cmax == pytest.approx(100 * dgx1v_nvlink.rows[0].loss)
    chart = sweep_figure(dgx1v_nvlink, top=5)
    assert list(chart.data[0].y) == [r.label for r in dgx1v_nvlink.rows[:5]]
    assert chart.data[0].x[0] == pytest.approx(100 * dgx1v_nvlink.rows[0].loss)


def test_figures_refuse_another_fabric_or_no_sweep(dgx2_nvswitch):
    from models.present.whatif_plot import sweep_fabric_figure, sweep_figure
    with pytest.raises(topo.DgxTopoError, match="nvswitch0, which is not in DGX-1V"):
        sweep_fabric_figure(DGX1V, dgx2_nvswitch)
    with pytest.raises(topo.DgxTopoError, match="expected a models.studies.sweep.Sweep"):
        sweep_figure([1, 2])


def test_whatif_is_in_the_models_namespace():
    assert models.sweep is sweep and models.apply_failures is whatif.apply_failures
