"""The cyclic garbage collector paused while a cluster is filled in (topo.collector)."""

import gc

import pytest

import topo
from topo.collector import collector_paused
from topo.cluster import join_hosts


@pytest.fixture
def collector_state():
    """Restore the collector's state whatever a test leaves."""
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_inside_and_left_as_it_was(collector_state, enabled):
    (gc.enable if enabled else gc.disable)()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled() is enabled


def test_filling_a_cluster_runs_no_collection_until_it_is_built(collector_state):
    gc.enable()
    template = topo.dgx2()
    started = []

    def count(phase, info):
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        G = join_hosts(template, 64)  # 3,375 nodes and 20,096 edges: 43 of collections unpaused
    finally:
        gc.callbacks.remove(count)
    assert gc.isenabled()
    assert len(started) <= 1  # the one the first allocation after the pause starts
    assert G.graph["hosts"] == 64
