"""Recomputation strategies (models.studies.planner.recomputation): DeepSeek-V3's partial
recomputation by hand (memory per GPU of one layout, the recomputed FLOPs and kernels), the
search covering it, and its refusals."""

from __future__ import annotations

import pytest

import topo
from models.engine.fabric import PreparedFabric
from models.studies.compute import compute_model, gpu_of
from models.studies.moe import moe_workload
from models.studies.planner import RECOMPUTE, PlanError, search
from models.studies.planner.parallel_step import layer_kind, moe_flops_per_token
from models.studies.planner.recomputation import (DEEPSEEK, FULL, NO_RECOMPUTE, RECOMPUTE_MODULES, RECOMPUTES,
                                                  SELECTIVE, recompute_named)

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
    assert {p.layout.recompute for p in s.plans} == {"none", "deepseek", "full"}
    dense = search("llama3-8b", h800, tp=8, pp=1, dp=1, zero=0, global_batch=8, simulate=0)
    assert {p.layout.recompute for p in dense.plans} == {"none", "full"}
    with pytest.raises(PlanError, match="expected a MoE workload, received llama3-8b"):
        search("llama3-8b", h800, tp=8, pp=1, dp=1, zero=0, global_batch=8, recompute="deepseek", simulate=0)


def test_the_cli_refuses_deepseek_for_a_dense_model_in_one_line(capsys):
    from models.present.cli import main
    status = main(["plan", "llama3-8b", "--system", "dgxh100", "--tp", "8", "--pp", "1", "--recompute", "deepseek"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1 and "expected a MoE workload" in err
