"""Where each node of a fabric goes in a figure: positions only, no drawing (no plotly).

:func:`fabric_layout` returns ``{node: (x, y)}`` for every node, in layout units where GPUs
sit about one unit apart (y points up). It reads node attributes (``kind``, ``host``,
``index``, ``baseboard``) and the edges, never node ids. Each host is laid out on its own and
the hosts are then placed side by side (in rows, for many hosts); nodes shared by hosts (the
network switches of a cluster) go above them.

Within a host, the NVLink core (GPUs and NVSwitches) gets one of three styles:

``"cube_mesh"``
    Eight GPUs whose NVLink graph is two fully connected quads joined by a perfect matching,
    the DGX-1 hybrid cube-mesh: two squares side by side, the matching as the cross links
    (two short bridges between the squares, the other two around them). Corners are chosen
    so that GPUs under one PCIe switch share a row, and the second quad mirrors the first.
``"baseboards"``
    NVSwitch fabrics: per ``baseboard``, the GPUs in a column beside the column of the
    board's NVSwitches, the two boards of a DGX-2 facing each other so that the backplane
    trunks between peer switches run straight across. A single board (DGX A100, H100, B200)
    lies on its side instead: the GPUs in a row, its NVSwitches in a row above them, so that
    the drawing fills a page-wide figure rather than a narrow column.
``"ring"``
    Anything else: the GPUs on a circle in index order.

The host layer (PCIe switches, CPUs, NICs) is then placed outside the core, each part at the
barycentre of the GPUs below it (in PCIe hops), pushed out by one step per hop: up and down
for the cube-mesh (the PCIe pairs are its rows), sideways for the baseboards (down, away from
the switches, for a single board), radially for the ring. The result is pure data, reused by :func:`topo.plot.fabric_figure` and by anyone
drawing a fabric with other tools.

A rack whose hosts share an NVLink domain (a GB200 NVL72: 18 compute trays, the NVSwitch chips
of its switch trays belonging to no host) is drawn as the rack stands: the switch chips in a
column in the middle (in index order), the trays stacked in two columns beside it, each tray's
GPUs in a column facing the switches and its host layer pushed away from them. Every NVLink
then runs straight across the gap between a GPU column and the switch column, clear of every
other node (the gap grows with the height of the columns).

Examples
--------
>>> from topo import dgx1v, dgx2
>>> pos = fabric_layout(dgx1v())
>>> pos["gpu0"], pos["gpu1"], pos["gpu2"]  # quad 0: GPU0 top left, its PCIe sibling GPU1 top right
((0.0, 1.0), (1.0, 1.0), (0.0, 0.0))
>>> layout_style(dgx1v()), layout_style(dgx2())
('cube_mesh', 'baseboards')
>>> len(fabric_layout(dgx2())) == dgx2().number_of_nodes()
True
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from types import MappingProxyType

import networkx as nx

from .errors import DgxTopoError
from .schema import NODE_KINDS, validate

__all__ = ["fabric_layout", "layout_style", "LayoutError", "STYLES", "CORE_KINDS"]

#: Layout styles of the NVLink core of a host (``"auto"`` picks one per host).
STYLES = ("auto", "cube_mesh", "baseboards", "ring")
#: Node kinds of the NVLink core; the others form the host layer.
CORE_KINDS = ("gpu", "nvswitch")

# Layout constants, in units of the GPU spacing.
_QUAD_GAP = 1.2          # between the two quads of a cube-mesh (length of the short bridges)
_CUBE_STEP = 0.9         # host layer: distance per PCIe hop away from the cube-mesh
_BOARD_SWITCH_X = 1.6    # GPU column to NVSwitch column of a baseboard
_BOARD_TRUNK = 1.4       # NVSwitch column to the peer board's NVSwitch column
_BOARD_STEP = 1.0        # host layer: distance per hop away from a baseboard's GPU column
_ROW_SWITCH_Y = 2.5      # a single board on its side: GPU row to NVSwitch row
_ROW_SPACING = 1.0       # its host layer: least distance between neighbours of a row
_RING_STEP = 1.0
_HOST_GAP = 2.0          # between the hosts of a cluster
_TRAY_GPU_STEP = 1.8     # GPUs of a rack's tray: room for the NICs spread beside each CPU and the
                         # ConnectX-8 switches (GB300) and their NICs beside them
_SHARED_STEP = 1.5       # nodes shared by hosts: height per hop above the hosts
_SPREAD = 0.6            # nodes that would coincide are spread this far apart
_EPS = 1e-9


class LayoutError(DgxTopoError):
    """A layout style that does not fit the fabric (for example ``cube_mesh`` on a DGX-2)."""


def _ordered(G, nodes) -> list:
    return sorted(nodes, key=lambda n: (G.nodes[n].get("host", 0), G.nodes[n].get("index", 0), str(n)))


def _nvlink_gpu_graph(G, gpu_nodes) -> nx.Graph:
    H = nx.Graph()
    H.add_nodes_from(gpu_nodes)
    members = set(gpu_nodes)
    for u, v, kind in G.edges(data="kind"):
        if kind == "nvlink" and u in members and v in members:
            H.add_edge(u, v)
    return H


def _quads(G, gpu_nodes, switches):
    """The two quads and the matching of a hybrid cube-mesh, or None."""
    if switches or len(gpu_nodes) != 8:
        return None
    H = _nvlink_gpu_graph(G, gpu_nodes)
    cliques = [frozenset(c) for c in nx.find_cliques(H) if len(c) == 4]
    if len(cliques) != 2 or cliques[0] & cliques[1]:
        return None
    first = min(cliques, key=lambda c: min(gpu_nodes.index(n) for n in c))
    cross = [(u, v) for u, v in H.edges() if (u in first) != (v in first)]
    partner = {}
    for u, v in cross:
        a, b = (u, v) if u in first else (v, u)
        if a in partner or b in partner.values():
            return None
        partner[a] = b
    if len(partner) != 4 or H.number_of_edges() != 16:
        return None
    return _ordered(G, first), partner


def _pcie_siblings(G, gpu_nodes) -> set:
    """GPU pairs under one PCIe switch (frozensets)."""
    pairs = set()
    for switch, kind in G.nodes(data="kind"):
        if kind != "pcie_switch":
            continue
        below = [n for n in G.successors(switch) if n in gpu_nodes]
        pairs.update(frozenset(p) for p in itertools.combinations(below, 2))
    return pairs


def _cube_mesh(G, gpu_nodes, switches):
    found = _quads(G, gpu_nodes, switches)
    if found is None:
        return None
    first, partner = found
    siblings = _pcie_siblings(G, set(gpu_nodes))
    corners = [(0.0, 1.0), (1.0, 1.0), (0.0, 0.0), (1.0, 0.0)]  # TL, TR, BL, BR

    def score(order):
        # Rows are (TL, TR) and (BL, BR); the second quad mirrors the first.
        rows = [(order[0], order[1]), (order[2], order[3])]
        same_row = sum(frozenset(r) in siblings for r in rows)
        same_row += sum(frozenset((partner[a], partner[b])) in siblings for a, b in rows)
        return (-same_row, [gpu_nodes.index(n) for n in order])

    order = min(itertools.permutations(first), key=score)
    pos = {}
    for node, (x, y) in zip(order, corners):
        pos[node] = (x, y)
        pos[partner[node]] = (1.0 + _QUAD_GAP + (1.0 - x), y)
    return pos


def _boards(G, gpu_nodes, switches) -> dict:
    boards = defaultdict(lambda: ([], []))
    for n in gpu_nodes:
        boards[G.nodes[n].get("baseboard", 0)][0].append(n)
    for n in switches:
        boards[G.nodes[n].get("baseboard", 0)][1].append(n)
    return boards


def _baseboards(G, gpu_nodes, switches):
    if not switches:
        return None
    boards = _boards(G, gpu_nodes, switches)
    pos = {}
    if len(boards) == 1:  # on its side: GPUs in a row, the switches centred in a row above
        (board_gpus, board_switches), = ((_ordered(G, g), _ordered(G, s)) for g, s in boards.values())
        n, m = len(board_gpus), len(board_switches)
        for i, node in enumerate(board_gpus):
            pos[node] = (float(i), 0.0)
        for j, node in enumerate(board_switches):
            pos[node] = ((j + 0.5) * n / m - 0.5, _ROW_SWITCH_Y)
        return pos
    height = max(len(g) for g, _ in boards.values()) - 1
    for b, key in enumerate(sorted(boards)):
        board_gpus, board_switches = (_ordered(G, nodes) for nodes in boards[key])
        base = b * (_BOARD_SWITCH_X + _BOARD_TRUNK)
        gpu_x, switch_x = (base, base + _BOARD_SWITCH_X) if b % 2 == 0 else (base + _BOARD_SWITCH_X, base)
        for i, n in enumerate(board_gpus):
            pos[n] = (gpu_x, height / 2 + ((len(board_gpus) - 1) / 2 - i))
        m = len(board_switches)
        spacing = max(1.0, height / (m - 1)) if m > 1 else 0.0
        for j, n in enumerate(board_switches):
            pos[n] = (switch_x, height / 2 + ((m - 1) / 2 - j) * spacing)
    return pos


def _ring(G, gpu_nodes, switches):
    n = len(gpu_nodes)
    pos = {}
    if n == 1:
        pos[gpu_nodes[0]] = (0.0, 0.0)
    elif n == 2:
        pos[gpu_nodes[0]], pos[gpu_nodes[1]] = (-0.5, 0.0), (0.5, 0.0)
    else:
        radius = 1.0 / (2 * math.sin(math.pi / n))
        for i, node in enumerate(gpu_nodes):
            angle = math.pi / 2 - 2 * math.pi * i / n  # from the top, clockwise
            pos[node] = (radius * math.cos(angle), radius * math.sin(angle))
    # NVSwitches without the baseboard style (only when forced): an inner circle.
    for j, node in enumerate(switches):
        angle = math.pi / 2 - 2 * math.pi * j / max(len(switches), 1)
        r = 0.4 * (radius if n > 2 else 1.0)
        pos[node] = (r * math.cos(angle), r * math.sin(angle))
    return pos


_CORES = MappingProxyType({"cube_mesh": _cube_mesh, "baseboards": _baseboards, "ring": _ring})
# The push of the host layer per style: its axis and the step per hop.
_PUSH = MappingProxyType({"cube_mesh": ("vertical", _CUBE_STEP), "baseboards": ("horizontal", _BOARD_STEP),
         "ring": ("radial", _RING_STEP)})


def _host_nodes(G) -> dict:
    """Per host, its nodes of the known kinds; plus the shared rest under the key None."""
    hosts = defaultdict(list)
    gpu_hosts = {G.nodes[n]["host"] for n, k in G.nodes(data="kind") if k == "gpu"}
    for node, data in G.nodes(data=True):
        host = data.get("host")
        hosts[host if host in gpu_hosts and data.get("kind") in NODE_KINDS else None].append(node)
    return hosts


def _core(G, nodes):
    gpu_nodes = _ordered(G, [n for n in nodes if G.nodes[n]["kind"] == "gpu"])
    switches = _ordered(G, [n for n in nodes if G.nodes[n]["kind"] == "nvswitch"])
    return gpu_nodes, switches


def _auto_style(G, gpu_nodes, switches) -> str:
    if switches:
        return "baseboards"
    if _quads(G, gpu_nodes, switches) is not None:
        return "cube_mesh"
    return "ring"


def layout_style(G: nx.DiGraph, host: int | None = None) -> str:
    """The core style ``"auto"`` picks for a host of the fabric (the first host by default).

    Parameters
    ----------
    G : networkx.DiGraph
    host : int, optional

    Returns
    -------
    str
        ``"cube_mesh"``, ``"baseboards"`` or ``"ring"``.
    """
    hosts = _host_nodes(G)
    keys = sorted(k for k in hosts if k is not None)
    if host is None:
        host = keys[0]
    if host not in hosts or host is None:
        raise LayoutError(f"host {host!r} has no GPUs: expected one of {', '.join(map(str, keys))}")
    return _auto_style(G, *_core(G, hosts[host]))


def _barycentre(points) -> tuple:
    xs, ys = zip(*points)
    return (sum(xs) / len(xs), sum(ys) / len(ys))


def _bounds(points):
    xs, ys = zip(*points)
    return min(xs), max(xs), min(ys), max(ys)


def _place_outward(G, nodes, pos, axis, step) -> None:
    """Place ``nodes`` (not in ``pos``) outside the placed core, one step per hop from it."""
    core = dict(pos)
    if not core:
        return
    xmin, xmax, ymin, ymax = _bounds(core.values())
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2
    radius = max(math.hypot(x - cx, y - cy) for x, y in core.values())
    todo = set(nodes)
    # Hop distance from the core through the host layer, and the core nodes below each node.
    depth = {n: 0 for n in core}
    below = {n: {n} for n in core}
    frontier = list(core)
    d = 0
    while frontier and todo:
        d += 1
        reached = defaultdict(set)
        for u in frontier:
            for v in set(G.successors(u)) | set(G.predecessors(u)):
                if v in todo:
                    reached[v] |= below[u]
        for v, under in reached.items():
            depth[v], below[v] = d, under
            todo.discard(v)
        frontier = list(reached)
    placed, direction = {}, {}
    for n in sorted((n for n in nodes if n in depth), key=lambda n: (depth[n], str(n))):
        bx, by = _barycentre([core[c] for c in below[n]])
        hop = depth[n] * step
        vertical = abs(by - cy) > _EPS
        horizontal = abs(bx - cx) > _EPS
        if axis == "radial":
            dx, dy = bx - cx, by - cy
            norm = math.hypot(dx, dy)
            ux, uy = (dx / norm, dy / norm) if norm > _EPS else (0.0, -1.0)
            placed[n] = (cx + ux * (radius + hop), cy + uy * (radius + hop))
        elif axis == "left":  # a rack tray: away from the switches, which are to the right
            ux, uy = -1.0, 0.0
            placed[n] = (xmin - hop, by)
        elif axis == "down":  # a board on its side: away from the switches, which are above
            ux, uy = 0.0, -1.0
            placed[n] = (bx, ymin - hop)
        elif (axis == "vertical" and vertical) or (axis == "horizontal" and not horizontal):
            ux, uy = 0.0, (1.0 if by > cy else -1.0)
            placed[n] = (bx, ymax + hop if uy > 0 else ymin - hop)
        else:
            ux, uy = (1.0 if bx > cx else -1.0), 0.0
            placed[n] = (xmax + hop if ux > 0 else xmin - hop, by)
        direction[n] = (ux, uy)
    if axis == "down":
        _rows(G, placed, depth, ymin, step)
    else:
        _spread(G, placed, direction)
    pos.update(placed)
    leftovers = [n for n in nodes if n not in depth]  # not connected to this core
    for i, n in enumerate(_ordered(G, leftovers)):
        pos[n] = (xmin + i * _SPREAD * 2, ymin - (d + 2) * step)


def _rows(G, placed, depth, ymin, step) -> None:
    """The host layer below a board on its side, in rows: one per PCIe hop, then the CPUs (sockets
    or NUMA nodes) in a row of their own below every part they serve, then what hangs off the
    CPUs alone. In each row the parts keep their barycentre order, at least one unit apart."""
    kind = G.nodes
    cpus = [n for n in placed if kind[n]["kind"] == "cpu"]

    def served(n):  # reached from the core without passing a CPU
        return any(m not in placed or (kind[m]["kind"] != "cpu" and depth.get(m, 0) < depth[n])
                   for m in nx.all_neighbors(G, n) if m in depth)
    above = [depth[n] for n in placed if kind[n]["kind"] != "cpu" and served(n)]
    cpu_row = max(above, default=0) + 1
    quads = _socket_quads(G, cpus, placed)
    row = {}
    for n in placed:
        if kind[n]["kind"] == "cpu":
            row[n] = cpu_row
        elif cpus and not served(n):
            row[n] = cpu_row + (2 if quads else 1)
        else:
            row[n] = depth[n]
    for quad in quads:  # a socket of four NUMA nodes (NPS4): a square, its diagonals crossing inside
        top = sorted(quad, key=lambda n: (-sum(m not in cpus and depth.get(m, math.inf) < depth[n]
                                               for m in nx.all_neighbors(G, n)), placed[n][0], kind[n].get("index", 0)))
        centre = sum(placed[n][0] for n in quad) / 4
        for i, n in enumerate(sorted(top[:2], key=lambda n: placed[n][0]) + sorted(top[2:], key=lambda n: placed[n][0])):
            placed[n] = (centre + (i % 2 - 0.5) * _ROW_SPACING, placed[n][1])
            row[n] = cpu_row + i // 2
    for r in sorted(set(row.values())):
        members = sorted((n for n in row if row[n] == r),
                         key=lambda n: (placed[n][0], kind[n]["kind"], kind[n].get("index", 0), str(n)))
        xs = [placed[n][0] for n in members]
        centre = sum(xs) / len(xs)
        for i in range(1, len(xs)):
            xs[i] = max(xs[i], xs[i - 1] + _ROW_SPACING)
        shift = centre - sum(xs) / len(xs)
        for n, x in zip(members, xs):
            placed[n] = (x + shift, ymin - r * step)


def _socket_quads(G, cpus, placed) -> list:
    """The CPU nodes that form fully linked groups of four (the NUMA nodes of an NPS4 socket)."""
    H = nx.Graph((u, v) for u, v, k in G.edges(data="kind") if k == "cpu-to-cpu" and u in cpus and v in cpus)
    quads = [c for c in nx.find_cliques(H) if len(c) == 4] if len(H) >= 8 else []
    return quads if sum(map(len, quads)) == len({n for q in quads for n in q}) else []


def _spread(G, placed, direction) -> None:
    """Move apart nodes that landed on the same point, across the direction they were pushed."""
    groups = defaultdict(list)
    for n, (x, y) in placed.items():
        groups[(round(x, 6), round(y, 6))].append(n)
    for (x, y), members in groups.items():
        if len(members) < 2:
            continue
        members = sorted(members, key=lambda n: (G.nodes[n]["kind"], G.nodes[n].get("index", 0), str(n)))
        for i, n in enumerate(members):
            offset = (i - (len(members) - 1) / 2) * _SPREAD
            ux, uy = direction[n]
            placed[n] = (x - uy * offset, y + ux * offset)


def _host_layout(G, nodes, style) -> dict:
    gpu_nodes, switches = _core(G, nodes)
    chosen = _auto_style(G, gpu_nodes, switches) if style == "auto" else style
    pos = _CORES[chosen](G, gpu_nodes, switches)
    if pos is None:
        raise LayoutError(f"layout style {style!r} does not fit host {G.nodes[gpu_nodes[0]]['host']} "
                          f"of {G.graph.get('name', 'the fabric')}: expected "
                          + ("8 GPUs in two fully connected quads and no NVSwitch"
                             if style == "cube_mesh" else "NVSwitches"))
    axis, step = _PUSH[chosen]
    if chosen == "baseboards" and len(_boards(G, gpu_nodes, switches)) == 1:
        axis = "down"
    _place_outward(G, [n for n in nodes if n not in pos], pos, axis, step)
    return pos


def fabric_layout(G: nx.DiGraph, *, style: str = "auto", scale: float = 1.0) -> dict:
    """Positions of every node of a fabric for drawing (see the module docstring).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here).
    style : str
        One of :data:`STYLES`: ``"auto"`` (default) picks per host; a named style is used
        for every host.
    scale : float
        Multiplies every coordinate (1: GPUs about one unit apart).

    Returns
    -------
    dict
        ``{node: (x, y)}`` for every node of ``G``, floats, y up.

    Raises
    ------
    LayoutError
        For an unknown style, or a named style that does not fit a host.
    topo.TopologyError
        For an invalid fabric.

    Examples
    --------
    >>> from topo import dgx2
    >>> pos = fabric_layout(dgx2())
    >>> pos["gpu0"], pos["nvswitch0"], pos["nvswitch6"], pos["gpu8"]
    ((0.0, 7.0), (1.6, 7.0), (3.0, 7.0), (4.6, 7.0))
    >>> fabric_layout(dgx2(), style="cube_mesh")
    Traceback (most recent call last):
    ...
    topo.layout.LayoutError: layout style 'cube_mesh' does not fit host 0 of DGX-2: expected 8 GPUs in two fully connected quads and no NVSwitch
    """
    if style not in STYLES:
        raise LayoutError(f"unknown layout style {style!r}: expected one of {', '.join(STYLES)}")
    validate(G)
    hosts = _host_nodes(G)
    pos: dict = {}
    keys = sorted(k for k in hosts if k is not None)
    if style == "auto" and _is_rack(G, hosts, keys):
        pos = _rack_layout(G, hosts, keys)
        return {n: (float(x * scale), float(y * scale)) for n, (x, y) in pos.items()}
    locals_ = [_host_layout(G, hosts[host], style) for host in keys]
    # Hosts side by side, in rows of at least 3 (a square grid for many hosts), host 0 top left.
    columns = max(3, math.ceil(math.sqrt(len(keys))))
    width = max(_bounds(p.values())[1] - _bounds(p.values())[0] for p in locals_) + _HOST_GAP
    height = max(_bounds(p.values())[3] - _bounds(p.values())[2] for p in locals_) + _HOST_GAP
    x0, _, _, y0 = _bounds(locals_[0].values())  # host 0 keeps its coordinates
    for i, local in enumerate(locals_):
        xmin, _, _, ymax = _bounds(local.values())
        row, column = divmod(i, columns)
        dx, dy = x0 + column * width - xmin, y0 - row * height - ymax
        pos.update({n: (x + dx, y + dy) for n, (x, y) in local.items()})
    shared = hosts.get(None, [])
    if shared:
        _place_shared(G, shared, pos)
    return {n: (float(x * scale), float(y * scale)) for n, (x, y) in pos.items()}


def _is_rack(G, hosts, keys) -> bool:
    """Several hosts whose only shared nodes are NVSwitch chips linked to their GPUs alone (one
    NVLink domain over the hosts), the hosts holding no switch of their own."""
    shared = hosts.get(None, [])
    if len(keys) < 2 or not shared:
        return False
    kind = G.nodes
    if any(kind[n]["kind"] != "nvswitch" or any(kind[m]["kind"] != "gpu" for m in nx.all_neighbors(G, n))
           for n in shared):
        return False
    return not any(kind[n]["kind"] == "nvswitch" for h in keys for n in hosts[h])


def _rack_layout(G, hosts, keys) -> dict:
    """The rack arrangement (module docstring): trays in two columns around the switch column."""
    locals_ = []
    for h in keys:
        gpu_nodes = _ordered(G, [n for n in hosts[h] if G.nodes[n]["kind"] == "gpu"])
        local = {g: (0.0, -_TRAY_GPU_STEP * i) for i, g in enumerate(gpu_nodes)}
        _place_outward(G, [n for n in hosts[h] if n not in local], local, "left", _BOARD_STEP)
        locals_.append(local)
    half = math.ceil(len(locals_) / 2)
    columns = (locals_[:half], locals_[half:])
    heights = [sum(_bounds(p.values())[3] - _bounds(p.values())[2] + _HOST_GAP for p in column) - _HOST_GAP
               for column in columns if column]
    span = max(heights + [1.0])
    # A link from the top of a GPU column to the bottom of the switch column must clear the GPU
    # next to its end by a fifth of the spacing: gap / length >= 0.2.
    gap = max(3.0, 0.25 * span)
    pos: dict = {}
    for side, column in ((-1.0, columns[0]), (1.0, columns[1])):
        top = 0.0
        for local in column:
            _, _, ymin, ymax = _bounds(local.values())
            for n, (x, y) in local.items():  # GPUs at x = 0 facing the middle; mirrored on the right
                pos[n] = (side * (gap - x), top - (ymax - y))
            top -= ymax - ymin + _HOST_GAP
    switches = _ordered(G, hosts[None])
    step = span / max(1, len(switches) - 1)
    for i, n in enumerate(switches):
        pos[n] = (0.0, -i * step)
    return pos


def _place_shared(G, shared, pos) -> None:
    """Nodes outside the hosts (network switches): rows above, over the nodes they link."""
    _, _, _, ymax = _bounds(pos.values())
    todo = list(shared)
    level = 0
    while todo:
        level += 1
        ready = [n for n in todo if any(m in pos for m in nx.all_neighbors(G, n))]
        if not ready:
            xmin, _, ymin, _ = _bounds(pos.values())
            for i, n in enumerate(_ordered(G, todo)):
                pos[n] = (xmin + i * 2 * _SPREAD, ymin - _SHARED_STEP)
            return
        row = {}
        for n in ready:
            x, _ = _barycentre([pos[m] for m in nx.all_neighbors(G, n) if m in pos])
            row[n] = (x, ymax + level * _SHARED_STEP)
        # Keep the row readable: at least one unit between neighbours, in barycentre order.
        ordered = sorted(row, key=lambda n: (row[n][0], G.nodes[n]["kind"], G.nodes[n].get("index", 0), str(n)))
        last = None
        for n in ordered:
            x, y = row[n]
            if last is not None and x < last + 1.0:
                x = last + 1.0
            row[n] = (x, y)
            last = x
        pos.update(row)
        todo = [n for n in todo if n not in row]
