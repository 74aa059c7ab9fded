"""1F1B and batch overlap as programs (EpOverlap.program), run alike by the step graph and priced
alike by the analytical step (issue 40): their bubble in closed form, their programs by hand, and
the analytical step beside the simulated one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import topo
from models.engine.fabric import PreparedFabric
from models.present.plan_text import component_note
from models.predict.simulate import simulate
from models.predict.taskgraph import Task, TaskGraph
from models.studies.planner import plan
from models.studies.planner.ep_overlap import BATCH_OVERLAP, DUALPIPE, NO_OVERLAP, EpOverlap
from models.studies.planner.parallel_graph import plan_step_graph
from models.studies.stepgraph import one_f_one_b, one_f_one_b_units

SMALL = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"
EIGHT = SMALL.replace("layers=4", "layers=8")


def _program(overlap, pp, stage, m) -> list:
    return ["|".join(f"{what}{i}" for what, i in unit) for unit in overlap.program(pp, stage, m)]


def test_the_programs_by_hand():
    # 1F1B (Megatron-LM's non-interleaved schedule): stage s warms up with pp - 1 - s forwards
    assert _program(NO_OVERLAP, 2, 0, 4) == ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"]
    assert _program(NO_OVERLAP, 2, 1, 4) == ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"]
    # batch overlap: 2 (pp - 1 - s) + 1 forwards, then forward i + w beside backward i, one unit
    assert _program(BATCH_OVERLAP, 2, 0, 4) == ["F0", "F1", "F2", "F3|B0", "B1", "B2", "B3"]
    assert _program(BATCH_OVERLAP, 2, 1, 4) == ["F0", "F1|B0", "F2|B1", "F3|B2", "B3"]
    # no pipeline: one forward ahead, so that a forward never runs beside its own backward
    assert _program(BATCH_OVERLAP, 1, 0, 3) == ["F0", "F1|B0", "F2|B1", "B2"]
    # the warm-up is at most every micro-batch
    assert _program(BATCH_OVERLAP, 4, 0, 4) == ["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3"]
    # the dense step graph's order is the same program, a block a unit
    for pp in range(1, 6):
        for s in range(pp):
            for m in range(1, 9):
                assert one_f_one_b(pp, s, m) == [b for unit in NO_OVERLAP.program(pp, s, m) for b in unit]


@settings(max_examples=60, deadline=None)
@given(pp=st.integers(1, 6), m=st.integers(1, 14), paired=st.booleans(), data=st.data())
def test_every_program_runs_every_micro_batch_once_in_order(pp, m, paired, data):
    stage = data.draw(st.integers(0, pp - 1))
    overlap = BATCH_OVERLAP if paired else NO_OVERLAP
    units = overlap.program(pp, stage, m)
    blocks = [b for unit in units for b in unit]
    assert sorted(blocks) == sorted([("F", i) for i in range(m)] + [("B", i) for i in range(m)])
    at = {b: k for k, unit in enumerate(units) for b in unit}
    # a micro-batch's backward after its forward, in a later unit; forwards and backwards in order
    assert all(at["F", i] < at["B", i] for i in range(m))
    assert all(at["F", i] <= at["F", i + 1] and at["B", i] <= at["B", i + 1] for i in range(m - 1))
    # pairs are a forward beside a backward; the blocks alone are the warm-up's and cool-down's
    assert all(sorted(w for w, _ in unit) == ["B", "F"] for unit in units if len(unit) == 2)
    alone = sum(1 for unit in units if len(unit) == 1 and unit[0][0] == "F")
    assert alone == (overlap.warmup(pp, stage, m) if paired else m)
    # in flight: the most forwards done whose backward has not run, the overlap's count
    live = most = 0
    for unit in units:
        live += sum(w == "F" for w, _ in unit)
        most = max(most, live)
        live -= sum(w == "B" for w, _ in unit)
    assert most == overlap.in_flight(pp, stage, m)


def _unit_graph(overlap: EpOverlap, pp: int, m: int, forward: list, backward: list, units=None) -> TaskGraph:
    """Each stage's program as one compute task a block on GPU ``stage``, ``forward[s]`` and
    ``backward[s]`` seconds, no communication: a unit after the unit before it and after the
    blocks its blocks take their inputs from (the step graph's rule)."""
    tasks = []
    for s in range(pp):
        done: tuple = ()
        for unit in (units(s) if units else overlap.program(pp, s, m)):
            gate = tuple([f"s{s - 1}.F{i}" for w, i in unit if w == "F" and s > 0]
                         + [f"s{s + 1}.B{i}" for w, i in unit if w == "B" and s < pp - 1])
            ids = []
            for what, i in unit:
                ids.append(f"s{s}.{what}{i}")
                tasks.append(Task(ids[-1], "compute", (s,), 0, forward[s] if what == "F" else backward[s], done + gate))
            done = tuple(ids)
    return TaskGraph(tuple(tasks))


def _analytical(overlap: EpOverlap, pp: int, m: int, forward: list, backward: list) -> float:
    """The analytical step's rule (models.studies.planner.parallel_step): m micro-batches of the
    busiest stage, and the overlap's bubble in slots of the others'."""
    t = [f + b for f, b in zip(forward, backward)]
    b = max(range(pp), key=lambda s: t[s])
    others = [x for s, x in enumerate(t) if s != b]
    fill = sum(others) / len(others) if others else t[b]
    return m * t[b] + overlap.bubble(pp, 1, slot=overlap.fill_slot(t[b], fill))


@pytest.mark.parametrize("overlap", [NO_OVERLAP, BATCH_OVERLAP], ids=["1f1b", "batch"])
@pytest.mark.parametrize("pp, m, F, B", [(2, 4, 1.0, 2.0), (2, 8, 1.0, 2.0), (4, 4, 1.0, 2.0), (4, 8, 1.0, 1.0),
                                         (4, 6, 2.0, 1.0)])
def test_a_tiny_pipeline_has_the_textbook_bubble(host, overlap, pp, m, F, B):
    """Equal stages, no communication: every stage idles while the first micro-batch's forward
    reaches it and the last one's backward leaves the stages after it; the last stage, the
    first to start its backwards, runs m slots of F + B after p - 1 forwards of fill and then
    p - 1 backwards of drain: a step of (m + p - 1)(F + B), a bubble of (p - 1)/m of the ideal
    step m (F + B), in both programs (batch overlap's pairs run F + B on the GPU, its warm-up
    keeps the pairs from waiting on each other)."""
    step = simulate(host.G, _unit_graph(overlap, pp, m, [F] * pp, [B] * pp), sm_share=False).step_time
    assert step == pytest.approx((m + pp - 1) * (F + B), rel=1e-12)
    assert _analytical(overlap, pp, m, [F] * pp, [B] * pp) == pytest.approx(step, rel=1e-12)
    assert overlap.bubble_fraction(pp, 1, m) == (pp - 1) / m


@settings(max_examples=40, deadline=None)
@given(pp=st.integers(1, 5), m=st.integers(1, 12), F=st.sampled_from([0.5, 1.0, 2.0]),
       B=st.sampled_from([0.5, 1.0, 2.0, 3.0]), paired=st.booleans())
def test_the_analytical_step_is_the_simulated_one_without_communication(host, pp, m, F, B, paired):
    overlap = BATCH_OVERLAP if paired else NO_OVERLAP
    step = simulate(host.G, _unit_graph(overlap, pp, m, [F] * pp, [B] * pp), sm_share=False).step_time
    assert _analytical(overlap, pp, m, [F] * pp, [B] * pp) == pytest.approx(step, rel=1e-12)


def test_a_paired_program_needs_its_longer_warm_up(host):
    """Pairs with 1F1B's warm-up and one forward more (pp - s): stage 1's pair (F2, B1) waits
    for F2, which stage 0 runs in its pair (F2, B0), which waits for B0 from stage 1's pair
    before: the two stages take turns, and p = 2, m = 4, F = 1, B = 2 takes 17 (the simulator
    running each pair's blocks as their inputs allow) instead of (m + p - 1)(F + B) = 15.
    Two forwards more a stage (2 (pp - 1 - s) + 1) keep 15."""
    def short(s):
        return one_f_one_b_units(min(2 - s, 4), 4, paired=True)
    late = simulate(host.G, _unit_graph(BATCH_OVERLAP, 2, 4, [1.0] * 2, [2.0] * 2, units=short), sm_share=False)
    assert late.step_time == pytest.approx(17.0)
    assert simulate(host.G, _unit_graph(BATCH_OVERLAP, 2, 4, [1.0] * 2, [2.0] * 2), sm_share=False).step_time == \
        pytest.approx(15.0)


def test_unequal_stages_fill_with_the_others_slots(host):
    """A heavier last stage (the head): the step is m of its slots and one of each other stage's,
    the textbook (m - 1) max t + sum t; the bubble (p - 1)/m slots of the others' mean."""
    F, B = [1.0, 1.0, 1.5], [2.0, 2.0, 2.5]
    for overlap in (NO_OVERLAP, BATCH_OVERLAP):
        step = simulate(host.G, _unit_graph(overlap, 3, 6, F, B), sm_share=False).step_time
        assert step == pytest.approx(5 * 4.0 + 3.0 + 3.0 + 4.0)
        assert _analytical(overlap, 3, 6, F, B) == pytest.approx(step)
    assert DUALPIPE.fill_slot(4.0, 3.0) == 4.0  # DualPipe's bubble is in its busiest rank's F&B


def test_a_stage_waits_for_its_sends(cluster):
    """The step graph: a stage's next block starts after the sends of the block before it."""
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, simulate=0)
    after = {t.id: set(t.after) for t in plan_step_graph(p, cluster.G).tasks}
    assert "p0.F0.send0" in after["p0.F1.l0.c0"] and "p1.B0.send0" in after["p1.F1.l0.c0"]
    batch = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, simulate=0, ep_overlap="batch")
    after = {t.id: set(t.after) for t in plan_step_graph(batch, cluster.G).tasks}
    # stage 0: F0, F1, F2, then F3 beside B0: both wait for F2's sends and for B0's gradient
    for first in ("p0.F3.l0.c0", "p0.B0.l1.c0"):
        assert {"p0.F2.send0", "p1.B0.send0"} <= after[first]


@pytest.mark.parametrize("system, workload, kw, before", [
    # batch overlap across hosts: the pairs' all-to-alls on InfiniBand
    ("4xdgxh100", EIGHT, dict(tp=1, pp=2, ep=16, zero=1, global_batch=256, ep_overlap="batch"), (90.47, 84.99)),
    # batch overlap without expert parallelism: the program alone
    ("4xdgxh100", EIGHT, dict(tp=1, pp=2, ep=1, zero=1, global_batch=256, ep_overlap="batch"), (55.23, 52.93)),
    # 1F1B, the all-to-alls exposed, the last stage (the head's) the busiest
    ("2xdgxh100", EIGHT, dict(tp=1, pp=2, ep=8, zero=1, global_batch=64), (38.01, 35.15)),
])
def test_the_analytical_step_is_the_simulated_one(system, workload, kw, before):
    # before (analytical, simulated ms): the step graph's batch schedule let a stage's forwards
    # run ahead of its backwards, and sent without waiting; the analytical step charged every
    # send and p - 1 slots of the busiest stage
    G = PreparedFabric(topo.build(system))
    analytical, simulated = plan(workload, G, simulate=0, **kw), plan(workload, G, **kw)
    assert simulated.timing == "simulated"
    assert simulated.step_time == pytest.approx(analytical.step_time, rel=0.03)


def test_the_bubble_says_the_stages_are_unequal(cluster):
    p = plan(EIGHT, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, simulate=0)
    bubble = p.component("bubble")
    d = bubble.detail
    assert 0 < d.slot < d.busiest  # the first stage's micro-batch, lighter than the head's stage
    assert d.fraction == pytest.approx(bubble.time / (8 * d.busiest))
    assert d.fraction == pytest.approx(1 / 8 * d.slot / d.busiest)
    assert component_note(bubble) == f"1 x the other stages' {d.slot * 1e3:.2f} ms"
    assert bubble.time == pytest.approx(d.slot)
