"""NVLink SHARP (NVLS): whether NCCL enables it on a fabric, and NCCL's NVLS channel graph.

NVLS reduces inside the NVSwitch (NVLink SHARP). NCCL runs two algorithms on it: NVLS (one
node) and NVLSTree (NVLS inside each node, a tree across nodes). Both read one search graph,
the NVLS graph (search id 3), whose ``nChannels`` is the number of *heads* the search found,
not the execution channel count ``comm->nvlsChannels`` (NVIDIA/nccl v2.27.7-1 src/init.cc;
a maintainer in NVIDIA/nccl issue 1041: search and execution channels are "completely
decorrelated" for NVLS).

Enabling (:func:`nvls_support`), in NCCL's order (src/transport/nvls.cc ``ncclNvlsInit``,
src/init.cc, src/graph/search.cc, at the profile's tag):

- the release has NVLS (v2.17.1+; :attr:`models.engine.nccl.profiles.NcclProfile.nvls`);
- every GPU is sm90 or later (``ccMin >= 90``);
- the GPUs reach NVSwitches, and every one of them reduces in the switch. The graph says so
  through the switch node's ``model``: a :data:`topo.specs.NVSWITCHES` entry with ``sharp``
  (NVSwitch gen3 and gen4). A DGX A100's gen2 switches have none;
- enough GPUs in NCCL's node (v2.17: 2; v2.18+: 3) and, with a multi-node NVLink clique,
  the release's MNNVL rule;
- the NVLS search finds at least one channel.

Then per algorithm (src/graph/tuning.cc): NVLS runs on one NCCL node only (across nodes it needs
CollNet, i.e. a SHARP-enabled network, which these fabrics lack); NVLSTree runs across nodes
only.

The search (:func:`nvls_search`, NVIDIA/nccl v2.27.7-1 src/graph/search.cc
``ncclTopoSearchTryNvls``): NCCL's system has one NVSwitch node, so each GPU has one link to
it (the sum of its NVLinks to every switch chip). Without NET, channel *c*'s head is GPU *c*
and there are ``min(NCCL_MAX_NVLS_ARITY, nGPUs)`` channels (min = max); every channel
reserves ``bwIntra`` on every GPU's link to the switch and back, twice on its head's, so a
head's link carries ``(nChannels + 1) x bwIntra``. The start speed uses ``totalBw x
n / (n - 1)``; lower speeds are tried until the heads fit. Pass 2 raises ``bwInter`` alone while
it is below ``2 x bwIntra``; without NET it is charged on no link. With NET (NVLSTree across
nodes) the heads are the GPUs closest to each NIC (one per NIC, duplicates skipped) and
``bwInter`` is charged on the head's route to its NIC [U: this library's reading].

Examples
--------
>>> import topo
>>> from models.engine.nccl.system import NcclSystem
>>> fabric = NcclSystem(topo.build("dgxh100"))
>>> gpus = [f"gpu{i}" for i in range(8)]
>>> g = nvls_search(fabric, gpus)
>>> g.nchannels, g.bw_intra / 1e9, g.bw_inter / 1e9
(8, 40.0, 60.0)
>>> nvls_support(NcclSystem(topo.build("dgxa100")), gpus)
(False, Why(NVLS_COMPUTE_CAPABILITY, compute_capability=80, limit=90))
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from topo.errors import DgxTopoError
from topo.specs import NVSWITCHES

from ..results import tidy_records
from .reasons import Cause, Why
from .releases import NvlsAlgorithms, NvlsMnnvl
from .search import SearchStep
from .tuning import ChannelGraph

__all__ = ["NvlsGraph", "NvlsError", "nvls_search", "nvls_support", "sharp_switch",
           "nvlink_cliques", "NVLS_MIN_COMPUTE_CAPABILITY"]

# Capacity comparisons tolerate this much rounding (NCCL keeps 0.001 GB/s). [B/s]
_SLACK = 1e3
# Lowering the speed stops once it would fall to 0.49 of the best solution (search.cc).
_SPEED_FLOOR = 0.49
#: NVLS needs every GPU at sm90 or later (NVIDIA/nccl v2.27.7-1 src/transport/nvls.cc
#: ncclNvlsInit: ccMin >= 90).
NVLS_MIN_COMPUTE_CAPABILITY = 90
# v2.21-v2.24 run NVLS on a multi-node NVLink clique of more than 2 GPUs (NvlsMnnvl.CLIQUE).
_MNNVL_MIN_CLIQUE = 2
_SHARP_MODELS = MappingProxyType({spec.model: spec.sharp for spec in NVSWITCHES.values()})


class NvlsError(DgxTopoError):
    """Bad input to the NVLS search."""


@dataclass(frozen=True, slots=True)
class NvlsGraph:
    """NCCL's NVLS search graph (search id 3) for the GPUs of one NCCL node.

    Attributes
    ----------
    heads : tuple
        The head GPU of each channel, in channel order.
    bw_intra : float
        ``graph.bwIntra``: what each channel reserves on every GPU's link to the switch. [B/s]
    bw_inter : float
        ``graph.bwInter`` after pass 2. [B/s]
    gpu_bandwidth : float
        The narrowest GPU-to-switch link of NCCL's system (all NVLinks of a GPU to the switch
        chips, in its narrower direction). [B/s]
    nets : tuple
        Per channel, the NIC of its head (empty without NET).
    trace : tuple of SearchStep
        The speeds tried and the heads each held (``nvls_attempt``; ``limit``: the channels
        required, when it held fewer), ``nvls_none`` when none held enough, then the bwInter
        pass 2 raised to (``nvls_bw_inter``); :func:`models.present.explain.search_step_text`
        words them.
    """

    heads: tuple
    bw_intra: float
    bw_inter: float
    gpu_bandwidth: float
    nets: tuple
    trace: tuple

    @property
    def nchannels(self) -> int:
        """NCCL's ``graph.nChannels`` of the NVLS graph: the heads."""
        return len(self.heads)

    def to_records(self) -> list:
        """One row per channel: its ``head`` GPU and the ``nic`` it reaches (``""`` without NET),
        and what every channel shares: ``bw_intra_Bps``, ``bw_inter_Bps`` and the narrowest
        GPU-to-switch link, ``gpu_bandwidth_Bps`` (no row when the search found no channel)."""
        return tidy_records({
            "channel": list(range(self.nchannels)), "head": [str(h) for h in self.heads],
            "nic": [str(n) for n in self.nets] if self.nets else "", "bw_intra_Bps": self.bw_intra,
            "bw_inter_Bps": self.bw_inter, "gpu_bandwidth_Bps": self.gpu_bandwidth})

    def graph(self) -> ChannelGraph:
        """The tuning model's view (typeIntra NVL, pattern ``nvls``)."""
        return ChannelGraph(self.nchannels, self.bw_intra, "NVL", bw_inter=self.bw_inter,
                            type_inter="PXB" if self.nets else "PIX", pattern="nvls",
                            same_channels=False)


def sharp_switch(G, node) -> bool:
    """Whether switch ``node`` reduces in the switch (NVLink SHARP): its ``model`` is a
    :data:`topo.specs.NVSWITCHES` entry with ``sharp`` set. An unknown model has none."""
    return bool(_SHARP_MODELS.get(G.nodes[node].get("model"), False))


def nvlink_cliques(G, nodes) -> list:
    """The GPUs of ``nodes`` grouped by NVLink domain (connected through NVLink and NVSwitches).

    A domain that spans several hosts is a multi-node NVLink (MNNVL) clique, e.g. the 18
    compute trays of a GB200 NVL72 joined by the rack's NVSwitch trays.

    Returns
    -------
    list of list
        Groups in order of their first GPU; each group keeps the order of ``nodes``.
    """
    label: dict = {}
    for start in nodes:
        if start in label:
            continue
        label[start] = start
        todo = [start]
        while todo:
            u = todo.pop()
            for v, data in G.adj[u].items():
                if data["kind"] != "nvlink" or v in label:
                    continue
                if G.nodes[v]["kind"] in ("gpu", "nvswitch"):
                    label[v] = start
                    todo.append(v)
    groups: dict = {}
    for n in nodes:
        groups.setdefault(label[n], []).append(n)
    return list(groups.values())


def _switches(G, gpus) -> list:
    return sorted({v for g in gpus for v, d in G.adj[g].items()
                   if d["kind"] == "nvlink" and G.nodes[v]["kind"] == "nvswitch"}, key=str)


def nvls_support(fabric, nodes, *, nnodes: int = 1, clique: int | None = None) -> tuple:
    """Whether NCCL sets ``nvlsSupport`` for GPUs ``nodes`` of one NCCL node, and why not.

    Parameters
    ----------
    fabric : NcclSystem
    nodes : sequence of node ids
        The GPUs of one NCCL node (the host, or an MNNVL clique), index order.
    nnodes : int
        NCCL nodes of the communicator.
    clique : int, optional
        The size of the MNNVL clique the GPUs form (None: no MNNVL).

    Returns
    -------
    (bool, Why or None)
        Supported, and why not (None when supported; its words:
        :func:`models.present.reasons_text.reason_text`).
    """
    G, profile = fabric.G, fabric.profile
    rules, behaviour = profile.nvls, profile.behaviour
    release = profile.version
    if behaviour.nvls is NvlsAlgorithms.NONE:
        return False, Why(Cause.NO_NVLS, release=release)
    lowest = min(G.nodes[n]["compute_capability"] for n in nodes)
    if lowest < NVLS_MIN_COMPUTE_CAPABILITY:
        return False, Why(Cause.NVLS_COMPUTE_CAPABILITY, compute_capability=lowest,
                          limit=NVLS_MIN_COMPUTE_CAPABILITY)
    switches = _switches(G, nodes)
    if not switches:
        return False, Why(Cause.NVLS_NO_NVSWITCH)
    plain = sorted({str(G.nodes[s].get("model")) for s in switches if not sharp_switch(G, s)})
    if plain:
        return False, Why(Cause.NVLS_NO_SHARP, names=tuple(plain))
    if len(nodes) < rules.min_gpus:
        return False, Why(Cause.NVLS_GPUS, release=release, count=len(nodes), limit=rules.min_gpus)
    if nnodes > 1 and behaviour.nvls is not NvlsAlgorithms.NVLS_AND_TREE:
        return False, Why(Cause.NVLS_NODES, release=release)
    if clique is not None:
        if behaviour.nvls_mnnvl in (NvlsMnnvl.NONE, NvlsMnnvl.OFF):
            return False, Why(Cause.NVLS_MNNVL, release=release)
        if behaviour.nvls_mnnvl is NvlsMnnvl.CLIQUE and clique <= _MNNVL_MIN_CLIQUE:
            return False, Why(Cause.NVLS_MNNVL_CLIQUE, release=release, count=clique,
                              limit=_MNNVL_MIN_CLIQUE)
    return True, None


def _gpu_links(fabric, gpu) -> float:
    """One GPU's link to NCCL's single NVSwitch node, in its narrower direction. [B/s]"""
    G = fabric.G
    out = sum(fabric.capacity(gpu, v) for v, d in G.adj[gpu].items()
              if d["kind"] == "nvlink" and G.nodes[v]["kind"] == "nvswitch")
    back = sum(fabric.capacity(u, gpu) for u in G.pred[gpu]
               if G.adj[u][gpu]["kind"] == "nvlink" and G.nodes[u]["kind"] == "nvswitch")
    return min(out, back)


def _net_width(fabric, gpu, nic) -> float:
    """The narrowest edge of a GPU's route to a NIC and the NIC's network port, both ways. [B/s]"""
    route = fabric.net_route(gpu, nic)
    edges = list(route.edges) + [(v, u) for u, v in route.edges] + [route.port_out, route.port_in]
    return min(fabric.capacity(u, v) for u, v in edges)


def _heads_by_nic(fabric, nodes, nets) -> tuple:
    """One head per NIC: the GPU with the closest path to it (then the lower index)."""
    heads, head_nets = [], []
    for nic in nets:
        best = min(nodes, key=lambda g, rank={g: i for i, g in enumerate(nodes)}:
                   (fabric.net_route(g, nic).path_type, rank[g]))
        if best not in heads:
            heads.append(best)
            head_nets.append(nic)
    return heads, head_nets


def nvls_search(fabric, nodes, nets=()) -> NvlsGraph:
    """NCCL's NVLS search for the GPUs of one NCCL node (module docstring).

    Parameters
    ----------
    fabric : NcclSystem
    nodes : sequence of node ids
        The node's GPUs in index order (two or more), each linked to NVSwitches.
    nets : sequence of node ids
        The node's NICs when the communicator spans several NCCL nodes.

    Returns
    -------
    NvlsGraph
        With no heads when nothing fits (NCCL then clears ``nvlsSupport``).

    Raises
    ------
    NvlsError
        For fewer than two GPUs, or a GPU without an NVLink to a switch.
    """
    G, profile = fabric.G, fabric.profile
    nodes = list(nodes)
    rules = profile.require("nvls")
    if len(nodes) < 2:
        raise NvlsError(f"the NVLS search needs two or more GPUs, received {len(nodes)}")
    caps = [_gpu_links(fabric, g) for g in nodes]
    if min(caps) <= 0:
        bare = [g for g, c in zip(nodes, caps) if c <= 0]
        raise NvlsError(f"GPUs {bare} have no NVLink to an NVSwitch: expected every GPU on the switches")
    n = len(nodes)
    cc = min(G.nodes[g]["compute_capability"] for g in nodes)
    if nets:
        heads, head_nets = _heads_by_nic(fabric, nodes, list(nets))
        widths = [_net_width(fabric, h, nic) for h, nic in zip(heads, head_nets)]
        max_bw = max(widths)
    else:
        heads, head_nets, widths = nodes[:min(rules.max_arity, n)], [], []
        max_bw = min(sorted(caps)[-1], sorted(caps)[-2]) if n > 1 else caps[0]
    max_channels = min(rules.max_arity, n, len(heads))
    min_channels = max_channels if not nets else 1
    speeds = profile.speed_array(cc, inter=bool(nets))
    total = max(caps) * n / (n - 1)
    position = {g: i for i, g in enumerate(nodes)}

    def fit(speed) -> int:
        """Most channels (heads in order) whose charges fit at ``speed``."""
        count = 0
        for c in range(1, max_channels + 1):
            head_set = {position[h] for h in heads[:c]}
            if any((c + (i in head_set)) * speed > caps[i] + _SLACK for i in range(n)):
                break
            if nets and widths[c - 1] + _SLACK < speed:
                break
            count = c
        return count

    index = next((i for i, s in enumerate(speeds)
                  if s <= max_bw + _SLACK and s * min_channels <= total + _SLACK), len(speeds) - 1)
    trace, best = [], None
    while True:
        speed = speeds[index]
        found = fit(speed)
        trace.append(SearchStep("nvls_attempt", speed=speed, count=found,
                                limit=0 if found >= min_channels else min_channels))
        if found >= min_channels and (best is None or found > best[0]
                                      or (found == best[0] and found * speed > best[0] * best[1])):
            best = (found, speed)
        if best is not None and (best[0] == max_channels or best[0] * best[1] >= total - _SLACK):
            break
        if index + 1 >= len(speeds) or (best is not None and speeds[index + 1] / best[1] <= _SPEED_FLOOR):
            break
        index += 1
    if best is None:
        trace.append(SearchStep("nvls_none"))
        return NvlsGraph((), 0.0, 0.0, min(caps), (), tuple(trace))
    count, bw_intra = best
    bw_inter = bw_intra
    # Pass 2: raise bwInter alone while it is below 2 x bwIntra (charged on the heads' NIC
    # routes with NET, on no link without).
    step = speeds.index(bw_inter) if bw_inter in speeds else len(speeds)
    while step > 0 and bw_inter < 2 * bw_intra:
        higher = speeds[step - 1]
        if nets and any(w + _SLACK < higher for w in widths[:count]):
            break
        bw_inter, step = higher, step - 1
    trace.append(SearchStep("nvls_bw_inter", speed=bw_inter))
    return NvlsGraph(tuple(heads[:count]), float(bw_intra), float(bw_inter), min(caps),
                     tuple(head_nets[:count]), tuple(trace))
