"""The training-step planner: memory boundaries, placement, invariants, results, errors."""

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

import topo
from models.studies.planner import (Layout, PlanError, gpus_ranking, memory, plan, search)
from models.present.plan_plot import memory_figure, step_time_figure
from models.studies.workload import PRESETS, WorkloadError
from models.studies.compute import UnsupportedDtypeError
from topo.units import GiB

MEGATRON = dict(zero=1, recompute="full", dtype="fp16")
# A small GPT (16 heads) so that tests stay fast.
SMALL = "transformer:layers=8,hidden=1024,heads=16,seq=1024,vocab=32000"


@pytest.fixture(scope="module")
def dgx1v():
    return topo.dgx1v()


@pytest.fixture(scope="module")
def dgx2():
    return topo.dgx2()


def layout(tp, pp, dp, zero=0, mb=1, gb=None, rc="none", sp=False):
    return Layout(tp, pp, dp, zero, mb, gb or dp * mb, rc, sp, "tp-dp-pp")


def test_gpt3_does_not_fit_on_8x80gb_without_sharding():
    w = PRESETS["gpt3-175b"]
    # 175 B x 16 bytes = 2.8 TB of model state: even split 8 ways it is 349 GB per GPU.
    for tp, pp in ((8, 1), (1, 8), (2, 4)):
        m = memory(w, layout(tp, pp, 1, rc="full"), dtype="bf16", capacity=80 * GiB)
        assert not m.fits
        assert m.parameters + m.gradients + m.optimizer >= 16 * w.parameters / 8 * 0.99
    # ZeRO 3 over 64 GPUs with TP 8: 2.8 TB / 512 per GPU, fits.
    m = memory(w, layout(8, 1, 64, zero=3, rc="full", sp=True), capacity=80 * GiB)
    assert m.parameters + m.gradients + m.optimizer == pytest.approx(16 * w.parameters / 512, rel=0.01)


def test_adam_16_bytes_per_parameter_and_zero_stages():
    w = PRESETS["llama3-8b"]
    base = memory(w, layout(1, 1, 8), capacity=80 * GiB)
    assert base.parameters + base.gradients + base.optimizer == pytest.approx(16 * w.parameters)
    assert not base.fits  # 128 GB of model state on one 80 GB GPU
    z1, z2, z3 = (memory(w, layout(1, 1, 8, zero=z), capacity=80 * GiB) for z in (1, 2, 3))
    assert z1.optimizer == pytest.approx(base.optimizer / 8)
    assert z2.gradients == pytest.approx(base.gradients / 8) and z2.parameters == base.parameters
    assert z3.parameters == pytest.approx(base.parameters / 8)
    fp32 = memory(w, layout(1, 1, 8), dtype="fp32", capacity=80 * GiB)
    assert fp32.parameters + fp32.gradients + fp32.optimizer == pytest.approx(16 * w.parameters)


def test_recomputation_and_pipeline_activations():
    w = PRESETS["gpt2-1.5b"]
    none = memory(w, layout(1, 1, 1), capacity=80 * GiB)
    full = memory(w, layout(1, 1, 1, rc="full"), capacity=80 * GiB)
    assert full.activations < none.activations / 5
    # 1F1B: the first stage holds p micro-batches of L/p layers.
    pp4 = memory(w, Layout(1, 4, 1, 0, 1, 8, "none", False, "tp-dp-pp"), capacity=80 * GiB)
    assert pp4.activations == pytest.approx(none.activations, rel=0.2)


def test_megatron_8_3b_on_dgx2_fits_with_tp8_not_with_dp16(dgx2):
    # Shoeybi et al. 2019 trained 8.3B with 8-way model parallelism on 32 GB V100s.
    fit = plan("megatron-8.3b", dgx2, tp=8, pp=1, dp=2, **MEGATRON)
    assert fit.fits and fit.memory.capacity == 32 * GiB
    oom = plan("megatron-8.3b", dgx2, tp=1, pp=1, dp=16, zero=0, recompute="full", dtype="fp16")
    assert not oom.fits and "out of memory" in oom.reason and math.isinf(oom.step_time)
    assert oom.to_dict()["step_time_s"] is None


def test_result_fields_and_json(dgx2):
    p = plan("megatron-8.3b", dgx2, tp=8, pp=1, dp=2, **MEGATRON)
    d = json.loads(p.to_json())
    for key in ("step_time_s", "samples_per_s", "tokens_per_s", "tflops_per_gpu", "mfu",
                "memory_per_gpu_bytes", "components"):
        assert key in d
    assert set(d["components"]) == {"compute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer"}
    assert p.step_time == pytest.approx(sum(c.exposed for c in p.components))
    assert p.tokens_per_s == pytest.approx(p.samples_per_s * 1024)
    assert 0 < p.mfu < 1
    # MFU = model FLOPs / (step x GPUs x peak), model FLOPs per token from the workload.
    w = PRESETS["megatron-8.3b"]
    assert p.mfu == pytest.approx(w.training_flops_per_token() * p.tokens_per_s / 16 / 125e12)
    assert "tp groups" in p.explain()
    assert sorted(i for g in p.groups["tp"] for i in g) == list(range(16))


def test_bubble_is_p_minus_1_over_m(dgx2):
    p = plan("gpt2-1.5b", dgx2, tp=1, pp=4, dp=4, zero=0, recompute="none", dtype="fp16", global_batch=64)
    m = p.layout.micro_batches
    assert m == 16
    ideal = p.component("compute").time + p.component("tp_comm").time
    assert p.component("bubble").time == pytest.approx(ideal * 3 / m)


def test_tp_group_inside_a_cube_face_on_dgx1(dgx1v):
    opts = dict(tp=4, pp=1, dp=2, **MEGATRON, memory_capacity=80 * GiB)
    best = plan("megatron-8.3b", dgx1v, **opts)
    assert set(map(frozenset, best.groups["tp"])) == {frozenset({0, 1, 2, 3}), frozenset({4, 5, 6, 7})}
    straddle = plan("megatron-8.3b", dgx1v, tp_groups=[(0, 1, 4, 5), (2, 3, 6, 7)], **opts)
    assert best.component("tp_comm").time < straddle.component("tp_comm").time
    assert best.step_time < straddle.step_time


@settings(max_examples=4, deadline=None)
@given(st.permutations(range(8)))
def test_chosen_placement_never_worse_than_any(perm):
    G = topo.dgx1v()
    opts = dict(tp=2, pp=1, dp=4, zero=1, recompute="full", dtype="fp16", memory_capacity=80 * GiB)
    groups = [tuple(perm[k:k + 2]) for k in range(0, 8, 2)]
    forced = plan(SMALL, G, tp_groups=groups, **opts)
    best = plan(SMALL, G, **opts)
    assert best.component("tp_comm").time <= forced.component("tp_comm").time * (1 + 1e-9)


@settings(max_examples=2, deadline=None)
@given(st.floats(1.0, 4.0))
def test_more_nvlink_bandwidth_never_slows_a_step(factor):
    G = topo.dgx1v()
    faster = topo.scale_kind(G, factor, kind="nvlink")
    opts = dict(tp=4, pp=1, dp=2, zero=0, recompute="full", dtype="fp16", memory_capacity=80 * GiB,
                sequence_parallel=False, tp_groups=[(0, 1, 2, 3), (4, 5, 6, 7)])
    assert plan(SMALL, faster, **opts).step_time <= plan(SMALL, G, **opts).step_time * (1 + 1e-9)


def test_search_ranks_fitting_first_by_step_time(dgx1v):
    s = search(SMALL, dgx1v, zero=0, recompute="full", dtype="fp16", memory_capacity=80 * GiB)
    fitting = s.fitting()
    assert fitting and s.best is fitting[0]
    times = [p.step_time for p in fitting]
    assert times == sorted(times)
    assert all(p.layout.ngpus == 8 for p in s.plans)
    assert {p.layout.tp for p in s.plans} == {1, 2, 4, 8}
    with pytest.raises(PlanError, match="heads"):  # GPT-2's 25 heads: tp 2 does not divide
        search("gpt2-1.5b", dgx1v, tp=2, dtype="fp16")
    assert "layout" in s.explain()


def test_resnet50_is_data_parallel(dgx1v):
    p = plan("resnet50", dgx1v, dtype="fp16", micro_batch=32)
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (1, 1, 8)
    assert p.fits and p.tokens_per_s == p.samples_per_s


def test_gpus_ranking():
    r = gpus_ranking("resnet50", micro_batch=64)
    names = [x.generation for x in r]
    assert names.index("B200") < names.index("V100") < names.index("P100")
    bf16 = gpus_ranking("gpt2-1.5b", dtype="bf16")
    assert {x.generation for x in bf16 if x.binding == "unsupported dtype"} == {"P100", "V100"}
    small = gpus_ranking("gpt2-1.5b", micro_batch=1)
    assert all(x.binding in ("compute", "memory bandwidth", "communication") for x in small)


def test_figures(dgx2):
    s = search("megatron-8.3b", dgx2, tp=8, **MEGATRON)
    fig = step_time_figure(s)
    assert [t.name for t in fig.data] == ["compute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer"]
    assert memory_figure(s).data[-1].name == "capacity"


@pytest.mark.parametrize("options,error", [
    (dict(tp=3), PlanError),
    (dict(gpus=[0, 1, 2, 3, 4], tp=2), PlanError),
    (dict(tp=0), PlanError),
    (dict(tp=True), PlanError),
    (dict(zero=4), PlanError),
    (dict(recompute="some"), PlanError),
    (dict(overlap=1.5), PlanError),
    (dict(bucket=0), PlanError),
    (dict(tp=8, pp=2, dp=2), PlanError),
    (dict(tp=1, pp=1, dp=8, global_batch=7), PlanError),
    (dict(dtype="bf16"), UnsupportedDtypeError),
    (dict(dtype="int8"), WorkloadError),
    (dict(tp=2, tp_groups=[(0, 1)]), PlanError),
])
def test_errors(dgx1v, options, error):
    with pytest.raises(error):
        search(SMALL, dgx1v, **options)


def test_the_nccl_release_is_chosen_for_the_plan(dgx1v):
    """A data-parallel step's all_reduce is timed by the release asked for: NCCL 2.3 on a DGX-1V
    (LL below its size threshold, v2.5's latencies [U]) is not the reference release's model."""
    from models.engine.nccl import UnknownNcclVersionError
    from models.predict.collectives import Estimator

    old = plan("bert-large", dgx1v, tp=1, pp=1, dp=8, profile="2.3.7")
    new = plan("bert-large", dgx1v, tp=1, pp=1, dp=8)
    assert old.step_time != new.step_time
    assert plan("bert-large", dgx1v, tp=1, pp=1, dp=8, profile="2.3").step_time == old.step_time
    e = Estimator(dgx1v, profile="2.3.7").estimate("all_reduce", 2**20)
    assert e.model == "NCCL 2.3.7 tuning model"
    with pytest.raises(UnknownNcclVersionError, match="'2.99'"):
        plan("bert-large", dgx1v, tp=1, pp=1, dp=8, profile="2.99")
