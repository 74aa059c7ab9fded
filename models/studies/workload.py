"""Training workloads as data: transformer presets and ResNet-50, their FLOPs and bytes per step.

A workload states the shapes of a model; everything a planner needs follows from them by
closed forms, each with its source:

* parameter counts, from the layer shapes (checked against the released checkpoints' counts);
* the operations of one layer for one micro-batch (:meth:`Transformer.layer_ops`), each a
  matmul (tensor-core work, FLOPs ``2 M N K``) or a memory-bound elementwise pass (bytes read
  and written), so :mod:`models.studies.compute` can put each on a roofline;
* training FLOPs: the backward pass costs twice the forward matmuls (one product for the
  input gradient, one for the weight gradient) and full recomputation adds one forward, so a
  step is 3 forwards, or 4 with recomputation (Narayanan et al. 2021, "Efficient Large-Scale
  Language Model Training on GPU Clusters Using Megatron-LM", section 5.1: ``96 B s l h^2 (1 +
  s/(6h) + V/(16 l h))`` FLOPs per iteration with recomputation). Per token this is within 1 %
  of Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", section 2.1) ``6 N`` plus
  the attention term, where ``N`` counts the weights that multiply activations;
* activation memory per layer (Korthikanti et al. 2022, "Reducing Activation Recomputation in
  Large Transformer Models", section 4: ``s b h (34 + 5 a s / h)`` bytes per layer in 16-bit,
  ``s b h (10 + 24/t + 5 a s/(h t))`` with tensor parallelism ``t``, ``34/t`` per ``sbh`` with
  sequence parallelism, ``2 s b h`` with full recomputation), generalised here to any FFN
  width, gated FFNs and grouped-query attention by counting the same stored tensors.

Attention follows Megatron's count (Narayanan et al. 2021): the score and value products are
``2 s h`` FLOPs per token each, over the full ``s x s`` matrix. A workload with
``flash_attention`` (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact
Attention with IO-Awareness") stores no ``s x s`` tensor; its extra backward recomputation of
the scores is not counted (as Megatron's MFU convention does not count it).

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

import re
from dataclasses import dataclass
from types import MappingProxyType

from topo.errors import DgxTopoError

__all__ = ["DTYPES", "Op", "Transformer", "ConvLayer", "CNN", "PRESETS", "WORKLOAD_GRAMMAR",
           "WorkloadError", "UnknownWorkloadError", "UnknownDtypeError", "workload",
           "parse_workload", "dtype_bytes", "resnet50", "format_workload", "tp_constraint"]

#: Bytes per element of each training dtype. fp8 is the matmul input type of Transformer
#: Engine recipes ("Using FP8 with Transformer Engine", NVIDIA Transformer Engine
#: documentation); its weights, gradients and optimizer state stay 16/32-bit, see
#: :func:`models.studies.planner.memory`.
DTYPES: dict[str, int] = MappingProxyType({"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1})

#: The text grammar of :func:`parse_workload`.
WORKLOAD_GRAMMAR = ("a preset name (" + ", ".join(
    ["bert-large", "gpt2-1.5b", "megatron-8.3b", "gpt3-175b", "llama3-8b", "llama3-70b",
     "llama3-405b", "resnet50"]) + ") or transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V"
    "[,ffn=F][,kv_heads=K][,gated=0|1][,tied=0|1][,flash=0|1][,batch=B]")


class WorkloadError(DgxTopoError):
    """A workload spec or shape that is malformed or inconsistent."""


class UnknownWorkloadError(WorkloadError):
    """A workload name that is not a preset."""


class UnknownDtypeError(WorkloadError):
    """A training dtype that is not one of :data:`DTYPES`."""


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a training dtype (``fp32``, ``fp16``, ``bf16``, ``fp8``).

    Raises
    ------
    UnknownDtypeError
    """
    key = str(dtype).strip().lower() if isinstance(dtype, str) else dtype
    if key not in DTYPES:
        raise UnknownDtypeError(f"unknown dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    return DTYPES[key]


@dataclass(frozen=True, slots=True)
class Op:
    """One operation of a forward pass, for the roofline.

    Attributes
    ----------
    name : str
    kind : str
        ``"matmul"`` (tensor-core product) or ``"memory"`` (elementwise / normalisation /
        softmax: bound by the bytes it moves).
    flops : float
        Forward FLOPs. [FLOP]
    nbytes : float
        Bytes read and written by the forward pass (16-bit activations unless stated). [bytes]
    """

    name: str
    kind: str
    flops: float
    nbytes: float


def _matmul(name, m, n, k, elem) -> Op:
    """``(m x k) @ (k x n)``: ``2 m n k`` FLOPs; reads both operands, writes the product."""
    return Op(name, "matmul", 2.0 * m * n * k, float(elem) * (m * k + k * n + m * n))


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
        No ``s x s`` tensor is stored or moved (Dao et al. 2022).
    dropout : bool
        Dropout masks are stored (Korthikanti et al. 2022 count them).
    global_batch : int
        The published global batch [sequences], the default of :func:`models.studies.planner.plan`.
    source : str
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
        """Final norm and the untied output projection."""
        norm = self.hidden * (2 if self.biases else 1)
        return norm + (0 if self.tied else self.vocab * self.hidden)

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
                  sequence_parallel: bool = False) -> tuple:
        """The forward operations of one layer on one GPU of a tensor-parallel group.

        Megatron's split (Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter
        Language Models Using Model Parallelism", section 3): QKV and FFN-in by columns, the
        output and FFN-out projections by rows, attention by heads; norms and residuals are
        replicated (or split with sequence parallelism, which :mod:`models.studies.planner` charges).

        Parameters
        ----------
        micro_batch : int
            Sequences per micro-batch ``b``.
        tp : int
            Tensor-parallel degree ``t`` (divides heads, kv_heads and ffn here).
        elem : int
            Bytes per activation element. [bytes]
        sequence_parallel : bool
            Norms and residuals split over the group (Korthikanti et al. 2022, section 4.2.2).

        Returns
        -------
        tuple of Op
        """
        b, s, h, f, a = micro_batch, self.seq, self.hidden, self.ffn, self.heads
        kv = self.kv_dim
        m = b * s
        d = h // a
        # K/V heads are replicated when tp exceeds them (Megatron's grouped-query attention).
        kv_local = max(kv // tp, d)
        ops = [
            _matmul("qkv", m, h // tp + 2 * kv_local, h, elem),
            # Scores and weighted values, per head over the full s x s matrix (Megatron's count).
            Op("attention", "matmul", 2.0 * 2 * b * (a // tp) * s * s * d,
               float(elem) * (0 if self.flash_attention else 2 * b * (a // tp) * s * s)
               + float(elem) * 4 * m * h / tp),
            _matmul("proj", m, h, h // tp, elem),
            _matmul("ffn_in", m, (2 if self.gated else 1) * f // tp, h, elem),
            _matmul("ffn_out", m, h, f // tp, elem),
        ]
        if not self.flash_attention:
            # Softmax (+ dropout) read and write the score matrix.
            ops.append(Op("softmax", "memory", 0.0, float(elem) * 2 * b * (a // tp) * s * s))
        # Two norms and two residual adds over h, the activation over f (read 2f if gated).
        ops.append(Op("norms+residuals", "memory", 0.0, float(elem) * m * h * (2 * 2 + 2 * 3)
                      / (tp if sequence_parallel else 1)))
        ops.append(Op("activation", "memory", 0.0,
                      float(elem) * m * (f // tp) * (3 if self.gated else 2)))
        return tuple(ops)

    def head_ops(self, micro_batch: int, tp: int = 1, elem: int = 2) -> tuple:
        """Forward operations outside the layers: the output projection (logits) and loss."""
        m = micro_batch * self.seq
        return (_matmul("logits", m, -(-self.vocab // tp), self.hidden, elem),
                Op("loss", "memory", 0.0, 4.0 * 2 * m * self.vocab / tp))

    def forward_flops_per_token(self) -> float:
        """Forward matmul FLOPs per token (one GPU, no parallelism). [FLOP]"""
        ops = self.layer_ops(1)
        layer = sum(op.flops for op in ops if op.kind == "matmul")
        head = sum(op.flops for op in self.head_ops(1) if op.kind == "matmul")
        return (self.layers * layer + head) / self.seq

    def training_flops_per_token(self, recompute: bool = False) -> float:
        """Training FLOPs per token: 3 forwards, 4 with full recomputation. [FLOP]

        The output projection is not recomputed (Megatron checkpoints layer inputs only).
        """
        head = sum(op.flops for op in self.head_ops(1) if op.kind == "matmul") / self.seq
        layers = self.forward_flops_per_token() - head
        return (4 if recompute else 3) * layers + 3 * head

    # ----------------------------------------------------------------------- activations
    def activation_bytes(self, micro_batch: int, tp: int = 1, *, sequence_parallel: bool = False,
                         recompute: str = "none") -> float:
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
        parallelism. ``recompute="full"`` keeps only the layer input (``2 s b h``, divided by
        ``t`` with sequence parallelism); ``"selective"`` drops the ``s^2`` terms.
        """
        if recompute not in ("none", "full", "selective"):
            raise WorkloadError(f"recompute must be 'none', 'full' or 'selective', received {recompute!r}")
        s, b, h, a, f = self.seq, micro_batch, self.hidden, self.heads, self.ffn
        sbh = s * b * h
        if recompute == "full":
            return 2.0 * sbh / (tp if sequence_parallel else 1)
        kv = self.kv_dim / h
        mask = 1 if self.dropout else 0
        # Inside the tensor-parallel region (divided by t): Q, K, V, projection input and the
        # FFN's inner tensors.
        inner = sbh * (2 + 2 * kv + 2 * kv + 2) + s * b * f * ((4 if self.gated else 2) + 2)
        scores = 0.0 if (self.flash_attention or recompute == "selective") else \
            a * s * s * b * (2 + mask + 2)
        # Replicated without sequence parallelism: the attention and FFN inputs (2 each), two
        # dropout masks, two norm inputs (2 each).
        outer = sbh * (2 + 2 + 2 * mask + 4)
        return (inner + scores) / tp + outer / (tp if sequence_parallel else 1)

    def describe(self) -> str:
        """One line: the shapes and parameter count."""
        extra = [f"ffn={self.ffn}"]
        if self.kv_heads != self.heads:
            extra.append(f"kv_heads={self.kv_heads}")
        if self.gated:
            extra.append("gated")
        if self.flash_attention:
            extra.append("flash attention")
        return (f"{self.name}: transformer layers={self.layers} hidden={self.hidden} heads={self.heads} "
                f"seq={self.seq} vocab={self.vocab} {' '.join(extra)}; "
                f"{self.parameters / 1e9:.3f} B parameters")


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
                  sequence_parallel: bool = False) -> tuple:
        """Each convolution as an implicit GEMM and its batchnorm + ReLU as a memory pass."""
        ops = []
        for layer in self.conv_layers:
            m = micro_batch * layer.out_hw ** 2
            k = layer.cin * layer.kernel ** 2
            # Implicit GEMM reads the input map once (not the unfolded k x m matrix).
            read = micro_batch * layer.cin * (layer.out_hw * layer.stride) ** 2
            ops.append(Op(layer.name, "matmul", 2.0 * m * layer.cout * k,
                          float(elem) * (read + k * layer.cout + m * layer.cout)))
            if layer.batchnorm:
                ops.append(Op(layer.name + ".bn_relu", "memory", 0.0, float(elem) * 2 * 2 * m * layer.cout))
        return tuple(ops)

    def head_ops(self, micro_batch: int, tp: int = 1, elem: int = 2) -> tuple:
        return ()

    def forward_flops_per_token(self) -> float:
        """Forward FLOPs per image (``2 x`` MACs). [FLOP]"""
        return 2.0 * self.forward_macs

    def training_flops_per_token(self, recompute: bool = False) -> float:
        """Training FLOPs per image: 3 forwards (4 with recomputation). [FLOP]"""
        return (4 if recompute else 3) * self.forward_flops_per_token()

    def activation_bytes(self, micro_batch: int, tp: int = 1, *, sequence_parallel: bool = False,
                         recompute: str = "none") -> float:
        """Stored activations of one micro-batch: each conv input, BN input and ReLU output. [bytes]

        16-bit maps: every layer keeps its output for batchnorm's backward and the ReLU output
        for the next convolution (2 + 2 bytes per element), plus the network input. Full
        recomputation keeps one map per bottleneck block instead [U].
        """
        if recompute not in ("none", "full", "selective"):
            raise WorkloadError(f"recompute must be 'none', 'full' or 'selective', received {recompute!r}")
        maps = [micro_batch * layer.cout * layer.out_hw ** 2 for layer in self.conv_layers]
        if recompute == "full":
            return 2.0 * max(maps) * 4 + 2.0 * micro_batch * 3 * self.image ** 2
        return 2.0 * 2 * sum(maps) + 2.0 * micro_batch * 3 * self.image ** 2

    def describe(self) -> str:
        return (f"{self.name}: CNN of {len(self.conv_layers)} weight layers, {self.image}x{self.image} "
                f"input; {self.parameters / 1e6:.2f} M parameters, {self.forward_macs / 1e9:.2f} GMAC "
                "per image forward")


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
               dropout=False, seq=8192))
_LLAMA3_SOURCE = ("Llama Team 2024, The Llama 3 Herd of Models (table 3: layers, width, FFN, heads, "
                  "8 KV heads, vocabulary 128K); Meta Llama 3 / 3.1 model cards (8B, 70B, 405B)")

#: Preset workloads by name.
PRESETS = MappingProxyType({w.name: w for w in (
    Transformer("bert-large", 24, 1024, 16, 512, 30522, position_embeddings=512,
                # Token-type table (2 x h) and the pooler (h x h + h) of the released checkpoint.
                extra_parameters=2 * 1024 + 1024 * 1024 + 1024, global_batch=256,
                source="Devlin et al. 2019, BERT (L=24, H=1024, A=16, 340M quoted; 335,141,888 in "
                       "the released checkpoint; batch 256 sequences)"),
    Transformer("gpt2-1.5b", 48, 1600, 25, 1024, 50257, position_embeddings=1024, global_batch=512,
                source="Radford et al. 2019, Language Models are Unsupervised Multitask Learners "
                       "(table 2: 48 layers, d_model 1600; batch 512); 1,557,611,200 parameters "
                       "in the released checkpoint (the paper quotes 1542M)"),
    Transformer("megatron-8.3b", 72, 3072, 32, 1024, 51200, position_embeddings=1024, global_batch=512,
                source="Shoeybi et al. 2019, Megatron-LM (table 2: 72 layers, hidden 3072, 32 heads, "
                       "8.3B; vocabulary padded to 51,200; batch 512)"),
    Transformer("gpt3-175b", 96, 12288, 96, 2048, 50257, position_embeddings=2048, global_batch=1536,
                source="Brown et al. 2020, Language Models are Few-Shot Learners (table 2.1: 96 "
                       "layers, d_model 12288, 96 heads, n_ctx 2048, 175.0B, batch 3.2M tokens)"),
    Transformer("llama3-8b", 32, 4096, 32, ffn=14336, global_batch=512, source=_LLAMA3_SOURCE, **_LLAMA3),
    Transformer("llama3-70b", 80, 8192, 64, ffn=28672, global_batch=512, source=_LLAMA3_SOURCE, **_LLAMA3),
    Transformer("llama3-405b", 126, 16384, 128, ffn=53248, global_batch=2048, source=_LLAMA3_SOURCE,
                **_LLAMA3),
    resnet50(),
)})

_FIELDS = MappingProxyType({"layers": "layers", "hidden": "hidden", "heads": "heads", "seq": "seq", "vocab": "vocab",
           "ffn": "ffn", "kv_heads": "kv_heads", "gated": "gated", "tied": "tied",
           "flash": "flash_attention", "batch": "global_batch"})
_REQUIRED = ("layers", "hidden", "heads", "seq", "vocab")
_FLAGS = ("gated", "tied", "flash")
_INT = re.compile(r"[0-9]{1,9}")


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def workload(spec):
    """A workload from a preset name, a spec text or a workload object (returned as is).

    Raises
    ------
    UnknownWorkloadError, WorkloadError
    """
    if isinstance(spec, (Transformer, CNN)):
        return spec
    return parse_workload(spec)


def parse_workload(text: str):
    """Parse ``NAME`` (a preset) or ``transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V[,...]``.

    Optional keys: ``ffn``, ``kv_heads``, ``gated`` / ``tied`` / ``flash`` (0 or 1) and
    ``batch`` (the global batch). Values are plain decimal whole numbers.

    Raises
    ------
    UnknownWorkloadError
        For a name that is not a preset.
    WorkloadError
        For anything else malformed, naming what was expected.
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
        if not _INT.fullmatch(value):
            raise WorkloadError(f"workload {key} must be a plain whole number, received {value[:40]!r}")
        number = int(value)
        if key in _FLAGS:
            if number not in (0, 1):
                raise WorkloadError(f"workload {key} must be 0 or 1, received {value!r}")
            number = bool(number)
        elif number < 1:
            raise WorkloadError(f"workload {key} must be >= 1, received {value!r}")
        values[key] = number
    missing = [k for k in _REQUIRED if k not in values]
    if missing:
        raise WorkloadError(f"workload spec lacks {', '.join(missing)}: expected {WORKLOAD_GRAMMAR}")
    fields = {_FIELDS[k]: v for k, v in values.items()}
    if values.get("flash"):
        fields["dropout"] = False
    return Transformer("transformer", **fields)


def format_workload(w) -> str:
    """The workload's one-line description (for the CLI)."""
    return workload(w).describe()


def tp_constraint(w, tp: int) -> str:
    """Why tensor parallelism ``tp`` cannot split workload ``w`` ('' when it can).

    Heads and the FFN width must divide; K/V heads must divide or be replicated (``tp`` a
    multiple of them, as Megatron does for grouped-query attention); the vocabulary is padded
    (Megatron pads it to a multiple of 128 x tp), so it never blocks.
    """
    if tp == 1:
        return ""
    if isinstance(w, CNN):
        return "a CNN is data parallel only here (tensor parallel 1)"
    for what, value in (("heads", w.heads), ("ffn", w.ffn)):
        if value % tp:
            return f"tensor parallel {tp} does not divide {what} ({value})"
    if w.kv_heads % tp and tp % w.kv_heads:
        return f"tensor parallel {tp} neither divides nor is a multiple of kv_heads ({w.kv_heads})"
    return ""

