"""The simulator: known answers (the estimate alone, disjoint and shared links, overlap, what-ifs),
max-min fairness invariants, task-graph validation and its errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from topo.inputs import InputFileError
from models.engine.fabric import PreparedFabric
from models.predict.collectives import COLLECTIVE_NAMES, LimitError, estimate
from models.predict.decompose import DecomposeError, Decomposer
from models.predict.flows import FlowError, max_min_share
from models.predict.simulate import TaskGraphError, read_task_graph, simulate, simulation_size, task_graph
from models.present.json_shapes import task_graph_json

MiB = 2**20
# 8 B to 8 GiB, x8 apart.
SIZES = [8 * 8**k for k in range(11)] + [8 * 2**30]


def _one(op, gpus, nbytes):
    return task_graph({"tasks": [{"id": "x", "op": op, "gpus": list(gpus), "bytes": nbytes}]})


def _phases(G, collective, nbytes, gpus):
    """(start-up, data phase) of a collective alone: the estimate's time split as it measures it."""
    e = estimate(G, collective, nbytes, gpus)
    startup = float(e.measurement.startup)
    return startup, float(e.time) - startup


# ------------------------------------------------------------------ the estimate, alone
@pytest.mark.parametrize("system", sorted(topo.SYSTEMS) + ["2xdgxh100"])
def test_a_lone_collective_takes_its_estimate(system):
    """Every collective alone on an idle fabric, 8 B to 8 GiB: the simulated time is the estimate's."""
    G = topo.build(system)
    n = len(topo.gpus(G))
    gpus = list(range(n)) if n <= 16 else list(range(8))  # a GB200 rack: two trays
    d = Decomposer(G)
    # The expected times from a fabric of their own, prepared once for every collective (their
    # channel searches shared), not the decomposer's.
    fabric = PreparedFabric(topo.build(system))
    for collective in COLLECTIVE_NAMES:
        d.prepare((collective, tuple(gpus), s) for s in SIZES)  # one estimate for every size
        expected = estimate(fabric, collective, SIZES, gpus).time
        for size, want in zip(SIZES, expected):
            got = simulate(G, _one(collective, gpus, size), decomposer=d).step_time
            assert got == pytest.approx(want, rel=1e-9), (collective, size)


def test_a_send_takes_the_sendrecv_estimate():
    G = topo.build("2xdgxh100")
    graph = task_graph({"tasks": [{"id": "s", "op": "send", "src": 0, "dst": 9, "bytes": 64 * MiB}]})
    assert simulate(G, graph).step_time == pytest.approx(
        float(estimate(G, "sendrecv", 64 * MiB, [0, 9]).time), rel=1e-9)


# ------------------------------------------------------------------ concurrency, closed forms
def test_collectives_on_links_they_do_not_share_keep_their_time():
    G = topo.build("dgxh100")  # every GPU has its own links to the switches
    graph = task_graph({"tasks": [
        {"id": "a", "op": "all_gather", "gpus": [0, 1, 2, 3], "bytes": 256 * MiB},
        {"id": "b", "op": "all_gather", "gpus": [4, 5, 6, 7], "bytes": 256 * MiB}]})
    r = simulate(G, graph)
    alone = float(estimate(G, "all_gather", 256 * MiB, [0, 1, 2, 3]).time)
    assert r.task("a").end == pytest.approx(alone, rel=1e-9)
    assert r.task("b").end == pytest.approx(alone, rel=1e-9)


def test_two_sends_through_one_nic_split_it_as_max_min_fairness_says():
    """GPUs 0 and 1 of a DGX-1V share a PCIe switch and its NIC. A send to the other host moves at
    NCCL's PCIe gen3 x16 figure, 12 GB/s, so alone it fills the switch's link to the NIC (1) and
    the 100 Gb/s EDR port (12.5 GB/s) to 12 / 12.5 = 0.96. Two such sends split the PCIe link:
    each runs at half its speed, and both end at start-up + 2 x data."""
    G = topo.build("2xdgx1v")
    s0 = Decomposer(G).send(0, 8, 256 * MiB)
    usage = {G.edges[e]["kind"]: round(float(u), 9) for e, u in zip(s0.edges, s0.usage)}
    assert usage == {"pcie": 1.0, "network": 0.96}
    startup, data = _phases(G, "sendrecv", 256 * MiB, [0, 8])
    graph = task_graph({"tasks": [{"id": "a", "op": "send", "src": 0, "dst": 8, "bytes": 256 * MiB},
                                  {"id": "b", "op": "send", "src": 1, "dst": 9, "bytes": 256 * MiB}]})
    r = simulate(G, graph)
    assert r.task("a").end == pytest.approx(startup + 2 * data, rel=1e-9)
    assert r.task("b").end == pytest.approx(startup + 2 * data, rel=1e-9)


def test_a_send_through_an_intel_root_complex_fills_its_pcie_links():
    """A DGX-1V without the NVLink of GPUs 0 and 2: a send between them crosses the CPU's root
    complex (PHB), where NCCL charges PCIe hops 6/5 (Intel P2P overhead), and the estimate prices
    the send at that charge. The send then fills its PCIe links (1), not 5/6 of them, so two
    such sends halve each other."""
    G = topo.dgx1v()
    for u, v in (("gpu0", "gpu2"), ("gpu2", "gpu0")):
        G.remove_edge(u, v)
    steps = Decomposer(G).send(0, 2, 256 * MiB)
    assert [G.edges[e]["kind"] for e in steps.edges] == ["pcie"] * 4
    assert steps.usage.tolist() == pytest.approx([1.0] * 4)
    startup, data = _phases(G, "sendrecv", 256 * MiB, [0, 2])
    r = simulate(G, task_graph({"tasks": [
        {"id": "a", "op": "send", "src": 0, "dst": 2, "bytes": 256 * MiB, "stream": "one"},
        {"id": "b", "op": "send", "src": 0, "dst": 2, "bytes": 256 * MiB, "stream": "two"}]}))
    assert r.task("b").end == pytest.approx(startup + 2 * data, rel=1e-9)


def test_an_alltoall_across_hosts_fills_the_edge_its_estimate_binds_on():
    """Four DGX H100: the alltoall's flows are those the estimate charged (grouped per NIC, not
    routed pair by pair), so alone it fills exactly the edge that binds its estimate, and no
    edge beyond it."""
    G = topo.build("4xdgxh100")
    e = estimate(G, "alltoall", 64 * MiB)
    steps = Decomposer(G).collective("alltoall", 64 * MiB, range(32))
    usage = dict(zip(steps.edges, steps.usage.tolist()))
    (worst,) = e.bottleneck
    assert usage[tuple(worst[:2])] == pytest.approx(1.0)
    assert max(usage.values()) == pytest.approx(1.0)
    assert {G.edges[edge]["kind"] for edge in usage} == {"nvlink", "pcie", "network"}


def test_a_shorter_flow_on_a_shared_bottleneck_frees_it_for_the_longer():
    """Two identical paths that both fill their bottleneck: half each while both run, then the
    rest alone, so the small ends at startup + 2 T_small and the large at startup + T_small + T_large."""
    G = topo.build("2xdgx1v")
    d = Decomposer(G)
    small, large = d.send(0, 8, 64 * MiB), d.send(0, 8, 256 * MiB)
    assert max(small.usage) == pytest.approx(1.0)
    graph = task_graph({"tasks": [
        {"id": "small", "op": "send", "src": 0, "dst": 8, "bytes": 64 * MiB, "stream": "one"},
        {"id": "large", "op": "send", "src": 0, "dst": 8, "bytes": 256 * MiB, "stream": "two"}]})
    r = simulate(G, graph, decomposer=d)
    assert r.task("small").end == pytest.approx(small.startup + 2 * small.transfer, rel=1e-9)
    assert r.task("large").end == pytest.approx(large.startup + small.transfer + large.transfer, rel=1e-9)


def test_two_rings_on_the_same_nvlinks_halve_each_other():
    """NCCL's 8-GPU rings on a DGX-1V cross every NVLink of the cube mesh at NCCL's full figure
    (6 channels, each NVLink of a pair reserved by as many channels as it has links), so two
    all_reduces of two communicators on the 8 GPUs each get half of every link: both data phases
    take twice as long, and both end at start-up + 2 x data."""
    G = topo.build("dgx1v")
    startup, data = _phases(G, "all_reduce", 256 * MiB, list(range(8)))
    r = simulate(G, task_graph({"tasks": [
        {"id": "a", "op": "all_reduce", "gpus": list(range(8)), "bytes": 256 * MiB, "stream": "one"},
        {"id": "b", "op": "all_reduce", "gpus": list(range(8)), "bytes": 256 * MiB, "stream": "two"}]}))
    assert r.task("a").end == pytest.approx(startup + 2 * data, rel=1e-9)
    assert r.task("b").end == pytest.approx(startup + 2 * data, rel=1e-9)


def test_every_nic_port_is_charged_once_on_every_host():
    """Two DGX H100, ring all_gather on the 16 GPUs: NCCL's 16 channels of 24 GB/s leave and enter
    each host by its 8 NICs, two channels per port each way, so every 400 Gb/s port (50 GB/s) is
    filled 2 x 24 / 50 = 0.96 alone, on both hosts (the searched host's ports used to count twice)."""
    G = topo.build("2xdgxh100")
    steps = Decomposer(G).collective("all_gather", 2**30, range(16))
    ports = [u for (a, b), u in zip(steps.edges, steps.usage) if G.edges[a, b]["kind"] == "network"]
    assert len(ports) == 32 and ports == pytest.approx([0.96] * 32)


def test_tree_edges_carry_the_algorithm_bandwidth_each_way():
    """Four DGX H100, all_reduce of 32 MiB: NCCL runs Tree/LL128 on 16 channels of 24 GB/s, busBw
    16 x 24 x 0.92 x 120/128 = 331.2 GB/s and algBw half of it. Every tree edge between nodes
    carries the reduction up and the broadcast down, each at algBw / 16 = 10.35 GB/s per channel,
    on the wire x 16/15 (LL128 lines). A port of a node that is inner in one tree and a leaf in the
    other carries 4 connections each way, 4 x 10.35 x 16/15 / 50 = 0.8832 of its 50 GB/s; the
    others 2. The network then gives the tree all it asks, as the estimate's network load says."""
    G = topo.build("4xdgxh100")
    e = estimate(G, "all_reduce", 32 * MiB)
    assert (e.algorithm, e.protocol, int(e.nchannels)) == ("tree", "LL128", 16)
    assert float(e.measurement.network_factor) == 1.0
    steps = Decomposer(G).collective("all_reduce", 32 * MiB, range(32))
    ports = [u for (a, b), u in zip(steps.edges, steps.usage) if G.edges[a, b]["kind"] == "network"]
    per_connection = 331.2e9 / 2 / 16 * 16 / 15 / 50e9
    assert sorted(set(np.round(ports, 9))) == pytest.approx([2 * per_connection, 4 * per_connection])


def test_a_ring_and_a_tree_share_the_nic_paths_as_max_min_fairness_says():
    """Four DGX H100: a ring all_gather of 1 GiB and a tree all_reduce of 32 MiB (above) on the 32
    GPUs, on two streams. Both cross each GPU's PCIe path to its NIC, the ring at NCCL's full
    figure (2 channels x 24 GB/s of the 48 GB/s NCCL counts for PCIe gen5 x16: 1), the tree at
    0.92 of it (its busBw cap; LL128's 120/128 payload and 16/15 wire cancel). Progressive filling
    gives each half of those links: the ring runs at 1/2, the tree at 0.5 / 0.92 while both move
    data (every other link then has room). The tree's data starts first and runs alone until the
    ring's start-up ends."""
    G = topo.build("4xdgxh100")
    gpus = list(range(32))
    s_tree, t_tree = _phases(G, "all_reduce", 32 * MiB, gpus)
    s_ring, t_ring = _phases(G, "all_gather", 2**30, gpus)
    x_tree, x_ring = 0.5 / 0.92, 0.5
    left = t_tree - (s_ring - s_tree)  # the tree's data left when the ring's begins
    tree_end = s_ring + left / x_tree
    ring_end = tree_end + t_ring - left / x_tree * x_ring
    r = simulate(G, task_graph({"tasks": [
        {"id": "tree", "op": "all_reduce", "gpus": gpus, "bytes": 32 * MiB, "stream": "one"},
        {"id": "ring", "op": "all_gather", "gpus": gpus, "bytes": 2**30, "stream": "two"}]}))
    assert (r.task("tree").algorithm, r.task("ring").algorithm) == ("tree", "ring")
    assert r.task("tree").end == pytest.approx(tree_end, rel=1e-9)
    assert r.task("ring").end == pytest.approx(ring_end, rel=1e-9)


def test_alltoall_beside_all_reduce_split_the_switch_links():
    """One DGX H100: alltoall (the point-to-point model prices it at its busiest links, every GPU's
    NVLinks to the switches: usage 1) beside an NVLS all_reduce (8 channels of 40 GB/s and the
    head's own, (8 + 1) x 40 = 360 GB/s of the 18 x 20.6 = 370.8 GB/s NCCL counts per GPU). Each
    gets half of those links: the alltoall at 1/2, the all_reduce at 0.5 x 370.8 / 360."""
    G = topo.build("dgxh100")
    gpus = list(range(8))
    s_a2a, t_a2a = _phases(G, "alltoall", 256 * MiB, gpus)
    s_ar, t_ar = _phases(G, "all_reduce", 2**30, gpus)
    x_a2a, x_ar = 0.5, 0.5 * 370.8 / 360
    a2a_end = s_a2a + t_a2a / x_a2a
    ar_end = a2a_end + t_ar - (s_a2a - s_ar) - t_a2a / x_a2a * x_ar  # alone before and after
    r = simulate(G, task_graph({"tasks": [
        {"id": "a2a", "op": "alltoall", "gpus": gpus, "bytes": 256 * MiB, "stream": "one"},
        {"id": "ar", "op": "all_reduce", "gpus": gpus, "bytes": 2**30, "stream": "two"}]}))
    assert r.task("ar").algorithm == "nvls"
    assert r.task("a2a").end == pytest.approx(a2a_end, rel=1e-9)
    assert r.task("ar").end == pytest.approx(ar_end, rel=1e-9)


def test_compute_and_an_independent_collective_overlap_to_the_longer():
    G = topo.build("dgxh100")
    alone = float(estimate(G, "all_reduce", 512 * MiB).time)
    for seconds in (alone / 3, 3 * alone):
        graph = task_graph({"tasks": [
            {"id": "ar", "op": "all_reduce", "gpus": list(range(8)), "bytes": 512 * MiB},
            {"id": "mm", "op": "compute", "gpus": list(range(8)), "seconds": seconds}]})
        r = simulate(G, graph, sm_share=False)
        assert r.step_time == pytest.approx(max(seconds, alone), rel=1e-9)
        assert r.critical_path == (("ar",) if alone > seconds else ("mm",))


@pytest.mark.parametrize("collective, blocks", [
    ("all_reduce", 16),  # NVLS: NCCL's 16 NVLS channels on sm90, not the graph's 8 heads
    ("all_gather", 24),  # Ring: the graph's 12 channels, doubled by ncclTopoPostset
])
def test_nccl_blocks_slow_compute_by_their_share_of_the_sms(collective, blocks):
    """A kernel of C seconds beside a collective of T seconds holding b blocks of an H100's 132 SMs
    (H100 SXM5, NVIDIA H100 Tensor Core GPU architecture whitepaper): it runs at 1 - b/132 while
    the collective runs, so it ends at C + T b / 132."""
    G = topo.build("dgxh100")
    startup, data = _phases(G, collective, 512 * MiB, list(range(8)))
    seconds = 5 * (startup + data)
    graph = task_graph({"tasks": [
        {"id": "comm", "op": collective, "gpus": list(range(8)), "bytes": 512 * MiB},
        {"id": "mm", "op": "compute", "gpu": 3, "seconds": seconds}]})
    r = simulate(G, graph)
    assert r.task("mm").end == pytest.approx(seconds + (startup + data) * blocks / 132, rel=1e-9)
    assert r.task("comm").end == pytest.approx(startup + data, rel=1e-9)  # NCCL keeps its blocks


def test_dependencies_and_streams_order_tasks():
    G = topo.build("dgx1v")
    graph = task_graph({"tasks": [
        {"id": "a", "op": "compute", "gpu": 0, "seconds": 1.0},
        {"id": "b", "op": "compute", "gpu": 0, "seconds": 2.0},  # same compute stream: after a
        {"id": "c", "op": "compute", "gpu": 1, "seconds": 0.5, "after": ["b"]}]})
    r = simulate(G, graph)
    assert (r.task("b").start, r.task("c").start, r.step_time) == (1.0, 3.0, 3.5)
    assert r.critical_path == ("a", "b", "c")
    assert r.exposed_comm == 0


def test_when_two_tasks_want_one_freed_stream_the_earlier_in_graph_order_starts():
    # a and b end together and free both compute streams at once; m (gpu 1 only) and k (gpus 0
    # and 1) both want gpu 1's stream: the earlier task, m, must win whatever order the freed
    # streams come in (it once followed the set's string hashing, so PYTHONHASHSEED decided)
    graph = task_graph({"tasks": [
        {"id": "a", "op": "compute", "gpu": 0, "seconds": 1.0},
        {"id": "b", "op": "compute", "gpu": 1, "seconds": 1.0},
        {"id": "m", "op": "compute", "gpu": 1, "seconds": 1.0, "after": ["a"]},
        {"id": "k", "op": "compute", "gpus": [0, 1], "seconds": 1.0, "after": ["a"]}]})
    r = simulate(topo.build("dgx1v"), graph)
    assert (r.task("m").start, r.task("k").start, r.step_time) == (1.0, 2.0, 3.0)


@pytest.mark.parametrize("change", ["remove", "halve"])
def test_a_what_if_link_changes_the_simulation_as_it_changes_the_estimate(change):
    G = topo.dgx1v()
    H = G.copy()
    for u, v in (("gpu0", "gpu3"), ("gpu3", "gpu0")):
        if change == "remove":
            H.remove_edge(u, v)
        else:
            H.edges[u, v]["bandwidth"] /= 2
            H.edges[u, v]["links"] = 1
    gpus = [0, 1, 2, 3]
    before = simulate(G, _one("all_reduce", gpus, 256 * MiB)).step_time
    after = simulate(H, _one("all_reduce", gpus, 256 * MiB)).step_time
    assert after == pytest.approx(float(estimate(H, "all_reduce", 256 * MiB, gpus).time), rel=1e-9)
    assert after > before


@pytest.mark.parametrize("change", ["remove", "halve"])
def test_a_what_if_on_one_host_of_a_cluster_changes_that_host_only(change):
    """Two DGX H100, one NVLink bundle of h1 removed or halved: an all_gather on each host takes
    its own host's estimate (h1 used to borrow h0's decomposition: h0's time, or links h1 does
    not have)."""
    G = topo.build("2xdgxh100")
    for u, v in (("h1.gpu0", "h1.nvswitch0"), ("h1.nvswitch0", "h1.gpu0")):
        if change == "remove":
            G.remove_edge(u, v)
        else:
            G.edges[u, v]["bandwidth"] /= 2
            G.edges[u, v]["links"] = 2
    r = simulate(G, task_graph({"tasks": [
        {"id": "h0", "op": "all_gather", "gpus": list(range(8)), "bytes": 2**30},
        {"id": "h1", "op": "all_gather", "gpus": list(range(8, 16)), "bytes": 2**30}]}))
    h0, h1 = (float(estimate(G, "all_gather", 2**30, gpus).time) for gpus in (range(8), range(8, 16)))
    assert h1 > h0
    assert (r.task("h0").end, r.task("h1").end) == (pytest.approx(h0, rel=1e-9), pytest.approx(h1, rel=1e-9))


def test_link_means_account_for_every_byte():
    """A link's mean share x step = the share it carries alone x the flow's alone transfer time."""
    G = topo.build("dgxh100")
    d = Decomposer(G)
    steps = d.collective("all_reduce", 2**30, range(8))
    r = simulate(G, _one("all_reduce", range(8), 2**30), decomposer=d)
    link = r.links[0]
    alone = float(steps.usage[steps.edges.index(link.edge)])
    assert link.mean * r.step_time == pytest.approx(alone * steps.transfer, rel=1e-9)
    assert link.peak == pytest.approx(alone)
    edges, starts, ends, shares = r.link_series([link.edge])
    assert float(np.sum(shares[0] * (ends - starts))) == pytest.approx(alone * steps.transfer, rel=1e-9)


def test_records_and_json():
    G = topo.build("dgxh100")
    r = simulate(G, task_graph({"tasks": [
        {"id": "a", "op": "reduce", "gpus": [0, 1, 2], "bytes": MiB, "root": 2, "kind": "dp_comm"},
        {"id": "b", "op": "compute", "gpu": 0, "seconds": 1e-3, "after": ["a"]}]}))
    records = r.to_records()
    assert [x["id"] for x in records] == ["a", "b"]
    assert records[1]["start_s"] == pytest.approx(records[0]["end_s"])
    assert r.critical_by_kind() == {"dp_comm": pytest.approx(records[0]["end_s"]), "compute": pytest.approx(1e-3)}
    assert r.busy_by_kind() == r.critical_by_kind()


# ------------------------------------------------------------------ max-min fairness
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_max_min_shares_are_feasible_and_each_flow_has_a_bottleneck(n_flows, n_links, data):
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n_flows - 1), st.integers(0, n_links - 1)),
                               min_size=1, max_size=12, unique=True))
    usage = data.draw(st.lists(st.floats(0.05, 1.0), min_size=len(pairs), max_size=len(pairs)))
    flows = np.array([f for f, _ in pairs])
    links = np.array([l for _, l in pairs])
    usage = np.array(usage)
    x = max_min_share(n_flows, flows, links, usage)
    assert np.all(x > 0) and np.all(x <= 1 + 1e-12)
    load = np.bincount(links, weights=usage * x[flows], minlength=n_links)
    assert np.all(load <= 1 + 1e-9)
    # Max-min: a flow below its own speed crosses a full link on which no flow gets a larger share
    # of that link (progressive filling raises every flow's share of its busiest link alike).
    peak = np.zeros(n_flows)
    np.maximum.at(peak, flows, usage)
    for f in range(n_flows):
        if x[f] < 1 - 1e-9:
            mine = [l for g, l in zip(flows, links) if g == f]
            assert any(load[l] >= 1 - 1e-9 and all(
                peak[g] * x[g] <= peak[f] * x[f] + 1e-9 for g, k in zip(flows, links) if k == l) for l in mine)


def test_max_min_share_rejects_bad_arrays():
    with pytest.raises(FlowError, match="one length"):
        max_min_share(1, [0], [0, 1], [0.5])
    with pytest.raises(FlowError, match=r"in \[0, 1\]"):
        max_min_share(1, [0], [0], [1.5])
    with pytest.raises(FlowError, match="flow indices"):
        max_min_share(1, [3], [0], [0.5])


# ------------------------------------------------------------------ task graphs: errors
@pytest.mark.parametrize("task, field, message", [
    ({"op": "compute", "gpu": 0, "seconds": 1}, "id", "expected text"),
    ({"id": "a", "op": "fly", "gpu": 0}, "op", "expected one of"),
    ({"id": "a", "op": "compute", "gpu": 0}, "seconds", "exactly one of 'seconds' or 'flops'"),
    ({"id": "a", "op": "compute", "gpu": 0, "seconds": -1}, "seconds", "from 0 to 1e6"),
    ({"id": "a", "op": "compute", "gpu": 0, "seconds": 1, "flops": 5}, "seconds", "exactly one"),
    ({"id": "a", "op": "compute", "gpu": 0, "flops": 5, "dtype": "bf16"}, "flops", "compute model"),
    ({"id": "a", "op": "compute", "gpu": 99, "seconds": 1}, "gpu", "from 0 to 7"),
    ({"id": "a", "op": "compute", "gpu": 0, "gpus": [1], "seconds": 1}, "gpu", "exactly one of"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1]}, "bytes", "a size in bytes"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 0], "bytes": 8}, "gpus", "distinct"),
    ({"id": "a", "op": "all_reduce", "gpus": [], "bytes": 8}, "gpus", "non-empty"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 2**70}, "bytes", "whole number"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 1.5}, "bytes", "whole number"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 8, "root": 0}, "root", "does not apply"),
    ({"id": "a", "op": "broadcast", "gpus": [0, 1], "bytes": 8, "root": 5}, "root", "among the GPUs"),
    ({"id": "a", "op": "send", "src": 0, "dst": 0, "bytes": 8}, "dst", "other than the source"),
    ({"id": "a", "op": "send", "src": 0, "dst": 1, "bytes": 8, "gpus": [0]}, "gpus", "does not apply"),
    ({"id": "a", "op": "compute", "gpu": 0, "seconds": 1, "colour": 1}, "", "unknown field"),
    ({"id": "a", "op": "compute", "gpu": 0, "seconds": 1, "after": "b"}, "after", "a list"),
    ({"id": "a", "op": "compute", "gpu": 0, "seconds": 1, "after": ["zz"]}, "after", "unknown task"),
    ({"id": "a", "op": "compute", "gpu": 0, "seconds": 1, "after": ["a"]}, "after", "itself"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 8, "images": [[2, 3], [3, 4]]}, "images",
     "GPU 3 in two copies"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 8, "images": [[1, 2]]}, "images", "GPU 1 in two"),
    ({"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 8, "images": [[2]]}, "images", "2 GPUs like the task"),
    ({"id": "a", "op": "broadcast", "gpus": [0, 1], "bytes": 8, "root": 1, "images": [[2, 3]]}, "images",
     "cannot be folded"),
])
def test_bad_tasks_are_named_with_their_field(task, field, message):
    with pytest.raises(TaskGraphError, match=message) as error:
        task_graph({"tasks": [task]}, ngpus=8)
    assert error.value.field == field
    assert error.value.task == task.get("id", "#0")


def test_graph_level_errors():
    with pytest.raises(TaskGraphError, match="tasks"):
        task_graph({"task": []})
    with pytest.raises(TaskGraphError, match="does not parse"):
        task_graph("{oops")
    with pytest.raises(TaskGraphError, match="cycle"):
        task_graph({"tasks": [{"id": "a", "op": "compute", "gpu": 0, "seconds": 1, "after": ["b"]},
                              {"id": "b", "op": "compute", "gpu": 0, "seconds": 1, "after": ["a"]}]})
    with pytest.raises(TaskGraphError, match="earlier task"):
        task_graph({"tasks": [{"id": "a", "op": "compute", "gpu": 0, "seconds": 1}] * 2})
    with pytest.raises(TaskGraphError, match="top-level"):
        task_graph({"tasks": [], "extra": 1})
    with pytest.raises(LimitError, match="max_tasks=1"):
        task_graph({"tasks": [{"id": str(k), "op": "compute", "gpu": 0, "seconds": 1} for k in range(2)]},
                   max_tasks=1)
    with pytest.raises(TaskGraphError, match="does not parse"):  # nesting too deep for json
        task_graph("[" * 100000 + "]" * 100000)


def test_the_budget_counts_the_tasks_run_not_their_images():
    """Three events per task the simulator runs: a folded image (a replica in lockstep) is charged
    on the links within its task's events, and adds none."""
    G = topo.build("dgx1v")
    images = [[2, 3], [4, 5], [6, 7]]
    graph = task_graph({"tasks": [
        {"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 1 << 20, "images": images},
        {"id": "b", "op": "all_reduce", "gpus": [0, 1], "bytes": 1 << 20, "images": images, "after": ["a"]}]})
    assert simulation_size(graph) == 6 < 3 * sum(t.copies for t in graph.tasks)
    assert simulate(G, graph, max_events=6).step_time > 0
    with pytest.raises(LimitError) as error:
        simulate(G, graph, max_events=5)
    assert (error.value.keyword, error.value.size, error.value.limit) == ("max_events", 6, 5)


def test_simulation_errors():
    G = topo.build("dgx1v")
    graph = task_graph({"tasks": [{"id": "a", "op": "compute", "gpu": 12, "seconds": 1}]})
    with pytest.raises(TaskGraphError, match="GPU 12 is not on"):
        simulate(G, graph)
    graph = task_graph({"tasks": [{"id": str(k), "op": "compute", "gpu": 0, "seconds": 1} for k in range(4)]})
    with pytest.raises(LimitError, match="max_events=10") as error:
        simulate(G, graph, max_events=10)
    assert error.value.keyword == "max_events"
    with pytest.raises(DecomposeError, match="unknown collective"):
        Decomposer(G).collective("allreduce", 8, [0, 1])
    with pytest.raises(DecomposeError, match="two different GPUs"):
        Decomposer(G).send(1, 1, 8)


def test_flops_go_through_the_callers_compute_model():
    graph = task_graph({"tasks": [{"id": "a", "op": "compute", "gpus": [0, 1], "flops": 2e12, "dtype": "bf16"}]},
                       compute_time=lambda flops, dtype, gpus: flops / 1e15)
    assert graph.tasks[0].seconds == pytest.approx(2e-3)
    assert task_graph(task_graph_json(graph)) == graph


def test_reading_task_graph_files(tmp_path):
    """Through topo.inputs: regular files only (a FIFO cannot hang us), sized before reading."""
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"tasks": [{"id": "a", "op": "compute", "gpu": 0, "seconds": 1}]}))
    assert read_task_graph(path).tasks[0].id == "a"
    with pytest.raises(InputFileError, match="a directory"):
        read_task_graph(tmp_path)
    with pytest.raises(InputFileError, match="missing.json"):
        read_task_graph(tmp_path / "missing.json")
    with pytest.raises(InputFileError, match="raise it with --max-input"):
        read_task_graph(path, limit=10)
    path.write_text('{"tasks": [{"id": "a", "op": "compute", "gpu": 0, "seconds": NaN}]}')
    with pytest.raises(InputFileError, match="NaN"):
        read_task_graph(path)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        with pytest.raises(InputFileError, match="FIFO"):
            read_task_graph(fifo)


def test_state_belongs_to_the_call():
    """Two simulations of one graph give the same answer (nothing is kept between calls)."""
    G = topo.build("dgxh100")
    graph = _one("all_gather", range(8), 8 * MiB)
    assert simulate(G, graph).to_records() == simulate(G, graph).to_records()
