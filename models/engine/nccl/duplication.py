"""NCCL's channel duplication: after search pass 1, fast channels are split in two.

``ncclTopoDupChannels`` (NVIDIA/nccl v2.27.7-1 src/graph/search.cc, v2.18+) runs between the
search's two passes (:mod:`models.engine.nccl.search` calls :func:`dup_channels`): a graph whose
channels are fast enough gets twice as many channels (at most ``maxChannels``) at half the
per-channel bandwidth. The rule's thresholds are per release
(:class:`models.engine.nccl.profiles.DupRule`); which condition decided is a :class:`DupWhy` on
the result, worded by :func:`models.present.search_text.duplication_note`. The search's bad-input
error is defined here, below the search, which imports it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from topo.errors import DgxTopoError
from topo.units import is_int, positive_bandwidth

from ..results import tidy_records
from .communicator import PATTERNS
from .profiles import DupRule, NcclProfile, nccl_profile

__all__ = ["ChannelSearchError", "ChannelDuplication", "DupWhy", "dup_channels"]


class ChannelSearchError(DgxTopoError):
    """Bad arguments to the channel search."""


@dataclass(frozen=True, slots=True)
class ChannelDuplication:
    """Result of ``ncclTopoDupChannels``.

    Attributes
    ----------
    nchannels : int
        Channels after the rule.
    bw_intra, bw_inter : float
        Per-channel bandwidths after the rule. [B/s]
    duplicated : bool
        Whether channels were duplicated.
    why : DupWhy
        Which condition decided; :func:`models.present.search_text.duplication_note` words it
        with the numbers below.
    found : int
        Channels found by pass 1 (before the rule).
    max_channels : int
        The graph's ``maxChannels``.
    rule : DupRule
        The profile's thresholds the rule compared.

    Examples
    --------
    >>> d = dup_channels(6, 60e9, compute_capability=90)
    >>> d.why, d.found, d.nchannels, d.max_channels
    (<DupWhy.DUPLICATED: 'duplicated'>, 6, 12, 32)
    """

    nchannels: int
    bw_intra: float
    bw_inter: float
    duplicated: bool
    why: DupWhy
    found: int
    max_channels: int
    rule: DupRule

    def to_records(self) -> list:
        """One tidy row: the channels and per-channel bandwidths after the rule, what decided
        (``why``, :class:`DupWhy`'s value), pass 1's channels, ``maxChannels`` and the thresholds."""
        return tidy_records({
            "nchannels": self.nchannels, "bw_intra_Bps": self.bw_intra, "bw_inter_Bps": self.bw_inter,
            "duplicated": self.duplicated, "why": self.why.value, "found": self.found,
            "max_channels": self.max_channels, "min_bw_Bps": self.rule.min_bw, "cc_above": self.rule.cc_above,
            "cc_bw_below_Bps": self.rule.cc_bw_below, "cc_nchannels_above": self.rule.cc_nchannels_above})


class DupWhy(enum.Enum):
    """Which condition of ``ncclTopoDupChannels`` decided (:attr:`ChannelDuplication.why`; the
    numbers each names are on the record)."""

    #: NVLS graphs are never duplicated.
    NVLS = "nvls"
    #: ``bwIntra`` below ``rule.min_bw``: kept.
    BELOW_MIN_BW = "below_min_bw"
    #: ccMin above ``rule.cc_above``, ``bwIntra`` below ``rule.cc_bw_below`` and more than
    #: ``rule.cc_nchannels_above`` channels: kept.
    COMPUTE_CAPABILITY = "compute_capability"
    #: Already at ``max_channels``: kept.
    AT_MAX_CHANNELS = "at_max_channels"
    #: Duplicated to ``min(2 x found, max_channels)`` channels.
    DUPLICATED = "duplicated"



def dup_channels(nchannels: int, bw_intra: float, bw_inter: float | None = None, *,
                 compute_capability: int, max_channels: int | None = None,
                 pattern: str = "ring", profile: str | NcclProfile | None = None) -> ChannelDuplication:
    """NCCL's channel duplication at the end of search pass 1 (``ncclTopoDupChannels``).

    No change for NVLS, for ``bwIntra`` < 25 GB/s, or for ccMin > 80 with ``bwIntra`` < 50
    GB/s and more than 4 channels. Otherwise ``dup = min(2 x nChannels, maxChannels)``, both
    bandwidths are divided by ``ceil(dup / nChannels)`` and ``nChannels = dup``
    (NVIDIA/nccl v2.27.7-1 src/graph/search.cc ncclTopoDupChannels, v2.18+). ``nChannels x bw`` is unchanged when ``dup`` is
    ``2 x nChannels``, and lower when ``maxChannels`` clips it.

    Parameters
    ----------
    nchannels : int
        Channels found by pass 1.
    bw_intra : float
        Per-channel ``bwIntra``. [B/s]
    bw_inter : float, optional
        Per-channel ``bwInter``; defaults to ``bw_intra``. [B/s]
    compute_capability : int
        Minimum compute capability of the GPUs (ccMin).
    max_channels : int, optional
        The graph's ``maxChannels``: ``MAXCHANNELS / 2`` for the ring graph (the default),
        the ring's ``nChannels`` for the tree graph (init.cc).
    pattern : str
        ``"ring"``, ``"balanced_tree"``, ``"tree"``, ``"split_tree"`` or ``"nvls"``.
    profile : str or NcclProfile, optional

    Returns
    -------
    ChannelDuplication

    Raises
    ------
    MissingConstantError
        When the profile lacks the rule (v2.12).

    Examples
    --------
    A DGX-H100 ring (6 x 60 GB/s) and tree (12 x 30 GB/s):

    >>> d = dup_channels(6, 60e9, compute_capability=90)
    >>> d.nchannels, d.bw_intra / 1e9
    (12, 30.0)
    >>> dup_channels(12, 30e9, compute_capability=90, max_channels=12).duplicated
    False
    """
    profile = nccl_profile(profile)
    if not is_int(nchannels) or nchannels < 1:
        raise ChannelSearchError(f"nchannels must be an integer >= 1, received {nchannels!r}")
    bw_intra = positive_bandwidth("bw_intra", bw_intra, ChannelSearchError)
    bw_inter = bw_intra if bw_inter is None else positive_bandwidth("bw_inter", bw_inter, ChannelSearchError)
    if not is_int(compute_capability) or compute_capability < 0:
        raise ChannelSearchError(f"compute_capability must be an integer such as 70 or 90, received "
                          f"{compute_capability!r}")
    if pattern not in PATTERNS:
        raise ChannelSearchError(f"unknown pattern {pattern!r}: expected one of {list(PATTERNS)}")
    rule = profile.require("dup_channels")
    if max_channels is None:
        max_channels = profile.require("max_channels") // 2
    if not is_int(max_channels) or max_channels < nchannels:
        raise ChannelSearchError(f"max_channels must be an integer >= nchannels ({nchannels}), received "
                          f"{max_channels!r}")

    def keep(why):
        return ChannelDuplication(nchannels, bw_intra, bw_inter, False, why, nchannels, max_channels, rule)

    if pattern == "nvls":
        return keep(DupWhy.NVLS)
    if bw_intra < rule.min_bw:
        return keep(DupWhy.BELOW_MIN_BW)
    if compute_capability > rule.cc_above and bw_intra < rule.cc_bw_below \
            and nchannels > rule.cc_nchannels_above:
        return keep(DupWhy.COMPUTE_CAPABILITY)
    dup = min(2 * nchannels, max_channels)
    divisor = -(-dup // nchannels)
    if dup == nchannels:
        return keep(DupWhy.AT_MAX_CHANNELS)
    return ChannelDuplication(dup, bw_intra / divisor, bw_inter / divisor, True, DupWhy.DUPLICATED, nchannels,
                              max_channels, rule)
