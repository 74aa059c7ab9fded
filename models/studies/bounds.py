"""Optimal-schedule bounds: the best busbw any schedule could reach on a GPU set, and NCCL beside it.

Every bound reads the per-direction capacity of the fabric's edges (``bandwidth``) on the
capacity graph of :mod:`models.studies.relays` (``relay`` chooses which nodes may forward) and is a
pure bandwidth bound: no latency, so it is the limit of busbw at large sizes. ``M`` below is
nccl-tests' size ``S`` [B], ``V_c`` the set's GPUs (``n`` of them), ``B+(A)`` / ``B-(A)`` the
capacity out of / into a node set ``A`` (relays included in ``A`` or not, freely).

broadcast / reduce (root ``r``)
    ``T >= M / min_v maxflow(r, v)``. Edmonds' branching theorem packs that many (fractional)
    arborescences from ``r``; switches and other relays are Steiner nodes, which the
    edge-splitting theorem for Eulerian digraphs (Bang-Jensen, Frank, Jackson, 1995) removes
    without lowering any GPU-to-GPU connectivity when each relay's in- and out-capacity are
    equal, so the bound is achievable then. reduce is broadcast on the reversed graph.
all_gather / reduce_scatter
    ForestColl's cut bound (Zhao et al., "ForestColl: Efficient Collective Communications on
    Heterogeneous Network Fabrics", 2024): every GPU holds ``M/n``, and for every node set ``A``
    with ``A`` meeting ``V_c`` but not containing it, the ``|A ∩ V_c|`` shards of ``A`` must
    leave it, so ``T >= (M/n) max_A |A ∩ V_c| / B+(A)``. With a per-root rate ``x`` (each GPU
    multicasts its shard at ``x``), ``x* = min_A B+(A) / |A ∩ V_c|``. It is computed exactly
    without enumerating cuts: add a source ``s`` with an arc of capacity ``x`` to each GPU; ``x``
    is feasible iff ``maxflow(s, w) >= n x`` for every GPU ``w`` (a cut ``{s} ∪ A`` with ``w``
    outside has capacity ``x |V_c \\ A| + B+(A)``). Dinkelbach's iteration on the ratio (start
    at the best single-GPU cut; replace ``x`` by the ratio of the most violated cut) needs a
    few rounds of ``n`` max-flows (one per class of interchangeable GPUs) and ends on the
    binding cut. Packing spanning trees (Blink: Wang et al., "Blink: Fast and Generic
    Collectives for Distributed ML", MLSys 2020; ForestColl) achieves ``x*`` when the relays
    are Eulerian. reduce_scatter is all_gather on the reversed graph (reversed trees).
all_reduce
    reduce_scatter then all_gather: ``T = (M/n)(1/x*_rs + 1/x*_ag)``, the best of the
    schedules NCCL's ring and ForestColl run (GPUs reduce, relays only forward). It is not a
    bound on every schedule: a reduce-then-broadcast tree can beat it on a chain of 3 GPUs.
    :attr:`Bound.upper_busbw` gives the bound on *any* schedule, in-switch reduction included:
    every cut between GPUs must carry ``M`` each way, ``T >= M / min(B+(A), B-(A))``. In-switch
    reduction (NVLS, NVSwitch gen 3 with Hopper: NVIDIA/nccl v2.27.7-1 src/transport/nvls.cc)
    is reported as applicable or not (:func:`nvls_applicable`: NVLink SHARP switches, Hopper GPUs).
alltoall / sendrecv
    The maximum concurrent multicommodity flow, as a linear program solved by HiGHS through
    ``scipy.optimize.linprog``: one commodity per source GPU, rate ``λ`` to every other GPU
    (alltoall: ``T = (M/n)/λ``) or to the next rank (sendrecv: ``T = M/λ``). Its size is
    ``n x arcs`` variables; beyond :data:`MAX_LP_VARIABLES` it is refused with
    :class:`BoundTooLargeError`. The links whose capacity constraint has a non-zero dual are
    the binding ones.

busbw follows nccl-tests (:func:`models.engine.nccltests.busbw_factor`): ``busbw = (M / T) x factor(n)``.

Examples
--------
>>> import topo
>>> b = bound(topo.dgx1v(), "all_reduce", 2**33, edge_kinds=["nvlink"])
>>> round(b.bound_busbw / 1e9, 1), round(b.nccl_busbw / 1e9, 1), b.cut.gpus
(150.0, 122.3, (1, 2, 3, 4, 5, 6, 7))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

import topo
from topo.errors import DgxTopoError, LimitError
from topo.select import GpuIds
from topo.units import Sizes, is_int

from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccl.profiles import NcclProfile
from ..predict.collectives import estimate
from ..engine.nccl.nvls import NVLS_MIN_COMPUTE_CAPABILITY, sharp_switch
from ..engine.nccl.reasons import Cause, Why
from ..engine.results import tidy_records
from ..engine.results import gpu_set
from ..engine.nccltests import COLLECTIVES, algbw_to_busbw, collective as _collective
from .packing import pack_trees
from .relays import RELAYS, FlowNetwork, capacity_graph, out_capacity, relay_edge_kinds

__all__ = ["BoundError", "BoundTooLargeError", "Cut", "Bound", "SubsetBound", "bound",
           "subset_bounds", "pairwise_bounds", "nvls_applicable", "MAX_LP_VARIABLES",
           "BOUND_COLLECTIVES", "RELAYS"]

#: Collectives with a bound: every one of :data:`models.engine.nccltests.COLLECTIVES`, each with
#: the bound its ``bound`` names.
BOUND_COLLECTIVES = tuple(COLLECTIVES)
#: Largest multicommodity LP (variables = source GPUs x arcs) solved; HiGHS takes about a
#: second at this size on one core.
MAX_LP_VARIABLES = 250_000
# Relative tolerance of cut comparisons (capacities are sums of floats).
_TOL = 1e-9


class BoundError(DgxTopoError):
    """A bound that cannot be asked: too few GPUs, a root outside the set, a size array."""


class BoundTooLargeError(BoundError):
    """A linear program beyond :data:`MAX_LP_VARIABLES`."""


@dataclass(frozen=True, slots=True)
class Cut:
    """The cut that proves a bound.

    Attributes
    ----------
    kind : str
        ``"cut"`` (a node set and the arcs leaving it) or ``"saturated"`` (links whose
        capacity binds the LP, for alltoall / sendrecv).
    gpus : tuple of int
        GPU ids on the sending side of the cut.
    other : tuple of int
        GPU ids on the receiving side.
    links : tuple of (node, node)
        The arcs that cross (or saturate).
    capacity : float
        Their capacity, summed. [B/s]
    shards : float
        What must cross, in units of the per-root rate: ``|A ∩ V_c|`` for all_gather, 1 for
        broadcast, ``nan`` for an LP.
    """

    kind: str
    gpus: tuple
    other: tuple
    links: tuple
    capacity: float
    shards: float

    def to_records(self) -> list:
        """One tidy row: the kind of cut, the GPUs on each side, the links and their capacity."""
        return tidy_records({"kind": self.kind, "gpus": gpu_set(self.gpus),
                             "other_gpus": gpu_set(self.other), "links": len(self.links),
                             "capacity_Bps": self.capacity, "shards": self.shards})


@dataclass(frozen=True, slots=True)
class Bound:
    """An optimal-schedule bound beside NCCL's predicted busbw.

    Attributes
    ----------
    collective, system : str
    gpus : tuple of int
    root : int or None
        Root GPU id (broadcast, reduce).
    nbytes : int
        nccl-tests' size. [B]
    relay : str
    edge_kinds : tuple of str or None
    bound_busbw, bound_algbw : float
        The bound as nccl-tests' busbw and algbw. [B/s]
    time : float
        Shortest time of the operation (bandwidth only). [s]
    upper_busbw : float
        The bound on any schedule (all_reduce: the cut bound, in-switch reduction included;
        the same as ``bound_busbw`` otherwise). [B/s]
    achievable : bool
        True when a schedule is known to reach ``bound_busbw`` (Eulerian relays for tree
        packings; always for the flow LP).
    cut : Cut
    formulation : str
    nvls_why : models.engine.nccl.reasons.Why
        In-switch reduction: whether it applies and why (:func:`nvls_applicable`'s reason for
        all_reduce, :attr:`~models.engine.nccl.reasons.Cause.NVLS_NOT_ALL_REDUCE` otherwise);
        :func:`models.present.reasons_text.nvls_bound_text` words it.
    nccl_busbw, nccl_bandwidth_busbw : float or None
        NCCL's predicted busbw at this size, and from its bandwidth term alone. [B/s]
    nccl_time : float or None
        [s]
    nccl_algorithm : str or None
    ratio : float or None
        ``nccl_busbw / bound_busbw`` (None without NCCL's estimate or for a zero bound).
    packings : tuple of models.studies.packing.TreePacking
        With ``trees=True``: the schedule (all_reduce: reduce_scatter and all_gather).
    rates : tuple of (str, float)
        The per-root / per-commodity rates behind the bound. [B/s]
    nccl : CollectiveEstimate or None
        NCCL's estimate.
    """

    collective: str
    system: str
    gpus: tuple
    root: int | None
    nbytes: int
    relay: str
    edge_kinds: tuple | None
    bound_busbw: float
    bound_algbw: float
    time: float
    upper_busbw: float
    achievable: bool
    cut: Cut
    formulation: str
    nvls_why: Why
    nccl_busbw: float | None
    nccl_bandwidth_busbw: float | None
    nccl_time: float | None
    nccl_algorithm: str | None
    ratio: float | None
    packings: tuple = ()
    rates: tuple = ()
    nccl: object = field(default=None, repr=False)

    @property
    def nvls_applies(self) -> bool:
        """True when the fabric's switches could reduce in the network (NVLS) for this all_reduce."""
        return self.nvls_why.cause is Cause.NVLS_SWITCH_REDUCES

    @property
    def upper_above_bound(self) -> bool:
        """True when the bound on any schedule (:attr:`upper_busbw`, in-switch reduction
        included) is above :attr:`bound_busbw` by more than rounding."""
        return self.upper_busbw > self.bound_busbw * (1 + _TOL)

    def to_records(self) -> list:
        """One tidy row: the bound, NCCL's busbw beside it, the binding cut's capacity and whether
        in-switch reduction applies (``nvls_cause``: the :class:`~models.engine.nccl.reasons.Cause`'s
        value; :mod:`models.engine.results` names the columns)."""
        return tidy_records({
            "collective": self.collective, "system": self.system, "gpus": gpu_set(self.gpus),
            "ngpus": len(self.gpus), "root": self.root, "nbytes": self.nbytes, "relay": self.relay,
            "edge_kinds": None if self.edge_kinds is None else ",".join(self.edge_kinds),
            "bound_busbw_Bps": self.bound_busbw, "bound_algbw_Bps": self.bound_algbw, "time_s": self.time,
            "upper_busbw_Bps": self.upper_busbw, "achievable": self.achievable,
            "nccl_busbw_Bps": self.nccl_busbw, "nccl_bandwidth_busbw_Bps": self.nccl_bandwidth_busbw,
            "nccl_time_s": self.nccl_time, "nccl_algorithm": self.nccl_algorithm, "ratio": self.ratio,
            "cut_kind": self.cut.kind, "cut_capacity_Bps": self.cut.capacity,
            "nvls_applies": self.nvls_applies, "nvls_cause": self.nvls_why.cause.value})


@dataclass(frozen=True, slots=True)
class SubsetBound:
    """The bound of one GPU set of :func:`subset_bounds`.

    Attributes
    ----------
    gpus : tuple of int
    bound_busbw : float
        [B/s]
    representative : tuple of int
        The GPU set whose computation this result reuses (itself unless a symmetry mapped it).
    """

    gpus: tuple
    bound_busbw: float
    representative: tuple

    def to_records(self) -> list:
        """One tidy row: the set, its bound, and the set whose computation it reuses."""
        return tidy_records({"gpus": gpu_set(self.gpus), "ngpus": len(self.gpus),
                             "bound_busbw_Bps": self.bound_busbw,
                             "representative": gpu_set(self.representative)})


# ---------------------------------------------------------------------------- the rates
def _reverse(H):
    return H.reverse(copy=True)


def _symmetric(H) -> bool:
    return all(H.has_edge(v, u) and abs(H.edges[v, u]["capacity"] - c) <= _TOL * c
               for u, v, c in H.edges(data="capacity"))


def _eulerian(H, members) -> bool:
    """Every relay receives as much capacity as it sends (the splitting theorem's condition)."""
    for n in H:
        if n in members:
            continue
        into = sum(c for _, _, c in H.in_edges(n, data="capacity"))
        out = sum(c for _, _, c in H.out_edges(n, data="capacity"))
        if abs(into - out) > _TOL * max(into, out, 1.0):
            return False
    return True


def _broadcast(H, root, members):
    """min over GPUs v of maxflow(root, v), and the source side of the binding cut."""
    net = FlowNetwork(H)
    best = (math.inf, None)
    for v in members:
        if v != root:
            value, side = net.min_cut(root, v)
            if value < best[0]:
                best = (value, side)
    return best


def _representatives(H, members) -> list:
    """One GPU per class of interchangeable GPUs of H (the sinks of the all_gather flows)."""
    if len(members) <= 8:
        return list(members)
    member_set = set(members)
    reps = []
    for cls in topo.interchangeable_gpus(H):
        inside = [g for g in cls if g in member_set]
        if inside:
            reps.append(inside[0])
    return reps


def _all_gather(H, members, reps=None):
    """ForestColl's x* = min_A B+(A)/|A ∩ V_c| by Dinkelbach's iteration (module docstring)."""
    n = len(members)
    member_set = set(members)
    x, side = min((out_capacity(H, {v}), {v}) for v in members)
    if x <= 0:
        return 0.0, side
    net = FlowNetwork(H, sources=members)
    sinks = reps if reps is not None else members
    for _ in range(200):
        worst = (0.0, None)
        for w in sinks:
            value, reach = net.min_cut(FlowNetwork.SOURCE, w, source_capacity=x)
            slack = value - n * x  # = B+(A) - x |A ∩ V_c| for the cut A = reach \ {s}
            if slack < worst[0]:
                worst = (slack, reach - {FlowNetwork.SOURCE})
        if worst[1] is None or worst[0] >= -_TOL * n * x:
            return x, side
        A = worst[1]
        ratio = out_capacity(H, A) / len(A & member_set)
        if ratio >= x * (1 - _TOL):
            return x, side
        x, side = ratio, A
        if x <= 0:
            return 0.0, side
    raise BoundError("the all_gather cut iteration did not converge in 200 rounds")  # pragma: no cover


def _min_separation(H, members):
    """min over cuts separating GPUs of min(B+(A), B-(A)): M must cross each way."""
    net = FlowNetwork(H)
    first = members[0]
    best = (math.inf, None)
    for v in members[1:]:
        for s, t in ((first, v), (v, first)):
            value, side = net.min_cut(s, t)
            if value < best[0]:
                best = (value, side)
    return best


def _flow_lp(H, members, demands):
    """Maximum concurrent flow: rate λ for each (source, sink) of ``demands``."""
    try:
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix
    except ImportError as error:  # pragma: no cover - scipy is a test dependency
        raise BoundError("the alltoall / sendrecv bound solves an LP with scipy (HiGHS): install "
                         "scipy (pip install dgx-topo[fast])") from error
    arcs = list(H.edges(data="capacity"))
    nodes = list(H)
    index = {v: i for i, v in enumerate(nodes)}
    sources = sorted({s for s, _ in demands}, key=members.index)
    variables = len(sources) * len(arcs) + 1
    if variables > MAX_LP_VARIABLES:
        raise BoundTooLargeError(
            f"the multicommodity LP of {len(members)} GPUs needs {variables} variables "
            f"({len(sources)} sources x {len(arcs)} arcs): expected at most MAX_LP_VARIABLES = "
            f"{MAX_LP_VARIABLES}; choose fewer GPUs or relay='none'")
    E, lam = len(arcs), variables - 1
    scale = 1e9  # solve in GB/s
    rows, cols, vals = [], [], []
    for k, s in enumerate(sources):
        base = k * len(nodes)
        for e, (u, v, _) in enumerate(arcs):
            rows += [base + index[v], base + index[u]]
            cols += [k * E + e, k * E + e]
            vals += [1.0, -1.0]
        for (src, dst) in demands:
            if src == s:
                rows += [base + index[dst], base + index[s]]
                cols += [lam, lam]
                vals += [-1.0, 1.0]
    A_eq = coo_matrix((vals, (rows, cols)), shape=(len(sources) * len(nodes), variables)).tocsr()
    cap_rows = [e for k in range(len(sources)) for e in range(E)]
    cap_cols = [k * E + e for k in range(len(sources)) for e in range(E)]
    A_ub = coo_matrix(([1.0] * len(cap_rows), (cap_rows, cap_cols)), shape=(E, variables)).tocsr()
    b_ub = np.array([c / scale for _, _, c in arcs])
    objective = np.zeros(variables)
    objective[lam] = -1.0
    result = linprog(objective, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.zeros(A_eq.shape[0]),
                     bounds=(0, None), method="highs")
    if result.status != 0:  # pragma: no cover - the LP is always feasible (λ = 0) and bounded
        raise BoundError(f"the multicommodity LP failed: {result.message}")
    duals = result.ineqlin.marginals
    saturated = tuple((u, v) for e, (u, v, _) in enumerate(arcs) if duals[e] < -1e-9)
    return float(result.x[lam]) * scale, saturated


# ------------------------------------------------------------------------------ NVLS hook
def nvls_applicable(G: nx.DiGraph) -> tuple[bool, Why]:
    """Whether the fabric's switches can reduce in the network (NVLS), and why.

    NVLS needs NVSwitches with NVLink SHARP (gen 3 and later, :func:`models.engine.nccl.nvls.sharp_switch`
    reads the switch's ``model``) and Hopper or later GPUs (NVIDIA/nccl v2.27.7-1
    src/transport/nvls.cc enables it on SM90+ only).

    Returns
    -------
    (bool, models.engine.nccl.reasons.Why)
        The reason's cause is :attr:`~models.engine.nccl.reasons.Cause.NVLS_NO_NVSWITCH`,
        ``NVLS_NO_SHARP`` (``names``: every model of the fabric's NVSwitches, ``"?"`` for one
        without), ``NVLS_COMPUTE_CAPABILITY`` (``compute_capability``: the GPUs' lowest,
        ``limit``: 90) or, when it applies, ``NVLS_SWITCH_REDUCES`` (``names``: the models);
        :func:`models.present.reasons_text.nvls_bound_text` words it.

    Examples
    --------
    >>> import topo
    >>> nvls_applicable(topo.dgx2())
    (False, Why(NVLS_NO_SHARP, names=('NVSwitch (first generation)',)))
    """
    switches = topo.nodes_of_kind(G, "nvswitch")
    if not switches:
        return False, Why(Cause.NVLS_NO_NVSWITCH)
    models = tuple(sorted({str(G.nodes[s].get("model", "?")) for s in switches}))
    if not all(sharp_switch(G, s) for s in switches):
        return False, Why(Cause.NVLS_NO_SHARP, names=models)
    cc = min(G.nodes[g]["compute_capability"] for g in topo.gpus(G))
    if cc < NVLS_MIN_COMPUTE_CAPABILITY:
        return False, Why(Cause.NVLS_COMPUTE_CAPABILITY, compute_capability=cc,
                          limit=NVLS_MIN_COMPUTE_CAPABILITY)
    return True, Why(Cause.NVLS_SWITCH_REDUCES, names=models)


# --------------------------------------------------------------------------- the solver
@dataclass(frozen=True, slots=True)
class _Solved:
    seconds_per_byte: float
    upper_seconds_per_byte: float
    cut: Cut
    achievable: bool
    formulation: str
    rates: tuple


class _BoundProblem:
    """A prepared fabric set up for many bounds: GPU ids, the relay option, the edge kinds."""

    def __init__(self, G, relay, edge_kinds):
        self.edge_kinds = relay_edge_kinds(relay, edge_kinds)  # checks the options
        self.G = G
        self.relay = relay
        self.gpu_nodes = topo.gpus(G)
        self.ids = {g: i for i, g in enumerate(self.gpu_nodes)}
        self.name = G.graph.get("name", "fabric")

    def cut(self, H, side, members, shards, reverse=False) -> Cut:
        """A Cut from the sending side ``side`` of H (or of reversed H)."""
        if reverse:
            side = set(H) - set(side)
        side = set(side) & set(H)
        links = tuple(sorted(((u, v) for u in side for v in H.succ[u] if v not in side), key=str))
        ids = self.ids
        gpus = tuple(sorted(ids[g] for g in members if g in side))
        other = tuple(sorted(ids[g] for g in members if g not in side))
        return Cut("cut", gpus, other, links, out_capacity(H, side), float(shards))

    def solve(self, name, nodes, root=None) -> _Solved:
        n = len(nodes)
        members = list(nodes)
        H = capacity_graph(self.G, members, relay=self.relay, edge_kinds=self.edge_kinds)
        eulerian = _eulerian(H, set(members))
        kind = COLLECTIVES[name].bound
        if kind == "rooted":
            graph = H if name == "broadcast" else _reverse(H)
            rate, side = _broadcast(graph, root, members)
            cut = self.cut(H, side, members, 1, reverse=name == "reduce")
            spb = 1 / rate if rate > 0 else math.inf
            what = "maxflow(root, v)" if name == "broadcast" else "maxflow(v, root)"
            return _Solved(spb, spb, cut, eulerian,
                           f"T >= M / min_v {what} (Edmonds' arborescence packing; relays "
                           f"{'Eulerian: achievable' if eulerian else 'not Eulerian: may not be achievable'})",
                           ((f"{name} rate", rate),))
        if kind == "cut":
            reps = _representatives(H, members)
            symmetric = _symmetric(H)
            rates = {}
            if name != "reduce_scatter":
                rates["all_gather"] = _all_gather(H, members, reps)
            if name != "all_gather":
                rates["reduce_scatter"] = (rates["all_gather"] if symmetric and "all_gather" in rates
                                           else _all_gather(_reverse(H), members, reps))
            binding = min(rates, key=lambda k: rates[k][0])
            x, side = rates[binding]
            cut = self.cut(H, side, members, len(set(side) & set(members)),
                           reverse=binding == "reduce_scatter")
            spb = sum(1 / n / r if r > 0 else math.inf for r, _ in rates.values())
            formulation = ("ForestColl cut bound T >= (M/n) max_A |A ∩ V_c| / B+(A), x* = min_A "
                           "B+(A)/|A ∩ V_c| by parametric max-flow (Dinkelbach)")
            upper = spb
            if name == "all_reduce":
                value, separation = _min_separation(H, members)
                upper = 1 / value if value > 0 else math.inf
                formulation = ("reduce_scatter + all_gather, each " + formulation +
                               "; any schedule (reductions anywhere): T >= M / min cut between GPUs")
            return _Solved(spb, upper, cut, eulerian,
                           formulation + (" (Eulerian relays: tree packing reaches it)" if eulerian
                                          else " (relays not Eulerian: packing may fall short)"),
                           tuple((f"{k} per-root rate", r) for k, (r, _) in rates.items()))
        # alltoall / sendrecv: multicommodity flow
        if name == "alltoall":
            demands = [(s, t) for s in members for t in members if s != t]
        else:
            demands = [(members[i], members[(i + 1) % n]) for i in range(n)]
        rate, saturated = _flow_lp(H, members, demands)
        share = n if name == "alltoall" else 1
        spb = 1 / share / rate if rate > 0 else math.inf
        ids = self.ids
        ends = sorted({ids[x] for edge in saturated for x in edge if x in ids})
        cut = Cut("saturated", tuple(ends), (), saturated,
                  float(sum(H.edges[e]["capacity"] for e in saturated)), math.nan)
        return _Solved(spb, spb, cut, True,
                       "maximum concurrent multicommodity flow (LP, HiGHS): "
                       + ("every GPU to every other at rate λ, T = (M/n)/λ" if name == "alltoall"
                          else "every rank to the next at rate λ, T = M/λ"),
                       (("per-pair rate", rate),))


def _busbw(name, n, seconds_per_byte) -> tuple[float, float]:
    if math.isinf(seconds_per_byte):
        return 0.0, 0.0
    algbw = 1 / seconds_per_byte
    return float(algbw_to_busbw(name, algbw, n)), float(algbw)


def _check_collective(collective) -> str:
    name = _collective(collective).name
    if name not in BOUND_COLLECTIVES:  # pragma: no cover - every nccl-tests collective has one
        raise BoundError(f"no bound for {name}: expected one of {', '.join(BOUND_COLLECTIVES)}")
    return name


def bound(G: nx.DiGraph | PreparedFabric, collective: str, nbytes: Sizes, gpus: GpuIds = None, *, relay: str = "switches",
          trees: bool = False, root: int | None = None, edge_kinds: Iterable[str] | None = None, nccl: bool = True,
          profile: str | NcclProfile | None = None, max_gpus: int | None = None) -> Bound:
    """The best busbw any schedule could reach on these GPUs, beside NCCL's prediction.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
        A fabric (clusters included).
    collective : str
        One of :data:`BOUND_COLLECTIVES`.
    nbytes : int or str
        nccl-tests' size (``"8G"`` accepted). [B]
    gpus : str or iterable of int, optional
        GPU ids; every GPU by default.
    relay : {"none", "switches", "all"}
        Which nodes forward (:mod:`models.studies.relays`). NCCL's own relays are ``"switches"``; the
        invariant ``bound >= NCCL`` holds there and with ``"all"``.
    trees : bool
        Also pack spanning trees that meet the bound (:func:`models.studies.packing.pack_trees`;
        broadcast, reduce, all_gather, reduce_scatter, all_reduce).
    root : int, optional
        Root GPU id of broadcast / reduce (default: the lowest id, nccl-tests' root 0).
    edge_kinds : iterable of str, optional
        Only these edge kinds carry data (default: all, PCIe and network included).
    nccl : bool
        Also run NCCL's model (:func:`models.estimate`) for the ratio.
    profile : str or NcclProfile, optional
        NCCL version profile for the estimate.
    max_gpus : int, optional
        Refuse (:class:`topo.LimitError`) before any work a set of more GPUs than this: the
        cut bounds grow faster than linearly with the GPUs (4xdgx2, 64 GPUs: about 1 s;
        16xdgx2, 256 GPUs: about 50 s).

    Returns
    -------
    Bound

    Raises
    ------
    BoundError
        For fewer than 2 GPUs, a root outside the set, or a size array.
    BoundTooLargeError
        For an alltoall / sendrecv LP beyond :data:`MAX_LP_VARIABLES`.
    models.studies.relays.RelayError, topo.GpuSelectionError, topo.SizeError, models.engine.nccltests.UnknownCollectiveError
        For bad options, GPU ids, sizes or collective names.
    topo.LimitError
        For more GPUs than ``max_gpus``.
    """
    name = _check_collective(collective)
    size = topo.parse_nbytes(nbytes)
    if not isinstance(size, int):
        raise BoundError(f"a bound is for one size: expected a single size, received {nbytes!r}")
    prepared = prepare(G, nccl=profile)
    G = prepared.G
    if max_gpus is not None:
        count = len(topo.select_gpus(G, gpus))
        if count > max_gpus:
            raise LimitError(f"a bound on {count} GPUs", keyword="max_gpus", size=count, limit=max_gpus)
    fabric = _BoundProblem(G, relay, edge_kinds)
    nodes = sorted(topo.select_gpus(G, gpus), key=fabric.ids.__getitem__)
    ids = tuple(fabric.ids[g] for g in nodes)
    if len(nodes) < 2:
        raise BoundError(f"a {name} bound needs at least 2 GPUs, received GPUs {list(ids)}")
    root_id = None
    root_node = None
    if COLLECTIVES[name].bound == "rooted":
        root_id = ids[0] if root is None else root
        if not is_int(root_id) or root_id not in ids:
            raise BoundError(f"root must be a GPU id of the set {list(ids)}, received {root!r}")
        root_id = int(root_id)
        root_node = nodes[ids.index(root_id)]
    elif root is not None:
        raise BoundError(f"{name} has no root: expected root=None, received {root!r}")
    solved = fabric.solve(name, nodes, root_node)
    busbw, algbw = _busbw(name, len(nodes), solved.seconds_per_byte)
    upper, _ = _busbw(name, len(nodes), solved.upper_seconds_per_byte)
    nvls_why = Why(Cause.NVLS_NOT_ALL_REDUCE, collective=name)
    if name == "all_reduce":
        nvls_why = nvls_applicable(G)[1]
    packings = ()
    if trees:
        targets = {"all_reduce": ("reduce_scatter", "all_gather")}.get(name, (name,))
        if COLLECTIVES[name].bound == "flow":
            raise BoundError(f"trees=True packs spanning trees for broadcast, reduce, all_gather, "
                             f"reduce_scatter and all_reduce, received {name} (its schedule is the LP's flow)")
        packings = tuple(pack_trees(G, t, ids, relay=relay, root=root_id, edge_kinds=edge_kinds)
                         for t in targets)
    e = None
    nccl_busbw = nccl_bw = nccl_time = algorithm = ratio = None
    if nccl:
        e = estimate(prepared, name, size, gpus=list(ids))
        nccl_busbw = float(e.busbw)
        nccl_bw = algbw_to_busbw(name, float(e.bandwidth), len(ids))
        nccl_time = float(e.time)
        algorithm = f"{e.algorithm}/{e.protocol}"
        ratio = nccl_busbw / busbw if busbw > 0 else None
    return Bound(name, fabric.name, ids, root_id, size, relay, fabric.edge_kinds, busbw, algbw,
                 size * solved.seconds_per_byte if size else 0.0, max(upper, busbw), solved.achievable,
                 solved.cut, solved.formulation, nvls_why, nccl_busbw, nccl_bw, nccl_time, algorithm, ratio,
                 packings, solved.rates, e)


# ------------------------------------------------------------------------ many GPU sets
def subset_bounds(G: nx.DiGraph | PreparedFabric, collective: str, k: int | None = None, *, relay: str = "switches",
                  edge_kinds: Iterable[str] | None = None) -> list:
    """The bound of every k-GPU set (every set of 2 or more GPUs when ``k`` is None).

    One computation per symmetry class of sets (the whole graph's key,
    :meth:`models.engine.symmetry.FabricSymmetry.graph`), as :func:`models.subsets` does. broadcast / reduce use
    each set's lowest GPU as the root.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : str
    k : int, optional
        GPUs per set, 2 to the number of GPUs.
    relay : {"none", "switches", "all"}
    edge_kinds : iterable of str, optional

    Returns
    -------
    list of SubsetBound
        In the order of ``itertools.combinations`` over GPU ids, by size.

    Raises
    ------
    BoundError
        For ``k`` out of range.

    Examples
    --------
    >>> import topo
    >>> results = subset_bounds(topo.dgx1v(), "all_gather", 2, edge_kinds=["nvlink"])
    >>> len(results), round(max(r.bound_busbw for r in results) / 1e9, 1)
    (28, 50.0)
    """
    name = _check_collective(collective)
    prepared = prepare(G)
    G = prepared.G
    fabric = _BoundProblem(G, relay, edge_kinds)
    n = len(fabric.gpu_nodes)
    if k is None:
        sizes = range(2, n + 1)
    elif not is_int(k) or not 2 <= k <= n:
        raise BoundError(f"k must be a number of GPUs from 2 to {n} on {fabric.name}, received {k!r}")
    else:
        sizes = (int(k),)
    symmetry = prepared.symmetry.graph(fabric.edge_kinds)
    done: dict = {}
    results = []
    for size in sizes:
        for combo in itertools.combinations(range(n), size):
            nodes = [fabric.gpu_nodes[i] for i in combo]
            root = nodes[0] if COLLECTIVES[name].bound == "rooted" else None
            key = symmetry.key(nodes, root)
            if key not in done:
                solved = fabric.solve(name, nodes, root)
                done[key] = (combo, _busbw(name, size, solved.seconds_per_byte)[0])
            rep, value = done[key]
            results.append(SubsetBound(combo, value, rep))
    return results


def pairwise_bounds(G: nx.DiGraph | PreparedFabric, collective: str, *, relay: str = "switches",
                    edge_kinds: Iterable[str] | None = None) -> np.ndarray:
    """The bound of every 2-GPU set, as a matrix (NaN diagonal). [B/s]

    broadcast / reduce take the lower id as the root.
    """
    fabric = prepare(G)
    n = len(fabric.ids)
    matrix = np.full((n, n), np.nan)
    for result in subset_bounds(fabric, collective, 2, relay=relay, edge_kinds=edge_kinds):
        i, j = result.gpus
        matrix[i, j] = matrix[j, i] = result.bound_busbw
    return matrix
