"""DualPipe as a task graph (models.studies.planner.dualpipe, parallel_graph; issue 40 item 5):
DeepSeek-V3's bidirectional schedule, its bubble by the report's table 2, its all-to-alls on
the fabric's links, its analytical step beside the simulated one, and its refusals."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

import topo
from models.present.plan_text import component_note, format_plan, group_text, plan_error_text
from models.engine.fabric import PreparedFabric
from models.predict.simulate import simulate
from models.predict.taskgraph import Task, TaskGraph, task_graph
from models.studies.planner import BubbleDetail, Component, NoLayoutError, plan
from models.studies.planner.dualpipe import (PipeOp, bubble_units, dualpipe_blocks, dualpipe_program,
                                             dualpipe_refusal, stage_of, unpaired_blocks)
from models.studies.planner.ep_overlap import DUALPIPE
from models.studies.planner.parallel_graph import plan_step_graph, plan_step_graph_size
from models.studies.stepgraph import StepGraphError, replica_slot

SMALL = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"
EIGHT = SMALL.replace("layers=4", "layers=8")


def _program(pp, rank, m) -> list:
    return ["|".join(map(str, step)) for step in dualpipe_program(pp, rank, m)]


# ------------------------------------------------------------------ the program, by hand
def test_the_programs_of_a_four_stage_pipeline():
    # Rank 0 (h = 0, the outer rank): 2 (pp/2 - h - 1) = 2 warm-up forwards of its near direction
    # 0, then a forward of each direction, one backward of direction 1 with its W deferred, that
    # W and a forward; the steady state pairs a forward of one direction with a backward of the
    # other; the cool-down defers the last W's. 4 micro-batches per direction (m = 8).
    assert _program(4, 0, 8) == ["F0.0", "F0.1", "F0.2", "F1.0", "B1.0w", "W1.0", "F1.1", "F0.3|B1.1", "F1.2|B0.0",
                                 "B1.2", "F1.3|B0.1", "B1.3", "B0.2w", "W0.2", "B0.3w", "W0.3"]
    # Rank 1 (h = 1, a middle rank): its first (forward 0, backward 1) runs one after the other.
    assert _program(4, 1, 8) == ["F0.0", "F1.0", "F0.1", "F1.1", "F0.2", "B1.0", "F1.2|B0.0", "F0.3|B1.1",
                                 "F1.3|B0.1", "B1.2", "B0.2", "B1.3w", "B0.3w", "W1.3", "W0.3"]
    # The second half mirrors the first with the directions swapped.
    swap = {"0": "1", "1": "0"}
    for r in range(4):
        mirrored = [s.replace("F0", "Fx").replace("F1", "F0").replace("Fx", "F1").replace("B0", "Bx")
                    .replace("B1", "B0").replace("Bx", "B1").replace("W0", "Wx").replace("W1", "W0").replace("Wx", "W1")
                    for s in _program(4, r, 8)]
        assert mirrored == _program(4, 3 - r, 8), swap
    # rank r runs stage r for direction 0, stage pp - 1 - r for direction 1: both copies held
    assert [(stage_of(4, r, 0), stage_of(4, r, 1)) for r in range(4)] == [(0, 3), (1, 2), (2, 1), (3, 0)]


def _unit_graph(pp, m, F, B, W) -> TaskGraph:
    """The programs as one compute task per block on GPU ``rank``, ``F``, ``B`` (a deferred
    backward), ``B + W`` (a whole backward) and ``W`` seconds, waiting for the block whose output
    they take; no communication."""
    tasks = []

    def name(r, op):
        return f"r{r}.{op.kind}{op.direction}.{op.micro_batch}"

    def block(r, op, after, source):
        seconds = F if op.kind == "F" else W if op.kind == "W" else B if op.deferred else B + W
        gate = (name(*source),) if source else ()
        tasks.append(Task(name(r, op), "compute", (r,), 0, seconds, tuple(after) + gate))
        return (name(r, op),)

    dualpipe_blocks(pp, m, block)
    return TaskGraph(tuple(tasks))


@pytest.mark.parametrize("pp, m, F, B, W, step", [
    (2, 4, 1.0, 1.0, 1.0, 12.0),  # pp / 2 - 1 = 0: no bubble, 4 x (1 + 1 + 1)
    (4, 8, 1.0, 1.0, 1.0, 25.0),  # 8 x 3 + (2 - 1)(3 + 1 - 3) = 24 + 1
    (4, 12, 1.0, 1.0, 1.0, 37.0),  # the bubble does not grow with the micro-batches
    (8, 16, 1.0, 1.0, 1.0, 51.0),  # 16 x 3 + (4 - 1)(3 + 1 - 3)
    (8, 20, 1.0, 1.0, 1.0, 63.0),  # the report's figure 5: 8 ranks, 20 micro-batches
    (4, 8, 2.0, 1.0, 1.0, 34.0),  # 8 x 4 + (4 + 1 - 3)
    (8, 16, 2.0, 1.0, 1.0, 70.0),  # 16 x 4 + 3 x 2
])
def test_a_unit_time_schedule_has_the_programs_bubble(host, pp, m, F, B, W, step):
    # DualPipe's bubble is (PP/2 - 1)(F&B + B - 3W) with B the input gradient (the report's table
    # 2 writes B for a full backward: (PP/2 - 1) W more, [U] in ep_overlap.DualPipe.bubble), F&B
    # the overlapped pair (here F + B + W: nothing to hide), on top of m (F + B + W) per rank.
    G = host.G if pp <= 8 else topo.build("2xdgxh100")
    r = simulate(G, _unit_graph(pp, m, F, B, W), sm_share=False)
    assert r.step_time == pytest.approx(step, rel=1e-12)
    assert step == m * (F + B + W) + bubble_units(pp, F, B, W)


@settings(max_examples=40, deadline=None)
@given(half=st.integers(1, 5), extra=st.integers(0, 6))
def test_every_program_runs_every_micro_batch_once(half, extra):
    pp, m = 2 * half, 2 * (2 * half + extra)
    for r in range(pp):
        program = dualpipe_program(pp, r, m)
        ops = [op for step in program for op in step]
        for kind in "FB":
            done = sorted((op.direction, op.micro_batch) for op in ops if op.kind == kind)
            assert done == sorted((d, i) for d in (0, 1) for i in range(m // 2))
        position = {(op.kind, op.direction, op.micro_batch): k for k, step in enumerate(program) for op in step}
        for op in ops:
            if op.kind == "B":
                assert position["F", op.direction, op.micro_batch] < position["B", op.direction, op.micro_batch]
            if op.kind == "B" and op.deferred:
                assert position["B", op.direction, op.micro_batch] < position["W", op.direction, op.micro_batch]
        assert sum(op.kind == "W" for op in ops) == sum(op.kind == "B" and op.deferred for op in ops)
        # a pair is a forward beside a backward
        assert all(sorted(o.kind for o in step) == ["B", "F"] for step in program if len(step) == 2)
        alone = [op.kind for step in program if len(step) == 1 for op in step]
        assert alone.count("F") == alone.count("B") <= unpaired_blocks(pp)
    # the blocks' dependencies (program order, each block's input) form no cycle: the reader checks
    graph = _unit_graph(pp, m, 1.0, 1.0, 1.0)
    task_graph({"tasks": [{"id": t.id, "op": "compute", "gpu": t.gpus[0], "seconds": t.seconds, "after": list(t.after)}
                          for t in graph.tasks]})


# ------------------------------------------------------------------ the step graph of a plan
def test_a_dualpipe_step_holds_both_stages_on_every_rank(cluster):
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, ep_overlap="dualpipe", simulate=0)
    assert p.layout.micro_batches == 8
    g = plan_step_graph(p, cluster.G)
    by_id = {t.id: t for t in g.tasks}
    rank = {r: set(replica_slot(p)(r, 0)) for r in (0, 1)}  # replica 0's GPUs of each rank
    # direction 0 enters at rank 0 and leaves at rank 1, direction 1 the other way: each rank
    # runs 4 micro-batches forward of each (8 F blocks), sends to the next rank only where one is
    fwd = {(t.id.split(".")[0], t.id.split(".")[1][:2]) for t in g.tasks if t.id.split(".")[1][:1] == "F"}
    assert fwd == {("p0", "F0"), ("p0", "F1"), ("p1", "F0"), ("p1", "F1")}
    sends = [t for t in g.tasks if t.kind == "pp_comm"]
    assert {t.id.split(".")[1] for t in sends} == {"F0", "F1", "B0", "B1"}
    assert all(".send" in t.id for t in sends)
    assert "p0.F0.0.send0" in by_id and "p1.F0.0.send0" not in by_id  # the last stage of direction 0
    assert "p1.F1.0.send0" in by_id and "p0.F1.0.send0" not in by_id  # and of direction 1
    assert by_id["p0.F0.0.send0"].gpus[1] in rank[1] and by_id["p1.F1.0.send0"].gpus[1] in rank[0]
    # rank 1's forward of direction 0 waits for rank 0's send of the same micro-batch
    assert "p0.F0.2.send0" in by_id["p1.F0.2.l0.c0"].after
    # a deferred weight gradient is its own compute task, after the backward without it
    ws = [t for t in g.tasks if t.id.split(".")[1].startswith("W")]
    assert len(ws) == 2 and all(t.kind == "compute" and t.seconds > 0 for t in ws)  # pp - h - 1 = 1 per rank
    # the gradients of a stage's two copies (ranks 0 and 1) are reduced together: dp8 x 2 GPUs
    buckets = [t for t in g.tasks if t.kind == "dp_comm" and "dbucket" in t.id]
    assert buckets and all(set(t.gpus) == set(range(16)) for t in buckets)
    # counted before building, folded and not
    assert plan_step_graph_size(p) == len(g)
    assert plan_step_graph_size(p, fold=False) == sum(t.copies for t in g.tasks)


@pytest.mark.parametrize("kw", [
    dict(tp=1, pp=4, ep=2, zero=3, global_batch=32, recompute="full"),
    dict(tp=2, pp=2, ep=4, etp=2, zero=2, global_batch=16),
    dict(tp=1, pp=2, ep=8, zero=0, global_batch=32, recompute="selective"),
])
def test_the_count_before_building_is_the_dualpipe_graphs_size(cluster, kw):
    p = plan(SMALL, cluster, ep_overlap="dualpipe", simulate=0, **kw)
    g = plan_step_graph(p, cluster.G)
    assert plan_step_graph_size(p) == len(g)
    assert plan_step_graph_size(p, fold=False) == sum(t.copies for t in g.tasks)


def test_its_all_to_alls_contend_with_data_parallel_traffic():
    # ep16 over two hosts' GPUs of each stage, ZeRO 3: one rank's parameter gathers over the
    # 32 GPUs holding a stage's two copies run while the other rank's dispatch crosses the same
    # NICs. Without the gathers' bytes the same all-to-alls move their data faster.
    G = PreparedFabric(topo.build("4xdgxh100"))
    p = plan(SMALL, G, tp=1, pp=2, ep=16, zero=3, global_batch=64, ep_overlap="dualpipe", simulate=0)
    g = plan_step_graph(p, G.G)
    quiet = TaskGraph(tuple(dataclasses.replace(t, nbytes=1) if t.kind == "dp_comm" else t for t in g.tasks))
    loud, calm = simulate(G.G, g), simulate(G.G, quiet)

    def data(result):
        return {t.id: t.end - t.data_start for t in result.tasks if t.kind == "ep_comm"}

    a, b = data(loud), data(calm)
    slowed = [k for k in a if a[k] > b[k] * 1.01]
    assert slowed
    dp = [t for t in loud.tasks if t.kind == "dp_comm"]
    for k in slowed:  # each slowed all-to-all ran beside a data-parallel transfer
        t = loud.task(k)
        assert any(d.data_start < t.end and d.end > t.data_start for d in dp)


@pytest.mark.parametrize("workload, kw, tolerance", [
    # no expert parallelism (ep 1): nothing but the pipeline's sends on NVLink; within 3 %
    (EIGHT, dict(tp=1, pp=8, ep=1, zero=1, global_batch=32), 0.03),
    # ep2 on NVSwitch: the first pass walks each overlapped pair's blocks as the simulation runs
    # them (pair_overlap: one kernel and one all-to-all at a time); it hid them perfectly behind
    # the other micro-batch's compute before, 4 % short (52.47 ms vs 54.54 simulated)
    (EIGHT, dict(tp=1, pp=4, ep=2, zero=1, global_batch=64), 0.03),
])
def test_the_simulated_step_is_the_analytical_one_on_one_host(host, workload, kw, tolerance):
    analytical = plan(workload, host, ep_overlap="dualpipe", simulate=0, **kw)
    simulated = plan(workload, host, ep_overlap="dualpipe", **kw)
    assert simulated.timing == "simulated" and simulated.layout == analytical.layout
    assert simulated.step_time == pytest.approx(analytical.step_time, rel=tolerance)


def test_the_simulated_step_is_the_analytical_one_across_hosts():
    # ep16 over two hosts per stage (their all-to-alls on InfiniBand): a perfect overlap gave
    # 71.94 ms against 82.36 simulated (14 %), the walked pairs 79.95; what is left is the
    # gradients' reduction after the deferred W, sharing the network with the last all-to-alls
    G = PreparedFabric(topo.build("4xdgxh100"))
    kw = dict(tp=1, pp=2, ep=16, zero=1, global_batch=256, ep_overlap="dualpipe")
    analytical, simulated = plan(EIGHT, G, simulate=0, **kw), plan(EIGHT, G, **kw)
    assert simulated.timing == "simulated"
    assert simulated.step_time == pytest.approx(analytical.step_time, rel=0.035)
    ep = analytical.component("ep_comm")
    assert 0 < ep.exposed < ep.time


def test_a_dualpipe_rank_holds_both_stages_gradients_and_optimizer_state(cluster):
    # tp1 pp2 dp8 ep8 (edp 1) on two hosts: every rank holds stages 0 and 1, each stage's weights
    # on the 8 GPUs of rank 0 and the 8 of rank 1. 1F1B's rank holds one stage: P parameters,
    # their fp32 gradients, ZeRO sharding 12 bytes of optimizer state per parameter. DualPipe's
    # holds two copies: 2 P of weights and, ZeRO 1 or below, 2 P of gradients (not sharded);
    # ZeRO shards the optimizer state (1 and up) and the gradients (2 and up) over both copies'
    # 16 GPUs (the experts' over 2), so they stay one copy's share.
    for zero in (0, 1, 2):
        one = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=zero, global_batch=64, simulate=0)
        two = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=zero, global_batch=64, ep_overlap="dualpipe", simulate=0)
        assert one.layout.micro_batches == two.layout.micro_batches == 8
        a, b = one.memory, two.memory
        assert b.parameters == pytest.approx(2 * a.parameters, rel=1e-4)  # stages 0 and 1 (a: the heavier)
        assert b.parameters <= 2 * a.parameters
        assert b.gradients == pytest.approx(2 * a.gradients if zero <= 1 else a.gradients, rel=1e-4)
        assert b.optimizer == pytest.approx(2 * a.optimizer if zero == 0 else a.optimizer, rel=1e-4)
        if zero <= 1:  # fp32 gradients of every bf16 parameter held: twice the weights' bytes
            assert b.gradients == 2 * b.parameters
        if zero == 0:  # Adam's fp32 master, momentum and variance: 12 bytes a parameter
            assert b.optimizer == 6 * b.parameters


def test_a_dualpipe_rank_holds_its_two_stages_whatever_the_split(cluster):
    """Rank r holds stages r and pp - 1 - r, each once: with 8 layers over pp4 every rank holds 4
    layers split 2 + 2 or (uneven, 1, 2, 2, 3) 1 + 3 and 2 + 2, rank 0 the embedding and the head
    either way, so its weights, gradients and optimizer state are the same (they counted the
    heaviest stage twice: 25 % more for the uneven split); 1F1B's heaviest stage grows with it."""
    spec = SMALL.replace("layers=4", "layers=8")
    uneven = {"first_stage_layers": 1, "last_stage_layers": 3}
    for zero in (0, 3):
        even, odd = (plan(spec, cluster, tp=1, pp=4, ep=4, zero=zero, global_batch=64, ep_overlap="dualpipe",
                          simulate=0, **kw).memory for kw in ({}, uneven))
        assert (even.parameters, even.gradients, even.optimizer) == (odd.parameters, odd.gradients, odd.optimizer)
    one, two = (plan(spec, cluster, tp=1, pp=4, ep=4, zero=0, global_batch=64, simulate=0, **kw).memory
                for kw in ({}, uneven))
    assert two.parameters > one.parameters


def test_the_analytical_gradient_reduction_is_the_step_graphs(cluster):
    # The step graph reduces both stages' gradients of a rank over the 16 GPUs holding them (the
    # experts' over the 2 holding the same experts); the analytical pass prices the same bytes
    # on the same groups of the fabric (models.studies.planner.placement.JobGroups).
    from models.studies.planner.placement import JobGroups
    from models.studies.planner.step import data_parallel_time
    from models.studies.workload import DEFAULT_BUCKET
    jobs = JobGroups(cluster)
    for zero in (0, 1):
        p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=zero, global_batch=64, ep_overlap="dualpipe", simulate=0)
        g = plan_step_graph(p, cluster.G)
        dp = next(c for c in p.components if c.name == "dp_comm")
        streams = []
        for name in ("d", "e"):
            buckets = [t for t in g.tasks if t.kind == "dp_comm" and t.id.startswith(f"p0.{name}bucket")]
            groups = tuple(sorted({t.gpus for t in buckets}))
            nbytes = sum(t.nbytes for t in buckets if t.id.endswith(".r0"))
            # ZeRO 1's all_gather of the same parameters in bf16 after the step: half the fp32 gradients
            gathers = [t.nbytes for t in g.tasks if t.id == f"p0.{name}params.r0"]
            assert gathers == ([] if zero == 0 else [pytest.approx(nbytes / 2, abs=8)])
            streams.append((groups, nbytes))
        (dense, d_bytes), (experts, e_bytes) = streams
        assert {len(x) for x in dense} == {16} and {len(x) for x in experts} == {2}
        assert dp.detail.degree == 16
        assert dp.detail.nbytes == pytest.approx(d_bytes + e_bytes, abs=8)  # integer bytes per task
        assert dp.detail.parameter_bytes == pytest.approx(dp.detail.nbytes / 2)
        priced = [(lambda c, n, gs=gs: jobs.dimension_time(c, n, gs), nb, nb / 2) for gs, nb in streams]
        fwd, bwd = p.components[0].detail.forward, p.components[0].detail.backward
        expected, _ = data_parallel_time(priced, zero, 1.0, fwd, bwd, p.layout.micro_batches, DEFAULT_BUCKET)
        assert dp.time == pytest.approx(expected, rel=1e-6)


def test_the_analytical_bubble_is_the_reports():
    # (PP/2 - 1)(F&B + B - 3W), never above pp/2 - 1 slots; 1F1B keeps (pp - 1) slots
    assert DUALPIPE.bubble(8, 1, slot=3.0, backward_input=1.0, weight=1.0) == 3.0
    assert DUALPIPE.bubble(8, 1, slot=4.0, backward_input=2.0, weight=0.0) == 12.0  # capped at 3 slots
    assert DUALPIPE.bubble(2, 1, slot=3.0, backward_input=1.0, weight=1.0) == 0.0
    assert DUALPIPE.rank_stages(4) == ((0, 3), (1, 2), (1, 2), (0, 3))
    assert DUALPIPE.alone(8, 110) == pytest.approx(11 / 110)  # 3 x 4 - 1 blocks of each kind alone


def test_the_bubble_detail_is_dualpipes_own(cluster):
    # F&B 3 ms, B 1 ms, W 1 ms on pp8: (8/2 - 1)(3 + 1 - 3) = 3 ms over an ideal step of 480 x
    # 3 ms; with B 2 ms and W 0, 3 x 5 ms is above PP/2 - 1 = 3 slots: the bubble is 9 ms.
    d = BubbleDetail(8, 1, 480, overlap=DUALPIPE, slot=3e-3, backward_input=1e-3, weight=1e-3)
    assert d.fraction == pytest.approx(3e-3 / (480 * 3e-3))
    assert component_note(Component("bubble", 3e-3, 3e-3, d)) == \
        "(PP/2-1)(F&B+B-3W) = 3 x (3.00 + 1.00 - 3 x 1.00 ms) = 0.21% of the ideal step"
    capped = dataclasses.replace(d, backward_input=2e-3, weight=0.0)
    assert capped.fraction == pytest.approx(9e-3 / (480 * 3e-3))
    assert component_note(Component("bubble", 9e-3, 9e-3, capped)) == \
        "(PP/2-1)(F&B+B-3W) = 3 x (3.00 + 2.00 - 3 x 0.00 ms), capped at 3 slots = 0.63% of the ideal step"
    (row,) = d.to_records()
    assert row["formula"] == "(PP/2-1)(F&B+B-3W)" and row["fraction"] == d.fraction
    assert (row["pair_s"], row["backward_input_s"], row["weight_s"]) == (3e-3, 1e-3, 1e-3)
    # a plan's: the fraction of its ideal step (m slots) is its bubble; 1F1B's keeps (p - 1)/m
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, ep_overlap="dualpipe", simulate=0)
    b = next(c for c in p.components if c.name == "bubble")
    assert b.detail.overlap is DUALPIPE and b.detail.slot > 0 and b.detail.weight > 0
    assert b.detail.fraction * p.layout.micro_batches * b.detail.slot == pytest.approx(b.time)
    assert component_note(b).startswith("(PP/2-1)(F&B+B-3W) = 0 x (")
    one = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, simulate=0)
    b1 = next(c for c in one.components if c.name == "bubble")
    assert component_note(b1).startswith("1 x the other stages' ") and "formula" not in b1.detail.to_records()[0]


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("pp, m, v, words", [
    (3, 12, 1, "expected an even pp of at least 2 (micro-batches fed from both ends), received pp 3"),
    (4, 6, 1, "expected an even number of micro-batches of at least 2 x pp = 8, received 6"),
    (4, 9, 1, "expected an even number of micro-batches of at least 2 x pp = 8, received 9"),
    (4, 16, 2, "expected no interleaving (each rank holds two chunks), received virtual_stages 2"),
])
def test_dualpipe_refuses_what_its_program_cannot_run(pp, m, v, words):
    assert dualpipe_refusal(pp, m, v) == words
    assert DUALPIPE.refuses(pp, m, v)
    assert dualpipe_refusal(4, 8, 1) is None and not DUALPIPE.refuses(4, 8, 1)


def test_the_planner_and_the_step_graph_refuse_a_pipeline_dualpipe_cannot_run(cluster):
    with pytest.raises(NoLayoutError) as error:
        plan(SMALL, cluster, tp=1, pp=4, dp=4, ep=4, zero=1, global_batch=24, ep_overlap="dualpipe")
    assert plan_error_text(error.value) == (
        "no layout of moe on 16 GPUs of 2xDGX H100: tp1 pp4 dp4 ep4: DualPipe needs an even pp, an even number of "
        "micro-batches of at least 2 x pp and no interleaving (received pp 4, 6 micro-batches)")
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, ep_overlap="dualpipe", simulate=0)
    fewer = dataclasses.replace(p, layout=dataclasses.replace(p.layout, global_batch=24))
    with pytest.raises(StepGraphError, match="DualPipe's program cannot run tp1 pp2 dp8 ep8 .*: expected an even "
                                             "number of micro-batches of at least 2 x pp = 4, received 3"):
        plan_step_graph(fewer, cluster.G)
    assert plan_step_graph_size(fewer) == 0


def test_the_cli_refuses_dualpipe_on_an_odd_pipeline_in_one_line(capsys):
    from tests.test_cli_commands import one_line_error

    line = one_line_error(capsys, "plan", SMALL, "--system", "2xdgxh100", "--tp", "1", "--pp", "4", "--dp", "4",
                          "--ep", "4", "--global-batch", "24", "--ep-overlap", "dualpipe")
    assert "DualPipe needs an even pp, an even number of micro-batches of at least 2 x pp" in line
    assert "(received pp 4, 6 micro-batches)" in line


def test_simulate_names_the_overlap_a_search_of_several_chose(capsys):
    # simulate searches what is not given, as plan does: of none, batch and dualpipe it runs
    # the best, and its header says which (one overlap given: the header as before)
    from tests.test_cli_commands import run

    args = (SMALL, "--system", "2xdgxh100", "--tp", "1", "--pp", "2", "--ep", "8", "--zero", "1",
            "--global-batch", "64")
    status, out, _ = run(capsys, "simulate", *args, "--ep-overlap", "all")
    chosen = plan(SMALL, PreparedFabric(topo.build("2xdgxh100")), tp=1, pp=2, ep=8, zero=1, global_batch=64,
                  ep_overlap=("none", "batch", "dualpipe")).ep_overlap
    assert status == 0 and chosen is not None
    assert out.splitlines()[0].startswith(f"moe tp1 pp2 dp8 ep8 zero1 mb1 rc=none tp-dp-pp ep-overlap {chosen.name} "
                                          "on 2xDGX H100: step ")
    status, out, _ = run(capsys, "simulate", *args, "--ep-overlap", "batch")
    head = out.splitlines()[0]
    assert status == 0 and head.startswith("moe tp1 pp2 dp8 ep8 zero1 mb1 rc=none ") and "ep-overlap" not in head


def test_pipe_ops_read_as_the_program_writes_them():
    assert str(PipeOp("B", 1, 3, True)) == "B1.3w" and str(PipeOp("W", 0, 2)) == "W0.2"


@pytest.mark.parametrize("kw", [dict(tp=1, pp=2, ep=8, zero=1, global_batch=64),
                                dict(tp=2, pp=2, ep=4, zero=1, global_batch=64)])
def test_a_dualpipe_plan_names_the_groups_its_step_reduces_over(cluster, kw):
    # ranks r and pp - 1 - r hold the same two stages: the gradients are reduced over both ranks'
    # data-parallel groups, which the plan records and prints, not each rank's own
    p = plan(SMALL, cluster, ep_overlap="dualpipe", simulate=0, **kw)
    g = plan_step_graph(p, cluster.G)
    reduced = {frozenset(t.gpus) for t in g.tasks if t.kind == "dp_comm" and ".dbucket" in t.id}
    experts = {frozenset(t.gpus) for t in g.tasks if t.kind == "dp_comm" and ".ebucket" in t.id}
    assert reduced == {frozenset(x) for x in p.groups["dp_copies"]}
    assert experts == {frozenset(x) for x in p.groups["edp_copies"]}
    assert all(len(x) == 2 * len(p.groups["dp"][0]) for x in p.groups["dp_copies"])
    text = format_plan(p, verbose=True)
    shown = p.groups["dp_copies"][0]
    assert f"  dp groups (every copy of a stage): {group_text(shown)}" in text
    assert "  edp groups (every copy of a stage): " in text
    one = plan(SMALL, cluster, simulate=0, **kw)  # 1F1B: each stage once, its own groups
    assert "dp_copies" not in one.groups and "edp groups" not in format_plan(one, verbose=True)
    assert f"  dp groups: {group_text(one.groups['dp'][0])}" in format_plan(one, verbose=True)
