"""Words of why NCCL disables an algorithm, a protocol or NVLS, and of whether NVLS runs.

The engine answers with codes and numbers (:mod:`models.engine.nccl.reasons`): a
:class:`~models.engine.nccl.reasons.Why` from :func:`models.engine.nccl.tuning.applicability`,
:func:`models.engine.nccl.nvls.nvls_support` and the communicator, an
:class:`~models.engine.nccl.reasons.NvlsChoice` from :func:`models.engine.nccl.tuning.nvls_choice`;
this module writes them as the sentences ``--explain`` prints. A tuning error names its reasons by
their ``repr``; :func:`error_text` puts these words in their place.

Examples
--------
>>> from models.engine.nccl.tuning import ChannelGraph, Communicator, tune
>>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
>>> reason_text(tune("broadcast", "tree", "Simple", Communicator(8, g, g, 90)).why)
'NCCL runs broadcast with Ring only (src/graph/tuning.cc)'
"""

from __future__ import annotations

from types import MappingProxyType

from topo.units import to_GBps, to_us

from ..engine.nccl.algorithms.catalog import algorithm_named
from ..engine.nccl.reasons import Cause, NvlsChoice, Why

__all__ = ["reason_text", "nvls_choice_text", "nvls_bound_text", "error_text"]



def _name(algorithm: str) -> str:
    """NCCL's spelling of an algorithm (``"NVLSTree"``), from its object."""
    found = algorithm_named(algorithm)
    return found.nccl_name if found is not None else algorithm


def _ccs(w: Why) -> str:
    return f"{w.compute_capability}-{w.compute_capability_max}"


#: One sentence per cause, from the values the rule compared.
_WORDS = MappingProxyType({
    Cause.NO_TREES: lambda w: f"NCCL {w.release} has no trees (they arrive in v2.4.2)",
    Cause.TREES_ACROSS_NODES: lambda w: f"NCCL {w.release} runs trees only across 2 or more nodes",
    Cause.RING_ONLY: lambda w: f"NCCL runs {w.collective} with Ring only (src/graph/tuning.cc)",
    Cause.NO_LL128: lambda w: f"NCCL {w.release} has no LL128 (it arrives in v2.5.6)",
    Cause.LL128_COMPUTE_CAPABILITY:
        lambda w: f"LL128 needs compute capability >= {w.limit}, got {w.compute_capability}",
    Cause.LL128_LISTED_COMPUTE_CAPABILITIES:
        lambda w: (f"LL128 in NCCL {w.release} needs every GPU at one of compute capabilities "
                   f"{list(w.allowed)}, got {_ccs(w)}"),
    Cause.LL128_MIXED_COMPUTE_CAPABILITIES:
        lambda w: f"LL128 needs one compute capability across GPUs, got {_ccs(w)}",
    Cause.LL128_TYPE_INTRA:
        lambda w: f"LL128 needs typeIntra <= {w.path_limit}, the {w.algorithm} graph has {w.path_type}",
    Cause.LL128_TYPE_INTER:
        lambda w: f"LL128 needs typeInter <= {w.path_limit}, the {w.algorithm} graph has {w.path_type}",
    Cause.LL128_CUDA_11_8: lambda w: "LL128 is off for sm90 Ring AllReduce on 2 ranks with CUDA 11.8",
    Cause.NO_PAT: lambda w: f"NCCL {w.release} has no PAT (it arrives in v2.23)",
    Cause.PAT_COLLECTIVE: lambda w: f"PAT runs all_gather and reduce_scatter only, not {w.collective}",
    Cause.PAT_PROTOCOL: lambda w: "PAT runs the Simple protocol only",
    Cause.PAT_RANKS_PER_NODE:
        lambda w: (f"NCCL enables PAT with one rank per node only (nNodes == nRanks), this "
                   f"communicator has {w.count} ranks per node"),
    Cause.NOT_SERVED: lambda w: f"{w.algorithm} does not run {w.collective}",
    Cause.PAT_COMPUTE_CAPABILITY: lambda w: f"PAT needs compute capability >= {w.limit}",
    Cause.NO_NVLS_ALGORITHM:
        lambda w: (f"NCCL {w.release} has no {_name(w.algorithm)} (NVLS arrives in v2.17.1, NVLSTree "
                   f"in v2.18)"),
    Cause.NO_NVLS_TREE: lambda w: f"NCCL {w.release} has no NVLSTree (it arrives in v2.18)",
    Cause.NO_NVLS_SUPPORT: lambda w: f"no NVLS support: {reason_text(w.support)}",
    Cause.NVLS_PROTOCOL: lambda w: f"{_name(w.algorithm)} runs the Simple protocol only",
    Cause.NVLS_TREE_COLLECTIVE: lambda w: f"NVLSTree runs all_reduce only, not {w.collective}",
    Cause.NVLS_COLLECTIVE: lambda w: f"NCCL {w.release} runs NVLS for {', '.join(w.allowed)} only",
    Cause.NVLS_ACROSS_NODES:
        lambda w: ("NVLS across nodes needs CollNet (a SHARP-enabled network), which this fabric has "
                   "not: NVLSTree runs instead"),
    Cause.NVLS_TREE_SINGLE_NODE: lambda w: "NVLSTree is disabled on a single node (NVLS runs there)",
    Cause.NVLS_ARITY:
        lambda w: (f"NVLS {w.collective} needs at most NCCL_MAX_NVLS_ARITY = {w.limit} ranks per node, "
                   f"this communicator has {w.count}"),
    Cause.NVLS_CHANNELS:
        lambda w: (f"NCCL {w.release} needs {w.limit} or more NVLS channels, the search found "
                   f"{w.count}"),
    Cause.ZERO_BANDWIDTH: lambda w: "bus bandwidth is 0",
    Cause.NO_NVLS: lambda w: f"NCCL {w.release} has no NVLS (it arrives in v2.17.1)",
    Cause.NVLS_COMPUTE_CAPABILITY:
        lambda w: (f"NVLS needs every GPU at compute capability {w.limit} or later (Hopper), the GPUs "
                   f"have {w.compute_capability}"),
    Cause.NVLS_NO_NVSWITCH:
        lambda w: "the GPUs reach no NVSwitch: NCCL's NVLS search needs an NVSwitch node",
    Cause.NVLS_NO_SHARP:
        lambda w: (f"the NVSwitches ({', '.join(w.names)}) do not reduce in the switch: NCCL needs "
                   f"NVLink SHARP (NVSwitch gen3 or later) for NVLS"),
    Cause.NVLS_GPUS:
        lambda w: (f"NCCL {w.release} disables NVLS with {w.count} GPU(s) per node (it needs {w.limit} "
                   f"or more)"),
    Cause.NVLS_NODES: lambda w: f"NCCL {w.release} disables NVLS across nodes (no NVLSTree before v2.18)",
    Cause.NVLS_MNNVL: lambda w: f"NCCL {w.release} does not run NVLS on a multi-node NVLink clique",
    Cause.NVLS_MNNVL_CLIQUE:
        lambda w: (f"NCCL {w.release} runs NVLS on a multi-node NVLink clique of more than {w.limit} "
                   f"GPUs, this one has {w.count}"),
    Cause.NVLS_NO_NIC: lambda w: f"host {', '.join(w.names)} has no NIC on a network for NVLSTree",
    Cause.NVLS_NO_CHANNEL: lambda w: "the NVLS search found no channel (NCCL clears nvlsSupport)",
    Cause.NO_NVLS_GRAPH:
        lambda w: "no NVLS graph was given (NCCL's NVLS search needs NVLink SHARP switches)",
    Cause.NVLS_SUPPORTED: lambda w: "NVLS is supported",
    Cause.NVLS_NOT_ALL_REDUCE: lambda w: f"in-switch reduction is weighed for all_reduce only, not {w.collective}",
    Cause.NVLS_SWITCH_REDUCES: lambda w: f"the NVSwitches ({', '.join(w.names)}) reduce in the switch",
})

#: A bound's in-switch reduction (:attr:`models.studies.bounds.Bound.nvls_why`), as ``dgxtopo bound``
#: words it; any other cause is :func:`reason_text`'s sentence after "not applicable: ".
_BOUND_WORDS = MappingProxyType({
    Cause.NVLS_NOT_ALL_REDUCE: lambda w: "not applicable: not an all_reduce",
    Cause.NVLS_NO_NVSWITCH: lambda w: "not applicable: no NVSwitch in the fabric",
    Cause.NVLS_NO_SHARP:
        lambda w: (f"not applicable: {', '.join(w.names)} cannot reduce in the switch (NVLS needs "
                   f"NVSwitch gen 3 or later)"),
    Cause.NVLS_COMPUTE_CAPABILITY:
        lambda w: (f"not applicable: NVLS needs Hopper GPUs or later, the GPUs have compute capability "
                   f"{w.compute_capability}"),
    Cause.NVLS_SWITCH_REDUCES: lambda w: f"applicable: {', '.join(w.names)} reduce in the switch",
})


def reason_text(why: Why | None) -> str:
    """One sentence of why NCCL says no (``""`` for None: nothing disabled it).

    Parameters
    ----------
    why : Why or None
        A :attr:`Tuning.why <models.engine.nccl.tuning.Tuning>`, the second value of
        ``applicability`` or ``nvls_support``, a ``nvls_why`` of a communicator or of channel graphs.

    Examples
    --------
    >>> from models.engine.nccl.reasons import Cause, Why
    >>> reason_text(Why(Cause.NO_NVLS_SUPPORT, support=Why(Cause.NO_NVLS, release="2.16.5")))
    'no NVLS support: NCCL 2.16.5 has no NVLS (it arrives in v2.17.1)'
    """
    return "" if why is None else _WORDS[why.cause](why)


def nvls_bound_text(why: Why) -> str:
    """Whether a bound's fabric could reduce in the switch (NVLS), and why: the words of
    :attr:`models.studies.bounds.Bound.nvls_why` (and of :func:`models.studies.bounds.nvls_applicable`'s
    reason) that ``dgxtopo bound`` prints after "in-switch reduction:" and ``--json`` as ``"nvls"``.

    Examples
    --------
    >>> import topo
    >>> from models.studies.bounds import nvls_applicable
    >>> nvls_bound_text(nvls_applicable(topo.dgx1v())[1])
    'not applicable: no NVSwitch in the fabric'
    >>> nvls_bound_text(nvls_applicable(topo.build("dgxh100"))[1])
    'applicable: NVSwitch (third generation) reduce in the switch'
    """
    words = _BOUND_WORDS.get(why.cause)
    return words(why) if words is not None else f"not applicable: {reason_text(why)}"


def nvls_choice_text(choice: NvlsChoice | None) -> str:
    """One sentence of whether NCCL runs NVLS (NVLSTree) and why (``""`` for None: outside NCCL's
    tuning model). ``--explain`` prints it after ``NVLS:``.

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, nvls_choice
    >>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    >>> nvls = ChannelGraph(8, 40e9, "NVL", bw_inter=60e9, pattern="nvls", same_channels=False)
    >>> nvls_choice_text(nvls_choice("all_reduce", 2**30, Communicator(8, g, g, 90, nvls=nvls)))
    'NVLS chosen for all_reduce of 1073741824 B: 8 heads x 40 GB/s (bwInter 60), busBw 320.0 GB/s, latency 25.0 us, time 4051.5 us'
    """
    if choice is None:
        return ""
    name, collective = _name(choice.algorithm), choice.collective
    if choice.why is not None:
        return f"{name} not chosen for {collective}: {reason_text(choice.why)}"
    if choice.error:
        return f"{name} enabled for {collective}, but the other algorithms cannot be timed: {choice.error}"
    detail = (f"{choice.nchannels} heads x {to_GBps(choice.bw_intra):g} GB/s (bwInter "
              f"{to_GBps(choice.bw_inter):g}), busBw {to_GBps(choice.busbw):.1f} GB/s, "
              f"latency {to_us(choice.latency):.1f} us, time {to_us(choice.time):.1f} us")
    if choice.chosen:
        return f"{name} chosen for {collective} of {choice.nbytes} B: {detail}"
    return (f"{name} not chosen for {collective} of {choice.nbytes} B: {choice.winner_algorithm}/"
            f"{choice.winner_protocol} takes {to_us(choice.winner_time):.1f} us, {name} {detail}")


def error_text(error: BaseException) -> str:
    """An error's message with the reasons it names (a tuning error's ``whys``, written as their
    ``repr``) in words; any other error's message as it is.

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, NoAlgorithmError, select_algorithm
    >>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    >>> try:
    ...     select_algorithm("broadcast", 8, Communicator(8, g, g, 90), algorithm="tree", protocol="LL")
    ... except NoAlgorithmError as error:
    ...     print(error_text(error))
    no enabled algorithm/protocol for broadcast matching algorithm='tree', protocol='LL': tree/LL: NCCL runs broadcast with Ring only (src/graph/tuning.cc)
    """
    text = str(error)
    for why in getattr(error, "whys", ()):
        text = text.replace(repr(why), reason_text(why))
    return text
