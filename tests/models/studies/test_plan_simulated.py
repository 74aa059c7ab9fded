"""The planner on the simulator: simulated steps, the analytical first pass, sizing, ranking."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import topo
from models.engine.fabric import PreparedFabric
from models.predict.collectives import estimate
from models.present.json_shapes import plan_json
from models.present.plan_text import format_plan, format_search
from models.studies.planner import PlanError, TimingCode, TimingWhy, calibrate_plan, plan, search
from models.studies.stepgraph import StepGraphError, step_graph, step_graph_size

SMALL = "transformer:layers=4,hidden=1024,heads=16,seq=1024,vocab=32000"


@pytest.fixture(scope="module")
def dgxh100():
    """A DGX H100 prepared once (frozen, so safe to share): the module's plans share its channel
    searches, estimates and decompositions (a fresh graph plans the same:
    test_plans_sharing_a_prepared_fabric_are_the_plans_of_a_fresh_graph)."""
    return PreparedFabric(topo.build("dgxh100"))


@pytest.fixture(scope="module")
def prepared_cluster():
    """Two DGX-1 (P100) prepared once (frozen, so safe to share): the property's examples share its
    NCCL channel searches instead of searching the same GPU sets again in each example. The step
    graph's size is the same as on two DGX H100 for every layout the property draws (all 432
    (tp, pp, zero, recompute, sequence_parallel, micro) x 6 (bucket, fold) compared once) at a
    fifth of the searches' cost."""
    return PreparedFabric(topo.build("2xdgx1"))


def test_data_parallel_without_overlap_is_compute_then_the_all_reduce_then_the_optimizer(dgxh100):
    # One bucket larger than every gradient: the all_reduce waits for the whole backward, so
    # nothing overlaps and the simulated step is the compute, the all_reduce's estimate (a
    # lone collective on an idle fabric takes its estimate) and the optimizer, end to end.
    p = plan(SMALL, dgxh100, tp=1, pp=1, dp=8, zero=0, global_batch=16, recompute="none",
             bucket=2.0**40, overlap=0.0)
    assert p.simulated and p.timing_why is None
    gradient_bytes = step_graph(p, dgxh100.G, workload=SMALL, bucket=2.0**40).tasks[-2].nbytes
    assert step_graph(p, dgxh100.G, workload=SMALL, bucket=2.0**40).tasks[-2].op == "all_reduce"
    all_reduce = float(estimate(dgxh100, "all_reduce", gradient_bytes, list(range(8))).time)
    compute, optimizer = p.component("compute").time, p.component("optimizer").time
    assert p.step_time == pytest.approx(compute + all_reduce + optimizer, rel=1e-6)
    assert p.component("dp_comm").exposed == pytest.approx(all_reduce, rel=1e-6)
    # ... which is what the analytical pass says with no overlap (its collective times
    # interpolate NCCL's estimates on a grid of sizes: within a percent)
    assert p.step_time == pytest.approx(p.analytical_step_time, rel=0.01)


def test_tensor_parallel_steps_agree_with_the_analytical_pass_where_nothing_overlaps(dgxh100):
    # tp only, one pipeline stage, one replica: every collective sits between two kernels of
    # its group, so the simulation has nothing to overlap.
    p = plan(SMALL, dgxh100, tp=8, pp=1, dp=1, zero=0, global_batch=4, recompute="none")
    assert p.simulated
    # Within the part the step graph leaves out: the embedding's kernels and its two
    # collectives per micro-batch, which the analytical pass counts (2 of its 18 collectives
    # with 4 layers).
    assert p.step_time == pytest.approx(p.analytical_step_time, rel=0.1)
    assert p.step_time < p.analytical_step_time
    assert p.component("tp_comm").exposed == pytest.approx(p.component("tp_comm").time, rel=1e-9)


def test_overlapped_buckets_hide_behind_the_backward(dgxh100):
    # Small buckets launched as the backward produces them: less exposed than one big bucket.
    options = dict(tp=1, pp=1, dp=8, zero=0, global_batch=16, recompute="none")
    one = plan(SMALL, dgxh100, bucket=2.0**40, **options)
    many = plan(SMALL, dgxh100, bucket=2.0**20, **options)
    assert many.component("dp_comm").exposed < one.component("dp_comm").exposed
    assert many.step_time < one.step_time


def test_search_simulates_the_best_candidates_and_ranks_them_first(dgxh100):
    s = search(SMALL, dgxh100, global_batch=16, simulate=3)
    simulated = [p for p in s.plans if p.simulated]
    assert len(simulated) == 3 and s.plans[:3] == tuple(simulated)
    assert [p.step_time for p in simulated] == sorted(p.step_time for p in simulated)
    rest = [p for p in s.plans[3:] if p.fits]
    assert all(p.timing == "analytical" and p.timing_why == TimingWhy(TimingCode.NOT_AMONG_BEST, count=3)
               for p in rest)
    assert all(p.step_time == p.analytical_step_time for p in rest)
    assert plan(SMALL, dgxh100, global_batch=16, simulate=3) == s.best
    text = format_search(s)
    assert "simulated" in text and "the 3 best of the analytical first pass" in text


def test_simulate_zero_is_the_analytical_planner(dgxh100):
    s = search(SMALL, dgxh100, global_batch=16, simulate=0)
    assert all(not p.simulated for p in s.plans)
    assert [p.step_time for p in s.fitting()] == sorted(p.step_time for p in s.fitting())
    assert "(every step analytical)" in format_search(s)


def test_the_simulations_are_sized_first(dgxh100):
    options = dict(tp=8, pp=1, dp=1, zero=0, global_batch=4, recompute="none")
    p = plan(SMALL, dgxh100, **options)
    events = 3 * step_graph_size(p, workload=SMALL)
    beyond = plan(SMALL, dgxh100, max_events=events - 1, **options)
    assert not beyond.simulated and beyond.timing_why == TimingWhy(TimingCode.NEEDS_EVENTS, events=events,
                                                                   max_events=events - 1)
    assert beyond.step_time == p.analytical_step_time
    assert plan(SMALL, dgxh100, max_events=events, **options).simulated
    # a budget for the first candidate only: the next ones stay analytical and say why
    s = search(SMALL, dgxh100, tp=8, pp=1, dp=1, global_batch=4, max_events=events)
    assert s.best.simulated
    assert all(not p.simulated and p.timing_why.code in (TimingCode.BEYOND_BUDGET, TimingCode.NEEDS_EVENTS)
               and p.timing_why.max_events == events for p in s.plans[1:] if p.fits)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_bad_simulate_counts_are_refused(dgxh100, bad):
    with pytest.raises(PlanError, match="simulate"):
        plan(SMALL, dgxh100, simulate=bad)


@pytest.mark.parametrize("bad", [0, None, 2.5])
def test_bad_event_budgets_are_refused(dgxh100, bad):
    with pytest.raises(PlanError, match="max_events"):
        plan(SMALL, dgxh100, max_events=bad)


def test_cnns_and_interleaved_schedules_stay_analytical_and_say_why(cluster):
    cnn = plan("resnet50", topo.build("dgx1v"), dp=8, global_batch=64)
    assert not cnn.simulated and cnn.timing_why == TimingWhy(TimingCode.CNN)
    v = plan("llama3-8b", cluster, tp=8, pp=2, dp=1, zero=0, recompute="full", global_batch=4,
             virtual_stages=2)
    assert not v.simulated and v.timing_why == TimingWhy(TimingCode.INTERLEAVED)
    assert "timing: analytical (interleaved" in format_plan(v)


def test_a_simulated_plan_shows_its_timing(cluster):
    p = plan("llama3-8b", cluster, tp=8, pp=2, dp=1, zero=0, recompute="full", global_batch=4)
    assert p.simulated
    data = plan_json(p)
    assert data["timing"] == "simulated" and data["simulated_step_time_s"] == data["step_time_s"] == p.step_time
    assert data["analytical_step_time_s"] == p.analytical_step_time
    assert math.isclose(sum(c.exposed for c in p.components), p.step_time, rel_tol=1e-9)
    assert p.component("bubble").exposed > 0  # two stages: the pipeline fills and drains
    assert "timing: simulated (the analytical first pass:" in format_plan(p)


def test_calibration_fits_the_simulated_step(dgxh100):
    c = calibrate_plan(SMALL, dgxh100, "50ms", tp=8, pp=1, dp=1, zero=0, global_batch=8, recompute="none")
    assert c.simulated and c.step_time == pytest.approx(0.05, rel=1e-5)
    assert c.calibration.measured_step == pytest.approx(0.05)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4]), zero=st.sampled_from([0, 1, 2, 3]),
       recompute=st.sampled_from(["none", "selective", "full"]), sequence_parallel=st.booleans(),
       micro=st.sampled_from([1, 2]), bucket=st.sampled_from([2.0**16, 2.0**22, 2.0**30]),
       fold=st.booleans())
def test_the_size_of_a_step_graph_is_its_task_count(prepared_cluster, tp, pp, zero, recompute, sequence_parallel, micro,
                                                      bucket, fold):
    dp = 16 // (tp * pp)
    p = plan(SMALL, prepared_cluster, tp=tp, pp=pp, dp=dp, zero=zero, recompute=recompute,
             global_batch=4 * dp * micro, micro_batch=micro, sequence_parallel=sequence_parallel,
             memory_capacity=2.0**40, simulate=0)
    assert step_graph_size(p, workload=SMALL, bucket=bucket, fold=fold) == len(
        step_graph(p, prepared_cluster.G, workload=SMALL, bucket=bucket, fold=fold))


@pytest.mark.parametrize("tp, pp, dp, zero, recompute, sequence_parallel", [
    (1, 1, 8, 0, "none", False),    # data parallel only: the buckets wait for every replica
    (2, 1, 4, 1, "full", True),     # ZeRO 1's parameter gathers
    (1, 2, 4, 3, "none", False),    # ZeRO 3: replica 0 gathers every layer for all
    (2, 2, 2, 2, "selective", False),
    (8, 1, 1, 0, "full", True),     # no data parallelism: nothing to fold
])
def test_the_size_of_an_unfolded_step_graph_is_its_task_count(dgxh100, tp, pp, dp, zero, recompute,
                                                               sequence_parallel):
    # dp > 2: the count walks two replicas and takes the others as copies of the second's shape;
    # 3 micro-batches per replica: it walks one forward and one backward block per stage.
    p = plan(SMALL, dgxh100, tp=tp, pp=pp, dp=dp, zero=zero, recompute=recompute, global_batch=3 * dp,
             sequence_parallel=sequence_parallel, memory_capacity=2.0**40, simulate=0)
    for bucket in (2.0**16, 2.0**40):
        unfolded = step_graph(p, dgxh100.G, workload=SMALL, bucket=bucket, fold=False)
        assert step_graph_size(p, workload=SMALL, bucket=bucket, fold=False) == len(unfolded)
        assert len({t.id for t in unfolded.tasks}) == len(unfolded)
        folded = step_graph(p, dgxh100.G, workload=SMALL, bucket=bucket)
        assert step_graph_size(p, workload=SMALL, bucket=bucket) == len(folded) <= len(unfolded)


def test_a_plan_that_is_no_step_graph_has_size_zero(dgxh100):
    interleaved = plan(SMALL, dgxh100, tp=1, pp=2, dp=4, zero=0, virtual_stages=2, global_batch=8, simulate=0)
    assert step_graph_size(interleaved, workload=SMALL) == 0
    with pytest.raises(StepGraphError, match="virtual stages"):
        step_graph(interleaved, dgxh100.G, workload=SMALL)
    assert step_graph_size(plan("resnet50", dgxh100, tp=1, pp=1, dp=8, simulate=0)) == 0


def test_overlap_zero_reduces_every_gradient_after_the_backward(dgxh100):
    options = dict(tp=1, pp=1, dp=8, zero=0, global_batch=16, recompute="none", bucket=2.0**20)
    after = plan(SMALL, dgxh100, overlap=0.0, **options)
    assert after.simulated
    assert after.component("dp_comm").exposed == pytest.approx(after.component("dp_comm").time, rel=1e-9)
    assert plan(SMALL, dgxh100, **options).step_time < after.step_time


@pytest.mark.parametrize("zero", [0, 1])
def test_without_overlap_both_passes_send_the_gradients_as_one_buffer(dgxh100, zero):
    # overlap 0: the gradients (and ZeRO 1's parameters) go as one buffer after the backward in
    # the first pass as in the simulation (gradient_bucket), whatever the bucket option: 1 MiB
    # buckets would be ~40 start-ups more in the first pass alone.
    options = dict(tp=1, pp=1, dp=8, zero=zero, global_batch=16, recompute="none", bucket=2.0**20, overlap=0.0)
    simulated, analytical = plan(SMALL, dgxh100, **options), plan(SMALL, dgxh100, simulate=0, **options)
    assert simulated.simulated and not analytical.simulated
    assert simulated.component("dp_comm").exposed == pytest.approx(analytical.component("dp_comm").exposed, rel=1e-6)
    # with overlap the first pass buckets them: the same bytes cost more start-ups
    bucketed = plan(SMALL, dgxh100, simulate=0, **{**options, "overlap": 1e-9})
    assert bucketed.component("dp_comm").time > analytical.component("dp_comm").time * 1.05


def test_an_overlap_fraction_shapes_the_first_pass_and_the_simulated_plan_says_so(dgxh100):
    """Between 0 and 1 the fraction is the analytical pass's knob: the simulated step comes from
    the schedule (the same as with full overlap) and the plan names the fraction it did not use."""
    options = dict(tp=1, pp=1, dp=8, zero=0, global_batch=16, recompute="none", bucket=2.0**20)
    half, full = plan(SMALL, dgxh100, overlap=0.5, **options), plan(SMALL, dgxh100, overlap=1.0, **options)
    assert half.simulated and full.simulated and half.step_time == full.step_time
    assert half.analytical_step_time > full.analytical_step_time
    assert half.timing_why == TimingWhy(TimingCode.OVERLAP_FIRST_PASS, overlap=0.5) and full.timing_why is None
    assert "; overlap=0.5 shapes the first pass only" in format_plan(half)


def test_plans_sharing_a_prepared_fabric_are_the_plans_of_a_fresh_graph(prepared_cluster):
    # The planner keeps its collective estimates and its simulations' decompositions on the
    # prepared fabric (PreparedFabric.memo) for every plan made on it: what an earlier plan asked
    # (other groups, other sizes, other layouts simulated first) must not change a later one.
    asked = dict(tp=2, pp=2, dp=4, zero=1, global_batch=16, recompute="none")
    search(SMALL, prepared_cluster, tp=4, simulate=2)
    shared = plan(SMALL, prepared_cluster, **asked)
    fresh = plan(SMALL, topo.build("2xdgx1"), **asked)
    assert shared.simulated and fresh.simulated
    assert (shared.step_time, shared.components, shared.groups) == (fresh.step_time, fresh.components, fresh.groups)
