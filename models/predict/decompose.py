"""One collective as NCCL runs it, in the terms the simulator needs: a start-up, then data on links.

:func:`models.predict.collectives.estimate` prices a collective alone on an idle fabric as
``startup + nbytes / bandwidth``: the start-up is the larger of the host's launch and NCCL's
latency term (the pipeline fill: NCCL's base latency plus one hardware latency per chunked step
of the algorithm, :mod:`models.engine.nccl.tuning`), the rest is the data moving at the
bandwidth NCCL's channels reach, scaled by what the links achieve and what the network gives
(:mod:`models.predict.measure`). :class:`Decomposer` keeps exactly those two phases and adds what
running *beside other work* needs: which links the data phase fills, and how much of each.

Link usage of the data phase (the fraction of a link's capacity the collective fills when it
runs alone), from the channels the estimate ran on:

``ring``, ``tree``, ``pat``
    Every channel reserves NCCL's ``bwIntra`` on every link its hops cross (the channel
    search's :attr:`~models.engine.nccl.search.ChannelSearch.loads`). The data phase moves the
    winning protocol's bus bandwidth, so a link reserved ``r`` of NCCL's capacity ``c`` is filled
    ``r / c x bus / (nChannels x bwIntra) x wire``, where ``wire`` is the protocol's bytes on the
    wire per payload byte (:data:`STEP_PARAMETERS`). Across hosts, every NCCL node carries its
    own copy of the searched node's channels, and each channel's connection from one node to
    the next (ring) or along NCCL's double binary tree (tree: both ways) crosses the network
    over the paths :meth:`models.engine.routes.Router.network_flow` gives.
``nvls``, ``nvls_tree``
    Each NVLS channel reserves ``bwIntra`` on every GPU's links to the NVSwitches, twice on its
    head's (NVIDIA/nccl v2.27.7-1 src/graph/search.cc, as :func:`models.engine.nccl.nvls.nvls_search`
    charges), spread over a GPU's switch links by their bandwidth; ``nvls_tree`` adds the tree
    between the heads' NICs.
``p2p`` (alltoall, sendrecv, and a point-to-point send)
    The flows of :func:`~models.predict.collectives.estimate`'s point-to-point model, each pair
    routed over NCCL's path (inside a host) or the router's (across hosts), at the rate the
    estimate gives each flow.

Usage is capped at 1: alone, a collective reproduces its estimate exactly, even where NCCL's
tuning model assumes more than the links it searched hold. What is approximate [U]: NCCL nodes
other than the searched one are taken to run the searched node's channels (GPUs matched by
position, other nodes by name); the network share of a blocking network scales every network
edge alike.

Examples
--------
>>> import topo
>>> d = Decomposer(topo.build("dgxh100"))
>>> steps = d.collective("all_reduce", 2**30, range(8))
>>> steps.algorithm, steps.protocol, round(steps.time / 1e-3, 3)
('nvls', 'Simple', 4.219)
>>> round(float(steps.usage.max()), 3)       # the busiest GPU-to-switch link, alone
0.971
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import topo
from topo.errors import DgxTopoError

from .collectives import COLLECTIVE_NAMES, Estimator
from .network import tree_links
from ..engine.fabric import prepare
from ..engine.nccltests import busbw_factor

__all__ = ["StepParameters", "STEP_PARAMETERS", "CollectiveSteps", "Decomposer", "DecomposeError"]


class DecomposeError(DgxTopoError):
    """A communication operation that cannot be decomposed (unknown op, bad GPUs or size)."""


@dataclass(frozen=True, slots=True)
class StepParameters:
    """The execution parameters the decomposition reads, in one place so a release can swap them.

    Attributes
    ----------
    wire : tuple of (str, float)
        Per protocol, bytes on the wire per payload byte. LL sends 8-byte lines of 4 data bytes
        and a 4-byte flag (``union ncclLLFifoLine``: data1, flag1, data2, flag2): 2. LL128 sends
        128-byte lines of which 120 are data (``NCCL_LL128_LINEELEMS`` 16,
        ``NCCL_LL128_DATAELEMS`` 15 eight-byte words): 16/15. Simple: 1. (NVIDIA/nccl v2.27.7-1
        src/include/device.h.)
    ctas_per_channel : int
        CUDA blocks an NCCL kernel runs per channel: one (NVIDIA/nccl v2.27.7-1 src/enqueue.cc
        launches the kernel with a grid of ``nChannels`` blocks); each block holds one SM.
    """

    wire: tuple = (("LL", 2.0), ("LL128", 16 / 15), ("Simple", 1.0))
    ctas_per_channel: int = 1

    def wire_factor(self, protocol: str) -> float:
        """Wire bytes per payload byte of a protocol (1 for one it does not list)."""
        return dict(self.wire).get(str(protocol), 1.0)


#: The step parameters of NCCL v2.27.7-1 (the reference release).
STEP_PARAMETERS = StepParameters()


@dataclass(frozen=True, slots=True)
class CollectiveSteps:
    """One communication operation split into what the simulator runs.

    Attributes
    ----------
    op : str
        The collective (``"all_reduce"``...) or ``"send"``.
    gpus : tuple of int
        GPU ids (for a send: source, destination).
    nbytes : int
        nccl-tests' size (a send: the bytes sent). [bytes]
    algorithm, protocol : str
        What NCCL runs.
    nchannels : int
        Channels of the graph that runs (0 for point-to-point and one-GPU copies).
    startup : float
        The phase before data flows: ``max(host launch, NCCL latency)``. [s]
    transfer : float
        The data phase alone on the idle fabric. [s]
    edges : tuple of (u, v)
        The directed edges the data phase fills.
    usage : numpy.ndarray
        Per edge, the fraction of its capacity the data phase fills alone, in (0, 1].
    latency_terms : tuple of str
        NCCL's latency term in words (base, and count x per-step latency).
    """

    op: str
    gpus: tuple
    nbytes: int
    algorithm: str
    protocol: str
    nchannels: int
    startup: float
    transfer: float
    edges: tuple = field(repr=False)
    usage: np.ndarray = field(repr=False)
    latency_terms: tuple = field(default=(), repr=False)

    @property
    def time(self) -> float:
        """Alone on an idle fabric: ``startup + transfer``, the estimate's time. [s]"""
        return self.startup + self.transfer

    def explain(self) -> str:
        """The phases in words."""
        lines = [f"{self.op} of {self.nbytes} B on GPUs {topo.select.format_gpu_ids(self.gpus)}: "
                 f"{self.algorithm}/{self.protocol}, {self.nchannels} channels",
                 f"  start-up {self.startup * 1e6:.2f} us"
                 + (f" (NCCL latency {'; '.join(self.latency_terms)})" if self.latency_terms else ""),
                 f"  data {self.transfer * 1e6:.2f} us alone, on {len(self.edges)} links"]
        if len(self.edges):
            top = int(np.argmax(self.usage))
            u, v = self.edges[top]
            lines.append(f"  busiest link {u}->{v}: {self.usage[top]:.1%} of its capacity alone")
        return "\n".join(lines)


def _prefix(node) -> str | None:
    """The copy prefix of a cluster node id (``"h3"`` of ``"h3.gpu0"``), None on one host."""
    text = str(node)
    return text.split(".", 1)[0] if "." in text else None


class Decomposer:
    """A fabric prepared for decomposing many operations (the estimates and routes are shared).

    Parameters
    ----------
    G : networkx.DiGraph or models.engine.fabric.PreparedFabric
        The fabric; its edges' capacities are what every decomposition reads.
    profile : str or NcclProfile, optional
        NCCL release (default: the reference version).
    calibration : optional
        As for :func:`models.predict.collectives.estimate`.
    parameters : StepParameters
        The execution parameters (:data:`STEP_PARAMETERS`).

    Notes
    -----
    Results are kept per operation for the life of the object (a symmetric step asks for the
    same operation many times); a tensor-parallel group on another host of a cluster reuses the
    first host's decomposition with its edges renamed (hosts are copies). Do not edit ``G``
    while using it.
    """

    def __init__(self, G, *, profile=None, calibration=None, parameters: StepParameters = STEP_PARAMETERS):
        # One prepared fabric (not freezing the caller's graph): the estimates and the routes
        # share its NCCL view.
        self.estimator = Estimator(prepare(G, nccl=profile), calibration=calibration)
        self.G = self.estimator.fabric.G
        self.system = self.estimator.fabric.nccl
        self.parameters = parameters
        self.gpu_nodes = topo.gpus(self.G)
        self.ids = {n: i for i, n in enumerate(self.gpu_nodes)}
        self._done: dict = {}  # by GPU shape (a host's group serves its copies)
        self._asked: dict = {}  # by the arguments as asked

    # ---------------------------------------------------------------- public operations
    def collective(self, collective: str, nbytes, gpus) -> CollectiveSteps:
        """Decompose one collective on GPU ids ``gpus`` at nccl-tests' size ``nbytes``.

        Raises
        ------
        DecomposeError
            For an unknown collective or a size that is not one whole number of bytes.
        topo.GpuSelectionError
            For bad GPU ids.
        """
        key = ("c", collective, nbytes, tuple(gpus) if not isinstance(gpus, (str, range)) else gpus)
        found = self._asked.get(key)
        if found is None:
            if collective not in COLLECTIVE_NAMES:
                raise DecomposeError(f"unknown collective {collective!r}: expected one of "
                                     f"{', '.join(COLLECTIVE_NAMES)}")
            size = _size(nbytes)
            nodes = self._nodes(gpus)
            found = self._asked[key] = self._cached(("c", collective, size), nodes,
                                                    lambda ns: self._collective(collective, size, ns))
        return found

    def send(self, src: int, dst: int, nbytes) -> CollectiveSteps:
        """Decompose a point-to-point send of ``nbytes`` from GPU ``src`` to GPU ``dst``.

        Its time alone is that of NCCL's sendrecv between the two (each direction moves at the
        same rate); its data fills only the links from ``src`` to ``dst``.
        """
        key = ("s", src, dst, nbytes)
        found = self._asked.get(key)
        if found is None:
            if src == dst:
                raise DecomposeError(f"a send needs two different GPUs, received {src} to {dst}")
            size = _size(nbytes)
            nodes = self._nodes([src, dst], ordered=True)
            found = self._asked[key] = self._cached(("s", size), nodes, lambda ns: self._send(size, ns))
        return found

    def prepare(self, operations) -> None:
        """Decompose many operations at once: one estimate per (op, GPU group) for all its sizes.

        Parameters
        ----------
        operations : iterable of (str, tuple of int, int)
            ``(op, gpus, nbytes)``: a collective, or ``"send"`` with ``gpus = (src, dst)``.
            Later :meth:`collective` and :meth:`send` calls with the same arguments are free.
        """
        sizes: dict = {}
        for op, gpus, nbytes in operations:
            gpus = tuple(gpus)
            key = ("s", gpus[0], gpus[1], nbytes) if op == "send" else ("c", op, nbytes, gpus)
            if key in self._asked:
                continue
            group = ("sendrecv", tuple(sorted(gpus))) if op == "send" else (op, tuple(sorted(gpus)))
            sizes.setdefault(group, {}).setdefault(int(nbytes), set()).add((op, gpus))
        pairs: dict = {}  # route signature of a GPU pair -> its sendrecv estimate
        for (op, group), by_size in sizes.items():
            if op not in COLLECTIVE_NAMES:
                raise DecomposeError(f"unknown collective {op!r}: expected one of {', '.join(COLLECTIVE_NAMES)}")
            nodes = self._nodes(group)
            if len({_prefix(n) for n in nodes} - {None}) == 1 and len(by_size) == 1:
                continue  # one host: the first group of its shape serves the others (see _cached)
            ordered = sorted(by_size)
            e = None
            only_sends = all(asked == "send" for by in by_size.values() for asked, _ in by)
            if only_sends and len(nodes) == 2:
                # The point-to-point estimate of a pair reads only its routes both ways (the kind,
                # class, count and bandwidth of every edge, each edge's share) and the GPUs' model:
                # a pair whose routes match another's has its estimate.
                signature = (tuple(ordered), self._route_signature(*nodes), self._route_signature(*nodes[::-1]))
                e = pairs.get(signature)
                if e is None:
                    e = pairs[signature] = self.estimator.estimate(op, ordered, list(group))
            if e is None:
                e = self.estimator.estimate(op, ordered, list(group))
            for i, size in enumerate(ordered):
                for asked_op, gpus in sorted(by_size[size]):
                    if asked_op == "send":
                        steps = self._send_from(e, i, self._nodes(gpus, ordered=True))
                        self._asked[("s", gpus[0], gpus[1], size)] = steps
                    else:
                        self._asked[("c", asked_op, size, gpus)] = self.from_estimate(e, i)

    def _route_signature(self, a, b) -> tuple:
        G = self.G
        r = self.system.router.route(a, b)
        return (G.nodes[a].get("model"), G.nodes[b].get("model"), r.path_type) + tuple(
            (G.edges[e]["kind"], G.edges[e].get("link"), G.edges[e].get("links"), G.edges[e]["bandwidth"], share)
            for e, share in zip(r.edges, r.shares))

    # ---------------------------------------------------------------------- internals
    def _nodes(self, gpus, ordered=False) -> tuple:
        if isinstance(gpus, str):
            nodes = topo.select_gpus(self.G, gpus)
        else:
            try:
                ids = [int(g) for g in gpus]
            except (TypeError, ValueError):
                raise DecomposeError(f"expected GPU ids (whole numbers), received {gpus!r}") from None
            if any(not 0 <= i < len(self.gpu_nodes) for i in ids) or len(set(ids)) != len(ids):
                nodes = topo.select_gpus(self.G, ids)  # its error names what is wrong
            nodes = [self.gpu_nodes[i] for i in ids]
        if not ordered:
            nodes = sorted(nodes, key=self.ids.__getitem__)
        return tuple(nodes)

    def _cached(self, key, nodes, make) -> CollectiveSteps:
        prefixes = {_prefix(n) for n in nodes}
        if len(prefixes) == 1 and None not in prefixes:
            # One host of a cluster: hosts are copies, so the decomposition of the same GPUs on
            # the first host that asked serves this one with its edges renamed.
            (here,) = prefixes
            local = tuple(str(n).split(".", 1)[1] for n in nodes)
            shape = (key, "host", local)
            first = self._done.get(shape)
            if first is None:
                first = self._done[shape] = (here, make(nodes))
            there, steps = first
            return steps if there == here else self._renamed(steps, there, here, nodes)
        full = (key, nodes)
        if full not in self._done:
            self._done[full] = make(nodes)
        return self._done[full]

    def _renamed(self, steps, old, new, nodes) -> CollectiveSteps:
        def rename(n):
            text = str(n)
            return f"{new}.{text.split('.', 1)[1]}" if _prefix(n) == old else n
        edges = tuple((rename(u), rename(v)) for u, v in steps.edges)
        ids = tuple(self.ids[n] for n in nodes)
        return CollectiveSteps(steps.op, ids, steps.nbytes, steps.algorithm, steps.protocol, steps.nchannels,
                               steps.startup, steps.transfer, edges, steps.usage, steps.latency_terms)

    def _collective(self, collective, size, nodes) -> CollectiveSteps:
        return self.from_estimate(self.estimator.estimate(collective, size, [self.ids[n] for n in nodes]))

    def from_estimate(self, e, index: int = -1) -> CollectiveSteps:
        """Decompose a :class:`~models.predict.collectives.CollectiveEstimate` of this fabric at one
        of its sizes (``index`` into them; the largest by default)."""
        point = e.point(index)
        nodes = tuple(e.nodes)
        startup = _at(e.measurement.startup, index) if e.measurement is not None else point.latency
        transfer = float(point.time) - startup
        load: dict = {}
        if point.algorithm in ("ring", "tree", "pat", "nvls", "nvls_tree"):
            self._channel_load(e, point, nodes, load, index)
        elif point.algorithm == "p2p":
            n = len(nodes)
            pairs = ([(i, (i + 1) % n) for i in range(n)] if e.collective == "sendrecv"
                     else [(i, j) for i in range(n) for j in range(n) if i != j])
            share = 1 if e.collective == "sendrecv" else n
            self._pair_load(nodes, pairs, point.bandwidth / share, load)
        terms = ()
        if e.selection is not None:
            for cand in e.selection.candidates:
                t = cand.tuning
                if t.algorithm == point.algorithm and t.protocol == point.protocol:
                    terms = (f"base {t.latency.base * 1e6:.2f} us",) + tuple(
                        f"{term.count:g} x {term.per_step * 1e6:.2f} us" for term in t.latency.terms if term.count)
        edges, usage = _as_arrays(load)
        return CollectiveSteps(e.collective, tuple(e.gpus), int(point.nbytes), point.algorithm, point.protocol,
                               int(point.nchannels), float(startup), max(transfer, 0.0), edges, usage, terms)

    def _send(self, size, nodes) -> CollectiveSteps:
        ids = [self.ids[n] for n in nodes]
        return self._send_from(self.estimator.estimate("sendrecv", size, sorted(ids)), -1, nodes)

    def _send_from(self, e, index, nodes) -> CollectiveSteps:
        """A send ``nodes[0] -> nodes[1]`` from the sendrecv estimate of the pair."""
        point = e.point(index)
        startup = _at(e.measurement.startup, index) if e.measurement is not None else point.latency
        load: dict = {}
        self._pair_load(nodes, [(0, 1)], point.bandwidth, load)
        edges, usage = _as_arrays(load)
        return CollectiveSteps("send", tuple(self.ids[n] for n in nodes), int(point.nbytes), "p2p", "Simple", 0,
                               float(startup), max(float(point.time) - startup, 0.0), edges, usage)

    def _charge(self, load, edge, fraction) -> None:
        capacity = self.system.capacity(*edge)
        if capacity > 0:
            load[edge] = load.get(edge, 0.0) + fraction / capacity

    def _pair_load(self, nodes, pairs, rate, load) -> None:
        """Charge each flow ``(i, j)`` at ``rate`` [B/s, NCCL's figures] on the edges of its path."""
        members = set(nodes)
        for i, j in pairs:
            a, b = nodes[i], nodes[j]
            if _prefix(a) == _prefix(b) and self.G.nodes[a].get("host") == self.G.nodes[b].get("host"):
                flow = self.system.hop(a, b, members)[1]
            else:
                r = self.system.router.route(a, b)
                flow = tuple(zip(r.edges, r.shares))
            for edge, share in flow:
                self._charge(load, edge, rate * share)

    def _channel_load(self, e, point, nodes, load, index=-1) -> None:
        algorithm = point.algorithm
        wire = self.parameters.wire_factor(point.protocol)
        bus = _at(e.selection.bus_bandwidth, index) if e.selection is not None \
            else float(point.bandwidth) * busbw_factor(e.collective, len(nodes))
        network = 1.0
        if e.measurement is not None:
            network = _at(e.measurement.network_factor, index)
        groups = _node_groups(nodes)
        if algorithm in ("nvls", "nvls_tree") and e.nvls is not None:
            graph = e.nvls
            reserved_total = graph.nchannels * graph.bw_intra
            scale = min(1.0, bus / reserved_total) * wire * network if reserved_total > 0 else 0.0
            heads = list(graph.heads)
            for members in groups.values():
                local_heads = _match(heads, members)
                for g in members:
                    self._switch_links(load, g, (graph.nchannels + (g in local_heads)) * graph.bw_intra * scale)
            if algorithm == "nvls_tree" and len(groups) > 1 and graph.nets:
                self._network_tree(load, groups, [(n, n) for n in graph.nets], graph.bw_inter * scale)
            return
        search = e.tree if algorithm in ("tree", "pat") and e.tree is not None else e.ring
        if search is None:
            return
        reserved_total = search.nchannels * search.bw_intra
        scale = min(1.0, bus / reserved_total) * wire * network if reserved_total > 0 else 0.0
        searched = {_prefix(ld.edge[0]) for ld in search.loads} | {_prefix(ld.edge[1]) for ld in search.loads}
        for prefix, members in groups.items():
            for ld in search.loads:
                edge = ld.edge if prefix in searched or len(groups) == 1 else _translate(
                    ld.edge, members, groups, self.G)
                if edge is not None and self.G.has_edge(*edge):
                    load[edge] = load.get(edge, 0.0) + ld.reserved * scale / max(self.system.capacity(*edge), 1e-30)
            if len(groups) == 1:
                break
        if len(groups) > 1 and search.nets:
            rate = search.bw_intra * scale
            if algorithm == "ring":
                self._network_ring(load, groups, search.nets, rate)
            else:
                self._network_tree(load, groups, search.nets, rate)

    def _switch_links(self, load, gpu, reserved) -> None:
        """Charge ``reserved`` [B/s] on a GPU's NVLinks to switches, both ways, by bandwidth."""
        G = self.G
        links = [v for v, d in G.adj[gpu].items() if d["kind"] == "nvlink" and G.nodes[v]["kind"] == "nvswitch"]
        total = sum(self.system.capacity(gpu, v) for v in links)
        for v in links:
            share = self.system.capacity(gpu, v) / total if total > 0 else 0.0
            for edge in ((gpu, v), (v, gpu)):
                if G.has_edge(*edge):
                    self._charge(load, edge, reserved * share)

    def _nic_of(self, nic, members, groups):
        """The NIC of NCCL node ``members`` at the place of ``nic`` (of the searched node)."""
        own = _prefix(nic)
        target = _prefix(members[0])
        if own == target:
            return nic
        twin = f"{target}.{str(nic).split('.', 1)[1]}" if own is not None else None
        return twin if twin is not None and twin in self.G else None

    def _connect(self, load, a, b, rate) -> None:
        if a is None or b is None or a == b:
            return
        flow = self.system.router.network_flow(a, b)
        if flow is None:
            return
        for edge, share in flow.items():
            self._charge(load, edge, rate * share)

    def _network_ring(self, load, groups, nets, rate) -> None:
        order = list(groups.values())
        for entry, leave in nets:
            for k, members in enumerate(order):
                following = order[(k + 1) % len(order)]
                self._connect(load, self._nic_of(leave, members, groups), self._nic_of(entry, following, groups), rate)

    def _network_tree(self, load, groups, nets, rate) -> None:
        order = list(groups.values())
        for c, rank, parent in tree_links(len(order), len(nets)):
            a = self._nic_of(nets[c][0], order[rank], groups)
            b = self._nic_of(nets[c][0], order[parent], groups)
            self._connect(load, a, b, rate)
            self._connect(load, b, a, rate)


def _size(nbytes) -> int:
    if isinstance(nbytes, bool):
        raise DecomposeError(f"expected a size in bytes, received {nbytes!r}")
    try:
        size = topo.parse_nbytes(nbytes)
    except DgxTopoError as error:
        raise DecomposeError(str(error)) from None
    if np.ndim(size) != 0:
        raise DecomposeError(f"expected one size, received {nbytes!r}")
    return int(size)


def _at(values, index) -> float:
    """One size's value of a size-dependent field (a scalar serves every size)."""
    values = np.atleast_1d(values)
    return float(values[index] if values.size > 1 else values[0])


def _node_groups(nodes) -> dict:
    """The communicator's GPUs by copy prefix (NCCL nodes of a cluster), in rank order."""
    groups: dict = {}
    for n in nodes:
        groups.setdefault(_prefix(n), []).append(n)
    return groups


def _match(heads, members) -> set:
    """The GPUs of ``members`` at the positions of ``heads`` in their own group (by local name)."""
    local = {str(n).split(".", 1)[-1]: n for n in members}
    return {local[str(h).split(".", 1)[-1]] for h in heads if str(h).split(".", 1)[-1] in local}


def _translate(edge, members, groups, G):
    """An edge of the searched NCCL node moved to the node of ``members`` (by local name)."""
    target = _prefix(members[0])
    out = []
    for n in edge:
        p = _prefix(n)
        if p is None or p == target:
            out.append(n)
            continue
        twin = f"{target}.{str(n).split('.', 1)[1]}"
        if twin not in G:
            return None
        out.append(twin)
    return tuple(out)


def _as_arrays(load) -> tuple:
    """``(edges, usage)`` with usage capped at 1 and empty entries dropped."""
    items = [(edge, min(1.0, value)) for edge, value in load.items() if value > 0 and math.isfinite(value)]
    edges = tuple(edge for edge, _ in items)
    return edges, np.array([value for _, value in items], dtype=np.float64)
