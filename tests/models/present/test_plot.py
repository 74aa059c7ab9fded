"""Model figures, checked as data: traces, values in display units, hover text with units."""

from __future__ import annotations

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models
import topo
from models.studies.benchmarks import read_nccl_tests
from models.studies.calibration import Check, check
from models.present import plot
from models.present.bounds_plot import ratio_by_size_figure_dict
from models.present.page import PLOTLY_CONFIG, figure_html
from models.present.plan_plot import memory_figure_dict, step_time_figure_dict
from models.present.plot import (DASHES, SYMBOLS, busbw_figure, channels_figure, channels_figure_dict, check_figure,
                                 curve_styles,
                         format_bytes, generations_figure, latency_figure, p2p_check_figure, p2p_figure,
                         pairs_figure, subsets_figure)
from models.present.simulate_plot import gantt_figure_dict
from tests.conftest import DATA

SIZES = 2 ** np.arange(10, 31, 2)


@pytest.fixture(autouse=True)
def no_show(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a figure function called show()")
    monkeypatch.setattr(go.Figure, "show", refuse)


@pytest.fixture(scope="module")
def dgx1v_report():
    return models.p2p_report(topo.dgx1v())


def test_p2p_heatmap(dgx1v_report):
    fig = p2p_figure(dgx1v_report)
    assert isinstance(fig, go.Figure)
    (heat,) = fig.data
    z = np.array(heat.z, dtype=float)
    expected = dgx1v_report.unidirectional / 1e9
    off = ~np.eye(8, dtype=bool)
    assert np.allclose(z[off], expected[off]) and np.isnan(np.diag(z)).all()  # diagonal not coloured
    assert list(heat.x) == list(heat.y) == [str(i) for i in range(8)]
    assert heat.texttemplate == "%{text}" and heat.text[0][3] == f"{expected[0, 3]:.1f}"
    assert heat.text[0][0].startswith("local")
    assert "GB/s" in heat.hovertext[0][3] and "path class: NVL" in heat.hovertext[0][3]
    assert "path class: SYS" in heat.hovertext[0][5]
    assert fig.layout.coloraxis.colorbar.title.text == "GB/s"
    assert fig.layout.xaxis.title.text == "destination GPU" and fig.layout.yaxis.autorange == "reversed"
    both = p2p_figure(dgx1v_report, bidirectional=True, diagonal=True)
    assert np.allclose(np.array(both.data[0].z, dtype=float), dgx1v_report.bidirectional / 1e9)
    assert "bidirectional" in both.layout.title.text


def test_latency_heatmap(dgx1v_report):
    fig = latency_figure(dgx1v_report, title="t", width=500, height=400)
    (heat,) = fig.data
    assert np.allclose(np.array(heat.z, dtype=float), dgx1v_report.latency / 1e-6)
    assert "µs" in heat.hovertext[0][5] and "path class: SYS" in heat.hovertext[0][5]
    assert fig.layout.coloraxis.colorbar.title.text == "µs"
    assert (fig.layout.title.text, fig.layout.width, fig.layout.height) == ("t", 500, 400)


def test_curves_of_systems_gpu_sets_algorithms_and_protocols_on_one_figure():
    v, d = topo.dgx1v(), topo.dgx2()
    curves = {
        "DGX-1V": models.estimate(v, "all_reduce", SIZES),
        "DGX-2, 16 GPUs": models.estimate(d, "all_reduce", SIZES),
        "DGX-1V GPUs 0-3": models.estimate(v, "all_reduce", SIZES, gpus="0-3"),
        "DGX-1V tree/LL128": models.estimate(v, "all_reduce", SIZES, algorithm="tree", protocol="LL128"),
    }
    fig = busbw_figure(curves)
    assert [t.name for t in fig.data] == list(curves)
    for trace, e in zip(fig.data, curves.values()):
        assert np.allclose(trace.x, SIZES) and np.allclose(trace.y, e.busbw / 1e9)
        assert "GB/s" in trace.hovertext[-1] and "µs" in trace.hovertext[-1]
    assert "tree/LL128" in fig.data[3].hovertext[0]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "message size (bytes)"
    assert fig.layout.yaxis.title.text == "busbw (GB/s)"
    assert format_bytes(2 ** 20) in fig.layout.xaxis.ticktext
    timed = busbw_figure(curves, y="time")
    assert timed.layout.yaxis.type == "log" and timed.layout.yaxis.title.text == "time (µs)"
    assert np.allclose(timed.data[0].y, curves["DGX-1V"].time / 1e-6)
    assert busbw_figure(curves, y="algbw").layout.yaxis.title.text == "algbw (GB/s)"


def test_curve_labels_and_errors():
    e = models.estimate(topo.dgx1v(), "all_gather", SIZES, gpus=[0, 1])
    assert [t.name for t in busbw_figure([e]).data] == ["all_gather GPUs 0,1"]
    assert [t.name for t in busbw_figure(e).data] == ["all_gather GPUs 0,1"]
    assert [t.name for t in busbw_figure([("mine", e)]).data] == ["mine"]
    with pytest.raises(topo.DgxTopoError, match="unknown quantity 'latency': expected one of busbw, algbw, time"):
        busbw_figure([e], y="latency")
    with pytest.raises(topo.DgxTopoError, match="expected CollectiveEstimate results"):
        busbw_figure({"x": 3})
    with pytest.raises(topo.DgxTopoError, match="at least one estimate"):
        busbw_figure([])


def test_pair_matrix():
    matrix = models.pairwise(topo.dgx1v(), "all_reduce", 2 ** 30)
    fig = pairs_figure(matrix, collective="all_reduce", nbytes=2 ** 30)
    (heat,) = fig.data
    z = np.array(heat.z, dtype=float)
    assert np.isnan(np.diag(z)).all() and z[0, 3] == pytest.approx(matrix[0, 3] / 1e9)
    assert heat.text[0][0] == "" and "GB/s" in heat.hovertext[0][3] and "1 GiB" in heat.hovertext[0][3]
    assert "all_reduce busbw at 1 GiB" in fig.layout.title.text
    labelled = pairs_figure(matrix[:2, :2], gpus=[4, 7])
    assert list(labelled.data[0].x) == ["4", "7"]


def test_channels_on_the_fabric():
    G = topo.dgx1v()
    e = models.estimate(G, "all_reduce", 2 ** 30)
    fig = channels_figure(G, e)
    details = next(t for t in fig.data if t.name == "link details")
    loaded = {frozenset(load.edge) for load in e.ring.loads}
    assert len(details.x) == len(details.marker.color) == 16  # NVLink only: no channel leaves it
    assert all("load (% of<br>NCCL capacity) 100" in h for h in details.hovertext)
    assert all("channels reserve" in h and "GB/s" in h for h in details.hovertext)
    assert len(loaded) == 16
    assert "6 x 20.0 GB/s" in fig.layout.title.text
    assert fig.layout.title.subtitle.text.startswith("channels (GPU order): ")
    assert not {t.name for t in fig.data} & {"CPU", "NIC"}


def test_channels_through_the_host_show_the_host_layer():
    G = topo.dgx1v()
    e = models.estimate(G, "all_reduce", 2 ** 28, gpus=[0, 5])  # no NVLink: PCIe and QPI
    fig = channels_figure(G, e)
    assert {"CPU", "PCIe switch"} <= {t.name for t in fig.data}
    details = next(t for t in fig.data if t.name == "link details")
    qpi = next(h for h in details.hovertext if "cpu0 ↔ cpu1" in h)
    assert "cpu0 → cpu1: load (% of<br>NCCL capacity) 100" in qpi
    assert "links no channel crosses" in {t.name for t in fig.data}
    gpus = next(t for t in fig.data if t.name == "GPU")
    assert [o for o in gpus.marker.opacity] == [1.0 if i in (0, 5) else 0.3 for i in range(8)]


def test_channels_figure_dict_is_the_figure_unchecked():
    """The report writes the plain dict: plotly accepts it, and it is the figure channels_figure
    returns (property by property, as JSON), title's subtitle and margin merged in."""
    import plotly.io as pio

    G = topo.dgx2()
    e = models.estimate(G, "all_reduce", 2 ** 30)
    figure = channels_figure_dict(G, e, pos=topo.fabric_layout(G))
    checked = go.Figure(figure)  # raises ValueError naming any property plotly does not know
    assert json.loads(pio.to_json(checked)) == json.loads(pio.to_json(channels_figure(G, e)))
    assert figure["layout"]["margin"]["t"] == 80 and figure["layout"]["title"]["text"].startswith("DGX-2: all_reduce")
    assert figure["layout"]["title"]["subtitle"]["text"].startswith("channels (GPU order): ")
    with pytest.raises(topo.DgxTopoError, match="expected a CollectiveEstimate or ChannelSearch"):
        channels_figure_dict(G, "ring")


def test_channels_of_a_search_and_errors():
    G = topo.dgx2()
    search = models.search_channels(G, [0, 9], pattern="balanced_tree")
    fig = channels_figure(G, search, host_layer=True, title="tree")
    assert fig.layout.title.text == "tree" and "CPU" in {t.name for t in fig.data}
    e = models.estimate(G, "alltoall", 2 ** 20)
    with pytest.raises(topo.DgxTopoError, match="alltoall on GPUs 0,.*has no 'p2p' channels to draw"):
        channels_figure(G, e)
    with pytest.raises(topo.DgxTopoError, match="expected a CollectiveEstimate or ChannelSearch"):
        channels_figure(G, "ring")


def test_subset_ranking():
    results = models.subsets(topo.dgx1v(), "all_reduce", 2 ** 30, 4)
    fig = subsets_figure(results, top=6, collective="all_reduce", nbytes=2 ** 30)
    (bars,) = fig.data
    assert bars.type == "bar" and bars.orientation == "h"
    assert list(bars.y[:2]) == ["0,1,2,3", "4,5,6,7"] and len(bars.y) == 6
    assert bars.x[0] == pytest.approx(results[0].busbw / 1e9)
    assert list(bars.x) == sorted(bars.x, reverse=True)
    assert "GB/s" in bars.hovertext[0] and "µs" in bars.hovertext[0] and "rank 1 of 70" in bars.hovertext[0]
    assert fig.layout.xaxis.title.text == "busbw (GB/s)"
    assert "best 6 of 70 sets of 4 GPUs" in fig.layout.title.text and "1 GiB" in fig.layout.title.text
    assert len(subsets_figure(results, top=None).data[0].y) == 70
    with pytest.raises(topo.DgxTopoError, match="at least one GPU set"):
        subsets_figure([])


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 1023, 1024, 3 * 2 ** 30, 2 ** 50)] == [
        "0 B", "1023 B", "1 KiB", "3 GiB", "1024 TiB"]
    assert not math.isnan(len(format_bytes(8)))


# ------------------------------------------------------------------ coinciding curves
def test_coinciding_curves_stay_visible():
    """A DGX-1V's 8-GPU all_reduce is a DGX-2's GPUs 0-7 (6 rings x 20 GB/s on both): the
    second curve is drawn dashed and thinner over the first, each with its own marker."""
    v, d, p = topo.dgx1v(), topo.dgx2(), topo.dgx1()
    curves = {"DGX-1V": models.estimate(v, "all_reduce", SIZES),
              "DGX-1": models.estimate(p, "all_reduce", SIZES),
              "DGX-2, GPUs 0-7": models.estimate(d, "all_reduce", SIZES, gpus="0-7")}
    assert np.allclose(curves["DGX-1V"].busbw, curves["DGX-2, GPUs 0-7"].busbw)
    fig = busbw_figure(curves)
    one_v, one, two = fig.data
    assert (one_v.line.dash, one.line.dash, two.line.dash) == ("solid", "solid", "dash")
    assert one_v.line.width > two.line.width and one_v.marker.size > two.marker.size
    assert len({t.marker.symbol for t in fig.data}) == 3
    assert "coincides with DGX-1V" in two.hovertext[-1] and "coincides" not in one.hovertext[-1]
    assert "GB/s" in two.hovertext[-1] and "µs" in two.hovertext[-1]
    # On the time axis they coincide too.
    timed = busbw_figure(curves, y="time")
    assert timed.data[2].line.dash == "dash"


def test_curve_styles_groups():
    x = [1, 2, 3]
    styles = curve_styles([(x, [1, 2, 3]), (x, [1, 2, 3.001]), (x, [1, 2, 3.5]), (x, [1, 2, 3]),
                           ([1, 2], [1, 2])])
    assert [s["same_as"] for s in styles] == [None, 0, None, 0, None]
    assert [s["dash"] for s in styles] == ["solid", "dash", "solid", "dot", "solid"]
    assert styles[0]["width"] > styles[1]["width"] > styles[3]["width"]
    assert styles[2]["width"] == styles[4]["width"] == styles[3]["width"]  # alone: the thinnest
    # Partial overlap (equal at small sizes only) is not coinciding.
    assert curve_styles([(x, [1, 2, 3]), (x, [1, 2, 9])])[1]["same_as"] is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([(1.0, 2.0, 3.0), (1.0, 2.0, 4.0), (2.0, 2.0, 2.0)]), min_size=1, max_size=12))
def test_curves_that_coincide_never_share_a_style(ys):
    """Property: curves group exactly when they coincide; within a group (up to 6) dashes
    differ and widths strictly fall in drawing order; the first
    7 curves have 7 markers."""
    styles = curve_styles([([1, 2, 3], y) for y in ys])
    assert len({s["symbol"] for s in styles[:len(SYMBOLS)]}) == min(len(ys), len(SYMBOLS))
    for leader in {s["same_as"] for s in styles if s["same_as"] is not None}:
        group = [leader] + [i for i, s in enumerate(styles) if s["same_as"] == leader]
        assert group == [i for i, y in enumerate(ys) if y == ys[leader]]
        if len(group) <= len(DASHES):
            assert len({styles[i]["dash"] for i in group}) == len(group)
        widths = [styles[i]["width"] for i in group]
        assert widths == sorted(widths, reverse=True) and len(set(widths)) == len(widths)
    assert all(s["symbol"] in SYMBOLS for s in styles)


# ------------------------------------------------------------------ measured vs predicted
@pytest.fixture(scope="module")
def dgx2_check():
    run = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]["all_reduce"]
    return check(read_nccl_tests(run["raw"], name="all_reduce"), topo.dgx2())


def test_check_figure_shows_both_curves_and_the_error(dgx2_check):
    c = dgx2_check
    fig = check_figure(c)
    assert [t.name for t in fig.data] == ["measured", "predicted"] * 2 + ["time error", "busbw error"]
    sizes = [r.size for r in c.rows]
    assert all(list(t.x) == sizes for t in fig.data)
    mb, pb, mt, pt, te, be = fig.data
    assert np.allclose(mb.y, [r.measured_busbw / 1e9 for r in c.rows])
    assert np.allclose(pt.y, [r.predicted_time / 1e-6 for r in c.rows])
    assert np.allclose(te.y, [100 * r.time_error for r in c.rows])
    # busbw error is missing where nccl-tests printed 0.00, not plotted as -100 %.
    assert all((b is None or math.isnan(b)) == (r.busbw_error is None) for b, r in zip(be.y, c.rows))
    # Measured solid with circles, predicted dashed with diamonds: never hidden under each other.
    assert (mb.line.dash in (None, "solid"), pb.line.dash) == (True, "dash")
    assert mb.marker.symbol != pb.marker.symbol
    # Shared log size axis; time on a log axis; error in %.
    assert fig.layout.xaxis.type == fig.layout.xaxis3.type == "log"
    assert fig.layout.yaxis2.type == "log" and fig.layout.yaxis2.title.text == "time (µs)"
    assert fig.layout.yaxis.title.text == "busbw (GB/s)" and "error (%)" in fig.layout.yaxis3.title.text
    big = mb.hovertext[-1]
    assert "GB/s" in big and "µs" in big and "%" in big and "8 GiB" in big
    assert f"max {c.max_abs_time_error:.1%}" in fig.layout.title.subtitle.text
    assert "all_reduce on dgx2, 12 GPUs (-g 12)" in fig.layout.title.text


def test_check_figure_errors(dgx2_check):
    with pytest.raises(topo.DgxTopoError, match="expected a Check .* received dict"):
        check_figure({})
    empty = Check("all_reduce", "dgx2", (0,), 1, (), 0.0, 0.0, 0.0, 0.0)
    with pytest.raises(topo.DgxTopoError, match="at least one row"):
        check_figure(empty)


def test_p2p_check_figure():
    row = json.loads((DATA / "dgx1v_p2p_gpu0_row.json").read_text())
    measured = np.array(row["bidirectional_p2p_enabled_gbps"]) * 1e9
    predicted = models.p2p_report(topo.dgx1v()).bidirectional[0]
    fig = p2p_check_figure(range(8), [("P2P enabled", measured, predicted)])
    bars_measured, bars_predicted = fig.data
    assert (bars_measured.type, bars_measured.name, bars_predicted.name) == ("bar", "measured", "predicted")
    assert np.allclose(bars_measured.y, row["bidirectional_p2p_enabled_gbps"])
    assert bars_predicted.marker.pattern.shape == "/"
    # 785 GB/s local copy beside 14 GB/s staged ones: a log axis keeps both readable.
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.title.text == "bandwidth (GB/s)"
    assert "GPU 0 → GPU 5" in bars_measured.hovertext[5] and "error +1.2 %" in bars_measured.hovertext[5]
    lat = p2p_check_figure(range(2), [("writes", [1.6e-6, 1.8e-6], [1.9e-6, 1.9e-6])], quantity="latency")
    assert lat.layout.yaxis.type != "log" and "µs" in lat.data[0].hovertext[0]
    with pytest.raises(topo.DgxTopoError, match="unknown quantity 'size'"):
        p2p_check_figure(range(2), [("x", [1, 2], [1, 2])], quantity="size")
    with pytest.raises(topo.DgxTopoError, match="expected 3 measured and 3 predicted values, received 2 and 3"):
        p2p_check_figure(range(3), [("x", [1, 2], [1, 2, 3])])
    with pytest.raises(topo.DgxTopoError, match="at least one"):
        p2p_check_figure(range(3), [])


def test_generations_figure():
    names = ["DGX-1", "DGX H100"]
    fig = generations_figure(names, [80e9, 450e9], [80e9, 1800e9])
    per_gpu, bisection = fig.data
    assert list(per_gpu.x) == names and list(per_gpu.y) == [80, 450] and list(bisection.y) == [80, 1800]
    assert list(per_gpu.text) == ["80", "450"]
    assert "450.0 GB/s per direction" in per_gpu.hovertext[1]
    assert fig.layout.yaxis.title.text == fig.layout.yaxis2.title.text == "GB/s"
    with pytest.raises(topo.DgxTopoError, match="2 names, 1 and 2 figures"):
        generations_figure(names, [80e9], [1, 2])
    with pytest.raises(topo.DgxTopoError, match="0 names"):
        generations_figure([], [], [])


def test_the_check_figures_panels_are_plotlys_subplot_grid():
    """check_figure writes its three panels' axes itself (make_subplots costs ~30 ms a figure):
    they must be the grid make_subplots gives for the same rows, gap and heights."""
    from plotly.subplots import make_subplots

    grid = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=plot._CHECK_SPACING,
                         row_heights=list(plot._CHECK_HEIGHTS)).to_dict()["layout"]
    grid.pop("template")
    assert plot._check_axes() == grid


def test_the_generations_figures_panels_are_plotlys_subplot_grid():
    """generations_figure writes its two panels' axes and titles itself (make_subplots loads
    plotly's figure classes): they must be what make_subplots gives for the same columns, gap
    and titles, the titles lifted 10 px and the x axes categories."""
    from plotly.subplots import make_subplots

    grid = make_subplots(rows=1, cols=2, horizontal_spacing=plot._GENERATIONS_SPACING,
                         subplot_titles=plot._GENERATIONS_TITLES)
    grid.update_annotations(yshift=10).update_xaxes(type="category")
    grid = grid.to_dict()["layout"]
    grid.pop("template")
    assert plot._generations_axes() == grid


def _plot_call(text: str) -> tuple:
    """The arguments of a page's one Plotly.newPlot call, parsed, and the text around them."""
    start = text.index("Plotly.newPlot(")
    decoder = json.JSONDecoder()
    parts, i = [], text.index("[", start)
    for _ in range(3):
        value, i = decoder.raw_decode(text, i)
        parts.append(value)
        i = next(k for k in range(i, len(text)) if text[k] not in ", ")
    return tuple(parts), text[:start], text[i:]


def _dict_forms(dgx2_check):
    """One figure of every dict form the report writes, numpy arrays and NaN included."""
    from models.predict.simulate import simulate, task_graph
    from models.studies.planner import search

    G = topo.dgx1v()
    report = models.p2p_report(G)
    e = models.estimate(G, "all_reduce", SIZES)
    row = json.loads((DATA / "dgx1v_p2p_gpu0_row.json").read_text())
    measured = np.array(row["bidirectional_p2p_enabled_gbps"]) * 1e9
    plans = search("megatron-8.3b", topo.dgx2(), tp=8, zero=0, recompute="full", dtype="fp16")
    step = simulate(topo.build("dgxh100"), task_graph({"tasks": [
        {"id": "ar", "op": "all_reduce", "gpus": [0, 1], "bytes": 2**20, "kind": "dp_comm"},
        {"id": "mm", "op": "compute", "gpu": 0, "seconds": 1e-4, "after": ["ar"]}]}))
    return {
        "p2p": plot.p2p_figure_dict(report), "latency": plot.latency_figure_dict(report),
        "pairs": plot.pairs_figure_dict(models.pairwise(G, "all_reduce", 2**20), collective="all_reduce"),
        "busbw": plot.busbw_figure_dict({"a": e, "b": e}), "time": plot.busbw_figure_dict(e, y="time"),
        "check": plot.check_figure_dict(dgx2_check),
        "p2p_check": plot.p2p_check_figure_dict(range(8), [("P2P enabled", measured, report.bidirectional[0])]),
        "generations": plot.generations_figure_dict(["DGX-1", "DGX H100"], [80e9, 450e9], [80e9, 1800e9]),
        "ratio": ratio_by_size_figure_dict({"A": {2: (0.4, 0.5, 0.6), 8: (0.7, 0.7, 0.7)}, "B": {}}),
        "step": step_time_figure_dict(plans, top=3), "memory": memory_figure_dict(plans, top=3),
        "gantt": gantt_figure_dict(step),
    }


def test_every_dict_form_is_a_figure_the_page_writes_as_plotly_writes_it(dgx2_check):
    """The report writes its figures as plain dicts (models.present.page.figure_html, without
    plotly's figure classes): each dict form is a figure plotly accepts property by property,
    and the page's text of it is what plotly's to_html writes for that checked figure (numpy
    arrays as typed arrays, NaN as null), argument for argument."""
    import plotly.io as pio

    for name, figure in _dict_forms(dgx2_check).items():
        checked = go.Figure(figure)  # raises ValueError naming any property plotly does not know
        ours = _plot_call(figure_html(figure, "fig-x"))
        theirs = _plot_call(pio.to_html(checked, full_html=False, include_plotlyjs=False, div_id="fig-x",
                                        config=dict(PLOTLY_CONFIG), default_width="100%", validate=False))
        assert ours == theirs, name


def test_a_plain_dict_is_written_character_for_character_as_plotly_writes_it():
    """Without numpy arrays, the page's text of a dict is plotly's to_html of it, to the character:
    sizes in px or as given, NaN as null even in the layout, "</script>" in a label escaped."""
    import plotly.io as pio

    figures = [{"data": [{"type": "bar", "y": [1, float("nan")], "name": "</script>NaN"}],
                "layout": {"height": 300, "title": {"text": "a & b"}}},
               {"data": [], "layout": {"width": "50%", "xaxis": {"range": [0, float("inf")]}}},
               {"data": [{"type": "scatter", "x": [1]}], "layout": {"template": {"layout": {"height": 200}}}}]
    for figure in figures:
        assert figure_html(figure, "fig-y") == pio.to_html(
            figure, full_html=False, include_plotlyjs=False, div_id="fig-y", config=dict(PLOTLY_CONFIG),
            default_width="100%", validate=False)
    assert "\\u003c\\u002fscript\\u003e" in figure_html(figures[0], "fig-y")
