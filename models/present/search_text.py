"""Words of NCCL's channel search results (:mod:`models.engine.nccl.search`) that are not the
search's trace (:func:`models.present.explain.search_step_text` words that): channel duplication.

Examples
--------
>>> from models.engine.nccl.duplication import dup_channels
>>> duplication_note(dup_channels(6, 60e9, compute_capability=90))
'duplicated to min(2 x 6, 32) channels'
"""

from __future__ import annotations

from ..engine.nccl.duplication import ChannelDuplication, DupWhy

__all__ = ["duplication_note"]


def duplication_note(d: ChannelDuplication) -> str:
    """Which condition of ``ncclTopoDupChannels`` decided, in words, with the numbers it compared.

    Examples
    --------
    >>> from models.engine.nccl.duplication import dup_channels
    >>> duplication_note(dup_channels(4, 24e9, compute_capability=70))
    'bwIntra below 2.5e+10 B/s'
    >>> duplication_note(dup_channels(5, 40e9, compute_capability=90))
    'ccMin > 80, bwIntra below 5e+10 B/s and more than 4 channels'
    """
    rule = d.rule
    words = {
        DupWhy.NVLS: lambda: "NVLS graphs are never duplicated",
        DupWhy.BELOW_MIN_BW: lambda: f"bwIntra below {rule.min_bw:g} B/s",
        DupWhy.COMPUTE_CAPABILITY: lambda: (f"ccMin > {rule.cc_above}, bwIntra below {rule.cc_bw_below:g} B/s and "
                                            f"more than {rule.cc_nchannels_above} channels"),
        DupWhy.AT_MAX_CHANNELS: lambda: f"already at maxChannels ({d.max_channels})",
        DupWhy.DUPLICATED: lambda: f"duplicated to min(2 x {d.found}, {d.max_channels}) channels"}
    return words[d.why]()
