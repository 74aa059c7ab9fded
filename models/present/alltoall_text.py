"""Words of NCCL's per-peer schedule (:mod:`models.predict.alltoall`) and of a MoE dispatch
(:mod:`models.predict.dispatch`), as ``--explain`` prints them."""

from __future__ import annotations

from topo.select import format_gpu_ids
from topo.units import to_us

from ..predict.alltoall import P2pEstimate, P2pSchedule
from ..predict.dispatch import DispatchEstimate, DispatchPath
from .format import format_gbps

__all__ = ["schedule_lines", "explain_p2p_estimate", "explain_dispatch", "dispatch_path_line", "dispatch_table",
           "grouped_table", "alltoallv_table"]

#: Rounds listed one by one before the rest are summed up.
_SHOWN = 8


def _rounds_text(rounds) -> list:
    lines = []
    for r in rounds[:_SHOWN]:
        lines.append(f"  round {r.index:3d} (node +{r.delta[0]}, local +{r.delta[1]}): {r.hardware:6} {r.protocol:6} "
                     f"{r.nbytes} B on {r.parts} channel(s) [{' '.join(map(str, r.channels[:8]))}"
                     f"{' ...' if len(r.channels) > 8 else ''}], hwLat {to_us(r.latency):.2f} us")
    if len(rounds) > _SHOWN:
        rest = rounds[_SHOWN:]
        lines.append(f"  ... {len(rest)} more round(s), hwLat up to {to_us(max(r.latency for r in rest)):.2f} us")
    return lines


def schedule_lines(s: P2pSchedule) -> list:
    """The schedule's working, one line each: channels and chunk, the rounds, the terms.

    Examples
    --------
    >>> import topo
    >>> from models.predict.collectives import estimate
    >>> print(schedule_lines(estimate(topo.build("dgxh100"), "alltoall", 2**30).schedule)[0])
    p2p schedule (NCCL's grouped sends, models.engine.nccl.p2p_plan [U]): 32 p2p channels, up to 32 per peer (16 before splitting further), chunk 524288 B, 1 node(s) of 8 rank(s)
    """
    p = s.plan
    lines = [f"p2p schedule (NCCL's grouped sends, models.engine.nccl.p2p_plan [U]): {p.nchannels} p2p channels, "
             f"up to {p.per_peer} per peer ({p.min_per_peer} before splitting further), chunk {p.chunk} B, "
             f"{p.nnodes} node(s) of {p.local_ranks} rank(s)"]
    lines += _rounds_text(s.rounds)
    lines.append(f"  latency: base {to_us(s.base_latency):.2f} us + {len(s.rounds)} round(s) on channels at once, "
                 f"the slowest (channel {s.channel}) {len(s.handshakes)} batch(es) of works one after another, a hop "
                 f"each {to_us(sum(s.handshakes)):.2f} us + proxy {s.network_ops} network op(s) {to_us(s.proxy):.2f} us "
                 f"= {to_us(s.latency):.2f} us [U: a batch's hop at NCCL's ring hwLat; proxy ops at NCCL's "
                 f"getNetOverhead, one after another]")
    lines.append(f"  host: {s.tasks} p2p task(s) a rank posts; the {max(0, s.tasks - 1)} beyond the first "
                 f"{to_us(s.enqueue):.2f} us per GPU (getNetOverhead each [U]) on top of the launch")
    lines.append(f"  fill: {s.batches} batch(es) x the last chunk at {format_gbps(s.channel_rate, 1)} GB/s per channel "
                 f"= {to_us(s.fill):.2f} us")
    edge = f" ({s.bottleneck[0][0]}->{s.bottleneck[0][1]})" if s.bottleneck else ""
    lines.append(f"  link term {to_us(s.link_time):.2f} us{edge}; channel term {to_us(s.channel_time):.2f} us "
                 f"(a channel's parts at NCCL's ring bwIntra {format_gbps(s.channel_rate, 1)} GB/s [U]); "
                 f"{s.binding} bind")
    lines.append(f"  NCCL time {to_us(s.time):.2f} us = latency + fill + the larger term")
    return lines


def explain_p2p_estimate(e: P2pEstimate) -> str:
    """The working of :func:`models.predict.alltoall.alltoallv` and its kin."""
    lines = [f"{e.operation} on GPUs {format_gpu_ids(e.gpus)} ({e.nranks} ranks): most sent by one rank "
             f"{e.nbytes} B; time {to_us(e.time):.2f} us (NCCL {to_us(e.nccl_time):.2f} us)"]
    return "\n".join(lines + schedule_lines(e.schedule))


def dispatch_path_line(p: DispatchPath) -> str:
    """One schedule of a dispatch in one line."""
    return (f"  {p.name:12} per GPU {p.nvlink_bytes / 1e6:.2f} MB over NVLink ({to_us(p.nvlink_time):.1f} us at "
            f"{format_gbps(p.nvlink_rate, 1)} GB/s), {p.network_bytes / 1e6:.2f} MB over the network "
            f"({to_us(p.network_time):.1f} us at {format_gbps(p.network_rate, 1)} GB/s); latency "
            f"{to_us(p.latency):.1f} us; time {to_us(p.time):.1f} us; {p.bottleneck} binds")


def explain_dispatch(d: DispatchEstimate) -> str:
    """The working of :func:`models.predict.dispatch.moe_dispatch`.

    Examples
    --------
    >>> import topo
    >>> from models.predict.dispatch import moe_dispatch
    >>> print(explain_dispatch(moe_dispatch(topo.build("2xdgxh100"), 4096, 7168, 8, 64, dtype_bytes=1)).splitlines()[0])
    MoE dispatch on GPUs 0-15 (2 node(s) x 8 GPUs): 4096 tokens per GPU x 7168 B, top-8 of 64 experts, at most 2 node(s) per token
    """
    lines = [f"MoE dispatch on GPUs {format_gpu_ids(d.gpus)} ({d.nnodes} node(s) x {d.local_ranks} GPUs): "
             f"{d.tokens} tokens per GPU x {d.token_bytes} B, top-{d.top_k} of {d.experts} experts, at most "
             f"{d.node_limit} node(s) per token",
             f"  a token reaches {d.nodes_per_token:.3f} node(s) and {d.gpus_per_token:.3f} GPU(s) on average "
             f"(uniform routing [U]); flat sends {d.top_k} copies, hierarchical one per node by RDMA then one per GPU "
             f"over NVLink",
             dispatch_path_line(d.flat), dispatch_path_line(d.hierarchical),
             f"  faster: {d.faster} (x{max(d.flat.time, d.hierarchical.time) / min(d.flat.time, d.hierarchical.time):.2f})"]
    return "\n".join(lines)


def dispatch_table(d: DispatchEstimate) -> str:
    """One line per schedule of a dispatch (time, latency, bytes per GPU, what binds), and the faster.

    >>> import topo
    >>> from models.predict.dispatch import moe_dispatch
    >>> print(dispatch_table(moe_dispatch(topo.build("2xdgxh100"), 4096, 7168, 8, 64, dtype_bytes=1)).splitlines()[1])
    # schedule       time (us)  latency (us)  NVLink (MB)  network (MB)  binds
    """
    lines = [f"# MoE dispatch on GPUs {format_gpu_ids(d.gpus)} ({d.nnodes} node(s) x {d.local_ranks} GPUs), "
             f"{d.tokens} tokens x {d.token_bytes} B per GPU, top-{d.top_k} of {d.experts} experts",
             "# schedule       time (us)  latency (us)  NVLink (MB)  network (MB)  binds"]
    for p in (d.flat, d.hierarchical):
        lines.append(f"  {p.name:12} {to_us(p.time):12.1f} {to_us(p.latency):13.1f} {p.nvlink_bytes / 1e6:12.2f} "
                     f"{p.network_bytes / 1e6:13.2f}  {p.bottleneck}")
    lines.append(f"# faster: {d.faster}")
    return "\n".join(lines)


def grouped_table(operation: str, last: P2pEstimate, root: int, rows, gpus_per_thread: int) -> str:
    """nccl-tests' columns of a gather or scatter sweep: ``rows`` of (size, time, algbw, busbw) in
    bytes, seconds and B/s, ``last`` the largest size's estimate (its GPUs and release).

    >>> import topo
    >>> from models.predict.alltoall import gather
    >>> e = gather(topo.build("dgxh100"), 2**20)
    >>> t = grouped_table("gather", e, 0, [(8 * 2**20, e.time, 8 * 2**20 / e.time, 7 * 2**20 / e.time)], 1)
    >>> print(t.splitlines()[1]); t.splitlines()[2].split()[0]
    #     size (B)   time (us)   algbw (GB/s)   busbw (GB/s)
    '8388608'
    """
    lines = [f"# dgxtopo: predicted nccl-tests {operation} on GPUs {format_gpu_ids(last.gpus)} ({last.nranks} "
             f"ranks), root {root}, -g {gpus_per_thread}; NCCL's grouped sends and receives (its per-peer "
             f"schedule, this project's model)",
             "#     size (B)   time (us)   algbw (GB/s)   busbw (GB/s)"]
    for size, time, algbw, busbw in rows:
        lines.append(f"{size:14d} {to_us(time):11.2f} {format_gbps(algbw, 2):>14} {format_gbps(busbw, 2):>14}")
    return "\n".join(lines)


def alltoallv_table(e: P2pEstimate, source: str, size: int, algbw: float, busbw: float, gpus_per_thread: int) -> str:
    """nccl-tests' columns of one all-to-allv (:func:`models.predict.alltoall.alltoallv`) of the matrix
    read from ``source``: ``size`` the most a rank sends to its peers times ``n / (n - 1)`` (:func:`~models.present.cli.alltoallv.alltoallv_size`) in bytes, ``algbw`` and
    ``busbw`` in B/s; a line above says what the matrix holds.

    >>> import topo
    >>> from models.predict.alltoall import alltoallv
    >>> e = alltoallv(topo.build("dgxh100"), [[0, 2**20], [3 * 2**20, 0]], gpus=[0, 1])
    >>> print(alltoallv_table(e, "m.csv", 3 * 2**20, 3 * 2**20 / e.time, 1.5 * 2**20 / e.time, 1).splitlines()[1])
    # matrix m.csv: 2 x 2, 4194304 B in all, 0 B on the diagonal (not timed); the most a GPU sends 3145728 B (GPU 1), receives 3145728 B (GPU 0)
    """
    m = e.matrix
    sent, received = m.sum(axis=1) - m.diagonal(), m.sum(axis=0) - m.diagonal()
    shown = "standard input" if source == "-" else source
    lines = [f"# dgxtopo: predicted alltoallv on GPUs {format_gpu_ids(e.gpus)} ({e.nranks} ranks), -g "
             f"{gpus_per_thread}; NCCL's grouped sends and receives (its per-peer schedule, this project's model)",
             f"# matrix {shown}: {e.nranks} x {e.nranks}, {int(m.sum())} B in all, {int(m.diagonal().sum())} B on the "
             f"diagonal (not timed); the most a GPU sends {int(sent.max())} B (GPU {e.gpus[int(sent.argmax())]}), "
             f"receives {int(received.max())} B (GPU {e.gpus[int(received.argmax())]})",
             "#     size (B)   time (us)   algbw (GB/s)   busbw (GB/s)",
             f"{size:14d} {to_us(e.time):11.2f} {format_gbps(algbw, 2):>14} {format_gbps(busbw, 2):>14}"]
    return "\n".join(lines)
