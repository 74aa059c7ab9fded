"""Fabric layouts: positions only, for every node, from attributes and edges (never node ids)."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import pytest

import topo
from topo.layout import STYLES, LayoutError, fabric_layout, layout_style
from topo.parts import add_gpu, add_link


def _distance(p, q) -> float:
    return math.hypot(p[0] - q[0], p[1] - q[1])


@pytest.mark.parametrize("name", [*topo.SYSTEMS, "2xdgx1v", "3xdgx2:rail"])
def test_every_node_gets_a_distinct_finite_position(name):
    G = topo.build(name)
    pos = fabric_layout(G)
    assert set(pos) == set(G.nodes)
    for x, y in pos.values():
        assert isinstance(x, float) and isinstance(y, float) and math.isfinite(x) and math.isfinite(y)
    closest = min(_distance(pos[a], pos[b]) for a, b in itertools.combinations(G.nodes, 2))
    assert closest >= 0.5  # nodes never sit on each other


def test_cube_mesh_two_quads_and_cross_links():
    G = topo.dgx1v()
    pos = fabric_layout(G)
    assert layout_style(G) == "cube_mesh"
    quads = [[f"gpu{i}" for i in range(4)], [f"gpu{i}" for i in range(4, 8)]]
    for quad in quads:  # a unit square per quad
        xs = sorted({pos[g][0] for g in quad})
        ys = sorted({pos[g][1] for g in quad})
        assert len(xs) == 2 and len(ys) == 2 and xs[1] - xs[0] == ys[1] - ys[0] == 1.0
    assert max(pos[g][0] for g in quads[0]) < min(pos[g][0] for g in quads[1])  # side by side
    for a in range(4):  # each cross link joins the same row of the two quads, mirrored
        assert pos[f"gpu{a}"][1] == pos[f"gpu{a + 4}"][1]
    # GPUs under one PCIe switch share a row, and their switch sits beyond that row.
    for switch in topo.nodes_of_kind(G, "pcie_switch"):
        pair = [n for n in G.successors(switch) if G.nodes[n]["kind"] == "gpu"]
        assert pos[pair[0]][1] == pos[pair[1]][1]
        assert abs(pos[switch][1] - 0.5) > 1.0 and pos[switch][0] == pytest.approx(
            (pos[pair[0]][0] + pos[pair[1]][0]) / 2)
    # The sockets on either side.
    assert pos["cpu0"][0] < 0 < 3 < pos["cpu1"][0]


def test_dgx2_two_baseboards_with_trunks_straight_across():
    G = topo.dgx2()
    pos = fabric_layout(G)
    assert layout_style(G) == "baseboards"
    for board in (0, 1):
        gpus = [n for n in topo.gpus(G) if G.nodes[n]["baseboard"] == board]
        switches = [n for n in topo.nodes_of_kind(G, "nvswitch") if G.nodes[n]["baseboard"] == board]
        assert len({pos[n][0] for n in gpus}) == 1 and len({pos[n][0] for n in switches}) == 1
    for s in range(6):  # peer switches face each other
        assert pos[f"nvswitch{s}"][1] == pos[f"nvswitch{s + 6}"][1]
        assert pos["gpu0"][0] < pos[f"nvswitch{s}"][0] < pos[f"nvswitch{s + 6}"][0] < pos["gpu8"][0]
    # The PCIe trees grow outwards: socket 0 left of board 0, socket 1 right of board 1.
    assert pos["cpu0"][0] < pos["pcie0"][0] < pos["pcie4"][0] < pos["gpu0"][0]
    assert pos["gpu8"][0] < pos["cpu1"][0]


@pytest.mark.parametrize("name", ["dgxa100", "dgxh100", "dgxb200"])
def test_a_single_board_lies_on_its_side(name):
    """GPUs in a row, the NVSwitches centred in a row above, the host layer in rows below: a
    drawing wider than tall, for a page-wide figure (not a column in a fifth of it)."""
    G = topo.build(name)
    pos = fabric_layout(G)
    gpus, switches = topo.gpus(G), topo.nodes_of_kind(G, "nvswitch")
    assert [pos[g] for g in gpus] == [(float(i), 0.0) for i in range(len(gpus))]
    assert len({pos[w][1] for w in switches}) == 1 and pos[switches[0]][1] > 0
    assert sum(pos[w][0] for w in switches) / len(switches) == pytest.approx((len(gpus) - 1) / 2)
    rest = [p for n, p in pos.items() if n not in gpus and n not in switches]
    assert all(y < 0 for _, y in rest)
    for y in {y for _, y in rest}:  # each row keeps its parts a unit apart
        xs = sorted(x for x, yy in rest if yy == y)
        assert all(b - a >= 1.0 - 1e-9 for a, b in zip(xs, xs[1:]))
    xs, ys = zip(*(pos[n] for n in [*gpus, *switches]))  # the NVLink core (a channel figure's canvas)
    assert max(xs) - min(xs) > 2 * (max(ys) - min(ys))


def test_nps4_sockets_are_squares_below_the_parts_they_serve():
    """DGX A100 (NPS4): each socket's four NUMA nodes, all linked to each other, form a unit
    square below every PCIe switch and NIC that hangs off a GPU's switch."""
    G = topo.build("dgxa100")
    pos = fabric_layout(G)
    cpus = topo.nodes_of_kind(G, "cpu")
    H = nx.Graph((u, v) for u, v, k in G.edges(data="kind") if k == "cpu-to-cpu")
    sockets = [c for c in nx.find_cliques(H) if len(c) == 4]
    assert len(sockets) == 2 and {n for s in sockets for n in s} == set(cpus)
    for socket in sockets:
        xs, ys = sorted({pos[n][0] for n in socket}), sorted({pos[n][1] for n in socket})
        assert len(xs) == len(ys) == 2 and xs[1] - xs[0] == pytest.approx(ys[1] - ys[0]) == pytest.approx(1.0)
    switches = topo.nodes_of_kind(G, "pcie_switch")
    assert max(pos[n][1] for n in cpus) < min(pos[n][1] for n in switches)


def test_node_ids_are_never_parsed():
    """Renaming every node moves nothing: the layout reads attributes and edges only."""
    for name in topo.SYSTEMS:
        G = topo.build(name)
        names = {n: f"node-{i * 7919 % 1000:03d}" for i, n in enumerate(G.nodes)}
        H = nx.relabel_nodes(G, names)
        pos, renamed = fabric_layout(G), fabric_layout(H)
        assert all(pos[n] == renamed[names[n]] for n in G.nodes)


def _ring_fabric(n):
    G = nx.DiGraph(name="ring")
    for i in range(n):
        add_gpu(G, f"g{i}", "V100-SXM2", index=i, socket=0)
    for i in range(n if n > 1 else 0):  # one GPU: no link (a link to itself is refused)
        add_link(G, f"g{i}", f"g{(i + 1) % n}", "nvlink2")
    return G


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_unknown_fabrics_get_a_ring(n):
    G = _ring_fabric(n)
    pos = fabric_layout(G)
    assert layout_style(G) == "ring" and set(pos) == set(G.nodes)
    if n > 2:
        centre = (sum(x for x, _ in pos.values()) / n, sum(y for _, y in pos.values()) / n)
        radii = [_distance(p, centre) for p in pos.values()]
        assert max(radii) - min(radii) < 1e-9
        neighbours = [_distance(pos[f"g{i}"], pos[f"g{(i + 1) % n}"]) for i in range(n)]
        assert neighbours == pytest.approx([1.0] * n)


def test_cluster_hosts_side_by_side_network_above():
    G = topo.build("2xdgx1v")
    pos = fabric_layout(G)
    hosts = {h: [n for n in G if G.nodes[n]["host"] == h] for h in (0, 1)}
    assert max(pos[n][0] for n in hosts[0]) < min(pos[n][0] for n in hosts[1])
    switches = [n for n in G if G.nodes[n]["kind"] == "network_switch"]
    assert switches and min(pos[n][1] for n in switches) > max(pos[n][1] for n in hosts[0] + hosts[1])
    # Host 0 is laid out as the system alone.
    alone = fabric_layout(topo.dgx1v())
    offset = pos["h0.gpu0"][0] - alone["gpu0"][0], pos["h0.gpu0"][1] - alone["gpu0"][1]
    assert offset == (0.0, 0.0)


def test_many_hosts_form_a_grid():
    G = topo.build("16xdgx2:rail")
    pos = fabric_layout(G)
    corner = {h: (min(pos[n][0] for n in G if G.nodes[n]["host"] == h),
                  max(pos[n][1] for n in G if G.nodes[n]["host"] == h)) for h in range(16)}
    assert len({round(x, 6) for x, _ in corner.values()}) == 4  # 4 columns
    assert len({round(y, 6) for _, y in corner.values()}) == 4  # 4 rows


def test_scale_and_forced_styles():
    G = topo.dgx1v()
    assert fabric_layout(G, scale=2.0)["gpu1"] == (2.0, 2.0)
    ring = fabric_layout(G, style="ring")
    assert set(ring) == set(G.nodes)
    assert set(fabric_layout(topo.dgx2(), style="ring")) == set(topo.dgx2().nodes)
    assert STYLES[0] == "auto"


@pytest.mark.parametrize("name, style, message", [
    ("dgx2", "cube_mesh", "layout style 'cube_mesh' does not fit host 0 of DGX-2: expected 8 GPUs in two "
                          "fully connected quads and no NVSwitch"),
    ("dgx1v", "baseboards", "layout style 'baseboards' does not fit host 0 of DGX-1V: expected NVSwitches"),
    ("dgx1v", "spiral", "unknown layout style 'spiral': expected one of auto, cube_mesh, baseboards, ring"),
])
def test_layout_errors(name, style, message):
    with pytest.raises(LayoutError) as error:
        fabric_layout(topo.build(name), style=style)
    assert str(error.value) == message
    assert isinstance(error.value, topo.DgxTopoError)


def test_a_broken_cube_mesh_falls_back_to_the_ring():
    G = topo.dgx1v()
    for u, v in (("gpu0", "gpu1"), ("gpu1", "gpu0")):
        G.remove_edge(u, v)
    topo.validate(G)
    assert layout_style(G) == "ring"



# That topo.layout and models import no plotly, and topo.plot / models.present.plot do, is checked in
# tests/test_imports.py (one subprocess for every import check).
