"""The pipelines of NVLS, NVLSTree and PAT, and a tree's own chunk (models.predict.pipeline).

Predicted from NCCL's source and the graph's hop latencies only: the DGX-2 sweep the per-step
work was fitted on has no NVLS or PAT run, so nothing here is fitted.
"""

import pytest
from hypothesis import assume, given, settings, strategies as st

import models
import topo
from models.engine.nccl.launch import reduced_launch
from models.engine.nccl.pipelining import pipelining
from models.predict.measure import measured
from models.predict.pipeline import (Hop, Hops, channel_hops, ShapeInputs, nvls_chunk, pipeline_time, shape_of,
                                     tree_chunk)

KiB, MiB = 1024, 2**20
US = 1e-6
HOST = Hops(Hop("a", "b", 1 * US, "nvswitch"), None)
TWO_HOSTS = Hops(Hop("a", "b", 1 * US, "nvswitch"), Hop("b", "c", 2 * US, "network"), nnodes=2)
NET = Hops(None, Hop("a", "b", 2 * US, "network"), nnodes=8)


def _inputs(collective, protocol, nbytes, nchannels, nranks, nnodes=1, heads=0, release=(2, 27, 7)):
    return ShapeInputs(pipelining("2.27.7", collective, protocol), nbytes, nchannels, nranks, nnodes, heads, release)


# ------------------------------------------------------------------ NCCL's chunk rules by hand
@pytest.mark.parametrize("nbytes, expected", [
    (2**30, 128 * KiB),               # 1 GiB >= 64 x 128 ops x 128 KiB: the full chunk
    (2**30 - 1, 64 * KiB),            # one byte less: 64 KiB
    (64 * MiB, 64 * KiB),             # = 8 x 128 x 64 KiB: not below
    (64 * MiB - 1, 32 * KiB),
    (8 * MiB, 32 * KiB),              # = 2 x 128 x 32 KiB
    (8 * MiB - 1, 16 * KiB),
    (1, 16 * KiB),
])
def test_nvls_chunk_at_its_boundaries(nbytes, expected):
    # 16 channels x 8 heads = 128 concurrent ops
    assert nvls_chunk(_inputs("all_reduce", "Simple", nbytes, 16, 8, heads=8), tree=False) == expected


@pytest.mark.parametrize("nbytes, nnodes, expected", [
    (64 * MiB, 2, 128 * KiB),         # = 4 x 128 x 128 KiB
    (64 * MiB - 1, 2, 64 * KiB),
    (8 * MiB - 1, 2, 32 * KiB),       # < 128 x 64 KiB
    (2**30, 4, 64 * KiB),             # 4 nodes or more: at most 64 KiB
])
def test_nvls_tree_chunk_at_its_boundaries(nbytes, nnodes, expected):
    assert nvls_chunk(_inputs("all_reduce", "Simple", nbytes, 16, 8 * nnodes, nnodes, heads=8), tree=True) == expected


@pytest.mark.parametrize("protocol, nbytes, nranks, nnodes, expected", [
    # Simple on one node of 8: depth 7; 8 channels
    ("Simple", 2**30, 8, 1, 512 * KiB),          # 128 MiB a channel / 512 KiB = 256 >= 56
    ("Simple", 8 * 56 * 512 * KiB, 8, 1, 512 * KiB),      # exactly depth x 8 chunks a channel
    ("Simple", 8 * 56 * 512 * KiB - 8, 8, 1, 256 * KiB),  # a hair below: halved
    ("Simple", 64 * MiB, 8, 1, 128 * KiB),       # 8 MiB a channel: 16, 32 < 56; stops at 128 KiB (64 >= 28)
    ("Simple", 8 * MiB, 8, 1, 64 * KiB),         # 1 MiB a channel: 8 < 56 -> 128 KiB; 8 < 28 -> 64 KiB; 16 >= 7
    ("Simple", 8 * KiB, 8, 1, 32 * KiB),         # never below 32 KiB
    # LL128, 2 nodes of 8: nsteps 1 + 1 + 0.8 = 2.8; thresholds 22.4 and 5.6 chunks a channel
    ("LL128", 2**30, 16, 2, 576000),
    ("LL128", 8 * MiB, 16, 2, 72000),            # 1 MiB a channel: 576000 -> 288000 -> 144000 -> 72000 (not > 128 KiB); 14.6 >= 5.6
    ("LL128", MiB, 16, 2, 18000),                # 128 KiB a channel: ... 72000; 1.8 < 5.6 -> 36000, 3.6 < 5.6 -> 18000
    ("LL", 8 * MiB, 8, 1, 32 * KiB),             # LL: the step's data
])
def test_tree_chunk_follows_nccls_rule(protocol, nbytes, nranks, nnodes, expected):
    assert tree_chunk(_inputs("all_reduce", protocol, nbytes, 8, nranks, nnodes)) == expected


# ------------------------------------------------------------------ closed forms
def test_nvls_one_node_steps_fill_and_handshake():
    # 8 MiB, 8 ranks, 8 heads, 16 nvlsChannels: 32 KiB chunks, 8 MiB / (16 x 8 x 32 KiB) = 2 steps;
    # fill 3 hops (the flag's round trip, the store), each step a round trip (2 hops) less one
    # step's data in flight
    rate = 1e13
    p = pipeline_time("all_reduce", "nvls", "Simple", 8 * MiB, nranks=8, graph_channels=16, rate=rate, hops=HOST,
                      profile="2.27.7", heads=8)
    per_step = 8 * MiB / rate / 2
    assert (p.launch.nchannels, p.launch.reduces, p.steps, p.step_bytes, p.heads) == (16, False, 2, 32 * KiB, 8)
    assert p.fill == pytest.approx(3 * US)
    assert p.handshake == pytest.approx(2 * US - per_step)
    assert p.time == pytest.approx(3 * US + 2 * (2 * US - per_step) + 8 * MiB / rate)


def test_nvls_launches_its_channels_at_every_size():
    launch = reduced_launch(1, 16, "nvls", "Simple", 8)
    assert (launch.nchannels, launch.nthreads, launch.reduces) == (16, 640, False)


def test_nvls_all_gather_moves_each_ranks_block():
    # 8 ranks: a loop moves 8 blocks' chunks; 64 MiB on 16 channels (ops 16 x 8 = 128): 64 KiB
    p = pipeline_time("all_gather", "nvls", "Simple", 64 * MiB, nranks=8, graph_channels=16, rate=1e11,
                      hops=HOST, profile="2.27.7", heads=8)
    assert (p.steps, p.step_bytes) == (8, 64 * KiB)


def test_nvls_tree_fill_crosses_the_tree_between_hosts():
    # 2 nodes: NVLS's 3 hops in the host, up and down one network hop; 8 MiB: 64 KiB, 1 step
    p = pipeline_time("all_reduce", "nvls_tree", "Simple", 8 * MiB, nranks=16, graph_channels=16, rate=1e11,
                      hops=TWO_HOSTS, profile="2.27.7", heads=8, nnodes=2)
    assert (p.steps, p.step_bytes) == (1, 64 * KiB)
    assert p.fill == pytest.approx(3 * US + 2 * 2 * US)


@pytest.mark.parametrize("release, parallel", [("2.24.3", 1), ("2.27.7", 16)])
def test_pat_steps_and_its_parallel_steps_from_2_26(release, parallel):
    # all_gather, 8 ranks one a node, 2 channels, 1 MiB: chunk 512 KiB halved while x 2 x 32 > 1 MiB
    # down to 64 KiB; 7 blocks a rank, one loop: 7 steps; fill log2(8) = 3 network hops; a step
    # waits a hop less its data in flight, the hop shared by the steps running at once (16 from v2.26)
    rate = 1e12
    p = pipeline_time("all_gather", "pat", "Simple", MiB, nranks=8, graph_channels=2, rate=rate, hops=NET,
                      profile=release, nnodes=8)
    per_step = MiB / rate / 7
    assert (p.launch.nthreads, p.steps, p.step_bytes) == (640, 7, 64 * KiB)
    assert p.fill == pytest.approx(3 * 2 * US)
    assert p.handshake == pytest.approx(max(0.0, 2 * US / parallel - per_step))
    assert p.time == pytest.approx(p.fill + 7 * p.handshake + MiB / rate)


def test_tree_steps_use_the_trees_chunk():
    # 64 MiB on 8 channels of 8 ranks: 128 KiB chunks, 8 MiB a channel = 64 steps
    p = pipeline_time("all_reduce", "tree", "Simple", 64 * MiB, nranks=8, graph_channels=8, rate=1e11, hops=HOST,
                      profile="2.27.7")
    assert (p.steps, p.step_bytes) == (64, 128 * KiB)
    assert p.fill == pytest.approx(2 * 7 * US)


# ------------------------------------------------------------------ invariants
def _chunk(algorithm, x):
    return tree_chunk(x) if algorithm == "tree" else nvls_chunk(x, algorithm == "nvls_tree") \
        if algorithm != "pat" else shape_of(x.pipe.collective, "pat").chunk(x)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([("nvls", "all_reduce"), ("nvls", "all_gather"), ("nvls", "reduce_scatter"),
                        ("nvls_tree", "all_reduce"), ("pat", "all_gather"), ("pat", "reduce_scatter"),
                        ("tree", "all_reduce")]),
       st.sampled_from(["2.24.3", "2.27.7"]), st.integers(2, 16), st.integers(1, 32), st.integers(0, 2**31),
       st.integers(1, 2**22))
def test_time_grows_with_size_for_a_fixed_launch_and_chunk(case, release, nranks, nc, size, step):
    algorithm, collective = case
    hops, nnodes = {"nvls": (HOST, 1), "nvls_tree": (TWO_HOSTS, 2), "pat": (NET, nranks), "tree": (TWO_HOSTS, 2)}[algorithm]
    protocol = "Simple"

    def at(n):
        return pipeline_time(collective, algorithm, protocol, n, nranks=nranks, graph_channels=nc, rate=50e9,
                             hops=hops, profile=release, heads=min(nranks, 8), nnodes=nnodes)

    def chunk(n):
        return _chunk(algorithm, _inputs(collective, protocol, max(n, 1), at(n).launch.nchannels, nranks, nnodes,
                                         min(nranks, 8)))

    small, large = at(size), at(size + step)
    # a fixed choice: NCCL's channels and its chunk are discrete choices it makes by size
    assume((small.launch.nchannels, chunk(size)) == (large.launch.nchannels, chunk(size + step)))
    assert large.time >= small.time * (1 - 1e-12)
    assert small.time >= size / 50e9 * (1 - 1e-12)


# ------------------------------------------------------------------ the measurement model with them
LARGE = [("dgxh100", None), ("dgxb200", None), ("gb200nvl72", None), ("2xdgxh100", None), ("2xgb200nvl72", None)]


@pytest.fixture(scope="module")
def fabrics():
    return {name: models.PreparedFabric(topo.build(name)) for name, _ in LARGE + [("8xdgxh100", None)]}


@pytest.mark.parametrize("system, gpus", LARGE + [("8xdgxh100", [0, 8, 16, 24, 32, 40, 48, 56])])
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter"])
def test_large_messages_move_at_most_one_percent(fabrics, system, gpus, collective):
    fab = fabrics[system]
    e = models.estimate(fab, collective, 2**30, gpus=gpus)
    before = measured(e, fab, pipeline=False).time
    after = measured(e, fab, pipeline=True).time
    assert after == pytest.approx(before, rel=0.01)


@pytest.mark.parametrize("system, gpus, collective, algorithm", [
    ("dgxh100", None, "all_reduce", "nvls"), ("gb200nvl72", None, "all_reduce", "nvls"),
    ("2xdgxh100", None, "all_reduce", "nvls_tree"),
    ("8xdgxh100", [0, 8, 16, 24, 32, 40, 48, 56], "all_gather", "pat")])
def test_nccls_choice_is_timed_by_its_pipeline(fabrics, system, gpus, collective, algorithm):
    fab = fabrics[system]
    e = models.estimate(fab, collective, 8 * MiB, gpus=gpus, algorithm=algorithm)
    p = e.measurement.pipelines[-1]
    assert p is not None and p.shape == algorithm
    assert e.time >= 8 * MiB / p.rate


def test_explain_shows_the_nvls_pipeline(fabrics):
    from models.present.explain import explain
    e = models.estimate(fabrics["dgxh100"], "all_reduce", 8 * MiB)
    text = explain(e.measurement)
    assert "pipeline (nvls, Simple) at 8388608 B: 16 channel(s) (comm->nvlsChannels at every size, no " \
           "reduction), 640 threads" in text
    assert "2 step(s) per channel of 32768 B (NCCL's nvls chunk, one step each, shrunk at small sizes; " \
           "8 head(s) a loop; 8 in flight)" in text
    assert "fill 3.00 us" in text and "(nvswitch)" in text


@pytest.mark.parametrize("system", ["2xgb200nvl72", "2xdgxh100"])
def test_the_network_hop_goes_to_the_next_nccl_node(fabrics, system):
    """An MNNVL domain (a GB200 NVL72 rack, 18 hosts) is one NCCL node (src/graph/topo.cc): the
    hop between NCCL nodes is the network's, not the NVSwitch route to the rack's next host, and
    NVLSTree's fill crosses it 2 log2(nnodes) times (up the tree and down)."""
    fab = fabrics[system]
    e = models.estimate(fab, "all_reduce", 8 * MiB, algorithm="nvls_tree")
    p = e.measurement.pipelines[0]
    hops = p.hops
    assert (p.shape, hops.nnodes, e.ring.nnodes) == ("nvls_tree", 2, 2)
    assert hops.inter.link == "network" and hops.intra.link == "nvswitch"
    assert fab.G.nodes[hops.inter.src]["host"] != fab.G.nodes[hops.inter.dst]["host"]
    assert p.fill == pytest.approx(3 * hops.intra.latency + 2 * hops.inter.latency)
    assert hops.inter.latency > hops.intra.latency


def test_channel_hops_by_host_would_stay_in_the_rack(fabrics):
    # the same GPUs counted by host: the next host of rack 0 is an NVSwitch route away
    G = fabrics["2xgb200nvl72"].G
    gpus = tuple(sorted((n for n, d in G.nodes(data=True) if d["kind"] == "gpu"), key=str))
    first = gpus[:4]
    by_host = channel_hops(G, first, gpus)
    assert by_host.inter.link == "nvswitch" and by_host.nnodes == 36
    by_rack = channel_hops(G, first, gpus, node_of={g: str(g).split(".")[0] for g in gpus})
    assert by_rack.inter.link == "network" and by_rack.nnodes == 2
