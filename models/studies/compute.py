"""What one GPU computes: kernels of a training step timed from hardware facts.

The facts of each GPU part (SMs, clocks, dense peak per dtype, HBM bandwidth and capacity,
NVLink) live in :data:`topo.specs.GPUS`; :class:`Gpu` reads them, and :data:`GENERATIONS`
names one representative part per generation (P100, V100, A100, H100, H200, B200) for
questions asked without a fabric. A fabric's GPU maps to its part by its ``model`` string
(:func:`gpu_of`: ``"NVIDIA A100-SXM4-40GB"`` is the 40 GB part with 1,555 GB/s of HBM).

A :class:`ComputeModel` times each kernel of a workload (:class:`models.studies.workload.Op`):

* **matrix multiplies** on tensor cores, quantised as NVIDIA's GEMM guidance describes ("Matrix
  Multiplication Background User's Guide" [S109]): the output is cut into thread-block tiles
  (:data:`TILES`; a partial tile costs a whole one: *tile quantisation*), and the tiles run in
  *waves* of one tile per SM, a partial last wave costing a whole one (*wave quantisation*);
  each tile's output is written after its main loop (the epilogue, at the SM's share of the
  HBM bandwidth); the tile with the least time is taken, and a product with fewer tiles than
  SMs splits its reduction dimension (split-K); dimensions are padded to 16 bytes (Tensor Core requirements
  [S109]: from Ampere cuBLAS uses tensor cores on any shape, best at multiples of 16 bytes;
  before Ampere a misaligned product runs on the CUDA cores, half-precision at twice the FP32
  rate [S102]). A full wave runs at :data:`GEMM_EFFICIENCY` of the dense peak, the achievable
  fraction of cuBLAS on large products per generation and dtype (sourced there). The backward
  pass is the two transposed products (input and weight gradients), each quantised.
* **memory-bound passes** (norms, bias, activation, dropout, residual adds, softmax, loss) by
  the bytes each kernel moves at :data:`MEMORY_EFFICIENCY` of the HBM bandwidth (fitted to STREAM), and
  at least :data:`KERNEL_FLOOR` per kernel launched (short kernels launched one by one cost
  their launch [S113]); the software stack
  (:data:`models.studies.workload.SOFTWARE`) decides how many kernels there are.
* **flash attention** as one kernel at :data:`ATTENTION_EFFICIENCY` of the peak, executing half
  the score matrix when causal, its backward recomputing the scores (2.5 times the forward).
* **low precision** (``fp8`` per-tensor on Hopper and Blackwell, ``mxfp8`` and ``nvfp4`` on
  Blackwell): the linear layers' products run at the dtype's peak and its efficiency fitted to
  measured GEMMs (:data:`FITTED_LOW_PRECISION_EFFICIENCY`), each paying the casts of its input
  and output gradient; the attention core, the output head and the memory-bound passes stay
  bf16 (:data:`models.studies.workload.LOW_PRECISION`).

Nothing here is fitted to published training throughputs; :func:`models.studies.planner.calibrate_plan`
fits one time scale to a step the user measured.

Examples
--------
>>> gpu_of("Tesla V100-SXM2-16GB").generation
'V100'
>>> GENERATIONS["H100"].peak_flops("bf16") / 1e12
989.5
>>> gpu_of("NVIDIA A100-SXM4-40GB").memory_bandwidth / 1e9
1555.0
>>> m = compute_model("A100", "bf16", efficiency=1.0)
>>> round(m.gemm_time(8192, 8192, 8192) * 1e3, 3)  # 2 x 8192^3 / 312 TFLOP/s = 3.524: 19 waves, epilogues
3.614
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from topo.errors import DgxTopoError
from topo.specs import GPUS, GpuSpec
from topo.units import GiB

from ..engine.results import tidy_records
from .workload import LOW_PRECISION, QUANTISED_BYTES, SOFTWARE, Op, Software, Workload, dtype_bytes, \
    software as as_software

__all__ = ["Gpu", "GENERATIONS", "GEMM_EFFICIENCY", "FITTED_GEMM_EFFICIENCY", "FITTED_LOW_PRECISION_EFFICIENCY",
           "ATTENTION_EFFICIENCY", "DEFAULT_MEMORY_EFFICIENCY", "MEMORY_EFFICIENCY", "KERNEL_FLOOR", "MAX_SCALE", "MIN_FRACTION", "TILES", "ComputeModel", "OpTime",
           "ComputeFacts", "UnknownGenerationError", "UnsupportedDtypeError", "gpu_of", "generation_of",
           "generation", "gpu_memory", "compute_model", "default_software"]

TF = 1e12

#: Thread-block tiles (rows x columns of the output) a product may use, with the fraction of
#: a full SM's rate each reaches: the large tiles cuBLAS picks for training-size products run
#: the SM at full rate [S109]; a smaller tile loads its operands ``(rows + columns) / (rows x
#: columns)`` times more often per FLOP and is taken to reach the rate in proportion to its
#: reuse against a 128 x 128 tile [U]. One tile per SM per wave [S109].
TILES = ((256, 128, 1.0), (128, 256, 1.0), (128, 128, 1.0), (128, 64, 2 / 3), (64, 128, 2 / 3),
         (64, 64, 0.5))
# Split-K: a product with fewer output tiles than SMs splits its reduction dimension over up
# to this many thread blocks and sums the fp32 partial products in a second pass (as cuBLAS and
# CUTLASS do for such shapes [U]).
_MAX_SPLIT = 32

#: GEMM efficiency FITTED to cuBLASLt measurements: the Azure/AI-benchmarking-guide GEMM tables
#: (ND A100 v4 fp16, ND H200 v5 fp8, ND GB200 v6 fp8 and fp4), transcribed in the project's shared
#: calibration data as gpu_microbenchmarks.json and copied to tests/data/gemm_microbenchmarks.json.
#: What was fitted: the full-wave fraction of the dense peak (:data:`GEMM_EFFICIENCY`) at which
#: this module's GEMM model (tiles, waves, epilogues: :meth:`ComputeModel.gemm_time`) reproduces
#: the median measured TFLOP/s over the large products (every dimension >= 4096: the squares
#: 4096-32768 and 6144 x 12288 x 12288). Measured rate over the dense peak on those shapes is
#: lower (A100 fp16 0.813, H200 fp8 0.666, GB200 fp8 0.575, GB200 fp4 0.751, medians) because the
#: model's waves and epilogues already cost the rest. Nothing else is fitted to these tables; the
#: small and skinny shapes (1024-2048 cubes, 1024 x 2145 x 1024, 802816 x 192 x 768) stay
#: predictions of the shape model (tests/models/studies/test_compute_precision.py).
FITTED_GEMM_EFFICIENCY: Mapping[str, float] = MappingProxyType(
    {"A100 fp16": 0.825, "H200 fp8": 0.708, "GB200 fp8": 0.616, "GB200 fp4": 0.800})
#: The low-precision entries of :data:`FITTED_GEMM_EFFICIENCY` (the name other modules import).
FITTED_LOW_PRECISION_EFFICIENCY: Mapping[str, float] = MappingProxyType(
    {k: v for k, v in FITTED_GEMM_EFFICIENCY.items() if not k.endswith("fp16")})
#: The "Maximum Achievable Matmul FLOPS" of cuBLAS in 16-bit, best of a sweep of shapes, on A100
#: and H100 SXM [S110]: 86.9 % and 80.3 % of the dense peak (H100 below A100: the 700 W part
#: throttles its clock under tensor load).
_MAMF = MappingProxyType({"A100": 0.869, "H100": 0.803})
#: H100 16-bit, DERIVED (no Hopper 16-bit GEMM is measured in the shared data): [S110]'s H100
#: best-of-sweep fraction times the ratio of A100's fitted fraction (a single run over training-size
#: shapes, :data:`FITTED_GEMM_EFFICIENCY`) to [S110]'s A100 best-of-sweep, 0.825 / 0.869
#: [U: A100's ratio carried to Hopper].
_H100_16BIT = round(_MAMF["H100"] * FITTED_GEMM_EFFICIENCY["A100 fp16"] / _MAMF["A100"], 3)

#: Achievable fraction of the dense peak on large matrix multiplies, by generation and dtype.
#: A100 16-bit: fitted (:data:`FITTED_GEMM_EFFICIENCY`, the A100 fp16 table; [S110]'s best of a
#: sweep, 0.869, is the ceiling it sits under). H100 and H200 16-bit: derived from [S110] and the
#: A100 fit (:data:`_H100_16BIT`, 0.762; H200 is the same silicon and clocks). V100 16-bit: 83
#: TFLOPS from cuBLAS mixed precision [S111] of the 112 TFLOPS of the part measured [U: PCIe or
#: SXM2 not retrieved]. FP32 (SGEMM on the CUDA cores) 0.9 and TF32 as 16-bit, P100 and B200
#: 16-bit are [U] (no measurement retrieved).
#: Low precision is fitted (:data:`FITTED_GEMM_EFFICIENCY`): fp8 of H100 and H200 from the H200
#: fit (the same silicon and clocks), fp8 of B200 from the GB200 fit; mxfp8 as fp8 and nvfp4 from
#: the GB200 fp4 fit (same tensor-core path, [U]: no MX measurement); B300 (Blackwell Ultra) as
#: B200 [U: no measurement].
GEMM_EFFICIENCY: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {generation: MappingProxyType(rates) for generation, rates in {
        "P100": {"fp32": 0.90, "fp16": 0.85},
        "V100": {"fp32": 0.90, "fp16": 0.74},
        "A100": {"fp32": 0.90, "tf32": FITTED_GEMM_EFFICIENCY["A100 fp16"], "fp16": FITTED_GEMM_EFFICIENCY["A100 fp16"],
                 "bf16": FITTED_GEMM_EFFICIENCY["A100 fp16"]},
        "H100": {"fp32": 0.90, "tf32": _H100_16BIT, "fp16": _H100_16BIT, "bf16": _H100_16BIT,
                 "fp8": FITTED_GEMM_EFFICIENCY["H200 fp8"]},
        "H200": {"fp32": 0.90, "tf32": _H100_16BIT, "fp16": _H100_16BIT, "bf16": _H100_16BIT,
                 "fp8": FITTED_GEMM_EFFICIENCY["H200 fp8"]},
        "B200": {"fp32": 0.90, "tf32": 0.75, "fp16": 0.75, "bf16": 0.75,
                 "fp8": FITTED_GEMM_EFFICIENCY["GB200 fp8"],
                 "mxfp8": FITTED_GEMM_EFFICIENCY["GB200 fp8"],
                 "nvfp4": FITTED_GEMM_EFFICIENCY["GB200 fp4"]},
        "B300": {"fp32": 0.90, "tf32": 0.75, "fp16": 0.75, "bf16": 0.75,
                 "fp8": FITTED_GEMM_EFFICIENCY["GB200 fp8"],
                 "mxfp8": FITTED_GEMM_EFFICIENCY["GB200 fp8"],
                 "nvfp4": FITTED_GEMM_EFFICIENCY["GB200 fp4"]},
    }.items()})
#: Fraction of the dense 16-bit peak a flash-attention kernel reaches over its forward and
#: backward, FITTED to the FlashAttention-2 rows of the shared calibration data
#: (gpu_microbenchmarks.json, Azure/AI-benchmarking-guide; copied to
#: tests/data/gemm_microbenchmarks.json): batch 2, sequence 8,192, A100 head dim 64 179.5 TFLOP/s
#: of 312 (0.575), H200 head dim 128 329.3 of 989.5 (0.333; H100 is the same SM and clocks), taken
#: as the forward-and-backward rate the FlashAttention benchmark prints (executed FLOPs, the
#: backward 2.5 forwards [U: the page does not say]). Hopper's FlashAttention-2 runs Ampere's
#: warp-level MMA, not Hopper's warpgroup MMA (FlashAttention-3, Shah et al. 2024, sec. 1), which is
#: why it sits far below the GEMMs there. B200 and B300 stay 0.6 [U]: the GB200 row (373.9 TFLOP/s,
#: 0.15 of 2,500) measures a kernel with no Blackwell path, not what Blackwell training runs
#: (cuDNN's fused attention) [U]. None before Ampere: FlashAttention-2 needs Ampere or newer [S112].
ATTENTION_EFFICIENCY: Mapping[str, float] = MappingProxyType({"A100": 0.575, "H100": 0.333, "H200": 0.333,
                                                              "B200": 0.6, "B300": 0.6})
#: Achievable fraction of the HBM peak on streaming kernels where the shared data measures none
#: [U] (the usual STREAM fraction; a default, not fitted).
DEFAULT_MEMORY_EFFICIENCY = 0.8
#: Fraction of the HBM peak of a streaming kernel, FITTED to the STREAM "copy" rows of the shared
#: calibration data (gpu_microbenchmarks.json, Azure/AI-benchmarking-guide; copied to
#: tests/data/gemm_microbenchmarks.json; copy reads one array and writes one, as the memory-bound
#: passes here count their bytes): A100-SXM4-80GB 1.61 of 2.039 TB/s (0.790), H200 4.01 of 4.8
#: (0.835); H100 as H200 [U: HBM3 rather than HBM3e, same memory controller generation]. Other
#: generations :data:`DEFAULT_MEMORY_EFFICIENCY`.
MEMORY_EFFICIENCY: Mapping[str, float] = MappingProxyType({"A100": 0.790, "H100": 0.835, "H200": 0.835})
#: Least time of one kernel launched on its own: back-to-back short kernels cost about 3.8 us
#: each when launched one by one (NVIDIA Developer Blog, "Getting Started with CUDA Graphs"
#: [S113]). [s]
KERNEL_FLOOR = 3.8e-6
#: The largest multiplier on kernel times a caller may set (``scale``; the command line's
#: ``--compute-scale``): 10^4 times the model is no longer a correction of it, and larger
#: scales take a step's time to infinity.
MAX_SCALE = 1e4

#: The representative part of each generation (its SXM part with the most memory, as NVIDIA's
#: datasheets quote first).
_REPRESENTATIVE = MappingProxyType({"P100": "P100", "V100": "V100-SXM2", "A100": "A100-SXM4-80GB",
                   "H100": "H100-SXM5-80GB", "H200": "H200", "B200": "B200", "B300": "B300"})


class UnknownGenerationError(DgxTopoError):
    """A GPU generation or model string that matches no entry of :data:`GENERATIONS`."""


class UnsupportedDtypeError(DgxTopoError):
    """A dtype the GPU has no arithmetic for (bf16 and tf32 before Ampere, fp8 before Hopper,
    mxfp8 and nvfp4 before Blackwell)."""


@dataclass(frozen=True, slots=True)
class Gpu:
    """The compute facts of one GPU part, read from :data:`topo.specs.GPUS`.

    Attributes
    ----------
    name : str
        The part's key in :data:`topo.specs.GPUS` (``"A100-SXM4-40GB"``), or the generation
        for :data:`GENERATIONS` entries.
    generation : str
        ``"A100"``: selects :data:`GEMM_EFFICIENCY` and :data:`ATTENTION_EFFICIENCY`.
    spec : topo.specs.GpuSpec
    memory : int
        Device memory. [bytes]
    """

    name: str
    generation: str
    spec: GpuSpec = field(repr=False)
    memory: int = field(repr=False, default=0)

    @property
    def peak(self) -> dict:
        """Dense peak per dtype. [FLOP/s]"""
        return self.spec.peaks

    @property
    def memory_bandwidth(self) -> float:
        """HBM peak. [B/s]"""
        return self.spec.memory_bandwidth

    @property
    def sm_count(self) -> int:
        return self.spec.sm_count

    @property
    def nvlink_bandwidth(self) -> float:
        """NVLink of one GPU, per direction. [B/s]"""
        return self.spec.nvlink_bandwidth

    @property
    def source(self) -> str:
        return self.spec.source

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
            gpu = self.name if self.name == self.generation else f"{self.name} ({self.generation} generation)"
            raise UnsupportedDtypeError(f"{gpu} has no {dtype} arithmetic: expected one of its dtypes, "
                                        f"{', '.join(self.peak)}; received {dtype!r}")
        return self.peak[dtype]

    def ridge(self, dtype: str) -> float:
        """Arithmetic intensity where the roofline turns (peak / HBM bandwidth). [FLOP/B]"""
        return self.peak_flops(dtype) / self.memory_bandwidth


def _part(key: str, name: str | None = None) -> Gpu:
    spec = GPUS[key]
    return Gpu(name or key, spec.generation, spec, spec.memory)


#: One representative part per generation, oldest first (questions asked without a fabric).
GENERATIONS: Mapping[str, Gpu] = MappingProxyType({g: _part(key, g) for g, key in _REPRESENTATIVE.items()})

_GB_IN_MODEL = re.compile(r"(\d{1,4})\s*GB", re.IGNORECASE)


def generation(name: str | Gpu) -> Gpu:
    """The representative part of a generation name (``"h100"``), or a :class:`Gpu` as is.

    Raises
    ------
    UnknownGenerationError
    """
    if isinstance(name, Gpu):
        return name
    key = str(name).strip().upper()
    if key in GENERATIONS:
        return GENERATIONS[key]
    raise UnknownGenerationError(f"unknown GPU generation {str(name)[:40]!r}: expected one of "
                                 f"{', '.join(GENERATIONS)}")


def _catalogued(model: str) -> str | None:
    """The key of the catalogue entry (:data:`topo.specs.GPUS`) whose model string is ``model``."""
    return next((key for key, spec in GPUS.items() if spec.model == model), None)


def generation_of(model: str) -> Gpu:
    """The representative part of the generation of an nvidia-smi model string.

    Raises
    ------
    UnknownGenerationError
    """
    key = _catalogued(model)  # a catalogued part: its own generation (an H800 is an H100)
    if key is not None and GPUS[key].generation in GENERATIONS:
        return GENERATIONS[GPUS[key].generation]
    text = str(model).upper()
    for name, g in GENERATIONS.items():
        if name in text:
            return g
    raise UnknownGenerationError(f"GPU model {str(model)[:60]!r} matches no generation: expected a "
                                 f"name containing one of {', '.join(GENERATIONS)}")


def gpu_of(model: str) -> Gpu:
    """The part of a fabric GPU's ``model`` string.

    The catalogue entry of :data:`topo.specs.GPUS` with that model when there is one (HBM,
    peaks and memory of that exact part), else the generation's representative part with the
    memory the name states (``NNGB``: NVIDIA's "GB" of HBM are GiB, a "16GB" V100 holds 16 GiB).

    Raises
    ------
    UnknownGenerationError
    """
    key = _catalogued(model)
    if key is not None:
        return _part(key)
    g = generation_of(model)
    found = _GB_IN_MODEL.search(str(model))
    if found and int(found.group(1)) > 0:
        return Gpu(str(model), g.generation, g.spec, int(found.group(1)) * GiB)
    return g


def gpu_memory(model: str) -> int:
    """Device memory of a GPU model string (:func:`gpu_of`). [bytes]"""
    return gpu_of(model).memory


def default_software(w: Workload | None, gpu: Gpu) -> Software:
    """The stack a workload is run with by default: ``flash`` when the model is trained with
    flash attention and the GPU has it (Ampere or newer [S112]), else ``fused``."""
    flash = getattr(w, "flash_attention", False) and gpu.generation in ATTENTION_EFFICIENCY
    return SOFTWARE["flash" if flash else "fused"]


@dataclass(frozen=True, slots=True)
class OpTime:
    """One kernel (or batched product) of a pass, timed.

    Attributes
    ----------
    op : Op
    forward, backward : float
        [s]
    bound : str
        What limits the forward: ``"compute"`` (tensor or FP32 units), ``"memory"`` (HBM) or
        ``"launch"`` (:data:`KERNEL_FLOOR`).
    ideal : float
        The forward at the achievable fraction with no quantisation. [s]
    """

    op: Op
    forward: float
    backward: float
    bound: str
    ideal: float = 0.0

    def to_records(self) -> list:
        """One tidy row: the op (name, kind, forward FLOPs and bytes), its forward and backward
        times, what bounds it and its ideal forward.

        Examples
        --------
        >>> t = compute_model("A100", "bf16").time(Op("mlp", "matmul", 2.0 * 8192 ** 3, 0.0, 8192, 8192, 8192))
        >>> row = t.to_records()[0]
        >>> row["name"], row["bound"], round(row["forward_s"] * 1e3, 3), row["backward_s"] == 2 * row["forward_s"]
        ('mlp', 'compute', 4.363, True)
        """
        return tidy_records({"name": self.op.name, "kind": self.op.kind, "flops": self.op.flops,
                             "nbytes": self.op.nbytes, "forward_s": self.forward, "backward_s": self.backward,
                             "bound": self.bound, "ideal_s": self.ideal})


@dataclass(frozen=True, slots=True)
class ComputeFacts:
    """What a compute model is, in numbers: the facts a plan records as its ``compute``
    (:attr:`models.studies.planner.Plan.compute`; :func:`models.present.plan_text.compute_note`
    words them in one line).

    Attributes
    ----------
    gpu : str
        The part's name (:attr:`Gpu.name`).
    generation : str
    dtype : str
        The matmul dtype.
    peak : float
        Dense peak of the dtype. [FLOP/s]
    memory_bandwidth : float
        HBM peak. [B/s]
    stack : str
        The software stack's name (:data:`models.studies.workload.SOFTWARE`).
    flash_attention : bool
        The stack runs the attention core as one flash-attention kernel.
    gemm_efficiency, attention_efficiency, memory_efficiency : float
        The achievable fractions in use (:class:`ComputeModel`).
    scale : float
        Calibrated multiplier on every kernel's time (1: the model from hardware facts).

    Examples
    --------
    >>> f = compute_model("H100", "bf16").facts
    >>> f.gpu, f.peak / 1e12, f.memory_bandwidth / 1e9, f.stack, f.gemm_efficiency
    ('H100', 989.5, 3350.0, 'fused', 0.762)
    """

    gpu: str
    generation: str
    dtype: str
    peak: float
    memory_bandwidth: float
    stack: str
    flash_attention: bool
    gemm_efficiency: float
    attention_efficiency: float
    memory_efficiency: float
    scale: float = 1.0

    def to_records(self) -> list:
        """One tidy row of the facts (``peak_flop_per_s`` in FLOP/s, ``memory_bandwidth_Bps`` in B/s)."""
        return tidy_records({
            "gpu": self.gpu, "generation": self.generation, "dtype": self.dtype, "peak_flop_per_s": self.peak,
            "memory_bandwidth_Bps": self.memory_bandwidth, "stack": self.stack,
            "flash_attention": self.flash_attention, "gemm_efficiency": self.gemm_efficiency,
            "attention_efficiency": self.attention_efficiency, "memory_efficiency": self.memory_efficiency,
            "scale": self.scale})


#: The smallest achievable fraction a caller may set: 10^-6 of a peak is no longer a correction of
#: the model (the counterpart of :data:`MAX_SCALE`), and far smaller ones (a denormal such as
#: 2e-311) take kernel times to infinity and a step's sums to NaN.
MIN_FRACTION = 1e-6


def _fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not MIN_FRACTION <= value <= 1:
        raise DgxTopoError(f"{name} must be a fraction in (0, 1] of at least {MIN_FRACTION:g}, received {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class ComputeModel:
    """Times the kernels of a workload on one GPU (module docstring).

    With a low-precision dtype (:data:`models.studies.workload.LOW_PRECISION`) the products
    marked ``quantised`` run at that dtype's peak and fitted efficiency, each paying the casts
    of its operands (:meth:`quantisation_time`); the others (the attention core and the output
    head) and every memory-bound pass stay 16-bit, at the bf16 peak and efficiency.

    Attributes
    ----------
    gpu : Gpu
    dtype : str
        The matmul dtype.
    stack : Software
        Which passes are separate kernels (:data:`models.studies.workload.SOFTWARE`).
    gemm_efficiency : float
        Fraction of the dense peak a full wave of a product reaches.
    attention_efficiency : float
        Fraction of the dense peak of a flash-attention kernel (0 when the GPU has none).
    memory_efficiency : float
        Fraction of the HBM bandwidth of a streaming kernel.
    kernel_floor : float
        Least time of one kernel. [s]
    scale : float
        Calibrated multiplier on every kernel's time (1: the model from hardware facts).
    wide_efficiency : float
        Fraction of the bf16 peak of the products kept in 16-bit when ``dtype`` is low
        precision (0 otherwise: every product runs in ``dtype``).
    """

    gpu: Gpu
    dtype: str
    stack: Software
    gemm_efficiency: float
    attention_efficiency: float
    memory_efficiency: float
    kernel_floor: float = KERNEL_FLOOR
    scale: float = 1.0
    wide_efficiency: float = 0.0

    def __post_init__(self):
        # A low-precision model times its 16-bit products at wide_efficiency: 0 would divide by zero
        # in every such product (compute_model sets it; a model built by hand must too).
        if self.low_precision:
            _fraction("wide_efficiency", self.wide_efficiency)

    @property
    def peak(self) -> float:
        """Dense peak of the dtype. [FLOP/s]"""
        return self.gpu.peak_flops(self.dtype)

    @property
    def low_precision(self) -> bool:
        """The products run on quantised operands (:data:`models.studies.workload.LOW_PRECISION`)."""
        return self.dtype in LOW_PRECISION

    @property
    def wide_peak(self) -> float:
        """Dense peak of the 16-bit work (bf16 when the dtype is low precision, else the dtype's). [FLOP/s]"""
        return self.gpu.peak_flops("bf16") if self.low_precision else self.peak

    @property
    def facts(self) -> ComputeFacts:
        """The model's facts in numbers (what a plan records, :class:`ComputeFacts`)."""
        return ComputeFacts(self.gpu.name, self.gpu.generation, self.dtype, self.peak, self.gpu.memory_bandwidth,
                            self.stack.name, self.stack.flash_attention, self.gemm_efficiency,
                            self.attention_efficiency, self.memory_efficiency, self.scale)

    @property
    def tensor_cores(self) -> bool:
        """Products run on tensor cores (Volta and later, any dtype but fp32)."""
        return self.dtype != "fp32" and self.gpu.spec.compute_capability >= 70

    @property
    def _hbm_rate(self) -> float:
        """The HBM bandwidth a kernel achieves. [B/s]"""
        return self.gpu.memory_bandwidth * self.memory_efficiency

    def _hbm(self, nbytes: float) -> float:
        return nbytes / self._hbm_rate

    def _rate(self, quantised: bool) -> tuple:
        """(achievable rate, bytes per operand element) of a product. [FLOP/s, bytes]"""
        if self.low_precision and not quantised:
            return self.wide_peak * self.wide_efficiency, 2.0
        return self.peak * self.gemm_efficiency, dtype_bytes(self.dtype)

    def gemm_time(self, m: int, n: int, k: int, batch: int = 1, nbytes: float = 0.0, *,
                  quantised: bool = True) -> float:
        """Time of ``batch`` products ``(m x k) @ (k x n)``, tile- and wave-quantised. [s]

        Parameters
        ----------
        m, n, k : int
        batch : int
        nbytes : float
            Bytes the product moves (its memory roofline). [bytes]
        quantised : bool
            The product runs in the low-precision dtype when the model has one (else bf16).
        """
        if m <= 0 or n <= 0 or k <= 0:
            return 0.0
        gpu = self.gpu
        rate, elem = self._rate(quantised)
        align = max(1, int(16 // elem))
        if self.tensor_cores and gpu.spec.compute_capability < 80 and (m % align or n % align or k % align):
            # Before Ampere a misaligned product leaves the tensor cores: half precision on the
            # CUDA cores runs at twice the FP32 rate [S102] [S109].
            rate = 2 * gpu.peak_flops("fp32") * self.gemm_efficiency
        elif self.tensor_cores:
            m, n, k = (-(-x // align) * align for x in (m, n, k))
        sms = gpu.sm_count
        per_sm = rate / sms
        # Each SM writes its output tile after the tile's main loop (the epilogue), at its share
        # of the HBM bandwidth, in 16-bit (32-bit for fp32 and tf32).
        out = 4 if elem == 4 else 2
        hbm = self._hbm_rate
        per_sm_hbm = hbm / sms
        best = math.inf
        for rows, cols, reach in TILES:
            tiles = batch * -(-m // rows) * -(-n // cols)
            tile_rate = per_sm * reach
            epilogue = rows * cols * out / per_sm_hbm
            split = 1
            while True:
                # A slice of the reduction shorter than the tile is as slow as the tile's depth
                # (its main loop still walks the tile), so every split is priced and the fastest
                # kept: a deeper product is never faster than a shallower one of the same tiles.
                depth = max(-(-k // split), min(k, cols))
                waves = -(-tiles * split // sms)
                time = waves * (2.0 * rows * cols * depth / tile_rate + epilogue)
                if split > 1:  # the partial products, fp32, written and summed
                    time += 4.0 * 2 * split * batch * m * n / hbm
                if time < best:
                    best = time
                if split >= _MAX_SPLIT or tiles * split * 2 > sms:
                    break
                split *= 2
        return self.scale * max(best, nbytes / hbm, self.kernel_floor)

    def quantisation_time(self, elements: float) -> float:
        """Time of one cast kernel of a 16-bit tensor into the low-precision dtype (0 in 16/32-bit). [s]

        The cast reads the 16-bit tensor and writes the quantised copy and its transpose (the
        weight-gradient product reads the other operand layout; Transformer Engine's fused
        cast-transpose [U: Blackwell's MX formats may skip the transpose]), scales included
        (:data:`models.studies.workload.QUANTISED_BYTES`); one launch. Weights are cast once
        per step and not charged here [U].
        """
        if not self.low_precision or elements <= 0:
            return 0.0
        nbytes = elements * (2 + 2 * QUANTISED_BYTES[self.dtype])
        return self.scale * max(self._hbm(nbytes), self.kernel_floor)

    def _op_ideal(self, op: Op) -> float:
        if op.kind == "matmul":
            return op.flops / self._rate(op.quantised)[0]
        if op.kind == "attention":
            return op.flops * op.executed / (self.wide_peak * self.attention_efficiency)
        return self._hbm(op.nbytes)

    def time(self, op: Op) -> OpTime:
        """The forward and backward time of one op.

        A quantised product in a low-precision dtype adds the cast of its input to the forward
        and of its output gradient to the backward (:meth:`quantisation_time`).

        Raises
        ------
        DgxTopoError
            For a flash-attention op on a GPU without it.
        """
        if op.kind == "matmul":
            q = op.quantised
            forward = self.gemm_time(op.m, op.n, op.k, op.batch, op.nbytes, quantised=q)
            if op.m and op.n and op.k:
                # Input gradient (m x n)(n x k) and weight gradient (k x m)(m x n).
                backward = (self.gemm_time(op.m, op.k, op.n, op.batch, op.nbytes, quantised=q)
                            + self.gemm_time(op.k, op.n, op.m, op.batch, op.nbytes, quantised=q))
            else:
                forward = self.scale * max(self._op_ideal(op), self._hbm(op.nbytes), self.kernel_floor)
                backward = 2 * forward
            if q and self.low_precision:
                forward += self.quantisation_time(float(op.batch) * op.m * op.k)
                backward += self.quantisation_time(float(op.batch) * op.m * op.n)
            ideal = self.scale * self._op_ideal(op)
            bound = "compute" if ideal >= self.scale * self._hbm(op.nbytes) else "memory"
            return OpTime(op, forward, backward, "launch" if forward <= self.scale * self.kernel_floor
                          else bound, ideal)
        if op.kind == "attention":
            if not self.attention_efficiency:
                raise DgxTopoError(f"{self.gpu.generation} has no flash-attention kernel (FlashAttention-2 "
                                   "needs Ampere or newer): expected software 'fused' or 'eager'")
            compute = op.flops * op.executed / (self.wide_peak * self.attention_efficiency)
            memory = self._hbm(op.nbytes)
            forward = self.scale * max(compute, memory, self.kernel_floor)
            backward = self.scale * max(compute * op.backward, memory * op.backward, self.kernel_floor)
            return OpTime(op, forward, backward, "compute" if compute >= memory else "memory",
                          self.scale * compute)
        memory = self._hbm(op.nbytes)
        floor = op.kernels * self.kernel_floor
        forward = self.scale * max(memory, floor)
        backward = self.scale * max(memory * op.backward, floor)
        return OpTime(op, forward, backward, "memory" if memory >= floor else "launch", self.scale * memory)

    def times(self, ops: Iterable[Op]) -> tuple:
        """:meth:`time` of each op."""
        return tuple(self.time(op) for op in ops)


def compute_model(gpu: Gpu | str, dtype: str, *, stack: str | Software | None = None, workload: Workload | None = None,
                  efficiency: float | None = None, attention_efficiency: float | None = None,
                  memory_efficiency: float | None = None, scale: float = 1.0) -> ComputeModel:
    """The compute model of a GPU part (or generation name) for a dtype.

    Parameters
    ----------
    gpu : Gpu or str
        A part (:func:`gpu_of`) or a generation name.
    dtype : str
    stack : str or Software, optional
        Default: :func:`default_software` of ``workload`` (``fused`` without one).
    workload : optional
        Chooses the default stack.
    efficiency, attention_efficiency, memory_efficiency : float, optional
        Override :data:`GEMM_EFFICIENCY`, :data:`ATTENTION_EFFICIENCY`,
        :data:`DEFAULT_MEMORY_EFFICIENCY`; fractions in (0, 1].
    scale : float
        Multiplier on every kernel's time, in (0, :data:`MAX_SCALE`].

    Raises
    ------
    UnsupportedDtypeError, UnknownGenerationError, DgxTopoError
        For a dtype the GPU lacks, an unknown generation, a fraction outside (0, 1], a scale
        outside (0, :data:`MAX_SCALE`], or flash attention on a GPU without it.
    """
    g = generation(gpu)
    g.peak_flops(dtype)
    sw = default_software(workload, g) if stack is None else as_software(stack)
    if sw.flash_attention and g.generation not in ATTENTION_EFFICIENCY:
        raise DgxTopoError(f"software 'flash' needs flash attention, which {g.generation} does not run "
                           "(FlashAttention-2 needs Ampere or newer): expected software 'fused' or 'eager'")
    gemm = GEMM_EFFICIENCY[g.generation][dtype] if efficiency is None else _fraction("efficiency", efficiency)
    attention = (ATTENTION_EFFICIENCY.get(g.generation, 0.0) if attention_efficiency is None
                 else _fraction("attention_efficiency", attention_efficiency))
    memory = (MEMORY_EFFICIENCY.get(g.generation, DEFAULT_MEMORY_EFFICIENCY) if memory_efficiency is None
              else _fraction("memory_efficiency", memory_efficiency))
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= MAX_SCALE:
        raise DgxTopoError(f"scale must be a number in (0, {MAX_SCALE:g}], received {scale!r}")
    wide = GEMM_EFFICIENCY[g.generation]["bf16"] if dtype in LOW_PRECISION else 0.0
    return ComputeModel(g, dtype, sw, gemm, attention, memory, KERNEL_FLOOR, float(scale), wide)
