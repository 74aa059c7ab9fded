"""Plotly figure of a fabric: nodes where :func:`topo.layout.fabric_layout` puts them, links
drawn with their bandwidth.

This is the only module of :mod:`topo` that imports plotly; ``import topo`` does not load it.
:func:`fabric_figure` returns a ``plotly.graph_objects.Figure`` and never shows it: call
``fig.show()`` or ``fig.write_html(path)`` yourself.

What the figure holds (tests read it as data):

- one line trace per *link class* (kind, technology, link count, bandwidth), named like
  ``"NVLink 2.0 x2: 50 GB/s"``, drawn with the colour and width of its bandwidth; a link is
  drawn once for both directions of its edge pair;
- one marker trace ``"link details"`` with a point on every drawn link (its midpoint), whose
  hover text gives the endpoints, kind, link count and GB/s per direction, and whose
  ``marker.color`` holds one colour per link, the one it is drawn in (a colour bar, on an
  invisible trace ``"colour scale"``, explains them);
- one marker trace per node kind (``"GPU"``, ``"NVSwitch"``, ``"PCIe switch"``, ``"CPU"``,
  ``"NIC"``, or the kind itself for others), hover text listing the node's attributes.

Links that would pass through a node are drawn as arcs; links of the host layer that would
cross the NVLink core (the QPI/UPI between the sockets) are routed around it. Labels beside a
node sit on a side no link leaves from (:func:`label_side`); labels inside a GPU are dark or
white by contrast with the GPU as drawn.

Large fabrics open at the level a reader can follow (``bundle``; by default beyond
:data:`MAX_UNBUNDLED` GPU-to-NVSwitch links): GPUs that each link to every NVSwitch of a
column (a DGX-2 baseboard, the rack of a GB200 NVL72) are joined to one bus by a stub each,
the bus hovering its bundle (trace ``"bundle details"``); a button, top right, switches to
every link drawn one by one (those traces are in the figure, hidden, their hover points in
``"link details, every link"``). The compute trays and switch trays of a rack are framed and
named, and the NVSwitch planes of a DGX-2 (a switch of each baseboard joined by a trunk) are
named on their trunks. Links that carry a value (``edge_values``) are never bundled.

With ``edge_values`` (per directed edge, e.g. how much of a link's capacity a collective
uses), links are coloured by the larger of their two directions' values instead of their
bandwidth, and links without a value are drawn thin and grey.

Examples
--------
>>> from topo import dgx1v
>>> fig = fabric_figure(dgx1v(), host_layer=False)
>>> sorted(t.name for t in fig.data if t.mode == "lines")
['NVLink 2.0 x1: 25 GB/s', 'NVLink 2.0 x2: 50 GB/s']
>>> len(fig.data[-1].x)  # the GPU trace: 8 GPUs
8
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import plotly.colors as pcolors
import plotly.graph_objects as go

from .errors import DgxTopoError
from .layout import CORE_KINDS, fabric_layout
from .plot_style import blend, build_figure, style_layout, text_colour
from .schema import ATTRIBUTES, gpus, validate
from .select import format_gpu_ids
from .specs import LINKS
from .units import to_GBps, to_us

__all__ = ["fabric_figure", "fabric_figure_dict", "link_class", "label_side", "MAX_UNBUNDLED", "BANDWIDTH_COLORSCALE", "LOAD_COLORSCALE", "KIND_STYLE",
           "MAX_LABELLED"]

#: Link colours by bandwidth (log scale): light (slow) to dark (fast).
BANDWIDTH_COLORSCALE = ((0.0, "#a6cee3"), (0.5, "#3182bd"), (1.0, "#08306b"))
#: Link colours by a value such as the share of capacity a collective uses: 0 to the maximum.
LOAD_COLORSCALE = ((0.0, "#fee391"), (0.5, "#fc8d59"), (1.0, "#b2182b"))
_UNUSED_COLOR = "#d0d0d0"


def _as_lists(scale) -> list:
    """A colour scale as plotly takes it: a list of ``[position, colour]`` (it reads a tuple as one colour)."""
    return [list(stop) for stop in scale]


#: How each node kind is drawn: legend name, marker symbol, size, colour.
KIND_STYLE = MappingProxyType({
    "gpu": ("GPU", "square", 26, "#76b900"),
    "nvswitch": ("NVSwitch", "diamond", 20, "#5b3f8c"),
    "pcie_switch": ("PCIe switch", "circle", 13, "#8c8c8c"),
    "cpu": ("CPU", "hexagon", 24, "#4d4d4d"),
    "nic": ("NIC", "triangle-up", 15, "#d98c1f"),
    "network_switch": ("network switch", "square-open", 18, "#b03060"),
})
_OTHER_STYLE = ("circle", 14, "#b07aa1")
_DASH = MappingProxyType({"nvlink": "solid", "pcie": "dot", "cpu-to-cpu": "dash", "network": "dashdot"})
_KIND_LABEL = MappingProxyType({"nvlink": "NVLink", "pcie": "PCIe", "cpu-to-cpu": "CPU-to-CPU", "network": "network"})
_WIDTH = (1.5, 8.0)  # line width of the slowest and the fastest link [px]
#: Fabrics with more nodes drawn get no labels and smaller markers by default.
MAX_LABELLED = 150
#: Fabrics with more NVLinks between GPUs and NVSwitches drawn open in the bundled view.
MAX_UNBUNDLED = 64
_BOX_COLOR = "#9a9a9a"


def link_class(data: dict) -> str:
    """Display name of a link class from edge attributes: technology, count and bandwidth.

    Parameters
    ----------
    data : dict
        Edge attributes (``kind``, ``links``, ``bandwidth`` [B/s], optional ``link``).

    Returns
    -------
    str

    Examples
    --------
    >>> from topo import dgx2
    >>> G = dgx2()
    >>> link_class(G.edges["nvswitch0", "nvswitch6"]), link_class(G.edges["cpu0", "pcie0"])
    ('NVLink 2.0 x8: 200 GB/s', 'PCIe 3.0 x16: 15.75 GB/s')
    """
    spec = LINKS.get(data.get("link"))
    label = spec.label if spec is not None else _KIND_LABEL.get(data["kind"], data["kind"])
    if data["kind"] == "pcie" and data["links"] == 1:
        return f"{label}: {to_GBps(data['bandwidth']):.4g} GB/s"
    return f"{label} x{data['links']}: {to_GBps(data['bandwidth']):.4g} GB/s"


# ------------------------------------------------------------------------------ routing
def _polyline_clear(points, obstacles, clearance) -> bool:
    """Whether a polyline stays at least ``clearance`` from every obstacle (arrays, vectorised)."""
    if len(obstacles) == 0:
        return True
    # Only obstacles near the polyline's bounding box can be closer than the clearance.
    lo, hi = points.min(axis=0) - clearance, points.max(axis=0) + clearance
    obstacles = obstacles[np.all((obstacles >= lo) & (obstacles <= hi), axis=1)]
    if len(obstacles) == 0:
        return True
    a, b = points[:-1], points[1:]
    ab = b - a
    length2 = (ab ** 2).sum(axis=1)
    length2[length2 == 0] = 1.0
    ap = obstacles[:, None, :] - a[None, :, :]
    t = np.clip((ap * ab[None, :, :]).sum(axis=2) / length2[None, :], 0.0, 1.0)
    closest = a[None, :, :] + t[..., None] * ab[None, :, :]
    return bool(np.linalg.norm(obstacles[:, None, :] - closest, axis=2).min() >= clearance)


def _bezier(a, b, offset, normal, samples=25) -> np.ndarray:
    control = (a + b) / 2 + normal * 2 * offset  # the apex lies ``offset`` from the chord
    t = np.linspace(0.0, 1.0, samples)[:, None]
    return (1 - t) ** 2 * a + 2 * (1 - t) * t * control + t ** 2 * b


# Links x nodes checked at once by _Router.routes.
_BATCH = 200_000


class _Router:
    """Straight links where they are clear; arcs around nodes; host-layer links that would
    cross an NVLink core (one per host) go around it, by its side or as a bus under or over
    everything, whichever is shortest and clear."""

    def __init__(self, pos, shown, core_hosts, unit):
        self.pos = {n: np.asarray(pos[n], dtype=float) for n in shown}
        self.nodes = list(self.pos)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.points = np.array([self.pos[n] for n in self.nodes]).reshape(-1, 2)
        self.core = set(core_hosts)
        self.unit = unit
        self.clearance = 0.15 * unit
        self.gap = 0.7 * unit
        self.centre = self.points.mean(axis=0)
        self.extent = (self.points[:, 0].min(), self.points[:, 0].max(),
                       self.points[:, 1].min(), self.points[:, 1].max())
        margin = 0.1 * unit
        by_host = defaultdict(list)
        for n, host in core_hosts.items():
            if n in self.pos:
                by_host[host].append(self.pos[n])
        self.boxes = []
        for members in by_host.values():
            p = np.array(members)
            self.boxes.append((p[:, 0].min() - margin, p[:, 0].max() + margin,
                               p[:, 1].min() - margin, p[:, 1].max() + margin))
        self.box_array = np.array(self.boxes, dtype=float).reshape(-1, 4)

    def _crossed(self, route) -> list:
        if not self.boxes:
            return []
        samples = np.concatenate([np.linspace(a, b, 40) for a, b in zip(route[:-1], route[1:])])
        # Every box at once: is any sample strictly inside it ((boxes, samples) comparisons).
        x, y = samples[None, :, 0], samples[None, :, 1]
        xmin, xmax, ymin, ymax = (self.box_array[:, i, None] for i in range(4))
        hit = ((x > xmin) & (x < xmax) & (y > ymin) & (y < ymax)).any(axis=1)
        return [box for box, crossed in zip(self.boxes, hit.tolist()) if crossed]

    def _obstacles(self, u, v, box=None) -> np.ndarray:
        """Every node but ``u`` and ``v`` (within ``box``, ``(lo, hi)``, if given)."""
        keep = np.ones(len(self.nodes), dtype=bool)
        if box is not None:
            keep = np.all((self.points >= box[0]) & (self.points <= box[1]), axis=1)
        keep[[self.index[u], self.index[v]]] = False
        return self.points[keep]

    def routes(self, pairs) -> dict:
        """:meth:`route` of every pair, the straight links' clearance checked for all of them at
        once (the same arithmetic as :func:`_polyline_clear`, one array per fabric instead of
        numpy's cost per link)."""
        out, straight = {}, []
        for u, v in pairs:
            if u not in self.core and v not in self.core and self._crossed(np.array([self.pos[u], self.pos[v]])):
                out[u, v] = self.route(u, v)  # around an NVLink core
            else:
                straight.append((u, v))
        # In chunks of links: (links x nodes) arrays stay a few MB on a cluster of thousands of nodes.
        chunk = max(1, _BATCH // max(len(self.nodes), 1))
        for start in range(0, len(straight), chunk):
            part = straight[start:start + chunk]
            for (u, v), ok in zip(part, self._clear(part)):
                out[u, v] = (np.array([self.pos[u], self.pos[v]]) if ok
                             else self._arc(self.pos[u], self.pos[v], self._obstacles(u, v),
                                            u not in self.core and v not in self.core))
        return out

    def _clear(self, links) -> np.ndarray:
        """Whether each straight link stays ``clearance`` from every other node."""
        iu = np.array([self.index[u] for u, _ in links])
        iv = np.array([self.index[v] for _, v in links])
        a, b = self.points[iu], self.points[iv]  # (links, 2)
        ab = b - a
        length2 = (ab ** 2).sum(axis=1)
        length2[length2 == 0] = 1.0
        ap = self.points[None, :, :] - a[:, None, :]  # (links, nodes, 2)
        t = np.clip((ap * ab[:, None, :]).sum(axis=2) / length2[:, None], 0.0, 1.0)
        closest = a[:, None, :] + t[..., None] * ab[:, None, :]
        distance = np.linalg.norm(self.points[None, :, :] - closest, axis=2)
        rows = np.arange(len(links))
        distance[rows, iu] = np.inf  # a link's own ends are no obstacles
        distance[rows, iv] = np.inf
        return distance.min(axis=1) >= self.clearance

    def route(self, u, v) -> np.ndarray:
        a, b = self.pos[u], self.pos[v]
        straight = np.array([a, b])
        host_layer = u not in self.core and v not in self.core
        crossed = self._crossed(straight) if host_layer else []
        if not crossed:
            # The obstacles near the straight link only (as _polyline_clear keeps them): most
            # links are straight, and a fabric has hundreds of nodes.
            box = (straight.min(axis=0) - self.clearance, straight.max(axis=0) + self.clearance)
            if _polyline_clear(straight, self._obstacles(u, v, box), self.clearance):
                return straight
            return self._arc(a, b, self._obstacles(u, v), host_layer)
        return self._around(a, b, self._obstacles(u, v), crossed)

    def _arc(self, a, b, obstacles, host_layer) -> np.ndarray:
        chord = b - a
        normal = np.array([-chord[1], chord[0]]) / np.linalg.norm(chord)
        side = float(np.dot((a + b) / 2 - self.centre, normal))
        if abs(side) < 1e-9 * self.unit:
            side = -normal[1] or -normal[0]  # on the centre: bend down (or left)
        normal = normal if side > 0 else -normal
        for offset in (0.4, 0.6, 0.9, 1.2, 1.6, 2.0, 2.5, 3.0, 4.0):
            for sign in (1, -1):
                curve = _bezier(a, b, offset * self.unit, sign * normal)
                if (_polyline_clear(curve, obstacles, self.clearance)
                        and not (host_layer and self._crossed(curve))):
                    return curve
        return _bezier(a, b, 0.6 * self.unit, normal)

    def _around(self, a, b, obstacles, crossed) -> np.ndarray:
        xmin, xmax, ymin, ymax = self.extent
        candidates = []
        for bx0, bx1, _, _ in crossed:  # up or down beside the core
            for x in (bx0 - self.gap, bx1 + self.gap):
                candidates.append(np.array([a, [x, a[1]], [x, b[1]], b]))
        for level in (ymin - self.gap, ymax + self.gap):  # a bus under or over everything
            candidates.append(np.array([a, [a[0], level], [b[0], level], b]))
        clear = [c for c in candidates
                 if _polyline_clear(c, obstacles, self.clearance) and not self._crossed(c)]
        if not clear:
            return candidates[-2]
        return min(clear, key=lambda c: float(np.linalg.norm(np.diff(c, axis=0), axis=1).sum()))


class _Points:
    """Points on a grid of cells, to ask "is any point within ``radius``?" quickly (kept as
    floats: the same arithmetic as on numpy's scalars, without their cost per point)."""

    def __init__(self, radius):
        self.radius = radius
        self.cells = defaultdict(list)

    def _cell(self, x, y):
        return (int(math.floor(x / self.radius)), int(math.floor(y / self.radius)))

    def add(self, p) -> None:
        x, y = float(p[0]), float(p[1])
        self.cells[self._cell(x, y)].append((x, y))

    def near(self, p) -> bool:
        x, y = float(p[0]), float(p[1])
        cx, cy = self._cell(x, y)
        radius, cells, hypot = self.radius, self.cells, math.hypot
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for qx, qy in cells.get((cx + dx, cy + dy), ()):
                    if hypot(x - qx, y - qy) <= radius:
                        return True
        return False


def _on_segment(points, fraction):
    """The point ``fraction`` along a straight link (two points), as :func:`_along` computes it
    with numpy (the same operations on floats, without numpy's cost per call on two points), or
    None for a longer polyline or a link of zero length."""
    if len(points) != 2:
        return None
    (ax, ay), (bx, by) = points[0].tolist(), points[1].tolist()
    dx, dy = bx - ax, by - ay
    step = math.sqrt(dx * dx + dy * dy)  # numpy's norm of two components
    if step <= 0:
        return None
    target = step * fraction
    return np.array([ax + dx * target / step, ay + dy * target / step])


def _midpoint(points) -> np.ndarray:
    """The point halfway along a polyline."""
    fast = _on_segment(points, 0.5)
    if fast is not None:
        return fast
    steps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    half = steps.sum() / 2
    done = 0.0
    for (a, b), step in zip(zip(points[:-1], points[1:]), steps):
        if done + step >= half and step > 0:
            return a + (b - a) * (half - done) / step
        done += step
    return points[len(points) // 2]


def _along(points, fraction) -> np.ndarray:
    fast = _on_segment(points, fraction)
    if fast is not None:
        return fast
    steps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    target = steps.sum() * fraction
    done = 0.0
    for (a, b), step in zip(zip(points[:-1], points[1:]), steps):
        if done + step >= target and step > 0:
            return a + (b - a) * (target - done) / step
        done += step
    return points[-1]


def _unit(pos, gpu_nodes) -> float:
    """The typical distance between neighbouring GPUs (1 for :func:`fabric_layout`)."""
    points = np.array([pos[n] for n in gpu_nodes[:64]])  # a sample is enough
    if len(points) < 2:
        return 1.0
    d = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2)
    np.fill_diagonal(d, np.inf)
    nearest = d.min(axis=1)
    nearest = nearest[np.isfinite(nearest) & (nearest > 0)]
    return float(np.median(nearest)) if len(nearest) else 1.0


# ------------------------------------------------------------------------------ text
def _format_value(attribute, value) -> str:
    if attribute.unit == "B/s":
        return f"{to_GBps(value):.4g} GB/s"
    if attribute.unit == "s":
        return f"{to_us(value):.3g} µs"
    return str(value)


def _node_hover(G, node) -> str:
    data = G.nodes[node]
    kind = data["kind"]
    lines = [f"<b>{node}</b> ({KIND_STYLE.get(kind, (kind,))[0]})"]
    seen = set()
    for attribute in ATTRIBUTES:
        name = attribute.name
        if attribute.where != "node" or name in seen or name == "kind" or name not in data:
            continue
        if not attribute.applies(kind):
            continue
        seen.add(name)
        lines.append(f"{name}: {_format_value(attribute, data[name])}")
    nvlink = sum(d["bandwidth"] for _, _, d in G.out_edges(node, data=True) if d["kind"] == "nvlink")
    if nvlink:
        lines.append(f"NVLink out: {to_GBps(nvlink):.4g} GB/s per direction")
    return "<br>".join(lines)


def _node_label(G, node) -> str:
    data = G.nodes[node]
    kind = data["kind"]
    if kind == "gpu":
        return str(data["index"])
    if kind == "nic":
        return str(data.get("name", node))
    prefix = {"nvswitch": "NVS", "pcie_switch": "PCIe", "cpu": "CPU"}.get(kind)
    return f"{prefix}{data['index']}" if prefix and "index" in data else str(node)


def _edge_hover(G, u, v, values, value_label, extra) -> str:
    data = G.edges[u, v]
    spec = LINKS.get(data.get("link"))
    tech = f" ({spec.label})" if spec is not None else ""
    lines = [f"<b>{u} ↔ {v}</b>", f"kind: {data['kind']}{tech}", f"links: {data['links']}",
             f"{to_GBps(data['bandwidth']):.4g} GB/s per direction "
             f"({to_GBps(2 * data['bandwidth']):.4g} GB/s both ways)",
             f"latency: {to_us(data['latency']):.3g} µs per hop"]
    if values is not None:
        for a, b in ((u, v), (v, u)):
            if (a, b) in values:
                lines.append(f"{a} → {b}: {value_label} {values[a, b]:.4g}")
    for a, b in ((u, v), (v, u)):
        if extra and (a, b) in extra:
            lines.append(str(extra[a, b]))
    return "<br>".join(lines)


def _ticks(lo, hi):
    """Ticks of a log colour bar between two bandwidths [GB/s]: both ends and the round
    1-2-5 values between them that are not too close to an end.

    >>> _ticks(15.75, 38.4)
    [15.75, 20.0, 38.4]
    """
    inner = []
    for exponent in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for mantissa in (1, 2, 5):
            t = mantissa * 10.0 ** exponent
            if lo * 1.15 <= t <= hi / 1.15:
                inner.append(t)
    return sorted({round(lo, 4), *inner, round(hi, 4)})


def _default_height(pos, shown) -> int:
    """A height in pixels that suits the layout's aspect ratio in a page-wide figure."""
    points = np.array([pos[n] for n in shown])
    span = np.ptp(points, axis=0) + 1.5
    return int(np.clip(140 + 700 * span[1] / span[0], 420, 1100))


# ------------------------------------------------------------------------------ figure
def fabric_figure(G, *, pos=None, host_layer: bool = True, edge_values=None,
                  value_label: str = "value", value_range=None, missing_label: str = "links without a value",
                  edge_text=None, highlight=None,
                  color_range=None, labels: bool | None = None, title: str | None = None,
                  width: int | None = None, height: int | None = None, bundle: bool | None = None) -> go.Figure:
    """Draw a fabric: nodes by kind, links coloured and sized by bandwidth (or by a value).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here).
    pos : dict, optional
        ``{node: (x, y)}``; default :func:`topo.layout.fabric_layout`. Must hold every node
        drawn.
    host_layer : bool
        Draw the PCIe switches, CPUs, NICs (every node that is not a GPU or NVSwitch) and
        their links. False shows the NVLink fabric only.
    edge_values : dict, optional
        ``{(u, v): value}`` per directed edge, in display units (e.g. percent). Links are
        then coloured by the larger value of their two directions, on ``LOAD_COLORSCALE``;
        links without a value are thin and grey.
    value_label : str
        Name and unit of ``edge_values`` for the hover text and colour bar
        (e.g. ``"load (% of capacity)"``).
    value_range : tuple of float, optional
        ``(low, high)`` of the colour scale of ``edge_values``; default 0 to the largest.
    missing_label : str
        Legend name of the links ``edge_values`` does not cover.
    edge_text : dict, optional
        ``{(u, v): str}`` extra hover lines per directed edge.
    highlight : iterable, optional
        Nodes to emphasise; the other GPUs are drawn faded.
    color_range : tuple of float, optional
        ``(low, high)`` bandwidth of the colour and width scales [B/s]; default the slowest
        and fastest link drawn. Give the same range to figures that are compared.
    labels : bool, optional
        Write GPU indices, NIC names, ... on the nodes; by default only when at most
        :data:`MAX_LABELLED` nodes are drawn (in a bundled view, the GPUs and NVSwitches when
        they are at most that many). Markers also shrink on larger fabrics.
    title : str, optional
        Default: the fabric's name and "fabric".
    width, height : int, optional
        Figure size in pixels (default: plotly's width, a height that suits the layout).
    bundle : bool, optional
        Draw the bundled view first (see the module docstring); by default when more than
        :data:`MAX_UNBUNDLED` NVLinks join GPUs and NVSwitches (DGX-2, GB200 NVL72).

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.TopologyError
        For an invalid fabric.
    KeyError
        If ``pos`` lacks a node that is drawn.
    """
    figure = fabric_figure_dict(G, pos=pos, host_layer=host_layer, edge_values=edge_values,
                                value_label=value_label, value_range=value_range, missing_label=missing_label,
                                edge_text=edge_text, highlight=highlight, color_range=color_range, labels=labels,
                                title=title, width=width, height=height, bundle=bundle)
    return build_figure(figure["data"], figure["layout"])


def fabric_figure_dict(G, *, pos=None, host_layer: bool = True, edge_values=None,
                       value_label: str = "value", value_range=None, missing_label: str = "links without a value",
                       edge_text=None, highlight=None,
                       color_range=None, labels: bool | None = None, title: str | None = None,
                       width: int | None = None, height: int | None = None, bundle: bool | None = None) -> dict:
    """:func:`fabric_figure` as plotly's plain figure dict, unchecked: for a page that writes
    its figures' JSON itself (the report: building and copying a ``go.Figure`` of a few thousand
    links costs more than drawing it). The arguments, the drawing and the errors are
    :func:`fabric_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``; ``plotly.graph_objects.Figure(figure)``
        accepts it.

    Examples
    --------
    >>> from topo import dgx1v
    >>> figure = fabric_figure_dict(dgx1v(), host_layer=False)
    >>> sorted(figure), figure["data"][-1]["name"], len(figure["data"][-1]["x"])
    (['data', 'layout'], 'GPU', 8)
    """
    validate(G)
    pos = fabric_layout(G) if pos is None else pos
    shown = [n for n, k in G.nodes(data="kind") if host_layer or k in CORE_KINDS]
    core = {n: G.nodes[n].get("host", 0) for n in shown if G.nodes[n]["kind"] in CORE_KINDS}
    gpu_nodes = [n for n in shown if G.nodes[n]["kind"] == "gpu"]
    unit = _unit(pos, gpu_nodes)
    pairs = _links(G, set(shown))
    paint = _Paint(G, pairs, color_range, edge_values, value_range, value_label, missing_label)

    router = _Router(pos, shown, core, unit)
    routes = router.routes(pairs)
    bundles = _bundles(G, pairs, pos, paint, unit)
    if bundle is None:
        bundle = sum(G.nodes[u]["kind"] != G.nodes[v]["kind"] and {G.nodes[u]["kind"], G.nodes[v]["kind"]}
                     == {"gpu", "nvswitch"} for u, v in pairs) > MAX_UNBUNDLED
    bundles = bundles if bundle else []
    node_points = [pos[n] for n in shown]

    fig = _Canvas()
    full = len(fig.data)
    hovers = {}
    ends = _add_links(fig, G, pairs, routes, paint, unit, node_points, edge_text,
                      details="link details, every link" if bundles else "link details", hovers=hovers)
    if bundles:  # the bundled view over the full one (hidden), a button to switch
        every = len(fig.data)
        bundled = {pair for b in bundles for pair in b.pairs}
        ends = _add_links(fig, G, [p for p in pairs if p not in bundled], routes, paint, unit, node_points,
                          edge_text, details="link details", hovers=hovers)
        _add_bundles(fig, G, bundles, pos, paint, ends)
        views = (range(full, every), range(every, len(fig.data)))
    if pairs:  # the colour bar, on an invisible point (in both views)
        scale = paint.colour_bar()
        fig.add_trace(dict(type="scatter", x=[None], y=[None], mode="markers", name="colour scale",
                           marker=dict(color=[scale["cmin"]], showscale=True, **scale),
                           hoverinfo="skip", showlegend=False))
    core_kinds = set(CORE_KINDS) if bundles and len(core) <= MAX_LABELLED else set()
    labelled = (set(G.nodes[n]["kind"] for n in shown) if len(shown) <= MAX_LABELLED else core_kinds) \
        if labels is None else (set(G.nodes[n]["kind"] for n in shown) if labels else set())
    shrink = float(np.clip(math.sqrt(MAX_LABELLED / max(len(shown), 1)), 0.4, 1.0))
    _add_nodes(fig, G, shown, pos, labelled, shrink, None if highlight is None else set(highlight), ends)
    _add_groups(fig, G, shown, gpu_nodes, pos, unit)
    if bundles:
        _view_buttons(fig, *views, len(pairs))
    fig.layout.update(style_layout(title=title if title is not None else
                                   (f"{G.graph['name']} fabric" if G.graph.get("name") else "fabric"),
                                   width=width, height=height, default_height=_default_height(pos, shown),
                                   margin=dict(l=10, r=10, t=50, b=10)))
    fig.layout.update(legend=dict(orientation="h", yanchor="top", y=-0.02, xanchor="left", x=0.0),
                      xaxis=dict(visible=False), yaxis=dict(visible=False, scaleanchor="x", scaleratio=1))
    return fig.as_dict()


class _Canvas:
    """The figure while it is drawn, as plain dicts: traces, shapes, annotations and the layout,
    made one figure dict at the end (:func:`topo.plot_style.build_figure` says why: plotly re-checks every
    trace, shape and annotation of a figure each time one is added)."""

    def __init__(self):
        self.data, self.shapes, self.annotations, self.layout = [], [], [], {}

    def add_trace(self, trace: dict) -> None:
        self.data.append({k: v for k, v in trace.items() if v is not None})

    def add_shape(self, **shape) -> None:
        self.shapes.append(shape)

    def add_annotation(self, **annotation) -> None:
        self.annotations.append(annotation)

    def as_dict(self) -> dict:
        layout = dict(self.layout)
        if self.shapes:
            layout["shapes"] = self.shapes
        if self.annotations:
            layout["annotations"] = self.annotations
        return {"data": self.data, "layout": layout}


@dataclass(frozen=True)
class _Bundle:
    """GPUs in a column (or row) that each link to every NVSwitch of a column (or row), all by
    links of one class: drawn as one bus between the two lines of nodes."""

    gpus: tuple
    switches: tuple
    pairs: tuple
    vertical: bool    # the GPUs and switches stand in columns (the bus is vertical)
    at: float         # the bus's x (vertical) or y
    span: tuple       # its extent along the other axis
    key: tuple        # the paint group of its links


def _bundles(G, pairs, pos, paint, unit) -> list:
    """The buses of a fabric's GPU-to-NVSwitch links (see :class:`_Bundle`). Links that carry
    a value (``edge_values``) are never bundled: they are what the figure is about."""
    kind = G.nodes
    switches_of = defaultdict(dict)
    for u, v in pairs:
        if G.edges[u, v]["kind"] == "nvlink" and {kind[u]["kind"], kind[v]["kind"]} == {"gpu", "nvswitch"}:
            g, w = (u, v) if kind[u]["kind"] == "gpu" else (v, u)
            switches_of[g][w] = (u, v)
    groups = defaultdict(list)
    for g, links in switches_of.items():
        if len(links) < 2:
            continue
        if paint.values is not None and any(e in paint.values for pair in links.values() for e in (pair, pair[::-1])):
            continue
        keys = {paint.link(*pair)[0] for pair in links.values()}
        xs = {round(float(pos[w][0]), 6) for w in links}
        ys = {round(float(pos[w][1]), 6) for w in links}
        if len(keys) != 1 or (len(xs) != 1 and len(ys) != 1):
            continue
        vertical = len(xs) == 1
        line = round(float(pos[g][0 if vertical else 1]), 6)
        if line == (next(iter(xs)) if vertical else next(iter(ys))):
            continue
        groups[(frozenset(links), keys.pop(), vertical, line)].append(g)
    bundles = []
    for (switches, key, vertical, line), members in groups.items():
        if len(members) < 2:
            continue
        axis = 0 if vertical else 1
        switch_line = float(pos[next(iter(switches))][axis])
        along = [float(pos[n][1 - axis]) for n in [*members, *switches]]
        switches = tuple(sorted(switches, key=lambda w: pos[w][1 - axis]))
        bundles.append(_Bundle(tuple(members), switches,
                               tuple(switches_of[g][w] for g in members for w in switches), vertical,
                               (line + switch_line) / 2, (min(along), max(along)), key))
    return bundles


def _ids(G, nodes, kind) -> str:
    """``"GPUs 0-7"``: GPUs by their id over the fabric (:func:`topo.gpus` order), other
    nodes by index, as the CLI writes sets."""
    if kind == "GPUs":
        order = {g: i for i, g in enumerate(gpus(G))}
        ids = sorted(order[n] for n in nodes)
    else:
        ids = sorted(G.nodes[n].get("index", 0) for n in nodes)
    return f"{kind} {format_gpu_ids(ids)}"


def _add_bundles(fig, G, bundles, pos, paint, ends) -> None:
    """The buses: a stub from every GPU and switch to its bus, the bus, a hover point on it."""
    groups, style = {}, {}
    hover_x, hover_y, hover_text, hover_color = [], [], [], []
    for b in bundles:
        sample = G.edges[b.pairs[0]]
        _, name, colour, width, dash = paint.link(*b.pairs[0])
        name = f"{name}, bundled"
        style.setdefault(name, (colour, width, dash))
        group = groups.setdefault(name, {"x": [], "y": []})
        for n in [*b.gpus, *b.switches]:
            x, y = (float(c) for c in pos[n])
            end = (b.at, y) if b.vertical else (x, b.at)
            group["x"] += [x, end[0], None]
            group["y"] += [y, end[1], None]
            step = np.array(end) - np.array((x, y))
            ends[n].append(step / np.linalg.norm(step))
        lo, hi = b.span
        bus = ([b.at, b.at], [lo, hi]) if b.vertical else ([lo, hi], [b.at, b.at])
        group["x"] += [*bus[0], None]
        group["y"] += [*bus[1], None]
        hover_x.append(b.at if b.vertical else (lo + hi) / 2)
        hover_y.append((lo + hi) / 2 if b.vertical else b.at)
        hover_color.append(colour)
        hover_text.append("<br>".join([
            f"<b>bundle of {len(b.pairs)} links</b>",
            f"every one of {_ids(G, b.gpus, 'GPUs')} to every one of {_ids(G, b.switches, 'NVSwitches')}",
            f"each: {link_class(sample)} per direction",
            f"per GPU: {len(b.switches) * sample['links']} NVLinks, "
            f"{to_GBps(len(b.switches) * sample['bandwidth']):.4g} GB/s per direction",
            "'every link' (top right) draws them one by one"]))
    for name, (colour, width, dash) in style.items():
        fig.add_trace(dict(type="scatter", x=groups[name]["x"], y=groups[name]["y"], mode="lines", name=name,
                           line=dict(color=colour, width=width, dash=dash), hoverinfo="skip",
                           legendgroup=name))
    fig.add_trace(dict(type="scatter", x=hover_x, y=hover_y, mode="markers", name="bundle details",
                       marker=dict(color=hover_color, size=12, symbol="square",
                                   line=dict(color="white", width=1.5)),
                       hovertext=hover_text, hovertemplate="%{hovertext}<extra></extra>", showlegend=False))


def _box(fig, points, pad, text, where) -> None:
    """A light frame around ``points`` with a small label above it (``where="top"``) or to its
    right."""
    p = np.asarray(points, dtype=float)
    x0, y0 = p.min(axis=0) - pad
    x1, y1 = p.max(axis=0) + pad
    fig.add_shape(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=_BOX_COLOR, width=1),
                  fillcolor="rgba(0,0,0,0)", layer="below")
    if where == "top":
        fig.add_annotation(x=float((x0 + x1) / 2), y=float(y1), text=text, showarrow=False, yanchor="bottom",
                           font=dict(size=12))
    else:
        fig.add_annotation(x=float(x1), y=float((y0 + y1) / 2), text=text, showarrow=False, xanchor="left",
                           font=dict(size=10, color="#555555"))


def _add_groups(fig, G, shown, gpu_nodes, pos, unit) -> None:
    """What groups the nodes: hosts (of a cluster) named above them; the compute trays and switch
    trays of a rack framed; the switch planes of a DGX-2 (NVSwitches of two baseboards joined by a
    trunk) named on their trunks."""
    kind = G.nodes
    hosts = sorted({kind[n]["host"] for n in gpu_nodes})
    shared = [n for n in shown if kind[n]["kind"] == "nvswitch" and kind[n].get("host") not in hosts]
    rack = len(hosts) > 1 and bool(shared)
    if len(hosts) > 1:
        for h in hosts:
            members = np.array([pos[n] for n in shown if kind[n].get("host") == h])
            if rack:
                _box(fig, members, 0.35 * unit, f"compute tray {h}", "top")
            else:
                fig.add_annotation(x=float(members[:, 0].mean()), y=float(members[:, 1].max() + 0.6 * unit),
                                   text=f"host {h}", showarrow=False, font=dict(size=13))
    if rack:
        trays = defaultdict(list)
        for n in shared:
            trays[kind[n].get("baseboard", 0)].append(pos[n])
        if len(trays) < len(shared):  # chips grouped in trays
            for t, points in sorted(trays.items()):
                _box(fig, points, 0.3 * unit, f"switch tray {t}", "right")
    trunks = sorted(((u, v) for u, v in G.edges() if u in pos and v in pos and kind[u]["kind"] == kind[v]["kind"]
                     == "nvswitch" and kind[u].get("host") == kind[v].get("host") and kind[u].get("baseboard", 0)
                     < kind[v].get("baseboard", 0) and u in set(shown) and v in set(shown)),
                    key=lambda e: (kind[e[0]].get("host", 0), -pos[e[0]][1], pos[e[0]][0]))
    planes = defaultdict(int)
    for u, v in trunks:
        h = kind[u].get("host", 0)
        (x0, y0), (x1, y1) = pos[u], pos[v]
        fig.add_annotation(x=float((x0 + x1) / 2), y=float((y0 + y1) / 2), text=f"plane {planes[h]}",
                           showarrow=False, yanchor="bottom", yshift=4, font=dict(size=11, color="#555555"))
        planes[h] += 1


def _view_buttons(fig, every, bundled, nlinks) -> None:
    """Two buttons that show the bundled view or every link (the traces of the other view hidden;
    node traces and the colour bar are in both)."""
    every, bundled = set(every), set(bundled)
    for i in every:
        fig.data[i]["visible"] = False

    def visible(view, hidden):
        return [i not in hidden for i in range(len(fig.data))]
    fig.layout.update(updatemenus=[dict(
        type="buttons", direction="left", showactive=True, active=0, x=1.0, xanchor="right", y=1.0,
        yanchor="top", pad=dict(t=0, b=0), font=dict(size=12),
        buttons=[dict(label="bundled links", method="restyle", args=[{"visible": visible(bundled, every)}]),
                 dict(label=f"every link ({nlinks})", method="restyle", args=[{"visible": visible(every, bundled)}])])])


def _links(G, shown) -> list:
    """The links between drawn nodes: one ``(u, v)`` per pair of directed edges."""
    order = {n: i for i, n in enumerate(G.nodes)}
    pairs, seen = [], set()
    for u, v in G.edges():
        if u in shown and v in shown and (v, u) not in seen:
            seen.add((u, v))
            pairs.append((u, v) if order[u] < order[v] else (v, u))
    return pairs


class _Paint:
    """Colour, width and legend group of every link, and the colour bar that explains them."""

    def __init__(self, G, pairs, color_range, edge_values, value_range, value_label, missing_label):
        self.G = G
        self.value_label, self.missing_label = value_label, missing_label
        self.sampled = {}  # (colour scale, fraction) -> colour: a fabric has few link classes
        self.links = {}  # (u, v) -> link(u, v)
        bandwidths = [G.edges[u, v]["bandwidth"] for u, v in pairs]
        if color_range is None:
            color_range = (min(bandwidths), max(bandwidths)) if bandwidths else (1e9, 1e9)
        self.log_lo, self.log_hi = (math.log10(to_GBps(b)) for b in color_range)
        if self.log_hi - self.log_lo < 1e-9:
            self.log_lo, self.log_hi = self.log_lo - 0.1, self.log_hi + 0.1
        self.values = None
        if edge_values is not None:
            self.values = {}
            for k, v in edge_values.items():
                try:
                    value = float(v)
                except (TypeError, ValueError):
                    value = math.nan
                if not math.isfinite(value):
                    raise DgxTopoError(f"edge_values[{k!r}] must be a finite number, received {v!r}")
                self.values[tuple(k)] = value
            known = list(self.values.values())
            self.vlo, self.vhi = value_range if value_range is not None else (0.0, max(known, default=1.0))
            if self.vhi - self.vlo <= 0:
                self.vhi = self.vlo + 1.0

    def _fraction(self, bandwidth) -> float:
        f = (math.log10(to_GBps(bandwidth)) - self.log_lo) / (self.log_hi - self.log_lo)
        return float(min(max(f, 0.0), 1.0))

    def link(self, u, v) -> tuple:
        """``(group key, legend name, colour, width, dash)`` of the link u-v (worked out once per
        link: a figure asks for a link in each view and for its bundle)."""
        if (u, v) not in self.links:
            self.links[u, v] = self._link(u, v)
        return self.links[u, v]

    def _link(self, u, v) -> tuple:
        data = self.G.edges[u, v]
        f_bw = self._fraction(data["bandwidth"])
        width = _WIDTH[0] + (_WIDTH[1] - _WIDTH[0]) * f_bw
        dash = _DASH.get(data["kind"], "solid")
        name = link_class(data)
        if self.values is None:
            return (name,), name, self._sample(BANDWIDTH_COLORSCALE, f_bw), width, dash
        value = max((self.values[e] for e in ((u, v), (v, u)) if e in self.values), default=None)
        if value is None:
            return ("unused", dash), self.missing_label, _UNUSED_COLOR, _WIDTH[0], dash
        f_v = float(min(max((value - self.vlo) / (self.vhi - self.vlo), 0.0), 1.0))
        colour = self._sample(LOAD_COLORSCALE, f_v)
        return (name, colour), name, colour, width, dash

    def _sample(self, scale, fraction) -> str:
        key = (id(scale), fraction)
        if key not in self.sampled:
            self.sampled[key] = pcolors.sample_colorscale(_as_lists(scale), [fraction])[0]
        return self.sampled[key]

    def colour_bar(self) -> dict:
        if self.values is None:
            ticks = _ticks(10 ** self.log_lo, 10 ** self.log_hi)
            return dict(colorscale=_as_lists(BANDWIDTH_COLORSCALE), cmin=self.log_lo, cmax=self.log_hi,
                        colorbar=dict(title=dict(text="GB/s per<br>direction"), len=0.6,
                                      tickvals=[math.log10(t) for t in ticks],
                                      ticktext=[f"{t:.4g}" for t in ticks]))
        return dict(colorscale=_as_lists(LOAD_COLORSCALE), cmin=self.vlo, cmax=self.vhi,
                    colorbar=dict(title=dict(text=self.value_label), len=0.6))


def _add_links(fig, G, pairs, routes, paint, unit, node_points, edge_text, *, details="link details",
               hovers=None) -> dict:
    """Line traces per link group and their hover points (trace ``details``); returns
    the directions in which links leave each node (unit vectors), for placing its label.
    ``hovers`` keeps each link's hover text for another view of the same figure."""
    hovers = {} if hovers is None else hovers
    groups = defaultdict(lambda: {"x": [], "y": []})
    style, kind, bandwidth = {}, {}, {}
    mid_x, mid_y, mid_color, mid_text = [], [], [], []
    taken = _Points(0.12 * unit)
    for p in node_points:
        taken.add(np.asarray(p, dtype=float))
    ends = defaultdict(list)
    for u, v in pairs:
        key, name, colour, width, dash = paint.link(u, v)
        points = routes[u, v]
        for node, (a, b) in ((u, (points[0], points[1])), (v, (points[-1], points[-2]))):
            # In floats: the same IEEE operations as on numpy's two-element arrays, without their cost.
            (ax, ay), (bx, by) = a.tolist(), b.tolist()
            dx, dy = bx - ax, by - ay
            length = math.sqrt(dx * dx + dy * dy)
            if length > 0:
                ends[node].append((dx / length, dy / length))
        if key not in style:
            style[key] = (name, colour, width, dash)
            data = G.edges[u, v]
            kind[key], bandwidth[key] = data["kind"], data["bandwidth"]
        group = groups[key]
        group["x"] += [*points[:, 0].tolist(), None]
        group["y"] += [*points[:, 1].tolist(), None]
        # Hover point: the middle of the link, moved along it if another point is there.
        mid = _midpoint(points)
        for fraction in (0.4, 0.6, 0.3, 0.7):
            if not taken.near(mid):
                break
            mid = _along(points, fraction)
        taken.add(mid)
        mid_x.append(float(mid[0]))
        mid_y.append(float(mid[1]))
        mid_color.append(colour)
        if (u, v) not in hovers:
            hovers[u, v] = _edge_hover(G, u, v, paint.values, paint.value_label, edge_text)
        mid_text.append(hovers[u, v])

    kinds = list(_DASH)
    ordered = sorted(style, key=lambda k: (k[0] == "unused", kinds.index(kind[k]) if kind[k] in kinds
                                           else len(kinds), -bandwidth[k], style[k][0]))
    in_legend = set()
    for key in ordered:
        name, colour, width, dash = style[key]
        show = paint.values is None or key[0] == "unused"  # by value: the colour bar explains
        fig.add_trace(dict(
            type="scatter", x=groups[key]["x"], y=groups[key]["y"], mode="lines", name=name,
            line=dict(color=colour, width=width, dash=dash), hoverinfo="skip",
            legendgroup=name, showlegend=show and name not in in_legend))
        if show:
            in_legend.add(name)
    fig.add_trace(dict(type="scatter", x=mid_x, y=mid_y, mode="markers", name=details,
                       marker=dict(color=mid_color, size=7, line=dict(color="white", width=1)),
                       hovertext=mid_text, hovertemplate="%{hovertext}<extra></extra>",
                       showlegend=False))
    return ends


# Where a label may sit around its node (plotly's textposition) and the direction it lies in,
# in order of preference: below first, as maps and schematics write them.
_LABEL_SIDES = (("bottom center", (0.0, -1.0)), ("top center", (0.0, 1.0)), ("middle right", (1.0, 0.0)),
                ("middle left", (-1.0, 0.0)), ("bottom right", (0.71, -0.71)), ("bottom left", (-0.71, -0.71)),
                ("top right", (0.71, 0.71)), ("top left", (-0.71, 0.71)))
_LABEL_CLEAR = math.radians(50)  # a side this far from every link leaving the node is clear


def label_side(directions) -> str:
    """The side of a node its label goes on: the first of below, above, right, left and the
    diagonals that no link leaves the node towards (within 50 degrees), else the one furthest
    from every link.

    Parameters
    ----------
    directions : sequence of (dx, dy)
        Unit vectors along the links leaving the node (y up).

    Returns
    -------
    str
        A plotly ``textposition``.

    Examples
    --------
    >>> label_side([]), label_side([(0.0, -1.0)]), label_side([(0.0, -1.0), (0.0, 1.0)])
    ('bottom center', 'top center', 'middle right')
    """
    best, best_angle = _LABEL_SIDES[0][0], -1.0
    for side, vector in _LABEL_SIDES:
        angle = min((math.acos(float(np.clip(np.dot(vector, d), -1.0, 1.0))) for d in directions), default=math.pi)
        if angle >= _LABEL_CLEAR:
            return side
        if angle > best_angle:
            best, best_angle = side, angle
    return best


def _add_nodes(fig, G, shown, pos, labelled, shrink, highlighted, ends) -> None:
    """One marker trace per node kind, GPUs last (on top). Labels inside a marker (GPU ids) are
    dark or white by contrast with the marker as drawn (faded GPUs included); labels beside
    one sit on a side no link leaves from (:func:`label_side`)."""
    kinds = sorted({G.nodes[n]["kind"] for n in shown},
                   key=lambda k: (k == "gpu", list(KIND_STYLE).index(k) if k in KIND_STYLE else len(KIND_STYLE), k))
    for kind in kinds:
        nodes = sorted((n for n in shown if G.nodes[n]["kind"] == kind),
                       key=lambda n: (G.nodes[n].get("host", 0), G.nodes[n].get("index", 0), str(n)))
        name, symbol, size, colour = KIND_STYLE.get(kind, (kind, *_OTHER_STYLE))
        opacity = [1.0 if highlighted is None or n in highlighted or kind != "gpu" else 0.3 for n in nodes]
        inside = kind == "gpu"
        labels = kind in labelled
        fig.add_trace(dict(
            type="scatter", x=[float(pos[n][0]) for n in nodes], y=[float(pos[n][1]) for n in nodes],
            mode="markers+text" if labels else "markers", name=name,
            text=[_node_label(G, n) for n in nodes] if labels else None,
            textposition="middle center" if inside else [label_side(ends.get(n, ())) for n in nodes],
            textfont=dict(color=[text_colour(blend(colour, o)) for o in opacity] if inside else "#333333",
                          size=12 if inside else 10),
            marker=dict(symbol=symbol, size=size * shrink, color=colour, opacity=opacity,
                        line=dict(color="white", width=1.5)),
            hovertext=[_node_hover(G, n) for n in nodes], hovertemplate="%{hovertext}<extra></extra>"))
