"""Model figures, checked as data: traces, values in display units, hover text with units."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

import models
import topo
from models.plot import (busbw_figure, channels_figure, format_bytes, latency_figure, p2p_figure,
                         pairs_figure, subsets_figure)

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
