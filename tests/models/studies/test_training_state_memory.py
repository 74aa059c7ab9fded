"""The training state's bytes per parameter as Megatron-LM keeps it, and the scales of a
low-precision activation cache (models.studies.planner.gpu_memory.state_bytes, .cached_bytes;
issue 40's memory details).

Known answers: Megatron-LM's "Distributed Optimizer" documentation tabulates the bytes per
parameter with the distributed optimizer (ZeRO 1) over d GPUs: fp16 weights and gradients
4 + 16 / d, bf16 weights with fp32 gradients 6 + 12 / d, fp32 8 + 8 / d [U: recalled]; DeepSeek-V3
(arXiv 2412.19437, section 3.3) scales fp8 activations per 1 x 128 tile with an fp32 scale."""

from __future__ import annotations

import pytest

from models.studies.planner import Layout
from models.studies.planner.gpu_memory import FP8_TILE, cached_bytes, memory, stage_parameters, state_bytes
from models.studies.planner.parallel import stage_split
from models.studies.planner.parallel_step import parallel_memory
from models.studies.moe import moe_workload
from models.studies.workload import workload

DENSE = "transformer:layers=4,hidden=512,heads=8,seq=256,vocab=1000"
MOE = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"
#: Megatron-LM's table: bytes per parameter with the distributed optimizer over d, (unsharded, sharded).
MEGATRON = {"fp16": (4, 16), "bf16": (6, 12), "fp32": (8, 8)}


@pytest.mark.parametrize("dtype", sorted(MEGATRON))
@pytest.mark.parametrize("d", [1, 2, 4, 8])
def test_state_per_parameter_is_megatrons_table(dtype, d):
    w = workload(DENSE)
    params = stage_parameters(w, 1)[0]
    m = memory(w, Layout(1, 1, d, 1, 1, 8 * d, "none", False, "tp-dp-pp"), dtype=dtype)
    held, sharded = MEGATRON[dtype]
    assert (m.parameters + m.gradients + m.optimizer) / params == pytest.approx(held + sharded / d)


def test_gradients_accumulate_in_fp32_with_bf16_and_the_low_precision_dtypes():
    assert state_bytes("bf16") == state_bytes("fp8") == state_bytes("nvfp4") == (2, 4, 12)
    assert state_bytes("fp16") == (2, 2, 16) and state_bytes("tf32") == state_bytes("fp32") == (4, 4, 8)
    w = workload(DENSE)
    params = stage_parameters(w, 1)[0]
    # ZeRO 2 shards the fp32 gradients too: 2 + (4 + 12) / 4 over 4 GPUs
    m = memory(w, Layout(1, 1, 4, 2, 1, 8, "none", False, "tp-dp-pp"), dtype="bf16")
    assert (m.parameters, m.gradients, m.optimizer) == pytest.approx((2 * params, params, 3 * params))


def test_the_mixture_of_experts_path_keeps_the_same_state():
    w = moe_workload(MOE)
    lay = Layout(1, 2, 8, 1, 1, 32, "none", False, "tp-dp-pp", ep=8)
    split = stage_split(w.layers, 2, 1)
    bf16 = parallel_memory(w, lay, split, dtype="bf16", capacity=80e9, flash=True)
    fp16 = parallel_memory(w, lay, split, dtype="fp16", capacity=80e9, flash=True)
    assert bf16.gradients == pytest.approx(2 * bf16.parameters) and fp16.gradients == pytest.approx(fp16.parameters)
    assert bf16.parameters == fp16.parameters and fp16.optimizer == pytest.approx(bf16.optimizer * 16 / 12)


def test_an_fp8_cache_pays_deepseeks_tile_scales():
    assert FP8_TILE == 128 and cached_bytes("fp8") == 1 + 4 / 128 and cached_bytes("bf16") is None
    assert cached_bytes("mxfp8") == 1 + 1 / 32 and cached_bytes("nvfp4") == 0.5 + 1 / 16
    # DeepSeek's 4 bytes per 128 fp8 elements cost what mxfp8's 1 byte per 32 does: the same cache
    w = moe_workload(MOE)
    lay = Layout(1, 2, 8, 1, 1, 32, "deepseek", False, "tp-dp-pp", ep=8)
    split = stage_split(w.layers, 2, 1)
    act = {d: parallel_memory(w, lay, split, dtype=d, capacity=80e9, flash=True).activations
           for d in ("fp8", "mxfp8", "nvfp4", "bf16")}
    assert act["fp8"] == pytest.approx(act["mxfp8"]) and act["nvfp4"] < act["fp8"] < act["bf16"]
