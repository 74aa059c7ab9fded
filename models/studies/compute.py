"""What one GPU computes: peak FLOPs per dtype, HBM bandwidth, and a roofline per operation.

:data:`GENERATIONS` holds, per GPU generation (P100, V100, A100, H100, H200, B200), the dense
peak throughput per training dtype and the HBM bandwidth of its SXM part from NVIDIA's
datasheets (sparse figures are twice the dense ones and are not used). A fabric's GPU maps to
its generation by its ``model`` string (:func:`generation_of`: ``"V100"`` in ``"Tesla
V100-SXM2-16GB"``).

An operation takes ``max(FLOPs / (peak x efficiency), bytes / (HBM x memory_efficiency))``
(the roofline of Williams, Waterman and Patterson 2009, "Roofline: An Insightful Visual
Performance Model for Multicore Architectures"). Matmuls run on tensor cores at the dtype's
peak; elementwise passes, normalisations and softmax are bound by the bytes they move.

The achievable fractions are parameters with documented defaults, not fitted:
:data:`DEFAULT_EFFICIENCY` (0.75 of the dense tensor-core peak for large GEMMs [U]: cuBLAS
reaches 70-80 % on large bf16 GEMMs on A100 and H100 by NVIDIA's published GEMM benchmarks;
Narayanan et al. 2021 report 52 % of peak for the whole GPT-3 training step, communication and
bubble included) and :data:`DEFAULT_MEMORY_EFFICIENCY` (0.8 of the HBM peak for streaming
kernels [U], the usual STREAM fraction). A measured step time can set them
(:func:`models.studies.planner.plan`'s ``efficiency=``).

Examples
--------
>>> generation_of("Tesla V100-SXM2-16GB").name
'V100'
>>> GENERATIONS["H100"].peak_flops("bf16") / 1e12
989.5
>>> op_time(Op("x", "matmul", 1e12, 1e6), GENERATIONS["A100"], "bf16", efficiency=1.0)
0.003205128205128205
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType

from topo.errors import DgxTopoError
from topo.specs import GPUS
from topo.units import GB, GiB

from .workload import DTYPES, Op, dtype_bytes

__all__ = ["Generation", "GENERATIONS", "DEFAULT_EFFICIENCY", "DEFAULT_MEMORY_EFFICIENCY",
           "UnknownGenerationError", "UnsupportedDtypeError", "generation_of", "generation",
           "op_time", "op_roofline", "gpu_memory", "OpTime", "format_generations"]

#: Achievable fraction of the dense tensor-core (or FP32) peak on large matmuls [U] (see the
#: module docstring; a default, not fitted).
DEFAULT_EFFICIENCY = 0.75
#: Achievable fraction of the HBM peak on streaming kernels [U] (a default, not fitted).
DEFAULT_MEMORY_EFFICIENCY = 0.8

TF = 1e12


class UnknownGenerationError(DgxTopoError):
    """A GPU generation or model string that matches no entry of :data:`GENERATIONS`."""


class UnsupportedDtypeError(DgxTopoError):
    """A dtype the GPU has no arithmetic for (bf16 before Ampere, fp8 before Hopper)."""


@dataclass(frozen=True, slots=True)
class Generation:
    """One GPU generation (its SXM part).

    Attributes
    ----------
    name : str
        ``"V100"``.
    match : tuple of str
        Substrings of nvidia-smi model names of this generation.
    peak : dict
        Dense peak per dtype (tensor cores where the dtype has them; fp32 on the FP32 units).
        [FLOP/s]
    memory_bandwidth : float
        HBM peak. [B/s]
    memory : int
        Device memory of the part the datasheet quotes first. [bytes]
    source : str
    uncertain : str
    """

    name: str
    match: tuple
    peak: dict = field(repr=False)
    memory_bandwidth: float
    memory: int
    source: str = field(repr=False, default="")
    uncertain: str = field(repr=False, default="")

    def supports(self, dtype: str) -> bool:
        """Whether the GPU has arithmetic for this dtype."""
        return dtype_bytes(dtype) > 0 and dtype in self.peak

    def peak_flops(self, dtype: str) -> float:
        """Dense peak for a dtype. [FLOP/s]

        Raises
        ------
        UnsupportedDtypeError
        """
        dtype_bytes(dtype)
        if dtype not in self.peak:
            raise UnsupportedDtypeError(f"{self.name} has no {dtype} arithmetic: expected one of "
                                        f"{', '.join(self.peak)}")
        return self.peak[dtype]

    def ridge(self, dtype: str) -> float:
        """Arithmetic intensity where the roofline turns (peak / HBM bandwidth). [FLOP/B]"""
        return self.peak_flops(dtype) / self.memory_bandwidth


#: GPU generations by name, oldest first. Dense figures of the SXM parts.
GENERATIONS: dict[str, Generation] = MappingProxyType({g.name: g for g in (
    Generation("P100", ("P100",), {"fp32": 10.6 * TF, "fp16": 21.2 * TF}, 732 * GB, 16 * GiB,
               "NVIDIA Tesla P100 datasheet (SXM2: 10.6 TFLOPS FP32, 21.2 TFLOPS FP16, 732 GB/s "
               "CoWoS HBM2)"),
    Generation("V100", ("V100",), {"fp32": 15.7 * TF, "fp16": 125 * TF}, 900 * GB, 16 * GiB,
               "NVIDIA Tesla V100 GPU datasheet (SXM2: 15.7 TFLOPS FP32, 125 TFLOPS tensor, "
               "900 GB/s HBM2, 16/32 GB)"),
    Generation("A100", ("A100",), {"fp32": 19.5 * TF, "fp16": 312 * TF, "bf16": 312 * TF}, 2039 * GB,
               80 * GiB,
               "NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB: 19.5 TFLOPS FP32, 312 TFLOPS "
               "BF16/FP16 dense, 2,039 GB/s HBM2e; 40GB part 1,555 GB/s)"),
    Generation("H100", ("H100",), {"fp32": 67 * TF, "fp16": 989.5 * TF, "bf16": 989.5 * TF,
                                   "fp8": 1979 * TF}, 3350 * GB, 80 * GiB,
               "NVIDIA H100 Tensor Core GPU datasheet (SXM: 67 TFLOPS FP32, 1,979 TFLOPS "
               "BF16/FP16 and 3,958 TFLOPS FP8 with sparsity, half dense; 3.35 TB/s HBM3, 80 GB)"),
    Generation("H200", ("H200",), {"fp32": 67 * TF, "fp16": 989.5 * TF, "bf16": 989.5 * TF,
                                   "fp8": 1979 * TF}, 4800 * GB, 141 * GB,
               "NVIDIA H200 Tensor Core GPU datasheet (SXM: H100's compute, 141 GB HBM3e at "
               "4.8 TB/s)"),
    Generation("B200", ("B200",), {"fp32": 80 * TF, "fp16": 2250 * TF, "bf16": 2250 * TF,
                                   "fp8": 4500 * TF}, 8000 * GB, 180 * GB,
               "NVIDIA DGX B200 datasheet (8 GPUs: 72 PFLOPS FP8 training, 1,440 GB HBM3e, 64 TB/s; "
               "per GPU 4.5 PFLOPS FP8 and 2.25 PFLOPS FP16/BF16 dense, 180 GB, 8 TB/s)",
               "fp32 80 TFLOPS [U] (not in the DGX datasheet); per-GPU figures derived from the "
               "8-GPU system [D]"),
)})

_GB_IN_MODEL = re.compile(r"(\d{1,4})\s*GB", re.IGNORECASE)


def generation(name) -> Generation:
    """The generation of a name (``"h100"``, ``"V100"``) or a :class:`Generation` (as is).

    Raises
    ------
    UnknownGenerationError
    """
    if isinstance(name, Generation):
        return name
    key = str(name).strip().upper()
    if key in GENERATIONS:
        return GENERATIONS[key]
    raise UnknownGenerationError(f"unknown GPU generation {str(name)[:40]!r}: expected one of "
                                 f"{', '.join(GENERATIONS)}")


def generation_of(model: str) -> Generation:
    """The generation of an nvidia-smi model string (``"Tesla V100-SXM2-16GB"`` -> V100).

    Raises
    ------
    UnknownGenerationError
    """
    text = str(model).upper()
    for g in GENERATIONS.values():
        if any(m in text for m in g.match):
            return g
    raise UnknownGenerationError(f"GPU model {str(model)[:60]!r} matches no generation: expected a "
                                 f"name containing one of {', '.join(GENERATIONS)}")


def gpu_memory(model: str) -> int:
    """Device memory of a GPU model string. [bytes]

    The catalogue entry of :data:`topo.GPUS` with that model when there is one, else the
    ``NNGB`` of the name (NVIDIA's "GB" of HBM are GiB: a "16GB" V100 holds 16 GiB), else the
    generation's datasheet figure.
    """
    for spec in GPUS.values():
        if spec.model == model:
            return spec.memory
    found = _GB_IN_MODEL.search(str(model))
    if found and int(found.group(1)) > 0:
        return int(found.group(1)) * GiB
    return generation_of(model).memory


@dataclass(frozen=True, slots=True)
class OpTime:
    """One operation on the roofline.

    Attributes
    ----------
    op : Op
    time : float
        [s]
    bound : str
        ``"compute"`` or ``"memory"``.
    """

    op: Op
    time: float
    bound: str


def op_time(op: Op, gpu: Generation, dtype: str, *, efficiency: float = DEFAULT_EFFICIENCY,
            memory_efficiency: float = DEFAULT_MEMORY_EFFICIENCY) -> float:
    """Roofline time of one operation. [s]

    Parameters
    ----------
    op : Op
    gpu : Generation
    dtype : str
        The matmul dtype (``fp8`` runs the matmuls at the FP8 peak).
    efficiency, memory_efficiency : float
        Achievable fractions of the FLOP and byte peaks, in (0, 1].
    """
    return op_roofline(op, gpu, dtype, efficiency=efficiency, memory_efficiency=memory_efficiency).time


def op_roofline(op: Op, gpu: Generation, dtype: str, *, efficiency: float = DEFAULT_EFFICIENCY,
                memory_efficiency: float = DEFAULT_MEMORY_EFFICIENCY) -> OpTime:
    """:func:`op_time` with the binding resource."""
    for name, value in (("efficiency", efficiency), ("memory_efficiency", memory_efficiency)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise DgxTopoError(f"{name} must be a fraction in (0, 1], received {value!r}")
    compute = op.flops / (gpu.peak_flops(dtype) * efficiency) if op.kind == "matmul" else 0.0
    memory = op.nbytes / (gpu.memory_bandwidth * memory_efficiency)
    return OpTime(op, max(compute, memory), "compute" if compute >= memory else "memory")


def format_generations() -> str:
    """The table of generations: peaks per dtype, HBM, memory (for ``dgxtopo gpus``)."""
    dtypes = list(DTYPES)
    lines = ["generation " + " ".join(f"{d + ' TF':>9}" for d in dtypes) + "   HBM GB/s  memory GB"]
    for g in GENERATIONS.values():
        peaks = " ".join(f"{g.peak[d] / TF:9.1f}" if d in g.peak else f"{'-':>9}" for d in dtypes)
        lines.append(f"{g.name:10} {peaks}   {g.memory_bandwidth / GB:8.0f}  {g.memory / GB:9.1f}")
    return "\n".join(lines)
