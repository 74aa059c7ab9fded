"""NCCL's per-peer schedule of alltoall, alltoallv, gather, scatter and sendrecv, and the MoE
dispatch built on it: the plan by hand on 2, 8 and 16 GPUs, closed forms, invariants, every error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import topo
import models
from models.engine.fabric import PreparedFabric
from models.engine.nccl.p2p_plan import (P2pPlanError, channel_base, channel_for_part, p2p_channels, part_bytes,
                                         parts, peer_rounds, protocol)
from models.predict.alltoall import P2pError, alltoallv, gather, p2p_layout, scatter, sendrecv
from models.predict.collectives import estimate
from models.predict.dispatch import DispatchError, moe_dispatch, reach
from models.present.explain import explain

GB = 1e9
US = 1e-6
H100_GPU = 18 * 20.6 * GB  # NCCL's 18 NVLink 4 links of 20.6 GB/s out of a GPU (ncclTopoNVLinkBw sm90)


@pytest.fixture(scope="module")
def h100():
    return PreparedFabric(topo.build("dgxh100"))


@pytest.fixture(scope="module")
def two_h100():
    return PreparedFabric(topo.build("2xdgxh100"))


@pytest.fixture(scope="module")
def fabrics(h100, two_h100):
    """Prepared once for the module's property tests, by name."""
    return {"dgxh100": h100, "2xdgxh100": two_h100, "dgx2": PreparedFabric(topo.build("dgx2")),
            "gb200nvl72": PreparedFabric(topo.build("gb200nvl72"))}


# ------------------------------------------------------------------ the plan, by hand
def test_plan_on_8_gpus_of_a_dgx_h100(h100):
    """comm nChannels 32 (16 ring channels doubled); a peer over 18 NVLinks may take 2 x 18 = 36,
    so p2pnChannelsPerPeer = pow2Up(min(32, 36)) = 32; nChannelsMin halves while x 8 ranks > 4 x 32:
    32 -> 16. Chunk 512 KiB (one node, every path NVLink); round k sends to rank + k."""
    layout = p2p_layout(h100.nccl, topo.gpus(h100.G))
    p = layout.plan
    assert (p.nchannels, p.per_peer, p.min_per_peer, p.chunk, p.nnodes) == (32, 32, 16, 512 * 1024, 1)
    assert [layout.round_of(0, j) for j in range(8)] == list(range(8))
    assert layout.round_of(5, 2) == 5  # 5 + 5 = 10 = 2 mod 8
    # 1 MiB per rank: 128 KiB per peer, 2 parts of 64 KiB (minPart = 512 KiB / 8) on channels k, k + 16
    s = estimate(h100, "alltoall", 2**20).schedule
    assert [(r.index, r.parts, r.channels) for r in s.rounds[:2]] == [(1, 2, (1, 17)), (2, 2, (2, 18))]
    assert {r.hardware for r in s.rounds} == {"NVLINK"} and {r.protocol for r in s.rounds} == {"Simple"}


def test_plan_on_2_gpus(h100):
    """Two ranks: nChannelsMin stays 32 (32 x 2 <= 128); one round, to the other GPU."""
    layout = p2p_layout(h100.nccl, topo.select_gpus(h100.G, [0, 1]))
    assert (layout.plan.per_peer, layout.plan.min_per_peer) == (32, 32)
    s = estimate(h100, "alltoall", 2**30, [0, 1]).schedule
    assert len(s.rounds) == 1 and s.rounds[0].parts == 32  # 512 MiB to the peer: 32 parts of 16 MiB


def test_plan_on_16_gpus_of_two_dgx_h100(two_h100):
    """Across nodes: 2 channels per net peer bind p2pnChannelsPerPeer; chunk 128 KiB; rounds 0-7
    reach the own node (local deltas), 8-15 the other; the rounds of one node delta share their
    base channel (node delta x ceil(8 / 8) + local delta // 8)."""
    layout = p2p_layout(two_h100.nccl, topo.gpus(two_h100.G))
    p = layout.plan
    assert (p.nchannels, p.per_peer, p.min_per_peer, p.chunk, p.nnodes, p.local_ranks) == (32, 2, 2, 128 * 1024, 2, 8)
    assert layout.round_of(0, 9) == 9 and layout.round_of(9, 0) == 8 + 7  # node +1, local -1 = +7
    assert layout.hardware[:8] == ("NVLINK",) * 8 and layout.hardware[8:] == ("NET",) * 8
    assert [channel_base(k, 2, 8) for k in (1, 7, 8, 15)] == [0, 0, 1, 1]
    s = estimate(two_h100, "alltoall", 2**30).schedule
    assert [r.channels for r in s.rounds[6:9]] == [(0, 16), (1, 17), (1, 17)]


def test_plan_pieces_by_hand():
    c = p2p_channels(16, 1, 16, comm_nchannels=12, peer_nchannels=12, chunk=512 * 1024)  # a DGX-2
    assert (c.nchannels, c.per_peer, c.min_per_peer) == (16, 16, 4)
    assert [parts(c, b) for b in (1, 64 * 1024, 64 * 1024 + 1, 2**30)] == [1, 1, 2, 16]
    assert [channel_for_part(16, 5, p) for p in range(4)] == [5, 13, 9, 1]  # 5 + bitreverse(p, 4 bits)
    assert protocol(0) == "LL" and protocol(2**20) == "Simple"
    assert peer_rounds((0, 0, 1), (0, 1, 0))[2] == ((2, 2), (-1, -1), (0, 0))  # node 1 lacks local 1


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**26), st.sampled_from([(8, 1, 8, 32, 36, 1 << 19), (16, 2, 8, 32, 2, 1 << 17),
                                              (16, 1, 16, 12, 12, 1 << 19), (72, 1, 72, 32, 36, 1 << 19)]))
def test_part_bytes_is_the_largest_part_up_to_the_size(nbytes, shape):
    """part_bytes(b) = the largest part NCCL's split rule (parts) cuts from any b' <= b: checked at
    b and at the sizes where the rule's parts peak (each multiple of the part limits below b)."""
    nranks, nnodes, local, comm, peer, chunk = shape
    c = p2p_channels(nranks, nnodes, local, comm_nchannels=comm, peer_nchannels=peer, chunk=chunk)
    candidates = {nbytes} | {k * limit for limit in (c.min_part, c.max_part) for k in range(1, 2 * c.per_peer + 1)
                             if k * limit <= nbytes}
    assert part_bytes(c, nbytes) == max((-(-b // parts(c, b)) if b else 0) for b in candidates)


# ---------------------------------------------------------------- closed forms, then the fabric
def test_small_alltoall_is_base_plus_one_hop(h100):
    """1 KiB on 8 GPUs: 128 B per peer runs LL, one part a peer; round k on channel k (of 32), so the
    7 rounds run on 7 blocks at once, one batch each: Ring LL base 6.6 us + one NVLink LL hop 0.6 us."""
    s = estimate(h100, "alltoall", 1024).schedule
    assert [r.channels for r in s.rounds] == [(k,) for k in range(1, 8)]
    assert s.handshakes == pytest.approx((0.6 * US,)) and s.batches == 1
    assert s.latency == pytest.approx((6.6 + 0.6) * US)
    assert s.fill == 0


def test_more_rounds_than_channels_share_them(fabrics):
    """16 GPUs of a DGX-2 (one node, NVSwitch): p2pnChannels is the communicator's channels to a power of
    two; round k on channel k mod p2pnChannels. Where two rounds share a channel their works run in one
    batch (at most 8): still one hop."""
    s = estimate(fabrics["dgx2"], "alltoall", 1024).schedule
    assert len(s.rounds) == 15
    per_channel = {}
    for r in s.rounds:
        per_channel.setdefault(r.channels[0], []).append(r.index)
    assert max(-(-len(v) // 8) for v in per_channel.values()) == s.batches == len(s.handshakes)


def test_large_alltoall_is_the_gpus_nvlink_port(h100):
    """1 GiB: 7/8 of it leaves each GPU over its 18 x 20.6 GB/s; channels (32 x 30 GB/s) do not bind."""
    s = estimate(h100, "alltoall", 2**30).schedule
    assert s.link_time == pytest.approx(2**30 * 7 / 8 / H100_GPU, rel=1e-9)
    assert s.binding == "links"
    assert s.time == pytest.approx((8.4 + 3.4) * US + s.fill + s.link_time)


def test_scatter_is_the_roots_port(h100):
    """scatter of 64 MiB blocks from GPU 3: the root sends 7 blocks out of its NVLink port."""
    e = scatter(h100, 64 * 2**20, root=3)
    assert e.schedule.link_time == pytest.approx(7 * 64 * 2**20 / H100_GPU, rel=1e-9)
    g = gather(h100, 64 * 2**20, root=3)
    assert g.schedule.link_time == pytest.approx(e.schedule.link_time, rel=1e-9)
    assert explain(e).startswith("scatter on GPUs 0-7")


def test_sendrecv_matrix_is_the_estimate(h100):
    assert sendrecv(h100, 2**26).nccl_time == pytest.approx(float(estimate(h100, "sendrecv", 2**26).nccl_time))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 2**31))
def test_time_never_falls_with_size(fabrics, a, b):
    """Time never falls with size under one protocol. NCCL leaves LL for Simple above a per-peer
    threshold (a size rule, not a timing one), so just past it a larger message may be a little
    faster (dgxh100 alltoall, 65,544 B LL 20.55394 us vs 131,080 B Simple 20.55391 us)."""
    lo, hi = sorted((a, b))
    for system, collective in (("dgxh100", "alltoall"), ("2xdgxh100", "alltoall"), ("dgxh100", "sendrecv")):
        e = estimate(fabrics[system], collective, [lo, hi])
        if e.protocol[0] == e.protocol[1]:
            assert e.time[1] >= e.time[0] * (1 - 1e-12)  # the rounding of size / bandwidth
        else:  # across the switch: never more than a rounding's worth
            assert e.time[1] >= e.time[0] * (1 - 1e-3)


def test_time_may_fall_only_across_nccls_protocol_switch(fabrics):
    e = estimate(fabrics["dgxh100"], "alltoall", [65544, 131080])
    assert list(e.protocol) == ["LL", "Simple"] and e.time[1] < e.time[0]


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["dgxh100", "2xdgxh100", "dgx2"]), st.integers(1, 2**28))
def test_a_uniform_alltoallv_is_the_alltoall(fabrics, system, per_pair):
    G = fabrics[system]
    n = len(topo.gpus(G.G))
    m = np.full((n, n), per_pair)
    np.fill_diagonal(m, 0)
    v = alltoallv(G, m)
    e = estimate(G, "alltoall", per_pair * n)
    assert v.nccl_time == pytest.approx(float(e.nccl_time), rel=1e-9)
    assert v.time == pytest.approx(float(e.time), rel=1e-9)  # the same measurement terms


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["dgxh100", "2xdgxh100", "dgx2", "gb200nvl72"]), st.integers(1, 2**32))
def test_never_faster_than_a_gpus_port_or_its_nic(fabrics, system, size):
    """What leaves a GPU (S (n-1)/n) crosses its NVLink port at most at NCCL's figure for it;
    across hosts what goes to other hosts crosses its NIC at most at the port's."""
    G = fabrics[system]
    e = estimate(G, "alltoall", size)
    gpu = topo.gpus(G.G)[0]
    nvlink = sum(G.nccl.capacity(gpu, v) for v in G.G.adj[gpu] if G.G.adj[gpu][v]["kind"] == "nvlink")
    n = e.nranks
    assert float(e.nccl_time) >= size * (n - 1) / n / nvlink
    if system == "2xdgxh100":
        assert float(e.nccl_time) >= size / 2 / (400e9 / 8)


def test_large_sizes_stay_near_the_load_model(h100, two_h100):
    """At 1 GiB the schedule adds its rounds' latency and one chunk of fill to the link term:
    within 1 % of the concurrent-flow figures it replaced (2671.49 us and 10899.48 us)."""
    assert float(estimate(h100, "alltoall", 2**30).time) == pytest.approx(2671.49 * US, rel=0.01)
    assert float(estimate(two_h100, "alltoall", 2**30).time) == pytest.approx(10899.48 * US, rel=0.01)


# ------------------------------------------------------------------------------ dispatch
def test_dispatch_bytes_by_hand_on_two_hosts(two_h100):
    """16 experts on 16 GPUs (2 hosts of 8), top-2, 1000 tokens of 1024 bf16 values (2048 B).
    Flat: 2 copies per token, spread evenly: 4,096,000 B per GPU, half to the other host
    (2,048,000 B), 7/16 to the 7 other GPUs of its own (1,792,000 B).
    Hierarchical: a node is reached with 1 - C(8,2)/C(16,2) = 92/120, so 2 x 92/120 = 1.5333
    nodes a token; half of them remote: 2,048,000 x 1.5333 / 2 = 1,570,133 B by RDMA. A GPU is
    reached with 1 - C(15,2)/C(16,2) = 1/8: 2 GPUs a token. Forwarded: each RDMA token reaches
    (16 x 1/8) / 1.5333 = 120/92 GPUs of its node, 7/8 of them not the receiver: x 105/92;
    own-node: 7 other GPUs x 1/8 x 2,048,000 B."""
    d = moe_dispatch(two_h100, 1000, 1024, 2, 16)
    assert (d.nnodes, d.local_ranks) == (2, 8)
    assert d.nodes_per_token == pytest.approx(2 * 92 / 120) and d.gpus_per_token == pytest.approx(2.0)
    assert (d.flat.network_bytes, d.flat.nvlink_bytes) == (2_048_000, 1_792_000)
    rdma = 2_048_000 * (2 * 92 / 120) / 2
    assert d.hierarchical.network_bytes == pytest.approx(rdma)
    assert d.hierarchical.nvlink_bytes == pytest.approx(rdma * 105 / 92 + 7 / 8 * 2_048_000)
    assert d.hierarchical.network_rate == 48e9  # NCCL's NDR port figure
    assert d.hierarchical.bottleneck == "network" and d.faster == "hierarchical"
    assert d.time == d.best.time == d.hierarchical.time < d.flat.time
    assert "hierarchical" in explain(d) and d.to_records()[1]["schedule"] == "hierarchical"


def test_node_limited_routing_reaches_fewer_nodes():
    assert reach(256, 8, 8, 8, 4)[0] < reach(256, 8, 8, 8)[0] <= 8
    assert reach(64, 8, 1, 8)[0] == pytest.approx(1.0)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("matrix, words", [
    ([[0, 1], [1, 0]], "expected an 8 x 8 matrix of bytes (one row and column per rank), received shape (2, 2)"),
    (np.full((8, 8), -1), "expected whole non-negative bytes, received -1.0"),
    (np.full((8, 8), 0.5), "expected whole non-negative bytes, received 0.5"),
    ("eight", "expected an 8 x 8 matrix of bytes"),
])
def test_bad_matrices(h100, matrix, words):
    with pytest.raises(P2pError, match=words.replace("(", r"\(").replace(")", r"\)")):
        alltoallv(h100, matrix)


@pytest.mark.parametrize("call, words", [
    (lambda G: gather(G, 10, root=9), r"expected a root among the GPUs \[0, 1, 2, 3, 4, 5, 6, 7\], received 9"),
    (lambda G: scatter(G, -1), "expected whole non-negative bytes per rank, received -1"),
    (lambda G: sendrecv(G, 1.5), "expected whole non-negative bytes, received 1.5"),
    (lambda G: alltoallv(G, [[0]], gpus=[0]), r"alltoallv needs at least 2 GPUs, received \[0\]"),
    (lambda G: moe_dispatch(G, 10, 10, 9, 8), "expected top_k at most the 8 experts, received 9"),
    (lambda G: moe_dispatch(G, 10, 10, 2, 12), "expected experts a multiple of the 8 GPUs"),
    (lambda G: moe_dispatch(G, 0, 10, 2, 8), "expected tokens a whole number >= 1, received 0"),
    (lambda G: moe_dispatch(G, 10, 10, 2, 8, node_limit=2), "expected node_limit from 1 to the 1 nodes, received 2"),
    (lambda G: moe_dispatch(G, 10, 10, 2, 8, dtype_bytes=True), "expected dtype_bytes a whole number"),
])
def test_bad_requests(h100, call, words):
    with pytest.raises(P2pError, match=words):
        call(h100)


def test_top_k_beyond_the_experts_of_the_limited_nodes(two_h100):
    with pytest.raises(DispatchError, match="expected top_k at most the 8 experts of 1 node"):
        moe_dispatch(two_h100, 10, 10, 9, 16, node_limit=1)


@pytest.mark.parametrize("call, words", [
    (lambda: p2p_channels(0, 1, 1, comm_nchannels=1, peer_nchannels=1, chunk=1), "nranks must be an integer >= 1"),
    (lambda: p2p_channels(2, 1, 4, comm_nchannels=1, peer_nchannels=1, chunk=1), "expected at most 2 local ranks"),
    (lambda: peer_rounds((0, 0), (0,)), "received 2 and 1"),
    (lambda: peer_rounds((0, 0), (0, 0)), "received a repeat"),
    (lambda: peer_rounds((0, 2), (0, 0)), r"expected nodes numbered 0-2, received \[0, 2\]"),
])
def test_bad_plans(call, words):
    with pytest.raises(P2pPlanError, match=words):
        call()


def test_explain_shows_the_schedule(two_h100):
    text = explain(estimate(two_h100, "alltoall", 2**20))
    for needle in ("p2p schedule", "32 p2p channels, up to 2 per peer", "chunk 131072 B",
                   "round   8 (node +1, local +0): NET", "channels bind"):
        assert needle in text
    assert models.estimate(two_h100, "alltoall", 2**20).schedule is not None


# ------------------------------------------------------------------------- the command line
def test_collective_alltoall_explain_prints_the_schedule(capsys):
    from models.present.cli import main

    assert main(["collective", "alltoall", "--system", "dgxh100", "-b", "1K", "-e", "1G", "-f", "1024",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip() and line.strip()[0].isdigit()]
    assert [(r[0], r[-2], r[-1]) for r in rows] == [("1024", "LL", "32"), ("1048576", "Simple", "32"),
                                                    ("1073741824", "Simple", "32")]
    assert "up to 32 per peer (16 before splitting further), chunk 524288 B" in out
    assert "round   7 (node +0, local +7): NVLINK Simple 134217728 B on 16 channel(s)" in out


@pytest.mark.parametrize("argv, message", [
    (["collective", "alltoall", "--system", "dgxh100", "--algo", "ring"],
     "alltoall runs as point-to-point sends: expected no algorithm or protocol, received 'ring'/None"),
    (["collective", "sendrecv", "--system", "dgxh100", "--proto", "LL"],
     "sendrecv runs as point-to-point sends: expected no algorithm or protocol, received None/'LL'"),
])
def test_bad_p2p_requests_are_one_line_and_exit_2(capsys, argv, message):
    from models.present.cli import main

    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err


def test_network_rounds_of_a_batch_share_one_handshake(two_h100, h100):
    """2 DGX H100 at 1 KiB (LL): Ring LL base 6.6 us; the 7 NVLink rounds share base channel 0 (one
    batch of 7 works, 0.6 us), the 8 rounds to the other node base channel 1 (one batch of 8 works,
    one network hop of 2.7 us); the channels run at once, so the slower counts; the proxy's 8 sends
    and 8 receives to the other node, LL, 1 us each (getNetOverhead, Intel), one after another."""
    s = estimate(two_h100, "alltoall", 1024).schedule
    assert [r.base for r in s.rounds] == [0] * 7 + [1] * 8
    assert s.handshakes == pytest.approx([2.7 * US]) and s.channel == 1
    assert s.network_ops == 16 and s.proxy == pytest.approx(16 * US)
    assert s.latency == pytest.approx((6.6 + 2.7 + 16) * US)
    assert s.latency > estimate(h100, "alltoall", 1024).schedule.latency  # more than one node's 8 GPUs


# ------------------------------------------------------------------- the host's tasks, the proxy
@pytest.mark.parametrize("system, vendor, per_task", [("dgxh100", "intel", 1.0), ("dgxa100", "amd", 2.0),
                                                       ("gb200nvl72", "other", 1.0)])
def test_alltoall_host_pays_each_task_beyond_the_first(system, vendor, per_task):
    """nccl-tests' alltoall posts a send and a receive per rank, itself included: 2n tasks; the
    host pays getNetOverhead (LL: 1 us Intel, 2 us AMD, 1 us other; src/graph/tuning.cc) for each
    of the 2n - 1 beyond the one the fitted launch holds, per GPU it drives (-g)."""
    from models.predict.alltoall import cpu_vendor
    from models.predict.measure import DEFAULT

    G = topo.build(system)
    gpus = [0, 1, 2, 3]
    assert cpu_vendor(G, topo.select_gpus(G, [0])[0]) == vendor
    e = estimate(G, "alltoall", 1024, gpus)
    assert e.schedule.tasks == 8 and e.schedule.enqueue == pytest.approx(7 * per_task * US)
    for g in (1, 4):
        m = models.measured(e, G, gpus_per_thread=g)
        assert m.host_time == pytest.approx(g * (DEFAULT.launch_per_gpu + 7 * per_task * US))
        assert m.time >= m.host_time


def test_sendrecv_and_rooted_tasks_by_hand(h100):
    """sendrecv: a send and a receive a rank, no copy to itself (1 task beyond the first); gather on
    8 GPUs: the root's 7 receives and its copy to itself, 9 tasks; one node, no proxy."""
    s = sendrecv(h100, 4096).schedule
    assert s.tasks == 2 and s.enqueue == pytest.approx(1 * US) and s.proxy == 0
    g = gather(h100, 4096, root=3).schedule
    assert g.tasks == 9 and g.enqueue == pytest.approx(8 * US) and g.network_ops == 0


def test_proxy_work_is_per_network_op_and_protocol(two_h100):
    """At 1 MiB on 2 DGX H100 every peer takes 64 KiB, Simple: the proxy's 16 network ops cost
    3 x getNetOverhead each (48 us); a large alltoall's time grows by that and nothing else."""
    small = estimate(two_h100, "alltoall", 2**20).schedule
    assert all(r.protocol == "Simple" for r in small.rounds)
    assert small.network_ops == 16 and small.proxy == pytest.approx(48 * US)


@settings(max_examples=15, deadline=None)
@given(nbytes=st.integers(1, 2**24))
def test_alltoallv_of_equal_counts_is_alltoall(h100, nbytes):
    """alltoallv with every off-diagonal entry S/n equals nccl-tests' alltoall of S: same schedule
    terms, same measured time (host tasks included)."""
    n = 8
    per = nbytes
    m = np.full((n, n), per)
    v = alltoallv(h100, m)
    e = estimate(h100, "alltoall", per * n)
    assert v.schedule.latency == pytest.approx(e.schedule.latency)
    assert v.schedule.enqueue == pytest.approx(e.schedule.enqueue)
    assert v.time == pytest.approx(float(e.time), rel=1e-9)
