"""The one GPU-set key (models/engine/symmetry.py): equal keys are equal answers.

A wrong key silently reuses another set's estimate, so the property is checked where keys are
easiest to get wrong: small fabrics and what-if variants of them (thinned, removed and added
links, an imported fabric), GPU sets of every size, estimates and bounds alike."""

from __future__ import annotations

import itertools
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import models
import topo
from models.engine.fabric import PreparedFabric
from models.engine.symmetry import SymmetryLimitError, class_units, host_classes, host_places
from topo.errors import LimitError
from models.studies.bounds import bound

ROOT = Path(__file__).parents[3]
GiB = 2**30


def _variants():
    """Fabrics whose symmetry a key must get right (built once: the property draws from them)."""
    dgx1v, dgx1 = topo.dgx1v(), topo.dgx1()
    h100 = topo.build("dgxh100")
    cut = h100
    for s in [v for v in h100.adj["gpu3"] if h100.nodes[v]["kind"] == "nvswitch"]:
        cut = topo.transform.remove_links(cut, "gpu3", s, cut.edges["gpu3", s]["links"])
    return {
        "dgx1v": dgx1v,
        "dgx1": dgx1,
        "dgx1v thinned gpu0-gpu3": topo.transform.remove_links(dgx1v, "gpu0", "gpu3", 1),
        "dgx1v without gpu1-gpu2": topo.transform.remove_links(dgx1v, "gpu1", "gpu2", 1),
        "dgx1v plus gpu0-gpu5": topo.transform.add_links(dgx1v, "gpu0", "gpu5", "nvlink2", 1),
        "dgx1v degraded pcie": topo.transform.scale_links(dgx1v, "gpu4", "pcie2", 0.5),
        "dgx1v imported": topo.from_json((ROOT / "examples" / "dgx1v_imported.json").read_text()),
        "dgxh100, gpu3 without NVLink": cut,
        "2xdgx1v": topo.build("2xdgx1v"),
        "2xdgx1v, host 1 without mlx5_1": topo.transform.remove_nodes(topo.build("2xdgx1v"), ["h1.mlx5_1"]),
    }


VARIANTS = _variants()
FABRICS = {name: PreparedFabric(G.copy()) for name, G in VARIANTS.items()}


def _pair_with_equal_key(fabric, key_of, k, draw):
    """Two different k-GPU sets of ``fabric`` with equal keys (or None)."""
    nodes = topo.gpus(fabric.G)
    combos = list(itertools.combinations(nodes, k))
    first = draw(st.sampled_from(combos))
    mates = [c for c in combos if c != first and key_of(c) == key_of(first)]
    return (first, draw(st.sampled_from(mates))) if mates else None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_equal_nccl_keys_give_equal_estimates(data):
    name = data.draw(st.sampled_from(sorted(FABRICS)))
    fabric = FABRICS[name]
    collective = data.draw(st.sampled_from(["all_reduce", "all_gather", "broadcast", "alltoall"]))
    symmetry = fabric.symmetry.nccl(collective, network=collective != "alltoall")
    k = data.draw(st.integers(2, 4))
    pair = _pair_with_equal_key(fabric, symmetry.key, k, data.draw)
    if pair is None:
        return
    ids = [[fabric.ids[n] for n in s] for s in pair]
    a, b = (models.estimate(fabric, collective, [2**12, GiB], i) for i in ids)
    assert list(a.time) == list(b.time), (name, collective, pair)
    assert list(a.busbw) == list(b.busbw)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_equal_bound_keys_give_equal_bounds(data):
    name = data.draw(st.sampled_from(sorted(n for n in FABRICS if "h100" not in n and "2x" not in n)))
    fabric = FABRICS[name]
    kinds = data.draw(st.sampled_from([None, ("nvlink",)]))
    symmetry = fabric.symmetry.graph(kinds)
    k = data.draw(st.integers(2, 4))
    pair = _pair_with_equal_key(fabric, symmetry.key, k, data.draw)
    if pair is None:
        return
    ids = [[fabric.ids[n] for n in s] for s in pair]
    a, b = (bound(fabric, "all_gather", GiB, i, edge_kinds=kinds, nccl=False).bound_busbw for i in ids)
    assert a == b, (name, kinds, pair)


@pytest.mark.parametrize("name", sorted(n for n in FABRICS if "2x" not in n))
def test_keys_of_many_sets_are_the_keys_of_each(name):
    """GpuSymmetry.keys (vectorised over sets and automorphisms) is key() set by set, for every
    scope (NCCL's, the graph's, both) and every set size: subsets() relies on it. (A cluster's
    key, ClusterSymmetry.keys, is key() set by set.)"""
    fabric = FABRICS[name]
    for symmetry in (fabric.symmetry.nccl("all_reduce"), fabric.symmetry.graph(),
                     fabric.symmetry.graph(("nvlink",)), fabric.symmetry.both()):
        gpus = symmetry.gpus
        for k in range(1, len(gpus) + 1):
            combos = list(itertools.combinations(range(len(gpus)), k))
            assert symmetry.keys(combos) == [symmetry.key([gpus[i] for i in c]) for c in combos], (name, k)


def test_the_old_planner_rule_would_reuse_a_wrong_estimate():
    """The planner keyed sets of an NVSwitch host by NVLink-only classes without automorphisms.
    With GPU 3's NVLinks gone its paths cross PCIe: {3, 0} (one CPU socket) and {3, 4} (across
    the sockets) were one key there, and are two here, as their estimates are."""
    fabric = FABRICS["dgxh100, gpu3 without NVLink"]
    nvlink_classes = topo.interchangeable_gpus(fabric.G, edge_kinds=["nvlink"])
    old_class = {g: c for c, members in enumerate(nvlink_classes) for g in members}
    old_key = lambda nodes: tuple(sorted(old_class[g] for g in nodes))  # noqa: E731
    assert old_key(["gpu3", "gpu0"]) == old_key(["gpu3", "gpu4"])
    e30, e34 = (float(models.estimate(fabric, "all_reduce", GiB, ids).busbw) for ids in ([3, 0], [3, 4]))
    assert e30 > 1.5 * e34
    key = fabric.symmetry.nccl("all_reduce").key
    assert key(["gpu3", "gpu0"]) != key(["gpu3", "gpu4"])


def test_classes_are_counted_before_they_are_listed():
    fabric = PreparedFabric(topo.dgx2())
    sym = fabric.symmetry.nccl("all_reduce")
    assert [sym.count(k) for k in (2, 3, 16)] == [3, 4, 1]
    assert sum(sym.set_classes([3]).values()) == 560  # C(16, 3), in 4 classes
    with pytest.raises(SymmetryLimitError, match=r"up to 4 symmetry classes .* max_classes=3: raise max_classes") as err:
        sym.set_classes([3], max_classes=3)
    assert (err.value.keyword, err.value.size, err.value.limit) == ("max_classes", 4, 3)
    # every limit of every wing is one type (topo.errors.LimitError), and survives a process pool
    again = pickle.loads(pickle.dumps(err.value))
    assert isinstance(again, LimitError) and type(again) is SymmetryLimitError
    assert (str(again), again.keyword, again.size, again.limit) == (str(err.value), "max_classes", 4, 3)


def test_gpus_of_one_class_are_keyed_without_searching_automorphisms(monkeypatch):
    """GB300 NVL72 over NVLink: its 72 GPUs are one class (each has a ConnectX-8 switch of its own,
    so none is interchangeable on the whole fabric, whose automorphisms VF2 searches for seconds
    without ending: the maps cannot lower an all-zero word). One class of each size, 2 to 72, each
    holding every set; a set's key is its size in zeros, rank kept."""
    import models.engine.symmetry as symmetry

    def searched(G, **_):
        raise AssertionError("automorphisms searched")
    monkeypatch.setattr(symmetry, "gpu_automorphisms", searched)
    symmetry = PreparedFabric(topo.build("gb300nvl72")).symmetry
    # the bound's scope, and the bound's met with NCCL's estimate's (the report's set classes)
    for sym in (symmetry.graph(["nvlink"]), symmetry.both(["nvlink"])):
        assert len(sym.classes) == 1 and [sym.count(k) for k in (2, 36, 72)] == [1, 1, 1]
        classes = sym.set_classes(range(2, 73))
        assert len(classes) == 71 and all(count == math.comb(72, len(rep)) for rep, count in classes.items())
        assert sym.key(["t5.gpu3", "t0.gpu1", "t17.gpu0"], root="t5.gpu3") == ((0, 0, 0), 1)
        assert sym.keys([[0, 9], [3, 70]]) == [((0, 0), None)] * 2
    with pytest.raises(AssertionError, match="searched"):
        PreparedFabric(topo.build("gb300nvl72")).symmetry.graph().key(["t0.gpu0", "t1.gpu0"])


def test_a_server_without_interchangeable_gpus_is_refused_at_once():
    """16 GPUs, each under its own PCIe switch: 65,519 sets of 2 or more GPUs, no two alike."""
    G = topo.build("dgx2")
    H = G.copy()
    # no GPU interchangeable: give each a different memory bandwidth
    for i, g in enumerate(topo.gpus(H)):
        H.nodes[g]["memory_bandwidth"] = 9e11 + i
    sym = PreparedFabric(H).symmetry.graph()
    assert all(len(c) == 1 for c in sym.classes)
    with pytest.raises(SymmetryLimitError, match="65,519 symmetry classes"):
        sym.set_classes(range(2, 17))


def test_a_uniform_clusters_hosts_are_one_class_and_a_fat_trees_are_not():
    assert host_classes(topo.build("4xdgxh100:rail_only")) == [[0, 1, 2, 3]]
    assert host_classes(topo.build("gb200nvl72")) == [list(range(18))]
    # 18 ports per leaf: host 2's NICs straddle two leaves, so it swaps with no host
    assert [2] in host_classes(topo.build("8xdgx2"))


def _is_automorphism(G, pi) -> bool:
    """Whether the node map ``pi`` (identity elsewhere) keeps every edge and its attributes, and
    every moved node's attributes but ``host``."""
    for u, image in pi.items():
        if {**G.nodes[u], "host": None} != {**G.nodes[image], "host": None}:
            return False
    moved = set(pi)
    for u, v, d in G.edges(data=True):
        if (u in moved or v in moved) and G.edges.get((pi.get(u, u), pi.get(v, v))) != d:
            return False
    return True


def test_a_hosts_place_is_its_name_without_the_prefix_its_host_shares():
    """The trays of racks in a cluster (``r1.t2.gpu0``) have the places of a lone DGX's nodes;
    a prefix is stripped only where the whole host shares it, whole components, never the last."""
    places = host_places(topo.build("4xgb200nvl72"))
    assert places["r1.t2.gpu0"] == places["r3.t17.gpu0"] == "gpu0"
    assert host_places(topo.build("2xdgxh100"))["h1.nvswitch3"] == "nvswitch3"
    assert host_places(topo.build("dgxh100"))["gpu5"] == "gpu5"
    G = nx.DiGraph()  # an imported host whose names carry dots of their own
    G.add_nodes_from(["0000:07:00.0", "0000:0f:00.0", "cpu0"], host=0)
    G.add_node("x.y", host=1)
    assert host_places(G) == {"0000:07:00.0": "0000:07:00.0", "0000:0f:00.0": "0000:0f:00.0", "cpu0": "cpu0",
                              "x.y": "y"}


def test_the_trays_of_racks_in_a_cluster_swap_within_their_rack_and_leaf():
    """4 GB200 NVL72 racks on a fat tree: trays of one rack whose NICs share leaves are one class
    (were 72 classes of one tray while a tray's place kept its tray number), never trays of two
    racks (each rack has its own NVLink switch chips), and every swap within a class is an
    automorphism of the whole fabric."""
    G = topo.build("4xgb200nvl72")
    classes = host_classes(G)
    assert sorted(map(len, classes)) == [2, 2, 4, 4, 6, 6, 8, 8, 8, 8, 8, 8]
    domain = {G.nodes[n]["host"]: G.nodes[n]["nvlink_domain"] for n in topo.gpus(G)}
    assert all(len({domain[h] for h in hosts}) == 1 for hosts in classes)
    places = host_places(G)
    nodes_of: dict = {}
    for n, place in places.items():
        nodes_of.setdefault(G.nodes[n]["host"], {})[place] = n
    for hosts in classes:
        a, b = hosts[0], hosts[-1]
        pi = {n: nodes_of[b][p] for p, n in nodes_of[a].items()} | {n: nodes_of[a][p] for p, n in nodes_of[b].items()}
        assert _is_automorphism(G, pi), (a, b)
    # a swap across racks is not one
    a, b = 0, 18
    pi = {n: nodes_of[b][p] for p, n in nodes_of[a].items()} | {n: nodes_of[a][p] for p, n in nodes_of[b].items()}
    assert not _is_automorphism(G, pi)


def test_hosts_a_channel_search_sees_as_copies_ignore_which_switch_a_nic_is_cabled_to():
    """outside="kind" (NcclSystem.host_kind): the hosts of a fat tree are copies for one host's
    search whatever leaf their NICs are cabled to; a host without a NIC is not a copy."""
    assert [2] in host_classes(topo.build("8xdgx2"))
    assert host_classes(topo.build("8xdgx2"), outside="kind") == [list(range(8))]
    assert host_classes(topo.build("2xdgx1v"), outside="kind") == [[0, 1]]
    damaged = topo.transform.remove_nodes(topo.build("2xdgx1v"), ["h1.mlx5_1"])
    assert host_classes(damaged, outside="kind") == [[0], [1]]


def test_the_leaves_of_a_fat_tree_swap_whole_with_their_hosts():
    """16 DGX H100 on a fat tree of 4 leaves: the hosts of a leaf swap (a class each), and so do
    the leaves with their hosts (one unit): two GPUs on two leaves are one shape wherever the
    leaves are, with one estimate, and another shape than two GPUs on one leaf. A leaf that lost
    a spine link swaps with no other."""
    G = topo.build("16xdgxh100")
    classes = host_classes(G)
    assert classes == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert class_units(G, classes) == [[0, 1, 2, 3]]
    prepared = PreparedFabric(G)
    key, plain = prepared.symmetry.nccl(units=True).key, prepared.symmetry.nccl().key
    across = (["h0.gpu0", "h4.gpu0"], ["h8.gpu0", "h12.gpu0"], ["h5.gpu0", "h13.gpu0"])
    assert len({key(s) for s in across}) == 1 and len({plain(s) for s in across}) == 3
    assert key(["h0.gpu0", "h1.gpu0"]) != key(across[0])
    for collective in ("all_reduce", "alltoall"):
        times = {tuple(models.estimate(prepared, collective, [8, 2**30], [prepared.ids[g] for g in s]).time.tolist())
                 for s in across}
        assert len(times) == 1
    damaged = topo.transform.remove_links(G, "net.leaf1", "net.spine0")
    assert class_units(damaged, host_classes(damaged)) == [[0, 2, 3], [1]]


def test_a_communicator_within_one_host_of_a_cluster_is_keyed_by_the_hosts_own_paths():
    """NCCL searches a one-node communicator without NICs: on 2xDGX H100 with rails (NIC i of
    every host cabled to leaf i, which pins each GPU's NIC) the 28 pairs of a host are still
    one class, as on one DGX H100, and two of them have the same estimate. The trays of a GB200
    NVL72 meet on the rack's switches (host -1): their sets keep the cluster's key."""
    prepared = PreparedFabric(topo.build("2xdgxh100:rail"))
    key = prepared.symmetry.nccl("all_reduce").key
    host0 = [g for g in topo.gpus(prepared.G) if prepared.G.nodes[g]["host"] == 0]
    assert len({key(list(pair)) for pair in itertools.combinations(host0, 2)}) == 1
    assert key(host0[:2])[0] == "inside" and key([host0[0], "h1.gpu0"])[0] == "hosts"
    first, last = (models.estimate(prepared, "all_reduce", [8, 2**30], [prepared.ids[g] for g in pair]).time
                   for pair in (host0[:2], host0[-2:]))
    assert first.tolist() == last.tolist()
    racks = PreparedFabric(topo.build("2xgb200nvl72"))
    tray = [g for g in topo.gpus(racks.G) if racks.G.nodes[g]["host"] == 0]
    assert racks.symmetry.nccl("all_reduce").key(tray[:2])[0] == "hosts"


def test_automorphisms_are_bounded_and_the_same_whatever_the_hash_seed(tmp_path):
    """An imported DGX H100 (dgxtopo topo --system dgxh100 | dgxtopo import --gpu h100): 18 NVSwitches
    inferred from NV18, a PCIe tree rebuilt from the matrix. VF2's order followed the hash seed
    (2 s or more than 200 s); now the same maps, classes and set classes in well under a second."""
    text = topo.format_connection_matrix(topo.connection_matrix(topo.build("dgxh100")))
    path = tmp_path / "h100.json"
    path.write_text(topo.to_json(topo.from_nvidia_smi(text, gpu="h100")))
    probe = ("import topo; from models.engine.fabric import PreparedFabric; "
             f"G = topo.from_json(open({str(path)!r}).read()); "
             "maps = topo.gpu_automorphisms(G); s = PreparedFabric(G).symmetry; "
             "print(sorted(tuple(sorted(m.items())) for m in maps), s.graph().classes, "
             "sorted(s.both(['nvlink']).set_classes(range(2, 9)).items()))")
    outputs = set()
    for seed in ("0", "12345"):
        run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        assert run.returncode == 0, run.stderr
        outputs.add(run.stdout)
    assert len(outputs) == 1 and outputs.pop().startswith("[((")
