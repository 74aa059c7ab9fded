"""Cluster builder: hosts joined through their NICs by a fat tree or a rail-optimised network."""

from __future__ import annotations

import pytest

import topo

GB = 1e9


def test_two_dgx1v():
    G = topo.build("2xdgx1v")
    topo.validate(G)
    assert G.graph["hosts"] == 2 and G.graph["gpus_per_host"] == 8
    gpus = topo.gpus(G)
    assert len(gpus) == 16
    # Global ids: host x 8 + local index.
    assert [(G.nodes[g]["host"], G.nodes[g]["index"]) for g in gpus] == [(h, i) for h in range(2) for i in range(8)]
    assert topo.select_gpus(G, [9]) == ["h1.gpu1"]
    switches = [n for n, k in G.nodes(data="kind") if k == "network_switch"]
    assert switches == ["net.leaf0"], "8 EDR NICs fit one 36-port switch"
    assert sorted(G.predecessors("net.leaf0")) == sorted(f"h{h}.mlx5_{k}" for h in range(2) for k in range(4))
    edge = G.edges["h0.mlx5_0", "net.leaf0"]
    assert (edge["kind"], edge["link"], edge["bandwidth"]) == ("network", "ib_edr", 12.5 * GB)


def test_each_host_keeps_its_nvidia_smi_view():
    G = topo.build("2xdgx1v")
    assert topo.connection_matrix(G, host=1).cells == topo.connection_matrix(topo.dgx1v()).cells


def test_fat_tree_is_non_blocking():
    G = topo.build("16xdgx2")   # 128 EDR NICs: 8 leaves of 18 down-links, one core node
    leaves = [n for n, d in G.nodes(data=True) if d["kind"] == "network_switch" and d["tier"] == "leaf"]
    assert len(leaves) == 8
    for leaf in leaves:
        down = sum(1 for v in G.predecessors(leaf) if G.nodes[v]["kind"] == "nic")
        assert down <= 18 and G.edges[leaf, "net.core"]["links"] == down
        assert down + G.edges[leaf, "net.core"]["links"] <= G.nodes[leaf]["ports"]


def test_rail_network_puts_nic_k_of_every_host_on_rail_k():
    G = topo.build("4xdgx1v:rail")
    for k in range(4):
        leaves = {v for h in range(4) for v in G.successors(f"h{h}.mlx5_{k}")
                  if G.nodes[v]["kind"] == "network_switch"}
        assert leaves == {f"net.leaf{k}"}
    assert G.graph["network"] == "rail" and G.graph["system"] == "4xdgx1v:rail"


def test_cluster_of_one_and_by_builder():
    assert len(topo.gpus(topo.cluster(topo.dgx2, 1))) == 16
    assert topo.cluster("dgx1", 3).graph["name"] == "3xDGX-1"


@pytest.mark.parametrize("args, message", [
    (("dgx1v", 0), "whole number of hosts >= 1, received 0"),
    (("dgx1v", 2.0), "whole number of hosts"),
    ((42, 2), "node_builder must be a builder or a system name"),
])
def test_cluster_errors(args, message):
    with pytest.raises(topo.DgxTopoError, match=message):
        topo.cluster(*args)


def test_cluster_network_errors():
    with pytest.raises(topo.DgxTopoError, match="unknown network 'torus'"):
        topo.cluster("dgx1v", 2, network="torus")
    def no_nics():
        G = topo.dgx1v()
        for nic in topo.compute_nics(G):
            del G.nodes[nic]["port_link"]
        return G
    with pytest.raises(topo.DgxTopoError, match="no NIC with a network port"):
        topo.cluster(no_nics, 2)
    with pytest.raises(topo.DgxTopoError, match="single system"):
        topo.cluster(lambda: topo.build("2xdgx1v"), 2)


@pytest.mark.parametrize("name, message", [
    ("0xdgx1v", "host count '0' is not a whole number >= 1"),
    ("2xdgx9", "unknown system '2xdgx9'"),
    ("2xdgx1v:mesh", "unknown network 'mesh'"),
])
def test_build_spec_errors(name, message):
    with pytest.raises(topo.DgxTopoError, match=message):
        topo.build(name)


def test_nvlink_bisection_of_a_cluster_is_zero():
    """Hosts share no NVLink: one host is a side of a free cut (found without max-flows)."""
    result = topo.bisection(topo.build("2xdgx2"))
    assert result.bandwidth == 0.0 and result.cases == 0
    assert {topo.build("2xdgx2").nodes[g]["host"] for g in result.side} == {0}
