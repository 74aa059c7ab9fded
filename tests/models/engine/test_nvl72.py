"""GB200 NVL72 as a registered system: the registry, NCCL's choices on the 72-GPU rack, and the
symmetry shortcuts that make a rack cheap (which must give the answers of the long way).

Known answers:

- NCCL's view of the rack (NVIDIA/nccl v2.27.7-1): one NVLink clique of 18 hosts is one NCCL
  node (src/graph/topo.cc MNNVL clique fusion; src/init.cc nNodes from the rings), with one NVS
  node to which every GPU has 18 x ncclTopoNVLinkBw(sm100) = 18 x 40.1 = 721.8 GB/s
  (src/graph/topo.h, topo.cc ncclTopoConnectNodes).
- Ring search (src/graph/search.cc, sm100 speed array, start at 90 GB/s): a ring channel crosses
  each GPU's link to the NVS node once per direction, so 8 channels of 90 fit (8 x 90 = 720 <=
  721.8, a ninth would need 810); ncclTopoDupChannels then makes them 16 x 45. [U] derived from
  the source, not checked against an NCCL_DEBUG_SUBSYS=GRAPH log of a rack.
- NVLS (src/transport/nvls.cc, src/graph/search.cc ncclTopoSearchTryNvls): enabled on sm100 with
  NVLink SHARP switches and more than 2 GPUs; NCCL_MAX_NVLS_ARITY 32 heads, 33 x 20 <= 721.8,
  bwInter 2 x 20 = 40 GB/s; tuning (src/graph/tuning.cc v2.27) busBw 32 x min(20, 40) = 640 GB/s
  against the ring's 16 x 45 = 720; NVLS's bus-to-algorithm ratio and its single 25 us latency
  step (against 2 x 71 ring steps) make it NCCL's choice for all_reduce at every size.
- PAT needs one rank per node (src/graph/tuning.cc ncclPatEnable): never on the rack.
"""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

import models
import topo
from models.predict.collectives import estimate
from models.engine.nccl.channels import channel_graphs
from models.engine.nccl.system import NcclSystem
from models.predict.p2p import p2p_matrix
from models.present.explain import explain, search_step_text

GB = 1e9


@pytest.fixture(scope="module")
def rack():
    return topo.build("gb200nvl72")


@pytest.fixture(scope="module")
def rack_estimate(rack):
    """all_reduce over the 72 GPUs at 1 KiB and 1 GiB, under a tight recursion limit: the
    channel search once recursed per GPU and per channel, and 72 GPUs x channels went past the
    interpreter's limit; it now keeps its own stack."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 250)
    try:
        return estimate(rack, "all_reduce", [2 ** 10, 2 ** 30])
    finally:
        sys.setrecursionlimit(limit)


# -- registry ---------------------------------------------------------------------------------
def test_registered_with_its_spellings():
    assert "gb200nvl72" in topo.SYSTEMS
    assert topo.parse_system_spec("GB200-NVL72").system == "gb200nvl72"
    spec = topo.parse_system_spec("8xgb200_nvl72:rail")
    assert (spec.system, spec.hosts, spec.network) == ("gb200nvl72", 8, "rail")


@pytest.fixture(scope="module")
def racks():
    return topo.build("8xgb200nvl72")


@pytest.fixture(scope="module")
def prepared_racks(racks):
    """The eight racks prepared once for the estimates of this module: their channel searches of
    a GPU set are shared (a prepared fabric's graph is frozen: no test can edit it for another)."""
    return models.PreparedFabric(racks)


def test_eight_racks_build_576_gpus_in_144_hosts(racks):
    G = racks
    gpus = topo.gpus(G)
    assert len(gpus) == 576 and G.graph["hosts"] == 144
    domains = {G.nodes[g]["nvlink_domain"] for g in gpus}
    assert domains == set(range(8))
    assert len(topo.nodes_of_kind(G, "nvswitch")) == 8 * 18


# -- NCCL on the whole rack -------------------------------------------------------------------
def test_the_rack_is_one_nccl_node(rack_estimate):
    ring = rack_estimate.ring
    assert ring.nnodes == 1 and rack_estimate.selection is not None
    assert (ring.trace[0].kind, ring.trace[0].names, ring.trace[0].count) == ("mnnvl", tuple(range(18)), 1)
    assert search_step_text(ring.trace[0]).startswith("MNNVL: the GPUs of hosts 0-17 share one NVLink domain "
                                                      "and are 1 NCCL node")


def test_ring_is_16_channels_of_45(rack_estimate):
    """sm100 speed array from 90 GB/s: 8 x 90 = 720 <= 721.8, duplicated to 16 x 45."""
    ring = rack_estimate.ring
    assert (ring.nchannels, ring.bw_intra) == (16, 45 * GB)
    assert ring.total_bw == pytest.approx(721.8 * GB)
    assert all(sorted(c) == sorted(ring.gpus) for c in ring.channels), "every ring crosses all 72"
    assert rack_estimate.tree.nchannels == 16   # the tree search is held to the ring's count


def test_loads_name_the_racks_own_switch_chips(rack, rack_estimate):
    """The search ran on NCCL's single NVS node; its loads are spread back over the 18 chips."""
    ring = rack_estimate.ring
    assert all(rack.has_edge(*load.edge) for load in ring.loads)
    assert len(ring.bottleneck) == 72 * 18 * 2   # every GPU link, both ways, full
    top = ring.loads[0]
    assert top.capacity == pytest.approx(40.1 * GB) and top.reserved == pytest.approx(16 * 45 * GB / 18)


def test_nvls_across_the_rack(rack_estimate):
    nvls = rack_estimate.nvls
    assert (nvls.nchannels, nvls.bw_intra, nvls.bw_inter) == (32, 20 * GB, 40 * GB)
    assert nvls.heads == rack_estimate.ring.gpus[:32]   # without NET, channel c's head is GPU c


def test_all_reduce_picks_nvls_and_explains_mnnvl(rack_estimate):
    # 72 ranks make every ring and chain step count (latency 142 x per-hop), NVLS's is one
    # 25 us step: NCCL's model picks NVLS at every size.
    assert list(rack_estimate.algorithm) == ["nvls", "nvls"]
    text = explain(rack_estimate)
    assert "MNNVL: the GPUs of hosts 0-17" in text and "NVLS chosen for all_reduce" in text


# -- the shortcuts agree with the long way ------------------------------------------------------
def _unmerged(G):
    """A copy whose switch chips NCCL's view may not merge (one link of a tray of the
    communicator a hair slower both ways: the view holds the communicator's trays alone), the
    same fabric for every bandwidth."""
    H = G.copy()
    for e in (("t5.gpu2", "nvswitch7"), ("nvswitch7", "t5.gpu2")):
        H.edges[e]["latency"] *= 1 + 1e-7
    return H


def test_merged_switch_view_gives_the_searches_of_the_chips(rack):
    nodes = [f"t{t}.gpu{g}" for t in (0, 1, 5) for g in range(4)]
    a = channel_graphs(NcclSystem(rack), nodes)
    b = channel_graphs(NcclSystem(_unmerged(rack)), nodes)
    assert a.fabric.G.number_of_nodes() == b.fabric.G.number_of_nodes() - 17
    for x, y in ((a.ring, b.ring), (a.tree, b.tree)):
        assert (x.channels, x.bw_intra, x.nchannels) == (y.channels, y.bw_intra, y.nchannels)
        # each link's load (in either order: ties of utilisation fall by the routes' latency)
        mine, theirs = sorted(x.loads, key=lambda load: load.edge), sorted(y.loads, key=lambda load: load.edge)
        assert [load.edge for load in mine] == [load.edge for load in theirs]
        assert [load.reserved for load in mine] == pytest.approx([load.reserved for load in theirs])
        assert [load.capacity for load in mine] == pytest.approx([load.capacity for load in theirs])
    assert a.nvls == b.nvls


def test_p2p_by_host_symmetry_equals_every_pair(rack):
    """The matrices come from the GPUs of two trays (every tray permutation is an automorphism);
    each entry must be what the pair's own computation gives."""
    ids = [0, 2, 4, 70]
    route = p2p_matrix(rack, ids)
    latency = models.p2p_latency_matrix(rack, ids)
    flow = p2p_matrix(rack, ids, mode="maxflow")
    exact_flow = models.maxflow_matrix(rack, ids, capacity=models.predict.p2p.achieved_capacity)
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if a != b:
                pair = models.p2p_path(rack, a, b)
                assert route[i, j] == pytest.approx(pair.bandwidth, rel=1e-12)
                assert latency[i, j] == pytest.approx(pair.latency, rel=1e-12)
                # scipy counts capacity in integer units: relative rounding below 1e-7 (models.predict.maxflow)
                assert flow[i, j] == pytest.approx(max(exact_flow[i, j], pair.bandwidth), rel=1e-7)


def test_p2p_disabled_leaves_other_trays_on_nvlink(rack):
    """p2pBandwidthLatencyTest runs on one OS (a tray): P2P=Disabled stages that tray's pairs;
    GPUs of other trays are not its pairs and keep the NVLink domain's copy."""
    m = p2p_matrix(rack, "0-4", p2p=False)
    enabled = p2p_matrix(rack, "0-4")
    off = ~np.eye(4, dtype=bool)
    assert np.all(m[:4, :4][off] < enabled[:4, :4][off] / 2)   # staged through Grace memory
    assert m[0, 4] == pytest.approx(enabled[0, 4]) and m[0, 4] > 700 * GB


def test_p2p_matrix_of_the_rack_is_uniform(rack):
    m = p2p_matrix(rack, achieved=False)
    off = m[~np.eye(72, dtype=bool)]
    assert np.all(off == 900 * GB), "every pair gets the GPU's whole 18-link NVLink rate"


# -- clusters of racks ----------------------------------------------------------------------------
def test_one_rack_of_a_cluster_is_the_rack(prepared_racks, rack_estimate):
    """GPUs 0-71 of 8xgb200nvl72: one NVLink domain, no network: the rack's own estimate."""
    e = estimate(prepared_racks, "all_reduce", [2 ** 30], "0-71")
    assert e.ring.nnodes == 1 and e.busbw[0] == pytest.approx(rack_estimate.busbw[1])


def test_one_tray_per_rack_runs_over_infiniband(prepared_racks):
    """A tray of each rack: 8 hosts of 4 GPUs, each its own NCCL node joined by the network."""
    e = estimate(prepared_racks, "all_reduce", [2 ** 30], "0-3,72-75,144-147,216-219")
    assert e.ring.nnodes == 4 and e.algorithm[0] in ("ring", "tree")


def test_two_racks_are_two_nccl_nodes_each_reaching_only_its_trays_nics(racks, prepared_racks):
    """Across racks each NVLink domain is one NCCL node holding every tray's NICs. A GPU reaches
    its own tray's NICs over PCIe (through Grace: PHB here) and no other tray's: PXN needs the
    NIC's own GPU within PXB of it (NVIDIA/nccl v2.27.7-1 src/graph/paths.cc), so those paths
    are DIS and the channels enter and leave each rack through NICs of the trays they start and
    end in."""
    from models.engine.nccl.channels import channel_graphs
    system = prepared_racks.nccl  # the estimate below reuses this search of the 144 GPUs
    gpus = topo.gpus(racks)[:144]
    assert system.net_route("r0.t0.gpu0", "r0.t0.mlx5_0").path_type.name == "PHB"
    assert system.net_route("r0.t0.gpu0", "r0.t5.mlx5_0").path_type.name == "DIS"
    graphs = channel_graphs(system, gpus)
    assert graphs.mnnvl and graphs.ring.nnodes == 2
    view = graphs.fabric.G
    for c, (entry, leave) in zip(graphs.ring.channels, graphs.ring.nets):
        assert view.nodes[entry]["host"] == view.nodes[c[0]]["host"]
        assert entry.split(".")[1] == c[0].split(".")[1] and leave.split(".")[1] == c[-1].split(".")[1]
    e = estimate(prepared_racks, "all_reduce", [2 ** 30], "0-143")
    assert e.busbw[0] > 0 and all(n.factor == 1.0 for n in e.network)


def test_p2p_of_a_damaged_tray_by_symmetry_of_the_others(rack):
    """One tray lost a switch link (a what-if): the other 17 trays are still interchangeable, the
    damaged one stands alone, and every entry is still the pair's own figure."""
    H = rack.copy()
    H.remove_edge("t3.gpu1", "nvswitch5")
    H.remove_edge("nvswitch5", "t3.gpu1")
    ids = [0, 13, 14, 40, 41]   # t0.gpu0, t3.gpu1 (damaged), t3.gpu2, t10.gpu0, t10.gpu1
    route = p2p_matrix(H, ids)
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if a != b:
                assert route[i, j] == pytest.approx(models.p2p_path(H, a, b).bandwidth, rel=1e-12)
    assert route[1, 0] < route[2, 0] == route[3, 0]   # 17 links instead of 18
    flow = p2p_matrix(H, ids, mode="maxflow")
    exact = models.maxflow_matrix(H, ids, capacity=models.predict.p2p.achieved_capacity)
    assert flow == pytest.approx(np.maximum(exact, route) * ~np.eye(5, dtype=bool) + np.diag(np.diag(flow)),
                                 rel=1e-7)


def test_trays_searched_without_fusing_are_not_taken_for_copies():
    """The search on the graph as given (no MNNVL view) sees trays as hosts whose node names
    differ (t2 against t4): a search of one tray is not moved onto another by name, the other
    tray is searched itself (this raised KeyError)."""
    from models.engine.nccl.search import search_channels_in
    from models.engine.nccl.system import NcclSystem
    G = topo.build("2xgb200nvl72")
    system = NcclSystem(G)  # one prepared fabric: the second search may reuse the first's
    gpus = topo.gpus(G)
    first = search_channels_in(system, [gpus[i] for i in (8, 9, 10, 11, 72, 73, 74, 75)])
    second = search_channels_in(system, [gpus[i] for i in (16, 17, 18, 19, 100, 101, 102, 103)])
    assert second.gpus[0] == "r0.t4.gpu0" and all(n.startswith("r0.t4.") for n, _ in second.nets)
    assert second.nchannels == first.nchannels


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter", "broadcast"])
def test_a_tray_search_moved_to_another_rack_loads_that_racks_switches(collective):
    """Trays t0 of racks 0 and 1 are copies: the search of r0.t0's GPUs 0 and 2 (asked first)
    serves r1.t0's, each wired to its own rack's NVSwitch chips. The move renamed the tray's
    nodes and kept rack 0's chips, so r1.t0's loads named edges (r1.t0.gpu0, r0.nvswitch0) that
    do not exist and the measurement raised KeyError 'r0.nvswitch0' (a 256-GPU planner search
    on 4xgb200nvl72). Now the estimate is the one a fresh fabric gives, every load an edge."""
    from models.predict.measure import measured
    fabric = models.PreparedFabric(topo.build("2xgb200nvl72"))
    estimate(fabric, collective, [2 ** 26], [0, 2, 72, 74])  # host search of r0.t0's (0, 2)
    e = estimate(fabric, collective, [2 ** 16, 2 ** 26], [0, 1, 72, 74])  # r1.t0's (0, 2): moved
    fresh_fabric = models.PreparedFabric(topo.build("2xgb200nvl72"))
    fresh = estimate(fresh_fabric, collective, [2 ** 16, 2 ** 26], [0, 1, 72, 74])
    G = fabric.G
    assert all(G.has_edge(*load.edge) for load in e.ring.loads)
    assert {n for load in e.ring.loads for n in load.edge if G.nodes[n]["kind"] == "nvswitch"
            and any(G.nodes[m].get("host") == 18 for m in load.edge)} <= {f"r1.nvswitch{i}" for i in range(18)}
    assert sorted(e.ring.loads, key=repr) == sorted(fresh.ring.loads, key=repr)
    assert list(e.time) == list(fresh.time)
    assert list(measured(e, fabric).time) == list(measured(fresh, fresh_fabric).time)


def test_alltoall_across_trays_stays_on_nvlink():
    """issue 24: alltoall on the whole NVL72 raised ValueError (max() of an empty sequence): its 18
    trays are hosts, but every pair reaches the other over the NVSwitches, not the NICs behind
    Grace. Over non-blocking NVSwitches each GPU's alltoall busbw term is its NVLink port rate
    (n - 1 flows of S / n leave it), whatever the trays: the same for 4 GPUs of one tray, 8 of two
    trays and 12 of three."""
    from models.predict.collectives import estimate

    G = topo.build("gb200nvl72")
    terms = []
    for gpus in ("0-3", "0-7", "0-11"):
        e = estimate(G, "alltoall", 2**30, gpus)
        assert e.bottleneck[0][0].startswith("nvswitch") and "NET" not in explain(e)
        terms.append(float(e.bandwidth) * (e.nranks - 1) / e.nranks)
    assert terms == pytest.approx([terms[0]] * 3, rel=1e-9)
    nvlink_in = sum(G.edges[u, "t0.gpu0"]["bandwidth"] for u in G.pred["t0.gpu0"]
                    if G.edges[u, "t0.gpu0"]["kind"] == "nvlink")
    assert terms[0] <= nvlink_in
