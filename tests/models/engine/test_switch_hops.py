"""NCCL's hops through one tier of NVSwitches are computed once per shape and renamed
(models.engine.nccl.system.NcclSystem.charged_hop): every renamed hop equals the hop routed and
charged from its definition (hop, then charge), edges in the same order, on every built-in
system, on a cluster and on what-ifs that break the symmetry."""

from __future__ import annotations

import pytest

import topo
from models.engine.nccl.system import NcclSystem
from models.studies.whatif import apply_failures


def _defined(system: NcclSystem, a, b, members) -> tuple:
    """What charged_hop books for a -> b, from the definition: the hop, then its charge."""
    path_type, flow = system.hop(a, b, members)
    ends = (tuple(e for e, ((u, _), _) in enumerate(flow) if u == a),
            tuple(e for e, ((_, v), _) in enumerate(flow) if v == b))
    return (path_type, *system.charge(flow, system.pcie_overhead(path_type)), ends)


def _hosts(G) -> list:
    hosts: dict = {}
    for n in topo.gpus(G):
        hosts.setdefault(G.nodes[n]["host"], []).append(n)
    return list(hosts.values())


def _fabrics():
    for name in topo.SYSTEMS:
        yield name, topo.build(name)
    yield "2xdgxh100", topo.build("2xdgxh100")
    yield "dgxh100 one switch failed", apply_failures(topo.build("dgxh100"), ["nvswitch2"], []).graph
    yield "dgxh100 gpu3 links halved", apply_failures(
        topo.build("dgxh100"), [], [f"gpu3-nvswitch{k}=0.5" for k in range(4)]).graph
    yield "dgxb200 gpu5 to a switch thinned", apply_failures(topo.build("dgxb200"), ["gpu5-nvswitch0:1"], []).graph


@pytest.mark.parametrize("name, G", list(_fabrics()), ids=[name for name, _ in _fabrics()])
def test_every_renamed_switch_hop_is_the_hop_as_defined(name, G):
    system, reference = NcclSystem(G), NcclSystem(G)
    routed = []  # the hops charged_hop routes (the others it renames)
    hop = system.hop
    system.hop = lambda a, b, members=(): routed.append((a, b)) or hop(a, b, members)
    pairs = 0
    for host in _hosts(G)[:2]:
        members = set(host)
        for a in host:
            for b in host:
                if a != b:
                    pairs += 1
                    assert system.charged_hop(a, b, members) == _defined(reference, a, b, members), (a, b)
    # NVSwitch hosts route one hop per shape and rename the others; the DGX-1s have no switch.
    switched = any(G.nodes[n]["kind"] == "nvswitch" for n in G)
    assert (len(routed) < pairs) == switched, (len(routed), pairs)


def test_one_hop_of_a_dgx_h100_is_routed_and_55_are_renamed():
    """Eight GPUs, each with the same NVLinks to the four switches: one shape."""
    G = topo.build("dgxh100")
    system, routed = NcclSystem(G), []
    hop = system.hop
    system.hop = lambda a, b, members=(): routed.append((a, b)) or hop(a, b, members)
    gpus = topo.gpus(G)
    hops = [system.charged_hop(a, b, set(gpus)) for a in gpus for b in gpus if a != b]
    assert routed == [("gpu0", "gpu1")] and len(hops) == 56
    assert hops[-1][1][0] == (("gpu7", "nvswitch0"), 5 / 18) and hops[-1][2] == hops[0][2]
