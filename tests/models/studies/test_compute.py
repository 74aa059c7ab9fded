"""The compute model: datasheet facts per part, tile/wave quantisation, kernels, errors."""

import math

import pytest
from hypothesis import given, settings, strategies as st

import topo
from models.studies.compute import (ATTENTION_EFFICIENCY, GEMM_EFFICIENCY, GENERATIONS, KERNEL_FLOOR,
                                    UnknownGenerationError, UnsupportedDtypeError, compute_model,
                                    default_software, generation, generation_of, gpu_memory, gpu_of)
from models.studies.workload import PRESETS, SOFTWARE, Op
from models.present.plan_text import compute_note
from topo.errors import DgxTopoError
from topo.units import GB, GiB

# Tensor (or FP16/FP32) FLOP per clock per SM, from the architecture whitepapers: P100 64 FP32
# cores x 2 (FMA) x 2 (half2) for FP16; V100 8 tensor cores x 64 FMA x 2; A100 4 x 256 x 2;
# H100 4 x 512 x 2.
PER_SM_CLOCK = {"P100": ("fp16", 256), "V100-SXM2": ("fp16", 1024), "V100-SXM3-32GB-H": ("fp16", 1024),
                "A100-SXM4-40GB": ("bf16", 2048), "H100-SXM5-80GB": ("bf16", 4096)}


def test_datasheet_figures():
    assert GENERATIONS["V100"].peak_flops("fp16") == 125e12
    assert GENERATIONS["A100"].peak_flops("bf16") == 312e12
    assert GENERATIONS["A100"].peak_flops("tf32") == 156e12
    assert GENERATIONS["H100"].peak_flops("fp8") == 1979e12
    assert GENERATIONS["H200"].memory_bandwidth == 4800 * GB
    assert GENERATIONS["B200"].peak_flops("bf16") == 2250e12


@pytest.mark.parametrize("part", sorted(PER_SM_CLOCK))
def test_peak_is_sms_times_rate_times_clock(part):
    spec = topo.GPUS[part]
    dtype, per_clock = PER_SM_CLOCK[part]
    assert spec.peaks[dtype] == pytest.approx(spec.sm_count * per_clock * spec.clock, rel=0.005)


@pytest.mark.parametrize("model,bandwidth,memory", [
    ("NVIDIA A100-SXM4-40GB", 1555 * GB, 40 * GiB), ("NVIDIA A100-SXM4-80GB", 2039 * GB, 80 * GiB),
    ("Tesla V100-SXM2-16GB", 900 * GB, 16 * GiB), ("Tesla V100-SXM2-32GB", 900 * GB, 32 * GiB),
    ("Tesla V100-SXM3-32GB-H", 900 * GB, 32 * GiB), ("NVIDIA H200", 4800 * GB, 141 * GB),
])
def test_each_part_has_its_own_hbm(model, bandwidth, memory):
    gpu = gpu_of(model)
    assert (gpu.memory_bandwidth, gpu.memory) == (bandwidth, memory)


@pytest.mark.parametrize("name,model", [("dgxa100", "NVIDIA A100-SXM4-40GB"),
                                        ("dgxa100-80g", "NVIDIA A100-SXM4-80GB"),
                                        ("dgx1v-32g", "Tesla V100-SXM2-32GB"), ("dgx2h", "Tesla V100-SXM3-32GB-H")])
def test_variants_carry_their_parts(name, model):
    G = topo.build(name)
    assert {G.nodes[g]["model"] for g in topo.gpus(G)} == {model}
    # DGX-2H: 2.1 PFLOPS of tensor math for 16 GPUs (datasheet).
    if name == "dgx2h":
        assert 16 * gpu_of(model).peak_flops("fp16") == pytest.approx(2.1e15)


def test_generations_get_faster_and_nvlink_from_specs():
    order = ["P100", "V100", "A100", "H100", "H200", "B200"]
    assert [GENERATIONS[g].memory_bandwidth for g in order] == sorted(GENERATIONS[g].memory_bandwidth for g in order)
    # NVLink per GPU, per direction: 4 x 20, 6 x 25, 12 x 25, 18 x 25, 18 x 50 GB/s.
    assert [GENERATIONS[g].nvlink_bandwidth / GB for g in order] == [80, 150, 300, 450, 450, 900]


@pytest.mark.parametrize("model, name", [("Tesla V100-SXM2-16GB", "V100"), ("Tesla P100-SXM2-16GB", "P100"),
                                         ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA H100 80GB HBM3", "H100"),
                                         ("NVIDIA B200", "B200"), ("NVIDIA H200", "H200")])
def test_model_strings(model, name):
    assert generation_of(model).name == name and gpu_of(model).generation == name


def test_memory_of_model():
    assert gpu_memory("Tesla V100-SXM3-32GB") == 32 * GiB
    assert gpu_memory("NVIDIA A100-SXM4-40GB") == 40 * GiB
    assert gpu_memory("Tesla V100-PCIE-32GB") == 32 * GiB  # not catalogued: the name's size
    assert gpu_memory("NVIDIA H200") == GENERATIONS["H200"].memory


def test_errors():
    with pytest.raises(UnknownGenerationError):
        generation_of("Radeon MI300X")
    with pytest.raises(UnknownGenerationError):
        generation("K80")
    with pytest.raises(UnsupportedDtypeError):
        GENERATIONS["V100"].peak_flops("bf16")
    with pytest.raises(UnsupportedDtypeError):
        compute_model("V100", "tf32")
    with pytest.raises(UnsupportedDtypeError):
        GENERATIONS["A100"].peak_flops("fp8")
    for bad in (0, 1.5, -1, True, math.nan):
        with pytest.raises(DgxTopoError, match="fraction"):
            compute_model("A100", "bf16", efficiency=bad)
    for bad in (0, 1e300, math.inf):
        with pytest.raises(DgxTopoError, match=r"scale must be a number in \(0, 10000\]"):
            compute_model("A100", "bf16", scale=bad)
    with pytest.raises(DgxTopoError, match="Ampere"):  # FlashAttention-2 needs Ampere
        compute_model("V100", "fp16", stack="flash")


def test_a_full_wave_runs_at_the_achievable_rate():
    # A100: 108 SMs; 12 x 9 tiles of 256 x 128 fill exactly one wave.
    cm = compute_model("A100", "bf16")
    m, n, k = 256 * 12, 128 * 9, 16384
    ideal = 2 * m * n * k / (312e12 * GEMM_EFFICIENCY["A100"]["bf16"])
    full = cm.gemm_time(m, n, k)
    assert ideal <= full <= ideal * 1.02  # the epilogue's write of each tile on top
    # One more tile row: a second, nearly empty wave (or smaller tiles in more waves).
    assert 1.4 * full <= cm.gemm_time(m + 1, n, k) <= 2.0 * full


def test_tile_quantisation_n_129_pays_for_256():
    cm = compute_model("H100", "bf16")
    assert cm.gemm_time(65536, 129, 8192) / cm.gemm_time(65536, 128, 8192) == pytest.approx(2.0, rel=0.03)


def test_alignment_before_and_after_ampere():
    # V100: a dimension not a multiple of 8 fp16 elements leaves the tensor cores (CUDA-core
    # FP16 runs at twice FP32: 31.4 of 125 TFLOP/s); A100 pads it and stays on them.
    v100 = compute_model("V100", "fp16")
    assert v100.gemm_time(8192, 8192, 8190) / v100.gemm_time(8192, 8192, 8192) == pytest.approx(125 / 31.4, rel=0.02)
    a100 = compute_model("A100", "fp16")
    assert a100.gemm_time(8192, 8192, 8190) == pytest.approx(a100.gemm_time(8192, 8192, 8192))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 20000), st.sampled_from(["V100", "A100", "H100"]))
def test_products_never_beat_the_achievable_rate_and_grow_with_shape(m, n, k, gen):
    dtype = "fp16"
    cm = compute_model(gen, dtype)
    t = cm.gemm_time(m, n, k)
    assert t >= 2 * m * n * k / (cm.peak * cm.gemm_efficiency) and t >= KERNEL_FLOOR
    # A larger product of the same alignment never runs faster. (One element more may: on Volta
    # an aligned product returns to the tensor cores, gemm_time(8, 8, 96) < gemm_time(7, 8, 96).)
    step = 8  # 16 bytes of fp16: the alignment class is kept
    assert cm.gemm_time(m + step, n, k) >= t and cm.gemm_time(m, n + step, k) >= t
    assert cm.gemm_time(m, n, k + step) >= t


def test_a_deeper_reduction_is_never_faster_where_split_k_starts():
    """Hypothesis found it: split-K was allowed only once a slice was a whole tile deep, so on a
    V100 a 1 x 1 x 128 product (split) ran in 4.5 us and a 1 x 1 x 120 one (not split) in 7.7 us.
    A slice shorter than its tile now costs the tile's depth, and every split is priced."""
    cm = compute_model("V100", "fp16")
    times = [cm.gemm_time(1, 1, k) for k in range(8, 1025, 8)]
    assert times == sorted(times)
    assert cm.gemm_time(1, 1, 120) <= cm.gemm_time(1, 1, 128)


def test_memory_kernels_and_the_launch_floor():
    cm = compute_model("A100", "bf16")
    big = cm.time(Op("x", "memory", 0.0, 1e9, kernels=2, backward=1.5))
    # STREAM copy on an A100-SXM4-80GB: 1.61 TB/s of 2.039 (tests/data/gemm_microbenchmarks.json).
    assert big.forward == pytest.approx(1e9 / 1.61e12, rel=1e-3) and big.backward == pytest.approx(1.5 * big.forward)
    tiny = cm.time(Op("x", "memory", 0.0, 10.0, kernels=3))
    assert tiny.forward == pytest.approx(3 * KERNEL_FLOOR) and tiny.bound == "launch"


def test_flash_attention_executes_half_when_causal_and_recomputes_backward():
    cm = compute_model("A100", "bf16", stack="flash")
    causal = cm.time(Op("a", "attention", 1e12, 1e6, executed=0.5, backward=2.5))
    full = cm.time(Op("a", "attention", 1e12, 1e6, executed=1.0, backward=2.5))
    assert causal.forward == pytest.approx(full.forward / 2)
    assert full.forward == pytest.approx(1e12 / (312e12 * ATTENTION_EFFICIENCY["A100"]))
    assert full.backward == pytest.approx(2.5 * full.forward)


def test_software_stacks_move_fewer_bytes_as_they_fuse():
    w = PRESETS["gpt3-175b"]
    moved = {name: sum(op.nbytes for op in w.layer_ops(1, 8, 2, stack=name) if op.kind == "memory")
             for name in SOFTWARE}
    kernels = {name: sum(op.kernels for op in w.layer_ops(1, 8, 2, stack=name) if op.kind == "memory")
               for name in SOFTWARE}
    assert moved["eager"] > moved["fused"] > moved["flash"]
    assert kernels["eager"] > kernels["fused"] > kernels["flash"]
    assert default_software(PRESETS["llama3-8b"], GENERATIONS["A100"]).name == "flash"
    assert default_software(PRESETS["llama3-8b"], GENERATIONS["V100"]).name == "fused"
    assert default_software(PRESETS["gpt3-175b"], GENERATIONS["H100"]).name == "fused"


def test_calibrated_scale_multiplies_every_kernel():
    w = PRESETS["gpt2-1.5b"]
    base, slow = compute_model("A100", "bf16"), compute_model("A100", "bf16", scale=1.5)
    for a, b in zip(base.times(w.layer_ops(2)), slow.times(w.layer_ops(2))):
        assert b.forward == pytest.approx(1.5 * a.forward) and b.backward == pytest.approx(1.5 * a.backward)
    assert "calibrated time x1.500" in compute_note(slow)


def test_a_low_precision_model_built_by_hand_needs_its_16_bit_efficiency():
    """Review finding: a fp8 model made from a bf16 one (wide_efficiency 0) divided by zero in its
    first 16-bit product; it is refused when made, naming the field."""
    import dataclasses

    from topo import DgxTopoError
    from models.studies.compute import compute_model

    bf16 = compute_model("H100", "bf16")
    with pytest.raises(DgxTopoError, match="wide_efficiency"):
        dataclasses.replace(bf16, dtype="fp8")
    assert 0 < compute_model("H100", "fp8").wide_efficiency <= 1
