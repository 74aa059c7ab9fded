"""GPU generations: datasheet peaks, model-string matching, the roofline."""

import pytest

from models.studies.compute import (GENERATIONS, UnknownGenerationError, UnsupportedDtypeError,
                            generation, generation_of, gpu_memory, op_roofline, op_time)
from models.studies.workload import Op
from topo.units import GB, GiB


def test_datasheet_figures():
    assert GENERATIONS["V100"].peak_flops("fp16") == 125e12
    assert GENERATIONS["A100"].peak_flops("bf16") == 312e12
    assert GENERATIONS["H100"].peak_flops("fp8") == 1979e12
    assert GENERATIONS["H200"].memory_bandwidth == 4800 * GB
    assert GENERATIONS["B200"].peak_flops("bf16") == 2250e12


def test_generations_get_faster():
    order = ["P100", "V100", "A100", "H100", "H200", "B200"]
    bw = [GENERATIONS[g].memory_bandwidth for g in order]
    assert bw == sorted(bw)
    fp16 = [GENERATIONS[g].peak_flops("fp16") for g in order]
    assert fp16 == sorted(fp16)


@pytest.mark.parametrize("model,name", [("Tesla V100-SXM2-16GB", "V100"), ("Tesla P100-SXM2-16GB", "P100"),
                                        ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA H100 80GB HBM3", "H100"),
                                        ("NVIDIA B200", "B200"), ("NVIDIA H200", "H200")])
def test_model_strings(model, name):
    assert generation_of(model).name == name


def test_memory_of_model():
    assert gpu_memory("Tesla V100-SXM3-32GB") == 32 * GiB
    assert gpu_memory("NVIDIA A100-SXM4-40GB") == 40 * GiB
    assert gpu_memory("NVIDIA H200") == GENERATIONS["H200"].memory


def test_errors():
    with pytest.raises(UnknownGenerationError):
        generation_of("Radeon MI300X")
    with pytest.raises(UnknownGenerationError):
        generation("K80")
    with pytest.raises(UnsupportedDtypeError):
        GENERATIONS["V100"].peak_flops("bf16")
    with pytest.raises(UnsupportedDtypeError):
        GENERATIONS["A100"].peak_flops("fp8")
    with pytest.raises(Exception):
        op_time(Op("x", "matmul", 1, 1), GENERATIONS["A100"], "bf16", efficiency=0)


def test_roofline_ridge():
    a100 = GENERATIONS["A100"]
    ridge = a100.ridge("bf16")  # ~153 FLOP/B
    nbytes = 1e9
    below = op_roofline(Op("m", "matmul", 0.5 * ridge * nbytes, nbytes), a100, "bf16", efficiency=1,
                        memory_efficiency=1)
    above = op_roofline(Op("m", "matmul", 2 * ridge * nbytes, nbytes), a100, "bf16", efficiency=1,
                        memory_efficiency=1)
    assert below.bound == "memory" and below.time == pytest.approx(nbytes / a100.memory_bandwidth)
    assert above.bound == "compute" and above.time == pytest.approx(2 * ridge * nbytes / 312e12)
    elementwise = op_roofline(Op("e", "memory", 1e15, nbytes), a100, "bf16")
    assert elementwise.bound == "memory"
