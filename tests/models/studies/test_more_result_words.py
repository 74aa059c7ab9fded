"""Bound.nvls_why, NetworkLoad.group/nodes and the caveats of Calibration and Check are numbers and
codes; models.present words them as dgx-topo did before they were codes (the strings below were
printed by main before the change)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topo
from models.engine.nccl.channels import channel_graphs
from models.engine.nccl.reasons import Cause, Why
from models.engine.nccl.system import NcclSystem
from models.predict.network import GROUPS, NetworkLoad, _group_of, network_load
from models.present.explain import describe_network_load, explain_bound, network_load_where
from models.present.json_shapes import bound_json, calibration_file_json, check_json
from models.present.reasons_text import nvls_bound_text, reason_text
from models.present.text import calibration_table, caveat_text, caveat_texts, check_table
from models.studies.benchmarks import P2PBenchmark, read_nccl_tests
from models.studies.bounds import bound, nvls_applicable
from models.studies.calibration import Calibration, Caveat, CaveatCode, calibrate, check

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "data"
# A broadcast without rank lines or header: busbw = algbw, so the rows do not tell the ranks.
BROADCAST = """\
# Collective test starting: broadcast_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float    none       0    40.00   26.21   26.21      0    40.00   26.21   26.21      0
   268435456      67108864     float    none       0   3500.0   76.70   76.70      0   3500.0   76.70   76.70      0
"""
RANKS = "broadcast's busbw equals its algbw (factor 1), so the rows do not tell"


# ------------------------------------------------------------------------------- Bound.nvls
NVLS_WORDS = {
    "dgx1v": (False, Why(Cause.NVLS_NO_NVSWITCH), "not applicable: no NVSwitch in the fabric"),
    "2xdgx1v": (False, Why(Cause.NVLS_NO_NVSWITCH), "not applicable: no NVSwitch in the fabric"),
    "dgx2": (False, Why(Cause.NVLS_NO_SHARP, names=("NVSwitch (first generation)",)),
             "not applicable: NVSwitch (first generation) cannot reduce in the switch (NVLS needs NVSwitch gen 3 "
             "or later)"),
    "dgxa100": (False, Why(Cause.NVLS_NO_SHARP, names=("NVSwitch (second generation)",)),
                "not applicable: NVSwitch (second generation) cannot reduce in the switch (NVLS needs NVSwitch "
                "gen 3 or later)"),
    "dgxh100": (True, Why(Cause.NVLS_SWITCH_REDUCES, names=("NVSwitch (third generation)",)),
                "applicable: NVSwitch (third generation) reduce in the switch"),
    "dgxb200": (True, Why(Cause.NVLS_SWITCH_REDUCES, names=("NVLink 5 switch chip (fourth generation NVSwitch)",)),
                "applicable: NVLink 5 switch chip (fourth generation NVSwitch) reduce in the switch"),
}


@pytest.mark.parametrize("system", sorted(NVLS_WORDS))
def test_nvls_applicable_is_a_why_worded_as_before(system):
    applies, why, words = NVLS_WORDS[system]
    assert nvls_applicable(topo.build(system)) == (applies, why)
    assert nvls_bound_text(why) == words


def test_hopper_switches_with_older_gpus_say_the_compute_capability():
    G = topo.build("dgxh100")
    for g in topo.gpus(G):
        G.nodes[g]["compute_capability"] = 80
    applies, why = nvls_applicable(G)
    assert (applies, why) == (False, Why(Cause.NVLS_COMPUTE_CAPABILITY, compute_capability=80, limit=90))
    assert nvls_bound_text(why) == ("not applicable: NVLS needs Hopper GPUs or later, the GPUs have compute "
                                    "capability 80")


def test_a_bound_holds_the_why_and_its_json_and_explanation_word_it():
    b = bound(topo.build("dgxh100"), "all_reduce", 2**30, nccl=False)
    assert b.nvls_why == NVLS_WORDS["dgxh100"][1] and b.nvls_applies
    assert bound_json(b)["nvls"] == NVLS_WORDS["dgxh100"][2]
    assert "in-switch reduction: applicable: NVSwitch (third generation) reduce in the switch" in explain_bound(b)
    (row,) = b.to_records()
    assert (row["nvls_applies"], row["nvls_cause"]) == (True, "nvls_switch_reduces")
    assert nvls_bound_text(b.nvls_why) == NVLS_WORDS["dgxh100"][2]


def test_a_bound_of_another_collective_says_it_is_not_an_all_reduce():
    b = bound(topo.build("dgxh100"), "all_gather", 2**30, nccl=False)
    assert b.nvls_why == Why(Cause.NVLS_NOT_ALL_REDUCE, collective="all_gather") and not b.nvls_applies
    assert bound_json(b)["nvls"] == "not applicable: not an all_reduce"
    assert "in-switch reduction" not in explain_bound(b)
    assert b.to_records()[0]["nvls_cause"] == "nvls_not_all_reduce"
    assert nvls_bound_text(b.nvls_why) == "not applicable: not an all_reduce"


def test_any_other_cause_reads_as_not_applicable_with_the_engines_sentence():
    why = Why(Cause.NO_NVLS, release="2.16.5")
    assert nvls_bound_text(why) == "not applicable: " + reason_text(why)


# ------------------------------------------------------------------------- NetworkLoad.where
def test_the_busiest_group_is_its_kind_and_nodes_worded_as_before():
    G = topo.build("16xdgx2:fat_tree:oversub=4")
    graphs = channel_graphs(NcclSystem(G), topo.gpus(G))
    load = network_load(graphs.fabric, graphs.ring, "ring")
    assert (load.group, load.nodes, load.edges) == ("down", ("net.leaf4",), (("net.spine0", "net.leaf4"),))
    assert network_load_where(load) == "net.leaf4's down-links from the tier above"
    assert "busiest: net.leaf4's down-links from the tier above (1 edge) carry 8 of them" in describe_network_load(load)
    assert (load.to_records()[0]["group"], load.to_records()[0]["group_nodes"]) == ("down", "net.leaf4")


def test_a_nic_port_is_one_link():
    G = topo.build("2xdgx1v")
    graphs = channel_graphs(NcclSystem(G), topo.gpus(G))
    load = network_load(graphs.fabric, graphs.ring, "ring")
    assert (load.group, load.nodes) == ("link", ("h0.mlx5_0", "net.leaf0"))
    assert network_load_where(load) == "h0.mlx5_0->net.leaf0"


@pytest.mark.parametrize("key, words", [
    (("up", "net.leaf4"), "net.leaf4's up-links"),
    (("down", "net.leaf4"), "net.leaf4's down-links from the tier above"),
    (("edge", ("h0.mlx5_0", "net.leaf0")), "h0.mlx5_0->net.leaf0"),
])
def test_every_group_of_the_charge_is_worded(key, words):
    group, nodes = _group_of(key)
    assert group in GROUPS
    load = NetworkLoad("ring", 8, 0.5, 12e9, 6e9, (), 8.0, 50e9, group=group, nodes=nodes)
    assert network_load_where(load) == words
    assert network_load_where(NetworkLoad("ring", 8, 0.5, 12e9, 6e9, (), 8.0, 50e9)) == ""


# ------------------------------------------------------------------- Calibration/Check.notes
P2P_WORDS = "2 p2pBandwidthLatencyTest output(s) read but not fitted: the P2P copy model is calibrated separately"
FLOOR_WORDS = "floor held (all runs use one -g: floor and launch_per_gpu are not separable)"


@pytest.fixture(scope="module")
def fitted():
    run = read_nccl_tests((EXAMPLE / "dgx2_12gpu_all_reduce.txt").read_text(), name="ar")
    p2p = P2PBenchmark((), None, {}, {}, "p")
    return calibrate([run, p2p, p2p], topo.dgx2())


def test_a_calibration_holds_its_caveats_worded_as_before(fitted):
    assert fitted.caveats == (Caveat(CaveatCode.P2P_NOT_FITTED, count=2), Caveat(CaveatCode.FLOOR_HELD))
    assert caveat_texts(fitted.caveats) == (P2P_WORDS, FLOOR_WORDS)
    assert calibration_table(fitted).endswith(f"  note: {P2P_WORDS}\n  note: {FLOOR_WORDS}")
    assert calibration_file_json(fitted)["notes"] == [P2P_WORDS, FLOOR_WORDS]
    assert fitted.caveats[0].to_records() == [{"code": "p2p_not_fitted", "count": 2, "run": None,
                                               "ranks_source": "", "system": None, "text": "",
                                               "collective": None, "calibration_system": None,
                                               "gpus_per_thread": None, "median_error_g1": None,
                                               "median_error_gn": None, "below": None, "rows": None}]


def test_a_calibration_file_keeps_its_notes_both_ways(fitted):
    text = json.dumps(calibration_file_json(fitted), indent=2)
    back = Calibration.from_json(text)
    assert back.caveats == (Caveat(CaveatCode.READ, text=P2P_WORDS), Caveat(CaveatCode.READ, text=FLOOR_WORDS))
    assert json.dumps(calibration_file_json(back), indent=2) == text
    shipped = Calibration.from_json((EXAMPLE / "dgx2_calibration.json").read_text())
    assert caveat_texts(shipped.caveats) == (FLOOR_WORDS,)
    assert caveat_text(shipped.caveats[0]) == FLOOR_WORDS


@pytest.mark.parametrize("name, system, label, system_words", [
    ("", "DGX-2", "the run", "DGX-2"), ("bc", None, "bc", "the system")])
def test_a_check_of_a_run_without_its_ranks_says_the_gpus_were_assumed(name, system, label, system_words):
    G = topo.dgx2()
    if system is None:
        del G.graph["name"]
    c = check(read_nccl_tests(BROADCAST, name=name), G, gpus_per_thread=1)  # -g given: only the GPUs assumed
    assert c.caveats == (Caveat(CaveatCode.GPUS_ASSUMED, count=16, run=name, ranks_source=f"unknown: {RANKS}",
                                system=system),)
    words = (f"{label} does not show its rank count (no complete device lines; {RANKS}): assumed every GPU of "
             f"{system_words} (16); expected gpus= naming them if the run used fewer")
    assert caveat_texts(c.caveats) == (words,)
    assert check_table(c).endswith(f"# note: {words}") and check_json(c)["notes"] == [words]
    assert len(c.gpus) == 16


def test_a_check_that_assumed_nothing_has_no_notes():
    c = check(read_nccl_tests((EXAMPLE / "dgx2_12gpu_all_reduce.txt").read_text()), topo.dgx2())
    assert c.caveats == () and "notes" not in check_json(c) and caveat_texts(c.caveats) == ()
    assert c.gpus == (1, 2, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)


def test_a_caveat_without_its_source_says_no_device_lines():
    caveat = Caveat(CaveatCode.GPUS_ASSUMED, count=8, run="x", system="DGX-1V")
    assert caveat_text(caveat) == ("x does not show its rank count (no complete device lines; no device lines): "
                                   "assumed every GPU of DGX-1V (8); expected gpus= naming them if the run used "
                                   "fewer")
