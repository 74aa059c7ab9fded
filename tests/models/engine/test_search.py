"""NCCL's channel search on the built-in fabrics: known structure and invariants."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from topo.cluster import network_nics
from models.predict.collectives import estimate
from tests.conftest import DATA
from models.engine.nccl import search
from models.engine.nccl.search import ChannelSearchError, SearchStep, search_channels, search_channels_in
from models.engine.nccl.system import NcclSystem, nccl_capacity
from models.engine.routes import PathType
from models.present.explain import explain, search_step_text

GB = 1e9


def test_dgx1v_eight_gpus_six_rings_of_20():
    """What NCCL's search finds on a DGX-1V (NVIDIA/nccl v2.27.7-1 src/graph/topo.h, src/graph/search.cc).

    NCCL charges a V100 NVLink 20 GB/s (SM70), so the doubled bundles are 40 (maxBw) and a
    GPU's six links 120 (totalBw). The search starts at the first speed <= 40: the doubled
    bundles form the 8-cycle 0-3-2-1-5-6-7-4, which holds one 40 GB/s ring in each direction
    (80 < 120, go on); at 30 the single links cannot carry a channel; at 20 every link
    carries one channel per link and direction: two rings each way on the doubled cycle and
    one each way on the single-link cycle 0-1-3-7-5-4-6-2 = 6 x 20 = 120 = totalBw, stop.
    20 < 25 GB/s, so ncclTopoDupChannels leaves them alone.
    """
    ring = search_channels(topo.dgx1v())
    assert (ring.nchannels, ring.bw_intra, ring.type_intra) == (6, 20 * GB, PathType.NVL)
    assert (ring.max_bw, ring.total_bw) == (40 * GB, 120 * GB)
    assert not ring.duplicated
    assert all(load.utilisation == pytest.approx(1.0) for load in ring.loads), "every NVLink is full"
    assert len(ring.loads) == 32  # all 16 bundles, both directions; no PCIe or QPI


def test_dgx1_p100_four_rings_of_18():
    """P100: NCCL charges 18 GB/s per NVLink (SM60); 4 links per GPU hold 4 rings (NVIDIA/nccl #299)."""
    ring = search_channels(topo.dgx1())
    assert (ring.nchannels, ring.bw_intra) == (4, 18 * GB)


def test_dgx2_six_links_worth_for_any_set():
    """NCCL sees one NVSwitch with 6 x 20 = 120 GB/s per GPU: 3 rings at 40, duplicated to 6 x 20."""
    for gpus in (None, [0, 1], [0, 8], [3, 9, 12], list(range(0, 16, 3))):
        ring = search_channels(topo.dgx2(), gpus)
        assert (ring.nchannels, ring.bw_intra, ring.type_intra) == (6, 20 * GB, PathType.NVL)
        assert ring.duplicated
        order = [g for g in ring.gpus]
        assert all(list(c) == order for c in ring.channels), "NVSwitch rings run in index order"


@pytest.mark.parametrize("pair, expected", [((0, 3), (2, 20 * GB, "NVL")),   # NV2: 1 x 40, duplicated
                                            ((0, 1), (1, 20 * GB, "NVL")),   # NV1
                                            ((0, 5), (1, 6 * GB, "SYS"))])   # no NVLink: QPI, 6 GB/s
def test_dgx1v_pairs(pair, expected):
    ring = search_channels(topo.dgx1v(), list(pair))
    assert (ring.nchannels, ring.bw_intra, ring.type_intra.name) == expected


def test_cross_socket_pair_is_bound_by_the_socket_link():
    ring = search_channels(topo.dgx1v(), [0, 5])
    assert ring.bottleneck == (("cpu0", "cpu1"), ("cpu1", "cpu0"))
    assert ring.loads[0].capacity == 6e9  # BDW_QPI_BW, NVIDIA/nccl v2.27.7-1 src/graph/topo.h


def test_relay_through_a_member_gpu_only():
    """NVB needs the intermediate GPU in the communicator (NCCL's system holds only its GPUs)."""
    with_relay = search_channels(topo.dgx1v(), [0, 1, 5])   # 0 -> 5 through 1
    assert with_relay.type_intra == PathType.NVB and with_relay.bw_intra == 20 * GB
    assert search_channels(topo.dgx1v(), [0, 5]).type_intra == PathType.SYS


def test_tree_graph_uses_the_ring_channel_count():
    tree = search_channels(topo.dgx1v(), pattern="balanced_tree")
    assert (tree.nchannels, tree.bw_intra) == (6, 20 * GB)
    assert tree.pattern == "balanced_tree"


def test_tree_search_skips_the_speeds_where_too_few_chains_fit():
    """DGX-1 (P100) GPUs 0-6, trees asked for the ring's 5 channels. At 10 GB/s and above each
    direction of an NVLink holds one channel (NCCL's 18 GB/s per P100 link); a chain leaves every
    GPU but its last, and GPU 7's four neighbours are left with three links in the set, so c
    chains need sum(max(0, c - out_i)) <= c ends: 4 x 1 = 4 <= 4 for c = 4, 4 x 2 + 3 x 1 = 11 > 5
    for c = 5. Those speeds are skipped (NCCL's search ran out of budget there with 3), and the
    answer is NCCL's: 5 chains of 9 GB/s."""
    tree = search_channels(topo.dgx1(), list(range(7)), pattern="balanced_tree", min_channels=5, max_channels=5)
    assert (tree.nchannels, tree.bw_intra, tree.type_intra) == (5, 9 * GB, PathType.NVL)
    skipped = [step for step in tree.trace if step.speed != 9 * GB]
    assert len(skipped) == 12 and all((s.kind, s.count) == ("skipped", 4) for s in skipped)
    assert tree.trace[-1] == SearchStep("attempt", speed=9 * GB, type_intra="NVL", count=5)
    assert search_step_text(tree.trace[-1]) == "9 GB/s, type NVL, free channels: 5 channel(s)"


def test_single_gpu():
    ring = search_channels(topo.dgx1v(), [2])
    assert ring.type_intra == PathType.LOC and all(c == ("gpu2",) for c in ring.channels)


def test_nccl_capacity_follows_the_profile():
    G = topo.dgx1v()
    assert nccl_capacity(G, "gpu0", "gpu3") == 40 * GB
    assert nccl_capacity(G, "gpu0", "gpu3", "2.12.12") == 44 * GB   # SM70 was 22 GB/s then
    assert nccl_capacity(G, "cpu0", "cpu1") == 6 * GB
    assert nccl_capacity(topo.dgx2(), "cpu0", "cpu1") == 10 * GB
    assert nccl_capacity(G, "pcie0", "gpu0") == 12 * GB


def check_channels(G, result):
    """Invariants of any search result."""
    members = set(result.gpus)
    for channel in result.channels:
        assert sorted(channel) == sorted(members), "a channel visits every GPU once"
    for load in result.loads:
        assert load.reserved <= load.capacity * (1 + 1e-9), f"{load.edge} over capacity"
    assert 1 <= result.nchannels <= 32


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_search_invariants_on_random_sets(data):
    system = data.draw(st.sampled_from(["dgx1", "dgx1v", "dgx2"]))
    G = topo.build(system)
    n = len(topo.gpus(G))
    gpus = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    result = search_channels(G, gpus)
    check_channels(G, result)
    shuffled = search_channels(G, list(reversed(gpus)))
    assert (shuffled.nchannels, shuffled.bw_intra, shuffled.channels) == \
        (result.nchannels, result.bw_intra, result.channels), "GPU order must not matter"


GOLDEN = json.loads((DATA / "search_golden.json").read_text())


def searched(fabric, gpus, ids, tree=True) -> list:
    """What tests/data/search_golden.json records of a set: ring (and tree) count, bwIntra, typeIntra."""
    nodes = [gpus[i] for i in ids]
    ring = search_channels_in(fabric, nodes)
    row = [ring.nchannels, ring.bw_intra, ring.type_intra.name]
    if tree and ring.nnodes == 1:
        chain = search_channels_in(fabric, nodes, pattern="balanced_tree", min_channels=ring.nchannels,
                                   max_channels=ring.nchannels)
        row += [chain.nchannels, chain.bw_intra, chain.type_intra.name]
    return row, ring


BUDGET_GOLDEN = json.loads((DATA / "search_budget_golden.json").read_text())


@pytest.mark.parametrize("case", BUDGET_GOLDEN, ids=lambda c: f"{c['system']}-{c['release']}-{c['pattern']}-"
                                                          f"{len(c['gpus'])}")
def test_searches_that_run_out_of_budget_replay_exactly(case):
    """Searches that run out of NCCL's step budget give what the search gave before it skipped
    subtrees it had already explored (tests/data/make_search_budget_golden.py, main at fc77501):
    the same channels, NICs and bandwidth, and the same trace line by line. What each attempt
    finds depends on the exact step at which its budget runs out, so a skipped subtree counted
    one step wrong, or a room left different in the last bit, changes a line; the cases cover
    rings and trees, with and without NVSwitches and NICs, restarts included."""
    G = topo.build(case["system"])
    result = search_channels_in(NcclSystem(G, case["release"]), case["gpus"], pattern=case["pattern"])
    assert result.timed_out == case["timed_out"] is True
    assert [list(c) for c in result.channels] == case["channels"]
    assert [list(n) for n in result.nets] == case["nets"]
    assert result.bw_intra == case["bw_intra"]
    assert [search_step_text(step) for step in result.trace] == case["trace"]


class _Unremembered(search._Dfs):
    """The DFS without its memo of explored states: every search below a closed channel is run."""

    def _next_channels(self, state, after):
        entry = self.entry
        status = self._start_channel()
        self.entry = entry
        return status


@pytest.mark.parametrize("case", [c for c in BUDGET_GOLDEN if c["system"] != "2xdgxa100"],
                         ids=lambda c: f"{c['system']}-{c['release']}-{c['pattern']}-{len(c['gpus'])}")
def test_the_memo_of_explored_states_takes_the_same_steps(case):
    """The DFS that skips a search below a closed channel it has run from an equal state
    (_Dfs._next_channels) ends with the same channels, the same step count, the same budget
    verdict and the same room left, to the last bit, as the DFS that runs every one: in every
    attempt from the highest speed down (a budget of 2^11 steps keeps them short) until two ran
    out of budget, where the count matters most. Private names: the step count is internal. (The
    2xdgxa100 case's first host has nothing to skip.)"""
    G = topo.build(case["system"])
    fabric = NcclSystem(G, case["release"])
    host = G.nodes[case["gpus"][0]]["host"]
    nodes = [n for n in case["gpus"] if G.nodes[n]["host"] == host]
    nets = tuple(network_nics(G, host)) if len(nodes) < len(case["gpus"]) else ()
    problem = search._build_problem(fabric, nodes, nets)
    cc = min(G.nodes[n]["compute_capability"] for n in nodes)
    type_inter = max(problem.net_types, default=PathType.PIX)
    budget, exhausted, remembered = 1 << 11, 0, 0
    for speed, type_intra in itertools.product(fabric.profile.speed_array(cc, inter=bool(nets)), problem.types):
        if exhausted == 2:
            break
        attempt = search._Attempt(speed, type_intra, type_inter, False, case["pattern"] == "ring", 16)
        plain, dfs = _Unremembered(problem, attempt, budget, 16), search._Dfs(problem, attempt, budget, 16)
        found = plain.run()
        assert dfs.run() == found
        assert (dfs.steps, dfs.remaining) == (plain.steps, plain.remaining)
        exhausted += found.timed_out
        remembered += sum(steps for _, after in dfs.states.values() for steps, _ in after.values())
    assert exhausted and remembered, "no search ran out of budget or none remembered one: the case tests nothing"


def ring_cut_bound(G, system, members) -> float:
    """An upper bound on ``nChannels x bwIntra`` of a ring, independent of the search.

    Every ring channel crosses every cut of the communicator's GPUs at least once in each
    direction, reserving bwIntra on an edge of the cut; NCCL's system holds only the members
    (a GPU outside cannot relay). So the ring bandwidth is at most the max-flow, at NCCL's
    capacities, from one member to each other and back, in the fabric without the other GPUs.
    """
    H = nx.DiGraph()
    for u, v, d in G.edges(data=True):
        if d["kind"] == "network" or any(G.nodes[x]["kind"] == "gpu" and x not in members for x in (u, v)):
            continue
        H.add_edge(u, v, capacity=system.capacity(u, v))
    first, *others = sorted(members)
    return min(min(nx.maximum_flow_value(H, first, b), nx.maximum_flow_value(H, b, first)) for b in others)


def degree_bound(G, system, members) -> float:
    """Every ring channel leaves every GPU once, by an NVLink to a member or by its PCIe link:
    ``nChannels x bwIntra`` is at most the smallest such sum of NCCL capacities (the link-packing
    bound of one GPU)."""
    return min(sum(system.capacity(g, v) for v, d in G.adj[g].items()
                   if (d["kind"] == "nvlink" and (G.nodes[v]["kind"] != "gpu" or v in members))
                   or d["kind"] == "pcie")
               for g in members)


def test_every_dgx1v_subset_matches_the_golden_search_and_bounds():
    """All 255 sets: the rewritten search gives the counts, bandwidths and path types recorded
    from the search before its rewrite (tests/data/make_search_golden.py); every channel is
    valid; symmetric sets (GPU i <-> i+4 and the quad flips) agree; the ring bandwidth never
    exceeds the link-packing bound of any GPU of the set, nor the max-flow cut bound of the set (every set of 2 or 3 GPUs and the 8; on the
    8 GPUs the search reaches 120 GB/s, 6 rings x 20 on a GPU's six NVLinks, of the bound's 126)."""
    G = topo.dgx1v()
    system = NcclSystem(G)
    gpus = topo.gpus(G)
    found = {}
    for k in range(1, 9):
        for ids in itertools.combinations(range(8), k):
            row, ring = searched(system, gpus, ids)
            assert row == GOLDEN["dgx1v"][",".join(map(str, ids))], ids
            check_channels(G, ring)
            found[ids] = tuple(row)
            if k > 1:  # one GPU: NCCL's LOC channels cross no link
                assert ring.nchannels * ring.bw_intra <= degree_bound(G, system, set(ring.gpus)) * (1 + 1e-9)
            if 2 <= k <= 3 or k == 8:
                bound = ring_cut_bound(G, system, set(ring.gpus))
                assert ring.nchannels * ring.bw_intra <= bound * (1 + 1e-9), ids
    # GPUs 0 and 3: the NV2 bundle (40) and the PCIe path through the CPU (12) bound 52 GB/s; the
    # search uses the bundle only (NCCL's path is the NVLink one): 2 x 20.
    assert found[(0, 3)][:2] == (2, 20 * GB) and ring_cut_bound(G, system, {"gpu0", "gpu3"}) == 52 * GB
    for mapping in topo.gpu_automorphisms(G):
        perm = {G.nodes[a]["index"]: G.nodes[b]["index"] for a, b in mapping.items()}
        for ids, value in found.items():
            assert found[tuple(sorted(perm[g] for g in ids))] == value


@pytest.mark.parametrize("system, sizes", [("dgx1", None), ("dgx2", None)])
def test_single_node_searches_match_the_golden_search(system, sizes):
    """Every DGX-1 (P100) set (the tree searches of 6 and 7 GPUs, which exhaust NCCL's budget, skip
    the speeds where the chain bound shows too few fit) and a sample of DGX-2 sets."""
    G = topo.build(system)
    fabric = NcclSystem(G)
    gpus = topo.gpus(G)
    for key, expected in GOLDEN[system].items():
        ids = [int(i) for i in key.split(",")]
        if sizes is None or len(ids) in sizes:
            assert searched(fabric, gpus, ids)[0] == expected, key


@pytest.mark.parametrize("system, keys", [
    ("2xdgx1v", ("0,8", "7,15", "4,8,14", "2,3,10,11", "6,7,14,15", "5,6,7,13,14,15")),
    ("2xdgx2", ("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",))])
def test_multi_node_searches_match_the_golden_search(system, keys):
    G = topo.build(system)
    fabric = NcclSystem(G)
    gpus = topo.gpus(G)
    for key in keys:
        ids = [int(i) for i in key.split(",")]
        assert searched(fabric, gpus, ids, tree=False)[0] == GOLDEN[system][key][:3], key


def test_estimates_match_the_golden_estimates():
    """Algorithm, protocol, channels and busbw at five sizes, as before the rewrite; except the
    one-GPU broadcast and sendrecv, whose busbw was the copy's algbw (450 GB/s) and is now the 0
    nccl-tests prints."""
    sizes = GOLDEN["estimates"]["sizes"]
    graphs = {}
    for case in GOLDEN["estimates"]["cases"]:
        G = graphs.setdefault(case["system"], topo.build(case["system"]))
        e = estimate(G, case["collective"], sizes, case["gpus"])
        if case["collective"] in ("alltoall", "sendrecv") and e.nranks > 1:
            # NCCL's per-peer schedule replaced the concurrent-flow model of the golden file
            # (models.predict.alltoall): at 4 GiB, bandwidth-bound, it keeps the flow model's busbw
            # within 1 % (its rounds' latency and one chunk of fill added)
            assert list(e.algorithm) == case["algorithm"]
            assert e.nccl_busbw[-1] == pytest.approx(case["busbw"][-1], rel=0.01), case
            continue
        assert list(e.algorithm) == case["algorithm"] and list(e.protocol) == case["protocol"]
        assert list(e.nchannels) == case["nchannels"]
        expected = [0.0] * len(sizes) if e.nranks == 1 else case["busbw"]
        assert e.nccl_busbw == pytest.approx(expected, rel=1e-12), case


def test_errors():
    G = topo.dgx1v()
    with pytest.raises(ChannelSearchError, match="unknown pattern 'star'"):
        search_channels(G, pattern="star")
    with pytest.raises(ChannelSearchError, match="expected 1 <= min_channels <= max_channels"):
        search_channels(G, min_channels=4, max_channels=2)
    with pytest.raises(topo.GpuSelectionError, match="out of range"):
        search_channels(G, [0, 8])


def test_a_graph_edited_in_place_is_searched_again():
    """Host searches are kept by the content of the problem, not by graph object: halving the
    NV2 bundle between GPUs 0 and 3 of a DGX-1V in place halves their rings (2 x 20 -> 1 x 20
    GB/s), restoring it gives 2 x 20 again; on two DGX-1V, slowing one NIC port of the second
    host lowers the ring bandwidth of a set that spans both hosts."""
    G = topo.dgx1v()
    before = search_channels(G, [0, 3])

    def scale(H, pairs, factor):
        for u, v in pairs:
            H.edges[u, v]["bandwidth"] *= factor
            H.edges[v, u]["bandwidth"] *= factor

    scale(G, [("gpu0", "gpu3")], 0.5)
    halved = search_channels(G, [0, 3])
    scale(G, [("gpu0", "gpu3")], 2.0)
    assert (before.nchannels, before.bw_intra) == (2, 20 * GB)
    assert (halved.nchannels, halved.bw_intra) == (1, 20 * GB)
    assert search_channels(G, [0, 3]).channels == before.channels
    H = topo.build("2xdgx1v")
    spanning = search_channels(H, [0, 1, 2, 8])
    scale(H, [(u, v) for u, v, kind in H.edges(data="kind") if u == "h1.mlx5_0" and kind == "network"], 0.25)
    slowed = search_channels(H, [0, 1, 2, 8])
    assert slowed.nchannels * slowed.bw_intra < spanning.nchannels * spanning.bw_intra


def test_a_host_that_is_not_a_copy_is_searched_on_its_own_whatever_was_asked_before():
    """NCCL searches every node with its own NICs and keeps the minimum over the nodes
    (NVIDIA/nccl v2.27.7-1 src/init.cc). On 2xDGX-1V without host 1's mlx5_1 (the NIC beside
    GPUs 2 and 3), a channel of GPU 2 on host 1 leaves by a farther NIC, so the pair of the two
    hosts' GPU 2 is held to host 1's search: the time is the one of the fabric without the
    NIC on both hosts, and slower than the intact fabric's. Before, host 1 took host 0's search
    (the same local GPUs), and which host a shape was first searched on depended on the GPU
    sets asked of the fabric before."""
    from models.engine.fabric import PreparedFabric

    intact = topo.build("2xdgx1v")
    one = topo.transform.remove_nodes(intact, ["h1.mlx5_1"])
    both = topo.transform.remove_nodes(intact, ["h0.mlx5_1", "h1.mlx5_1"])

    def time(G, gpus, asked_before=()):
        fabric = PreparedFabric(G.copy())
        for earlier in asked_before:
            estimate(fabric, "all_reduce", 2**30, [fabric.ids[n] for n in earlier])
        return estimate(fabric, "all_reduce", 2**30, [fabric.ids[n] for n in gpus]).time

    pair = ("h0.gpu2", "h1.gpu2")
    assert time(one, pair) == time(both, pair) > time(intact, pair)
    three = ("h0.gpu2", "h1.gpu4", "h1.gpu7")  # host 0's GPU 2 has its own NIC
    assert time(one, three, asked_before=[("h0.gpu0", "h1.gpu2")]) == time(one, three) == time(intact, three)


def test_a_built_cluster_prepared_again_still_shares_its_hosts_searches():
    """A cluster as topo.build joined it has hosts that are copies (no comparison needed); preparing
    its frozen graph again (another release) keeps that, a copy of it does not."""
    from models.engine.fabric import PreparedFabric

    built = PreparedFabric(topo.build("2xdgx1v"))
    again = PreparedFabric(built.G, nccl="2.18")
    assert built.nccl.hosts_alike and again.nccl.hosts_alike
    assert not PreparedFabric(topo.build("2xdgx1v").copy()).nccl.hosts_alike


@pytest.mark.parametrize("factor", [0.05, 0.01, 1e-6])
def test_a_link_too_slow_for_any_search_speed_is_used_at_its_own_rate(factor):
    """issue 24: a pair linked only by a link slower than NCCL's lowest search speed gets NCCL's
    fallback (one channel in index order, type SYS, tuned at 0.1 GB/s: search.cc), which was
    reported as the measured busbw whatever the link. NCCL's path between the two GPUs is still
    the direct link (fewest hops, paths.cc), so the data moves at that link's rate: busbw scales
    with the factor, and the explanation says so."""
    from models.predict.collectives import estimate
    from models.studies.whatif import apply_failures

    G = apply_failures(topo.build("dgx1v"), (), (f"gpu0-gpu3={factor}",)).graph
    e = estimate(G, "all_reduce", 2**25, "0,3")
    link = search_channels(G, "0,3")
    assert link.nchannels == 1 and link.trace[-1].kind == "fallback"
    assert "falls back to one channel" in search_step_text(link.trace[-1])
    # NCCL's 0-3 bundle on a DGX-1V: 2 NVLinks x 20 GB/s (ncclTopoNVLinkBw, sm70), times the factor.
    assert link.bw_intra == pytest.approx(2 * 20e9 * factor, rel=1e-9)
    assert float(e.busbw) == pytest.approx(float(estimate(
        apply_failures(topo.build("dgx1v"), (), ("gpu0-gpu3=0.05",)).graph, "all_reduce", 2**25, "0,3"
    ).busbw) * factor / 0.05, rel=0.02)
    assert "tuned at 0.1 GB/s; its data moves at the slowest hop's rate" in explain(e)
