"""Workloads: published parameter counts, FLOPs closed forms, activation memory, the parser."""

import pytest
from hypothesis import given, settings, strategies as st

from models.studies.workload import (PRESETS, UnknownDtypeError, UnknownWorkloadError, WorkloadError,
                             TpConstraint, TpLimit, dtype_bytes, parse_workload, resnet50, tp_limit, workload)

# Released checkpoints' counts (Hugging Face model cards / config-derived), exact.
EXACT = {
    "bert-large": 336_226_108,      # bert-large-uncased as BertForPreTraining (the paper quotes 340M)
    "bert-base": 110_106_428,       # bert-base-uncased as BertForPreTraining (the paper quotes 110M)
    "bert-large-squad": 334_094_338,  # BertForQuestionAnswering on bert-large (no pooler)
    "llama2-7b": 6_738_415_616,     # Llama-2-7b-hf
    "llama2-13b": 13_015_864_320,   # Llama-2-13b-hf
    "llama2-70b": 68_976_648_192,   # Llama-2-70b-hf
    "gpt2-1.5b": 1_557_611_200,     # gpt2-xl (the paper quotes 1542M)
    "llama3-8b": 8_030_261_248,     # Meta-Llama-3-8B
    "llama3-70b": 70_553_706_496,   # Meta-Llama-3-70B
    "llama3-405b": 405_853_388_800,  # Llama-3.1-405B
    "resnet50": 25_557_032,         # torchvision resnet50
}
# Papers' rounded figures: Megatron-LM table 2 "8.3B", GPT-3 table 2.1 "175.0B".
ROUNDED = {"megatron-8.3b": (8.3e9, 0.05e9), "gpt3-175b": (175.0e9, 0.5e9)}


@pytest.mark.parametrize("name,count", EXACT.items())
def test_parameter_counts_exact(name, count):
    assert PRESETS[name].parameters == count


@pytest.mark.parametrize("name,published", ROUNDED.items())
def test_parameter_counts_rounded(name, published):
    value, half_step = published
    assert abs(PRESETS[name].parameters - value) <= half_step


@pytest.mark.parametrize("name", [n for n, w in PRESETS.items() if w.kind == "transformer" and w.head == "lm"])
def test_flops_per_token_6n_plus_attention(name):
    # Kaplan et al. 2020: 6 N + attention, N = weights multiplying activations; attention as
    # Megatron counts it (QK^T and AV over the full s x s): 3 x 4 s h per layer.
    w = PRESETS[name]
    reference = 6 * w.matmul_parameters + 12 * w.layers * w.seq * w.hidden
    assert w.training_flops_per_token() == pytest.approx(reference, rel=0.01)


def test_megatron_closed_form_with_recomputation():
    # Narayanan et al. 2021 eq. (3): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration.
    w = PRESETS["gpt3-175b"]
    B, s, l, h, V = 1, w.seq, w.layers, w.hidden, w.vocab
    closed = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
    assert w.training_flops_per_token(recompute=True) * s == pytest.approx(closed, rel=1e-9)


def test_model_flops_closed_form_without_recomputation():
    # Narayanan et al. 2021 eq. (3) without the recomputed forward: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
    w = PRESETS["gpt3-175b"]
    s, l, h, V = w.seq, w.layers, w.hidden, w.vocab
    closed = 72 * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
    assert w.training_flops_per_token() * s == pytest.approx(closed, rel=1e-9)


def test_selective_recomputation_adds_the_attention_core_forward():
    # Korthikanti et al. 2022: selective recomputation runs QK^T and AV again, 4 s h per token per layer.
    w = PRESETS["gpt3-175b"]
    extra = w.training_flops_per_token("selective") - w.training_flops_per_token()
    assert extra == pytest.approx(4 * w.seq * w.hidden * w.layers)


def test_bert_heads_count_only_the_masked_tokens():
    # BERT pre-training: the masked-LM transform and logits on P = 80 of 512 tokens, NSP on the
    # pooled first token; SQuAD: two logits per token.
    w = PRESETS["bert-large"]
    s, h, V, P, l = w.seq, w.hidden, w.vocab, w.predictions, w.layers
    layers = 24 * h * h + 4 * s * h  # per token per layer: QKV, proj, FFN (f = 4h), attention
    head = (2 * P * (h * h + V * h) + 2 * h * h) / s
    assert w.forward_flops_per_token() == pytest.approx(l * layers + head)
    squad = PRESETS["bert-large-squad"]
    assert squad.forward_flops_per_token() == pytest.approx(squad.layers * (24 * h * h + 4 * squad.seq * h) + 4 * h)
    # fp32 logits and their gradient: 80 rows of V per sequence, not 512.
    assert w.logits_bytes(8) == 4 * 2 * 8 * P * V
    assert not w.causal and w.layer_ops(1, stack="flash")[1].executed == 1.0
    assert PRESETS["llama3-8b"].layer_ops(1, stack="flash")[1].executed == 0.5


def test_flash_attention_stores_no_score_matrix():
    w = PRESETS["gpt3-175b"]
    s, b, a = w.seq, 1, w.heads
    assert w.activation_bytes(b) - w.activation_bytes(b, flash=True) == pytest.approx(5 * a * s * s * b)


def test_recomputation_adds_one_forward_of_the_layers():
    w = PRESETS["gpt2-1.5b"]
    head = 2 * w.hidden * w.vocab
    layers_fwd = w.forward_flops_per_token() - head
    assert w.training_flops_per_token(True) - w.training_flops_per_token() == pytest.approx(layers_fwd)


def test_resnet50_flops():
    # He et al. 2016 quote 3.8e9 multiply-adds (stride on the 1x1); the stride-on-3x3 variant
    # measures 4.09 GMAC per 224x224 image.
    net = resnet50()
    assert net.forward_macs == pytest.approx(4.09e9, rel=0.01)
    assert len([layer for layer in net.conv_layers if layer.kernel == 3]) == 16


@pytest.mark.parametrize("name", ["gpt2-1.5b", "megatron-8.3b", "gpt3-175b"])
def test_activation_memory_korthikanti(name):
    w = PRESETS[name]
    s, b, h, a = w.seq, 2, w.hidden, w.heads
    assert w.activation_bytes(b) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    for t in (2, 4, 8):
        assert w.activation_bytes(b, t) == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))
        assert w.activation_bytes(b, t, sequence_parallel=True) == pytest.approx(
            s * b * h * (34 + 5 * a * s / h) / t)
        assert w.activation_bytes(b, t, sequence_parallel=True, recompute="full") == pytest.approx(2 * s * b * h / t)
    assert w.activation_bytes(b, 1, recompute="selective") == pytest.approx(34 * s * b * h)


def test_llama_is_gqa_swiglu():
    w = PRESETS["llama3-70b"]
    assert (w.kv_heads, w.gated, w.vocab, w.tied) == (8, True, 128256, False)
    assert tp_limit(w, 8) is None and tp_limit(w, 16) is None  # 8 K/V heads: divided, or replicated
    assert tp_limit(PRESETS["gpt2-1.5b"], 2) == TpConstraint(TpLimit.HEADS, 2, 25)  # 25 heads
    assert tp_limit(resnet50(), 2) == TpConstraint(TpLimit.CNN, 2)


def test_parse_presets_and_custom():
    assert parse_workload("LLaMA3_8B") is PRESETS["llama3-8b"]
    w = parse_workload("transformer:layers=4,hidden=256,heads=8,seq=512,vocab=1000,ffn=1024,kv_heads=2,gated=1")
    assert (w.layers, w.ffn, w.kv_heads, w.gated) == (4, 1024, 2, True)
    assert workload(w) is w


@pytest.mark.parametrize("text,error", [
    ("gpt5", UnknownWorkloadError),
    ("cnn:layers=1", WorkloadError),
    ("transformer:layers=2,hidden=64", WorkloadError),
    ("transformer:layers=2,hidden=64,heads=3,seq=8,vocab=10", WorkloadError),
    ("transformer:layers=-2,hidden=64,heads=4,seq=8,vocab=10", WorkloadError),
    ("transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,gated=2", WorkloadError),
    ("transformer:layers=2,layers=2,hidden=64,heads=4,seq=8,vocab=10", WorkloadError),
    ("transformer:layers=1e3,hidden=64,heads=4,seq=8,vocab=10", WorkloadError),
    ("transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,head=mlm", WorkloadError),  # no predictions
    ("transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,head=cls", WorkloadError),
    ("transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,causal=2", WorkloadError),
    ("transformer:layers=2,hidden=64,heads=4,seq=8,vocab=" + "9" * 400, WorkloadError),
    ("transformer:bogus=1", WorkloadError),
    (42, WorkloadError),
])
def test_parse_errors(text, error):
    with pytest.raises(error):
        parse_workload(text)


def test_limits_name_the_real_bound():
    with pytest.raises(WorkloadError, match=r"layers must be a whole number from 1 to 100000, "
                                            r"received '1000000000'"):
        parse_workload("transformer:layers=1000000000,hidden=64,heads=4,seq=8,vocab=10")
    w = parse_workload("transformer:layers=2,hidden=64,heads=4,seq=128,vocab=100,causal=0,head=mlm,predictions=20")
    assert (w.causal, w.head, w.predictions) == (False, "mlm", 20)


def test_dtypes():
    assert [dtype_bytes(d) for d in ("fp32", "tf32", "fp16", "bf16", "fp8")] == [4, 4, 2, 2, 1]
    with pytest.raises(UnknownDtypeError):
        dtype_bytes("int4")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_parser_fuzz(text):
    try:
        parse_workload(text)
    except WorkloadError:
        pass


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.sampled_from([64, 128, 256]), st.sampled_from([1, 2, 4]),
       st.integers(16, 512), st.integers(100, 5000))
def test_flops_grow_with_shapes(layers, hidden, heads, seq, vocab):
    w = parse_workload(f"transformer:layers={layers},hidden={hidden},heads={heads},seq={seq},vocab={vocab}")
    bigger = parse_workload(f"transformer:layers={layers + 1},hidden={hidden},heads={heads},seq={seq},vocab={vocab}")
    assert bigger.training_flops_per_token() > w.training_flops_per_token()
    assert bigger.parameters - w.parameters == w.layer_parameters
