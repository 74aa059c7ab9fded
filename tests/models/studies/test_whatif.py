"""What-ifs: an edited graph changes P2P, channels and collectives consistently (issue 9).

Every model reads capacities from the edges' own attributes, so a graph changed by
``topo.transform`` (or by hand) is the what-if, and every answer moves with it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models
import topo
from models.predict.p2p import path_type_matrix
from topo import transform

GiB = 2**30
DGX1V = topo.dgx1v()
NVLINK_BUNDLES = sorted((u, v) for u, v, k in DGX1V.edges(data="kind")
                        if k == "nvlink" and u < v)


def test_halving_one_nv2_bundle_lowers_p2p_and_the_8_gpu_all_reduce():
    degraded = transform.scale_links(DGX1V, "gpu0", "gpu3", 0.5)
    assert models.p2p_matrix(degraded)[0, 3] == pytest.approx(models.p2p_matrix(DGX1V)[0, 3] / 2)
    before = models.estimate(DGX1V, "all_reduce", GiB)
    after = models.estimate(degraded, "all_reduce", GiB)
    # NCCL charged 2 x 20 GB/s on gpu0-gpu3, now 20: the search fits 5 rings of 20, not 6.
    assert (before.nchannels, after.nchannels) == (6, 5)
    assert after.busbw < before.busbw
    assert models.NcclSystem(degraded).capacity("gpu3", "gpu0") == 20e9


def test_a_link_set_to_1_byte_per_second_is_unused_by_nccl():
    """The case of issue 9: a hand edit of one bundle's bandwidth reaches every model."""
    G = topo.dgx1v()
    for u, v in (("gpu0", "gpu3"), ("gpu3", "gpu0")):
        G.edges[u, v]["bandwidth"] = 1.0
    e = models.estimate(G, "all_reduce", GiB)
    assert e.busbw < 0.7 * models.estimate(DGX1V, "all_reduce", GiB).busbw
    assert not any({a, b} == {"gpu0", "gpu3"} for order in e.ring.channels
                   for a, b in zip(order, order[1:] + order[:1]))
    assert models.p2p_matrix(G)[0, 3] < 1.0


@pytest.mark.parametrize("name, channels", [("dgx1", 4), ("dgx1v", 6), ("dgx2", 6)])
def test_doubling_every_nvlink_doubles_large_message_busbw(name, channels):
    """Where the speed arrays allow (18 and 20 GB/s channels can be duplicated at 2x)."""
    G = topo.build(name)
    fast = transform.scale_kind(G, 2, kind="nvlink")
    a, b = (models.estimate(g, "all_reduce", 4 * GiB, algorithm="ring", protocol="Simple")
            for g in (G, fast))
    assert a.nchannels == channels
    assert b.ring.bandwidth == pytest.approx(2 * a.ring.bandwidth)
    assert b.busbw == pytest.approx(2 * a.busbw, rel=0.01)


def test_removing_a_bundle_moves_p2p_and_nccl_to_the_same_path():
    R = transform.remove_links(DGX1V, "gpu0", "gpu3", 2)
    assert not R.has_edge("gpu0", "gpu3")
    p2p_type = path_type_matrix(R)[0, 3]
    nccl_type, _ = models.NcclSystem(R).hop("gpu0", "gpu3", ())
    assert p2p_type == nccl_type.name == "PHB"
    # with gpu1 or gpu2 in the communicator NCCL relays over two NVLinks (NVB) instead
    assert models.NcclSystem(R).hop("gpu0", "gpu3", {"gpu0", "gpu1", "gpu3"})[0].name == "NVB"


@pytest.fixture(scope="module")
def dgx1v_before():
    """The intact DGX-1V's P2P matrix and 8-GPU all_reduce busbw, computed once for every
    example below (DGX1V is never edited: the transforms return new graphs)."""
    return models.p2p_matrix(DGX1V), models.estimate(DGX1V, "all_reduce", GiB).busbw


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(NVLINK_BUNDLES), st.integers(1, 2))
def test_p2p_and_nccl_agree_on_which_links_exist(dgx1v_before, bundle, count):
    u, v = bundle
    count = min(count, DGX1V.edges[u, v]["links"])
    R = transform.remove_links(DGX1V, u, v, count)
    i, j = DGX1V.nodes[u]["index"], DGX1V.nodes[v]["index"]
    direct = R.has_edge(u, v)
    p2p_type = path_type_matrix(R)[i, j]
    nccl_type, flow = models.NcclSystem(R).hop(u, v, ())
    assert (p2p_type == "NVL") == direct == (nccl_type.name == "NVL")
    if direct:
        assert flow == (((u, v), 1.0),)
        assert models.NcclSystem(R).capacity(u, v) == R.edges[u, v]["links"] * 20e9
    # never better than before, for the pair and for all 8 GPUs
    p2p_before, busbw_before = dgx1v_before
    assert models.p2p_matrix(R)[i, j] <= p2p_before[i, j]
    assert models.estimate(R, "all_reduce", GiB).busbw <= busbw_before * (1 + 1e-9)


def test_transforms_leave_the_input_untouched_and_predictions_unchanged():
    G = topo.dgx1v()
    before = models.estimate(G, "all_reduce", GiB).busbw
    transform.scale_kind(G, 0.5, kind="nvlink")
    transform.remove_links(G, "gpu0", "gpu3")
    assert models.estimate(G, "all_reduce", GiB).busbw == before


def test_a_degraded_nic_lowers_the_multi_node_ring():
    C = topo.build("2xdgx1v")
    nic = topo.compute_nics(C, 0)[0]
    port = next(v for v, d in C.adj[nic].items() if d["kind"] == "network")
    thin = transform.scale_links(C, nic, port, 0.25)
    a, b = (models.estimate(g, "all_reduce", GiB) for g in (C, thin))
    assert b.busbw < a.busbw
    assert np.isfinite(b.time)
