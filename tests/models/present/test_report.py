"""The HTML report: content as data, self-contained, atomic writing, CLI errors, and a real
headless browser (Debian's chromium, skipped when absent) that opens it offline."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import topo
from models.engine.nccl.algorithms import NVLS, RING
from models.present import output as output_module
from models.studies.benchmarks import read_nccl_tests
from models.studies.calibration import check
from models.present.cli import main
from models.present.output import OutputPathError, check_output_path
from models.present.report import analysis as analysis_module
from models.studies import survey as survey_module
from models.present.report import shipped as shipped_module
from models.present.report import write as write_module
from models.present.report import (MEASURED_DATA, analyse_report, measured_data, measurement_comparison,
                           report_fabrics, report_html, summary_rows, write_check_html,
                           write_compare_figure, write_report)
from models.studies.bounds import bound, subset_bounds
from models.present.bounds_plot import ratio_by_size_figure
from models.present.plan_plot import step_time_figure
from models.studies.planner import gpus_ranking
from models.present.report import render_report
from models.present.report.analysis import ReportAnalysis, generations, worst_sets
from models.studies.survey import BOUND_RELAY, BOUND_SIZE, BOUND_WORST, TRAINING_TP, bound_edge_kinds, set_classes
from models.engine.fabric import prepare
from tests.conftest import DATA
from models.present.explain import describe_cut


_ANALYSIS = {}


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """The default report (all built-in systems), written once for the module; its analysis
    is kept for :func:`all_analysis`."""
    path = tmp_path_factory.mktemp("report") / "report.html"
    real = write_module.analyse_report

    def keep(*args, **kwargs):
        _ANALYSIS["all"] = real(*args, **kwargs)
        return _ANALYSIS["all"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(write_module, "analyse_report", keep)
        written = write_report(path)
    return written, path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def all_analysis(full_report):
    """The analysis behind the default report."""
    return _ANALYSIS["all"]


def _figure_ids(text) -> list:
    return re.findall(r"<figure class='plot' data-figure='([^']+)'", text)


# ------------------------------------------------------------------------------ content
def test_summary_rows_known_answers(all_analysis):
    # The rows of the default report (summary_rows() computes the same; its doctest runs it).
    rows = {a.row.system: a.row for a in all_analysis.systems}
    assert list(rows) == list(topo.SYSTEMS)
    assert (rows["dgx1"].gpus, rows["dgx1v"].gpus, rows["dgx2"].gpus) == (8, 8, 16)
    assert rows["dgx2"].bisection == pytest.approx(1.2e12)
    # 6 rings x 20 GB/s on a DGX-1V and on any DGX-2 set; 4 x 18 on the P100 DGX-1.
    assert rows["dgx1v"].busbw_8 == pytest.approx(rows["dgx2"].busbw_8)
    assert rows["dgx1"].busbw_8 < rows["dgx1v"].busbw_8 < 150e9  # below the 6 NVLinks x 25 GB/s line rate
    assert rows["dgx1"].busbw_16 is None and rows["dgx1v"].busbw_16 is None
    assert rows["dgx2"].busbw_16 is not None
    # DGX-1V: a doubled NVLink pair is best, a pair without NVLink worst; DGX-2: all equal.
    assert rows["dgx1v"].best_pair == (0, 3) and rows["dgx1v"].worst_pair == (0, 5)
    assert rows["dgx1v"].best_busbw > 2 * rows["dgx1v"].worst_busbw
    assert rows["dgx2"].best_busbw == pytest.approx(rows["dgx2"].worst_busbw)
    assert rows["dgx2"].best_count == 120


def test_report_shows_every_system_and_figure(full_report):
    written, text = full_report
    assert written.systems == tuple(topo.build(name).graph["name"] for name in topo.SYSTEMS)
    ids = _figure_ids(text)
    shared = ["curves-busbw", "curves-time", "generations-nvlink", "generations-busbw", "generations-time",
              "generations-nvls", "compare-busbw", "compare-time"]
    measured = [f"measured-{c.replace('_', '-')}" for c in measured_data("dgx2")["collectives"]]
    measured += ["measured-p2p-bandwidth", "measured-p2p-latency"]
    measured += ["bounds-ratio", "schedule-busbw", "schedule-trees", "training-dgx2-step", "training-dgx2-memory", "training-2xdgx1v-step",
                 "training-2xdgx1v-memory", "moe-step", "moe-memory", "simulated-dgxa100"]
    assert ids[:len(shared) + len(measured)] == shared + measured
    per_system = 0
    for system in topo.SYSTEMS:
        # GPU-by-GPU matrices up to MAX_MATRIX_GPUS (not a GB200 NVL72's 72).
        matrices = len(topo.gpus(topo.build(system))) <= survey_module.MAX_MATRIX_GPUS
        expected = [f"{system}-fabric", f"{system}-channels"] + (
            [f"{system}-p2p", f"{system}-latency", f"{system}-pairs"] if matrices else [])
        assert [i for i in ids if i.startswith(f"{system}-")] == expected
        per_system += len(expected)
    assert len(ids) == len(shared) + len(measured) + per_system
    # The seed comparison of issue 6: one DGX-2 against two DGX-1V, 16 GPUs each.
    # 120/48 = 2.50 in NCCL's figures (6 x 20 GB/s NVSwitch rings against 4 NICs x 12), widened
    # by what NVLink 2 (x1.02) and the EDR NICs' paths (x0.797: PCIe 3.0 DMA, 9.56 GB/s each way
    # as measured on a DGX-1V, over NCCL's 12 for the PCIe link) achieve over NCCL's figures.
    assert "One DGX-2 against two DGX-1V" in text and "2.50x in NCCL's own figures" in text
    assert "3.20x faster" in text and "widens it" in text
    assert text.count("class=\"plotly-graph-div\"") == len(ids)
    for heading in ("Summary", "Generations", "Model vs measurement", "NCCL against the optimum",
                    "The packing as a schedule", "Training step",
                    "DeepSeek-V3 on 256 GPUs: GB200 NVL72 vs DGX B200 vs DGX H100", "How the model works",
                    "How it was validated"):
        assert f">{heading}</h2>" in text
    assert "n/a" in text  # 16-GPU column of the 8-GPU systems
    assert "GB/s" in text


def _page_figures(text) -> dict:
    """Figure id -> {"data", "layout"} of every figure of a page, as plotly.js receives them."""
    decoder, out = json.JSONDecoder(), {}
    for m in re.finditer(r'Plotly\.newPlot\(\s*"([^"]+)",\s*', text):
        data, end = decoder.raw_decode(text, m.end())
        start = text.index(",", end) + 1
        while text[start].isspace():
            start += 1
        layout, _ = decoder.raw_decode(text, start)
        out[m.group(1)] = {"data": data, "layout": layout}
    return out


def test_every_figure_passes_plotlys_checks(full_report):
    """The figures are drawn unchecked (topo.plot_style.build_figure): each one, as the page
    holds it, is a figure plotly accepts property by property."""
    import plotly.graph_objects as go

    _, text = full_report
    figures = _page_figures(text)
    assert len(figures) == len(_figure_ids(text))
    for slug, figure in figures.items():
        checked = go.Figure(figure)  # raises ValueError naming any property plotly does not know
        assert len(checked.data) == len(figure["data"]), slug


def test_report_is_self_contained(full_report):
    written, text = full_report
    assert written.nbytes == len(text.encode("utf-8"))
    assert not re.search(r"<script[^>]*\ssrc=", text, re.I)  # nothing loaded from anywhere
    assert not re.search(r"<link[^>]*href=[\"']https?:", text, re.I)
    # The plotly.js source itself is in the page.
    from plotly.offline import get_plotlyjs
    assert get_plotlyjs()[:2000] in text


def test_the_report_builds_no_plotly_figure_object(monkeypatch):
    """Every figure of the report is written from its plain dict (models.present.page.figure_html):
    plotly's figure classes and their validators, the larger part of plotly's cost, are never used."""
    from _plotly_utils.basevalidators import BaseValidator
    from plotly.basedatatypes import BaseFigure

    def refuse(*args, **kwargs):
        raise AssertionError("the report built a plotly object")
    monkeypatch.setattr(BaseFigure, "__init__", refuse)
    monkeypatch.setattr(BaseValidator, "__init__", refuse)
    text = report_html(["dgx2", "dgx1v"])
    ids = _figure_ids(text)
    assert {"generations-nvlink", "compare-busbw", "measured-p2p-bandwidth", "bounds-ratio", "training-dgx2-step",
            "training-dgx2-memory", "dgx2-fabric", "dgx2-channels", "dgx2-p2p", "dgx2-latency",
            "dgx2-pairs", "measured-all-reduce"} <= set(ids) and any(i.startswith("simulated-") for i in ids), ids


def test_the_shipped_drawings_are_the_page_drawn(full_report, all_analysis):
    """The built-in systems' fabric and channel figures come from the shipped analysis: the page
    drawn without them is the same, character for character."""
    import dataclasses

    assert all(drawn is not None for drawn in all_analysis.drawings)
    assert render_report(dataclasses.replace(all_analysis, drawings=())) == full_report[1]


def test_report_is_deterministic():
    text = report_html(["dgx1v"])
    assert text == report_html(["dgx1v"])
    # One system of 8 GPUs: no generations to compare; a DGX-1V: its measured P2P row.
    assert "id='generations'" not in text and "p2pBandwidthLatencyTest on a DGX-1V" in text
    assert "nccl-tests on 12 GPUs of a DGX-2" not in text


def test_a_system_the_model_does_not_cover_gets_a_note(monkeypatch):
    """A model error for a system becomes a note and n/a, not a failed report (the system's
    analysis computed with the error, the page drawn from it; no other section computed)."""
    def refuse(*args, **kwargs):
        raise topo.DgxTopoError("not modelled for this test")
    monkeypatch.setattr(survey_module, "pairwise", refuse)
    analysed = analysis_module._analysed(prepare(topo.dgx1()))
    assert analysed.pairs is None and "pairs: not modelled for this test" in analysed.row.notes
    text = render_report(ReportAnalysis((analysed,), None))
    assert "pairs: not modelled for this test" in text
    assert "2-GPU all_reduce matrix</b>: not available; not modelled for this test" in text
    assert "dgx1-pairs" not in _figure_ids(text)


def test_unknown_system_and_duplicates():
    with pytest.raises(topo.UnknownSystemError, match="unknown system 'dgx9'"):
        summary_rows(["dgx1", "dgx9"])
    assert [r.system for r in summary_rows(["DGX-1V", "dgx1v"])] == ["dgx1v"]


# --------------------------------------------------------------------------- generations
def test_generations_as_data(all_analysis):
    gens = {g.system: g for g in all_analysis.generations}
    # Every built-in system has 8 GPUs or more on one host or in one NVLink domain (the NVL72 rack).
    assert list(gens) == list(topo.SYSTEMS)
    # Hardware facts: NVLink per GPU 80 (P100, 4 x 20), 150 (V100, 6 x 25), 300 (A100, 12 x 25),
    # 450 (H100, 18 x 25), 900 GB/s (B200, 18 x 50) per direction.
    assert {k: round(g.nvlink_per_gpu / 1e9) for k, g in gens.items()} == {
        "dgx1": 80, "dgx1v": 150, "dgx2": 150, "dgxa100": 300, "dgxh100": 450, "dgxh200": 450, "dgxh800": 200,
        "dgxb200": 900, "dgxb300": 900, "gb200nvl72": 900, "gb300nvl72": 900}
    # GPUs 0-7 of an NVL72 are two trays, one NCCL node over NVLink: a DGX B200's 8 GPUs in NCCL's
    # figures (18 x 40.1 GB/s to the NVSwitch, NVLS); the rack's bisection is 36 x 900 GB/s.
    assert gens["gb200nvl72"].auto.nranks == 8 and gens["gb200nvl72"].bisection == pytest.approx(32.4e12)
    assert np.allclose(gens["gb200nvl72"].auto.busbw, gens["dgxb200"].auto.busbw)
    assert [gens[k].nvlink for k in ("dgx1", "dgx2", "dgxa100", "dgxh100", "dgxb200")] == [
        "nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5"]
    assert gens["dgx2"].bisection == pytest.approx(1.2e12)
    # The coinciding curves the page must keep visible.
    assert np.allclose(gens["dgx1v"].auto.busbw, gens["dgx2"].auto.busbw)
    assert np.allclose(gens["dgxh100"].auto.busbw, gens["dgxh200"].auto.busbw)
    assert gens["dgx2"].auto.nranks == 8
    # Each generation at least as fast as the one before at 1 GiB (ring, NCCL's choice).
    order = ["dgx1", "dgx1v", "dgxa100", "dgxh100", "dgxb200"]
    busbw = [gens[k].busbw("auto") for k in order]
    assert busbw == sorted(busbw) and gens["dgx1v"].busbw("ring") == pytest.approx(gens["dgx1v"].busbw("auto"))
    for g in gens.values():  # a ring never moves more than a GPU can inject (NVLS may: in-switch sums)
        assert g.busbw("ring") <= g.nvlink_per_gpu
    with pytest.raises(topo.DgxTopoError, match="no curve point at 1000 bytes"):
        gens["dgx1"].busbw("auto", 1000)
    with pytest.raises(topo.DgxTopoError, match="unknown curve 'tree'"):
        gens["dgx1"].busbw("tree")


def _generations_part(text) -> str:
    return text[text.index("<section id='generations'>"):text.index("</section>", text.index("<section id='generations'>"))]


def _generations_of(all_analysis, names) -> ReportAnalysis:
    """The report of ``names`` with only its generations section, computed (the estimates under
    test; the systems' analyses are the default report's, read from the shipped file)."""
    systems = tuple(a for a in all_analysis.systems if a.row.system in names)
    return ReportAnalysis(systems, None, generations(systems, records=shipped_module.NO_RECORDS))


def test_generations_without_nvls_show_ring_and_say_why(monkeypatch, all_analysis):
    """A model without NVLS (it raises for algorithm="nvls"): ring only, and the reason."""
    real = survey_module.estimate

    def no_nvls(*args, algorithms=None, **kwargs):
        if algorithms is not None and NVLS in algorithms:
            raise topo.DgxTopoError("NVLS needs NVSwitch gen3 (test)")
        return real(*args, algorithms=algorithms, **kwargs)
    monkeypatch.setattr(survey_module, "estimate", no_nvls)
    part = _generations_part(render_report(_generations_of(all_analysis, ["dgx1v", "dgxh100"])))
    assert "NVLS n/a on DGX-1V, DGX H100: NVLS needs NVSwitch gen3 (test)" in part
    assert "no NVLS in the model" in part and "NVLS is not shown" in part
    assert '"name":"DGX H100, ring"' in part and '"name":"DGX H100, NVLS"' not in part


def test_generations_with_nvls_draw_nvls_beside_ring(monkeypatch, all_analysis):
    """Once the NCCL model has NVLS, its curves appear beside ring (here a stand-in NVLS
    estimate: ring's, on the NVSwitch gen3 system only)."""
    from models.engine.fabric import graph_of
    real = survey_module.estimate

    def some_nvls(G, *args, algorithms=None, **kwargs):
        if algorithms is not None and NVLS in algorithms:
            if graph_of(G).graph["system"] != "dgxh100":  # the report passes prepared fabrics
                raise topo.DgxTopoError("no NVLink SHARP on this fabric (test)")
            algorithms = (RING,)
        return real(G, *args, algorithms=algorithms, **kwargs)
    monkeypatch.setattr(survey_module, "estimate", some_nvls)
    analysis = _generations_of(all_analysis, ["dgx1v", "dgxh100"])
    assert [g.nvls is not None for g in analysis.generations] == [False, True]
    part = _generations_part(render_report(analysis))
    assert "NVLS vs ring" in part and '"name":"DGX H100, NVLS"' in part
    assert "NVLS n/a on DGX-1V: no NVLink SHARP on this fabric (test)" in part
    assert "and to NVLS on DGX H100" in part


def test_coinciding_generation_curves_are_named_on_the_page(full_report):
    _, text = full_report
    part = _generations_part(text)
    assert "DGX-2, GPUs 0-7 coincides with DGX-1V, GPUs 0-7" in part
    assert "DGX H200, GPUs 0-7 coincides with DGX H100, GPUs 0-7" in part
    assert '"dash":"dash"' in part  # the second curve of each pair


# ------------------------------------------------------------------- model vs measurement
def test_packaged_measurements_are_the_tests_data():
    """The report's copies of the measured runs are byte for byte the project's test data."""
    from importlib import resources
    for name in MEASURED_DATA.values():
        packaged = resources.files("models.studies").joinpath("data", name).read_bytes()
        assert packaged == (DATA / name).read_bytes(), name
    with pytest.raises(topo.DgxTopoError, match="no measured data for 'dgx9'"):
        measured_data("dgx9")


@pytest.fixture(scope="module")
def comparison():
    return measurement_comparison()


def test_measurement_comparison_is_check_on_the_dgx2_runs(comparison):
    """Every run in both placements, each the result of models.studies.calibration.check on the
    tests/data file (-g 12 read from the run, ranks from its CUDA_VISIBLE_DEVICES)."""
    runs = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]
    assert [(c.collective, c.placement) for c in comparison.collectives] == [
        (name, placement) for name in runs for placement in ("out-of-place", "in-place")]
    G = topo.build("dgx2")
    for c in comparison.collectives:
        expected = check(read_nccl_tests(runs[c.collective]["raw"]), G, inplace=c.placement == "in-place")
        assert c.error is None and c.check.rows == expected.rows
        assert c.check.gpus == (1, 2, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) and c.check.gpus_per_thread == 12
    by = {(c.collective, c.placement): c for c in comparison.collectives}
    # What the fit used, and what the data itself calls suspect.
    assert "transfer_efficiency" in by["all_reduce", "out-of-place"].fitted
    assert "transfer_efficiency" not in by["all_reduce", "in-place"].fitted
    assert "transfer_efficiency" not in by["all_gather", "out-of-place"].fitted
    assert "validation errors" in by["all_gather", "out-of-place"].suspect
    assert "48 and 62 GB/s" in by["reduce_scatter", "in-place"].suspect
    assert by["reduce", "out-of-place"].suspect == ""  # "reduce" is not "reduce_scatter"
    assert {p.name for p in comparison.constants} == {"launch_per_gpu", "transfer_efficiency"}


def test_measurement_comparison_of_the_p2p_row(comparison):
    row = json.loads((DATA / "dgx1v_p2p_gpu0_row.json").read_text())
    labels = [r.label for r in comparison.p2p]
    assert labels == ["bidirectional, P2P enabled", "bidirectional, P2P disabled",
                      "write latency, P2P enabled", "latency, P2P disabled"]
    enabled = comparison.p2p[0]
    assert np.allclose(np.array(enabled.measured) / 1e9, row["bidirectional_p2p_enabled_gbps"])
    # The bandwidth fit's stated tolerance (1.5 %) holds on every entry; latency is shown as is.
    assert np.all(np.abs(comparison.p2p[0].errors) < 0.015) and np.all(np.abs(comparison.p2p[1].errors) < 0.015)
    assert comparison.p2p_error is None
    assert {name for name, _ in comparison.p2p_constants} >= {"EFFICIENCIES['staged']", "OVERHEADS['p2p']"}


def test_measurement_section_shows_the_errors(full_report, comparison):
    _, text = full_report
    start = text.index("<section id='measured'>")
    part = text[start:text.index("</section>", start)]
    for c in comparison.collectives:
        k = c.check
        cells = (f"<td>{c.collective}</td><td>{c.placement}</td><td>{len(k.rows)}</td>"
                 f"<td>{100 * k.median_abs_time_error:.1f} %</td><td>{100 * k.max_abs_time_error:.1f} %</td>")
        assert cells in part
    # The largest errors are on the page, red, not only the medians.
    worst = max(abs(r.time_error) for c in comparison.collectives for r in c.check.rows
                if c.placement == "out-of-place")
    assert f"{100 * worst:.1f} %" in part.replace("-", "").replace("+", "")
    assert "class='err poor'" in part and "class='err ok'" in part
    # One row per size asked (1 KiB stands for all_gather's 1008 B), 8 B to 8 GiB.
    sizes = re.findall(r"<tr><td>([^<]+)</td><td class='(?:err|na)", part[part.index("bysize"):])
    assert sizes[0] == "8 B" and sizes[-1] == "8 GiB" and len(sizes) == 31 and "1008 B" not in sizes
    assert "launch_per_gpu = 4.985 us" in part and "not an independent test" in part
    assert "784.87" in part  # the DGX-1V row's local copy, measured


def test_measurement_section_only_with_a_measured_system():
    analysis = analyse_report(report_fabrics(["dgx1"]))
    assert analysis.measurement is None and analysis.generations == ()
    only_runs = measurement_comparison(["dgx2"])
    assert len(only_runs.collectives) == 10 and only_runs.p2p == () and only_runs.p2p_constants == ()
    only_p2p = measurement_comparison(["dgx1v"])
    assert only_p2p.collectives == () and len(only_p2p.p2p) == 4


def test_progress_counts_every_step(monkeypatch):
    calls = []
    def skip(*args, **kwargs):  # the steps are counted here, not their results
        raise topo.DgxTopoError("skipped")
    monkeypatch.setattr(survey_module, "pairwise", skip)
    monkeypatch.setattr(analysis_module, "system_bounds", lambda G, **kwargs: None)
    monkeypatch.setattr(analysis_module, "training_step", lambda **kwargs: None)
    analyse_report(report_fabrics(["dgx1", "dgx1v"]), progress=lambda done, total: calls.append((done, total)))
    # 2 systems, generations, the seed comparison, the measurements, the bounds, the training step.
    assert calls == [(i, 7) for i in range(1, 8)]


# ------------------------------------------------------------------ NCCL against the optimum
def test_set_classes_cover_every_set_once():
    for name in sorted(topo.SYSTEMS):
        G = topo.build(name)
        n = len(topo.gpus(G))
        classes = set_classes(G, bound_edge_kinds(G))
        for k in range(2, n + 1):
            assert sum(c for g, c in classes.items() if len(g) == k) == math.comb(n, k), (name, k)
        # An NVL72 rack's NVLink makes its 72 GPUs one class: one class of each size, 71 (GB300's
        # too, whose GPUs each have a ConnectX-8 switch of their own, so that none is
        # interchangeable on the whole fabric; one class needs no search of its automorphisms).
        assert (len(classes) == 71) == name.endswith("nvl72"), name
    # DGX-2: NVLink makes the GPUs of each baseboard interchangeable: (a, k - a) GPUs per board.
    assert len(set_classes(topo.build("dgx2"), ("nvlink",))) == sum(
        min(k, 8) - max(0, k - 8) + 1 for k in range(2, 17))


def test_set_classes_agree_with_every_set_brute_force():
    """The classes of a DGX-1V, expanded by their counts, give the bounds of all 247 sets."""
    G = topo.dgx1v()
    every = sorted(round(r.bound_busbw) for r in subset_bounds(G, "all_reduce", relay=BOUND_RELAY))
    classes = set_classes(G)
    expanded = sorted(round(bound(G, "all_reduce", BOUND_SIZE, list(g), nccl=False).bound_busbw)
                      for g, count in classes.items() for _ in range(count))
    assert expanded == every


def test_bounds_section_as_data(all_analysis):
    bounds = {b.system: b for b in all_analysis.bounds}
    # Every built-in system of one host (not the NVL72 rack of 18 trays).
    assert list(bounds) == [s for s in topo.SYSTEMS if s not in topo.registry.HOSTS_PER_SYSTEM]
    for b in bounds.values():
        assert b.error is None and b.nsets == 2 ** len(topo.gpus(topo.build(b.system))) - len(
            topo.gpus(topo.build(b.system))) - 1
        # No schedule beats the bound: NCCL's prediction never does.
        assert all(0 < s.ratio <= 1 + 1e-9 for s in b.sets), b.system
        assert len(b.worst) == BOUND_WORST
        assert [w.set.ratio for w in b.worst] == sorted(w.set.ratio for w in b.worst)
        assert b.worst[0].set.ratio == min(s.ratio for s in b.sets)
    assert bounds["dgx2"].edge_kinds == ("nvlink",) and bounds["dgx1v"].edge_kinds is None
    # DGX-2: 6 NVLinks x 25 GB/s into every GPU bind every set; NCCL's rings run at 20 of them.
    assert all(s.bound_busbw == pytest.approx(150e9) for s in bounds["dgx2"].sets)
    assert bounds["dgx2"].worst[0].binds == "NCCL's channels"
    assert "20.0 GB/s of its 25.0 GB/s line rate" in bounds["dgx2"].worst[0].explanation
    # The worst DGX-1V sets straddle the sockets: NCCL's ring crosses the CPU link.
    worst = bounds["dgx1v"].worst[0]
    assert worst.set.ratio < 0.2 and "cpu" in worst.explanation and "binding cut" not in worst.binds
    # NVLS systems are held to the cut bound on any schedule (reductions in the switches).
    h100 = bounds["dgxh100"]
    full = max(h100.sets, key=lambda s: len(s.gpus))
    assert full.algorithm.startswith("nvls") and full.bound_busbw == pytest.approx(2 * 7 / 8 * 450e9)


def test_bounds_numbers_are_models_bound(all_analysis):
    """One set of the report against models.bound run directly."""
    b = next(b for b in all_analysis.bounds if b.system == "dgx1v")
    x = b.worst[0].set
    direct = bound(topo.dgx1v(), "all_reduce", BOUND_SIZE, list(x.gpus), relay=BOUND_RELAY)
    assert x.bound_busbw == pytest.approx(direct.bound_busbw)
    assert x.nccl_busbw == pytest.approx(direct.nccl_busbw)
    assert x.ratio == pytest.approx(direct.ratio)
    assert b.worst[0].cut == describe_cut(direct.cut)


def test_worst_sets_table_is_sorted(full_report, all_analysis):
    worst = worst_sets(all_analysis.bounds)
    assert len(worst) == BOUND_WORST * len(all_analysis.bounds)
    assert [w.set.ratio for w in worst] == sorted(w.set.ratio for w in worst)
    _, text = full_report
    table = text[text.index("<table class='summary worst'>"):]
    table = table[:table.index("</table>")]
    shown = [float(v) for v in re.findall(r"<td>(\d+)%</td>", table)]
    assert shown == sorted(shown) and len(shown) == len(worst)
    assert table.count("<details>") == len(worst)


def test_ratio_figure_traces(all_analysis):
    series = {b.name: b.by_size() for b in all_analysis.bounds}
    fig = ratio_by_size_figure(series)
    assert [t.name for t in fig.data] == list(series)
    dgx2 = fig.data[[t.name for t in fig.data].index("DGX-2")]
    assert [size for _, _, size in dgx2.customdata] == list(range(2, 17))
    # Each line stands a little beside the sizes, so that no error bar hides another.
    offsets = {round(t.x[0] - t.customdata[0][2], 6) for t in fig.data}
    assert len(offsets) == len(fig.data) and max(map(abs, offsets)) < 0.5
    low, mean, high = series["DGX-1V"][4]
    assert low < mean < high  # 4-GPU sets of a DGX-1V range from a cube face to the sockets
    with pytest.raises(topo.DgxTopoError, match="lowest, mean, highest"):
        ratio_by_size_figure({"bad": {2: (0.9, 0.5, 0.7)}})


# --------------------------------------------------------------------------- training step
def test_training_section_as_data(all_analysis, full_report):
    t = all_analysis.training
    assert t.names == ("dgx2", "2xdgx1v") and t.errors == (None, None)
    for s in t.searches:
        assert s.best.fits and s.best.layout.tp in TRAINING_TP and s.best.layout.ngpus == 16
        steps = [p.step_time for p in s.fitting()]
        assert steps == sorted(steps)
    dgx2, dgx1v = (s.best for s in t.searches)
    # The same layouts, faster on one NVSwitch fabric than over two DGX-1V's InfiniBand.
    assert dgx2.step_time < dgx1v.step_time
    assert [r.generation for r in t.ranking] == [r.generation for r in gpus_ranking(t.workload, dtype="fp16")]
    _, text = full_report
    section = text[text.index("<section id='training'>"):]
    section = section[:section.index("</section>")]
    assert dgx2.layout.label() in section and f"{dgx2.step_time:.2f}" in section
    assert section.index(f"<td>{t.ranking[0].generation}</td>") < section.index(f"<td>{t.ranking[-1].generation}</td>")
    fig = step_time_figure(t.searches[0], top=10)
    assert [d.name for d in fig.data] == ["compute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer"]
    assert len(fig.data[0].x) == min(10, len(t.searches[0].fitting()))


def test_no_training_section_without_a_v100_system():
    analysis = analyse_report(report_fabrics(["dgxa100"]))
    assert analysis.training is None and len(analysis.bounds) == 1 and analysis.schedule is None
    assert analysis.moe is None  # no GB200 NVL72, DGX B200 or DGX H100
    text = render_report(analysis)
    assert "id='training'" not in text and "id='schedule'" not in text and "id='moe'" not in text


def test_schedule_section_as_data(all_analysis, full_report):
    """The tree packing written as an MSCCL schedule on DGX-1V GPUs 0,1,4,5 (issue 41, item 6):
    the figures at 1 GiB (NCCL 40.75, the schedule written for 1 GiB 60.41, the packing's own bound
    61.18, the line-rate bound 90.75 GB/s), each size's own schedule and protocol (LL with 32 chunks
    a GPU at 64 KiB: 4.78 GB/s, where Simple's best gave 2.45; LL to 256 KiB; Simple from 1 MiB),
    the bound of models.studies.bounds, and the page's table."""
    from models.schedules import check_schedule
    from models.schedules.export import sized_chunks
    from models.studies.survey import SCHEDULE_GPUS, SCHEDULE_SIZES

    s = all_analysis.schedule
    assert (s.system, s.error) == ("dgx1v", None)
    c = s.comparison
    points = c.evaluation.points
    assert c.gpus == SCHEDULE_GPUS and [p.nbytes for p in points] == list(SCHEDULE_SIZES)
    last = points[-1]
    assert [round(x / 1e9, 2) for x in (last.nccl_busbw, last.busbw, c.achieved_bound, last.bound_busbw)] == \
        [40.75, 60.41, 61.18, 90.75]
    assert round(points[0].busbw / 1e9, 2) == 4.78 and c.chunks[0] == 32
    assert c.protocols == ("LL", "LL", "Simple", "Simple", "Simple", "Simple", "Simple", "Simple")
    G = topo.dgx1v()
    assert last.bound_busbw == pytest.approx(bound(G, "all_gather", last.nbytes, list(SCHEDULE_GPUS),
                                                   nccl=False).bound_busbw, rel=1e-12)
    # The 1 GiB schedule is the one export writes for it (it checks); busbw grows with size up to its bound.
    schedule = sized_chunks(G, "all_gather", list(SCHEDULE_GPUS), points[-1].nbytes)[0]
    assert (c.steps, c.threadblocks, c.nchannels) == (schedule.nsteps, schedule.nthreadblocks, schedule.nchannels)
    assert check_schedule(schedule).steps == c.steps
    busbw = [p.busbw for p in points]
    assert busbw == sorted(busbw) and busbw[-1] <= c.achieved_bound < last.bound_busbw
    assert busbw[-1] >= 0.95 * c.achieved_bound and busbw[-1] > 1.4 * last.nccl_busbw
    # The packing drawn: every GPU a root, each root's trees carrying the packing's rate together.
    roots: dict = {}
    for tree in c.packing.trees:
        roots[tree.root] = roots.get(tree.root, 0.0) + tree.rate
    assert len(roots) == len(SCHEDULE_GPUS)
    assert all(rate == pytest.approx(c.packing.rate, rel=1e-6) for rate in roots.values())
    _, text = full_report
    section = text[text.index("<section id='schedule'>"):]
    section = section[:section.index("</section>")]
    assert "<td>1 GiB</td><td>40.8<br>" in section
    assert "<td>60.4</td><td>1.48x</td><td>99%</td><td>Simple</td><td>128</td>" in section
    assert "<td>64 KiB</td>" in section and "<td>LL</td><td>32</td>" in section
    assert "--gpus 0,1,4,5 --size 1G --out packing.xml" in section and f"1 GiB: {c.steps} steps," in section
    figures = _page_figures(text)
    assert [t["name"] for t in figures["fig-schedule-busbw"]["data"]] == [
        "NCCL", schedule.name, "bound, line rates", "bound, NVLink at NCCL's achieved rate"]


def test_schedule_section_says_why_it_is_missing(monkeypatch):
    """A packing that cannot be written or timed leaves a note, not a failed report."""
    from models.schedules import ExportError
    from models.schedules import compare

    def refuse(*args, **kwargs):
        raise ExportError("not written for this test")
    monkeypatch.setattr(compare, "packing_comparison", refuse)
    section = analysis_module.schedule_section(prepare(topo.dgx1v()), records=shipped_module.NO_RECORDS)
    assert section.comparison is None and section.error == "not written for this test"
    analysed = analysis_module._analysed(prepare(topo.dgx1v()))
    text = render_report(ReportAnalysis((analysed,), None, schedule=section))
    assert "the packing&#x27;s schedule</b>: not available; not written for this test" in text
    assert not any(i.startswith("schedule-") for i in _figure_ids(text))


def test_moe_section_as_data(all_analysis, full_report):
    """DeepSeek-V3 on 256 GPUs of GB200 NVL72, DGX B200 and DGX H100 (issue 40, item 6): every
    candidate evaluated once per placement, the best of each system the best by the planner's own
    ranking, fitting, its components adding up to its step; the DGX H100's is the README's plan."""
    from models.studies.moe_systems import MOE_SYSTEMS, moe_candidates
    from models.studies.recomputation import DEEPSEEK, FULL, NO_RECOMPUTE
    from models.studies.planner import plan
    from models.studies.planner.layouts import plan_order

    m = all_analysis.moe
    assert (m.workload, m.ngpus, m.candidates) == ("deepseek-v3", 256, 54)
    assert [r.system for r in m.systems] == list(MOE_SYSTEMS) and all(r.error is None for r in m.systems)
    wanted = {(c["pp"], c["ep"], c["zero"], c["recompute"]) for c in moe_candidates()}
    best = {}
    for r in m.systems:
        plans = r.search.plans
        assert {(p.layout.pp, p.layout.ep, p.layout.zero, p.layout.recompute.name) for p in plans} == wanted
        assert all((p.layout.tp, p.layout.cp, p.layout.ngpus, p.timing) == (1, 1, 256, "analytical") for p in plans)
        p = r.search.best
        assert p == min(plans, key=plan_order) and p.fits and p.memory.total <= p.memory.capacity
        assert sum(c.exposed for c in p.components) == pytest.approx(p.step_time, rel=1e-9)
        assert {c.name for c in p.components} >= {"compute", "ep_comm", "pp_comm", "dp_comm", "bubble"}
        best[r.system] = p
    rows = m.to_records()  # a row per component of every candidate, each naming its system
    assert len({(row["system"], row["rank"]) for row in rows}) == sum(len(r.search.plans) for r in m.systems)
    # Blackwell's 2.5x the H100's dense bf16 peak: both Blackwell systems at least twice as fast;
    # the H100's 80 GB force full recomputation; the Blackwells' 180 GB hold a 4-stage pipeline with
    # DeepSeek's partial recomputation (its activations only: norms, MLA up-projections, expert SwiGLU),
    # the GB200's 186 GB with none (its hierarchical dispatch over EP 16 cheap enough that it wins).
    h100, b200, gb200 = best["32xdgxh100"], best["32xdgxb200"], best["4xgb200nvl72"]
    assert h100.layout.recompute == FULL and b200.layout.recompute == DEEPSEEK and gb200.layout.recompute == NO_RECOMPUTE
    assert gb200.step_time < b200.step_time and 2 * b200.step_time < h100.step_time
    assert [round(p.step_time, 1) for p in (gb200, b200, h100)] == [59.7, 66.7, 212.7]
    G = prepare(topo.build("32xdgxh100"))
    again = plan("deepseek-v3", G, tp=1, pp=8, dp=32, ep=8, zero=2, recompute="full", simulate=0)
    assert again.step_time == pytest.approx(h100.step_time, rel=1e-12) and again.layout == h100.layout
    _, text = full_report
    section = text[text.index("<section id='moe'>"):]
    section = section[:section.index("</section>")]
    assert "the best of 54 layouts per system, <b>not a full search</b>" in section
    assert "<td>tp1 pp8 dp32 ep8 zero2 mb1 rc=full tp-dp-pp</td><td>212.7</td>" in section
    assert "<td>83.8 of 86</td>" in section and "<td>18 of 108</td>" in section  # fp32 main gradients: fewer fit
    figures = _page_figures(text)
    assert figures["fig-moe-step"]["data"][0]["x"] == [f"{p.fabric}<br>{p.layout.label()}" for p in (gb200, b200, h100)]


def test_moe_section_says_why_a_system_is_missing(monkeypatch):
    """A system the planner refuses leaves its row and a note, not a failed report."""
    from models.studies import moe_systems
    from models.studies.planner import PlanError

    def refuse(*args, **kwargs):
        raise PlanError("refused for this test")
    monkeypatch.setattr(moe_systems, "search", refuse)
    refused = moe_systems.system_layouts("32xdgxh100", prepare(topo.build("32xdgxh100")))
    assert (refused.search, refused.error) == (None, "refused for this test")
    section = moe_systems.MoeComparison("deepseek-v3", 256, (refused,), 36)
    analysed = analysis_module._analysed(prepare(topo.build("dgxh100")))
    text = render_report(ReportAnalysis((analysed,), None, moe=section))
    assert "<td>32xdgxh100</td><td colspan='14'>n/a: refused for this test</td>" in text
    assert "32xdgxh100: deepseek-v3&#x27;s layouts</b>: not available; refused for this test" in text
    assert not any(i.startswith("moe-") for i in _figure_ids(text))


def test_simulated_section_one_step_per_generation(all_analysis, full_report):
    steps = {s.system: s for s in all_analysis.simulated}
    # the first system of each GPU generation: P100, V100 (not the DGX-2), A100, H100 (not the
    # H800), H200, B200, B300
    assert list(steps) == ["dgx1", "dgx1v", "dgxa100", "dgxh100", "dgxh200", "dgxb200", "dgxb300"]
    assert steps["dgx1v"].result is None and "out of memory" in steps["dgx1v"].error
    for name in ("dgxa100", "dgxh100", "dgxh200", "dgxb200"):
        r = steps[name].result
        assert r.step_time == pytest.approx(steps[name].planned, rel=0.05)  # the same parts, one timeline
    assert steps["dgxb200"].result.step_time < steps["dgxh100"].result.step_time < steps["dgxa100"].result.step_time
    _, text = full_report
    section = text[text.index("<section id='simulated'>"):]
    section = section[:section.index("</section>")]
    assert ">A simulated step</h2>" in section and f"{steps['dgxh100'].result.step_time * 1e3:.1f}" in section


# ---------------------------------------------------------------------------- check page
def test_write_check_html(tmp_path, comparison):
    c = next(x.check for x in comparison.collectives if x.collective == "all_reduce")
    out = tmp_path / "check.html"
    written = write_check_html(out, c, source="all_reduce.txt")
    text = out.read_text(encoding="utf-8")
    assert written.path == out and written.nbytes == len(text.encode()) and written.systems == ("dgx2",)
    assert _figure_ids(text) == ["check"] and not re.search(r"<script[^>]*\ssrc=", text, re.I)
    assert "all_reduce on dgx2 (all_reduce.txt)" in text and f"max {100 * c.max_abs_time_error:.1f} %" in text
    assert text.count("<tr><td>") == len(c.rows) and "Measurement model for all_reduce" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["check.html"]
    with pytest.raises(OutputPathError, match="does not exist"):
        write_check_html(tmp_path / "no" / "c.html", c)
    with pytest.raises(topo.DgxTopoError, match="expected a Check"):
        write_check_html(tmp_path / "c.html", "not a check")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["check.html"]


# ------------------------------------------------------------------------------ writing
_ANALYSED = {}


@pytest.fixture
def analysed_once(monkeypatch):
    """write_report with each system set analysed and rendered once for the module: these
    tests are about how the page reaches the disk (the analysis and the page are tested above,
    and test_cli_report runs write_report end to end)."""
    analyse, render = write_module.analyse_report, write_module.render_report

    def analysed(fabrics, **kwargs):
        key = tuple(G.graph["name"] for G in fabrics)
        if key not in _ANALYSED:
            _ANALYSED[key] = analyse(fabrics, **kwargs)
        return _ANALYSED[key]

    def rendered(analysis):
        key = ("html", id(analysis))
        if key not in _ANALYSED:
            _ANALYSED[key] = render(analysis)
        return _ANALYSED[key]
    monkeypatch.setattr(write_module, "analyse_report", analysed)
    monkeypatch.setattr(write_module, "render_report", rendered)


def test_write_replaces_atomically(tmp_path, analysed_once):
    target = tmp_path / "r.html"
    target.write_text("old")
    written = write_report(target, ["dgx1"])
    assert written.path == target and target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


@pytest.mark.parametrize("failure", ["write", "replace"])
def test_interrupted_write_leaves_nothing_behind(tmp_path, monkeypatch, failure, analysed_once):
    """An interrupt in the middle of writing (or before the rename) leaves the old file
    untouched, or no file at all, and no temporary file."""
    real_fdopen = os.fdopen

    class Interrupting:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, text):
            self.handle.write(text[: len(text) // 2])  # half the page reaches the disk...
            raise KeyboardInterrupt  # ...then the user presses Ctrl-C

        def __getattr__(self, name):
            return getattr(self.handle, name)

    if failure == "write":
        monkeypatch.setattr(output_module.os, "fdopen", lambda *a, **k: Interrupting(real_fdopen(*a, **k)))
    else:
        def interrupted_replace(*args):
            raise KeyboardInterrupt
        monkeypatch.setattr(output_module.os, "replace", interrupted_replace)
    fresh = tmp_path / "fresh.html"
    with pytest.raises(KeyboardInterrupt):
        write_report(fresh, ["dgx1"])
    assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "existing.html"
    existing.write_text("previous report")
    with pytest.raises(KeyboardInterrupt):
        write_report(existing, ["dgx1"])
    assert existing.read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["existing.html"]


def test_disk_errors_while_writing_are_report_path_errors(tmp_path, monkeypatch, analysed_once):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(output_module.os, "fsync", full)
    with pytest.raises(OutputPathError, match="No space left on device"):
        write_report(tmp_path / "r.html", ["dgx1"])
    assert list(tmp_path.iterdir()) == []


def test_new_file_gets_the_usual_permissions(tmp_path, analysed_once):
    umask = os.umask(0o022)
    try:
        path = write_report(tmp_path / "r.html", ["dgx1"]).path
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644


def test_bad_paths(tmp_path, monkeypatch):
    with pytest.raises(OutputPathError, match="it is a directory"):
        check_output_path(tmp_path)
    with pytest.raises(OutputPathError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "r.html")
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputPathError, match="is not a directory"):
        check_output_path(tmp_path / "file" / "r.html")
    # Not writable: simulated, since the tests may run as root (who may write anywhere).
    monkeypatch.setattr(output_module.os, "access", lambda *args: False)
    with pytest.raises(OutputPathError, match="is not writable"):
        check_output_path(tmp_path / "r.html")


def test_permission_denied_at_creation_is_a_report_path_error(tmp_path, monkeypatch, analysed_once):
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(output_module.tempfile, "mkstemp", denied)
    with pytest.raises(OutputPathError, match="Permission denied"):
        write_report(tmp_path / "r.html", ["dgx1"])


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_directory_for_real(tmp_path, analysed_once):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(OutputPathError, match="is not writable"):
            write_report(locked / "r.html", ["dgx1"])
    finally:
        locked.chmod(0o755)


# ---------------------------------------------------------------------------------- CLI
def test_cli_report(tmp_path, capsys):
    out = tmp_path / "dgx1.html"
    assert main(["report", "--system", "dgx1", "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert stderr == "" and out.exists()
    assert stdout.startswith(f"wrote {out} (") and "DGX-1" in stdout
    assert stdout.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["report", "--out", "{tmp}/missing/r.html"], "directory '{tmp}/missing' does not exist"),
    (["report", "--out", "{tmp}"], "it is a directory"),
    (["report", "--out", ""], "expected a file name such as report.html"),
    (["report", "--system", "dgx9", "--out", "{tmp}/r.html"], "unknown system 'dgx9'"),
    (["report", "--out"], "expected one argument"),
])
def test_cli_report_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("dgxtopo: error: ") and message.replace("{tmp}", str(tmp_path)) in err
    assert list(tmp_path.iterdir()) == []


# The CLI (its parser built) imports no plotly before the report command: checked in
# tests/test_imports.py (one subprocess for every import check).


# ----------------------------------------------------------------------- real browser
def _high_fd(fd) -> int:
    import fcntl
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


# The browser's viewport: a reader's width, and tall enough to hold any section the test captures
# (a capture is at most this tall), so that a screenshot needs no resize.
_VIEWPORT = {"width": 1400, "height": 4000}


class Chromium:
    """Debian's chromium, headless, driven over the DevTools protocol on a pipe (fds 3/4).

    No network is used: the page is a file:// URL and background networking is off.
    """

    def __init__(self, binary, profile):
        # Pipe ends numbered 10 and up, so that moving them to 3 and 4 in the child cannot
        # overwrite one another.
        to_browser_read, self._to_browser, self._from_browser, from_browser_write = (
            _high_fd(fd) for pair in (os.pipe(), os.pipe()) for fd in pair)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}",
                 "about:blank"]
        # The protocol pipe must be the browser's fds 3 (commands) and 4 (replies): a small
        # Python trampoline moves the pipe ends there, then becomes the browser.
        trampoline = ("import os, sys\n"
                      "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
                      "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)\n"
                      "os.execv(sys.argv[3], sys.argv[3:])\n")
        self.log = open(Path(profile).parent / "chromium.log", "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen([sys.executable, "-c", trampoline, str(to_browser_read),
                                         str(from_browser_write), binary, *flags],
                                        pass_fds=(to_browser_read, from_browser_write),
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list = []

    def send(self, method, params=None, session=None, timeout=60.0):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read(deadline))

    def _read(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                self.log.flush()
                tail = Path(self.log.name).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"chromium closed the DevTools pipe; its log ends:\n{tail}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url):
        """Open ``url`` in a new page; return the page's session id once it has loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session=session)
        # The viewport is set before the page loads and never changes: a screenshot beyond it
        # (captureBeyondViewport) resizes the window, and every responsive plotly figure of the
        # page redraws on a resize (about 20 s of CPU over the report's sections).
        self.send("Emulation.setDeviceMetricsOverride", {**_VIEWPORT, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired")
        return session

    def evaluate(self, session, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def errors(self) -> list:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self.log.close()


_RENDERED = """
(async () => {
  for (let i = 0; i < 100; i++) {
    const divs = [...document.querySelectorAll('.plotly-graph-div')];
    const drawn = divs.filter(d => d.classList.contains('js-plotly-plot') && d.querySelector('svg.main-svg')
                                   && d.getBoundingClientRect().width > 100 && d.getBoundingClientRect().height > 100);
    if (divs.length && drawn.length === divs.length) {
      // The page resizes every figure once loaded, and plotly redraws each 100 ms later: wait for
      // the redraws still pending (re-armed, not repeated), so that what follows sees the figures
      // as they settle.
      await Promise.all(divs.filter(d => d._resolveResize).map(d => Plotly.Plots.resize(d)));
      return {figures: divs.length, drawn: drawn.length,
              traces: divs.map(d => d.data.length), ids: divs.map(d => d.id),
              overflowing: divs.filter(d => d.querySelector('svg.main-svg').getBoundingClientRect().width
                                            > d.parentElement.getBoundingClientRect().width + 1).map(d => d.id)};
    }
    await new Promise(r => setTimeout(r, 100));
  }
  const divs = [...document.querySelectorAll('.plotly-graph-div')];
  return {figures: divs.length, drawn: divs.filter(d => d.querySelector('svg.main-svg')).length};
})()
"""


# The comparisons of the report, by figure id: every built-in system must be in each (a trace
# named after it, or a bar of it), or named in the section's note of what is absent.
_COMPARISONS = ("curves-busbw", "curves-time", "generations-nvlink", "generations-busbw", "generations-time",
                "generations-nvls", "bounds-ratio")
# Sections a reader looks at, captured as screenshots (issue 20): comparisons, tables, log axes
# and the fabric drawings that were unreadable.
_SHOTS = ("summary", "curves", "generations", "bounds", "training", "measured", "system-dgx1", "system-dgx2",
          "system-dgxa100", "system-dgxh100", "system-dgxb200", "system-gb200nvl72")

# From the page's own data (the traces as plotly drew them, gd._fullData, whose arrays are
# decoded; and gd.layout): per figure, the systems it shows and the pairs of visible traces
# drawn over each other (same x, y within 1 % at every point).
_INSPECT = """
(() => {
  const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i] ||
      (typeof v === 'number' && typeof b[i] === 'number' && Math.abs(v - b[i]) <= 0.01 * Math.max(Math.abs(v), Math.abs(b[i]))));
  const out = {};
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const shown = gd._fullData.filter(t => t.visible === true);
    const names = shown.map(t => t.name || '');
    const bars = shown.filter(t => t.type === 'bar').flatMap(t => [...t.x].map(String));
    const lines = shown.filter(t => t.type === 'scatter' && t.x && t.x.length > 1);
    const hidden = [];
    for (let i = 0; i < lines.length; i++) for (let j = i + 1; j < lines.length; j++) {
      const a = lines[i], b = lines[j];
      if (a.xaxis !== b.xaxis || a.yaxis !== b.yaxis) continue;
      if (!same([...a.x], [...b.x]) || !same([...a.y], [...b.y])) continue;
      const look = t => [(t.line || {}).dash || 'solid', (t.marker || {}).symbol || 'circle'].join('/');
      // b names a, or both name the first curve of their group (three or more coincide)
      const named = t => { const m = [t.hovertemplate, ...(t.hovertext || [])].map(String).join(' ')
          .match(/coincides with ([^)<]*)/); return m ? m[1] : null; };
      const said = named(b) === a.name || (named(b) !== null && named(b) === named(a));
      hidden.push({under: a.name, over: b.name, marked: look(a) !== look(b) && said});
    }
    out[gd.id] = {names, bars, hidden, buttons: ((gd.layout.updatemenus || [])[0] || {}).buttons || []};
  }
  return out;
})()
"""

_SECTION_BOX = """
(() => Object.fromEntries([...document.querySelectorAll('section[id]')].map(s => {
  const r = s.getBoundingClientRect();
  return [s.id, {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height,
                 absent: [...s.querySelectorAll('.absent')].map(p => p.textContent).join(' ')}];
})))()
"""


def _png_size(data: bytes) -> tuple:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.slow  # ~10 s of a core, most of it the browser drawing the page's figures
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_report_opens_in_headless_chromium_without_errors(full_report, all_analysis, tmp_path):
    """The page as a reader meets it: every figure drawn, no console error, every built-in system
    in every comparison (or named as absent, and why), no trace hidden under another without a
    visible mark, the bundled fabrics' buttons there, and a screenshot of each section named in
    issue 20 (kept in $DGXTOPO_SCREENSHOTS when set, to look at)."""
    written, text = full_report
    browser = Chromium(shutil.which("chromium"), tmp_path / "profile")
    shots = Path(os.environ.get("DGXTOPO_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    try:
        session = browser.open(written.path.resolve().as_uri())
        state = browser.evaluate(session, _RENDERED)
        figures = browser.evaluate(session, _INSPECT)
        sections = browser.evaluate(session, _SECTION_BOX)
        sizes, outside = {}, []
        for name in _SHOTS:
            box = sections[name]
            # Half scale: readable, and a quarter of the pixels to encode; encoded for speed, not
            # size (the test stays quick).
            clip = {"x": box["x"], "y": box["y"], "width": box["width"],
                    "height": min(box["height"], _VIEWPORT["height"]), "scale": 0.5}
            # The section scrolled into the viewport (the clip is in page coordinates; what lies
            # outside the viewport would be captured blank).
            top = browser.evaluate(session, f"(scrollTo(0, {box['y']}), scrollY)")
            if not top - 1 <= clip["y"] <= clip["y"] + clip["height"] <= top + _VIEWPORT["height"] + 1:
                outside.append(name)
            image = base64.b64decode(browser.send("Page.captureScreenshot", {
                "format": "png", "clip": clip, "optimizeForSpeed": True}, session=session)["data"])
            (shots / f"{name}.png").write_bytes(image)
            sizes[name] = (_png_size(image), (round(clip["width"] / 2), round(clip["height"] / 2)))
        errors = browser.errors()
    finally:
        browser.close()
    ids = ["fig-" + i for i in _figure_ids(text)]
    assert errors == []
    assert state["figures"] == len(ids) and state["drawn"] == len(ids), state
    assert state["ids"] == ids
    assert all(n > 0 for n in state["traces"])
    assert state["overflowing"] == []
    assert outside == []
    for name, ((width, height), (want_w, want_h)) in sizes.items():
        assert abs(width - want_w) <= 1 and abs(height - want_h) <= 1 and height > 100, name
    systems = [a.row.name for a in all_analysis.systems]
    for figure in _COMPARISONS:
        seen = figures[f"fig-{figure}"]
        section = sections[figure.split("-")[0]]
        for name in systems:
            present = name in seen["bars"] or any(n == name or n.startswith(name + ",") for n in seen["names"])
            assert present or name in section["absent"], (figure, name)
    assert "GB200 NVL72" in sections["bounds"]["absent"]  # the rack: said why, not silently left out
    hidden = {(f, h["under"], h["over"]) for f, seen in figures.items() for h in seen["hidden"] if not h["marked"]}
    assert hidden == set()
    marked = {(h["under"], h["over"]) for seen in figures.values() for h in seen["hidden"]}
    assert {("DGX H100, GPUs 0-7", "DGX H200, GPUs 0-7"), ("DGX-1V, GPUs 0-7", "DGX-2, GPUs 0-7")} <= marked
    assert not [h for h in figures["fig-bounds-ratio"]["hidden"]]  # its lines stand apart: none is under another
    for system in ("dgx2", "gb200nvl72"):  # large fabrics open bundled, every link a click away
        labels = [b["label"] for b in figures[f"fig-{system}-fabric"]["buttons"]]
        assert labels[0] == "bundled links" and labels[1].startswith("every link"), labels


def test_compare_out_writes_its_curves(tmp_path, capsys):
    """``dgxtopo compare ... --out FILE`` (the compare command) writes through this module."""
    out = tmp_path / "cmp.html"
    assert main(["compare", "--system", "dgx1v", "dgx1", "-b", "1M", "-e", "16M", "-f", "4", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert _figure_ids(text) == ["compare-busbw", "compare-time"]
    assert not re.search(r"<script[^>]*\ssrc=", text, re.I) and "dgx1v, 8 GPUs" in text
    assert list(tmp_path.iterdir()) == [out]
    capsys.readouterr()
    assert main(["compare", "--system", "dgx1v", "dgx1", "--out", str(tmp_path / "no" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(topo.DgxTopoError, match="one name per estimate"):
        write_compare_figure([], ["a"], tmp_path / "y.html")


def test_error_cells_are_signed_with_one_decimal():
    # Issue 19 item 8: a second _pct (whole, unsigned percent, for the bounds section) once
    # shadowed the signed one, so the model-vs-measurement cells printed "5%".
    from models.studies.calibration import Check, CheckRow
    from models.present.report.html import check_html

    rows = (CheckRow(1024, 10e-6, 10.512e-6, 1e9, 0.8e9, 0.0512, -0.2),
            CheckRow(2048, 10e-6, 9.99e-6, 1e9, 1.001e9, -0.001, None))
    page = check_html(Check("all_reduce", "dgx2", (0, 1), 1, rows, 0.0263, 0.0512, 0.2, 0.2))
    assert "<td class='err fair'>+5.1 %</td>" in page and "<td class='err poor'>-20.0 %</td>" in page
    assert "<td class='err ok'>-0.1 %</td>" in page and "<td class='na'>-</td>" in page
    cells = re.findall(r"<td class='err [a-z]+'>([^<]*)</td>", page)
    assert len(cells) == 3 and all(re.fullmatch(r"[+-][0-9]+\.[0-9] %", c) for c in cells)
