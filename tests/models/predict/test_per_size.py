"""A size's predicted figure is its own: the same whether it is asked alone or in a sweep.

NCCL's tuner chooses an algorithm, a protocol and channels for each call (src/enqueue.cc
``topoGetAlgoInfo``), and the call runs that algorithm's channels alone: what binds a tree at
256 KiB is the tree's links and NICs, not what the NVLSTree of a 64 MiB call in the same sweep
crosses. So ``estimate(G, c, sizes).time[i]`` must equal ``estimate(G, c, [sizes[i]]).time[0]``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import models
import topo
from models.predict.collectives import estimate

#: (system, GPUs): one NVLink mesh, NVSwitch hosts of two generations, two hosts (NVLSTree beside
#: trees and rings), an MNNVL tray's first four GPUs.
SYSTEMS = (("dgx1v", None), ("dgxh100", None), ("2xdgxh100", None), ("dgx2", None), ("gb200nvl72", "0-3"))
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall")


@pytest.fixture(scope="module")
def fabrics():
    return {name: models.prepare(topo.build(name)) for name, _ in SYSTEMS}


# Sizes from 0 B to 8 GiB: powers of two (the sweeps' grid) and any whole number between.
SIZES = st.one_of(st.integers(0, 33).map(lambda k: 2**k), st.integers(0, 2**33))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(system=st.sampled_from(SYSTEMS), collective=st.sampled_from(COLLECTIVES),
       sizes=st.lists(SIZES, min_size=2, max_size=6, unique=True).map(sorted))
def test_a_size_of_a_sweep_is_the_size_asked_alone(fabrics, system, collective, sizes):
    name, gpus = system
    sweep = estimate(fabrics[name], collective, sizes, gpus)
    for i, size in enumerate(sizes):
        alone = estimate(fabrics[name], collective, [size], gpus)
        assert sweep.time[i] == pytest.approx(alone.time[0], rel=1e-12, abs=0), (size, sweep.algorithm[i])
        assert sweep.busbw[i] == pytest.approx(alone.busbw[0], rel=1e-12, abs=0), (size, sweep.algorithm[i])


def test_a_tree_binds_by_its_own_links_beside_a_larger_nvls_tree(fabrics):
    # Two DGX H100: 256 and 512 KiB run Tree LL128, 64 MiB runs NVLSTree. The trees' data crosses
    # the hosts by the NICs' DMA (NDR ports: 1.035 of NCCL's PCIe figure); NVLSTree's multicast
    # is bound by NVLink 4 (0.960 of NCCL's 20.6 GB/s per link). Asked together, each keeps its own.
    sweep = estimate(fabrics["2xdgxh100"], "all_reduce", [256 * 1024, 512 * 1024, 64 * 2**20])
    assert list(sweep.algorithm) == ["tree", "tree", "nvls_tree"]
    m = sweep.measurement
    assert list(m.links) == ["ib_ndr", "ib_ndr", "nvlink4"]
    assert m.ratios[0] == pytest.approx(1.0351, abs=1e-4) and m.ratios[2] == pytest.approx(0.9600, abs=1e-4)
    assert (m.link, m.ratio) == ("nvlink4", m.ratios[2])  # the summary stays the largest size's
    assert sweep.time[0] * 1e6 == pytest.approx(50.43, abs=0.005)  # as the size alone (51.36 before)
    assert dict(sweep.bottlenecks)["nvls_tree"] == sweep.bottleneck


def test_an_alltoall_of_empty_sends_posts_no_tasks_beside_a_large_one(fabrics):
    # 4 B over 16 GPUs is 0 B per peer: no send is posted, so the host launches the group alone
    # (4.985 us per GPU at -g 1); 1 MiB posts 15 sends and 15 receives and two to itself per rank.
    sweep = estimate(fabrics["dgx2"], "alltoall", [4, 2**20])
    m = sweep.measurement
    assert m.hosts[0] == pytest.approx(4.985e-6)
    assert m.hosts[1] > m.hosts[0] and m.host_time == m.hosts[1]
    assert sweep.schedules[-1] is sweep.schedule and len(sweep.schedules) == 2
