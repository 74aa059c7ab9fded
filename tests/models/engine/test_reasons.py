"""Why NCCL says no, as codes and numbers (models.engine.nccl.reasons), and its words
(models.present.reasons_text).

Every :class:`Cause` is reached through the engine's own calls (a what-if fabric, a changed
profile or, for one defensive branch, a patched NIC lookup where no built-in fabric gets there)
and worded; the sentences are the ones dgx-topo 0.3.0 printed, copied from its output before the
reasons became codes (so ``--explain``, the README and the report read as they did).
"""

from __future__ import annotations

import dataclasses
import pickle

import pytest

import topo
from models.engine.nccl.algorithms import RING
from models.engine.nccl import channels as channels_module
from models.engine.nccl.channels import channel_graphs
from models.engine.nccl.nvls import nvls_search, nvls_support
from models.engine.nccl.profiles import nccl_profile
from models.engine.nccl.reasons import Cause, NvlsChoice, Why
from models.engine.nccl.system import NcclSystem
from models.engine.nccl.tuning import (ChannelGraph, Communicator, NoAlgorithmError, TuningError, applicability,
                                       bus_bandwidth, latency, nvls_choice, select_algorithm, tune)
from models.predict.collectives import estimate
from models.present.reasons_text import error_text, nvls_choice_text, reason_text


def _profile(name):
    if name == "min_channels_2":   # a v2.28-like rule: the tuning needs 2 NVLS channels
        p = nccl_profile("2.27.7")
        return dataclasses.replace(p, nvls=dataclasses.replace(p.nvls, min_tuning_channels=2))
    if name == "zero_bus_cap":     # a bus cap of 0: an enabled cell's bandwidth is 0
        return dataclasses.replace(nccl_profile("2.27.7"), sm80_bus_cap=0.0)
    return name


def _comm(version="2.27.7", nranks=8, nnodes=1, cc=90, cc_max=None, type_intra="NVL", type_inter="PIX",
          cuda_11_8=False, nvls=None):
    g = ChannelGraph(4, 20e9, type_intra, type_inter=type_inter, pattern="balanced_tree")
    graph = None if nvls is None else ChannelGraph(nvls, 40e9, "NVL", bw_inter=60e9, pattern="nvls",
                                                   same_channels=False)
    return Communicator(nranks, g, g, cc, nnodes=nnodes, compute_capability_max=cc_max, cuda_11_8=cuda_11_8,
                        profile=_profile(version), nvls=graph)


def _fabric(system, version=None, what_if=None):
    G = topo.build(system)
    if what_if == "gen2_switches":      # H100s on NVSwitch gen2 chips (no in-switch reduction)
        for n, k in G.nodes(data="kind"):
            if k == "nvswitch":
                G.nodes[n]["model"] = topo.specs.NVSWITCHES["nvswitch2"].model
    elif what_if == "sm90":             # the GPUs read as sm90 (a DGX-1V has no NVSwitch)
        for n, k in G.nodes(data="kind"):
            if k == "gpu":
                G.nodes[n]["compute_capability"] = 90
    elif what_if == "slow_nvlink":      # NVLinks at 1/1000: no NVLS channel fits NCCL's speeds
        for _, _, d in G.edges(data=True):
            if d["kind"] == "nvlink":
                d["bandwidth"] /= 1000
    return NcclSystem(G, version)


def _gpus(system, n=None):
    G = topo.build(system)
    nodes = sorted((v for v, k in G.nodes(data="kind") if k == "gpu"),
                   key=lambda v: (G.nodes[v]["host"], G.nodes[v]["index"]))
    return nodes if n is None else nodes[:n]


def _graphs(system, version=None, what_if=None):
    return channel_graphs(_fabric(system, version, what_if), _gpus(system))


#: Cause -> (how the engine reaches it, the sentence dgx-topo 0.3.0 gave there). The ways:
#: ("cell", collective, algorithm, protocol, Communicator keywords): applicability's answer;
#: ("tune", ...): the cell's Tuning.why; ("system", system, release, collective, algorithm,
#: protocol): applicability on the system's channel graphs; ("support", system, release, what-if,
#: GPUs, nodes, clique): nvls_support's answer; ("graphs", system, release, what-if): the channel
#: graphs' nvls_why; ("comm",): a Communicator's default; ("comm_graphs", system): the
#: communicator of the system's channel graphs.
CASES = {
    Cause.NO_TREES: (("cell", "all_reduce", "tree", "Simple", dict(version="2.3.7", cc=70)),
                     "NCCL 2.3.7 has no trees (they arrive in v2.4.2)"),
    Cause.TREES_ACROSS_NODES: (("cell", "all_reduce", "tree", "LL", dict(version="2.4.8", cc=70)),
                               "NCCL 2.4.8 runs trees only across 2 or more nodes"),
    Cause.RING_ONLY: (("system", "dgx1v", None, "broadcast", "tree", "Simple"),
                      "NCCL runs broadcast with Ring only (src/graph/tuning.cc)"),
    Cause.NO_LL128: (("cell", "all_reduce", "ring", "LL128", dict(version="2.4.8", cc=70)),
                     "NCCL 2.4.8 has no LL128 (it arrives in v2.5.6)"),
    Cause.LL128_COMPUTE_CAPABILITY: (("cell", "all_reduce", "ring", "LL128", dict(cc=60)),
                                     "LL128 needs compute capability >= 70, got 60"),
    Cause.LL128_LISTED_COMPUTE_CAPABILITIES: (
        ("cell", "all_reduce", "ring", "LL128", dict(version="2.12.12", cc=90)),
        "LL128 in NCCL 2.12.12 needs every GPU at one of compute capabilities [70, 80], got 90-90"),
    Cause.LL128_MIXED_COMPUTE_CAPABILITIES: (("cell", "all_reduce", "ring", "LL128", dict(cc=70, cc_max=80)),
                                             "LL128 needs one compute capability across GPUs, got 70-80"),
    Cause.LL128_TYPE_INTRA: (("cell", "all_reduce", "ring", "LL128", dict(cc=70, type_intra="PHB")),
                             "LL128 needs typeIntra <= NVB, the ring graph has PHB"),
    Cause.LL128_TYPE_INTER: (("cell", "all_reduce", "tree", "LL128", dict(nranks=16, nnodes=2, type_inter="PHB")),
                             "LL128 needs typeInter <= PXN, the tree graph has PHB"),
    Cause.LL128_CUDA_11_8: (("cell", "all_reduce", "ring", "LL128", dict(nranks=2, cuda_11_8=True)),
                            "LL128 is off for sm90 Ring AllReduce on 2 ranks with CUDA 11.8"),
    Cause.NO_PAT: (("cell", "all_gather", "pat", "Simple", dict(version="2.21.5", nranks=4, nnodes=4)),
                   "NCCL 2.21.5 has no PAT (it arrives in v2.23)"),
    Cause.PAT_COLLECTIVE: (("cell", "all_reduce", "pat", "Simple", dict(nranks=4, nnodes=4)),
                           "PAT runs all_gather and reduce_scatter only, not all_reduce"),
    Cause.PAT_PROTOCOL: (("cell", "all_gather", "pat", "LL", dict(nranks=4, nnodes=4)),
                         "PAT runs the Simple protocol only"),
    Cause.PAT_RANKS_PER_NODE: (("cell", "all_gather", "pat", "Simple", dict(nranks=8, nnodes=4)),
                               "NCCL enables PAT with one rank per node only (nNodes == nRanks), this "
                               "communicator has 2 ranks per node"),
    Cause.PAT_COMPUTE_CAPABILITY: (("cell", "reduce_scatter", "pat", "Simple", dict(nranks=4, nnodes=4, cc=50)),
                                   "PAT needs compute capability >= 60"),
    Cause.NO_NVLS_ALGORITHM: (("system", "dgxh100", "2.16", "all_reduce", "nvls", "Simple"),
                              "NCCL 2.16.5 has no NVLS (NVLS arrives in v2.17.1, NVLSTree in v2.18)"),
    Cause.NO_NVLS_TREE: (("cell", "all_reduce", "nvls_tree", "Simple",
                          dict(version="2.17.1", nranks=16, nnodes=2, nvls=8)),
                         "NCCL 2.17.1 has no NVLSTree (it arrives in v2.18)"),
    Cause.NO_NVLS_SUPPORT: (("system", "dgxa100", None, "all_reduce", "nvls", "Simple"),
                            "no NVLS support: NVLS needs every GPU at compute capability 90 or later (Hopper), "
                            "the GPUs have 80"),
    Cause.NVLS_PROTOCOL: (("system", "dgxh100", None, "all_reduce", "nvls", "LL128"),
                          "NVLS runs the Simple protocol only"),
    Cause.NVLS_TREE_COLLECTIVE: (("cell", "all_gather", "nvls_tree", "Simple", dict(nranks=16, nnodes=2, nvls=8)),
                                 "NVLSTree runs all_reduce only, not all_gather"),
    Cause.NVLS_COLLECTIVE: (("system", "dgxh100", "2.18", "reduce_scatter", "nvls", "Simple"),
                            "NCCL 2.18.6 runs NVLS for all_reduce only"),
    Cause.NVLS_ACROSS_NODES: (("cell", "all_reduce", "nvls", "Simple", dict(nranks=16, nnodes=2, nvls=8)),
                              "NVLS across nodes needs CollNet (a SHARP-enabled network), which this fabric "
                              "has not: NVLSTree runs instead"),
    Cause.NVLS_TREE_SINGLE_NODE: (("system", "dgxh100", None, "all_reduce", "nvls_tree", "Simple"),
                                  "NVLSTree is disabled on a single node (NVLS runs there)"),
    Cause.NVLS_ARITY: (("cell", "all_gather", "nvls", "Simple", dict(nranks=36, nvls=32)),
                       "NVLS all_gather needs at most NCCL_MAX_NVLS_ARITY = 32 ranks per node, this "
                       "communicator has 36"),
    Cause.NVLS_CHANNELS: (("cell", "all_reduce", "nvls", "Simple", dict(version="min_channels_2", nvls=1)),
                          "NCCL 2.27.7 needs 2 or more NVLS channels, the search found 1"),
    Cause.ZERO_BANDWIDTH: (("tune", "all_reduce", "ring", "Simple", dict(version="zero_bus_cap")),
                           "bus bandwidth is 0"),
    Cause.NOT_SERVED: (("cell", "broadcast", dataclasses.replace(RING, name="mine", collectives=frozenset(
        {"all_reduce"})), "Simple", {}), "mine does not run broadcast"),
    Cause.NO_NVLS: (("graphs", "dgxh100", "2.16", None), "NCCL 2.16.5 has no NVLS (it arrives in v2.17.1)"),
    Cause.NVLS_COMPUTE_CAPABILITY: (("support", "dgxa100", None, None, 8, 1, None),
                                    "NVLS needs every GPU at compute capability 90 or later (Hopper), the "
                                    "GPUs have 80"),
    Cause.NVLS_NO_NVSWITCH: (("support", "dgx1v", None, "sm90", 8, 1, None),
                             "the GPUs reach no NVSwitch: NCCL's NVLS search needs an NVSwitch node"),
    Cause.NVLS_NO_SHARP: (("support", "dgxh100", None, "gen2_switches", 8, 1, None),
                          "the NVSwitches (NVSwitch (second generation)) do not reduce in the switch: NCCL "
                          "needs NVLink SHARP (NVSwitch gen3 or later) for NVLS"),
    Cause.NVLS_GPUS: (("support", "dgxh100", None, None, 2, 1, None),
                      "NCCL 2.27.7 disables NVLS with 2 GPU(s) per node (it needs 3 or more)"),
    Cause.NVLS_NODES: (("support", "dgxh100", "2.17.1", None, 8, 2, None),
                       "NCCL 2.17.1 disables NVLS across nodes (no NVLSTree before v2.18)"),
    Cause.NVLS_MNNVL: (("support", "dgxh100", "2.18.6", None, 8, 1, 8),
                       "NCCL 2.18.6 does not run NVLS on a multi-node NVLink clique"),
    Cause.NVLS_MNNVL_CLIQUE: (("support", "dgxh100", "2.21.5", None, 8, 1, 2),
                              "NCCL 2.21.5 runs NVLS on a multi-node NVLink clique of more than 2 GPUs, "
                              "this one has 2"),
    Cause.NVLS_NO_NIC: (("graphs", "2xdgxh100", None, "no_nic"), "host 0 has no NIC on a network for NVLSTree"),
    Cause.NVLS_NO_CHANNEL: (("graphs", "dgxh100", None, "slow_nvlink"),
                            "the NVLS search found no channel (NCCL clears nvlsSupport)"),
    Cause.NO_NVLS_GRAPH: (("comm",), "no NVLS graph was given (NCCL's NVLS search needs NVLink SHARP switches)"),
    Cause.NVLS_SUPPORTED: (("comm_graphs", "dgxh100"), "NVLS is supported"),
    Cause.NVLS_NOT_ALL_REDUCE: (("bound", "dgx1v", "all_gather"),
                                "in-switch reduction is weighed for all_reduce only, not all_gather"),
    Cause.NVLS_SWITCH_REDUCES: (("bound", "dgxh100", "all_reduce"),
                                "the NVSwitches (NVSwitch (third generation)) reduce in the switch"),
}


def _reach(way, monkeypatch):
    """The engine's answer along ``way`` (:data:`CASES`)."""
    kind, *a = way
    if kind == "cell":
        collective, algorithm, protocol, keywords = a
        enabled, why = applicability(collective, algorithm, protocol, _comm(**keywords))
        assert enabled is False
        return why
    if kind == "tune":
        collective, algorithm, protocol, keywords = a
        t = tune(collective, algorithm, protocol, _comm(**keywords))
        assert not t.enabled and t.bandwidth == 0 and t.bus.value == 0
        return t.why
    if kind == "system":
        system, version, collective, algorithm, protocol = a
        enabled, why = applicability(collective, algorithm, protocol, _graphs(system, version).communicator)
        assert enabled is False
        return why
    if kind == "support":
        system, version, what_if, n, nnodes, clique = a
        supported, why = nvls_support(_fabric(system, version, what_if), _gpus(system, n), nnodes=nnodes,
                                      clique=clique)
        assert supported is False
        return why
    if kind == "graphs":
        system, version, what_if = a
        if what_if == "no_nic":  # no built-in fabric gets there: the ring search needs the NICs first
            monkeypatch.setattr(channels_module, "_network_nics", lambda fabric, host: ())
            what_if = None
        g = _graphs(system, version, what_if)
        assert g.nvls is None and g.communicator.nvls is None and g.communicator.nvls_why == g.nvls_why
        return g.nvls_why
    if kind == "comm":
        return _comm().nvls_why
    if kind == "bound":  # models.studies.bounds: whether a bound's switches could reduce (NVLS)
        from models.studies.bounds import bound

        system, collective = a
        return bound(topo.build(system), collective, 2**20, nccl=False).nvls_why
    g = _graphs(a[0])
    assert g.nvls is not None and g.nvls_why is None
    return g.communicator.nvls_why


def test_every_cause_has_a_case():
    assert list(CASES) == list(Cause)


@pytest.mark.parametrize("cause", list(Cause), ids=lambda c: c.name)
def test_every_cause_is_reached_and_worded_as_before(cause, monkeypatch):
    way, sentence = CASES[cause]
    why = _reach(way, monkeypatch)
    assert isinstance(why, Why) and why.cause is cause
    assert reason_text(why) == sentence
    assert repr(why).startswith(f"Why({cause.name}")
    rows = why.to_records()
    assert rows[0]["cause"] == cause.value and [r["level"] for r in rows] == list(range(len(rows)))
    assert len({tuple(r) for r in rows}) == 1     # every row the same keys, in the same order


# ------------------------------------------------------------------ known answers
def test_a_dgx_1v_broadcast_runs_ring_only():
    comm = _graphs("dgx1v").communicator
    for protocol in ("LL", "LL128", "Simple"):
        assert applicability("broadcast", "tree", protocol, comm) == (False, Why(Cause.RING_ONLY, collective="broadcast"))
    assert applicability("broadcast", "ring", "LL128", comm) == (True, None)   # V100 NVLink: LL128 runs
    with pytest.raises(NoAlgorithmError) as caught:
        select_algorithm("broadcast", 2**20, comm, algorithm="tree")
    assert caught.value.whys == (Why(Cause.RING_ONLY, collective="broadcast"),) * 3
    assert error_text(caught.value) == (
        "no enabled algorithm/protocol for broadcast matching algorithm='tree', protocol=None: tree/LL: NCCL runs "
        "broadcast with Ring only (src/graph/tuning.cc); tree/LL128: NCCL runs broadcast with Ring only "
        "(src/graph/tuning.cc); tree/Simple: NCCL runs broadcast with Ring only (src/graph/tuning.cc)")


def test_a_dgx_h100_on_nccl_2_16_has_no_nvls():
    g = _graphs("dgxh100", "2.16")
    assert g.nvls is None and g.nvls_why == Why(Cause.NO_NVLS, release="2.16.5")
    assert g.communicator.nvls_why == g.nvls_why
    choice = nvls_choice("all_reduce", 2**30, g.communicator)
    assert choice == NvlsChoice("all_reduce", "nvls", 2**30, why=Why(Cause.NO_NVLS_ALGORITHM, release="2.16.5",
                                                                     algorithm="nvls"))
    assert nvls_choice_text(choice) == ("NVLS not chosen for all_reduce: NCCL 2.16.5 has no NVLS (NVLS arrives in "
                                        "v2.17.1, NVLSTree in v2.18)")
    assert nvls_support(_fabric("dgxh100", "2.17.1"), _gpus("dgxh100")) == (True, None)


@pytest.mark.parametrize("keywords, why", [
    (dict(cc=70), None),                                                    # DGX-1V: NVLink, one V100 kind
    (dict(cc=70, version="2.12.12"), None),                                 # v2.12: all sm70 is listed
    (dict(cc=70, type_intra="PHB"), Why(Cause.LL128_TYPE_INTRA, algorithm="ring", path_limit="NVB", path_type="PHB")),
    (dict(cc=70, type_intra="NVB", version="2.12.12"),
     Why(Cause.LL128_TYPE_INTRA, algorithm="ring", path_limit="NVL", path_type="NVB")),
    (dict(cc=70, cc_max=80), Why(Cause.LL128_MIXED_COMPUTE_CAPABILITIES, compute_capability=70,
                                 compute_capability_max=80)),
    (dict(cc=70, cc_max=80, version="2.12.12"),
     Why(Cause.LL128_LISTED_COMPUTE_CAPABILITIES, release="2.12.12", compute_capability=70,
         compute_capability_max=80, allowed=(70, 80))),
    (dict(cc=70, version="2.4.8"), Why(Cause.NO_LL128, release="2.4.8")),
    (dict(cc=70, nranks=16, nnodes=2, type_inter="PHB"),                   # V100 across nodes: PXB is the limit
     Why(Cause.LL128_TYPE_INTER, algorithm="ring", path_limit="PXB", path_type="PHB")),
])
def test_v100_ll128_cases(keywords, why):
    """LL128 on V100 (sm70): NVIDIA/nccl v2.27.7-1, v2.12.12-1 and v2.4.8-1 src/graph/tuning.cc."""
    assert applicability("all_reduce", "ring", "LL128", _comm(**keywords)) == (why is None, why)


def test_nvls_choice_holds_the_numbers_its_sentence_gave():
    comm = _graphs("dgxh100").communicator
    large = nvls_choice("all_reduce", 2**30, comm)
    assert (large.chosen, large.nchannels, large.bw_intra, large.bw_inter) == (True, 8, 40e9, 60e9)
    assert (large.winner_algorithm, large.winner_protocol, large.winner_time) == ("nvls", "Simple", large.time)
    assert nvls_choice_text(large) == ("NVLS chosen for all_reduce of 1073741824 B: 8 heads x 40 GB/s (bwInter 60), "
                                       "busBw 320.0 GB/s, latency 25.0 us, time 4051.5 us")
    small = nvls_choice("all_reduce", [8, 4096], comm)       # the largest size is explained
    assert small.nbytes == 4096 and not small.chosen and small.enabled
    assert nvls_choice_text(small) == ("NVLS not chosen for all_reduce of 4096 B: ring/LL takes 15.1 us, NVLS 8 heads "
                                       "x 40 GB/s (bwInter 60), busBw 320.0 GB/s, latency 25.0 us, time 25.0 us")
    assert nvls_choice_text(nvls_choice("all_gather", 2**30, comm)) == (
        "NVLS not chosen for all_gather of 1073741824 B: ring/Simple takes 2642.0 us, NVLS 8 heads x 40 GB/s "
        "(bwInter 60), busBw 280.0 GB/s, latency 25.0 us, time 3859.8 us")
    tree = nvls_choice("all_reduce", 2**30, _graphs("2xdgxh100").communicator)
    assert tree.algorithm == "nvls_tree" and tree.chosen
    assert nvls_choice_text(tree) == ("NVLSTree chosen for all_reduce of 1073741824 B: 8 heads x 40 GB/s (bwInter 48), "
                                      "busBw 320.0 GB/s, latency 53.0 us, time 4079.5 us")
    off = nvls_choice("all_reduce", 2**30, _graphs("dgxa100").communicator)
    assert not off.enabled and not off.chosen and off.nchannels == 0
    assert nvls_choice_text(off) == ("NVLS not chosen for all_reduce: no NVLS support: NVLS needs every GPU at compute "
                                     "capability 90 or later (Hopper), the GPUs have 80")
    # NVLS enabled but the others untimed: v2.17.1 has no bandwidth caps for sm100.
    untimed = nvls_choice("all_reduce", 2**30, _comm(version="2.17.1", cc=100, nvls=8))
    assert untimed.enabled and not untimed.chosen and "compute capability < 90" in untimed.error
    assert nvls_choice_text(untimed) == (
        "NVLS enabled for all_reduce, but the other algorithms cannot be timed: NCCL profile 2.17.1 has "
        "bandwidth-cap rows for compute capability < 90 only (its llMaxBws rows, NVIDIA/nccl v2.17.1-1 "
        "src/graph/tuning.cc); received compute capability 100; expected a profile such as 2.27.7 "
            "(Blackwell from 2.25)")
    assert nvls_choice_text(None) == "" and reason_text(None) == ""


def test_the_estimate_carries_the_nvls_choice():
    e = estimate(topo.build("dgxh100"), "all_reduce", [4096, 2**30])
    assert e.nvls_choice == nvls_choice("all_reduce", 2**30, _graphs("dgxh100").communicator)
    assert estimate(topo.build("dgxh100"), "sendrecv", 2**20, [0, 1]).nvls_choice is None   # not NCCL's tuning


# ------------------------------------------------------------------ errors
def test_tuning_errors_name_their_reasons_and_present_words_them():
    v = _graphs("dgx1v").communicator
    with pytest.raises(NoAlgorithmError) as caught:
        select_algorithm("all_reduce", 2**30, v, algorithm="nvls")
    support = Why(Cause.NVLS_COMPUTE_CAPABILITY, compute_capability=70, limit=90)
    assert caught.value.whys == (Why(Cause.NO_NVLS_SUPPORT, support=support),) * 3
    assert error_text(caught.value) == (
        "no enabled algorithm/protocol for all_reduce matching algorithm='nvls', protocol=None: nvls/LL: no NVLS "
        "support: NVLS needs every GPU at compute capability 90 or later (Hopper), the GPUs have 70; nvls/LL128: no "
        "NVLS support: NVLS needs every GPU at compute capability 90 or later (Hopper), the GPUs have 70; "
        "nvls/Simple: no NVLS support: NVLS needs every GPU at compute capability 90 or later (Hopper), the GPUs "
        "have 70")
    for call in (bus_bandwidth, latency):
        with pytest.raises(TuningError) as caught:
            call("all_reduce", "nvls", "Simple", _comm())
        assert caught.value.whys == (Why(Cause.NO_NVLS_GRAPH),)
        assert error_text(caught.value) == ("nvls needs the communicator's NVLS graph: no NVLS graph was given "
                                            "(NCCL's NVLS search needs NVLink SHARP switches)")
    again = pickle.loads(pickle.dumps(caught.value))            # process pools pickle errors
    assert again.whys == caught.value.whys and str(again) == str(caught.value)
    assert error_text(ValueError("plain")) == "plain"
    with pytest.raises(TuningError, match="nvls_why must be a Why"):
        Communicator(8, _comm().ring, _comm().tree, 90, nvls_why="no NVLS")


def test_the_command_line_words_a_tuning_error(capsys):
    from models.present.cli import main
    assert main(["collective", "all_reduce", "--system", "dgxa100", "--algo", "nvls", "--proto", "LL"]) == 2
    assert capsys.readouterr().err == (
        "dgxtopo: error: no enabled algorithm/protocol for all_reduce matching algorithm='nvls', protocol='LL': "
        "nvls/LL: no NVLS support: NVLS needs every GPU at compute capability 90 or later (Hopper), the GPUs "
        "have 80\n")


# ------------------------------------------------------------------ the fields' words


def test_the_reasons_of_a_tuning_a_communicator_and_an_estimate_are_worded():
    g = _graphs("dgxh100", "2.16")
    e = estimate(topo.build("dgxa100"), "all_reduce", 2**20)
    assert reason_text(tune("broadcast", "tree", "Simple", g.communicator).why) == \
        "NCCL runs broadcast with Ring only (src/graph/tuning.cc)"
    assert reason_text(tune("all_reduce", "ring", "Simple", g.communicator).why) == ""
    assert reason_text(g.nvls_why) == reason_text(g.communicator.nvls_why) == \
        "NCCL 2.16.5 has no NVLS (it arrives in v2.17.1)"
    assert nvls_choice_text(e.nvls_choice) == ("NVLS not chosen for all_reduce: no NVLS support: NVLS needs every "
                                               "GPU at compute capability 90 or later (Hopper), the GPUs have 80")


# ------------------------------------------------------------------ records
def test_records_of_a_reason_and_its_support():
    why = Why(Cause.NO_NVLS_SUPPORT, support=Why(Cause.NVLS_NO_SHARP, names=("NVSwitch A", "NVSwitch B")))
    outer, inner = why.to_records()
    assert (outer["level"], outer["cause"], outer["names"]) == (0, "no_nvls_support", "")
    assert (inner["level"], inner["cause"], inner["names"]) == (1, "nvls_no_sharp", "NVSwitch A,NVSwitch B")
    (listed,) = Why(Cause.LL128_LISTED_COMPUTE_CAPABILITIES, release="2.12.12", compute_capability=90,
                    compute_capability_max=90, allowed=(70, 80)).to_records()
    assert (listed["allowed"], listed["compute_capability"], listed["release"]) == ("70,80", 90, "2.12.12")
    (cell,) = tune("broadcast", "tree", "LL", _comm()).to_records()
    assert (cell["enabled"], cell["reason"], cell["busbw_Bps"]) == (False, "ring_only", None)
    assert tune("all_reduce", "ring", "LL", _comm()).to_records()[0]["reason"] is None


def test_records_of_an_nvls_choice():
    comm = _graphs("dgxh100").communicator
    (row,) = nvls_choice("all_reduce", 2**30, comm).to_records()
    assert (row["algorithm"], row["nbytes"], row["enabled"], row["cause"], row["chosen"]) == (
        "nvls", 2**30, True, None, True)
    assert (row["nchannels"], row["bw_intra_Bps"], row["bw_inter_Bps"], row["busbw_Bps"]) == (8, 40e9, 60e9, 320e9)
    assert row["latency_s"] == pytest.approx(25e-6) and row["time_s"] == row["winner_time_s"]
    (off,) = nvls_choice("all_reduce", 2**30, _graphs("dgxa100").communicator).to_records()
    assert (off["enabled"], off["cause"], off["chosen"], off["nchannels"], off["winner_algorithm"]) == (
        False, "no_nvls_support", False, 0, None)
    # What a disabled NVLS has not got is None, not a zero that reads as a measurement.
    assert {off[k] for k in ("bw_intra_Bps", "bw_inter_Bps", "busbw_Bps", "latency_s", "time_s", "winner_time_s")} == {None}
    assert list(off) == list(row)


def test_records_of_channel_graphs_and_the_nvls_graph():
    g = _graphs("dgxh100")
    rows = g.to_records()
    assert [(r["graph"], r["searched"], r["pattern"]) for r in rows] == [
        ("ring", True, "ring"), ("tree", True, "balanced_tree"), ("nvls", True, "nvls")]
    nvls = rows[-1]
    assert (nvls["nchannels"], nvls["bw_intra_Bps"], nvls["bw_inter_Bps"]) == (8, 40e9, 60e9)
    assert {(r["nranks"], r["nnodes"], r["compute_capability"], r["release"], r["mnnvl"], r["nvls_cause"])
            for r in rows} == {(8, 1, 90, "2.27.7", False, None)}
    assert rows[0]["nchannels"] == g.ring.nchannels and rows[1]["nchannels"] == g.tree.nchannels
    two = _graphs("2xdgxh100").to_records()                    # across nodes the tree is the ring's channels
    assert [(r["graph"], r["searched"]) for r in two] == [("ring", True), ("tree", False), ("nvls", True)]
    old = _graphs("dgx1v", "2.16").to_records()
    assert [r["graph"] for r in old] == ["ring", "tree"] and {r["nvls_cause"] for r in old} == {"no_nvls"}
    heads = g.nvls.to_records()
    assert [(r["channel"], r["head"], r["nic"]) for r in heads] == [(i, f"gpu{i}", "") for i in range(8)]
    assert {(r["bw_intra_Bps"], r["bw_inter_Bps"]) for r in heads} == {(40e9, 60e9)}
    assert heads[0]["gpu_bandwidth_Bps"] == g.nvls.gpu_bandwidth
    slow = nvls_search(_fabric("dgxh100", what_if="slow_nvlink"), _gpus("dgxh100"))
    assert slow.nchannels == 0 and slow.to_records() == []
    across = _graphs("2xdgxh100").nvls.to_records()
    assert all(r["nic"] for r in across) and len({r["nic"] for r in across}) == len(across)
