"""Training workloads as data: transformer presets and ResNet-50, their FLOPs and bytes per step.

A workload states the shapes of a model; everything a planner needs follows from them by
closed forms, each with its source:

* parameter counts, from the layer shapes (checked against the released checkpoints' counts);
* the kernels of one layer for one micro-batch (:meth:`Transformer.layer_ops`): matrix
  multiplies with their shapes (``m x k`` by ``k x n``, ``2 m n k`` FLOPs), so that
  :mod:`models.studies.compute` can quantise them into tiles and waves; the attention core,
  either as two batched products with the softmax between them in memory, or as one fused
  (flash) kernel; and memory-bound passes (norms, bias, activation, dropout, residual adds,
  softmax) with the bytes each kernel moves. Which passes are separate kernels is the
  :class:`Software` stack's choice (:data:`SOFTWARE`);
* training FLOPs in both conventions: *model* FLOPs, the backward pass costing twice the
  forward matmuls (one product for the input gradient, one for the weight gradient), so 3
  forwards per step (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section
  2.1: ``6 N`` plus the attention term; the basis of model FLOPs utilisation, MFU); and
  *hardware* FLOPs, which add what recomputation executes again: one forward of the layers
  with full recomputation (Narayanan et al. 2021, "Efficient Large-Scale Language Model
  Training on GPU Clusters Using Megatron-LM", section 5.1: ``96 B s l h^2 (1 + s/(6h) +
  V/(16 l h))`` per iteration, the convention of Megatron's published TFLOP/s), the attention
  core's forward with selective recomputation (Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", section 6: hardware FLOPs utilisation, HFU);
* activation memory per layer (Korthikanti et al. 2022, section 4: ``s b h (34 + 5 a s / h)``
  bytes per layer in 16-bit, ``s b h (10 + 24/t + 5 a s/(h t))`` with tensor parallelism
  ``t``, ``34/t`` per ``sbh`` with sequence parallelism, ``2 s b h`` with full recomputation),
  generalised here to any FFN width, gated FFNs and grouped-query attention by counting the
  same stored tensors.

Attention FLOPs follow Megatron's count (Narayanan et al. 2021): the score and value products
are ``2 s h`` FLOPs per token each, over the full ``s x s`` matrix, for causal (decoder) and
bidirectional (encoder) models alike; a causal flash kernel skips the masked half, which
:mod:`models.studies.compute` charges as time but the FLOP conventions do not count.

Heads: a decoder's language-model head (``head="lm"``: logits over the vocabulary for every
token, fp32 cross-entropy); BERT's pre-training heads (``"mlm"``: the masked-LM transform and
logits on the ``predictions`` masked positions of each sequence only, Devlin et al. 2019 and
Google's reference implementation, plus next-sentence prediction on the pooled first token);
a SQuAD span head (``"span"``: start and end logits per token).

Examples
--------
>>> w = workload("llama3-8b")
>>> w.parameters
8030261248
>>> round(w.training_flops_per_token() / 1e9, 1)
57.9
>>> parse_workload("transformer:layers=2,hidden=64,heads=4,seq=128,vocab=1000").ffn
256
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TypeAlias

from topo.errors import DgxTopoError

from ..engine.results import tidy_records
from .recomputation import FULL, NO_RECOMPUTE, RECOMPUTES, Recompute, as_recompute

__all__ = ["DEFAULT_BUCKET", "DTYPES", "LOW_PRECISION", "QUANTISED_BYTES",
           "is_low_precision", "Op", "matmul_op", "memory_op", "Software", "SOFTWARE", "Transformer",
           "ConvLayer", "CNN", "PRESETS", "MoeNotPlannedError",
           "WORKLOAD_GRAMMAR", "WORKLOAD_LIMITS", "HEADS", "WorkloadError", "UnknownWorkloadError",
           "UnknownDtypeError", "UnknownSoftwareError", "workload", "parse_workload", "dtype_bytes",
           "activation_bytes_per_element", "state_bytes", "optimizer_pass_bytes", "software", "resnet50", "TpLimit",
           "TpConstraint", "tp_limit",
           "with_seq_length"]

#: Bytes per element of each training dtype's matmul operands. ``tf32`` is fp32 storage with
#: the matmuls on TF32 tensor cores (Ampere and later: "NVIDIA A100 Tensor Core GPU
#: Architecture" whitepaper [S104]). fp8 is the matmul input type of Transformer Engine
#: recipes ("Using FP8 with Transformer Engine", NVIDIA Transformer Engine documentation); its
#: activations, weights, gradients and optimizer state stay 16/32-bit, see
#: :func:`activation_bytes_per_element` and :func:`models.studies.planner.memory`.
#: ``mxfp8`` and ``nvfp4`` are Blackwell's block-scaled formats (OCP Microscaling Formats (MX)
#: v1.0: 8-bit elements with one 8-bit power-of-two scale per 32; NVFP4: 4-bit E2M1 elements
#: with one FP8 E4M3 scale per 16, "Introducing NVFP4 for Efficient and Accurate Low-Precision
#: Inference", NVIDIA Technical Blog 2025); the scales are counted in :data:`QUANTISED_BYTES`.
DTYPES: Mapping[str, float] = MappingProxyType({"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1,
                                               "mxfp8": 1, "nvfp4": 0.5})
#: The dtypes whose products take a quantised copy of their operands while the rest of the
#: step stays 16-bit (Transformer Engine's FP8 and block-scaled recipes; DeepSeek-V3's FP8
#: framework keeps the attention core, embedding, output head, gating and norms in higher
#: precision, DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.3).
LOW_PRECISION = ("fp8", "mxfp8", "nvfp4")
#: Bytes one quantised element occupies with its share of the scales: fp8 per-tensor (one fp32
#: scale per tensor, nothing per element), mxfp8 (1 + 1/32), nvfp4 (1/2 + 1/16). [bytes]
QUANTISED_BYTES: Mapping[str, float] = MappingProxyType({"fp8": 1.0, "mxfp8": 1 + 1 / 32, "nvfp4": 0.5 + 1 / 16})

#: Gradient bucket: PyTorch DDP's default ``bucket_cap_mb=25`` (torch.nn.parallel.DistributedDataParallel). [bytes]
DEFAULT_BUCKET = 25 * 2**20
#: Heads of a transformer (module docstring).
HEADS = ("lm", "mlm", "span")

#: Largest value of each key of a workload spec. Far beyond any published model (the largest
#: preset-like run, Megatron's 1T, has 128 layers and hidden 25,600; Llama 3 has a 128K
#: context and a 128,256 vocabulary), so every count and FLOP figure stays a finite float.
WORKLOAD_LIMITS = MappingProxyType({"layers": 100_000, "hidden": 1_000_000, "heads": 100_000, "seq": 10_000_000,
                   "vocab": 10_000_000, "ffn": 10_000_000, "kv_heads": 100_000,
                   "batch": 1_000_000_000, "predictions": 10_000_000})

_PRESET_NAMES = tuple(["bert-base", "bert-large", "bert-large-128", "bert-large-squad", "gpt2-1.5b",
                 "megatron-8.3b", "gpt3-126m", "gpt3-5b", "gpt3-20b", "gpt3-175b", "llama2-7b",
                 "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "resnet50"])

#: The text grammar of :func:`parse_workload`.
WORKLOAD_GRAMMAR = ("a preset name (" + ", ".join(_PRESET_NAMES) + ") or "
                    "transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V"
                    "[,ffn=F][,kv_heads=K][,gated=0|1][,tied=0|1][,flash=0|1][,causal=0|1]"
                    "[,head=lm|mlm|span][,predictions=P][,batch=B]")


class WorkloadError(DgxTopoError):
    """A workload spec or shape that is malformed or inconsistent."""


class UnknownWorkloadError(WorkloadError):
    """A workload name that is not a preset."""


class MoeNotPlannedError(WorkloadError):
    """A mixture-of-experts workload where only dense transformers and CNNs are modelled (the
    GPU ranking and the step simulation; :func:`models.studies.planner.plan` takes one)."""


class UnknownDtypeError(WorkloadError):
    """A training dtype that is not one of :data:`DTYPES`."""


class UnknownSoftwareError(WorkloadError):
    """A software stack that is not one of :data:`SOFTWARE`."""


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a training dtype's matmul operands (``fp32``, ``tf32``, ``fp16``, ...).

    Raises
    ------
    UnknownDtypeError
    """
    key = str(dtype).strip().lower() if isinstance(dtype, str) else None
    if key not in DTYPES:
        raise UnknownDtypeError(f"unknown dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    return DTYPES[key]


def activation_bytes_per_element(dtype: str) -> int:
    """Bytes per stored activation, weight and gradient element: 4 for fp32 and tf32, else 2.

    fp8 recipes keep activations and weights in 16-bit and cast at each matmul.
    """
    return 4 if dtype_bytes(dtype) == 4 else 2


def state_bytes(dtype: str) -> tuple:
    """(weights, gradients, optimizer state) bytes per parameter of mixed-precision Adam as
    Megatron-LM keeps them, before ZeRO shards them. [bytes]

    Megatron-LM's "Distributed Optimizer" documentation tabulates the bytes per parameter: fp16
    weights with fp16 gradients 20 (4 + 16 / d with the distributed optimizer over d GPUs), bf16
    weights with fp32 gradients 18 (6 + 12 / d), fp32 16 (8 + 8 / d) [U: recalled, not in the
    project's references]. With bf16 the gradients accumulate in fp32, 4 bytes per parameter:
    Megatron-LM's arguments turn ``--accumulate-allreduce-grads-in-fp32`` on for bf16 ("bfloat16
    requires gradient accumulation and all-reduce to be done in fp32",
    megatron/training/arguments.py [U: recalled]), so its data-parallel reduction (the all_reduce,
    or the distributed optimizer's reduce_scatter) runs on that fp32 buffer: the planner prices
    every gradient collective at this table's gradient bytes and every parameter all_gather (the
    distributed optimizer's after the step, ZeRO 3's before each pass) at its weight bytes (the
    step's ``dp_comm``, its step graphs' buckets). The optimizer holds the fp32 master weights and
    two moments (12). With fp16 the gradients stay fp16 (reduced in fp16) and the optimizer copies
    them to fp32 beside its 12 (16). The low-precision dtypes (fp8, mxfp8, nvfp4) train with bf16
    weights (Transformer Engine's recipes cast at each product; DeepSeek-V3 keeps master weights and
    gradients in fp32, arXiv 2412.19437 section 3.3): as bf16, their gradients reduced in fp32 and
    their bf16 weights gathered (Megatron-Core's ``--fp8-param-gather``, which keeps and gathers fp8
    weights, is an option not modelled [U]). Their fp8 weights are cast for each product and not
    held [U], so the 128 x 128 blocks' scales (4 bytes per 16,384 weights) take no memory here.

    >>> state_bytes("bf16"), state_bytes("fp8"), state_bytes("fp16"), state_bytes("tf32")
    ((2, 4, 12), (2, 4, 12), (2, 2, 16), (4, 4, 8))
    """
    if activation_bytes_per_element(dtype) == 4:
        return 4, 4, 8
    if str(dtype).strip().lower() == "fp16":
        return 2, 2, 16
    return 2, 4, 12


def optimizer_pass_bytes(dtype: str) -> int:
    """Memory traffic of the optimizer step per local parameter, from :func:`state_bytes`'
    table: one fused Adam pass (Apex's and Transformer Engine's ``FusedAdam``, the multi-tensor
    kernels Megatron-LM steps with [U: recalled]) reads each gradient and the optimizer state and
    writes the optimizer state back, then writes the 16-bit weight it casts from the fp32 master;
    with fp32 weights the weights are the master, read and written in place. [bytes]

    bf16 (and the low-precision dtypes): gradient 4, master and moments 12 read and 12 written,
    weight 2 written: 30. fp16: gradient 2, the fp32 copy of it with the master and moments 16
    read and 16 written (the copy written when made, read by Adam), weight 2: 36. fp32 and tf32:
    gradient 4, the moments 8 read and 8 written, the weight 4 read and 4 written: 28. Not
    counted: Megatron-LM's gradient-norm pass for clipping (reads the gradients again) and the
    zeroing of the gradient buffer before the next step (writes them) [U].

    >>> [optimizer_pass_bytes(dtype) for dtype in ("bf16", "fp8", "fp16", "fp32")]
    [30, 30, 36, 28]
    """
    weight, grad, optimizer = state_bytes(dtype)
    in_place = weight == 4  # no master copy: the optimizer updates the fp32 weights themselves
    return grad + 2 * optimizer + (2 if in_place else 1) * weight


def is_low_precision(dtype: str) -> bool:
    """Whether a dtype's products run on quantised operands (:data:`LOW_PRECISION`).

    Raises
    ------
    UnknownDtypeError
    """
    dtype_bytes(dtype)
    return str(dtype).strip().lower() in LOW_PRECISION


@dataclass(frozen=True, slots=True)
class Software:
    """Which operations of a layer a training stack fuses into one kernel.

    Attributes
    ----------
    name : str
    description : str
    fused_softmax : bool
        Scale, mask and softmax of the attention scores in one kernel (else three; the
        attention dropout is a kernel of its own either way).
    fused_elementwise : bool
        Bias + activation in one kernel and bias + dropout + residual add in one (else a
        kernel each).
    flash_attention : bool
        The attention core (scores, softmax, weighted values) is one kernel that never writes
        the ``s x s`` scores to memory (Dao et al. 2022, "FlashAttention"; FlashAttention-2
        needs Ampere or newer [S112]).
    """

    name: str
    description: str
    fused_softmax: bool
    fused_elementwise: bool
    flash_attention: bool


#: The software stacks, oldest first. Layer norm is one kernel in every one (apex's
#: FusedLayerNorm, used since Megatron-LM 2019).
SOFTWARE: Mapping[str, Software] = MappingProxyType({s.name: s for s in (
    Software("eager", "2019 style (Megatron-LM 2019, PyTorch eager with apex): the attention scores' "
             "scale, mask, softmax and dropout, and each bias, activation, dropout and residual add "
             "are separate kernels", False, False, False),
    Software("fused", "Megatron-LM 2020-2022 (Narayanan et al. 2021, Korthikanti et al. 2022): fused "
             "scale-mask-softmax, bias-GeLU and bias-dropout-add kernels; the attention scores are "
             "materialised", True, True, False),
    Software("flash", "2023 on (Megatron-Core, Transformer Engine, NeMo): fused elementwise kernels "
             "and flash attention, no s x s tensor in memory", True, True, True),
)})


def software(name: str | Software) -> Software:
    """A stack of :data:`SOFTWARE` by name (a :class:`Software` as is).

    Raises
    ------
    UnknownSoftwareError
    """
    if isinstance(name, Software):
        return name
    key = str(name).strip().lower()
    if key not in SOFTWARE:
        raise UnknownSoftwareError(f"unknown software stack {str(name)[:40]!r}: expected one of "
                                   f"{', '.join(SOFTWARE)}")
    return SOFTWARE[key]


@dataclass(frozen=True, slots=True)
class Op:
    """One kernel (or one batched product) of a forward pass.

    Attributes
    ----------
    name : str
    kind : str
        ``"matmul"`` (a product on tensor cores, quantised into tiles), ``"attention"`` (a
        fused flash-attention kernel) or ``"memory"`` (elementwise / normalisation / softmax:
        bound by the bytes it moves).
    flops : float
        Forward FLOPs as the conventions count them. [FLOP]
    nbytes : float
        Bytes read and written by the forward kernel(s). [bytes]
    m, n, k : int
        A product's shape, ``(m x k) @ (k x n)`` (0 for other kinds).
    batch : int
        Independent products of that shape (attention heads times sequences).
    kernels : int
        Kernels the op launches in the forward pass.
    executed : float
        Fraction of ``flops`` the kernel executes (a causal flash kernel skips the masked half
        of the score matrix: 0.5).
    backward : float
        Backward work over forward work: FLOPs for attention (a flash backward recomputes the
        scores: 2.5), bytes for memory passes (1.5: the backward reads the saved tensor and the
        incoming gradient and writes one gradient, where the forward moves two tensors [U]).
        Products do not use it: their backward is the two transposed products.
    quantised : bool
        A product that runs in the step's low-precision dtype when it has one
        (:data:`LOW_PRECISION`); False for the attention core and the output head, which FP8
        recipes keep in 16-bit (:data:`LOW_PRECISION`'s sources).
    """

    name: str
    kind: str
    flops: float
    nbytes: float
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    kernels: int = 1
    executed: float = 1.0
    backward: float = 2.0
    quantised: bool = True


def matmul_op(name: str, m: int, n: int, k: int, elem: float, batch: int = 1, *, quantised: bool = True) -> Op:
    """``batch`` products ``(m x k) @ (k x n)``: ``2 m n k`` FLOPs each; operands read, product
    written (``elem`` bytes per element). ``batch`` > 1 is a batched or grouped product (heads,
    or the experts of a MoE layer held by one GPU)."""
    return Op(name, "matmul", 2.0 * batch * m * n * k, float(elem) * batch * (m * k + k * n + m * n),
              m=int(m), n=int(n), k=int(k), batch=int(batch), quantised=quantised)


def memory_op(name: str, nbytes: float, kernels: int = 1) -> Op:
    """A memory-bound pass moving ``nbytes`` in ``kernels`` launches (its backward 1.5 times the bytes)."""
    return Op(name, "memory", 0.0, float(nbytes), kernels=int(kernels), backward=1.5)


_matmul, _memory = matmul_op, memory_op


def _recompute(value, *, dense: bool) -> Recompute:
    """``value`` (a name or a strategy object) read once as its :class:`Recompute
    <models.studies.recomputation.Recompute>`; a dense workload refuses the strategies made for
    mixture-of-experts layers (``moe_only``: their modules name MoE and MLA tensors)."""
    rc = as_recompute(value)
    if rc is None or (dense and rc.moe_only):
        names = [r.name for r in RECOMPUTES if not (dense and r.moe_only)]
        raise WorkloadError(f"recompute must be {', '.join(map(repr, names[:-1]))} or {names[-1]!r} "
                            f"(or a Recompute), received {value!r}")
    return rc


def _flag(recompute: bool | str | Recompute) -> str | Recompute:
    """``training_flops_per_token``'s ``recompute``: True and False as full and no recomputation."""
    if recompute is True or recompute is False:
        return FULL if recompute else NO_RECOMPUTE
    return recompute


@dataclass(frozen=True, slots=True)
class Transformer:
    """A transformer encoder or decoder stack.

    Attributes
    ----------
    name : str
    layers, hidden, heads : int
        ``l``, ``h``, ``a``.
    seq : int
        Sequence length ``s`` [tokens].
    vocab : int
        ``V``.
    ffn : int
        FFN inner width ``f`` (4 h when omitted).
    kv_heads : int
        Key/value heads (grouped-query attention when fewer than ``heads``).
    gated : bool
        SwiGLU-style FFN (three ``h x f`` matrices) instead of two.
    tied : bool
        Output projection shares the input embedding.
    position_embeddings : int
        Rows of a learned position table (0 for rotary).
    biases : bool
        Linear layers and norms have biases (GPT/BERT); Llama has none and RMSNorm.
    extra_parameters : int
        Parameters outside the stack counted by the released checkpoint (BERT's pooler and
        token-type table).
    flash_attention : bool
        The model is trained with flash attention (the default software stack is then
        ``flash``, else ``fused``).
    dropout : bool
        Dropout masks are stored (Korthikanti et al. 2022 count them).
    global_batch : int
        The published global batch [sequences], the default of :func:`models.studies.planner.plan`.
    source : str
    causal : bool
        Decoder (causal attention) rather than encoder (bidirectional).
    head : str
        One of :data:`HEADS`.
    predictions : int
        Masked positions per sequence of an ``mlm`` head (Google's BERT: 20 at 128 tokens, 80
        at 512).
    rotary : bool
        Rotary position embeddings applied to Q and K in each layer (Su et al. 2021, "RoFormer";
        Llama): one memory-bound pass reading and writing the local Q and K.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int = 0
    kv_heads: int = 0
    gated: bool = False
    tied: bool = True
    position_embeddings: int = 0
    biases: bool = True
    extra_parameters: int = 0
    flash_attention: bool = False
    dropout: bool = True
    global_batch: int = 0
    source: str = ""
    causal: bool = True
    head: str = "lm"
    predictions: int = 0
    rotary: bool = False

    def __post_init__(self):
        for key in ("layers", "hidden", "heads", "seq", "vocab"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise WorkloadError(f"{key} must be a whole number >= 1, received {value!r}")
        if self.ffn == 0:
            object.__setattr__(self, "ffn", 4 * self.hidden)
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.hidden % self.heads:
            raise WorkloadError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.kv_heads < 1 or self.heads % self.kv_heads:
            raise WorkloadError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.ffn < 1:
            raise WorkloadError(f"ffn must be a whole number >= 1, received {self.ffn!r}")
        if self.head not in HEADS:
            raise WorkloadError(f"head must be one of {', '.join(HEADS)}, received {self.head!r}")
        if self.head == "mlm" and not 1 <= self.predictions <= self.seq:
            raise WorkloadError(f"an mlm head needs predictions from 1 to seq ({self.seq}) masked "
                                f"positions per sequence, received {self.predictions!r}")

    kind = "transformer"

    # ------------------------------------------------------------------ shapes and counts
    @property
    def tokens_per_sample(self) -> int:
        """Tokens of one sample (the sequence length)."""
        return self.seq

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V): ``kv_heads x head_dim``."""
        return self.kv_heads * (self.hidden // self.heads)

    @property
    def layer_parameters(self) -> int:
        """Parameters of one layer (attention, FFN, norms)."""
        h, f, kv = self.hidden, self.ffn, self.kv_dim
        attention = h * (h + 2 * kv) + h * h
        ffn = (3 if self.gated else 2) * h * f
        norms = 2 * h * (2 if self.biases else 1)
        biases = (h + 2 * kv + h + (2 * f if self.gated else f) + h) if self.biases else 0
        return attention + ffn + norms + biases

    @property
    def embedding_parameters(self) -> int:
        """Input embedding and learned positions."""
        return self.vocab * self.hidden + self.position_embeddings * self.hidden

    @property
    def head_parameters(self) -> int:
        """The head's own parameters: final norm and untied output projection (``lm``), the
        masked-LM transform, its norm and output bias and the next-sentence classifier (``mlm``;
        BERT is post-LN, no final norm), the span projection (``span``)."""
        h = self.hidden
        if self.head == "mlm":
            return (h * h + h + 2 * h + self.vocab + (0 if self.tied else self.vocab * h)
                    + 2 * h + 2)
        if self.head == "span":
            return 2 * h + 2
        norm = h * (2 if self.biases else 1)
        return norm + (0 if self.tied else self.vocab * h)

    @property
    def parameters(self) -> int:
        """All trainable parameters, as the released checkpoint counts them."""
        return (self.layers * self.layer_parameters + self.embedding_parameters
                + self.head_parameters + self.extra_parameters)

    @property
    def matmul_parameters(self) -> int:
        """Weights that multiply activations: Kaplan's ``N`` with the output projection."""
        h, f, kv = self.hidden, self.ffn, self.kv_dim
        per_layer = h * (h + 2 * kv) + h * h + (3 if self.gated else 2) * h * f
        return self.layers * per_layer + self.vocab * h

    # ---------------------------------------------------------------------- operations
    def layer_ops(self, micro_batch: int, tp: int = 1, elem: int = 2, *,
                  sequence_parallel: bool = False, stack: str | Software = "fused",
                  act: int | None = None) -> tuple:
        """The forward kernels of one layer on one GPU of a tensor-parallel group.

        Megatron's split (Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter
        Language Models Using Model Parallelism", section 3): QKV and FFN-in by columns, the
        output and FFN-out projections by rows, attention by heads; norms, dropout and
        residuals are replicated, or split over the group with sequence parallelism
        (Korthikanti et al. 2022, section 4.2.2).

        Parameters
        ----------
        micro_batch : int
            Sequences per micro-batch ``b``.
        tp : int
            Tensor-parallel degree ``t`` (divides heads, kv_heads and ffn here).
        elem : int
            Bytes per matmul operand element. [bytes]
        sequence_parallel : bool
        stack : str or Software
            Which passes are separate kernels (:data:`SOFTWARE`).
        act : int, optional
            Bytes per activation element of the memory-bound passes (``elem``, but 2 for fp8).

        Returns
        -------
        tuple of Op
        """
        sw = software(stack)
        act = elem if act is None else act
        b, s, h, f, a = micro_batch, self.seq, self.hidden, self.ffn, self.heads
        kv = self.kv_dim
        m = b * s
        d = h // a
        heads = a // tp
        # K/V heads are replicated when tp exceeds them (Megatron's grouped-query attention).
        kv_local = max(kv // tp, d)
        ops = [_matmul("qkv", m, h // tp + 2 * kv_local, h, elem)]
        if sw.flash_attention:
            flops = 2.0 * 2 * b * heads * s * s * d
            ops.append(Op("flash_attention", "attention", flops, float(act) * 4 * m * h / tp,
                          executed=0.5 if self.causal else 1.0, backward=2.5, quantised=False))
        else:
            # Scores and weighted values, per head over the full s x s matrix.
            ops.append(_matmul("scores", s, s, d, act, batch=b * heads, quantised=False))
            scores = float(act) * b * heads * s * s
            masks = (float(b * heads * s * s) if self.dropout else 0.0)  # 1 byte per element
            # Scale, mask and softmax: one kernel fused, three unfused, each reading and writing
            # the scores; the attention dropout stays its own kernel in both (Megatron-LM's
            # ParallelAttention: scale_mask_softmax, then attention_dropout).
            passes = 1 if sw.fused_softmax else 3
            dropout = 2 * scores + masks if self.dropout else 0.0
            ops.append(_memory("softmax", 2 * passes * scores + dropout, passes + (1 if self.dropout else 0)))
            ops.append(_matmul("context", s, d, s, act, batch=b * heads, quantised=False))
        ops += [_matmul("proj", m, h, h // tp, elem),
                _matmul("ffn_in", m, (2 if self.gated else 1) * f // tp, h, elem),
                _matmul("ffn_out", m, h, f // tp, elem)]
        rows = m / (tp if sequence_parallel else 1)
        x = float(act) * rows * h
        mask = rows * h if self.dropout else 0.0
        # Two norms (read and write h each).
        ops.append(_memory("norms", 4 * x, 2))
        # After the projection and after the FFN: bias, dropout, residual add.
        if sw.fused_elementwise:
            per, kernels = 3 * x + mask, 1
        else:
            per = (2 * x if self.biases else 0) + (2 * x + mask if self.dropout else 0) + 3 * x
            kernels = (1 if self.biases else 0) + (1 if self.dropout else 0) + 1
        ops.append(_memory("bias_dropout_residual", 2 * per, 2 * kernels))
        # The activation over f (a gated FFN reads both halves), with its bias.
        fb = float(act) * m * (f // tp)
        if sw.fused_elementwise:
            ops.append(_memory("activation", (3 if self.gated else 2) * fb, 1))
        else:
            bias = 2 * fb * (2 if self.gated else 1) if self.biases else 0.0
            ops.append(_memory("activation", bias + (5 if self.gated else 2) * fb,
                               (2 if self.gated else 1) + (1 if self.biases else 0)))
        if self.rotary:  # read and write the local Q and K (Megatron-Core's fused RoPE kernel: one launch)
            ops.append(_memory("rotary", float(act) * 2 * m * (h // tp + kv_local), 1))
        return tuple(ops)

    def head_ops(self, micro_batch: int, tp: int = 1, elem: int = 2, *, act: int | None = None) -> tuple:
        """Forward kernels outside the layers: the embedding lookup, the head and its loss.

        ``lm``: logits of every token (``m x V/t x h``) and the vocabulary-parallel fp32
        cross-entropy (Megatron); ``mlm``: the transform (``h x h``, GeLU, norm) and logits of
        the masked positions only, next-sentence prediction on the pooled first token;
        ``span``: two logits per token.
        """
        act = elem if act is None else act
        b, h, v = micro_batch, self.hidden, self.vocab
        m = b * self.seq
        ops = [_memory("embedding", float(act) * 2 * m * h, 1)]
        if self.head == "mlm":
            p = b * self.predictions
            ops += [_matmul("mlm_transform", p, h, h, elem),
                    _memory("mlm_gelu_norm", float(act) * 4 * p * h, 2),
                    _matmul("logits", p, -(-v // tp), h, act, quantised=False),
                    _memory("loss", 4.0 * 2 * p * v / tp, 1),
                    _matmul("pooler", b, h, h, elem)]
        elif self.head == "span":
            ops += [_matmul("span_logits", m, 2, h, elem), _memory("loss", 4.0 * 2 * m * 2, 1)]
        else:
            ops += [_memory("final_norm", float(act) * 2 * m * h, 1),
                    _matmul("logits", m, -(-v // tp), h, act, quantised=False),
                    _memory("loss", 4.0 * 2 * m * v / tp, 1)]
        return tuple(ops)

    def logits_bytes(self, micro_batch: int, tp: int = 1) -> float:
        """fp32 logits and their gradient held by the last stage for one micro-batch. [bytes]"""
        rows = micro_batch * {"lm": self.seq, "mlm": self.predictions, "span": self.seq}[self.head]
        width = 2 if self.head == "span" else self.vocab / tp
        return 4.0 * 2 * rows * width

    @staticmethod
    def _products(ops) -> float:
        return sum(op.flops for op in ops if op.kind in ("matmul", "attention"))

    def forward_flops_per_token(self) -> float:
        """Forward matmul FLOPs per token (one GPU, no parallelism). [FLOP]"""
        layer = self._products(self.layer_ops(1, stack="fused"))
        return (self.layers * layer + self._products(self.head_ops(1))) / self.seq

    def recomputed_flops_per_token(self, recompute: str | Recompute = "full") -> float:
        """FLOPs per token that recomputation executes again: the products of the layer kernels
        the strategy runs again (:meth:`Recompute.recomputes
        <models.studies.recomputation.Recompute.recomputes>`; a forward of the layers for
        ``"full"``, of the attention core for ``"selective"``, none for ``"none"``). [FLOP]"""
        rc = _recompute(recompute, dense=True)
        if rc == NO_RECOMPUTE:
            return 0.0
        ops = [op for op in self.layer_ops(1, stack="fused") if rc.recomputes(op.name)]
        return self.layers * self._products(ops) / self.seq

    def training_flops_per_token(self, recompute: bool | str | Recompute = False) -> float:
        """Training FLOPs per token: 3 forwards (model FLOPs), plus what recomputation runs
        again (hardware FLOPs: ``recompute`` ``True`` or ``"full"``, ``"selective"``, a
        strategy object). [FLOP]

        The head is not recomputed (Megatron checkpoints layer inputs only).
        """
        return 3 * self.forward_flops_per_token() + self.recomputed_flops_per_token(_flag(recompute))

    # ----------------------------------------------------------------------- activations
    def activation_bytes(self, micro_batch: int, tp: int = 1, *, sequence_parallel: bool = False,
                         recompute: str | Recompute = "none", flash: bool | None = None) -> float:
        """Activation memory of one layer for one micro-batch on one GPU. [bytes]

        Korthikanti et al. 2022, section 4, in 16-bit: attention ``11 s b h + 5 a s^2 b``, FFN
        ``19 s b h``, norms ``4 s b h``, for ``f = 4h`` and multi-head attention. Here the same
        tensors are counted for any ``f``, gating and ``kv_heads``: attention stores its input
        (2), Q (2), K and V (2 each, scaled by ``kv_dim / h``), the projection input (2), a
        dropout mask (1) and, without flash attention, the scores (2), their dropout mask (1)
        and output (2) per ``a s^2 b``; the FFN stores its input (2), the pre-activation
        (2 per ``f``, twice if gated), the activation output (2 per ``f``) and a dropout mask
        (1). With tensor parallelism the parts inside the parallel region divide by ``t``; the
        norms, their inputs and dropout masks (``10 s b h``) divide only with sequence
        parallelism. The strategy (:class:`~models.studies.recomputation.Recompute`, a name or
        an object of your own) is asked what it keeps, term by term, as the time paths ask it
        what runs again: one running the whole layer again (``recompute="full"``) keeps only the
        layer input (``2 s b h``, divided by ``t`` with sequence parallelism); one dropping
        ``core_attn`` (``"selective"``) drops the ``s^2`` terms; one dropping ``layernorm``
        (Megatron-Core's module: the norms run again from their inputs, which stay stored as the
        residual) drops the norms' outputs, the attention's and the FFN's inputs (``4 s b h``).
        ``flash`` (default: the workload's ``flash_attention``) stores no ``s^2`` term either.
        """
        rc = _recompute(recompute, dense=True)
        flash = self.flash_attention if flash is None else flash
        s, b, h, a, f = self.seq, micro_batch, self.hidden, self.heads, self.ffn
        sbh = s * b * h
        if rc.whole_layer:
            return 2.0 * sbh / (tp if sequence_parallel else 1)
        kv = self.kv_dim / h
        mask = 1 if self.dropout else 0
        # Inside the tensor-parallel region (divided by t): Q, K, V, projection input and the
        # FFN's inner tensors.
        inner = sbh * (2 + 2 * kv + 2 * kv + 2) + s * b * f * ((4 if self.gated else 2) + 2)
        scores = 0.0 if (flash or rc.drops("core_attn")) else a * s * s * b * (2 + mask + 2)
        # Replicated without sequence parallelism: the attention and FFN inputs (2 each: the
        # norms' outputs), two dropout masks, two norm inputs (2 each).
        norm_outputs = 0 if rc.drops("layernorm") else 2 + 2
        outer = sbh * (norm_outputs + 2 * mask + 4)
        return (inner + scores) / tp + outer / (tp if sequence_parallel else 1)


# --------------------------------------------------------------------------- the CNN case
@dataclass(frozen=True, slots=True)
class ConvLayer:
    """One convolution (or the final fully connected layer, ``kernel=1`` on a 1x1 map).

    Attributes
    ----------
    name : str
    cin, cout, kernel, stride : int
    out_hw : int
        Output height = width. [pixels]
    batchnorm : bool
        Followed by batch normalisation (2 trainable parameters per channel).
    bias : bool
    """

    name: str
    cin: int
    cout: int
    kernel: int
    stride: int
    out_hw: int
    batchnorm: bool = True
    bias: bool = False

    @property
    def macs(self) -> int:
        """Multiply-accumulates per image."""
        return self.cin * self.cout * self.kernel ** 2 * self.out_hw ** 2

    @property
    def parameters(self) -> int:
        return (self.cin * self.cout * self.kernel ** 2 + (2 * self.cout if self.batchnorm else 0)
                + (self.cout if self.bias else 0))


@dataclass(frozen=True, slots=True)
class CNN:
    """A convolutional network as its list of layers (data parallel only).

    Attributes
    ----------
    name : str
    conv_layers : tuple of ConvLayer
    image : int
        Input height = width. [pixels]
    global_batch : int
        The published global batch [images].
    source : str
    """

    name: str
    conv_layers: tuple
    image: int = 224
    global_batch: int = 256
    source: str = ""

    kind = "cnn"
    tokens_per_sample = 1  # an image is one sample; tokens/s of a CNN is images/s
    layers = 1  # the whole network is one pipeline unit: a CNN is data parallel here

    @property
    def parameters(self) -> int:
        return sum(layer.parameters for layer in self.conv_layers)

    @property
    def forward_macs(self) -> int:
        """Multiply-accumulates of one forward pass of one image."""
        return sum(layer.macs for layer in self.conv_layers)

    def layer_ops(self, micro_batch: int, tp: int = 1, elem: int = 2, *,
                  sequence_parallel: bool = False, stack: str | Software = "fused",
                  act: int | None = None) -> tuple:
        """Each convolution as an implicit GEMM (``m = batch x output pixels``, ``n = cout``,
        ``k = cin x kernel^2``) and its batchnorm + ReLU as one memory pass (cuDNN's fused
        batchnorm-activation: read and write the map twice, forward statistics and normalise)."""
        act = elem if act is None else act
        ops = []
        for layer in self.conv_layers:
            m = micro_batch * layer.out_hw ** 2
            k = layer.cin * layer.kernel ** 2
            # Implicit GEMM reads the input map once (not the unfolded k x m matrix).
            read = micro_batch * layer.cin * (layer.out_hw * layer.stride) ** 2
            ops.append(Op(layer.name, "matmul", 2.0 * m * layer.cout * k,
                          float(elem) * (read + k * layer.cout + m * layer.cout), m=m, n=layer.cout, k=k))
            if layer.batchnorm:
                ops.append(_memory(layer.name + ".bn_relu", float(act) * 2 * 2 * m * layer.cout))
        return tuple(ops)

    def head_ops(self, micro_batch: int, tp: int = 1, elem: int = 2, *, act: int | None = None) -> tuple:
        return ()

    def logits_bytes(self, micro_batch: int, tp: int = 1) -> float:
        return 0.0

    def recomputed_flops_per_token(self, recompute: str | Recompute = "full") -> float:
        """A full recomputation runs the forward again [U]; selective has nothing to drop."""
        return self.forward_flops_per_token() if _recompute(recompute, dense=True).whole_layer else 0.0

    def forward_flops_per_token(self) -> float:
        """Forward FLOPs per image (``2 x`` MACs). [FLOP]"""
        return 2.0 * self.forward_macs

    def training_flops_per_token(self, recompute: bool | str | Recompute = False) -> float:
        """Training FLOPs per image: 3 forwards (model FLOPs), 4 with full recomputation. [FLOP]"""
        return 3 * self.forward_flops_per_token() + self.recomputed_flops_per_token(_flag(recompute))

    def activation_bytes(self, micro_batch: int, tp: int = 1, *, sequence_parallel: bool = False,
                         recompute: str | Recompute = "none") -> float:
        """Stored activations of one micro-batch: each conv input, BN input and ReLU output. [bytes]

        16-bit maps: every layer keeps its output for batchnorm's backward and the ReLU output
        for the next convolution (2 + 2 bytes per element), plus the network input. Full
        recomputation keeps one map per bottleneck block instead [U].
        """
        rc = _recompute(recompute, dense=True)
        maps = [micro_batch * layer.cout * layer.out_hw ** 2 for layer in self.conv_layers]
        if rc.whole_layer:
            return 2.0 * max(maps) * 4 + 2.0 * micro_batch * 3 * self.image ** 2
        return 2.0 * 2 * sum(maps) + 2.0 * micro_batch * 3 * self.image ** 2


def resnet50() -> CNN:
    """ResNet-50 (He et al. 2016, "Deep Residual Learning for Image Recognition", table 1).

    The bottleneck variant with the stride on the 3x3 convolution (torchvision's layout):
    25,557,032 parameters and 4.09 G multiply-accumulates per 224x224 image (He et al. quote
    "3.8 x 10^9 FLOPs", counting multiply-adds, with the stride on the 1x1 convolution).
    """
    layers = [ConvLayer("conv1", 3, 64, 7, 2, 112)]
    cin, hw = 64, 56  # after the 3x3 max pool
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3)), start=2):
        for block in range(blocks):
            stride = 2 if (block == 0 and stage > 2) else 1
            out_hw = hw // stride
            name = f"conv{stage}_{block + 1}"
            layers += [ConvLayer(name + "a", cin, width, 1, 1, hw),
                       ConvLayer(name + "b", width, width, 3, stride, out_hw),
                       ConvLayer(name + "c", width, 4 * width, 1, 1, out_hw)]
            if block == 0:
                layers.append(ConvLayer(name + "_down", cin, 4 * width, 1, stride, out_hw))
            cin, hw = 4 * width, out_hw
    layers.append(ConvLayer("fc", 2048, 1000, 1, 1, 1, batchnorm=False, bias=True))
    return CNN("resnet50", tuple(layers), 224, 256,
               "He et al. 2016, Deep Residual Learning for Image Recognition (table 1; batch 256)")


_LLAMA3 = MappingProxyType(dict(vocab=128256, kv_heads=8, gated=True, tied=False, biases=False, flash_attention=True,
               dropout=False, seq=8192, rotary=True))
_LLAMA3_SOURCE = ("Llama Team 2024, The Llama 3 Herd of Models (table 3: layers, width, FFN, heads, "
                  "8 KV heads, vocabulary 128K); Meta Llama 3 / 3.1 model cards (8B, 70B, 405B)")
_LLAMA2 = MappingProxyType(dict(vocab=32000, gated=True, tied=False, biases=False, flash_attention=True, dropout=False,
               seq=4096, global_batch=1024, rotary=True))
_LLAMA2_SOURCE = ("Touvron et al. 2023, Llama 2: Open Foundation and Fine-Tuned Chat Models (4K context, "
                  "global batch 4M tokens, GQA for 70B); Meta Llama 2 model configs (layers, width, FFN, "
                  "heads)")
# BERT (Devlin et al. 2019): encoder, learned positions, token types; the released checkpoints
# count the embedding norm (2 h) and, with the pre-training heads, the pooler (h^2 + h).
_BERT = MappingProxyType(dict(vocab=30522, position_embeddings=512, causal=False))
_BERT_SOURCE = ("Devlin et al. 2019, BERT (BASE L=12 H=768 A=12, LARGE L=24 H=1024 A=16; pre-training "
                "batch 256, 90 % of steps at 128 tokens then 512; masked LM on 15 % of tokens, at most "
                "20 per 128-token and 80 per 512-token sequence in Google's reference implementation; "
                "SQuAD fine-tuning at 384 tokens, batch 32)")
_GPT3_SOURCE = ("Brown et al. 2020, Language Models are Few-Shot Learners (table 2.1); NVIDIA NeMo "
                "Framework GPT-3 training configs (126m, 5b, 20b: layers, width, heads, global batch) [U]")


def _bert(name, layers, hidden, heads, seq, *, head="mlm", predictions=0, batch=256, pooler=True):
    extra = 2 * hidden + 2 * hidden + (hidden * hidden + hidden if pooler else 0)
    return Transformer(name, layers, hidden, heads, seq, head=head, predictions=predictions,
                       extra_parameters=extra, global_batch=batch, source=_BERT_SOURCE, **_BERT)


#: Preset workloads by name.
PRESETS: Mapping[str, Workload] = MappingProxyType({w.name: w for w in (
    _bert("bert-base", 12, 768, 12, 512, predictions=80),
    _bert("bert-large", 24, 1024, 16, 512, predictions=80),
    _bert("bert-large-128", 24, 1024, 16, 128, predictions=20),
    _bert("bert-large-squad", 24, 1024, 16, 384, head="span", batch=32, pooler=False),
    Transformer("gpt2-1.5b", 48, 1600, 25, 1024, 50257, position_embeddings=1024, global_batch=512,
                source="Radford et al. 2019, Language Models are Unsupervised Multitask Learners "
                       "(table 2: 48 layers, d_model 1600; batch 512); 1,557,611,200 parameters "
                       "in the released checkpoint (the paper quotes 1542M)"),
    Transformer("megatron-8.3b", 72, 3072, 32, 1024, 51200, position_embeddings=1024, global_batch=512,
                source="Shoeybi et al. 2019, Megatron-LM (table 2: 72 layers, hidden 3072, 32 heads, "
                       "8.3B; vocabulary padded to 51,200; batch 512)"),
    Transformer("gpt3-126m", 12, 768, 12, 2048, 50257, position_embeddings=2048, global_batch=256,
                source=_GPT3_SOURCE),
    Transformer("gpt3-5b", 24, 4096, 32, 2048, 50257, position_embeddings=2048, global_batch=2048,
                source=_GPT3_SOURCE),
    Transformer("gpt3-20b", 44, 6144, 48, 2048, 50257, position_embeddings=2048, global_batch=2048,
                source=_GPT3_SOURCE),
    Transformer("gpt3-175b", 96, 12288, 96, 2048, 50257, position_embeddings=2048, global_batch=1536,
                source="Brown et al. 2020, Language Models are Few-Shot Learners (table 2.1: 96 "
                       "layers, d_model 12288, 96 heads, n_ctx 2048, 175.0B, batch 3.2M tokens)"),
    Transformer("llama2-7b", 32, 4096, 32, ffn=11008, source=_LLAMA2_SOURCE, **_LLAMA2),
    Transformer("llama2-13b", 40, 5120, 40, ffn=13824, source=_LLAMA2_SOURCE, **_LLAMA2),
    Transformer("llama2-70b", 80, 8192, 64, ffn=28672, kv_heads=8, source=_LLAMA2_SOURCE, **_LLAMA2),
    Transformer("llama3-8b", 32, 4096, 32, ffn=14336, global_batch=512, source=_LLAMA3_SOURCE, **_LLAMA3),
    Transformer("llama3-70b", 80, 8192, 64, ffn=28672, global_batch=512, source=_LLAMA3_SOURCE, **_LLAMA3),
    Transformer("llama3-405b", 126, 16384, 128, ffn=53248, global_batch=2048, source=_LLAMA3_SOURCE,
                **_LLAMA3),
    resnet50(),
)})
assert tuple(PRESETS) == _PRESET_NAMES

_FIELDS = MappingProxyType({"layers": "layers", "hidden": "hidden", "heads": "heads", "seq": "seq", "vocab": "vocab",
           "ffn": "ffn", "kv_heads": "kv_heads", "gated": "gated", "tied": "tied",
           "flash": "flash_attention", "causal": "causal", "head": "head",
           "predictions": "predictions", "batch": "global_batch"})
_REQUIRED = ("layers", "hidden", "heads", "seq", "vocab")
_FLAGS = ("gated", "tied", "flash", "causal")
_DIGITS = re.compile(r"[0-9]+")
# Digit strings longer than this are refused as too large without converting them.
_MAX_DIGITS = 18

#: A workload object, for annotations (what :func:`workload` returns).
Workload: TypeAlias = "Transformer | CNN"


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def workload(spec: str | Workload) -> Workload:
    """A workload from a preset name, a spec text or a workload object (returned as is).

    Raises
    ------
    UnknownWorkloadError, WorkloadError
    """
    if isinstance(spec, (Transformer, CNN)):
        return spec
    if getattr(spec, "kind", None) == "moe":  # a models.studies.moe.MoeTransformer
        raise MoeNotPlannedError(f"{spec.name} is a mixture-of-experts workload: expected a dense transformer "
                                 "or a CNN (models.studies.planner.plan takes it; step graphs and the GPU ranking are dense only yet)")
    return parse_workload(spec)


def parse_workload(text: str) -> Workload:
    """Parse ``NAME`` (a preset) or ``transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V[,...]``.

    Optional keys: ``ffn``, ``kv_heads``, ``predictions``, ``batch`` (the global batch),
    ``gated`` / ``tied`` / ``flash`` / ``causal`` (0 or 1) and ``head`` (``lm``, ``mlm`` or
    ``span``). Numbers are plain decimal whole numbers from 1 to :data:`WORKLOAD_LIMITS`.

    Raises
    ------
    UnknownWorkloadError
        For a name that is not a preset.
    WorkloadError
        For anything else malformed, naming what was expected.

    Examples
    --------
    >>> parse_workload("transformer:layers=1000000000,hidden=64,heads=4,seq=8,vocab=10")
    Traceback (most recent call last):
    ...
    models.studies.workload.WorkloadError: workload layers must be a whole number from 1 to 100000, received '1000000000'
    """
    if not isinstance(text, str):
        raise WorkloadError(f"expected a workload spec text, {WORKLOAD_GRAMMAR}; received {text!r}")
    name = _normal(text)
    if name in PRESETS:
        return PRESETS[name]
    head, sep, body = text.strip().partition(":")
    if not sep:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise UnknownWorkloadError(f"unknown workload {shown!r}: expected {WORKLOAD_GRAMMAR}")
    if head.strip().lower() != "transformer":
        raise WorkloadError(f"unknown workload family {head.strip()[:40]!r}: expected {WORKLOAD_GRAMMAR}")
    values: dict = {}
    for item in body.split(","):
        key, eq, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or key not in _FIELDS:
            raise WorkloadError(f"malformed workload item {item[:40]!r}: expected key=value with key in "
                                f"{', '.join(_FIELDS)}")
        if key in values:
            raise WorkloadError(f"workload key {key!r} given twice")
        if key == "head":
            if value.lower() not in HEADS:
                raise WorkloadError(f"workload head must be one of {', '.join(HEADS)}, received {value[:40]!r}")
            values[key] = value.lower()
            continue
        if not _DIGITS.fullmatch(value):
            raise WorkloadError(f"workload {key} must be a plain whole number, received {value[:40]!r}")
        if key in _FLAGS:
            if value not in ("0", "1"):
                raise WorkloadError(f"workload {key} must be 0 or 1, received {value[:40]!r}")
            values[key] = value == "1"
            continue
        limit = WORKLOAD_LIMITS[key]
        if len(value) > _MAX_DIGITS or not 1 <= int(value) <= limit:
            shown = value if len(value) <= 20 else f"{value[:12]}... ({len(value)} digits)"
            raise WorkloadError(f"workload {key} must be a whole number from 1 to {limit}, "
                                f"received {shown!r}")
        values[key] = int(value)
    missing = [k for k in _REQUIRED if k not in values]
    if missing:
        raise WorkloadError(f"workload spec lacks {', '.join(missing)}: expected {WORKLOAD_GRAMMAR}")
    fields = {_FIELDS[k]: v for k, v in values.items()}
    if values.get("flash"):
        fields["dropout"] = False
    return Transformer("transformer", **fields)


def with_seq_length(w: Workload, seq_length: int) -> Workload:
    """The workload trained at another sequence length (``plan --seq-length``): the same
    shapes, ``seq`` replaced; any object with a ``seq`` field (a transformer, dense or MoE).

    Raises
    ------
    WorkloadError
        For a CNN, or a length that is not a whole number from 1 to ``WORKLOAD_LIMITS["seq"]``
        (or below an ``mlm`` head's masked positions).

    Examples
    --------
    >>> with_seq_length(PRESETS["llama3-8b"], 131072).seq
    131072
    >>> with_seq_length(PRESETS["resnet50"], 1024)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    models.studies.workload.WorkloadError: resnet50 is a CNN: a sequence length applies to a transformer, ...
    """
    limit = WORKLOAD_LIMITS["seq"]
    if isinstance(seq_length, bool) or not isinstance(seq_length, int) or not 1 <= seq_length <= limit:
        raise WorkloadError(f"seq_length must be a whole number from 1 to {limit}, received {seq_length!r}")
    if isinstance(w, CNN) or not hasattr(w, "seq"):
        raise WorkloadError(f"{getattr(w, 'name', w)} is a CNN: a sequence length applies to a transformer, "
                            f"received seq_length={seq_length}")
    return replace(w, seq=seq_length)


class TpLimit(enum.Enum):
    """What keeps tensor parallelism from splitting a workload (:func:`tp_limit`); the
    :class:`TpConstraint` holds the count each one met."""

    #: A CNN is data parallel only here (tensor parallel 1).
    CNN = "cnn"
    #: ``tp`` does not divide the attention heads (``value``).
    HEADS = "heads"
    #: ``tp`` does not divide the FFN width (``value``).
    FFN = "ffn"
    #: ``tp`` neither divides nor is a multiple of the K/V heads (``value``).
    KV_HEADS = "kv_heads"


@dataclass(frozen=True, slots=True)
class TpConstraint:
    """Why tensor parallelism ``tp`` cannot split a workload, in numbers (:func:`tp_limit`);
    :func:`models.present.plan_text.tp_limit_note` words it.

    Attributes
    ----------
    limit : TpLimit
    tp : int
        The tensor-parallel degree refused.
    value : int or None
        The count it does not fit: the heads, the FFN width or the K/V heads (None for a CNN).
    """

    limit: TpLimit
    tp: int
    value: int | None = None

    def to_records(self) -> list:
        """One tidy row: the limit's code, the degree and the count it met."""
        return tidy_records({"limit": self.limit.value, "tp": self.tp, "value": self.value})


def tp_limit(w: Workload, tp: int) -> TpConstraint | None:
    """Why tensor parallelism ``tp`` cannot split workload ``w`` (None when it can).

    Heads and the FFN width must divide; K/V heads must divide or be replicated (``tp`` a
    multiple of them, as Megatron does for grouped-query attention); the vocabulary is padded
    (Megatron pads it to a multiple of 128 x tp), so it never blocks.

    Examples
    --------
    >>> tp_limit(PRESETS["gpt2-1.5b"], 2)
    TpConstraint(limit=<TpLimit.HEADS: 'heads'>, tp=2, value=25)
    >>> tp_limit(PRESETS["gpt2-1.5b"], 5) is None
    True
    """
    if tp == 1:
        return None
    if isinstance(w, CNN):
        return TpConstraint(TpLimit.CNN, tp)
    if getattr(w, "kind", None) == "moe":  # a models.studies.moe.MoeTransformer: its dense FFNs and shared experts
        a = w.attention
        for limit, value in ((TpLimit.HEADS, a.heads), (TpLimit.FFN, w.dense_ffn), (TpLimit.FFN, w.shared_ffn)):
            if value and value % tp:
                return TpConstraint(limit, tp, value)
        kv = getattr(a, "kv_heads", None)
        if kv is not None and kv % tp and tp % kv:
            return TpConstraint(TpLimit.KV_HEADS, tp, kv)
        return None
    for limit, value in ((TpLimit.HEADS, w.heads), (TpLimit.FFN, w.ffn)):
        if value % tp:
            return TpConstraint(limit, tp, value)
    if w.kv_heads % tp and tp % w.kv_heads:
        return TpConstraint(TpLimit.KV_HEADS, tp, w.kv_heads)
    return None
