"""Why NCCL disables an (algorithm, protocol) or NVLS, and why NVLS runs or not: as codes and numbers.

The tuning model (:func:`models.engine.nccl.tuning.applicability`) and the NVLS enabling
(:func:`models.engine.nccl.nvls.nvls_support`, :func:`models.engine.nccl.channels.channel_graphs`)
answer *why not* with a :class:`Why`: a :class:`Cause` (one member per rule of NCCL's source that
can say no) and the values the rule compared (the release, the collective, compute capabilities,
the limit and the count it met, the path types). :func:`models.engine.nccl.tuning.nvls_choice`
answers with an :class:`NvlsChoice`. Their words are built in :mod:`models.present.reasons_text`
(``reason_text``, ``nvls_choice_text``), which ``--explain`` prints.

Examples
--------
>>> from models.engine.nccl.tuning import ChannelGraph, Communicator, applicability
>>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
>>> applicability("broadcast", "tree", "Simple", Communicator(8, g, g, 90))
(False, Why(RING_ONLY, collective='broadcast'))
>>> Why(Cause.RING_ONLY, collective="broadcast").to_records()
[{'level': 0, 'cause': 'ring_only', 'release': None, 'collective': 'broadcast', 'algorithm': None, 'compute_capability': None, 'compute_capability_max': None, 'limit': None, 'count': None, 'path_limit': None, 'path_type': None, 'allowed': '', 'names': ''}]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields

from ..results import tidy_records

__all__ = ["Cause", "Why", "NvlsChoice"]


class Cause(enum.Enum):
    """A rule of NCCL's source that disables an algorithm, a protocol or NVLS (src/graph/tuning.cc,
    src/enqueue.cc, src/transport/nvls.cc, src/init.cc at the profile's tag), and the values of
    :class:`Why` each one sets."""

    #: ``release``: before v2.4.2 there are no trees.
    NO_TREES = "no_trees"
    #: ``release``: v2.4 runs trees across 2 or more nodes only.
    TREES_ACROSS_NODES = "trees_across_nodes"
    #: ``collective``: Broadcast, Reduce, AllGather and ReduceScatter run Ring (and PAT, NVLS) only.
    RING_ONLY = "ring_only"
    #: ``release``: before v2.5.6 there is no LL128.
    NO_LL128 = "no_ll128"
    #: ``limit`` (the lowest compute capability LL128 runs on), ``compute_capability``.
    LL128_COMPUTE_CAPABILITY = "ll128_compute_capability"
    #: ``release``, ``allowed`` (the compute capabilities), ``compute_capability`` and ``_max``.
    LL128_LISTED_COMPUTE_CAPABILITIES = "ll128_listed_compute_capabilities"
    #: ``compute_capability`` and ``compute_capability_max`` differ.
    LL128_MIXED_COMPUTE_CAPABILITIES = "ll128_mixed_compute_capabilities"
    #: ``path_limit``, ``algorithm`` (whose graph) and its ``path_type`` (typeIntra).
    LL128_TYPE_INTRA = "ll128_type_intra"
    #: ``path_limit``, ``algorithm`` (whose graph) and its ``path_type`` (typeInter).
    LL128_TYPE_INTER = "ll128_type_inter"
    #: sm90 Ring AllReduce on 2 ranks built with CUDA 11.8.
    LL128_CUDA_11_8 = "ll128_cuda_11_8"
    #: ``release``: before v2.23 there is no PAT.
    NO_PAT = "no_pat"
    #: ``collective``: PAT runs AllGather and ReduceScatter only.
    PAT_COLLECTIVE = "pat_collective"
    #: PAT runs the Simple protocol only.
    PAT_PROTOCOL = "pat_protocol"
    #: ``count``: the ranks per node (PAT needs one).
    PAT_RANKS_PER_NODE = "pat_ranks_per_node"
    #: ``limit`` (the lowest compute capability PAT runs on), ``compute_capability``.
    PAT_COMPUTE_CAPABILITY = "pat_compute_capability"
    #: ``release``, ``algorithm``: the release has no NVLS algorithm at all (before v2.17.1).
    NO_NVLS_ALGORITHM = "no_nvls_algorithm"
    #: ``release``: the release has NVLS but no NVLSTree (v2.17).
    NO_NVLS_TREE = "no_nvls_tree"
    #: ``support``: the communicator has no NVLS graph, for the reason ``support`` gives.
    NO_NVLS_SUPPORT = "no_nvls_support"
    #: ``algorithm``: NVLS and NVLSTree run the Simple protocol only.
    NVLS_PROTOCOL = "nvls_protocol"
    #: ``collective``: NVLSTree runs AllReduce only.
    NVLS_TREE_COLLECTIVE = "nvls_tree_collective"
    #: ``release``, ``collective``, ``allowed`` (the collectives NVLS runs in that release).
    NVLS_COLLECTIVE = "nvls_collective"
    #: NVLS across nodes needs CollNet (NVLSTree runs instead).
    NVLS_ACROSS_NODES = "nvls_across_nodes"
    #: NVLSTree is off on one node (NVLS runs there).
    NVLS_TREE_SINGLE_NODE = "nvls_tree_single_node"
    #: ``collective``, ``limit`` (NCCL_MAX_NVLS_ARITY), ``count`` (ranks per node).
    NVLS_ARITY = "nvls_arity"
    #: ``release``, ``limit`` (the NVLS channels the tuning needs), ``count`` (the search's).
    NVLS_CHANNELS = "nvls_channels"
    #: The bus bandwidth of an enabled cell is 0.
    ZERO_BANDWIDTH = "zero_bandwidth"
    #: ``algorithm``, ``collective``: an algorithm runs only the collectives it lists (a user's own,
    #: :attr:`models.engine.nccl.algorithms.base.Algorithm.collectives`).
    NOT_SERVED = "not_served"
    # -- why a communicator has no NVLS graph (nvlsSupport; the ``support`` of NO_NVLS_SUPPORT)
    #: ``release``: before v2.17.1 there is no NVLS.
    NO_NVLS = "no_nvls"
    #: ``limit`` (90), ``compute_capability`` (the GPUs' lowest).
    NVLS_COMPUTE_CAPABILITY = "nvls_compute_capability"
    #: The GPUs reach no NVSwitch.
    NVLS_NO_NVSWITCH = "nvls_no_nvswitch"
    #: ``names``: the models of the NVSwitches that do not reduce in the switch (no NVLink SHARP;
    #: :func:`models.studies.bounds.nvls_applicable` names every model of the fabric's NVSwitches).
    NVLS_NO_SHARP = "nvls_no_sharp"
    #: ``release``, ``count`` (GPUs per NCCL node), ``limit`` (the GPUs NVLS needs).
    NVLS_GPUS = "nvls_gpus"
    #: ``release``: NVLS across nodes needs NVLSTree (v2.18+).
    NVLS_NODES = "nvls_nodes"
    #: ``release``: no NVLS on a multi-node NVLink clique.
    NVLS_MNNVL = "nvls_mnnvl"
    #: ``release``, ``limit`` (the clique NVLS needs more GPUs than), ``count`` (the clique's).
    NVLS_MNNVL_CLIQUE = "nvls_mnnvl_clique"
    #: ``names``: the host without a NIC on a network (NVLSTree needs one).
    NVLS_NO_NIC = "nvls_no_nic"
    #: The NVLS search found no channel (NCCL clears nvlsSupport).
    NVLS_NO_CHANNEL = "nvls_no_channel"
    #: A :class:`models.engine.nccl.tuning.Communicator` built without an NVLS graph.
    NO_NVLS_GRAPH = "no_nvls_graph"
    #: The communicator has its NVLS graph (:attr:`Communicator.nvls_why` when there is one).
    NVLS_SUPPORTED = "nvls_supported"
    # -- whether a bound's switches could reduce in the network (models.studies.bounds.nvls_applicable)
    #: ``collective``: in-switch reduction is weighed for all_reduce only.
    NVLS_NOT_ALL_REDUCE = "nvls_not_all_reduce"
    #: ``names``: the models of the fabric's NVSwitches, which reduce in the switch (NVLS applies).
    NVLS_SWITCH_REDUCES = "nvls_switch_reduces"


@dataclass(frozen=True, slots=True, repr=False)
class Why:
    """Why NCCL says no: a :class:`Cause` and the values its rule compared (None where the rule
    has none; :class:`Cause` lists which each sets).

    Attributes
    ----------
    cause : Cause
    release : str or None
        The NCCL release (the profile's version) whose rule it is.
    collective, algorithm : str or None
    compute_capability, compute_capability_max : int or None
        The GPUs' lowest and highest compute capability.
    limit : int or None
        What the rule needs: a compute capability, a count of ranks, GPUs or channels.
    count : int or None
        What this communicator has against ``limit``.
    path_limit, path_type : str or None
        The worst path type the rule allows and the one the graph has.
    allowed : tuple
        The values the rule accepts (compute capabilities, collectives).
    names : tuple of str
        What the rule names: switch models, a host.
    support : Why or None
        :attr:`Cause.NO_NVLS_SUPPORT`: why there is no NVLS graph.
    """

    cause: Cause
    release: str | None = None
    collective: str | None = None
    algorithm: str | None = None
    compute_capability: int | None = None
    compute_capability_max: int | None = None
    limit: int | None = None
    count: int | None = None
    path_limit: str | None = None
    path_type: str | None = None
    allowed: tuple = ()
    names: tuple = ()
    support: Why | None = None

    def __repr__(self) -> str:
        """The cause and the values set: ``Why(RING_ONLY, collective='broadcast')``."""
        given = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)[1:]
                 if getattr(self, f.name) not in (None, ())]
        return f"Why({', '.join([self.cause.name, *given])})"

    def to_records(self) -> list:
        """One row for this reason, then one for its ``support`` (``level`` 1), and so on:
        ``cause`` is the :class:`Cause`'s value, ``allowed`` and ``names`` comma-separated."""
        rows, why, level = [], self, 0
        while why is not None:
            rows += tidy_records({
                "level": level, "cause": why.cause.value, "release": why.release,
                "collective": why.collective, "algorithm": why.algorithm,
                "compute_capability": why.compute_capability,
                "compute_capability_max": why.compute_capability_max, "limit": why.limit,
                "count": why.count, "path_limit": why.path_limit, "path_type": why.path_type,
                "allowed": ",".join(map(str, why.allowed)), "names": ",".join(map(str, why.names))})
            why, level = why.support, level + 1
        return rows


@dataclass(frozen=True, slots=True)
class NvlsChoice:
    """Whether NCCL runs NVLS (one node) or NVLSTree (across nodes) for a collective of one size,
    and why (:func:`models.engine.nccl.tuning.nvls_choice`).

    Attributes
    ----------
    collective : str
    algorithm : str
        The ``name`` of NVLS on one node, of NVLSTree across nodes
        (:mod:`models.engine.nccl.algorithms`).
    nbytes : int
        The size explained (the largest asked). [bytes]
    chosen : bool
        NCCL's selection picks it at ``nbytes``.
    why : Why or None
        Why NCCL disables it; None when it is enabled.
    error : str
        When it is enabled but the other algorithms cannot be timed: the message of the
        :class:`models.engine.nccl.profiles.MissingConstantError` (``""`` otherwise); the fields
        below are then unset.
    nchannels : int
        The NVLS graph's heads (0 when disabled).
    bw_intra, bw_inter : float
        The NVLS graph's ``bwIntra`` and ``bwInter``. [B/s]
    busbw : float
        The NVLS cell's bus bandwidth. [B/s]
    latency, time : float
        The NVLS cell's latency and time at ``nbytes``. [s]
    winner_algorithm, winner_protocol : str
        What NCCL's selection runs at ``nbytes`` (``""`` when not timed).
    winner_time : float
        Its time. [s]
    """

    collective: str
    algorithm: str
    nbytes: int
    chosen: bool = False
    why: Why | None = None
    error: str = ""
    nchannels: int = 0
    bw_intra: float = 0.0
    bw_inter: float = 0.0
    busbw: float = 0.0
    latency: float = 0.0
    time: float = 0.0
    winner_algorithm: str = ""
    winner_protocol: str = ""
    winner_time: float = 0.0

    @property
    def enabled(self) -> bool:
        """NCCL enables the algorithm for this collective and communicator."""
        return self.why is None

    def to_records(self) -> list:
        """One row: the algorithm, whether it is enabled (``cause``: the :class:`Cause`'s value
        when not) and chosen, its graph, bus bandwidth, latency and time, and the winner's. What
        was not computed is None, not 0: the graph without one (``nchannels`` 0), the times when
        the algorithm is disabled or the others cannot be timed (``error``)."""
        graph, timed = self.nchannels > 0, self.why is None and not self.error

        def some(value, known):
            return value if known else None
        return tidy_records({
            "collective": self.collective, "algorithm": self.algorithm, "nbytes": self.nbytes,
            "enabled": self.enabled, "cause": None if self.why is None else self.why.cause.value,
            "error": self.error, "chosen": self.chosen, "nchannels": self.nchannels,
            "bw_intra_Bps": some(self.bw_intra, graph), "bw_inter_Bps": some(self.bw_inter, graph),
            "busbw_Bps": some(self.busbw, timed), "latency_s": some(self.latency, timed),
            "time_s": some(self.time, timed), "winner_algorithm": some(self.winner_algorithm, timed),
            "winner_protocol": some(self.winner_protocol, timed), "winner_time_s": some(self.winner_time, timed)})
