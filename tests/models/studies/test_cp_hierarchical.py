"""Hierarchical context parallelism, ``a2a+p2p`` (models.studies.planner.cp_exchange.HierarchicalExchange;
issue 40 item 2): Transformer Engine's all-to-all inside groups of ``a`` context-parallel ranks and a
ring across the ``p`` groups, ``a x p = cp`` (Megatron-Core's ``hierarchical_context_parallel_sizes``)."""

from __future__ import annotations

import pytest

import topo
from models.engine.fabric import PreparedFabric
from models.present.cli import main
from models.present.plan_text import component_note
from models.studies.planner import Layout, PlanError, SkipCode, plan, search
from models.studies.planner.cp_exchange import (ALL_TO_ALL, HIERARCHICAL, RING, HierarchicalExchange,
                                                cp_exchange_named)
from models.studies.planner.parallel_graph import plan_step_graph
from models.studies.workload import PRESETS, with_seq_length

A2P4 = HierarchicalExchange((2, 4))


@pytest.fixture(scope="module")
def two_hosts():
    return PreparedFabric(topo.build("2xdgxh100"))


def test_bytes_by_hand():
    # llama3-8b: 32 heads, 8 KV heads of 128; tp 2, cp 8 = a2a 2 x p2p 4, 65,536 tokens, 2 bytes
    w = with_seq_length(PRESETS["llama3-8b"], 65536)
    ring, q, k, v, o = A2P4.buffers(w, 1, 8, 2, 2)
    # the ring: seq / p = 16,384 tokens of the KV heads of tp x a = 4 ranks (8 / 4 = 2 heads, 256 wide) for K and V
    assert ring == 16384 * (256 + 256) * 2 == 16 * 2**20
    # the same bytes as the plain ring's block of seq / cp tokens with a tensor-parallel rank's 4 KV heads
    assert ring == RING.buffers(w, 1, 8, 2, 2)[0]
    # the all-to-alls: seq / cp = 8,192 tokens, Q and O 16 heads x 128, K and V 4 heads x 128
    assert (q, k, v, o) == (8192 * 2048 * 2, 8192 * 512 * 2, 8192 * 512 * 2, 8192 * 2048 * 2)
    assert (q, k, v, o) == ALL_TO_ALL.buffers(w, 1, 8, 2, 2)


def test_groups_and_times_by_hand():
    g = tuple(range(10, 18))
    assert A2P4.alltoall_groups(g) == ((10, 11), (12, 13), (14, 15), (16, 17))
    assert A2P4.ring_groups(g) == ((10, 12, 14, 16), (11, 13, 15, 17))
    assert RING.ring_groups(g) == ALL_TO_ALL.alltoall_groups(g) == (g,)
    # the ring of p = 4: 3 steps each way, each hidden behind 1/4 of the kernel; the all-to-alls exposed
    layer = A2P4.layer_timer((1e9, 1.0, 2.0, 3.0, 4.0), 8, lambda dim, coll, n: n / 1e9,
                             lambda dim, n: n)
    assert layer(0.0, 0.0, False) == pytest.approx((3 * 1 + 3 * 2 + 20, 3 * 1 + 3 * 2 + 20))
    assert layer(4.0, 8.0, False) == pytest.approx((29.0, 20.0))  # the ring hidden: 1 <= 4 / 4, 2 <= 8 / 4
    assert layer(4.0, 8.0, True) == pytest.approx((29.0 + 3 + 10, 30.0))  # the forward again


def test_sizes_degree_and_refusals():
    assert cp_exchange_named("a2a+p2p") is HIERARCHICAL and HIERARCHICAL.sizes is None
    assert A2P4 == HierarchicalExchange(sizes=[2, 4]) and A2P4.degree == 8 and A2P4.label == "a2p4"
    assert HIERARCHICAL.degree is None and HIERARCHICAL.for_degree(8) == (A2P4, HierarchicalExchange((4, 2)))
    assert HIERARCHICAL.for_degree(4) == (HierarchicalExchange((2, 2)),)
    assert HIERARCHICAL.for_degree(2) == (HIERARCHICAL,) and HIERARCHICAL.refuses(8, 2)  # no sizes >= 2
    assert A2P4.refuses(5, 8) and not A2P4.refuses(6, 8) and A2P4.refuses(8, 4)  # heads % a; a x p != cp
    assert A2P4.refusal == SkipCode.CP_HIERARCHY.value
    assert HierarchicalExchange((1, 8)).check(8).startswith("a2a+p2p sizes must be two whole numbers >= 2")
    assert A2P4.check(4) == "a2a+p2p sizes 2 x 4 must multiply to cp 4, received 8"
    assert HIERARCHICAL.check(None) is None and "needs its sizes a x p = cp 8" in HIERARCHICAL.check(8)
    assert all("has no such split" in HIERARCHICAL.check(c) for c in (2, 3, 5, 7)) and HIERARCHICAL.check(6).startswith("a2a+p2p needs its sizes")
    with pytest.raises(PlanError, match="sizes 2 x 4 must multiply to cp 4"):
        Layout(1, 1, 1, 0, 1, 4, "none", False, "tp-dp-pp", cp=4, cp_comm=A2P4)
    with pytest.raises(PlanError, match="needs its sizes"):
        Layout(1, 1, 1, 0, 1, 4, "none", False, "tp-dp-pp", cp=4, cp_comm="a2a+p2p")
    assert Layout(1, 1, 1, 0, 1, 4, "none", False, "tp-dp-pp", cp=8, cp_comm=A2P4).label().startswith("tp1 cp8a2p4 ")


def test_the_inner_groups_stay_in_a_host_and_the_ring_crosses(two_hosts):
    p = plan("llama3-8b", two_hosts, tp=2, pp=1, cp=8, cp_comm=A2P4, zero=1, recompute="none", global_batch=2,
             seq_length=65536, simulate=0)
    host = {i: i // 8 for i in range(16)}  # 2xdgxh100: GPUs 0-7 and 8-15
    for g in p.groups["cp"]:
        assert all(len({host[i] for i in x}) == 1 for x in A2P4.alltoall_groups(g))
        assert all(len({host[i] for i in r}) == 2 for r in A2P4.ring_groups(g))
    d = p.component("cp_comm").detail
    assert d.comm is A2P4 and d.nbytes == 16 * 2**20 + 80 * 2**20  # the ring's block and the 4 all-to-alls
    assert d.to_records()[0]["label"] == "a2p4"
    assert component_note(p.component("cp_comm")) == (
        "32 layers x (2 x 4 all-to-alls in groups of 2 + ring of 3 K/V steps each way across 4 groups; 96.0 MiB per "
        "rank in all) per micro-batch, the ring hidden behind the attention where it is faster")


def test_the_step_graph_runs_the_all_to_alls_in_groups_then_the_ring(two_hosts):
    p = plan("llama3-8b", two_hosts, tp=2, pp=1, cp=8, cp_comm=A2P4, zero=1, recompute="none", global_batch=2,
             seq_length=65536, simulate=0)
    g = plan_step_graph(p, two_hosts.G)
    first = [t for t in g.tasks if t.kind == "cp_comm" and t.id.startswith("p0.F0.l0.")]
    a2a = [t for t in first if t.op == "alltoall"]
    sends = [t for t in first if t.op == "send"]
    # replica 0's GPUs (one tensor-parallel pair) head 2 inner groups each forward all-to-all (4 of them)
    assert len(a2a) == 4 * 2 and all(len(t.gpus) == 2 and len(t.images) == 3 for t in a2a)
    assert [t.nbytes for t in a2a[::2]] == [16 * 2**20 * 2, 4 * 2**20 * 2, 4 * 2**20 * 2, 16 * 2**20 * 2]
    # the ring of p = 4: 3 steps, one send per replica 0 GPU, the 14 other ranks' sends as its images,
    # after the all-to-alls
    assert len(sends) == 3 * 2 and all(len(t.images) == 7 for t in sends)
    assert set(sends[0].after) == {a2a[-2].id, a2a[-1].id}
    assert {t.nbytes for t in sends} == {16 * 2**20}


def test_simulated_close_to_analytical_on_one_host():
    G = PreparedFabric(topo.build("dgxh100"))
    p = plan("llama3-8b", G, tp=1, pp=1, cp=8, cp_comm=A2P4, zero=1, recompute="none", global_batch=2,
             seq_length=32768, simulate=1)
    assert p.timing == "simulated" and p.step_time == pytest.approx(p.analytical_step_time, rel=0.05)


def test_search_covers_the_sizes_and_refuses_with_the_reason(two_hosts):
    found = search("llama3-8b", two_hosts, tp=1, pp=1, zero=1, recompute="none", global_batch=8,
                   seq_length=65536, cp_comm="a2a+p2p", simulate=0)
    cps = {(x.layout.cp, x.layout.cp_comm) for x in found.plans}
    assert {(8, A2P4), (8, HierarchicalExchange((4, 2))), (4, HierarchicalExchange((2, 2)))} <= cps
    assert any(s.code is SkipCode.CP_HIERARCHY and s.cp == 2 for s in found.skipped_layouts)
    # sized, without cp: the degree the sizes imply
    sized = plan("llama3-8b", two_hosts, tp=2, pp=1, dp=1, cp_comm=A2P4, zero=1, recompute="none", global_batch=2,
                 seq_length=65536, simulate=0)
    assert sized.layout.cp == 8 and sized.layout.cp_comm is A2P4


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("extra, message", [
    (("--cp", "8", "--cp-comm", "a2a+p2p", "--hierarchical-context-parallel-sizes", "2", "2"),
     "a2a+p2p sizes 2 x 2 must multiply to cp 8, received 4"),
    (("--cp", "8", "--hierarchical-context-parallel-sizes", "2", "4"),
     "--hierarchical-context-parallel-sizes needs --cp-comm a2a+p2p, received --cp-comm p2p"),
    (("--cp", "2", "--cp-comm", "a2a+p2p"), "a2a+p2p needs cp = a x p with both >= 2, and cp 2 has no such split"),
    (("--cp", "8", "--cp-comm", "a2a+p2p", "--hierarchical-context-parallel-sizes", "1", "8"),
     "a2a+p2p sizes must be two whole numbers >= 2"),
])
def test_cli_refuses_bad_combinations_in_one_line(capsys, extra, message):
    status, out, err = _run(capsys, "plan", "llama3-8b", "--system", "2xdgxh100", "--tp", "2", "--pp", "1",
                            "--seq-length", "65536", "--global-batch", "8", "--simulate", "0", *extra)
    assert status == 2 and out == "" and err.count("\n") == 1 and message in err


def test_cli_plans_it(capsys):
    status, out, _ = _run(capsys, "plan", "llama3-8b", "--system", "2xdgxh100", "--tp", "2", "--pp", "1",
                          "--cp", "8", "--cp-comm", "a2a+p2p", "--hierarchical-context-parallel-sizes", "4", "2",
                          "--seq-length", "65536", "--global-batch", "8", "--simulate", "0", "--zero", "1")
    assert status == 0 and " cp8a4p2 " in out.splitlines()[0]
    assert "2 x 4 all-to-alls in groups of 4" in out and "ring of 1 K/V steps" in out


def test_cli_json_keeps_the_sizes(capsys):
    """plan --json: the layout's cp_comm is the exchange's name; its sizes beside it (a4p2 and
    a2p4 share the name), null for the ring."""
    import json

    argv = ("plan", "llama3-8b", "--system", "2xdgxh100", "--tp", "2", "--pp", "1", "--cp", "8",
            "--seq-length", "65536", "--global-batch", "8", "--simulate", "0", "--zero", "1", "--json")
    status, out, _ = _run(capsys, *argv, "--cp-comm", "a2a+p2p", "--hierarchical-context-parallel-sizes", "4", "2")
    layout = json.loads(out)["layout"]
    assert status == 0 and (layout["cp_comm"], layout["cp_comm_sizes"]) == ("a2a+p2p", [4, 2])
    status, out, _ = _run(capsys, *argv)
    layout = json.loads(out)["layout"]
    assert status == 0 and (layout["cp_comm"], layout["cp_comm_sizes"]) == ("p2p", None)


def test_the_all_to_all_splits_key_value_heads_too():
    """llama3-70b has 64 query heads and 8 key/value heads: at tp 8 one K/V head a rank (64 / 8 = 8
    query heads), which no all-to-all over cp 4 (or an inner group of 2) can split; at tp 4, 2 K/V
    heads a rank split over cp 2. (Before, only the 8 query heads were checked and tp 8 cp 4 planned
    with the one K/V head replicated.)"""
    from models.studies.planner import plan, PlanError
    G = topo.build("4xdgxh100")
    for comm, code in (("a2a", "CP_HEADS"), (HierarchicalExchange((2, 2)), "CP_HIERARCHY")):
        with pytest.raises(PlanError, match=rf"{code}, tp=8, pp=1, dp=1, count=1, cp=4"):
            plan("llama3-70b", G, tp=8, cp=4, pp=1, dp=1, cp_comm=comm, seq_length=32768)
    assert plan("llama3-70b", G, tp=4, cp=2, pp=1, dp=4, cp_comm="a2a", seq_length=32768).layout.cp == 2
