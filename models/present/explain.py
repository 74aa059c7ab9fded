"""The working behind a result, as text: what ``--explain`` prints.

The model's results hold numbers and their structured working (channel searches with their
channels and link loads, NCCL's tuning cells with their latency terms and bandwidth steps, the
measurement terms with their constants, a bound's rates and cut); this module writes that
working out, one term a line, in the units nccl-tests prints (GB/s, microseconds).

:func:`explain` takes any result that has a working; the functions it dispatches to can be
called directly.

Examples
--------
>>> import topo
>>> from models.predict.p2p import p2p_path
>>> print(explain(p2p_path(topo.dgx1v(), 0, 1, p2p=False)))
GPU0 -> GPU1: PIX, staged through cpu0's memory
  legs: gpu0 -> pcie0 -> cpu0 | cpu0 -> pcie0 -> gpu1
  bandwidth 9.56 GB/s one way = min over edges of line rate x efficiency / streams:
    bottleneck ('gpu0', 'pcie0'), line rate 15.75 GB/s x staged 0.6068
  latency 16.91 us = overhead staged_p2p_disabled 16.31 us + hops 0.60 us
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from topo.errors import DgxTopoError
from topo.select import format_gpu_ids
from topo.specs import WIRES
from topo.units import to_GBps, to_us

from ..engine.nccl.profiles import nccl_profile
from ..engine.nccl.search import FALLBACK_BANDWIDTH, SearchStep
from ..engine.routes import PathType
from ..predict.collectives import CollectiveEstimate
from ..predict.decompose import CollectiveSteps
from ..predict.measure import FILL_NOTE, Measured, Parameter, PipelineFill
from ..predict.network import NetworkLoad
from ..predict.nicpath import NicPath
from ..predict.alltoall import P2pEstimate
from ..predict.dispatch import DispatchEstimate
from ..predict.pipeline import PipelineTime
from ..predict.p2p import P2PResult
from ..predict.p2p_constants import EFFICIENCIES, OVERHEADS
from ..studies.bounds import Bound, Cut
from ..studies.calibration import Check
from ..studies.packing import TreePacking
from .alltoall_text import explain_dispatch, explain_p2p_estimate, schedule_lines
from .format import format_gbps, format_percent
from .reasons_text import nvls_bound_text, nvls_choice_text

__all__ = ["explain", "explain_estimate", "explain_measurement", "explain_p2p_path", "explain_bound",
           "explain_check", "describe_parameter", "describe_network_load", "network_load_where",
           "describe_nic_path", "describe_cut", "describe_packing", "describe_pipeline_fill", "describe_pipeline_time", "bound_summary", "explain_steps",
           "search_step_text"]


def _gbps(value) -> str:
    return format_gbps(value, 1)


def _release_words(profile) -> str:
    """``"2.27.7 (v2.27.7-1): topology search, trees, ..."``: the release and its behaviours."""
    b = profile.behaviour
    if b is None:
        return f"{profile.version} ({profile.tag})"
    return (f"{profile.version} ({profile.tag}): " + ", ".join(
        cell.label for cell in (b.ring_builder, b.tree, b.selection, b.ll128, b.nvb, b.pxn, b.nvls)))


def _release_caveats(profile) -> list:
    """The release's features the time leaves out (symmetric kernels, copy-engine collectives: they
    run only on buffers the user registers) and its uncertain behaviour cells ([U]), one line each."""
    b = profile.behaviour
    if b is None:
        return []
    untimed = [cell.label.replace(" (not timed)", "") for cell in (b.symmetric, b.copy_engine)
               if cell.value != "none"]
    lines = [f"  not timed: {'; '.join(untimed)}: NCCL runs them only on buffers the user registers "
             f"(ncclCommWindowRegister); these times are for unregistered buffers"] if untimed else []
    lines += [f"  [U] {u if ':' in u else f'{u}: not read at {b.tag}, a neighbouring release taken'}"
              for u in b.uncertain]
    return lines


# ---------------------------------------------------------------------------- channel search
def _host_ranges(values) -> str:
    """Sorted whole numbers as ``0-17`` or ``0-3,8`` (two in a row as a range too)."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(parts)


def _attempt_text(s: SearchStep) -> str:
    label = (f"{s.speed / 1e9:g} GB/s, type {s.type_intra}" + (f"/{s.type_inter}" if s.type_inter else "")
             + f", {'same' if s.same else 'free'} channels")
    if s.kind == "skipped":
        return f"{label}: skipped, links hold at most {s.count} channel(s)"
    if s.kind == "tie":
        return f"{label}: skipped, at most a tie ({s.count} channel(s)) with no fewer hops"
    return (f"{label}: {s.count} channel(s)" + (" (budget exhausted)" if s.timed_out else "")
            + (f" (NCCL's order: {s.in_budget} in its budget; restart {s.restart}: more)" if s.restart >= 0 else "")
            + (f", fewer than the {s.limit} required" if s.limit else ""))


#: The words of each kind of search step (models.engine.nccl.search.STEP_KINDS).
_STEP_TEXT = MappingProxyType({
    "attempt": _attempt_text, "skipped": _attempt_text, "tie": _attempt_text,
    "fallback": lambda s: (f"nothing found down to NCCL's lowest speed, {s.speed / 1e9:g} GB/s: NCCL falls back "
                           f"to one channel in index order, type SYS, tuned at {FALLBACK_BANDWIDTH / 1e9:g} GB/s; "
                           f"its data moves at the slowest hop's rate, {s.rate / 1e9:.3g} GB/s"
                           + (f" ({s.names[0]}->{s.names[1]})" if s.names else "")),
    "duplicated": lambda s: f"duplicated: {s.count} channels x {s.speed / 1e9:g} GB/s",
    "other_shape": lambda s: f"another node shape holds {s.count} x {s.speed / 1e9:g} GB/s",
    "mnnvl": lambda s: (f"MNNVL: the GPUs of hosts {_host_ranges(s.names)} share one NVLink domain and are "
                        f"{s.count} NCCL node(s) (NCCL {s.release} fuses a clique's hosts, src/graph/topo.cc; "
                        f"tuning counts a clique as one node)"),
    "domains": lambda s: f"{s.count} P2P domains: one shared-memory ring chaining them [U: rank order]",
    "nvswitch": lambda s: f"NVSwitch: {s.limit} rings in index order, copied x2 -> {s.count}",
    "nvlink_search": lambda s: f"NVLink search: {s.count} ring(s)",
    "oversubscribed": lambda s: (f"oversubscribed (capacities x2): {s.count} ring(s), "
                                 + ("kept" if s.kept else f"not > {s.limit}: rejected")),
    "copied": lambda s: f"copied x2 -> {s.count} rings",
    "pascal_threads": lambda s: f"Pascal: nThreads {s.count}",
    "pcie": lambda s: "PCIe: one greedy ring by P2P score",
    "simple_ring": lambda s: ("Could not create rings, falling back on simple ring (rank order; hops without "
                              "NVLink go through shared memory)"),
    "shared_memory": lambda s: ("via direct shared memory (host memory, PCIe both ends): "
                                + ", ".join(f"{a}->{b}" for a, b in s.names)),
    "ring_rate": lambda s: f"{s.count} ring(s) x {s.speed / 1e9:g} GB/s: the rate the busiest link leaves each ring",
    "nics": lambda s: f"{s.count} NIC(s): one ring per NIC (netGetRings)",
    "copied_across_nodes": lambda s: f"v2.4: NVLink rings across nodes copied x2 -> {s.count}",
    "nvls_attempt": lambda s: (f"{s.speed / 1e9:g} GB/s: {s.count} head(s)"
                               + (f", fewer than the {s.limit} required" if s.limit else "")),
    "nvls_none": lambda s: "no NVLS channel fits: NCCL clears nvlsSupport",
    "nvls_bw_inter": lambda s: f"pass 2: bwInter {s.speed / 1e9:g} GB/s",
})


def search_step_text(step: SearchStep) -> str:
    """One step of a channel search (:class:`models.engine.nccl.search.SearchStep`) in words, as
    ``--explain`` prints it.

    Examples
    --------
    >>> search_step_text(SearchStep("attempt", speed=20e9, type_intra="NVL", count=6, timed_out=True))
    '20 GB/s, type NVL, free channels: 6 channel(s) (budget exhausted)'
    >>> search_step_text(SearchStep("duplicated", speed=30e9, count=12))
    'duplicated: 12 channels x 30 GB/s'
    """
    return _STEP_TEXT[step.kind](step)


# ----------------------------------------------------------------------- collective estimate
def explain_estimate(e: CollectiveEstimate) -> str:
    """The working of a collective estimate: channels, bottleneck, NCCL's latency and bandwidth
    terms per (algorithm, protocol) at the largest size, NVLS, and the measurement terms.

    Parameters
    ----------
    e : models.predict.collectives.CollectiveEstimate

    Returns
    -------
    str
    """
    lines = [f"{e.collective} on GPUs {format_gpu_ids(e.gpus)} ({e.nranks} ranks); model: {e.model}"]
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
        lines.append("  search: " + "; ".join(search_step_text(t) for t in search.trace
                                               if t.kind not in ("skipped", "tie")))
    if e.selection is not None:
        point = e.point()
        lines.append("tuning (time = latency + size / algorithm bandwidth), largest size "
                     f"{point.nbytes} B:")
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
                f"{_gbps(t.bandwidth)} GB/s; time {to_us(np.asarray(cand.time).reshape(-1)[-1]):.1f} us")
        lines.append(f"  chosen: {point.algorithm}/{point.protocol}")
        if e.nvls is not None:
            lines.append(f"nvls graph: {e.nvls.nchannels} heads x {_gbps(e.nvls.bw_intra)} GB/s (bwInter "
                         f"{_gbps(e.nvls.bw_inter)} GB/s); heads " + " ".join(
                             str(e.gpus[e.nodes.index(g)]) if g in e.nodes else str(g) for g in e.nvls.heads))
            lines.append("  search: " + "; ".join(search_step_text(t) for t in e.nvls.trace))
        if e.nvls_choice is not None:
            lines.append(f"  NVLS: {nvls_choice_text(e.nvls_choice)}")
    else:
        point = e.point()
        lines.append(f"latency {to_us(point.latency):.1f} us; bandwidth {_gbps(point.bandwidth)} GB/s"
                     + (f"; bottleneck {e.bottleneck[0][0]}->{e.bottleneck[0][1]}" if e.bottleneck else ""))
        if e.schedule is not None:
            lines.append(f"largest size {point.nbytes} B:")
            lines += schedule_lines(e.schedule)
    if e.measurement is not None:
        lines.append(explain_measurement(e.measurement))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ measurement
def describe_parameter(p: Parameter) -> str:
    """One line for a measurement constant: name = value, then source, fit and [U] note.

    Examples
    --------
    >>> from models.predict.measure import Parameter
    >>> describe_parameter(Parameter("floor", 2e-6, "s", "a source", "some runs"))
    'floor = 2.000 us: a source; fitted to some runs'
    """
    value = f"{to_us(p.value):.3f} us" if p.unit == "s" else f"{p.value:.4f}"
    text = f"{p.name} = {value}: {p.source}"
    if p.fitted_to:
        text += f"; fitted to {p.fitted_to}"
    if p.uncertain:
        text += f" [U] {p.uncertain}"
    return text


def describe_pipeline_fill(fill: PipelineFill) -> str:
    """One line: the release's pipeline for the largest size, the decomposition of the size and
    the fill (:func:`models.predict.measure.pipeline_fill`)."""
    p = fill.pipelining
    text = (f"pipeline: {p.protocol} {p.collective} ({p.pattern}) of NCCL {p.release}: steps of "
            f"{p.step_bytes} B, chunks of {p.chunk_steps} step(s), slices of {p.slice_steps}, "
            f"{p.steps_in_flight} steps in flight; {fill.loops} loop(s) on {fill.nchannels} "
            f"channel(s)")
    if not fill.fill_slices:
        return text + "; no fill (every rank sends from the first step, or lines forward one by one)"
    return (text + f"; store-and-forward fill {fill.fill_slices} slices = "
            f"{fill.fill_bytes / fill.nchannels:.0f} B per channel, {to_us(fill.fill_time):.1f} us, "
            f"not added ({FILL_NOTE})")


def describe_pipeline_time(p: PipelineTime) -> str:
    """Lines: the kernels' pipeline of one size (:func:`models.predict.pipeline.pipeline_time`):
    the channels and threads launched, the steps, the hops and their link class, the fill, the
    bytes per step and every term of the time."""
    launch, hop = p.launch, p.slowest
    hops = p.hops
    where = "" if hops is None else ", ".join(
        f"{name} {h.src}->{h.dst} {to_us(h.latency):.2f} us ({h.link})"
        for name, h in (("in a host", hops.intra), ("between hosts", hops.inter)) if h is not None)
    if launch.reduces:
        launched = (f"{launch.nchannels} of {launch.graph_channels} channel(s), {launch.nthreads} threads after "
                    f"NCCL's reduction (nBytes < nc x nt x {launch.threshold} B sheds channels, then threads; "
                    f"block {launch.block_threads} threads)")
    else:
        launched = (f"{launch.nchannels} channel(s) (comm->nvlsChannels at every size, no reduction), "
                    f"{launch.nthreads} threads")
    if p.shape in ("ring", "chain"):
        cut = (f"step buffer {p.pipelining.step_bytes} B, chunk {p.pipelining.chunk_steps}, slice "
               f"{p.pipelining.slice_steps} step(s), {p.pipelining.steps_in_flight} in flight")
    else:
        cut = (f"NCCL's {p.shape} chunk, one step each, shrunk at small sizes"
               + (f"; {p.heads} head(s) a loop" if p.heads else "")
               + f"; {p.pipelining.steps_in_flight} in flight")
    lines = [
        f"pipeline ({p.shape}, {p.protocol}) at {p.nbytes} B: {launched}",
        f"  {p.steps} step(s) per channel of {p.step_bytes} B ({cut})",
        f"  hops: {where or 'none'}" + (f"; slowest {hop.link}" if hop is not None else ""),
        f"  per step: handshake {to_us(p.handshake):.3f} us (after {to_us(p.overlap):.3f} us of data in "
        f"flight), kernel work {to_us(p.work):.3f} us of which {to_us(p.exposed):.3f} us exposed",
        f"  fill {to_us(p.fill):.2f} us; latency = fill + steps x handshake = {to_us(p.latency):.2f} us; "
        f"data {p.nbytes} B at {to_GBps(p.rate):.2f} GB/s = {to_us(p.data_time):.2f} us; "
        f"work = data + steps x exposed = {to_us(p.work_time):.2f} us",
    ]
    return "\n".join(lines)


def network_load_where(load: NetworkLoad) -> str:
    """The busiest link group of a network load in words (:attr:`NetworkLoad.group
    <models.predict.network.NetworkLoad>` and its nodes): ``"h0.mlx5_0->net.leaf0"`` (one link),
    ``"net.leaf4's up-links"``, ``"net.leaf4's down-links from the tier above"``; ``""`` when unset.

    Examples
    --------
    >>> from models.predict.network import NetworkLoad
    >>> network_load_where(NetworkLoad("ring", 8, 0.5, 12e9, 6e9, (), 8.0, 50e9, group="down",
    ...                                nodes=("net.leaf4",)))
    "net.leaf4's down-links from the tier above"
    """
    if load.group == "up":
        return f"{load.nodes[0]}'s up-links"
    if load.group == "down":
        return f"{load.nodes[0]}'s down-links from the tier above"
    if load.group == "link":
        return f"{load.nodes[0]}->{load.nodes[1]}"
    return ""


def describe_network_load(load: NetworkLoad) -> str:
    """One line: what the network gives the channels of one pattern across hosts."""
    verdict = ("the network is not the limit" if load.factor >= 1 else
               f"the network gives {load.factor:.3f} of it")
    extra = f"; {load.aligned} channels return by their entry NIC over PXN" if load.aligned else ""
    extra += f"; {load.pxn} sent over NVLink to another NIC first (PXN)" if load.pxn else ""
    return (f"network ({load.algorithm or load.pattern}): {load.connections} connections; busiest: "
            f"{network_load_where(load)} "
            f"({len(load.edges)} edge{'s' if len(load.edges) > 1 else ''}) carry {load.load:.3g} of "
            f"them on {to_GBps(load.capacity):.1f} GB/s = "
            f"{to_GBps(load.network_rate):.2f} GB/s each, NCCL assumed {to_GBps(load.nccl_rate):.2f}: "
            f"{verdict}{extra}")


def describe_nic_path(path: NicPath) -> str:
    """One line: a NIC's path for NCCL's network channels, its port and PCIe rates, and what binds
    it (:func:`models.predict.nicpath.nic_path`).

    Examples
    --------
    >>> import topo
    >>> from models.predict.nicpath import nic_path
    >>> print(describe_nic_path(nic_path(topo.build("2xdgx1v"), "h0.mlx5_0")))  # doctest: +NORMALIZE_WHITESPACE
    network path h0.mlx5_0 <-> h0.gpu0: port ib_edr data 12.500 GB/s x packet 0.9937 = 12.42 GB/s;
    PCIe PIX GPUDirect RDMA, slowest pcie3_x16 9.56 GB/s (measured); pcie3_x16 binds: 9.56 GB/s
    over NCCL's 12.00 = 0.7966
    """
    wire = WIRES[path.port]
    pcie = (f"PCIe {path.path_class} {'GPUDirect RDMA' if path.gdr else 'staged in host memory'}"
            + (f", slowest {path.pcie_link} {to_GBps(path.pcie_rate):.2f} GB/s ({path.pcie_basis})"
               if path.pcie_link else ""))
    return (f"network path {path.nic} <-> {path.gpu}: port {path.port} data {to_GBps(wire.data_rate):.3f} "
            f"GB/s x packet {wire.packet_efficiency:.4f} = {to_GBps(path.port_rate):.2f} GB/s; {pcie}; "
            f"{path.binding} binds: {to_GBps(path.rate):.2f} GB/s over NCCL's "
            f"{to_GBps(path.nccl_rate):.2f} = {path.ratio:.4f}")


def explain_measurement(m: Measured) -> str:
    """Each term of the measurement model with its constant and source, for the largest size.

    Across hosts, one line per NIC path the channels use (:func:`describe_nic_path`); the
    constants list the packet efficiency of the binding link class and a PCIe generation's
    measured DMA share (``dma:LINK``) only where a NIC path crosses that generation.

    Parameters
    ----------
    m : models.predict.measure.Measured

    Returns
    -------
    str
    """
    model = m.model

    def last(x):
        return float(np.atleast_1d(x)[-1])

    size = int(last(m.nbytes))
    piped = m.pipelines[-1] if m.pipelines else None
    enqueue = (m.host_time - model.floor) / m.gpus_per_thread - model.launch_per_gpu
    lines = [
        f"Measurement model for {m.collective} on {m.nranks} GPUs, {size} B:",
        *([f"  NCCL release {_release_words(nccl_profile(m.release))}"] if m.release else []),
        *(_release_caveats(nccl_profile(m.release)) if m.release else []),
        *(["  " + describe_pipeline_fill(m.pipeline)] if m.pipeline is not None else []),
        *(["  " + line for line in describe_pipeline_time(piped).splitlines()] if piped is not None else []),
        ("  time = max(floor + g x launch_per_gpu, nccl_latency, pipeline latency) + pipeline work "
         "(rate: nccl_bandwidth x ratio" + (" x network" if m.network else "") + ")") if piped is not None else
        "  time = max(floor + g x launch_per_gpu, nccl_latency) + nbytes / (nccl_bandwidth x ratio"
        + (" x network)" if m.network else ")"),
        f"  host term: floor {to_us(model.floor):.3f} us + {m.gpus_per_thread} x "
        + (f"({to_us(model.launch_per_gpu):.3f} us + p2p enqueue {to_us(enqueue):.3f} us)" if enqueue > 1e-12
           else f"{to_us(model.launch_per_gpu):.3f} us")
        + f" = {to_us(m.host_time):.2f} us",
        f"  NCCL latency term: {to_us(last(m.nccl_latency)):.2f} us"
        + (f", pipeline latency {to_us(piped.latency):.2f} us (they overlap the host term; the largest, "
           if piped is not None else " (overlaps the host term; the larger, ")
        + f"{to_us(last(m.startup)):.2f} us, counts)",
    ]
    if any(p.binding == m.link and math.isclose(p.ratio, m.ratio) for p in m.nic_paths):
        lines.append(f"  bandwidth: NCCL {to_GBps(last(m.nccl_bandwidth)):.2f} GB/s x ratio "
                     f"{m.ratio:.4f}, the path of a NIC:")
    elif m.link:
        cls = model.links[m.link]
        lines.append(
            f"  bandwidth: NCCL {to_GBps(last(m.nccl_bandwidth)):.2f} GB/s x ratio "
            f"{m.ratio:.4f} ({m.link}: data rate {to_GBps(cls.data_rate):.3f} GB/s x packet "
            f"{cls.packet_efficiency:.4f} x transfer {model.efficiency(m.link):.4f} = "
            f"{to_GBps(model.achieved(m.link)):.2f} GB/s achieved per link, over NCCL's "
            f"{to_GBps(model.achieved(m.link) / m.ratio):.2f})")
    else:
        lines.append("  bandwidth: NCCL's, no link class binds (ratio 1)")
    lines += ["  " + describe_nic_path(p) for p in m.nic_paths]
    for load in m.network:
        lines.append("  " + describe_network_load(load))
    if m.network:
        lines.append(f"  network factor at this size: {last(m.network_factor):.4f}")
    lines.append(f"  time {to_us(last(m.time)):.2f} us (NCCL's tuning estimate "
                 f"{to_us(last(m.nccl_time)):.2f} us)")
    lines.append("Constants:")
    crossed = {p.pcie_link for p in m.nic_paths}

    def shown(p: Parameter) -> bool:
        kind, _, link = p.name.partition(":")
        if kind == "packet_efficiency":
            return link == m.link
        if kind == "dma":
            return link in crossed
        return True

    lines += ["  " + describe_parameter(p) for p in model.parameters() if shown(p)]
    return "\n".join(lines)


def explain_check(check: Check) -> str:
    """The measurement model's working at the largest size of a :func:`models.studies.calibration.check`."""
    return explain_measurement(check.measured) if check.measured is not None else ""


# ------------------------------------------------------------------------------------ p2p
def explain_p2p_path(r: P2PResult) -> str:
    """The working of one GPU-to-GPU copy, one term a line (see the module's example).

    Parameters
    ----------
    r : models.predict.p2p.P2PResult

    Returns
    -------
    str
    """
    if r.staged is not None:
        how = f"staged through {r.staged.host_memory}'s memory"
        path = ("  legs: " + " -> ".join(map(str, r.staged.to_host)) + " | "
                + " -> ".join(map(str, r.staged.from_host)))
    else:
        how = "device-local copy" if r.path_type == PathType.LOC else "peer copy"
        path = "  path: " + " -> ".join(map(str, r.nodes))
    lines = [f"GPU{r.src} -> GPU{r.dst}: {r.path_type.name}, {how}", path]
    if r.bottleneck is None:
        lines.append(f"  bandwidth {to_GBps(r.bandwidth):.2f} GB/s = HBM "
                     f"{to_GBps(r.line_rate):.2f} GB/s x {r.efficiency} "
                     f"{EFFICIENCIES[r.efficiency].value:.4f}")
    elif r.bottleneck[0] == "host_memory":
        lines.append(f"  bandwidth {to_GBps(r.bandwidth):.2f} GB/s = host ceiling of "
                     f"{r.bottleneck[1]} ({r.efficiency})")
    else:
        lines.append(f"  bandwidth {to_GBps(r.bandwidth):.2f} GB/s one way = min over "
                     f"edges of line rate x efficiency / streams:")
        lines.append(f"    bottleneck {r.bottleneck}, line rate "
                     f"{to_GBps(r.line_rate):.2f} GB/s x {r.efficiency} "
                     f"{EFFICIENCIES[r.efficiency].value:.4f}")
    overhead = OVERHEADS[r.overhead].value
    lines.append(f"  latency {to_us(r.latency):.2f} us = overhead {r.overhead} "
                 f"{to_us(overhead):.2f} us + hops {to_us(r.latency - overhead):.2f} us")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- bounds
def describe_cut(cut: Cut) -> str:
    """The cut that proves a bound, in one line."""
    links = ", ".join(f"{u}->{v}" for u, v in cut.links[:8]) + \
        (f" (+{len(cut.links) - 8} more)" if len(cut.links) > 8 else "")
    if cut.kind == "saturated":
        return f"saturated links {links or '(none)'}"
    return (f"GPUs {{{','.join(map(str, cut.gpus))}}} -> {{{','.join(map(str, cut.other))}}}: "
            f"{to_GBps(cut.capacity):.1f} GB/s out over {links or 'no link'}"
            f"{'' if cut.shards == 1 else f', {cut.shards:g} shards must cross'}")


def describe_packing(p: TreePacking) -> str:
    """A tree packing: its rate, the busiest link, and the first 12 trees."""
    lines = [f"{p.collective} packing: {len(p.trees)} trees, {to_GBps(p.rate):.2f} GB/s per "
             f"root, busiest link at {format_percent(p.max_utilisation)}"]
    for tree in p.trees[:12]:
        arcs = " ".join(f"{a}>{b}" for a, b, _ in tree.arcs)
        lines.append(f"  root {tree.root:3d} {to_GBps(tree.rate):7.2f} GB/s: {arcs}")
    if len(p.trees) > 12:
        lines.append(f"  ... {len(p.trees) - 12} more trees")
    return "\n".join(lines)


def bound_summary(b: Bound) -> str:
    """A few lines: the bound, NCCL's busbw, their ratio and the binding cut (``dgxtopo bound``)."""
    lines = [f"{b.collective} on {b.system} GPUs {','.join(map(str, b.gpus))}"
             f"{'' if b.root is None else f' (root {b.root})'}, relay {b.relay}, "
             f"{b.nbytes} B",
             f"  bound busbw  {to_GBps(b.bound_busbw):8.1f} GB/s  (time >= "
             f"{'inf' if math.isinf(b.time) else f'{to_us(b.time):.1f} us'}"
             f"{'' if b.achievable else ', no schedule known to reach it'})"]
    if b.upper_above_bound:
        lines.append(f"  any schedule {to_GBps(b.upper_busbw):8.1f} GB/s  (cut bound, reductions "
                     f"anywhere)")
    if b.nccl_busbw is not None:
        ratio = "n/a" if b.ratio is None else f"{format_percent(b.ratio, 0)} of the bound"
        lines.append(f"  NCCL busbw   {to_GBps(b.nccl_busbw):8.1f} GB/s  ({ratio}; "
                     f"{b.nccl_algorithm})")
    lines.append(f"  binding cut: {describe_cut(b.cut)}")
    for packing in b.packings:
        lines.append("  " + describe_packing(packing).replace("\n", "\n  "))
    return "\n".join(lines)


def explain_bound(b: Bound) -> str:
    """The working of a bound: formulation, rates, cut, NCCL's terms and where the gap comes from.

    Parameters
    ----------
    b : models.studies.bounds.Bound

    Returns
    -------
    str
    """
    lines = [bound_summary(b), "formulation: " + b.formulation,
             "rates: " + "; ".join(f"{name} {to_GBps(r):.2f} GB/s" for name, r in b.rates)]
    if b.collective == "all_reduce":
        lines.append("in-switch reduction: " + nvls_bound_text(b.nvls_why))
    if b.nccl is not None and b.nccl_bandwidth_busbw is not None and b.bound_busbw > 0:
        bw = b.nccl_bandwidth_busbw
        lines.append(
            f"gap: NCCL's bandwidth term alone gives {to_GBps(bw):.1f} GB/s busbw "
            f"({format_percent(bw / b.bound_busbw, 0)} of the bound: its channels and per-link figures); "
            f"latency brings it to {to_GBps(b.nccl_busbw):.1f} GB/s at this size")
        lines.append("NCCL's working:\n  " + explain_estimate(b.nccl).replace("\n", "\n  "))
    return "\n".join(lines)


# ------------------------------------------------------------------------------- dispatch
def explain_steps(steps: CollectiveSteps) -> str:
    """One operation as the simulator runs it: what NCCL runs, its start-up (with NCCL's latency
    terms) and its data phase, and the link it fills most alone.

    Examples
    --------
    >>> import topo
    >>> from models.predict.decompose import Decomposer
    >>> print(explain_steps(Decomposer(topo.build("dgxh100")).collective("all_gather", 2**30, range(8))))
    all_gather of 1073741824 B on GPUs 0-7: ring/Simple, 12 channels, 24 blocks per GPU
      start-up 32.20 us (NCCL latency: base 8.40 us; 7 x 3.40 us)
      data 2718.47 us alone, on 64 links
      busiest link gpu0->nvswitch0: 97.1% of its capacity alone
    """
    latency = ""
    if steps.latency is not None:
        terms = [f"base {to_us(steps.latency.base):.2f} us"] + [
            f"{term.count:g} x {to_us(term.per_step):.2f} us" for term in steps.latency.terms if term.count]
        latency = f" (NCCL latency: {'; '.join(terms)})"
    lines = [f"{steps.op} of {steps.nbytes} B on GPUs {format_gpu_ids(steps.gpus)}: "
             f"{steps.algorithm}/{steps.protocol}, {steps.nchannels} channels, {steps.blocks} blocks per GPU",
             f"  start-up {to_us(steps.startup):.2f} us{latency}",
             f"  data {to_us(steps.transfer):.2f} us alone, on {len(steps.edges)} links"]
    if len(steps.edges):
        top = int(np.argmax(steps.usage))
        u, v = steps.edges[top]
        lines.append(f"  busiest link {u}->{v}: {format_percent(steps.usage[top])} of its capacity alone")
    return "\n".join(lines)


_EXPLAINERS = ((CollectiveEstimate, explain_estimate), (CollectiveSteps, explain_steps), (Measured, explain_measurement),
               (P2PResult, explain_p2p_path), (Bound, explain_bound), (Check, explain_check),
               (Cut, describe_cut), (TreePacking, describe_packing),
               (NetworkLoad, describe_network_load), (NicPath, describe_nic_path),
               (Parameter, describe_parameter),
               (PipelineFill, describe_pipeline_fill), (PipelineTime, describe_pipeline_time),
               (P2pEstimate, explain_p2p_estimate), (DispatchEstimate, explain_dispatch))


def explain(result) -> str:
    """The working of any result that has one, as text.

    Parameters
    ----------
    result : CollectiveEstimate, CollectiveSteps, Measured, P2PResult, Bound, Check, Cut, TreePacking,
        NetworkLoad, NicPath, Parameter, PipelineFill, PipelineTime, P2pEstimate or DispatchEstimate

    Returns
    -------
    str

    Raises
    ------
    topo.DgxTopoError
        For another type.
    """
    for kind, function in _EXPLAINERS:
        if isinstance(result, kind):
            return function(result)
    raise DgxTopoError(f"expected a result with a working ({', '.join(k.__name__ for k, _ in _EXPLAINERS)}), "
                       f"received {type(result).__name__}")
