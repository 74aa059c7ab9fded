"""One collective as NCCL runs it, in the terms the simulator needs: a start-up, then data on links.

:func:`models.predict.collectives.estimate` prices a collective alone on an idle fabric as
``startup + nbytes / bandwidth``: the start-up is the larger of the host's launch and NCCL's
latency term (the pipeline fill: NCCL's base latency plus one hardware latency per chunked step
of the algorithm, :mod:`models.engine.nccl.tuning`), the rest is the data moving at the
bandwidth NCCL's channels reach, scaled by what the links achieve and what the network gives
(:mod:`models.predict.measure`). :class:`Decomposer` keeps exactly those two phases and adds what
running *beside other work* needs: which links the data phase fills, and how much of each. A
release's chunk and slice pipeline (:mod:`models.engine.nccl.pipelining`) adds to neither phase,
as it adds nothing to the estimate (:mod:`models.predict.measure`, "Each release's pipeline adds
no time").

Link usage of the data phase (the fraction of a link's capacity the collective fills when it
runs alone), from the channels the estimate ran on. The algorithm that runs says which
(:meth:`Algorithm.charge <models.engine.nccl.algorithms.base.Algorithm.charge>`) through the
:class:`~models.engine.nccl.algorithms.base.LinkCharges` this module gives it; NCCL's:

``ring``, ``tree``, ``pat``
    Every channel reserves NCCL's ``bwIntra`` on every link its hops cross (the channel
    search's :attr:`~models.engine.nccl.search.ChannelSearch.loads`). The data phase moves the
    winning protocol's bus bandwidth, so a link reserved ``r`` of NCCL's capacity ``c`` is filled
    ``r / c x bus / (nChannels x bwIntra) x wire``, where ``wire`` is the protocol's bytes on the
    wire per payload byte (:data:`STEP_PARAMETERS`). Across hosts, every NCCL node carries its
    own copy of the searched node's channels inside it (a tree across nodes runs on the ring's
    channels, as the estimate does [U]), and the network beyond its NIC ports is charged once,
    by the connections between nodes, over the paths :meth:`models.engine.routes.Router.network_flow`
    gives: a ring channel's from one node to the next at ``bus / nChannels``; a tree channel's
    along NCCL's double binary tree (:func:`models.predict.network.tree_links`), both ways (the
    reduction up, the broadcast down), each at the tree's algorithm bandwidth per channel,
    ``bus x 0.5 / nChannels`` (NCCL's Tree bus-to-algorithm ratio,
    :func:`models.engine.nccl.tuning.bus_to_alg_ratio`); PAT's (one GPU per node) as a ring's at
    ``(n - 1) / n`` of the bus bandwidth, what each NIC sends and receives.
``nvls``, ``nvls_tree``
    Each NVLS channel reserves ``bwIntra`` on every GPU's links to the NVSwitches, twice on its
    head's (NVIDIA/nccl v2.27.7-1 src/graph/search.cc, as :func:`models.engine.nccl.nvls.nvls_search`
    charges), spread over a GPU's switch links by their bandwidth; ``nvls_tree`` adds the tree
    between the heads' NICs.
``p2p`` (alltoall, sendrecv, and a point-to-point send)
    The flows of :func:`~models.predict.collectives.estimate`'s point-to-point model, on the
    edges the estimate charges them (:meth:`Estimator.flow_load
    <models.predict.collectives.Estimator.flow_load>`: NCCL's paths, its PCIe overhead, the
    network legs grouped per NIC as the estimate groups them), at the rate the estimate gives
    each flow.

Usage is a fraction of NCCL's capacity of a link at NCCL's bus bandwidth. The measured rate is
NCCL's times the achieved/NCCL ratio of the binding link class (:mod:`models.predict.measure`),
and so is what the link sustains, so the same fraction is the share of the achievable capacity
the collective fills alone; two collectives that each fill a link alone then split it. Usage is
capped at 1: alone, a collective reproduces its estimate exactly, even where NCCL's tuning model
assumes more than the links it searched hold. What is approximate [U]: NCCL nodes
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

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

import topo
from topo.errors import DgxTopoError

from .collectives import COLLECTIVE_NAMES, Estimator
from .network import tree_links
from ..engine.fabric import prepare
from ..engine.nccl.algorithms.base import Algorithm
from ..engine.nccl.algorithms.catalog import algorithm_set
from ..engine.nccl.profiles import NcclProfile
from ..engine.nccltests import algbw_to_busbw
from ..engine.results import tidy_records
from ..engine.results import gpu_set

__all__ = ["StepParameters", "STEP_PARAMETERS", "CollectiveSteps", "Decomposer", "DecomposeError", "host_kinds"]


class DecomposeError(DgxTopoError):
    """A communication operation that cannot be decomposed (unknown op, bad GPUs or size)."""


@dataclass(frozen=True, slots=True)
class StepParameters:
    """The execution parameters the decomposition reads, in one place so a release can swap them.

    Attributes
    ----------
    wire : tuple of (str, float)
        Per protocol, bytes on the wire per payload byte. LL sends 16-byte lines of two 4-byte
        data words and two 4-byte flags (``union ncclLLFifoLine``: data1, flag1, data2, flag2): 2.
        LL128 sends 128-byte lines of which 120 are data (``NCCL_LL128_LINEELEMS`` 16,
        ``NCCL_LL128_DATAELEMS`` 15 eight-byte words): 16/15. Simple: 1. (NVIDIA/nccl v2.27.7-1
        src/include/device.h.)
    ctas_per_channel : int
        CUDA blocks an NCCL kernel runs per execution channel: one (NVIDIA/nccl v2.27.7-1
        src/enqueue.cc launches the kernel with a grid of one block per channel); each block
        holds one SM.
    """

    wire: tuple = (("LL", 2.0), ("LL128", 16 / 15), ("Simple", 1.0))
    ctas_per_channel: int = 1

    def wire_factor(self, protocol: str) -> float:
        """Wire bytes per payload byte of a protocol (1 for one it does not list)."""
        return dict(self.wire).get(str(protocol), 1.0)

    def blocks(self, algorithm: Algorithm | None, graph_channels: int, profile: NcclProfile,
               compute_capability: int, nnodes: int) -> int:
        """CUDA blocks (SMs) the kernel of a collective holds on each GPU while it runs: the
        channels its algorithm runs (:meth:`Algorithm.blocks
        <models.engine.nccl.algorithms.base.Algorithm.blocks>`: ``comm->nChannels`` for Ring, Tree
        and PAT, ``comm->nvlsChannels`` for NVLS and NVLSTree) x :attr:`ctas_per_channel`.
        Point-to-point operations (``algorithm`` None): 0 (their channels per peer are not
        modelled [U]). NCCL runs fewer channels for small sizes (src/enqueue.cc, ``nBytes < nc x
        nThreads x threadThreshold``): not modelled, so a small collective holds at most this many [U].

        Examples
        --------
        >>> from models.engine.nccl.algorithms import NVLS, NVLS_TREE, RING
        >>> from models.engine.nccl.profiles import nccl_profile
        >>> p = STEP_PARAMETERS
        >>> p.blocks(RING, 12, nccl_profile(None), 90, 1), p.blocks(NVLS, 8, nccl_profile(None), 90, 1)
        (24, 16)
        >>> p.blocks(NVLS, 8, nccl_profile(None), 100, 1), p.blocks(NVLS_TREE, 8, nccl_profile(None), 100, 2)
        (24, 32)
        """
        if algorithm is None:
            return 0
        return algorithm.blocks(graph_channels, profile, compute_capability, nnodes) * self.ctas_per_channel


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
    latency : models.engine.nccl.tuning.Latency or None
        NCCL's latency term of what runs, with its working (base and per-step terms); None for
        point-to-point operations, which NCCL's tuning model does not time.
    blocks : int
        CUDA blocks (SMs) its kernel holds on each GPU while it runs (:meth:`StepParameters.blocks`).
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
    latency: object = field(default=None, repr=False)
    blocks: int = 0

    @property
    def time(self) -> float:
        """Alone on an idle fabric: ``startup + transfer``, the estimate's time. [s]"""
        return self.startup + self.transfer

    def to_records(self) -> list:
        """Tidy rows, one per phase and link it fills (:mod:`models.engine.results` names the columns).

        The start-up phase fills no link: one row, ``u`` and ``v`` empty, ``usage`` 0. The data
        phase gives one row per directed edge of :attr:`edges`, with its :attr:`usage` (one row
        with empty ``u`` and ``v`` when it fills none: a copy on one GPU). The phases follow each
        other from 0 (alone on an idle fabric), so the phases' ``duration_s`` add up to
        :attr:`time`, the ``end_s`` of the data phase.

        Columns: ``op``, ``gpus`` (a tuple of GPU ids, in the operation's order: a send's source
        first), ``nbytes`` [B], ``algorithm``, ``protocol``, ``nchannels``, ``blocks``,
        ``nccl_latency_s`` (NCCL's latency term [s]; None for point-to-point), ``phase``
        (``"startup"`` or ``"transfer"``), ``start_s``, ``end_s``, ``duration_s`` [s], ``u``,
        ``v`` (the edge), ``usage`` (the fraction of its capacity the phase fills alone).

        Examples
        --------
        >>> import topo
        >>> steps = Decomposer(topo.dgx1v()).send(0, 3, 2**26)   # an NV2 pair: one bundle
        >>> [(r["phase"], r["u"], r["v"], r["usage"]) for r in steps.to_records()]
        [('startup', '', '', 0.0), ('transfer', 'gpu0', 'gpu3', 1.0)]
        """
        edges = self.edges or (("", ""),)
        usage = [float(x) for x in self.usage] if self.edges else [0.0]
        phase = ["startup"] + ["transfer"] * len(edges)
        start = [0.0] + [self.startup] * len(edges)
        end = [self.startup] + [self.time] * len(edges)
        return tidy_records({
            "op": self.op, "gpus": gpu_set(self.gpus), "nbytes": self.nbytes,
            "algorithm": self.algorithm, "protocol": self.protocol, "nchannels": self.nchannels,
            "blocks": self.blocks, "nccl_latency_s": None if self.latency is None else float(self.latency.value),
            "phase": phase, "start_s": start, "end_s": end,
            "duration_s": [self.startup] + [self.transfer] * len(edges),
            "u": [""] + [str(u) for u, _ in edges], "v": [""] + [str(v) for _, v in edges],
            "usage": [0.0] + usage})


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
    algorithms : sequence of Algorithm, optional
        The algorithms every collective chooses among (as for
        :func:`models.predict.collectives.estimate`; default NCCL's).

    Attributes
    ----------
    algorithms : tuple of Algorithm
        Those algorithms (:func:`models.engine.nccl.algorithms.algorithm_set`): the results kept
        are theirs.

    Notes
    -----
    Results are kept per operation for the life of the object (a symmetric step asks for the
    same operation many times); a group inside one host of a cluster reuses the decomposition of
    the same GPUs on the first host that is a copy of it (the same nodes and links inside, by
    local name, attributes and all), with its edges renamed. Do not edit ``G`` while using it.
    """

    def __init__(self, G, *, profile=None, calibration=None, parameters: StepParameters = STEP_PARAMETERS,
                 algorithms: Sequence[Algorithm] | None = None):
        # One prepared fabric (not freezing the caller's graph): the estimates and the routes
        # share its NCCL view.
        self.algorithms = algorithm_set(algorithms)
        self.estimator = Estimator(prepare(G, nccl=profile), calibration=calibration, algorithms=self.algorithms)
        self.G = self.estimator.fabric.G
        self.system = self.estimator.fabric.nccl
        self.parameters = parameters
        self.gpu_nodes = topo.gpus(self.G)
        self.ids = {n: i for i, n in enumerate(self.gpu_nodes)}
        self._done: dict = {}  # by GPU shape (a host's group serves its copies)
        self._host_kinds: dict | None = None  # host -> its kind (:meth:`_host_kind`)
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
        seen: set = set()  # a step asks for the same few operations thousands of times
        for op, gpus, nbytes in operations:
            gpus = tuple(gpus)
            if (op, gpus, nbytes) in seen:
                continue
            seen.add((op, gpus, nbytes))
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

    def _host_kind(self, prefix) -> int:
        """The kind of a host (:func:`host_kinds`), computed once per Decomposer."""
        if self._host_kinds is None:
            self._host_kinds = host_kinds(self.G)
        return self._host_kinds[prefix]

    def _cached(self, key, nodes, make) -> CollectiveSteps:
        prefixes = {_prefix(n) for n in nodes}
        if len(prefixes) == 1 and None not in prefixes:
            # One host of a cluster: the decomposition of the same GPUs on the first host of its
            # kind that asked serves every copy of that host, with its edges renamed.
            (here,) = prefixes
            local = tuple(str(n).split(".", 1)[1] for n in nodes)
            shape = (key, "host", self._host_kind(here), local)
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
                               steps.startup, steps.transfer, edges, steps.usage, steps.latency, steps.blocks)

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
        ran = e.algorithm_at(index)
        if ran is not None:
            ran.charge(_Charges(self, e, point, nodes, load, index))
        elif point.algorithm == "p2p":
            share = 1 if e.collective == "sendrecv" else len(nodes)  # a flow moves S / share
            self._flow_load(self.estimator.flow_load(e.collective, e.gpus), point.bandwidth / share, load)
        latency = None
        if e.selection is not None:
            for cand in e.selection.candidates:
                t = cand.tuning
                if t.algorithm == point.algorithm and t.protocol == point.protocol:
                    latency = t.latency
        edges, usage = _as_arrays(load)
        nnodes = e.ring.nnodes if e.ring is not None else 1
        blocks = self.parameters.blocks(ran, int(point.nchannels), self.system.profile,
                                        min(self.G.nodes[n]["compute_capability"] for n in nodes), nnodes)
        return CollectiveSteps(e.collective, tuple(e.gpus), int(point.nbytes), point.algorithm, point.protocol,
                               int(point.nchannels), float(startup), max(transfer, 0.0), edges, usage, latency,
                               blocks)

    def _send(self, size, nodes) -> CollectiveSteps:
        ids = [self.ids[n] for n in nodes]
        return self._send_from(self.estimator.estimate("sendrecv", size, sorted(ids)), -1, nodes)

    def _send_from(self, e, index, nodes) -> CollectiveSteps:
        """A send ``nodes[0] -> nodes[1]`` from the sendrecv estimate of the pair."""
        point = e.point(index)
        startup = _at(e.measurement.startup, index) if e.measurement is not None else point.latency
        load: dict = {}
        self._flow_load(self.estimator.flow_load("send", [self.ids[n] for n in nodes]), point.bandwidth, load)
        edges, usage = _as_arrays(load)
        return CollectiveSteps("send", tuple(self.ids[n] for n in nodes), int(point.nbytes), "p2p", "Simple", 0,
                               float(startup), max(float(point.time) - startup, 0.0), edges, usage)

    def _charge(self, load, edge, fraction) -> None:
        capacity = self.system.capacity(*edge)
        if capacity > 0:
            load[edge] = load.get(edge, 0.0) + fraction / capacity

    def _flow_load(self, flows, rate, load) -> None:
        """Charge point-to-point flows at ``rate`` each [B/s, NCCL's figures]: ``flows`` is the
        estimate's load, per edge the shares of the flows crossing it (:meth:`Estimator.flow_load
        <models.predict.collectives.Estimator.flow_load>`)."""
        for edge, count in flows.items():
            self._charge(load, edge, rate * count)

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



class _Charges:
    """The :class:`~models.engine.nccl.algorithms.base.LinkCharges` of one estimate at one size:
    what an algorithm's :meth:`~models.engine.nccl.algorithms.base.Algorithm.charge` calls to say
    which links its data fills, as fractions of NCCL's capacity added to ``load``.

    Every channel reserves NCCL's ``bwIntra`` on the links it crosses; the data phase moves the
    winning protocol's bus bandwidth, so a reservation ``r`` on a link of NCCL capacity ``c``
    fills ``r / c x min(1, bus / (nChannels x bwIntra)) x wire x network`` (module docstring).
    """

    def __init__(self, decomposer, e, point, nodes, load, index):
        self.decomposer, self.load = decomposer, load
        self.collective, self.nranks = e.collective, len(nodes)
        self.profile = decomposer.system.profile
        self.ring, self.tree, self.nvls = e.ring, e.tree, e.nvls
        self.groups = _node_groups(nodes)
        self.nnodes = len(self.groups)
        self.wire = decomposer.parameters.wire_factor(point.protocol)
        self.bus = _at(e.selection.bus_bandwidth, index) if e.selection is not None \
            else algbw_to_busbw(e.collective, float(point.bandwidth), len(nodes))
        self.network = _at(e.measurement.network_factor, index) if e.measurement is not None else 1.0

    def _scale(self, nchannels, bw_intra) -> float:
        reserved_total = nchannels * bw_intra
        return min(1.0, self.bus / reserved_total) * self.wire * self.network if reserved_total > 0 else 0.0

    def channels(self, search) -> float:
        """Inside each node, the searched node's reservations; the network beyond a NIC port is
        charged once, by the connections between nodes (the search's own NIC-to-switch edges
        would count the searched node's ports a second time). Returns a channel's rate [B/s]."""
        d, groups, load = self.decomposer, self.groups, self.load
        scale = self._scale(search.nchannels, search.bw_intra)
        searched = {_prefix(ld.edge[0]) for ld in search.loads} | {_prefix(ld.edge[1]) for ld in search.loads}
        inside = [ld for ld in search.loads if len(groups) == 1 or _prefix(ld.edge[0]) == _prefix(ld.edge[1])]
        for prefix, members in groups.items():
            for ld in inside:
                edge = ld.edge if prefix in searched or len(groups) == 1 else _translate(
                    ld.edge, members, groups, d.G)
                if edge is not None and d.G.has_edge(*edge):
                    load[edge] = load.get(edge, 0.0) + ld.reserved * scale / max(d.system.capacity(*edge), 1e-30)
            if len(groups) == 1:
                break
        return search.bw_intra * scale

    def switch_channels(self, graph) -> float:
        """Each NVLS channel reserves ``bwIntra`` on every GPU's links to the switches, twice on
        its head's. Returns the scale of the reservations."""
        scale = self._scale(graph.nchannels, graph.bw_intra)
        heads = list(graph.heads)
        for members in self.groups.values():
            local_heads = _match(heads, members)
            for g in members:
                self.decomposer._switch_links(self.load, g, (graph.nchannels + (g in local_heads)) * graph.bw_intra * scale)
        return scale

    def network_ring(self, nets, rate) -> None:
        self.decomposer._network_ring(self.load, self.groups, nets, rate)

    def network_tree(self, nets, rate) -> None:
        self.decomposer._network_tree(self.load, self.groups, nets, rate)

#: Node attributes that number a host's copy (topo.cluster), not part of what the host is.
_COPY_NUMBERS = ("host", "nvlink_domain")


def host_kinds(G) -> dict:
    """Which hosts of a cluster are copies of each other: per host (its node-id prefix, ``"h3"``)
    a number shared by the hosts with the same nodes and links inside (by local name) and the
    same links to shared nodes (the NVLink switches of a rack), every attribute included; the
    network ports are not compared. A what-if that changes one host gives it a number of its own.

    Examples
    --------
    >>> import topo
    >>> G = topo.build("3xdgxh100")
    >>> G.edges["h2.gpu0", "h2.nvswitch0"]["bandwidth"] /= 2
    >>> host_kinds(G)
    {'h0': 0, 'h1': 0, 'h2': 1}
    """
    members: dict = {}
    for n, host in G.nodes(data="host"):
        prefix = _prefix(n)
        if prefix is not None and host is not None and host >= 0:  # not the network (host -1)
            members.setdefault(prefix, []).append(n)
    kinds: dict = {}
    out = {}
    for host, nodes in members.items():
        inside = set(nodes)
        local = {n: str(n).split(".", 1)[1] for n in nodes}
        signature = (tuple(sorted((local[n], repr(sorted((k, v) for k, v in G.nodes[n].items()
                                                         if k not in _COPY_NUMBERS))) for n in nodes)),
                     tuple(sorted((local[u], local[v], repr(sorted(d.items())))
                                  for u in nodes for v, d in G.adj[u].items() if v in inside)),
                     # links to shared nodes (the NVLink switch trays of a rack), not network ports
                     tuple(sorted((local[u], str(v), repr(sorted(d.items())))
                                  for u in nodes for v, d in G.adj[u].items()
                                  if v not in inside and d.get("kind") != "network")),
                     tuple(sorted((str(v), local[u], repr(sorted(d.items())))
                                  for u in nodes for v, d in G.pred[u].items()
                                  if v not in inside and d.get("kind") != "network")))
        out[host] = kinds.setdefault(signature, len(kinds))
    return out


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
    """``(edges, usage)`` with usage capped at 1 and empty entries dropped (in the load's order;
    a cluster's collective charges hundreds of edges: numpy)."""
    values = np.fromiter(load.values(), dtype=np.float64, count=len(load))
    kept = (values > 0) & np.isfinite(values)
    return tuple(itertools.compress(load, kept.tolist())), np.minimum(values[kept], 1.0)
