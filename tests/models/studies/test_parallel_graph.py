"""Steps with expert or context parallelism, MoE workloads and uneven splits as task graphs
(models.studies.planner.parallel_graph, issue 40 item 5): the planner simulates them."""

from __future__ import annotations

import dataclasses

import pytest

import models.studies.planner.parallel_graph as parallel_graph
from models.predict.collectives import Estimator
from models.predict.simulate import simulate, simulation_size
from models.studies.planner import plan
from models.studies.planner.parallel import cp_ring_bytes, dispatch_bytes
from models.studies.planner.parallel_graph import (check_plan_events, plan_step_graph, plan_step_graph_size,
                                                   simulate_planned)
from models.studies.planner.ep_overlap import BatchOverlap
from models.studies.planner.records import TimingCode
from models.studies.stepgraph import PlanDoesNotFitError, StepGraphError, step_graph
from topo.errors import LimitError

# A small MoE: 32 experts of width 512, top-4, 2,048 tokens (tests/models/studies/test_plan_parallel.py's).
SMALL = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"
MIB = 2 ** 20


def _parts(p) -> dict:
    return {c.name: c for c in p.components}


@pytest.mark.parametrize("zero", [0, 1])
def test_a_small_moe_step_simulates_to_its_analytical_step(host, zero):
    # One micro-batch on one host, ep8 x dp8, gradients reduced after the backward (overlap 0):
    # nothing overlaps and nothing contends, so each component is the analytical one, the
    # gradients' too: both passes send them (and ZeRO 1's parameters) as one buffer after the
    # backward (gradient_bucket: Megatron-LM's DDP without overlap_grad_reduce), not in 25 MiB
    # buckets each paying NCCL's start-up (13 of the ~320 MB of fp32 gradients, 7 more of ZeRO 1's
    # 160 MB of bf16 parameters: +4.7 % and +10.3 % on the step when the first pass bucketed them).
    simulated = plan(SMALL, host, tp=1, pp=1, ep=8, zero=zero, global_batch=8, overlap=0)
    analytical = plan(SMALL, host, tp=1, pp=1, ep=8, zero=zero, global_batch=8, overlap=0, simulate=0)
    assert simulated.timing == "simulated" and analytical.timing == "analytical"
    s, a = _parts(simulated), _parts(analytical)
    for name in ("compute", "ep_comm", "dp_comm", "optimizer"):
        assert s[name].exposed == pytest.approx(a[name].exposed, rel=1e-6), name
    assert s["ep_comm"].exposed > 0 and s["dp_comm"].exposed > 0
    assert simulated.step_time == pytest.approx(analytical.step_time, rel=1e-6)


def test_the_dispatch_flows_by_hand_on_two_hosts(cluster):
    p = plan(SMALL, cluster, tp=1, pp=1, ep=16, zero=1, global_batch=16, simulate=0)
    g = plan_step_graph(p, cluster.G)
    ep = [t for t in g.tasks if t.kind == "ep_comm"]
    # 4 MoE layers x (dispatch + combine) x (forward + backward), one ep16 group: no images.
    assert len(ep) == 16 and {t.op for t in ep} == {"alltoall"}
    assert {t.gpus for t in ep} == {tuple(range(16))} and all(t.images == () for t in ep)
    # 2,048 tokens x top-4 x 1,024 wide x 2 bytes = 16 MiB per rank, 1 MiB to each of 16 peers.
    assert {t.nbytes for t in ep} == {16 * MIB} == {int(dispatch_bytes(2048, 4, 1024, 2))}
    # 8 ranks of host 0 each send 8 of their 16 flows to host 1: 64 flows of 1 MiB, 64 MiB over
    # host 0's NICs (the simulator charges the estimate's flows on these links).
    G = cluster.G
    load = Estimator(cluster).flow_load("alltoall", ep[0].gpus)
    leaving = sum(v for (u, w), v in load.items() if G.edges[u, w]["kind"] == "network" and G.nodes[u]["host"] == 0)
    assert leaving == pytest.approx(64.0)
    # the dispatch waits for the router and the experts for the dispatch
    by_id = {t.id: t for t in g.tasks}
    assert by_id["p0.F0.l0.dispatch0.0"].after == ("p0.F0.l0.route",)
    assert by_id["p0.F0.l0.experts"].after == ("p0.F0.l0.dispatch0.0",)


def test_an_ep_group_inside_a_host_has_the_other_groups_as_images(cluster):
    p = plan(SMALL, cluster, tp=1, pp=1, ep=8, zero=1, global_batch=16, simulate=0)
    dispatch = next(t for t in plan_step_graph(p, cluster.G).tasks if t.kind == "ep_comm")
    assert dispatch.gpus == tuple(range(8)) and dispatch.images == (tuple(range(8, 16)),)


def test_context_parallel_ring_steps_run_beside_the_attention(cluster):
    p = plan("llama3-8b", cluster, tp=2, pp=2, cp=2, global_batch=8, seq_length=16384)
    assert p.timing == "simulated" and p.timing_why is None
    g = plan_step_graph(p, cluster.G)
    sends = [t for t in g.tasks if t.kind == "cp_comm"]
    ring = cp_ring_bytes(p.workload_spec, 1, 2, 2, 2)
    # cp 2: one ring step per attention layer and pass, one send per tensor-parallel rank; the
    # forward sends the K/V block, the backward K/V and their gradients.
    forward = {t.nbytes for t in sends if ".F" in t.id}
    backward = {t.nbytes for t in sends if ".B" in t.id}
    assert forward == {int(ring)} and backward == {int(2 * ring)}
    # per stage 4 rings (dp2 x tp2) of 2 sends: replica 0's 2 sends carry the other 6 as images
    assert all(len(t.images) == 3 for t in sends)
    by_id = {t.id: t for t in g.tasks}
    # the second attention chunk waits for the first and for the K/V it received
    assert set(by_id["p0.F0.l0.a1"].after) == {"p0.F0.l0.a0", "p0.F0.l0.kv0.0", "p0.F0.l0.kv0.1"}


def test_an_uneven_split_is_per_stage_compute(cluster):
    p = plan("llama3-8b", cluster, tp=4, pp=4, first_stage_layers=5, last_stage_layers=9, global_batch=8)
    assert p.timing == "simulated"
    g = plan_step_graph(p, cluster.G)
    layers = [len({t.id.split(".")[2] for t in g.tasks if t.id.startswith(f"p{s}.F0.l") and t.kind == "compute"})
              for s in range(4)]
    assert layers == [5, 9, 9, 9]


def test_batch_overlap_hides_all_to_alls_behind_the_other_micro_batch(cluster):
    kw = dict(tp=1, pp=2, ep=8, zero=1, global_batch=64)
    none = plan(SMALL, cluster, ep_overlap="none", **kw)
    batch = plan(SMALL, cluster, ep_overlap="batch", **kw)
    assert none.simulated and batch.simulated
    assert batch.step_time < none.step_time


def test_an_overlap_whose_schedule_is_not_built_stays_analytical_with_its_reason(cluster):
    @dataclasses.dataclass(frozen=True)
    class Mine(BatchOverlap):
        name: str = "mine"
        simulated: bool = False

    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, ep_overlap=Mine())
    assert p.timing == "analytical" and p.timing_why.code is TimingCode.DUALPIPE
    with pytest.raises(StepGraphError, match="the plan overlaps its all-to-alls Mine's way, which step graphs do not "
                                             "build"):
        plan_step_graph(p, cluster.G)
    # DualPipe's is built (tests/models/studies/test_dualpipe.py)
    assert plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=64, ep_overlap="dualpipe").simulated


@pytest.mark.parametrize("kw", [
    dict(workload=SMALL, tp=1, pp=2, ep=8, zero=1, global_batch=32),
    dict(workload=SMALL, tp=2, pp=1, ep=4, etp=1, zero=3, global_batch=16, recompute="full"),
    dict(workload=SMALL, tp=1, pp=2, ep=8, zero=0, global_batch=32, ep_overlap="batch"),
    dict(workload="llama3-8b", tp=2, pp=2, cp=2, global_batch=8, seq_length=16384, recompute="full"),
    dict(workload="llama3-8b", tp=2, pp=2, cp=2, cp_comm="a2a", global_batch=8, seq_length=16384),
    dict(workload="llama3-8b", tp=4, pp=4, first_stage_layers=5, last_stage_layers=9, global_batch=16),
])
def test_the_count_before_building_is_the_built_graphs_size(cluster, kw):
    kw = dict(kw)
    p = plan(kw.pop("workload"), cluster, simulate=0, **kw)
    assert p.fits
    g = plan_step_graph(p, cluster.G)
    size = simulation_size(g)
    assert plan_step_graph_size(p) == len(g)
    assert check_plan_events(p, size) == size == 3 * len(g)
    with pytest.raises(LimitError) as refused:
        check_plan_events(p, size - 1)
    assert refused.value.keyword == "max_events"


def test_the_budget_refuses_before_building(cluster, monkeypatch):
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, simulate=0)
    events = 3 * plan_step_graph_size(p)

    def refuse(*args, **kwargs):
        raise AssertionError("the step graph was built before the budget was checked")
    monkeypatch.setattr(parallel_graph, "GraphBuilder", refuse)
    with pytest.raises(LimitError):
        plan_step_graph(p, cluster.G, max_events=events - 1)
    with pytest.raises(LimitError):
        simulate_planned(p, cluster.G, max_events=events - 1)


def test_the_planner_keeps_the_analytical_step_beyond_the_budget(cluster):
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, max_events=10)
    assert p.timing == "analytical" and p.timing_why.code is TimingCode.NEEDS_EVENTS
    assert p.timing_why.events == 3 * plan_step_graph_size(p)


def test_the_budget_counts_the_tasks_built_not_their_images(cluster):
    """A folded step (its data-parallel replicas images of replica 0's tasks) costs the simulator
    its tasks: a budget of three events per task built simulates it, though the replicas it
    stands for are several times more."""
    p = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, simulate=0)
    built = plan_step_graph_size(p)
    assert built == len(plan_step_graph(p, cluster.G)) < plan_step_graph_size(p, fold=False)
    simulated = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, max_events=3 * built)
    assert simulated.timing == "simulated"
    short = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, max_events=3 * built - 1)
    assert short.timing == "analytical" and short.timing_why.events == 3 * built


def test_error_paths(cluster):
    p = plan(SMALL, cluster, tp=1, pp=1, ep=8, zero=1, global_batch=16, simulate=0)
    with pytest.raises(StepGraphError, match="bucket must be a size"):
        plan_step_graph(p, cluster.G, bucket=0)
    with pytest.raises(StepGraphError, match="expected a dense layout"):
        step_graph(p, cluster.G)  # the dense builder names the one that builds it
    assert plan_step_graph_size(p, bucket=0) == 0
    big = plan("mixtral-8x22b", cluster, tp=1, pp=1, ep=2, zero=0, global_batch=16, simulate=0)
    assert not big.fits
    with pytest.raises(PlanDoesNotFitError):
        plan_step_graph(big, cluster.G)
    inter = plan("llama3-8b", cluster, tp=2, pp=2, cp=2, virtual_stages=2, global_batch=8, seq_length=16384,
                 simulate=0)
    with pytest.raises(StepGraphError, match="virtual_stages 1"):
        plan_step_graph(inter, cluster.G)


def test_simulated_components_name_the_expert_all_to_alls(cluster):
    p = plan(SMALL, cluster, tp=1, pp=1, ep=16, zero=1, global_batch=16)
    r = simulate(cluster.G, plan_step_graph(p, cluster.G))
    assert p.step_time == pytest.approx(r.step_time)
    assert _parts(p)["ep_comm"].exposed == pytest.approx(r.critical_by_kind()["ep_comm"])
