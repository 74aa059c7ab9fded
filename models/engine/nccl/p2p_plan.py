"""NCCL's point-to-point plan: the rounds of peers, the channels of each peer, chunk and protocol.

NCCL runs alltoall, sendrecv, gather and scatter as a group of ``ncclSend``/``ncclRecv`` calls
(nccl-tests src/alltoall.cu, src/gather.cu, src/scatter.cu, src/sendrecv.cu), which the enqueue
step lays out on its *p2p channels* in *rounds*. This module holds that layout, from NCCL's
source as read from memory (no p2p section is in the project's reference note): every constant
and rule below names the file and tag it is believed to come from, and each is marked [U].

Rounds (src/init.cc ``p2pSchedule``, v2.12-v2.27 [U])
    In round ``k`` every rank sends to one peer and receives from another. On one node round ``k``
    sends to ``rank + k`` and receives from ``rank - k``; across nodes the rounds are node-aware:
    ``k = nodeDelta x localRanks + localDelta`` sends to local rank ``local + localDelta`` of node
    ``node + nodeDelta`` and receives from local rank ``local - localDelta`` of node
    ``node - nodeDelta``, so the rounds of one node delta reach one node. (v2.19+ visits the node
    deltas in another order, triangular numbers modulo a power of two [U]; a round's peers, and
    so its cost, are the same set.) Round 0 is the rank's copy to itself.
Channels (src/graph/paths.cc ``ncclTopoComputeP2pChannels``, ``ncclTopoGetNchannels`` [U])
    ``p2pnChannels = pow2Up(min(comm nChannels, NCCL_MAX_P2P_NCHANNELS))``. Per peer: an NVLink
    peer ``2 x max(1, path bw / NVLink bw)``, another local peer 2, a peer on another node
    ``NCCL_NCHANNELS_PER_NET_PEER`` (2); ``p2pnChannelsPerPeer = pow2Up(the least of them)``.
    A transfer of ``b`` bytes (src/enqueue.cc ``addP2pToPlan``, v2.19+ [U]) takes
    ``min(nChannelsMin, ceil(b / minPart))`` channels, doubled while a part exceeds ``maxPart``
    up to ``p2pnChannelsPerPeer``, where ``nChannelsMin`` halves ``p2pnChannelsPerPeer`` while
    ``nChannelsMin x nRanks > 4 x p2pnChannels``; ``minPart = chunk / 8`` and ``maxPart = 32 x
    chunk`` on one node, ``chunk / 2`` and ``chunk`` across nodes.
Where a part runs (src/include/p2p.h or src/enqueue.cc ``ncclP2pChannelBaseForRound``,
``ncclP2pChannelForPart`` [U])
    Round ``k``'s base channel is ``k`` on one node; across nodes ``nodeDelta x
    ceil(localRanks / 8) + localDelta // 8``, so the rounds of one node delta share channels.
    Part ``p`` runs on ``(base + bitreverse(p)) mod p2pnChannels``. A channel runs its parts in
    batches of at most ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` (8), one after the other; the parts of
    a batch run at once.
Chunk and protocol (src/init.cc, src/enqueue.cc [U])
    ``p2pChunkSize`` is ``NCCL_P2P_NET_CHUNKSIZE`` (128 KiB) across nodes, else
    ``NCCL_P2P_NVL_CHUNKSIZE`` (512 KiB) when every path is NVLink, else
    ``NCCL_P2P_PCI_CHUNKSIZE`` (128 KiB). A transfer of at most ``NCCL_P2P_LL_THRESHOLD``
    (16 KiB) bytes runs LL, a larger one Simple.

Nothing here reads a graph: :mod:`models.predict.alltoall` times a plan on a fabric.

Examples
--------
>>> c = p2p_channels(8, 1, 8, comm_nchannels=32, peer_nchannels=36, chunk=P2P_NVL_CHUNKSIZE)
>>> c.nchannels, c.per_peer, c.min_per_peer
(32, 32, 16)
>>> [parts(c, b) for b in (4096, 128 * 1024, 8 * 2**20, 128 * 2**20)]
[1, 2, 16, 16]
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.errors import DgxTopoError
from topo.units import is_int

from ..results import tidy_records

__all__ = ["P2P_NVL_CHUNKSIZE", "P2P_NET_CHUNKSIZE", "P2P_PCI_CHUNKSIZE", "P2P_LL_THRESHOLD",
           "NCHANNELS_PER_NET_PEER", "MAX_P2P_PER_BATCH", "P2pPlanError", "P2pChannels", "p2p_channels",
           "peer_nchannels", "parts", "part_bytes", "protocol", "peer_rounds", "rank_rounds", "channel_base", "channel_for_part",
           "chunk_size", "pow2_up"]

#: ``NCCL_P2P_NVL_CHUNKSIZE`` default, 512 KiB: the p2p chunk of a one-node communicator whose
#: paths are all NVLink (NVIDIA/nccl v2.27.7-1 src/init.cc, ``NCCL_PARAM(P2pNvlChunkSize,
#: "P2P_NVL_CHUNKSIZE", 1 << 19)`` [U] from memory). [bytes]
P2P_NVL_CHUNKSIZE = 1 << 19
#: ``NCCL_P2P_NET_CHUNKSIZE`` default, 128 KiB: the chunk of a communicator across nodes
#: (src/init.cc, v2.11+ [U]). [bytes]
P2P_NET_CHUNKSIZE = 1 << 17
#: ``NCCL_P2P_PCI_CHUNKSIZE`` default, 128 KiB: the chunk of a one-node communicator with a path
#: that is not NVLink (src/init.cc [U]). [bytes]
P2P_PCI_CHUNKSIZE = 1 << 17
#: ``NCCL_P2P_LL_THRESHOLD`` default: a send or receive of at most this many bytes runs LL
#: (src/enqueue.cc, ``NCCL_PARAM(P2pLLThreshold, "P2P_LL_THRESHOLD", 16384)`` [U]). [bytes]
P2P_LL_THRESHOLD = 16384
#: ``NCCL_NCHANNELS_PER_NET_PEER`` default: channels per peer on another node (src/graph/paths.cc
#: ``ncclTopoGetNchannels`` [U]). v2.29's release notes give alltoall/send/recv "better default
#: channels per net peer" without a value (the reference's appendix has none either): every
#: release keeps 2, marked [U] in the 2.29+ behaviour rows (models.engine.nccl.releases).
NCHANNELS_PER_NET_PEER = 2
#: ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH``: p2p parts one batch of a channel runs at once
#: (src/include/device.h, v2.19+ [U]).
MAX_P2P_PER_BATCH = 8


class P2pPlanError(DgxTopoError):
    """A p2p plan asked of counts NCCL could not have (no ranks, a node without ranks...)."""


def pow2_up(x: int) -> int:
    """The least power of two >= ``x`` (NCCL's ``pow2Up``); 1 for ``x <= 1``.

    >>> [pow2_up(x) for x in (1, 2, 3, 24, 36)]
    [1, 2, 4, 32, 64]
    """
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


def _whole(name, value, least=1) -> int:
    if isinstance(value, bool) or not is_int(value) or value < least:
        raise P2pPlanError(f"{name} must be an integer >= {least}, received {value!r}")
    return int(value)


@dataclass(frozen=True, slots=True)
class P2pChannels:
    """The p2p channels of a communicator.

    Attributes
    ----------
    nchannels : int
        ``p2pnChannels``: the channels p2p parts run on (a power of two).
    per_peer : int
        ``p2pnChannelsPerPeer``: the most channels one transfer takes (a power of two).
    min_per_peer : int
        ``nChannelsMin``: the channels a transfer takes before it is split further.
    chunk : int
        ``p2pChunkSize``. [bytes]
    nnodes, local_ranks, nranks : int
        NCCL nodes, the most ranks on one node, ranks.
    """

    nchannels: int
    per_peer: int
    min_per_peer: int
    chunk: int
    nnodes: int
    local_ranks: int
    nranks: int

    @property
    def min_part(self) -> int:
        """The smallest part before a transfer takes another channel. [bytes]"""
        return self.chunk // 2 if self.nnodes > 1 else self.chunk // 8

    @property
    def max_part(self) -> int:
        """The largest part before a transfer doubles its channels. [bytes]"""
        return self.chunk if self.nnodes > 1 else 32 * self.chunk

    def to_records(self) -> list:
        """One tidy row of the plan's counts."""
        return tidy_records({"nchannels": self.nchannels, "per_peer": self.per_peer,
                             "min_per_peer": self.min_per_peer, "chunk_bytes": self.chunk,
                             "nnodes": self.nnodes, "local_ranks": self.local_ranks, "nranks": self.nranks})


def peer_nchannels(path_bandwidth: float, nvlink_bandwidth: float, nvlink: bool, same_node: bool) -> int:
    """``ncclTopoGetNchannels``: channels a peer may take (src/graph/paths.cc [U]).

    Parameters
    ----------
    path_bandwidth : float
        NCCL's path bandwidth to the peer. [B/s]
    nvlink_bandwidth : float
        NCCL's bandwidth of one NVLink of the GPU (``ncclTopoNVLinkBw``). [B/s]
    nvlink : bool
        The path is NVLink (``PATH_NVL``).
    same_node : bool
        The peer is on the same NCCL node.

    >>> peer_nchannels(370.8e9, 20.6e9, True, True), peer_nchannels(40e9, 20e9, False, True)
    (36, 2)
    >>> peer_nchannels(1e9, 20e9, True, False)
    2
    """
    if not same_node:
        return NCHANNELS_PER_NET_PEER
    if nvlink and nvlink_bandwidth > 0:
        return 2 * max(1, int(path_bandwidth / nvlink_bandwidth + 1e-9))
    return 2


def chunk_size(nnodes: int, all_nvlink: bool) -> int:
    """``p2pChunkSize`` of a communicator (src/init.cc [U]). [bytes]

    >>> chunk_size(1, True), chunk_size(2, True), chunk_size(1, False)
    (524288, 131072, 131072)
    """
    if nnodes > 1:
        return P2P_NET_CHUNKSIZE
    return P2P_NVL_CHUNKSIZE if all_nvlink else P2P_PCI_CHUNKSIZE


def p2p_channels(nranks: int, nnodes: int, local_ranks: int, *, comm_nchannels: int, peer_nchannels: int,
                 chunk: int, max_channels: int = 64) -> P2pChannels:
    """``ncclTopoComputeP2pChannels`` and ``nChannelsMin`` of the p2p scheduler.

    Parameters
    ----------
    nranks, nnodes, local_ranks : int
        Ranks, NCCL nodes, the most ranks on one node.
    comm_nchannels : int
        The communicator's ``nChannels`` (the collective channels, doubled by
        ``ncclTopoPostset``).
    peer_nchannels : int
        The least :func:`peer_nchannels` over the pairs.
    chunk : int
        ``p2pChunkSize`` (:func:`chunk_size`). [bytes]
    max_channels : int
        ``NCCL_MAX_P2P_NCHANNELS`` (``MAXCHANNELS`` of the release).

    Raises
    ------
    P2pPlanError
        For counts that are not whole numbers >= 1, or more local ranks than ranks.
    """
    nranks = _whole("nranks", nranks)
    nnodes = _whole("nnodes", nnodes)
    local_ranks = _whole("local_ranks", local_ranks)
    comm_nchannels = _whole("comm_nchannels", comm_nchannels)
    peer = _whole("peer_nchannels", peer_nchannels)
    chunk = _whole("chunk", chunk)
    if local_ranks > nranks or nnodes > nranks:
        raise P2pPlanError(f"a communicator of {nranks} ranks: expected at most {nranks} local ranks and "
                           f"nodes, received {local_ranks} local ranks on {nnodes} nodes")
    nchannels = min(comm_nchannels, _whole("max_channels", max_channels))
    per_peer = pow2_up(min(nchannels, peer))
    nchannels = pow2_up(nchannels)
    least = per_peer
    while least * nranks > 4 * nchannels and least > 1:
        least //= 2
    return P2pChannels(nchannels, per_peer, least, chunk, nnodes, local_ranks, nranks)


def parts(channels: P2pChannels, nbytes: int) -> int:
    """Channels one transfer of ``nbytes`` takes (``addP2pToPlan`` [U]); 1 for an empty one.

    >>> c = p2p_channels(16, 2, 8, comm_nchannels=32, peer_nchannels=2, chunk=P2P_NET_CHUNKSIZE)
    >>> c.per_peer, [parts(c, b) for b in (0, 65536, 65537, 2**30)]
    (2, [1, 1, 2, 2])
    """
    if nbytes <= 0:
        return 1
    n = min(channels.min_per_peer, -(-int(nbytes) // channels.min_part))
    part = max(channels.min_part, -(-int(nbytes) // n))
    while part > channels.max_part and n <= channels.per_peer // 2:
        n *= 2
        part = -(-int(nbytes) // n)
    return n


def part_bytes(channels: P2pChannels, nbytes: int) -> int:
    """The largest part NCCL cuts from a transfer of ``nbytes`` or less (:func:`parts`): its
    part sizes smoothed over the doublings, so that a larger transfer never gets smaller parts.
    [U] The time of a part is taken at this size: where NCCL doubles a peer's channels, the part
    halves and the peer's transfer would finish sooner for being larger; a benchmark's curve is
    not known to dip there. [bytes]

    >>> c = p2p_channels(8, 1, 8, comm_nchannels=32, peer_nchannels=36, chunk=P2P_NVL_CHUNKSIZE)
    >>> [part_bytes(c, b) for b in (1000, 65536, 65537, 2**20, 2**28, 2**30)]
    [1000, 65536, 65536, 65536, 16777216, 33554432]
    """
    b = max(0, int(nbytes))
    lo, hi = channels.min_part, channels.max_part
    least, most = channels.min_per_peer, channels.per_peer
    if b <= lo:
        return b
    if b <= least * lo:
        return lo
    if b <= least * hi:
        return max(lo, -(-b // least))
    if b <= most * hi:
        return max(lo, hi)
    return -(-b // most)


def protocol(nbytes: int) -> str:
    """The protocol of a transfer: ``"LL"`` up to :data:`P2P_LL_THRESHOLD`, else ``"Simple"``.

    >>> protocol(16384), protocol(16385)
    ('LL', 'Simple')
    """
    return "LL" if nbytes <= P2P_LL_THRESHOLD else "Simple"


def peer_rounds(node_of: tuple, local_of: tuple) -> tuple:
    """NCCL's rounds of peers: per round, per rank, ``(send peer, receive peer)`` (``-1``: none).

    Parameters
    ----------
    node_of, local_of : tuple of int
        Per rank (in rank order), its NCCL node (0 ...) and its index on that node.

    Returns
    -------
    tuple of tuple of (int, int)
        ``rounds[k][rank]``; round 0 is every rank's copy to itself. Nodes with fewer ranks than
        the most leave the peers they lack empty, as NCCL does.

    Examples
    --------
    >>> peer_rounds((0, 0, 0), (0, 1, 2))
    (((0, 0), (1, 1), (2, 2)), ((1, 2), (2, 0), (0, 1)), ((2, 1), (0, 2), (1, 0)))
    >>> peer_rounds((0, 0, 1, 1), (0, 1, 0, 1))[2]   # node delta 1, local delta 0
    ((2, 2), (3, 3), (0, 0), (1, 1))

    Raises
    ------
    P2pPlanError
        For lists of different lengths, or nodes or local indexes that do not number 0 ...
    """
    if len(node_of) != len(local_of) or not node_of:
        raise P2pPlanError(f"expected one node and one local index per rank, received {len(node_of)} and "
                           f"{len(local_of)}")
    where = _placement(node_of, local_of)
    per_rank = [rank_rounds(node_of, local_of, r, where) for r in range(len(node_of))]
    return tuple(zip(*per_rank))


def _placement(node_of, local_of) -> dict:
    where = {(n, l): r for r, (n, l) in enumerate(zip(node_of, local_of))}
    if len(where) != len(node_of):
        raise P2pPlanError("expected each (node, local index) once, received a repeat")
    nnodes = max(node_of) + 1
    if set(node_of) != set(range(nnodes)):
        raise P2pPlanError(f"expected nodes numbered 0-{nnodes - 1}, received {sorted(set(node_of))}")
    return where


def rank_rounds(node_of: tuple, local_of: tuple, rank: int, where: dict | None = None) -> tuple:
    """One rank's column of :func:`peer_rounds`: per round ``(send peer, receive peer)``, without
    laying out every rank's (a large cluster's uniform alltoall needs one rank's).

    >>> rank_rounds((0, 0, 1, 1), (0, 1, 0, 1), 1)
    ((1, 1), (0, 0), (3, 3), (2, 2))
    """
    if len(node_of) != len(local_of) or not node_of:
        raise P2pPlanError(f"expected one node and one local index per rank, received {len(node_of)} and "
                           f"{len(local_of)}")
    where = _placement(node_of, local_of) if where is None else where
    nnodes, local = max(node_of) + 1, max(local_of) + 1
    n, l = node_of[rank], local_of[rank]
    return tuple((where.get(((n + nd) % nnodes, (l + ld) % local), -1),
                  where.get(((n - nd) % nnodes, (l - ld) % local), -1))
                 for nd in range(nnodes) for ld in range(local))


def channel_base(round_index: int, nnodes: int, local_ranks: int) -> int:
    """``ncclP2pChannelBaseForRound`` [U]: the first channel of a round.

    >>> [channel_base(k, 1, 8) for k in (0, 3, 7)], [channel_base(k, 2, 8) for k in (3, 8, 15)]
    ([0, 3, 7], [0, 1, 1])
    """
    if nnodes > 1:
        node_delta, local_delta = divmod(round_index, local_ranks)
        base = node_delta * -(-local_ranks // MAX_P2P_PER_BATCH) + local_delta // MAX_P2P_PER_BATCH
        return base & 0xFF
    return round_index & 0xFF


def channel_for_part(nchannels: int, base: int, part: int) -> int:
    """``ncclP2pChannelForPart`` [U]: part ``part`` of a round runs on ``(base + bitreverse(part))
    mod nchannels`` (``nchannels`` a power of two).

    >>> [channel_for_part(32, 3, p) for p in range(4)]
    [3, 19, 11, 27]
    """
    bits = max(0, nchannels.bit_length() - 1)
    delta = int(format(part, f"0{bits}b")[::-1], 2) if bits else 0
    return (base + delta) & (nchannels - 1)
