"""Low-precision compute: per-dtype peaks per generation, the GEMM efficiency fitted to measured
cuBLASLt GEMMs (tests/data/gemm_microbenchmarks.json, from the Azure/AI-benchmarking-guide
result pages), and the 16-bit work that stays 16-bit."""

import json
import statistics
from pathlib import Path

import pytest

from models.studies.compute import (ATTENTION_EFFICIENCY, FITTED_GEMM_EFFICIENCY, FITTED_LOW_PRECISION_EFFICIENCY,
                                    GEMM_EFFICIENCY, GENERATIONS, MEMORY_EFFICIENCY,
                                    UnsupportedDtypeError, compute_model, gpu_of)
from models.studies.workload import PRESETS, QUANTISED_BYTES, Op, UnknownDtypeError, dtype_bytes

DATA = json.loads((Path(__file__).parents[2] / "data" / "gemm_microbenchmarks.json").read_text())
MODEL = {"A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB", "H200": "NVIDIA H200", "GB200": "NVIDIA GB200"}
DTYPE = {"fp16": "fp16", "fp8": "fp8", "fp4": "nvfp4"}
FIT = {("A100-SXM4-80GB", "fp16"): "A100 fp16", ("H200", "fp8"): "H200 fp8", ("GB200", "fp8"): "GB200 fp8",
       ("GB200", "fp4"): "GB200 fp4"}


def _record(gpu, dtype):
    return next(r for r in DATA["records"] if (r["gpu"], r["dtype"]) == (gpu, dtype))


def _predicted_tflops(cm, m, n, k):
    return 2.0 * m * n * k / cm.gemm_time(m, n, k) / 1e12


@pytest.mark.parametrize("gpu, dtype", sorted(FIT))
def test_fitted_efficiency_reproduces_the_measured_large_gemms(gpu, dtype):
    """The fit's own statement: at the encoded efficiency the GEMM model's median over the large
    products (every dimension >= 4096) is the measured median, within the fit's rounding."""
    cm = compute_model(gpu_of(MODEL[gpu]), DTYPE[dtype])
    assert cm.gemm_efficiency == FITTED_GEMM_EFFICIENCY[FIT[gpu, dtype]]
    large = [row for row in _record(gpu, dtype)["gemm_tflops"] if min(row[:3]) >= 4096]
    ratio = statistics.median(row[3] / _predicted_tflops(cm, *row[:3]) for row in large)
    assert ratio == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("gpu, dtype", sorted(FIT))
def test_measured_low_precision_gemms_are_far_below_the_dense_peak(gpu, dtype):
    """The data's known answer (57-66 % of the fp8 peak, 81 % of A100's fp16) and the model agree on 8192^3 within
    10 % (the fit is a median over five or four shapes)."""
    cm = compute_model(gpu_of(MODEL[gpu]), DTYPE[dtype])
    measured = next(row[3] for row in _record(gpu, dtype)["gemm_tflops"] if row[:3] == [8192, 8192, 8192])
    predicted = _predicted_tflops(cm, 8192, 8192, 8192)
    assert predicted == pytest.approx(measured, rel=0.1)
    assert predicted * 1e12 / cm.peak < {"fp8": 0.70, "fp4": 0.80, "fp16": 0.85}[dtype]


@pytest.mark.parametrize("gpu, dtype", sorted(FIT))
def test_skinny_gemm_is_a_prediction_within_a_fifth(gpu, dtype):
    """m x 192 x 768 (not fitted): the tiles and waves predict it within 20 %."""
    cm = compute_model(gpu_of(MODEL[gpu]), DTYPE[dtype])
    measured = next(row[3] for row in _record(gpu, dtype)["gemm_tflops"] if row[1:3] == [192, 768])
    assert _predicted_tflops(cm, 802816, 192, 768) == pytest.approx(measured, rel=0.2)


def test_the_16_bit_gemms_of_a100_and_hopper():
    """A100 16-bit is the fit; Hopper's is derived: [S110]'s best-of-sweep H100 fraction (0.803) times
    the A100 fit over [S110]'s A100 (0.869), by hand 0.803 x 0.825 / 0.869 = 0.7623."""
    assert FITTED_LOW_PRECISION_EFFICIENCY == {k: v for k, v in FITTED_GEMM_EFFICIENCY.items() if k != "A100 fp16"}
    assert GEMM_EFFICIENCY["A100"]["bf16"] == GEMM_EFFICIENCY["A100"]["fp16"] == 0.825
    assert GEMM_EFFICIENCY["H100"]["bf16"] == GEMM_EFFICIENCY["H200"]["bf16"] == 0.762


@pytest.mark.parametrize("gpu, gens", [("A100-SXM4-80GB", ("A100",)), ("H200", ("H100", "H200"))])
def test_streaming_and_attention_fractions_are_the_measured_rates(gpu, gens):
    """The fits' own statement: the STREAM copy rate over the part's HBM peak, and the
    FlashAttention-2 rate over the 16-bit dense peak (A100 0.575, Hopper 0.333)."""
    record = _record(gpu, "fp16" if gpu.startswith("A100") else "fp8")
    part = gpu_of(MODEL[gpu])
    for gen in gens:
        cm = compute_model(gen, "bf16")
        assert cm.memory_efficiency == pytest.approx(record["hbm_stream_tbps"]["copy"] * 1e12 / part.memory_bandwidth,
                                                     abs=5e-4)
        assert cm.attention_efficiency == ATTENTION_EFFICIENCY[gen] == pytest.approx(
            record["flash_attention_2_tflops"]["flash_attention_2"] * 1e12 / part.peak_flops("bf16"), abs=5e-4)
    assert MEMORY_EFFICIENCY.get("B200") is None and compute_model("B200", "bf16").memory_efficiency == 0.8


def test_small_dense_models_plan_below_70_percent_mfu_on_h100():
    """Issue 40: llama3-8b on one DGX H100 planned at 73.9 % MFU with GEMMs at [S110]'s best of a
    sweep and flash attention at 0.6 [U]; with the fitted attention and the derived GEMM fraction it
    plans below 65 %, and its attention core is a fifth of a layer's time or more."""
    import topo
    from models.studies.planner import plan
    p = plan("llama3-8b", topo.build("dgxh100"), tp=1, pp=1, dp=8, zero=2, micro_batch=1, simulate=0)
    assert 0.55 < p.mfu < 0.65
    w = PRESETS["llama3-8b"]
    cm = compute_model("H100", "bf16", workload=w)
    times = cm.times(w.layer_ops(1, stack=cm.stack))
    attention = sum(t.forward + t.backward for t in times if t.op.kind == "attention")
    assert attention / sum(t.forward + t.backward for t in times) > 0.2


def test_each_generation_uses_its_fit():
    assert GEMM_EFFICIENCY["H100"]["fp8"] == GEMM_EFFICIENCY["H200"]["fp8"] == 0.708
    for gen in ("B200", "B300"):
        assert GEMM_EFFICIENCY[gen]["fp8"] == GEMM_EFFICIENCY[gen]["mxfp8"] == 0.616
        assert GEMM_EFFICIENCY[gen]["nvfp4"] == 0.800


@pytest.mark.parametrize("part, dtype, tflops", [
    # NVIDIA datasheets (topo.specs sources): dense = half of "with sparsity".
    ("H100-SXM5-80GB", "fp8", 1979), ("H800", "fp8", 1979), ("H200", "fp8", 1979),
    ("B200", "mxfp8", 4500), ("B200", "nvfp4", 9000), ("GB200", "nvfp4", 10000),
    ("B300", "bf16", 2250), ("B300", "fp8", 4500), ("B300", "nvfp4", 13500),
    ("GB300", "bf16", 2500), ("GB300", "mxfp8", 5000), ("GB300", "nvfp4", 15000),
])
def test_dense_peaks_per_dtype(part, dtype, tflops):
    import topo
    assert topo.GPUS[part].peaks[dtype] == tflops * 1e12


@pytest.mark.parametrize("gen, dtype", [("H100", "nvfp4"), ("H100", "mxfp8"), ("H200", "nvfp4"),
                                        ("A100", "fp8"), ("V100", "bf16")])
def test_a_dtype_the_gpu_lacks_is_refused_naming_its_dtypes(gen, dtype):
    with pytest.raises(UnsupportedDtypeError) as info:
        compute_model(gen, dtype)
    text = str(info.value)
    assert f"{gen} has no {dtype} arithmetic" in text
    assert ", ".join(GENERATIONS[gen].peak) in text and repr(dtype) in text


def test_a_part_names_itself_and_its_generation():
    with pytest.raises(UnsupportedDtypeError, match=r"H800 \(H100 generation\) has no nvfp4"):
        gpu_of("NVIDIA H800 80GB HBM3").peak_flops("nvfp4")


def test_unknown_dtype_names_the_known_ones():
    with pytest.raises(UnknownDtypeError, match="unknown dtype 'fp6': expected one of .*mxfp8, nvfp4"):
        dtype_bytes("fp6")


def test_block_scaled_bytes_count_their_scales():
    assert QUANTISED_BYTES["mxfp8"] == 1 + 1 / 32 and QUANTISED_BYTES["nvfp4"] == 0.5 + 1 / 16
    assert dtype_bytes("nvfp4") == 0.5


def test_attention_core_and_head_stay_bf16():
    """A flash-attention kernel times the same in fp8 as in bf16 (it runs in bf16); a linear
    layer's product is faster in fp8 but by less than the peak ratio."""
    w = PRESETS["llama3-8b"]
    bf16, fp8 = compute_model("H100", "bf16", workload=w), compute_model("H100", "fp8", workload=w)
    layer = {op.name: op for op in w.layer_ops(1, 1, 1, stack=fp8.stack, act=2)}
    assert fp8.time(layer["flash_attention"]).forward == bf16.time(layer["flash_attention"]).forward
    head = {op.name: op for op in w.head_ops(1, 1, 1, act=2)}
    assert not head["logits"].quantised
    assert fp8.time(head["logits"]).forward == pytest.approx(bf16.time(head["logits"]).forward, rel=1e-9)
    ffn_fp8, ffn_bf16 = fp8.time(layer["ffn_in"]), bf16.time(layer["ffn_in"])
    speedup = ffn_bf16.forward / ffn_fp8.forward
    assert 1.2 < speedup < 2 * 0.708 / 0.80


def test_quantisation_cost_is_the_cast_of_input_and_output_gradient():
    """fp8 product: its GEMMs plus one cast of the m x k input (read 2, write 1 + its transpose 1
    byte per element) forward and of the m x n gradient backward, at the HBM rate."""
    cm = compute_model("H100", "fp8")
    m, n, k = 8192, 4096, 4096
    op = Op("ffn", "matmul", 2.0 * m * n * k, 0.0, m, n, k)
    t = cm.time(op)
    hbm = cm.gpu.memory_bandwidth * cm.memory_efficiency
    assert t.forward == pytest.approx(cm.gemm_time(m, n, k) + m * k * 4 / hbm)
    assert t.backward == pytest.approx(cm.gemm_time(m, k, n) + cm.gemm_time(k, n, m) + m * n * 4 / hbm)
    assert compute_model("H100", "bf16").quantisation_time(1e9) == 0.0


def test_nvfp4_products_align_to_32_elements():
    """16-byte alignment is 32 four-bit elements: a 16-wide product pads to 32."""
    cm = compute_model("B200", "nvfp4", efficiency=1.0)
    assert cm.gemm_time(4096, 4096, 16) == cm.gemm_time(4096, 4096, 32)


@pytest.mark.parametrize("option", ["efficiency", "attention_efficiency", "memory_efficiency"])
def test_a_vanishing_fraction_is_refused_before_it_makes_a_nan_step(option):
    """A denormal fraction (hypothesis found 2.2e-311) timed every kernel at infinity and the
    step at NaN; fractions below 1e-6 are refused naming the bound."""
    import models
    import topo
    from topo.errors import DgxTopoError

    with pytest.raises(DgxTopoError, match=f"{option} must be a fraction in \\(0, 1\\] of at least 1e-06, "
                                           "received 2.225073858507e-311"):
        models.plan("bert-large", topo.dgx1v(), tp=1, pp=1, dp=8, simulate=0, **{option: 2.225073858507e-311})
    assert compute_model("A100", "bf16", **{option: 1e-6})
