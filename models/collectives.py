"""Collective estimates on a fabric: what nccl-tests would measure, and why.

:func:`estimate` answers "what busbw will all_reduce reach on these GPUs at this size?". For
the collectives NCCL's tuning model covers (all_reduce, all_gather, reduce_scatter, broadcast,
reduce) it runs NCCL's channel search on the fabric (:mod:`models.nccl.search`) for the ring and
the tree graph, feeds both to NCCL's tuning model (:mod:`models.nccl.tuning`) and lets it pick the
fastest (algorithm, protocol) per size, as NCCL does unless the caller forces one. Time, algbw
and busbw then follow nccl-tests' definitions (:mod:`models.nccltests`).

alltoall and sendrecv are not collectives for NCCL's tuning model: NCCL runs them as grouped
point-to-point sends. They are modelled here as concurrent flows over the same NCCL paths
(sendrecv: every rank to the next one; alltoall: every rank to every other), each link shared
in proportion to the flows crossing it, at NCCL's link figures; the latency is NCCL's Ring
Simple base latency plus one hardware step per peer. That part is this project's model, not
NCCL's, and is marked so in every explanation.

A single GPU runs no collective: NCCL copies the buffer on the device, so the time is a read
and a write of it at the GPU's memory bandwidth, and busbw is 0 as nccl-tests prints it.

:func:`pairwise` and :func:`subsets` evaluate every 2-GPU communicator and every k-GPU set.
They compute one representative per symmetry class (:func:`topo.interchangeable_gpus`,
:func:`topo.gpu_automorphisms` on the part of the fabric NCCL's paths use) and reuse it for
the others, so 65,535 DGX-2 subsets take a few dozen searches.

Examples
--------
>>> import topo
>>> e = estimate(topo.dgx1v(), "all_reduce", 256 * 2**20)
>>> e.algorithm, e.protocol, e.nchannels, round(e.busbw / 1e9, 1)
('ring', 'Simple', 6, 118.3)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import to_GBps, to_us

from .nccl.search import ChannelSearch, search_channels_in
from .nccl.system import NcclSystem
from .nccl.tuning import NCCL_COLLECTIVES, ChannelGraph, Communicator, Selection, select_algorithm
from .nccltests import COLLECTIVES, busbw_factor, collective as _collective
from .routes import PathType

__all__ = ["CollectiveEstimate", "SubsetResult", "estimate", "pairwise", "subsets",
           "SizeError", "LimitError", "COLLECTIVE_NAMES"]

#: Every collective :func:`estimate` knows, in nccl-tests' order.
COLLECTIVE_NAMES = tuple(COLLECTIVES)


class SizeError(DgxTopoError):
    """A message size that is negative, fractional or not a number."""


class LimitError(DgxTopoError):
    """Work beyond a limit the caller set, refused before it starts.

    Attributes
    ----------
    what : str
        The work refused, in words.
    keyword : str
        The keyword argument whose limit was exceeded (``max_sets``, ``max_searches``).
    size, limit : int
        The work asked for and the limit.
    """

    def __init__(self, what: str, *, keyword: str, size: int, limit: int):
        super().__init__(f"{what}: {size} is more than {keyword}={limit}")
        self.what, self.keyword, self.size, self.limit = what, keyword, size, limit


@dataclass(frozen=True, slots=True)
class CollectiveEstimate:
    """A predicted collective: nccl-tests' numbers and the model's working.

    Size-dependent fields are numpy arrays when ``nbytes`` was an array, scalars otherwise.

    Attributes
    ----------
    collective : str
    gpus : tuple of int
        GPU ids of the communicator, ascending (ranks in that order).
    nodes : tuple
        Their graph nodes.
    nbytes : int or numpy.ndarray
        nccl-tests' size ``S`` (total buffer for all_gather / reduce_scatter, per-rank buffer
        for alltoall). [bytes]
    time : float or numpy.ndarray
        Predicted time of one operation. [s]
    algorithm, protocol : str or numpy.ndarray
        What runs (``"ring"``/``"tree"`` and ``"LL"``/``"LL128"``/``"Simple"`` for NCCL's
        collectives; ``"p2p"``/``"Simple"`` for alltoall and sendrecv; ``"copy"``/``"-"``
        on one GPU).
    nchannels : int or numpy.ndarray
        NCCL's ``nChannels`` of the graph that runs (as NCCL logs it in ``Pattern ...,
        nChannels``), 0 where no channel graph is used.
    latency : float or numpy.ndarray
        The latency term of the time. [s]
    bandwidth : float or numpy.ndarray
        The bandwidth the size is divided by (NCCL's algorithm bandwidth). [B/s]
    ring, tree : ChannelSearch or None
        The channel searches behind the estimate.
    bottleneck : tuple
        The edges that bind the bandwidth that runs (for the largest size).
    selection : Selection or None
        NCCL's full tuning table for these sizes (None outside NCCL's tuning model).
    model : str
        Which model produced the time (``"NCCL 2.27.7 tuning model"``, ...).
    """

    collective: str
    gpus: tuple
    nodes: tuple
    nbytes: object
    time: object
    algorithm: object
    protocol: object
    nchannels: object
    latency: object
    bandwidth: object
    ring: ChannelSearch | None
    tree: ChannelSearch | None
    bottleneck: tuple
    selection: Selection | None = field(repr=False)
    model: str = ""

    @property
    def nranks(self) -> int:
        """Number of ranks (GPUs)."""
        return len(self.gpus)

    @property
    def algbw(self):
        """nccl-tests' algorithm bandwidth, ``S / time``. [B/s]"""
        return self.nbytes / self.time

    @property
    def busbw(self):
        """nccl-tests' bus bandwidth, ``algbw x factor(nranks)``. [B/s]"""
        return self.algbw * busbw_factor(self.collective, self.nranks)

    @property
    def channels(self) -> tuple:
        """GPU orders of the channels that run (the largest size's algorithm)."""
        search = self._search()
        return search.channels if search is not None else ()

    def _search(self):
        algorithm = np.atleast_1d(self.algorithm)[-1]
        return {"ring": self.ring, "tree": self.tree}.get(str(algorithm))

    def explain(self) -> str:
        """The working, as text: channels, bottleneck, latency and bandwidth terms."""
        return _explain(self)


@dataclass(frozen=True, slots=True)
class SubsetResult:
    """One GPU set of :func:`subsets`.

    Attributes
    ----------
    gpus : tuple of int
    busbw, algbw : float
        [B/s]
    time : float
        [s]
    algorithm, protocol : str
    nchannels : int
    representative : tuple of int
        The GPU set whose search this result reuses (itself unless a symmetry mapped it).
    """

    gpus: tuple
    busbw: float
    algbw: float
    time: float
    algorithm: str
    protocol: str
    nchannels: int
    representative: tuple


def _sizes(nbytes):
    array = np.asarray(nbytes)
    if array.dtype.kind not in "iuf" or array.dtype == bool:
        raise SizeError(f"size must be a number of bytes, received {nbytes!r}")
    if array.size == 0:
        raise SizeError("expected at least one size, received an empty array")
    if np.any(~np.isfinite(array)) or np.any(array < 0) or np.any(array != np.floor(array)):
        bad = array[(~np.isfinite(array)) | (array < 0) | (array != np.floor(array))].ravel()[0].item()
        raise SizeError(f"size must be a whole number of bytes >= 0, received {bad!r}")
    return array.astype(np.float64)


def _out(value, scalar):
    return value.item() if scalar and isinstance(value, np.ndarray) else value


class _Context:
    """A fabric prepared once for many estimates (routes, capacities, profile)."""

    def __init__(self, G, profile):
        self.fabric = NcclSystem(G, profile)  # validates G
        self.G = G
        self.profile = self.fabric.profile
        self.ids = {n: i for i, n in enumerate(topo.gpus(G))}
        self.name = G.graph.get("name", "fabric")

    def nodes(self, gpus) -> list:
        nodes = topo.select_gpus(self.G, gpus)
        return sorted(nodes, key=lambda n: self.ids[n])


def estimate(G, collective: str, nbytes, gpus=None, *, algorithm=None, protocol=None,
             profile=None) -> CollectiveEstimate:
    """Predict one collective on a set of GPUs, as nccl-tests would report it.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (one host).
    collective : str
        One of :data:`COLLECTIVE_NAMES`.
    nbytes : int or array_like of int
        nccl-tests' size: the buffer per rank for all_reduce, broadcast, reduce, sendrecv and
        alltoall, the total buffer for all_gather and reduce_scatter. [bytes]
    gpus : iterable of int or str, optional
        GPU ids (``"0-3"``, ``[0, 3, 5]``); every GPU by default. Order does not matter.
    algorithm : str, optional
        Force ``"ring"`` or ``"tree"`` (NCCL collectives only).
    protocol : str, optional
        Force ``"LL"``, ``"LL128"`` or ``"Simple"`` (NCCL collectives only).
    profile : str or NcclProfile, optional
        NCCL version profile (default: the reference version).

    Returns
    -------
    CollectiveEstimate

    Raises
    ------
    SizeError
        For a negative, fractional or non-numeric size.
    models.nccltests.UnknownCollectiveError, topo.GpuSelectionError, models.nccl.tuning.TuningError
        For an unknown collective, bad GPU ids, or an algorithm/protocol NCCL would not run.
    """
    return _estimate(_Context(G, profile), collective, nbytes, gpus, algorithm, protocol)


def _estimate(ctx, collective, nbytes, gpus, algorithm=None, protocol=None) -> CollectiveEstimate:
    spec = _collective(collective)
    size = _sizes(nbytes)
    scalar = size.ndim == 0
    nodes = ctx.nodes(gpus)
    ids = tuple(ctx.ids[n] for n in nodes)
    G = ctx.G
    if len(nodes) == 1:
        if algorithm is not None or protocol is not None:
            raise DgxTopoError(f"one GPU runs no {collective}: NCCL copies on the device, "
                               f"expected no algorithm or protocol, received {algorithm!r}/{protocol!r}")
        hbm = G.nodes[nodes[0]].get("memory_bandwidth")
        if hbm is None:
            raise DgxTopoError(f"GPU {nodes[0]!r} has no memory_bandwidth: expected it to time a "
                               f"single-GPU {collective} (a device-local copy)")
        time = 2 * size / hbm  # read and write the buffer once
        return CollectiveEstimate(spec.name, ids, tuple(nodes), _out(size, scalar), _out(time, scalar),
                                  "copy", "-", 0, 0.0, hbm / 2, None, None, (), None,
                                  "device-local copy at the GPU's memory bandwidth")
    if spec.name in NCCL_COLLECTIVES:
        return _nccl_estimate(ctx, spec.name, size, scalar, nodes, ids, algorithm, protocol)
    if algorithm not in (None, "p2p") or protocol not in (None, "Simple"):
        raise DgxTopoError(f"{collective} runs as point-to-point sends: expected no algorithm or "
                           f"protocol, received {algorithm!r}/{protocol!r}")
    return _p2p_estimate(ctx, spec.name, size, scalar, nodes, ids)


def _searches(ctx, nodes):
    ring = search_channels_in(ctx.fabric, nodes, pattern="ring")
    if ring.nnodes > 1:
        # Across nodes NCCL's tree graph (NET -> chain of the node's GPUs) is searched with
        # the ring's channel count and lands at the same NIC-bound speed on these systems:
        # it is taken as the ring's channels (the tree's latency and caps still apply).
        return ring, None
    tree = search_channels_in(ctx.fabric, nodes, pattern="balanced_tree",
                              min_channels=ring.nchannels, max_channels=ring.nchannels)
    return ring, tree


def _communicator(G, nodes, ring, tree) -> Communicator:
    ccs = [G.nodes[n]["compute_capability"] for n in nodes]
    tree_graph = tree.graph() if tree is not None else ChannelGraph(
        ring.nchannels, ring.bw_intra, ring.type_intra.name, type_inter=ring.type_inter.name,
        pattern="balanced_tree", same_channels=ring.same_channels)
    return Communicator(len(nodes), ring.graph(), tree_graph, min(ccs), nnodes=ring.nnodes,
                        compute_capability_max=max(ccs))


def _nccl_estimate(ctx, collective, size, scalar, nodes, ids, algorithm, protocol):
    ring, tree = _searches(ctx, nodes)
    comm = _communicator(ctx.G, nodes, ring, tree)
    selection = select_algorithm(collective, size, comm, algorithm=algorithm, protocol=protocol,
                                 profile=ctx.profile)
    algorithms = np.asarray(selection.algorithm)
    nchannels = np.where(algorithms == "ring", ring.nchannels, comm.tree.nchannels)
    last = str(np.atleast_1d(algorithms)[-1])
    bottleneck = (tree if last == "tree" and tree is not None else ring).bottleneck
    return CollectiveEstimate(
        collective, ids, tuple(nodes), _out(size, scalar), selection.time, selection.algorithm,
        selection.protocol, int(nchannels) if scalar else nchannels, selection.latency,
        selection.bandwidth, ring, tree, bottleneck, selection,
        f"NCCL {ctx.profile.version} tuning model")


def _p2p_estimate(ctx, collective, size, scalar, nodes, ids):
    """Concurrent point-to-point flows over NCCL's paths (see the module docstring)."""
    n = len(nodes)
    system = ctx.fabric
    members = set(nodes)
    if collective == "sendrecv":
        flows = [(i, (i + 1) % n) for i in range(n)]
        share = 1  # each rank sends its whole buffer to the next
        steps = 1
    else:  # alltoall: every rank sends S/n to every other rank
        flows = [(i, j) for i in range(n) for j in range(n) if i != j]
        share = n
        steps = n - 1
    load: dict = {}  # edge -> sum of the flows' shares crossing it
    worst_type = PathType.LOC
    for i, j in flows:
        path_type, flow = system.hop(nodes[i], nodes[j], members)
        worst_type = max(worst_type, path_type)
        overhead = system.pcie_overhead(path_type)
        for (u, v), f in flow:
            load[u, v] = load.get((u, v), 0.0) + f * (overhead if ctx.G.adj[u][v]["kind"] == "pcie" else 1.0)
    rate, worst = min((system.capacity(*edge) / f, edge) for edge, f in load.items())
    hardware = "NVLINK" if worst_type == PathType.NVL else "PCI"
    profile = ctx.profile
    latency = profile.base_lat("ring", "Simple") + steps * profile.hw_lat(hardware, "ring", "Simple")
    # Each flow moves S / share at ``rate``: the size is divided by rate x share.
    bandwidth = rate * share
    time = latency + size / bandwidth
    return CollectiveEstimate(
        collective, ids, tuple(nodes), _out(size, scalar), _out(np.asarray(time), scalar),
        "p2p", "Simple", 0, latency, bandwidth, None, None,
        (worst,), None,
        f"concurrent point-to-point flows over NCCL {profile.version} paths (this project's model; "
        f"NCCL's tuning model does not cover {collective})")


# ------------------------------------------------------------------------- many GPU sets
class _Symmetry:
    """Canonical keys of GPU sets under the symmetries of the part of the fabric NCCL uses."""

    def __init__(self, ctx, collective):
        G = ctx.G
        gpu_nodes = topo.gpus(G)
        self.hosts = None
        if G.graph.get("hosts", 1) > 1 and collective in NCCL_COLLECTIVES:
            # A cluster's hosts are identical copies and NCCL's model sees a multi-node set only
            # through its node shapes (one search per shape, the minimum over them; the network
            # is not charged): the sets with the same shapes on any hosts are equivalent.
            self.hosts = {g: (G.nodes[g]["host"], G.nodes[g]["index"]) for g in gpu_nodes}
            # Within a host, the symmetries of one host (its NICs included) apply as well.
            first = G.subgraph(n for n, h in G.nodes(data="host") if h == self.hosts[gpu_nodes[0]][0]).copy()
            self._local(first)
            self.local_node = {G.nodes[g]["index"]: g for g in topo.gpus(first)}
            return
        self._local(self._support(ctx, gpu_nodes))

    def _local(self, S) -> None:
        self.classes = topo.interchangeable_gpus(S)
        self.maps = topo.gpu_automorphisms(S)
        self.class_of = {g: c for c, members_ in enumerate(self.classes) for g in members_}
        self.position = {g: i for i, g in enumerate(topo.gpus(S))}

    @staticmethod
    def _support(ctx, gpu_nodes):
        """The fabric restricted to the edges NCCL's paths between these GPUs use."""
        G = ctx.G
        members = set(gpu_nodes)
        support = set()
        for a in gpu_nodes:
            for b in gpu_nodes:
                if a != b:
                    for (u, v), _ in ctx.fabric.hop(a, b, ())[1]:  # PCIe / switch / direct
                        support.add((u, v))
                    for (u, v), _ in ctx.fabric.hop(a, b, members)[1]:  # with NVB relays
                        support.add((u, v))
        S = G.edge_subgraph(support | {(v, u) for u, v in support}).copy()
        S.add_nodes_from((g, G.nodes[g]) for g in gpu_nodes)
        return S

    def key(self, nodes) -> tuple:
        if self.hosts is not None:
            shapes: dict = {}
            for g in nodes:
                host, index = self.hosts[g]
                shapes.setdefault(host, []).append(self.local_node[index])
            return ("hosts",) + tuple(sorted(self._canonical(shape) for shape in shapes.values()))
        return self._canonical(nodes)

    def _canonical(self, nodes) -> tuple:
        best = None
        for mapping in self.maps:
            image = sorted((mapping[g] for g in nodes), key=self.position.__getitem__)
            # Interchangeable GPUs are equivalent: keep only the class of each, in index order.
            candidate = tuple(self.class_of[g] for g in image)
            if best is None or candidate < best:
                best = candidate
        return best


def pairwise(G, collective: str, nbytes, *, profile=None, max_sets=None, max_searches=None,
             progress=None) -> np.ndarray:
    """busbw of every 2-GPU communicator.

    Parameters
    ----------
    G : networkx.DiGraph
    collective : str
    nbytes : int
        nccl-tests' size. [bytes]
    profile : str or NcclProfile, optional
    max_sets, max_searches, progress : optional
        As for :func:`subsets`.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` = busbw of GPUs i and j, in GPU-id order; the diagonal is NaN. [B/s]

    Examples
    --------
    >>> import topo
    >>> m = pairwise(topo.dgx1v(), "all_reduce", 2**28)
    >>> bool(m[0, 3] > m[0, 1] > m[0, 5])  # two links, one link, none (host path)
    True
    """
    ctx = _Context(G, profile)
    n = len(ctx.ids)
    matrix = np.full((n, n), np.nan)
    for result in _all_sets(ctx, 2, collective, nbytes, max_sets=max_sets, max_searches=max_searches,
                            progress=progress):
        i, j = result.gpus
        matrix[i, j] = matrix[j, i] = result.busbw
    return matrix


def subsets(G, k: int, collective: str, nbytes, *, profile=None, max_sets=None, max_searches=None,
            progress=None) -> list:
    """Every k-GPU set ranked by busbw: "which k GPUs should this job get?".

    Parameters
    ----------
    G : networkx.DiGraph
    k : int
        GPUs per set, 1 to the number of GPUs.
    collective : str
    nbytes : int
        nccl-tests' size. [bytes]
    profile : str or NcclProfile, optional
    max_sets : int, optional
        Refuse (:class:`LimitError`) before any work when there are more than this many
        k-GPU sets (C(GPUs, k)).
    max_searches : int, optional
        Refuse (:class:`LimitError`) before any estimate when the sets need more than this
        many estimates (one per symmetry class, each a channel search).
    progress : callable, optional
        Called as ``progress(done, total)`` after each estimate, for a progress bar.

    Returns
    -------
    list of SubsetResult
        Best first (highest busbw, then shortest time, then lowest GPU ids).

    Raises
    ------
    topo.DgxTopoError
        For ``k`` out of range or a size array (one size per ranking).
    LimitError
        For work beyond ``max_sets`` or ``max_searches``.

    Examples
    --------
    >>> import topo
    >>> best = subsets(topo.dgx1v(), 4, "all_reduce", 2**30)[0]
    >>> best.gpus, best.nchannels
    ((0, 1, 2, 3), 4)
    """
    ctx = _Context(G, profile)
    results = _all_sets(ctx, k, collective, nbytes, max_sets=max_sets, max_searches=max_searches,
                        progress=progress)
    results.sort(key=lambda r: (-r.busbw, r.time, r.gpus))
    return results


def _all_sets(ctx, k, collective, nbytes, *, max_sets=None, max_searches=None, progress=None) -> list:
    n = len(ctx.ids)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise DgxTopoError(f"k must be a number of GPUs from 1 to {n} on {ctx.name}, received {k!r}")
    if np.ndim(nbytes) != 0:
        raise SizeError(f"rank GPU sets at one size: expected a single size, received {nbytes!r}")
    _collective(collective)
    count = math.comb(n, k)
    if max_sets is not None and count > max_sets:
        raise LimitError(f"{count} sets of {k} GPUs on {ctx.name}", keyword="max_sets", size=count,
                         limit=max_sets)
    symmetry = _Symmetry(ctx, collective)
    gpu_nodes = topo.gpus(ctx.G)
    combos = list(itertools.combinations(range(n), k))
    keys = [symmetry.key([gpu_nodes[i] for i in combo]) for combo in combos]
    representatives: dict = {}
    for combo, key in zip(combos, keys):
        representatives.setdefault(key, combo)
    if max_searches is not None and len(representatives) > max_searches:
        raise LimitError(f"{count} sets of {k} GPUs on {ctx.name} need {len(representatives)} estimates",
                         keyword="max_searches", size=len(representatives), limit=max_searches)
    done: dict = {}
    for key, combo in representatives.items():
        done[key] = _estimate(ctx, collective, nbytes, list(combo))
        if progress is not None:
            progress(len(done), len(representatives))
    results = []
    for combo, key in zip(combos, keys):
        e = done[key]
        results.append(SubsetResult(combo, float(e.busbw), float(e.algbw), float(e.time),
                                    str(e.algorithm), str(e.protocol), int(e.nchannels),
                                    representatives[key]))
    return results


# ------------------------------------------------------------------------------ explain
def _gbps(value) -> str:
    return f"{to_GBps(value):.1f}"


def _explain(e: CollectiveEstimate) -> str:
    lines = [f"{e.collective} on GPUs {','.join(map(str, e.gpus))} ({e.nranks} ranks); model: {e.model}"]
    for search in (e.ring, e.tree):
        if search is None:
            continue
        lines.append(f"{search.pattern} graph: {search.nchannels} channels x {_gbps(search.bw_intra)} GB/s"
                     f" (type {search.type_intra.name}, maxBw {_gbps(search.max_bw)}, totalBw "
                     f"{_gbps(search.total_bw)} GB/s{', duplicated' if search.duplicated else ''})")
        for c, order in enumerate(search.channels):
            lines.append(f"  channel {c:2d}: " + " ".join(str(e.gpus[e.nodes.index(g)]) for g in order))
        if search.loads:
            top = search.loads[0]
            edges = search.bottleneck
            binding = ", ".join(f"{u}->{v}" for u, v in edges[:6]) + \
                (f" (+{len(edges) - 6} more)" if len(edges) > 6 else "")
            lines.append(f"  bottleneck: {binding} ({_gbps(top.reserved)} of {_gbps(top.capacity)} GB/s "
                         f"reserved)")
        lines.append("  search: " + "; ".join(t for t in search.trace if "skipped" not in t))
    if e.selection is not None:
        sizes = np.atleast_1d(e.nbytes)
        lines.append("tuning (time = latency + size / algorithm bandwidth), largest size "
                     f"{int(sizes[-1])} B:")
        for cand in e.selection.candidates:
            t = cand.tuning
            terms = " + ".join(f"{term.count:g} x {to_us(term.per_step):.2f}" for term in t.latency.terms
                               if term.count)
            steps = "; ".join(f"{s.name} x{s.factor:g}" + (f" cap {_gbps(s.cap)}" if s.cap is not None else "")
                              + (" (cap binds)" if s.bound else "") for s in t.bus.steps)
            lines.append(
                f"  {t.algorithm:4} {t.protocol:6} latency {to_us(t.latency.base):.1f} + {terms or '0'} = "
                f"{to_us(t.latency.value):.1f} us; busBw {t.bus.nchannels} x {_gbps(t.bus.channel_bandwidth)} "
                f"= {_gbps(t.bus.raw)} -> {_gbps(t.bus.value)} GB/s [{steps or 'no factor'}]; algBw "
                f"{_gbps(t.bandwidth)} GB/s; time {to_us(np.atleast_1d(cand.time)[-1]):.1f} us")
        lines.append(f"  chosen: {np.atleast_1d(e.algorithm)[-1]}/{np.atleast_1d(e.protocol)[-1]}")
    else:
        lines.append(f"latency {to_us(np.atleast_1d(e.latency)[-1]):.1f} us; bandwidth "
                     f"{_gbps(np.atleast_1d(e.bandwidth)[-1])} GB/s"
                     + (f"; bottleneck {e.bottleneck[0][0]}->{e.bottleneck[0][1]}" if e.bottleneck else ""))
    return "\n".join(lines)
