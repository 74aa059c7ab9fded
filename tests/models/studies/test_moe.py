"""Mixture-of-experts workloads: parameters against the published counts, FLOPs per token by
closed form, model state per GPU by hand, and every refusal."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from models.studies.moe import (MOE_PRESETS, GroupedQueryAttention, LatentAttention, MoeSpecError,
                                MoeTransformer, model_state, moe_workload)
from models.studies.workload import WorkloadError

PUBLISHED = json.loads((Path(__file__).parents[2] / "data" / "moe_published_parameters.json").read_text())
#: The published counts are rounded to two or three significant figures (37B, 22B, 1.04T): the
#: model must agree within 3 %.
TOLERANCE = 0.03


def test_every_preset_has_a_published_count():
    assert set(PUBLISHED["presets"]) == set(MOE_PRESETS)


@pytest.mark.parametrize("name", sorted(MOE_PRESETS))
def test_total_parameters_match_the_published_count(name):
    w, pub = MOE_PRESETS[name], PUBLISHED["presets"][name]
    assert w.parameters == pytest.approx(pub["total"], rel=TOLERANCE)


@pytest.mark.parametrize("name", sorted(MOE_PRESETS))
def test_active_parameters_match_the_published_count(name):
    w, pub = MOE_PRESETS[name], PUBLISHED["presets"][name]
    active = w.active_parameters - (0 if pub["active_counts_embedding"] else w.embedding_parameters)
    assert active == pytest.approx(pub["active"], rel=TOLERANCE)


def test_deepseek_v3_checkpoint_is_the_model_and_its_mtp_module():
    """685B on Hugging Face = 671B + the MTP module, which ships its own embedding and head copies."""
    w = MOE_PRESETS["deepseek-v3"]
    checkpoint = w.parameters + w.mtp_parameters + w.embedding_parameters + w.vocab * w.hidden
    assert checkpoint == pytest.approx(PUBLISHED["deepseek_v3_checkpoint"]["total"], rel=0.005)


def test_mixtral_8x7b_parameters_by_hand():
    """Every layer: Q and O 4096^2, K and V 4096 x 1024, 2 RMSNorms, router 4096 x 8, 8 SwiGLU
    experts of 3 x 4096 x 14336; embedding and untied head 32000 x 4096, final norm."""
    layer = 2 * 4096 ** 2 + 2 * 4096 * 1024 + 2 * 4096 + 4096 * 8 + 8 * 3 * 4096 * 14336
    total = 32 * layer + 2 * 32000 * 4096 + 4096
    assert MOE_PRESETS["mixtral-8x7b"].parameters == total == 46_702_792_704
    active = total - 32 * 6 * 3 * 4096 * 14336
    assert MOE_PRESETS["mixtral-8x7b"].active_parameters == active


def test_deepseek_v3_mla_by_hand():
    """MLA per layer: q_a 7168 x 1536, q_b 1536 x 128 x 192, kv_a 7168 x 576, kv_b 512 x 128 x
    256, o 128 x 128 x 7168, latent norms 1536 + 512."""
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168 + 1536 + 512
    w = MOE_PRESETS["deepseek-v3"]
    assert w.attention.parameters(w.hidden) == mla == 187_107_328


def _attention_training_flops(layers, heads, qk, v, positions):
    """Megatron: scores 2 s h_qk and values 2 s h_v per token forward, times 3 for training."""
    return 3 * sum(2 * heads * (qk + v) * s for s in positions) if layers else 0


def test_mixtral_8x7b_flops_per_token_by_hand():
    n = 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 4096 * 8 + 2 * 3 * 4096 * 14336) + 32000 * 4096
    attention = _attention_training_flops(32, 32, 128, 128, [4096] * 32)
    w = MOE_PRESETS["mixtral-8x7b"]
    assert w.active_matmul_parameters == n
    assert w.training_flops_per_token() == pytest.approx(6 * n + attention, rel=1e-12)


def test_deepseek_v3_flops_per_token_by_hand():
    """6 x the active products + MLA's attention (128 heads, q/k 192, v 128 wide) on 61 layers;
    the MTP module adds its projection, one MoE layer, the head and one more attention."""
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    moe = mla + 7168 * 256 + (8 + 1) * 3 * 7168 * 2048
    n = 3 * (mla + 3 * 7168 * 18432) + 58 * moe + 129280 * 7168
    attention = _attention_training_flops(61, 128, 192, 128, [4096] * 61)
    w = MOE_PRESETS["deepseek-v3"]
    assert w.training_flops_per_token(mtp=False) == pytest.approx(6 * n + attention, rel=1e-12)
    mtp = 6 * (2 * 7168 * 7168 + moe + 129280 * 7168) + _attention_training_flops(1, 128, 192, 128, [4096])
    assert w.training_flops_per_token() == pytest.approx(6 * n + attention + mtp, rel=1e-12)
    # About 6 x 37B active (the head counted, the embedding lookup not) plus 22 % for attention at 4K.
    assert 6 * n == pytest.approx(6 * 36.6e9, rel=0.01)


def test_gpt_oss_sliding_layers_attend_to_their_window():
    """18 layers over 4096 positions, 18 over the 128-token window."""
    w = MOE_PRESETS["gpt-oss-120b"]
    attention = _attention_training_flops(36, 64, 64, 64, [4096] * 18 + [128] * 18)
    assert w.training_flops_per_token() == pytest.approx(6 * w.active_matmul_parameters + attention, rel=1e-12)


@pytest.mark.parametrize("name", sorted(MOE_PRESETS))
def test_flops_per_token_is_six_times_active_plus_attention(name):
    w = MOE_PRESETS[name]
    a = w.attention
    window = min(w.seq, w.sliding_window)
    positions = [w.seq] * (w.layers - w.sliding_layers) + [window] * w.sliding_layers
    attention = _attention_training_flops(w.layers, a.heads, a.qk_dim, a.v_dim, positions)
    assert w.training_flops_per_token(mtp=False) == pytest.approx(6 * w.active_matmul_parameters + attention,
                                                                  rel=1e-12)
    # The products' weights are the active parameters less the embedding, norms, biases, sinks.
    assert 0.97 < w.active_matmul_parameters / (w.active_parameters - w.embedding_parameters) <= 1


def test_mixtral_state_per_gpu_by_hand():
    """Mixtral-8x7B on 8 GPUs, ep 8 (one expert per GPU per layer), tp 1, pp 1, dp 8, ZeRO-1.

    Dense part per GPU: attention 32 x 41,943,040, norms 65 x 4096, routers 32 x 32,768,
    embedding and head 2 x 131,072,000 = 1,605,636,096. Experts per GPU: 32 x 176,160,768 =
    5,637,144,576. 16-bit weights and fp32 gradients of both (bf16: Megatron-LM's 6 bytes a
    parameter held); the optimizer's 12 bytes sharded over the 8 data-parallel GPUs for the dense
    part but over edp = 8 / 8 = 1 for the experts."""
    dense = 32 * 41_943_040 + 65 * 4096 + 32 * 32_768 + 2 * 131_072_000
    experts = 32 * 176_160_768
    assert dense == 1_605_636_096
    s = model_state(MOE_PRESETS["mixtral-8x7b"], ep=8, dp=8, zero=1)
    assert (s.dense_parameters, s.expert_parameters) == (dense, experts)
    assert s.parameters == 2 * (dense + experts) and s.gradients == 4 * (dense + experts)
    assert s.optimizer == 12 * dense / 8 + 12 * experts
    assert round(s.total / 1e9, 1) == 113.5
    fp16 = model_state(MOE_PRESETS["mixtral-8x7b"], ep=8, dp=8, zero=1, dtype="fp16")  # 2 + 2 + 16
    assert (fp16.parameters, fp16.gradients, fp16.optimizer) == \
        (2 * (dense + experts), 2 * (dense + experts), 16 * dense / 8 + 16 * experts)


def test_deepseek_v3_state_by_hand_on_its_published_layout():
    """DeepSeek-V3's layout (pp 16, ep 64, no tp, ZeRO-1 over dp 128 of 2,048 GPUs): 61 layers
    as 13 stages of 4 and 3 of 3. Stage 1 (4 MoE layers) holds per GPU 4 x 4 experts; the last
    stage 3 MoE layers, the MTP module (one more) and the head: the heaviest."""
    w = MOE_PRESETS["deepseek-v3"]
    expert = 3 * 7168 * 2048
    mla = 187_107_328 + 7168  # with the attention norm
    moe_dense = mla + 7168 + 7168 * 256 + expert  # + FFN norm, router, shared expert
    mtp_dense = 2 * 7168 + 2 * 7168 * 7168 + moe_dense + 7168
    dense = 3 * moe_dense + mtp_dense + 7168 + 129280 * 7168
    experts = 4 * 256 * expert / 64
    s = model_state(w, ep=64, pp=16, dp=128, zero=1)
    assert s.stage == 15
    assert (s.dense_parameters, s.expert_parameters) == (dense, experts)
    edp = 128 // 64
    assert s.total == pytest.approx(6 * (dense + experts) + 12 * dense / 128 + 12 * experts / edp)


def test_expert_tensor_parallel_and_context_parallel_fold():
    """etp splits each expert; cp joins the dense group the experts fold into."""
    w = MOE_PRESETS["qwen3-30b-a3b"]
    a = model_state(w, ep=8, tp=2, etp=1, dp=4, cp=2, zero=1)
    b = model_state(w, ep=8, tp=2, etp=2, dp=4, cp=2, zero=1)
    assert a.expert_parameters == 2 * b.expert_parameters
    assert a.dense_parameters == b.dense_parameters


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(MOE_PRESETS)), st.integers(0, 3), st.sampled_from([1, 2, 4]))
def test_more_expert_parallelism_never_needs_more_memory(name, zero, pp):
    w = MOE_PRESETS[name]
    eps = [e for e in (1, 2, 4, 8) if w.experts % e == 0]
    totals = [model_state(w, ep=e, pp=pp, dp=8, zero=zero).total for e in eps]
    assert totals == sorted(totals, reverse=True)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 4))
def test_active_never_exceeds_total_and_equals_it_when_every_expert_is_used(experts, top_k, shared):
    top_k = min(top_k, experts)
    w = MoeTransformer("x", 4, 64, 100, 32, GroupedQueryAttention(4, 2, 16), experts=experts, top_k=top_k,
                       expert_ffn=32, shared_experts=shared)
    assert w.active_parameters <= w.parameters
    assert (w.active_parameters == w.parameters) == (top_k == experts)


def _spec(**changes):
    return replace(MOE_PRESETS["mixtral-8x7b"], **changes)


@pytest.mark.parametrize("changes, message", [
    ({"top_k": 9}, r"top_k \(9\) must be at most the routed experts \(8\)"),
    ({"experts": 0}, "experts must be a whole number >= 1, received 0"),
    ({"hidden": -4096}, "hidden must be a whole number >= 1, received -4096"),
    ({"expert_ffn": 0}, "expert_ffn must be a whole number >= 1, received 0"),
    ({"layers": 2.5}, "layers must be a whole number >= 1, received 2.5"),
    ({"top_k": True}, "top_k must be a whole number >= 1, received True"),
    ({"dense_layers": 33, "dense_ffn": 10}, r"dense_layers \(33\) must be at most layers \(32\)"),
    ({"dense_layers": 2}, r"dense_layers \(2\) need their dense_ffn width >= 1, received 0"),
    ({"sliding_window": 128}, r"sliding_window \(128\) and sliding_layers \(0\) must both be 0"),
    ({"mtp_layers": -1}, "mtp_layers must be a whole number >= 0, received -1"),
    ({"attention": "gqa"}, "attention must be a GroupedQueryAttention or LatentAttention, received str"),
])
def test_bad_specs_are_refused_naming_expected_and_received(changes, message):
    with pytest.raises(MoeSpecError, match=message):
        _spec(**changes)


@pytest.mark.parametrize("build, message", [
    (lambda: GroupedQueryAttention(32, 6, 128), r"heads \(32\) must be a multiple of kv_heads \(6\)"),
    (lambda: GroupedQueryAttention(0, 1, 128), "heads must be a whole number >= 1, received 0"),
    (lambda: LatentAttention(128, 1536, 0, 128, 64, 128), "kv_lora_rank must be a whole number >= 1, received 0"),
])
def test_bad_attention_is_refused(build, message):
    with pytest.raises(MoeSpecError, match=message):
        build()


@pytest.mark.parametrize("kwargs, message", [
    ({"ep": 3}, r"ep \(3\) must divide the routed experts \(8\) of mixtral-8x7b"),
    ({"ep": 8, "dp": 4}, r"etp x ep \(1 x 8 = 8\) must divide tp x cp x dp \(1 x 1 x 4 = 4\)"),
    ({"ep": 0}, "ep must be a whole number >= 1, received 0"),
    ({"pp": 33}, r"pp \(33\) must be at most the layers \(32\)"),
    ({"zero": 4}, "zero must be 0, 1, 2 or 3, received 4"),
])
def test_layouts_that_do_not_fold_are_refused(kwargs, message):
    with pytest.raises(MoeSpecError, match=message):
        model_state(MOE_PRESETS["mixtral-8x7b"], **kwargs)


def test_presets_by_name_and_unknown_names():
    assert moe_workload(" DeepSeek_V3 ") is MOE_PRESETS["deepseek-v3"]
    with pytest.raises(MoeSpecError, match="unknown MoE workload 'mixtral': expected a MoE preset name"):
        moe_workload("mixtral")
    assert issubclass(MoeSpecError, WorkloadError)


SMALL = "moe:layers=2,hidden=64,vocab=100,seq=32,heads=4,experts=8,top_k=2,expert_ffn=32"


def test_a_moe_spec_text_reads_as_its_fields():
    w = moe_workload(SMALL + ",kv_heads=2,shared_experts=1,dense_layers=1,dense_ffn=128,batch=16")
    assert (w.layers, w.experts, w.top_k, w.expert_ffn, w.shared_experts, w.shared_ffn) == (2, 8, 2, 32, 1, 32)
    assert w.attention == GroupedQueryAttention(4, 2, 16)
    assert (w.dense_layers, w.dense_ffn, w.global_batch) == (1, 128, 16)
    mla = moe_workload(SMALL + ",q_lora_rank=16,kv_lora_rank=8,qk_nope_head_dim=16,qk_rope_head_dim=8,v_head_dim=16")
    assert mla.attention == LatentAttention(4, 16, 8, 16, 8, 16)


@pytest.mark.parametrize("text, message", [
    (SMALL.replace("top_k=2", "top_k=9"), r"top_k \(9\) must be at most the routed experts \(8\)"),
    (SMALL.replace("hidden=64", "hidden=-64"), "MoE workload hidden must be a whole number from 0 to 100000000, "
                                               "received '-64'"),
    (SMALL.replace("layers=2", "layers=0"), "layers must be a whole number >= 1, received 0"),
    (SMALL + ",ffn=3", "malformed MoE workload item 'ffn=3': expected key=value with key in layers"),
    (SMALL + ",top_k=3", "MoE workload key 'top_k' given twice"),
    ("moe:layers=2", "MoE workload spec lacks hidden, vocab, seq, heads, experts, top_k, expert_ffn"),
    (SMALL + ",q_lora_rank=16", "latent attention needs all of q_lora_rank, kv_lora_rank"),
    (SMALL + ",kv_heads=2,q_lora_rank=16,kv_lora_rank=8,qk_nope_head_dim=16,qk_rope_head_dim=8,v_head_dim=16",
     "expected either latent attention"),
    ("dense:layers=2", "unknown MoE workload 'dense:layers=2'"),
])
def test_bad_moe_spec_texts_are_refused(text, message):
    with pytest.raises(MoeSpecError, match=message):
        moe_workload(text)


def test_the_planner_refuses_a_moe_workload_naming_it():
    from models.studies.workload import MoeNotPlannedError, workload

    with pytest.raises(MoeNotPlannedError, match="deepseek-v3 is a mixture-of-experts workload: expected a dense "
                                                 "transformer or a CNN"):
        workload(MOE_PRESETS["deepseek-v3"])


@pytest.mark.parametrize("argv, message", [
    (["gpus", "kimi-k2"], "kimi-k2 is a mixture-of-experts workload"),
    (["simulate", SMALL, "--system", "dgxh100", "--tp", "1", "--pp", "2", "--ep", "2", "--ep-overlap", "dualpipe",
      "--global-batch", "8"], "DualPipe needs an even pp, an even number of micro-batches of at least 2 x pp and no "
                              "interleaving (received pp 2, 2 micro-batches)"),
    (["plan", SMALL.replace("top_k=2", "top_k=9"), "--system", "dgxh100"],
     "top_k (9) must be at most the routed experts (8)"),
    (["plan", SMALL.replace("experts=8", "experts=0"), "--system", "dgxh100"],
     "experts must be a whole number >= 1, received 0"),
])
def test_cli_refuses_moe_in_one_line(capsys, argv, message):
    from tests.test_cli_commands import one_line_error

    assert message in one_line_error(capsys, *argv)


# ------------------------------------------------------------------------ kernels of a layer
def _forward_flops_from_ops(w, b=1):
    """Products of every layer's kernels (tp = ep = 1) plus the head's logits, per token."""
    total = 0.0
    for i in range(w.layers):
        ops = w.layer_ops(b, dense=i < w.dense_layers, sliding=i % 2 == 0 and i // 2 < w.sliding_layers)
        total += sum(op.flops for op in ops if op.kind in ("matmul", "attention"))
    return total / (b * w.seq) + 2.0 * w.vocab * w.hidden


@pytest.mark.parametrize("name", sorted(MOE_PRESETS))
def test_kernels_add_up_to_the_flop_count(name):
    """Two independent counts: the kernels' products (shapes per GPU) and 2 x the active weights
    + the attention core (parameters). Equal up to the routed tokens' rounding to whole tokens
    per expert (Kimi K2: 4096 x 8 / 384 = 85.3, taken as 86)."""
    w = MOE_PRESETS[name]
    assert _forward_flops_from_ops(w) == pytest.approx(w.forward_flops_per_token(mtp=False), rel=0.01)
    if (w.seq * w.top_k) % w.experts == 0:
        assert _forward_flops_from_ops(w) == pytest.approx(w.forward_flops_per_token(mtp=False), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b", "gpt-oss-120b"]), st.integers(0, 5),
       st.integers(1, 4))
def test_expert_parallelism_moves_experts_not_work(name, log_ep, b):
    """Balanced, a GPU computes the same expert FLOPs whatever ep: experts / ep experts, each
    over ep times the tokens."""
    w = MOE_PRESETS[name]
    ep = 2 ** log_ep
    if w.experts % ep:
        return
    flops = {op.name: op.flops for op in w.layer_ops(b, ep=ep)}
    base = {op.name: op.flops for op in w.layer_ops(b)}
    for name in ("experts_in", "experts_out"):
        assert flops[name] == pytest.approx(base[name])
    grouped = next(op for op in w.layer_ops(b, ep=ep) if op.name == "experts_in")
    assert (grouped.batch, grouped.m) == (w.experts // ep, -(-ep * b * w.seq * w.top_k // w.experts))


def test_grouped_gemms_pay_tile_quantisation_per_expert():
    """DeepSeek-V3's 256 experts over ep 8 on H100 in fp8: each GPU holds 32 experts, each fed
    8 x s x 8 / 256 = s / 4 routed tokens (512 rows at s = 2,048). At s = 256 an expert's
    product has 64 rows: half a 128-row tile (or the slower 64-row tiles), so the 32 grouped
    products take longer than one product of all 2,048 rows; the fp8 casts come on top."""
    from models.studies.compute import compute_model

    cm = compute_model("H100", "fp8")
    w = replace(MOE_PRESETS["deepseek-v3"], seq=2048)
    grouped = next(op for op in w.layer_ops(1, ep=8) if op.name == "experts_in")
    assert (grouped.batch, grouped.m, grouped.n, grouped.k) == (32, 512, 4096, 7168)
    w = replace(MOE_PRESETS["deepseek-v3"], seq=256)
    small = next(op for op in w.layer_ops(1, ep=8) if op.name == "experts_in")
    assert small.m == 64
    one = cm.gemm_time(small.batch * small.m, small.n, small.k)
    assert cm.gemm_time(small.m, small.n, small.k, small.batch) > one
    assert cm.time(small).forward >= cm.gemm_time(small.m, small.n, small.k, small.batch)


def test_the_router_and_attention_core_stay_16_bit_and_imbalance_costs():
    w = MOE_PRESETS["qwen3-235b-a22b"]
    ops = {op.name: op for op in w.layer_ops(1, ep=8, balance=1.5)}
    assert not ops["router"].quantised and not ops["flash_attention"].quantised and ops["experts_in"].quantised
    balanced = {op.name: op for op in w.layer_ops(1, ep=8)}
    assert ops["experts_in"].m == round(1.5 * balanced["experts_in"].m)


@pytest.mark.parametrize("kwargs, message", [
    ({"ep": 3}, r"ep \(3\) must divide the routed experts \(128\)"),
    ({"tp": 3}, r"tp \(3\) must divide the attention heads \(64\)"),
    ({"etp": 7}, r"etp \(7\) must divide the FFN width \(1536\)"),
    ({"balance": 0.5}, "balance must be a number >= 1, received 0.5"),
    ({"tp": 0}, "tp must be a whole number >= 1, received 0"),
])
def test_layer_ops_refuse_splits_that_do_not_divide(kwargs, message):
    with pytest.raises(MoeSpecError, match=message):
        MOE_PRESETS["qwen3-235b-a22b"].layer_ops(1, **kwargs)
