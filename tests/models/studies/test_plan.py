"""The training-step planner: memory boundaries, placement, invariants, results, errors."""

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

import topo
from models.engine.fabric import PreparedFabric
from models.studies import planner
from models.studies.planner import placement
from models.studies.planner import Layout, NoLayoutError, PlanError, PlanWarning, SkipCode, gpus_ranking, memory
from models.present.json_shapes import plan_json
from models.present.plan_plot import memory_figure, step_time_figure
from models.present.plan_text import fit_note, format_plan, format_search, plan_error_text
from models.studies.workload import PRESETS, WorkloadError
from models.studies.compute import UnsupportedDtypeError
from topo.units import GB, GiB


# These tests check the analytical first pass (step_components' closed forms); the simulated
# step has its own tests (test_plan_simulated.py).
def plan(*args, **options):
    return planner.plan(*args, simulate=0, **options)


def search(*args, **options):
    return planner.search(*args, simulate=0, **options)


def calibrate_plan(*args, **options):
    return planner.calibrate_plan(*args, simulate=0, **options)


MEGATRON = dict(zero=1, recompute="full", dtype="fp16")
# A small GPT (16 heads) so that tests stay fast.
SMALL = "transformer:layers=8,hidden=1024,heads=16,seq=1024,vocab=32000"


@pytest.fixture(scope="module")
def dgx1v():
    """Prepared once (frozen, so safe to share): the module's plans share its NCCL channel searches."""
    return PreparedFabric(topo.dgx1v())


@pytest.fixture(scope="module")
def dgx2():
    return PreparedFabric(topo.dgx2())


@pytest.fixture(scope="module")
def two_dgx1v():
    """Two DGX-1V prepared once: the plans of the module's cluster tests share its searches."""
    return PreparedFabric(topo.build("2xdgx1v"))


def layout(tp, pp, dp, zero=0, mb=1, gb=None, rc="none", sp=False):
    return Layout(tp, pp, dp, zero, mb, gb or dp * mb, rc, sp, "tp-dp-pp")


def test_gpt3_does_not_fit_on_8x80gb_without_sharding():
    w = PRESETS["gpt3-175b"]
    # 175 B x 18 bytes (bf16 weights, fp32 gradients, Adam's 12) = 3.2 TB of model state: even
    # split 8 ways it is 394 GB per GPU.
    for tp, pp in ((8, 1), (1, 8), (2, 4)):
        m = memory(w, layout(tp, pp, 1, rc="full"), dtype="bf16", capacity=80 * GiB)
        assert not m.fits
        assert m.parameters + m.gradients + m.optimizer >= 18 * w.parameters / 8 * 0.99
    # ZeRO 3 over 64 GPUs with TP 8: 3.2 TB / 512 per GPU, fits.
    m = memory(w, layout(8, 1, 64, zero=3, rc="full", sp=True), capacity=80 * GiB)
    assert m.parameters + m.gradients + m.optimizer == pytest.approx(18 * w.parameters / 512, rel=0.01)


def test_adam_18_bytes_per_parameter_and_zero_stages():
    w = PRESETS["llama3-8b"]
    base = memory(w, layout(1, 1, 8), capacity=80 * GiB)
    # bf16: 2 (weights) + 4 (fp32 gradients) + 12 (fp32 master and two moments)
    assert base.parameters + base.gradients + base.optimizer == pytest.approx(18 * w.parameters)
    assert base.gradients == pytest.approx(2 * base.parameters)
    assert not base.fits  # 145 GB of model state on one 80 GB GPU
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
    assert not oom.fits and not oom.memory.fits and math.isinf(oom.step_time)
    assert fit_note(oom).startswith("out of memory") and fit_note(fit) == ""
    assert plan_json(oom)["step_time_s"] is None


def test_result_fields_and_json(dgx2):
    p = plan("megatron-8.3b", dgx2, tp=8, pp=1, dp=2, **MEGATRON)
    d = json.loads(json.dumps(plan_json(p)))
    for key in ("step_time_s", "samples_per_s", "tokens_per_s", "model_tflops_per_gpu",
                "hardware_tflops_per_gpu", "mfu", "hfu", "memory_per_gpu_bytes", "components"):
        assert key in d
    assert set(d["components"]) == {"compute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer"}
    assert p.step_time == pytest.approx(sum(c.exposed for c in p.components))
    assert p.tokens_per_s == pytest.approx(p.samples_per_s * 1024)
    assert 0 < p.mfu < 1
    # MFU = model FLOPs / (step x GPUs x peak), model FLOPs per token from the workload.
    w = PRESETS["megatron-8.3b"]
    assert p.mfu == pytest.approx(w.training_flops_per_token() * p.tokens_per_s / 16 / 125e12)
    assert "tp groups" in format_plan(p, verbose=True)
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


def test_the_tensor_parallel_partition_is_the_one_a_loop_over_every_partition_picks(dgx1v):
    """The planner weighs every partition of a host at once, as arrays: it picks what a loop over
    the partitions in order picks, the slowest group fastest, then the least total, then the
    consecutive partition, then the first (a DGX-1V has ties: its cube faces are alike), and in
    any host order. The partition is kept by the prepared fabric: asked again, it is the same."""
    fabric = placement.JobGroups(dgx1v)
    for tp in (2, 4):
        for host in ([0, 1, 2, 3, 4, 5, 6, 7], [7, 5, 3, 1, 0, 2, 4, 6]):
            consecutive = tuple(tuple(host[k:k + tp]) for k in range(0, len(host), tp))

            def cost(partition):
                times = [fabric.time("all_reduce", 2.0**24, g) for g in partition]
                return max(times), sum(times), partition != consecutive
            expected = min(placement._partitions(host, tp), key=cost)
            assert placement.tp_partition(fabric, host, tp, 2.0**24, "all_reduce") == expected
            assert placement.tp_partition(placement.JobGroups(dgx1v), host, tp, 2.0**24, "all_reduce") == expected


@settings(max_examples=4, deadline=None)
@given(st.permutations(range(8)))
def test_chosen_placement_never_worse_than_any(dgx1v, perm):
    G = dgx1v  # the examples share its channel searches (the GPU pairs and sets recur)
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
    with pytest.raises(NoLayoutError, match="HEADS") as refused:  # GPT-2's 25 heads: tp 2 does not divide
        search("gpt2-1.5b", dgx1v, tp=2, dtype="fp16")
    assert [s.code for s in refused.value.skipped] == [SkipCode.TP_LIMIT]
    assert plan_error_text(refused.value).endswith("tp2: tensor parallel 2 does not divide heads (25)")
    assert "layout" in format_search(s)


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

    G = dgx1v.G  # the graph: a release other than the prepared fabric's is asked for
    old = plan("bert-large", G, tp=1, pp=1, dp=8, profile="2.3.7")
    new = plan("bert-large", dgx1v, tp=1, pp=1, dp=8)
    assert old.step_time != new.step_time
    assert plan("bert-large", G, tp=1, pp=1, dp=8, profile="2.3").step_time == old.step_time
    e = Estimator(G, profile="2.3.7").estimate("all_reduce", 2**20)
    assert e.model == "NCCL 2.3.7 tuning model"
    with pytest.raises(UnknownNcclVersionError, match="'2.99'"):
        plan("bert-large", G, tp=1, pp=1, dp=8, profile="2.99")


# --- layouts people use (issue 23) ---------------------------------------------------------
def test_a_job_smaller_than_the_system_takes_the_best_connected_gpus(dgx1v, two_dgx1v):
    one = plan("resnet50", dgx1v, dp=1, micro_batch=32, global_batch=256, dtype="fp16")
    assert one.layout.ngpus == 1 and one.groups["dp"] == ((0,),)
    # Four GPUs: one fully NVLink-connected quad of the hybrid cube-mesh.
    four = plan("resnet50", dgx1v, dp=4, micro_batch=32, global_batch=256, dtype="fp16")
    assert set(four.groups["dp"][0]) == {0, 1, 2, 3}
    three = plan(SMALL, two_dgx1v, tp=8, pp=1, dp=2, zero=1, recompute="full", dtype="fp16")
    assert three.layout.ngpus == 16
    with pytest.raises(PlanError, match="multiple of 8"):
        plan(SMALL, two_dgx1v, tp=4, pp=1, dp=3, dtype="fp16")


def test_tensor_parallelism_across_hosts_is_modelled_with_a_warning(two_dgx1v):
    G = two_dgx1v
    p = plan(SMALL, G, tp=16, pp=1, dp=1, zero=0, recompute="full", dtype="fp16")
    assert p.fits and p.warning_codes == (PlanWarning.CROSS_HOST_TP,)
    assert p.groups["tp"] == (tuple(range(16)),)
    inside = plan(SMALL, G, tp=8, pp=1, dp=2, zero=0, recompute="full", dtype="fp16")
    assert not inside.warning_codes
    assert p.component("tp_comm").time > inside.component("tp_comm").time
    with pytest.raises(PlanError, match="spans hosts"):
        plan(SMALL, G, tp=12, pp=1, dp=1, dtype="fp16")


def test_interleaving_shrinks_the_bubble_by_v(dgx2):
    opts = dict(tp=1, pp=4, dp=4, zero=0, recompute="none", dtype="fp16", global_batch=64)
    plain = plan("gpt2-1.5b", dgx2, **opts)
    inter = plan("gpt2-1.5b", dgx2, virtual_stages=2, **opts)
    m = plain.layout.micro_batches
    slot = (inter.component("compute").time + inter.component("tp_comm").time) / m
    assert inter.component("bubble").time == pytest.approx(3 / 2 * slot)
    assert inter.component("bubble").time < plain.component("bubble").time
    # Korthikanti et al. 2022 (4.2.3): the first stage holds 1 + (p - 1) / (p v) times more.
    mem = memory(PRESETS["gpt2-1.5b"], inter.layout, dtype="fp16")
    assert mem.activations == pytest.approx(memory(PRESETS["gpt2-1.5b"], plain.layout, dtype="fp16").activations
                                            * (1 + 3 / 8), rel=0.02)
    with pytest.raises(NoLayoutError, match="INTERLEAVE_LAYERS") as chunks:  # 48 layers do not split into 4 x 5
        plan("gpt2-1.5b", dgx2, virtual_stages=5, **opts)
    assert "48 layers do not split into pp x v = 20 chunks" in plan_error_text(chunks.value)
    with pytest.raises(NoLayoutError, match="INTERLEAVE_PIPELINE") as pipeline:
        plan("gpt2-1.5b", dgx2, tp=1, pp=1, dp=16, virtual_stages=2, dtype="fp16")
    assert "interleaving needs a pipeline (pp > 1)" in plan_error_text(pipeline.value)


def test_sequence_parallelism_off_holds_the_replicated_activations():
    # Korthikanti et al. 2022: with t-way tensor parallelism, 10 s b h of 34 stay replicated without SP.
    w = PRESETS["gpt3-175b"]
    on = layout(8, 1, 1, rc="none", sp=True)
    off = layout(8, 1, 1, rc="none", sp=False)
    s, h, a = w.seq, w.hidden, w.heads
    per_layer_on = s * h * (34 + 5 * a * s / h) / 8
    per_layer_off = s * h * (10 + 24 / 8 + 5 * a * s / (h * 8))
    logits = w.logits_bytes(1, 8)
    assert memory(w, on).activations == pytest.approx(per_layer_on * w.layers + logits)
    assert memory(w, off).activations == pytest.approx(per_layer_off * w.layers + logits)


def test_both_flop_conventions(dgx2):
    p = plan("megatron-8.3b", dgx2, tp=8, pp=1, dp=2, **MEGATRON)
    w = PRESETS["megatron-8.3b"]
    B, s, l, h, V = p.layout.global_batch, w.seq, w.layers, w.hidden, w.vocab
    # Narayanan et al. 2021 eq. (3) with recomputation, and its 72 form without.
    assert p.hardware_flops == pytest.approx(96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)))
    assert p.model_flops == pytest.approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)))
    d = plan_json(p)
    assert d["hardware_tflops_per_gpu"] == pytest.approx(p.hardware_flops / p.step_time / 16 / 1e12)
    assert d["model_tflops_per_gpu"] < d["hardware_tflops_per_gpu"] and d["hfu"] > d["mfu"]
    assert "model FLOPs" in format_plan(p) and "hardware FLOPs" in format_plan(p)


def test_variants_and_tf32(dgx1v):
    small = dict(tp=8, pp=1, dp=1, zero=0, recompute="full", global_batch=8)
    a40 = plan(SMALL, topo.build("dgxa100"), dtype="bf16", **small)
    a80 = plan(SMALL, topo.build("dgxa100-80g"), dtype="bf16", **small)
    assert (a40.memory.capacity, a80.memory.capacity) == (40 * GiB, 80 * GiB)
    assert (a40.compute.memory_bandwidth, a80.compute.memory_bandwidth) == (1555 * GB, 2039 * GB)
    tf32 = plan(SMALL, topo.build("dgxa100"), dtype="tf32", **small)
    assert tf32.peak == 156e12 and tf32.memory.parameters == pytest.approx(2 * a40.memory.parameters)
    with pytest.raises(UnsupportedDtypeError, match="tf32"):
        plan(SMALL, dgx1v, dtype="tf32")


def test_bert_large_fits_a_16gb_v100_with_its_real_heads(dgx1v):
    # BERT's masked-LM head computes logits on 80 of 512 tokens: batch 8 per GPU fits 16 GB.
    p = plan("bert-large", dgx1v, tp=1, pp=1, dp=8, zero=0, recompute="none", dtype="fp16", micro_batch=8)
    assert p.fits and p.memory.total < 16 * GiB
    assert p.software == "fused"


def test_calibration_fits_one_scale_to_the_measured_step(dgx1v):
    opts = dict(tp=4, pp=1, dp=2, **MEGATRON)
    base = plan(SMALL, dgx1v, **opts)
    fitted = calibrate_plan(SMALL, dgx1v, f"{base.step_time * 1.25:.6f}s", **opts)
    c = fitted.calibration
    assert fitted.step_time == pytest.approx(base.step_time * 1.25, rel=1e-6)
    assert c.scale > 1 and c.fitted["gemm_efficiency"] == pytest.approx(c.default["gemm_efficiency"] / c.scale)
    assert plan_json(fitted)["calibration"]["compute_scale"] == pytest.approx(c.scale)
    # The same measurement as model TFLOP/s per GPU gives the same fit.
    tflops = fitted.model_tflops_per_gpu
    again = calibrate_plan(SMALL, dgx1v, f"{tflops:.9f}tflops", **opts)
    assert again.calibration.scale == pytest.approx(c.scale, rel=1e-5)
    # Carried to another layout: every kernel slower by the scale.
    other = dict(tp=2, pp=2, dp=2, **MEGATRON)
    assert plan(SMALL, dgx1v, compute_scale=c.scale, **other).component("compute").time == pytest.approx(
        c.scale * plan(SMALL, dgx1v, **other).component("compute").time)
    with pytest.raises(PlanError, match="shorter than the communication"):
        calibrate_plan(SMALL, dgx1v, "0.000001ms", **opts)
    for bad in ("fast", "-1s", "1e400s", "nan", ""):
        with pytest.raises(PlanError, match="measured step"):
            calibrate_plan(SMALL, dgx1v, bad, **opts)
    with pytest.raises(PlanError, match="unknown option"):
        calibrate_plan(SMALL, dgx1v, "10s", bogus=1)
