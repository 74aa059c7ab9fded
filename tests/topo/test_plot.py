"""The fabric figure, checked as data: traces, names, hover text, one colour per link,
positions for every node, and links that never run through nodes they do not join."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

import topo
from topo.layout import fabric_layout
from topo.plot import KIND_STYLE, fabric_figure, fabric_figure_dict, link_class

NODE_TRACES = {style[0]: kind for kind, style in KIND_STYLE.items()}


def _links(G, host_layer=True):
    shown = {n for n, k in G.nodes(data="kind") if host_layer or k in ("gpu", "nvswitch")}
    return {frozenset((u, v)) for u, v in G.edges() if u in shown and v in shown}


def _trace(fig, name):
    (trace,) = [t for t in fig.data if t.name == name]
    return trace


def _pieces(trace):
    """The polylines of a line trace (links are separated by None)."""
    pieces, current = [], []
    for x, y in zip(trace.x, trace.y):
        if x is None:
            pieces.append(np.array(current))
            current = []
        else:
            current.append((x, y))
    return pieces


@pytest.fixture(autouse=True)
def no_show(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a figure function called show()")
    monkeypatch.setattr(go.Figure, "show", refuse)


def test_figure_as_data(fabric):
    fig = fabric_figure(fabric, bundle=False)
    assert isinstance(fig, go.Figure)
    pos = fabric_layout(fabric)
    # One trace per node kind, every node at its layout position, with its hover text.
    drawn = {}
    for trace in fig.data:
        if trace.name in NODE_TRACES:
            kind = NODE_TRACES[trace.name]
            nodes = topo.nodes_of_kind(fabric, kind)
            assert len(trace.x) == len(nodes)
            assert list(zip(trace.x, trace.y)) == [pos[n] for n in nodes]
            assert all(f"<b>{n}</b>" in h for n, h in zip(nodes, trace.hovertext))
            drawn[kind] = len(nodes)
    assert sum(drawn.values()) == fabric.number_of_nodes()
    # One hover point per link (both directions drawn once), one colour per link.
    details = _trace(fig, "link details")
    links = _links(fabric)
    assert len(details.x) == len(details.marker.color) == len(details.hovertext) == len(links)
    for text in details.hovertext:
        assert "GB/s per direction" in text and "links: " in text and "kind: " in text and " ↔ " in text
    # Line traces are the link classes; each link's colour is its class's colour.
    lines = [t for t in fig.data if t.mode == "lines"]
    assert sum(len(_pieces(t)) for t in lines) == len(links)
    class_colour = {t.name: t.line.color for t in lines}
    for text, colour in zip(details.hovertext, details.marker.color):
        u, v = text.split("</b>")[0].removeprefix("<b>").split(" ↔ ")
        assert class_colour[link_class(fabric.edges[u, v])] == colour
    assert fig.layout.title.text == f"{fabric.graph['name']} fabric"


def test_nv1_and_nv2_are_distinguishable():
    fig = fabric_figure(topo.dgx1v(), host_layer=False)
    nv2, nv1 = _trace(fig, "NVLink 2.0 x2: 50 GB/s"), _trace(fig, "NVLink 2.0 x1: 25 GB/s")
    assert nv2.line.color != nv1.line.color and nv2.line.width > nv1.line.width
    assert len(_pieces(nv2)) == len(_pieces(nv1)) == 8
    assert [t.name for t in fig.data if t.mode != "lines" and t.name in NODE_TRACES] == ["GPU"]


def test_dgx2_trunks_and_host_layer_toggle():
    G = topo.dgx2()
    full, nvlink = fabric_figure(G, bundle=False), fabric_figure(G, host_layer=False, bundle=False)
    trunks = _trace(full, "NVLink 2.0 x8: 200 GB/s")
    assert len(_pieces(trunks)) == 6
    names = {t.name for t in nvlink.data}
    assert {"GPU", "NVSwitch"} <= names and not names & {"CPU", "NIC", "PCIe switch"}
    assert len(_trace(nvlink, "link details").x) == 16 * 6 + 6
    assert "PCIe 3.0 x16: 15.75 GB/s" in {t.name for t in full.data}


def test_links_never_run_through_other_nodes(fabric):
    """Straight where clear; arcs and buses around nodes (the QPI/UPI goes around the core)."""
    fig = fabric_figure(fabric)
    pos = {n: np.array(p) for n, p in fabric_layout(fabric).items()}
    points = np.array(list(pos.values()))
    for trace in (t for t in fig.data if t.mode == "lines"):
        for piece in _pieces(trace):
            ends = np.array([piece[0], piece[-1]])
            others = points[~np.isclose(points[:, None, :], ends[None, :, :]).all(axis=2).any(axis=1)]
            samples = np.concatenate([np.linspace(a, b, 30) for a, b in zip(piece[:-1], piece[1:])])
            distance = np.linalg.norm(samples[:, None, :] - others[None, :, :], axis=2).min()
            assert distance > 0.12, (trace.name, piece[0], piece[-1])


def test_sockets_link_goes_around_the_gpus():
    G = topo.dgx1v()
    fig = fabric_figure(G)
    (qpi,) = _pieces(_trace(fig, link_class(G.edges["cpu0", "cpu1"])))
    gpu_y = [fabric_layout(G)[g][1] for g in topo.gpus(G)]
    assert len(qpi) == 4 and qpi[1][1] < min(gpu_y)  # down, across under everything, up


def test_edge_values_colour_links():
    G = topo.dgx1v()
    values = {("gpu0", "gpu3"): 100.0, ("gpu3", "gpu0"): 50.0, ("gpu0", "gpu1"): 0.0}
    fig = fabric_figure(G, host_layer=False, edge_values=values, value_label="load (%)",
                        value_range=(0, 100), edge_text={("gpu0", "gpu3"): "two channels"})
    details = _trace(fig, "link details")
    hover = dict(zip((t.split("</b>")[0] for t in details.hovertext), zip(details.hovertext, details.marker.color)))
    text, colour = hover["<b>gpu0 ↔ gpu3"]
    assert "gpu0 → gpu3: load (%) 100" in text and "gpu3 → gpu0: load (%) 50" in text and "two channels" in text
    assert colour == "rgb(178, 24, 43)"  # the top of the scale: the larger direction counts
    unused = _trace(fig, "links without a value")
    assert len(_pieces(unused)) == 16 - 2 and unused.showlegend
    assert hover["<b>gpu0 ↔ gpu1"][1] != hover["<b>gpu2 ↔ gpu3"][1] == unused.line.color
    scale = _trace(fig, "colour scale")
    assert scale.marker.showscale and (scale.marker.cmin, scale.marker.cmax) == (0, 100)
    assert scale.marker.colorbar.title.text == "load (%)"


def test_bandwidth_colour_bar_has_units_and_a_shared_range():
    G = topo.dgx1v()
    fig = fabric_figure(G, color_range=(10e9, 400e9))
    bar = _trace(fig, "colour scale").marker
    assert "GB/s" in bar.colorbar.title.text
    assert list(bar.colorbar.ticktext) == ["10", "20", "50", "100", "200", "400"]
    alone = fabric_figure(G)
    assert _trace(alone, "NVLink 2.0 x1: 25 GB/s").line.color != _trace(fig, "NVLink 2.0 x1: 25 GB/s").line.color


def test_keywords_pos_title_size_highlight_labels():
    G = topo.dgx1v()
    pos = {n: (x + 100.0, y) for n, (x, y) in fabric_layout(G).items()}
    fig = fabric_figure(G, pos=pos, title="mine", width=800, height=500, highlight=["gpu0"], labels=False)
    gpus = _trace(fig, "GPU")
    assert min(gpus.x) >= 100.0 and gpus.text is None
    assert list(gpus.marker.opacity) == [1.0] + [0.3] * 7
    assert (fig.layout.title.text, fig.layout.width, fig.layout.height) == ("mine", 800, 500)
    with pytest.raises(KeyError):
        fabric_figure(G, pos={"gpu0": (0.0, 0.0)})


def test_clusters_and_unknown_fabrics():
    fig = fabric_figure(topo.build("2xdgx1v"))
    assert len(_trace(fig, "network switch").x) >= 1
    assert [a.text for a in fig.layout.annotations] == ["host 0", "host 1"]
    assert "InfiniBand EDR 4x (100 Gb/s) x1: 12.5 GB/s" in {t.name for t in fig.data}
    # 426 nodes (128 GPUs): above MAX_LABELLED, as 16 hosts were, at a third of the drawing's cost.
    big = fabric_figure(topo.build("8xdgx2:rail"), host_layer=False)
    assert _trace(big, "GPU").text is None  # too many nodes to label
    import networkx as nx
    from topo.parts import add_gpu, add_link
    G = nx.DiGraph()
    for i in range(3):
        add_gpu(G, f"g{i}", "P100", index=i, socket=0)
    add_link(G, "g0", "g1", "nvlink1")
    add_link(G, "g1", "g2", "nvlink1", links=2)
    fig = fabric_figure(G)
    assert fig.layout.title.text == "fabric"
    assert len(_trace(fig, "link details").x) == 2


def test_invalid_fabric_is_rejected():
    G = topo.dgx1v()
    G.remove_edge("gpu0", "gpu3")
    with pytest.raises(topo.TopologyError, match="no reverse edge"):
        fabric_figure(G)


def test_edge_values_must_be_finite_numbers():
    G = topo.dgx1v()
    for bad in (float("nan"), float("inf"), "high", None):
        with pytest.raises(topo.DgxTopoError, match=r"edge_values\[\('gpu0', 'gpu3'\)\] must be a finite number"):
            fabric_figure(G, edge_values={("gpu0", "gpu3"): bad})


def _bundle_links(fig) -> list:
    """Link counts of the buses, read from their hover text ("bundle of N links")."""
    return [int(t.split("bundle of ")[1].split(" ")[0]) for t in _trace(fig, "bundle details").hovertext]


def test_dgx2_opens_as_its_switch_planes_with_every_link_a_click_away():
    G = topo.dgx2()
    fig = fabric_figure(G)
    # One bus per baseboard: 8 GPUs to each of its 6 NVSwitches.
    assert _bundle_links(fig) == [48, 48]
    details = _trace(fig, "bundle details").hovertext
    assert "every one of GPUs 0-7 to every one of NVSwitches 0-5" in details[0]
    assert "per GPU: 6 NVLinks, 150 GB/s per direction" in details[0]
    assert sorted(a.text for a in fig.layout.annotations) == [f"plane {i}" for i in range(6)]
    # The full view is in the figure, hidden; the buttons swap the two views.
    every = _trace(fig, "link details, every link")
    assert every.visible is False and len(every.x) == len(_links(G))
    (menu,) = fig.layout.updatemenus
    bundled, full = (b.args[0]["visible"] for b in menu.buttons)
    names = [t.name for t in fig.data]
    assert [v for v, n in zip(bundled, names) if n == "link details, every link"] == [False]
    assert [v for v, n in zip(full, names) if n in ("bundle details", "NVLink 2.0 x1: 25 GB/s, bundled")] == [False, False]
    assert all(bundled[names.index(k)] and full[names.index(k)] for k in ("GPU", "NVSwitch", "colour scale"))
    assert [t.visible is not False for t in fig.data] == list(bundled)


def test_nvl72_opens_as_trays_and_switch_trays():
    G = topo.build("gb200nvl72")
    fig = fabric_figure(G)
    assert _bundle_links(fig) == [648, 648]  # each GPU column to the 18 chips: 1,296 links in two buses
    assert [t.split("<br>")[1] for t in _trace(fig, "bundle details").hovertext] == [
        "every one of GPUs 0-35 to every one of NVSwitches 0-17", "every one of GPUs 36-71 to every one of NVSwitches 0-17"]
    texts = {a.text for a in fig.layout.annotations}
    assert {f"compute tray {t}" for t in range(18)} | {f"switch tray {t}" for t in range(9)} <= texts
    assert len(fig.layout.shapes) == 18 + 9
    gpus = _trace(fig, "GPU")
    assert gpus.text is not None and len(gpus.text) == 72  # the core is labelled; the host layer is not
    assert _trace(fig, "CPU").text is None
    assert len(_trace(fig, "link details, every link").x) == len(_links(G))


def test_fabric_figure_dict_is_the_figure_unchecked():
    """The plain dict the report writes is the figure fabric_figure returns, property by
    property (a bundled view with its buttons, on a given layout), and plotly accepts it."""
    import json

    import plotly.io as pio

    G = topo.dgx2()
    figure = fabric_figure_dict(G, pos=fabric_layout(G), title="DGX-2")
    checked = go.Figure(figure)  # raises ValueError naming any property plotly does not know
    assert json.loads(pio.to_json(checked)) == json.loads(pio.to_json(fabric_figure(G, title="DGX-2")))
    assert figure["layout"]["updatemenus"] and any(t.get("visible") is False for t in figure["data"])


def test_links_with_values_are_never_bundled():
    """A channel figure draws the links it colours one by one; only the idle ones are bundled."""
    G = topo.dgx2()
    values = {(f"gpu{g}", f"nvswitch{w}"): 50.0 for g in range(8) for w in range(6)}
    fig = fabric_figure(G, host_layer=False, edge_values=values, bundle=True)
    (text,) = _trace(fig, "bundle details").hovertext
    assert "every one of GPUs 8-15 to every one of NVSwitches 6-11" in text
    shown = _trace(fig, "link details")
    assert len(shown.x) == 48 + 6  # board 0's links and the trunks, one by one


def test_labels_are_readable_where_they_are_drawn():
    G = topo.dgx2()
    fig = fabric_figure(G, highlight=[f"gpu{i}" for i in range(8)], bundle=False)
    gpus = _trace(fig, "GPU")
    colours = dict(zip(gpus.marker.opacity, gpus.textfont.color))
    assert colours[0.3] == "#1a1a1a"  # dark on the faded green, as on the full green
    sides = dict(zip(_trace(fig, "PCIe switch").text, _trace(fig, "PCIe switch").textposition))
    assert set(sides.values()) <= {"bottom center", "top center", "middle right", "middle left", "bottom right",
                                   "bottom left", "top right", "top left"}
    h100 = fabric_figure(topo.build("dgxh100"))
    switches = _trace(h100, "NVSwitch")
    assert set(switches.textposition) == {"top center"}  # the links leave downwards, to the GPUs
