"""Recomputation strategies (models.studies.recomputation): DeepSeek-V3's partial
recomputation by hand (memory per GPU of one layout, the recomputed FLOPs and kernels), the
search covering it, and its refusals; the dense paths asking the object, not its name (a
strategy of your own behaves as the one it equals)."""

from __future__ import annotations

import pytest

import topo
from models.engine.fabric import PreparedFabric
from models.studies.compute import compute_model, gpu_of
from models.studies.moe import moe_workload
from models.studies.planner import RECOMPUTE, Layout, PlanError, plan, search
from models.studies.planner.parallel_step import layer_kind, moe_flops_per_token
from models.studies.recomputation import (DEEPSEEK, FULL, NO_RECOMPUTE, RECOMPUTE_MODULES, RECOMPUTES, SELECTIVE,
                                          Recompute, as_recompute, recompute_named)
from models.studies.workload import WorkloadError, workload

# DeepSeek-V3 (tests/data/moe_published_parameters.json; the preset's shapes): hidden 7,168, MLA q_lora
# 1,536, kv_lora 512, rope 64, 128 heads of qk 128 + 64 and v 128; 3 dense layers of FFN 18,432, 58 MoE
# layers of 256 experts of 2,048, top-8, one shared expert of 2,048; one MTP layer; vocabulary 129,280.
H, Q_LORA, KV_LORA, ROPE, HEADS, QK, V = 7168, 1536, 512, 64, 128, 192, 128
DENSE_FFN, EXPERTS, TOP_K, EXPERT_FFN, SHARED_FFN, VOCAB = 18432, 256, 8, 2048, 2048, 129280


@pytest.fixture(scope="module")
def h800():
    return PreparedFabric(topo.build("dgxh800"))


def _plan(fabric, recompute, dtype="fp8"):
    # tp1 pp1 dp8 ep8 ZeRO-1, one micro-batch of 4,096 tokens: one micro-batch in flight, every
    # layer and the head on the one stage. It does not fit (the whole model on one stage); its
    # memory is still the sum by hand.
    s = search("deepseek-v3", fabric, tp=1, pp=1, dp=8, ep=8, zero=1, micro_batch=1, global_batch=8, dtype=dtype,
               recompute=recompute, seq_length=4096, simulate=0)
    (p,) = {p.layout.order: p for p in s.plans}.values()
    return p


def test_the_strategies_and_their_names():
    assert RECOMPUTE == ("none", "selective", "full", "deepseek") == tuple(r.name for r in RECOMPUTES)
    assert recompute_named("deepseek") is DEEPSEEK and recompute_named("partial") is None
    assert DEEPSEEK.modules == ("layernorm", "mla_up_proj", "moe_act") and DEEPSEEK.low_precision_cache
    assert [op for op in ("q_a", "q_b", "kv_a", "kv_b", "o", "norms", "expert_activation", "experts_in",
                          "flash_attention") if DEEPSEEK.recomputes(op)] == ["q_b", "kv_b", "norms", "expert_activation"]
    assert SELECTIVE.recomputes("softmax") and not SELECTIVE.recomputes("norms")
    assert FULL.recomputes("anything") and FULL.drops("moe_act") and not NO_RECOMPUTE.drops("layernorm")
    assert set(RECOMPUTE_MODULES) >= {m for r in RECOMPUTES for m in r.modules}


def test_deepseek_recomputed_flops_by_hand():
    # The MLA up-projections of every layer again: q_b (1,536 x 128 x 192) and kv_b (512 x 128 x (128 + 128)),
    # 2 FLOPs a multiply-add: 2 x (37,748,736 + 16,777,216) = 109,051,904 a token a layer, x 61 layers.
    w = moe_workload("deepseek-v3")
    per_layer = 2 * (Q_LORA * HEADS * QK + KV_LORA * HEADS * (QK - ROPE + V))
    assert per_layer == 109_051_904
    assert moe_flops_per_token(w, "deepseek") - moe_flops_per_token(w, "none") == pytest.approx(61 * per_layer)
    # Far below full recomputation's forward of the layers (~93.6 GFLOP a token), a little over 2 %
    # of the step's model FLOPs.
    full = moe_flops_per_token(w, "full") - moe_flops_per_token(w, "none")
    assert 61 * per_layer < full / 10
    assert 0.02 < 61 * per_layer / moe_flops_per_token(w, "none") < 0.025


def _per_token(lin, norm_out, qkv, moe_act):
    """One layer's stored bytes a token (parallel_step._moe_activation_bytes' tensors, tp 1, by hand)."""
    common = 2 * 3 * H + norm_out * H + 2 * qkv + lin * (Q_LORA + KV_LORA + ROPE + HEADS * V)
    dense = common + norm_out * H + 2 * 2 * DENSE_FFN + lin * DENSE_FFN
    moe = (common + TOP_K * (lin * H + (2 * lin + moe_act) * EXPERT_FFN) + 4 * EXPERTS
           + (2 * lin + moe_act) * SHARED_FFN + norm_out * H)
    return dense, moe


def test_deepseek_memory_per_gpu_by_hand(h800):
    """Activations of the one stage: 3 dense layers, 58 MoE layers and the MTP layer (a MoE layer's
    tensors) for 4,096 tokens, plus the fp32 logits and their gradient of the head and the MTP head."""
    logits = 4 * 2 * 4096 * VOCAB * 2
    # none: every tensor in 16-bit; Q, K, V 128 x (192 + 192 + 128) a token.
    dense, moe = _per_token(lin=2, norm_out=2, qkv=HEADS * (2 * QK + V), moe_act=2)
    assert (dense, moe) == (350_336, 466_048)
    none = _plan(h800, "none")
    assert none.memory.activations == pytest.approx(4096 * (3 * dense + 59 * moe) + logits)
    # deepseek in fp8: the norms' outputs, Q, K, V and the experts' SwiGLU outputs recomputed; the linear
    # layers' inputs and the SwiGLUs' inputs in fp8 (1 byte).
    dense, moe = _per_token(lin=1, norm_out=0, qkv=0, moe_act=0)
    assert (dense, moe) == (153_664, 156_736)
    # ... each fp8 byte with its share of DeepSeek-V3's fp32 scale per 1 x 128 tile: 1 + 4 / 128 bytes
    dense, moe = _per_token(lin=1 + 4 / 128, norm_out=0, qkv=0, moe_act=0)
    p = _plan(h800, "deepseek")
    assert p.memory.activations == pytest.approx(4096 * (3 * dense + 59 * moe) + logits)
    # Weights, gradients and optimizer state do not move with recomputation.
    assert (p.memory.parameters, p.memory.gradients, p.memory.optimizer) == (
        none.memory.parameters, none.memory.gradients, none.memory.optimizer)
    # In bf16 there is no fp8 copy to keep: the same drops, 16-bit caches.
    dense16, moe16 = _per_token(lin=2, norm_out=0, qkv=0, moe_act=0)
    assert _plan(h800, "deepseek", "bf16").memory.activations == pytest.approx(
        4096 * (3 * dense16 + 59 * moe16) + logits)
    full = _plan(h800, "full")
    assert full.memory.activations < p.memory.activations < none.memory.activations


def test_deepseek_recomputed_kernels_and_flops_in_the_plan(h800):
    """The backward of a micro-batch gains the forward of the kernels recomputed (q_b, kv_b, the
    norms, the experts' activations), layer by layer; hardware FLOPs gain 61 x 109,051,904 a token."""
    from models.studies.planner.parallel_step import layer_ops
    none, p = _plan(h800, "none"), _plan(h800, "deepseek")
    w = moe_workload("deepseek-v3")
    import dataclasses
    w = dataclasses.replace(w, seq=4096)
    cm = compute_model(gpu_of(topo.build("dgxh800").nodes["gpu0"]["model"]), "fp8", workload=w)
    kinds = {}
    for i in range(w.layers):
        kinds[layer_kind(w, i)] = kinds.get(layer_kind(w, i), 0) + 1
    kinds[(False, False)] += w.mtp_layers
    again = sum(n * sum(t.forward for t in cm.times(layer_ops(w, k, p.layout, cm, 2, 1.0))
                        if t.op.name in ("q_b", "kv_b", "norms", "expert_activation", "shared_activation"))
                for k, n in kinds.items())
    d, d0 = p.component("compute").detail, none.component("compute").detail
    assert d.forward == pytest.approx(d0.forward)
    assert d.backward - d0.backward == pytest.approx(again)
    assert p.hardware_flops - none.hardware_flops == pytest.approx(61 * 109_051_904 * 8 * 4096)


def test_the_search_covers_deepseek_for_moe_and_refuses_it_for_dense(h800):
    s = search("deepseek-v3", h800, tp=1, pp=1, dp=8, ep=8, zero=1, micro_batch=1, global_batch=8, dtype="fp8",
               seq_length=4096, simulate=0)
    assert {p.layout.recompute for p in s.plans} == {NO_RECOMPUTE, DEEPSEEK, FULL}
    dense = search("llama3-8b", h800, tp=8, pp=1, dp=1, zero=0, global_batch=8, simulate=0)
    assert {p.layout.recompute for p in dense.plans} == {NO_RECOMPUTE, FULL}
    with pytest.raises(PlanError, match="expected a MoE workload, received llama3-8b"):
        search("llama3-8b", h800, tp=8, pp=1, dp=1, zero=0, global_batch=8, recompute="deepseek", simulate=0)


def test_the_cli_refuses_deepseek_for_a_dense_model_in_one_line(capsys):
    from models.present.cli import main
    status = main(["plan", "llama3-8b", "--system", "dgxh100", "--tp", "8", "--pp", "1", "--recompute", "deepseek"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1 and "expected a MoE workload" in err


def test_a_name_is_read_once_as_its_object():
    assert [as_recompute(r.name) for r in RECOMPUTES] == list(RECOMPUTES)
    mine = Recompute("attention", ("core_attn",))
    assert as_recompute(mine) is mine and as_recompute("some") is None and as_recompute(["full"]) is None
    lay = Layout(8, 1, 2, 0, 1, 16, "selective", True, "tp-dp-pp")
    assert lay.recompute is SELECTIVE and lay.label() == "tp8 pp1 dp2 zero0 mb1 rc=selective sp tp-dp-pp"
    with pytest.raises(PlanError, match="recompute must be one of none, selective, full, deepseek or a Recompute, "
                                        "received str 'partial'"):
        Layout(8, 1, 2, 0, 1, 16, "partial", True, "tp-dp-pp")


def test_the_backward_repeats_the_forward_collectives_only_with_the_whole_layer():
    # Megatron-LM's tensor parallelism: 2 all-reduces a layer forward, 2 backward, the forward's 2
    # again before the backward with full recomputation (Shoeybi et al. 2019, section 3).
    assert [r.repeated(2) for r in RECOMPUTES] == [0, 0, 2, 0]
    dgx2 = topo.dgx2()
    counts = {rc: plan("megatron-8.3b", dgx2, tp=8, pp=1, dp=2, zero=0, recompute=rc, dtype="fp16",
                       simulate=0).component("tp_comm").detail.count for rc in ("none", "selective", "full")}
    assert counts == {"none": 4 * 72 + 2, "selective": 4 * 72 + 2, "full": 6 * 72 + 2}  # 72 layers, + the embedding


@pytest.mark.parametrize("name, mine", [("selective", Recompute("attention", ("core_attn",))),
                                        ("full", Recompute("whole", whole_layer=True))])
def test_a_strategy_of_your_own_times_as_the_one_it_equals(name, mine):
    """The dense step (analytical and simulated), its memory and FLOPs follow the object's modules,
    not its name; records and labels print the name it carries."""
    dgx2 = topo.dgx2()
    opts = dict(tp=8, pp=1, dp=2, zero=0, dtype="fp16", global_batch=4, simulate=1)
    ours, theirs = plan("megatron-8.3b", dgx2, recompute=mine, **opts), plan("megatron-8.3b", dgx2, recompute=name, **opts)
    assert ours.timing == theirs.timing == "simulated"
    assert (ours.step_time, ours.analytical_step_time, ours.memory, ours.hardware_flops) == \
        (theirs.step_time, theirs.analytical_step_time, theirs.memory, theirs.hardware_flops)
    assert ours.layout.recompute is mine and f"rc={mine.name} " in ours.layout.label()
    assert {r["recompute"] for r in ours.to_records()} == {mine.name}
    w = workload("megatron-8.3b")
    assert w.training_flops_per_token(mine) == w.training_flops_per_token(name) > w.training_flops_per_token()
    assert w.activation_bytes(2, 8, recompute=mine) == w.activation_bytes(2, 8, recompute=name)


def test_the_dense_workload_asks_the_object():
    # Korthikanti et al. 2022, section 4 (16-bit, f = 4h, multi-head, no flash): full keeps the layer
    # input, 2 s b h; selective drops the 5 a s^2 b of the attention core.
    w = workload("megatron-8.3b")
    s, b, h, a = w.seq, 1, w.hidden, w.heads
    assert w.activation_bytes(b, recompute=FULL) == 2 * s * b * h
    assert w.activation_bytes(b, recompute=NO_RECOMPUTE) - w.activation_bytes(b, recompute=SELECTIVE) == \
        5 * a * s * s * b
    # Selective runs the score and value products again: 2 s h FLOPs a token each, every layer
    # (Narayanan et al. 2021's attention count); full the layers' whole forward (True: full).
    assert w.training_flops_per_token(SELECTIVE) - w.training_flops_per_token(NO_RECOMPUTE) == \
        pytest.approx(w.layers * 4 * s * h, rel=1e-12)
    assert w.training_flops_per_token(True) == w.training_flops_per_token(FULL) > w.training_flops_per_token(SELECTIVE)
    for bad in ("deepseek", DEEPSEEK, "some", 3):
        with pytest.raises(WorkloadError, match="recompute must be 'none', 'selective' or 'full' \\(or a Recompute\\)"):
            w.activation_bytes(b, recompute=bad)


def test_the_dense_memory_asks_the_object_term_by_term():
    # Korthikanti et al. 2022, section 4: a layer keeps 34 s b h + 5 a s^2 b (16-bit, f = 4h,
    # multi-head, dropout, no flash, tp 1): attention 11 s b h + 5 a s^2 b, FFN 19 s b h, the two
    # norms' inputs 4 s b h. Selective drops the 5 a s^2 b; full keeps the layer's input, 2 s b h.
    # A strategy of your own dropping Megatron-Core's layernorm module drops the norms' outputs (the
    # attention's and the FFN's inputs, 2 s b h each), recomputed from the inputs the norms keep.
    w = workload("gpt3-175b")
    s, b, h, a = w.seq, 1, w.hidden, w.heads
    assert (w.ffn, w.kv_dim, w.dropout, w.gated) == (4 * h, h, True, False)
    sbh, s2 = s * b * h, 5 * a * s * s * b
    norms = Recompute("norms", ("layernorm",))
    both = Recompute("attention and norms", ("core_attn", "layernorm"))
    kept = {rc.name: w.activation_bytes(b, recompute=rc, flash=False)
            for rc in (NO_RECOMPUTE, SELECTIVE, FULL, norms, both, Recompute("mine", ("core_attn",)))}
    assert kept == {"none": 34 * sbh + s2, "selective": 34 * sbh, "full": 2 * sbh, "norms": 30 * sbh + s2,
                    "attention and norms": 30 * sbh, "mine": 34 * sbh}
    # with tp 8 and sequence parallelism the norms' outputs are split over the group like the rest
    assert w.activation_bytes(b, 8, sequence_parallel=True, recompute=SELECTIVE) - \
        w.activation_bytes(b, 8, sequence_parallel=True, recompute=both) == 4 * sbh / 8
    # the MoE modules name no tensor of a dense layer: nothing dropped, nothing run again
    moe_act = Recompute("experts", ("moe_act", "mla_up_proj"))
    assert w.activation_bytes(b, recompute=moe_act, flash=False) == kept["none"]
    assert w.training_flops_per_token(moe_act) == w.training_flops_per_token()


def test_a_plan_of_your_own_layernorm_strategy_saves_its_memory_and_runs_the_norms_again():
    dgx2 = topo.dgx2()
    norms = Recompute("norms", ("layernorm",))
    opts = dict(tp=8, pp=1, dp=2, zero=0, dtype="fp16", global_batch=4, simulate=0)
    ours, none = plan("megatron-8.3b", dgx2, recompute=norms, **opts), plan("megatron-8.3b", dgx2, recompute="none", **opts)
    w = workload("megatron-8.3b")
    # 4 s b h per layer and micro-batch, split over tp 8 with sequence parallelism, one micro-batch
    # in flight (pp 1), every layer on the one stage
    saved = 4 * w.seq * 1 * w.hidden / 8 * w.layers
    assert ours.layout.sequence_parallel
    assert none.memory.activations - ours.memory.activations == pytest.approx(saved)
    assert ours.component("compute").time > none.component("compute").time  # the norms again
