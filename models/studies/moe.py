"""Mixture-of-experts transformers as data: their shapes, parameters, FLOPs and model state.

A :class:`MoeTransformer` states a decoder whose feed-forward blocks are routed experts (after
optional dense first layers), with its attention as an object (:class:`GroupedQueryAttention`
or DeepSeek's :class:`LatentAttention`); everything else follows by closed forms:

* **parameters** as the released checkpoints count them (:attr:`MoeTransformer.parameters`,
  the main model; the multi-token-prediction modules apart in
  :attr:`MoeTransformer.mtp_parameters`, as DeepSeek-V3's 671B excludes its 14B MTP module);
* **active parameters**, those one token uses: every parameter but the routed experts it is
  not sent to (:attr:`MoeTransformer.active_parameters`, embedding table included, the
  convention of the Mixtral, Qwen3, DeepSeek and Kimi model cards); the products' weights
  alone (:attr:`MoeTransformer.active_matmul_parameters`: no embedding lookup, no norms) are
  the ``N`` of the FLOP count;
* **training FLOPs per token** in Megatron's convention (model FLOPs: a forward and a backward
  of twice its products, Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
  on GPU Clusters Using Megatron-LM", section 5.1, and Kaplan et al. 2020 section 2.1):
  ``6 N_active + 6 x sum over layers of the attention core``, where the core's forward is
  ``2 s_eff heads (d_qk + d_v)`` per token (the score and value products over the full
  ``s x s`` matrix as Megatron counts them, ``s_eff = min(s, window)`` on a sliding-window
  layer; MLA's ``d_qk`` is its nope + rope head width, DeepSeek-V3 section 2.1.1), plus the MTP
  modules' own products and attention when they are trained;
* **model state per GPU** with the experts sharded by expert parallelism
  (:func:`model_state`): Megatron-Core's "MoE parallel folding", where the dense layers use
  ``tp x cp x dp`` GPUs and the expert layers fold the same GPUs as ``etp x ep x edp``
  (NVIDIA/Megatron-LM ``megatron/core/transformer/moe/README.md``).

Examples
--------
>>> w = MOE_PRESETS["deepseek-v3"]
>>> round(w.parameters / 1e9, 1), round(w.active_parameters / 1e9, 1)
(671.0, 37.6)
>>> round(MOE_PRESETS["mixtral-8x7b"].parameters / 1e9, 2)
46.7
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeAlias

from ..engine.results import tidy_records
from .workload import Op, WorkloadError, matmul_op, memory_op, state_bytes

__all__ = ["GroupedQueryAttention", "LatentAttention", "Attention", "MoeTransformer", "MoeSpecError",
           "MOE_PRESETS", "ModelState", "model_state", "stage_parameters", "moe_workload", "is_moe_spec", "MOE_GRAMMAR"]


class MoeSpecError(WorkloadError):
    """A mixture-of-experts spec, or a layout of one, that is malformed or inconsistent."""


def _whole(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise MoeSpecError(f"{name} must be a whole number >= {low}, received {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class GroupedQueryAttention:
    """Multi-head attention with ``kv_heads`` key/value heads (grouped-query when fewer).

    Attributes
    ----------
    heads, kv_heads, head_dim : int
        The query width is ``heads x head_dim``, which need not be the hidden width (Qwen3,
        gpt-oss).
    bias : bool
        The Q, K, V and output projections have biases (gpt-oss).
    qk_norm : bool
        RMSNorm on each query and key head (Qwen3: ``head_dim`` weights each).
    sinks : bool
        A learned attention sink per head (gpt-oss: one parameter per head).
    """

    heads: int
    kv_heads: int
    head_dim: int
    bias: bool = False
    qk_norm: bool = False
    sinks: bool = False

    def __post_init__(self):
        for key in ("heads", "kv_heads", "head_dim"):
            _whole(key, getattr(self, key))
        if self.heads % self.kv_heads:
            raise MoeSpecError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")

    @property
    def qk_dim(self) -> int:
        """Width of one query/key head."""
        return self.head_dim

    @property
    def v_dim(self) -> int:
        """Width of one value head."""
        return self.head_dim

    def products(self, hidden: int) -> tuple:
        """The projections of one token, ``(name, k, n)``: a ``k x n`` weight each."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return (("q", hidden, q), ("k", hidden, kv), ("v", hidden, kv), ("o", q, hidden))

    def parameters(self, hidden: int) -> int:
        """Weights, biases, per-head norms and sinks of one layer's attention."""
        weights = sum(k * n for _, k, n in self.products(hidden))
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return (weights + ((q + 2 * kv + hidden) if self.bias else 0)
                + (2 * self.head_dim if self.qk_norm else 0) + (self.heads if self.sinks else 0))


@dataclass(frozen=True, slots=True)
class LatentAttention:
    """Multi-head latent attention (DeepSeek-V2/V3, arXiv 2412.19437 section 2.1.1).

    Queries go through a low-rank ``q_lora_rank`` latent, keys and values through one shared
    ``kv_lora_rank`` latent (what is cached) plus a decoupled RoPE key of ``qk_rope_head_dim``
    shared by all heads; each head's query/key is ``qk_nope_head_dim + qk_rope_head_dim`` wide,
    its value ``v_head_dim``. Products per token (Hugging Face DeepSeek-V3 names): ``q_a``
    (h x q_lora), ``q_b`` (q_lora x heads (nope + rope)), ``kv_a`` (h x (kv_lora + rope)),
    ``kv_b`` (kv_lora x heads (nope + v)), ``o`` (heads v x h); RMSNorms on both latents.
    Training runs the decompressed form (``kv_b`` applied to every token), which is what is
    counted here.
    """

    heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    def __post_init__(self):
        for key in ("heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _whole(key, getattr(self, key))

    @property
    def qk_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def v_dim(self) -> int:
        return self.v_head_dim

    def products(self, hidden: int) -> tuple:
        a = self.heads
        return (("q_a", hidden, self.q_lora_rank), ("q_b", self.q_lora_rank, a * self.qk_dim),
                ("kv_a", hidden, self.kv_lora_rank + self.qk_rope_head_dim),
                ("kv_b", self.kv_lora_rank, a * (self.qk_nope_head_dim + self.v_head_dim)),
                ("o", a * self.v_head_dim, hidden))

    def parameters(self, hidden: int) -> int:
        return sum(k * n for _, k, n in self.products(hidden)) + self.q_lora_rank + self.kv_lora_rank


#: An attention block (what :class:`MoeTransformer` takes).
Attention: TypeAlias = "GroupedQueryAttention | LatentAttention"


@dataclass(frozen=True, slots=True)
class MoeTransformer:
    """A decoder whose FFN blocks are routed experts (module docstring).

    Attributes
    ----------
    name : str
    layers, hidden, vocab, seq : int
        Transformer layers (dense and MoE), model width, vocabulary, training sequence length.
    attention : GroupedQueryAttention or LatentAttention
    experts : int
        Routed experts per MoE layer.
    top_k : int
        Routed experts each token is sent to (``num_experts_per_tok``).
    expert_ffn : int
        Inner width of one expert (SwiGLU: three ``hidden x expert_ffn`` matrices).
    shared_experts : int
        Experts every token goes through besides the routed ones (DeepSeek, Kimi).
    shared_ffn : int
        Inner width of one shared expert (``expert_ffn`` when 0).
    dense_layers : int
        First layers with a dense FFN instead of experts (``first_k_dense_replace``).
    dense_ffn : int
        Inner width of those dense FFNs (SwiGLU).
    sliding_window : int
        Tokens a sliding-window layer attends to (0: none).
    sliding_layers : int
        Layers that use the window (gpt-oss: every other one).
    mtp_layers : int
        Multi-token-prediction modules trained beside the model (DeepSeek-V3: 1), each a
        projection of ``2 h`` to ``h``, two norms and one MoE layer, sharing the embedding and
        the output head.
    router_bias, expert_bias : bool
        The router and the experts' projections have biases (gpt-oss).
    tied : bool
        The output head shares the embedding.
    global_batch : int
        The published global batch [sequences] (0: not published).
    source : str
        Where the architecture is stated.
    routing_groups, group_limit : int
        Group-limited routing (``n_group``, ``topk_group`` of the config): the experts fall in
        ``routing_groups`` groups of consecutive experts and a token's experts come from at most
        ``group_limit`` of them (1 and 1: not limited). DeepSeek-V3 places a group per node, so
        a token reaches at most 4 nodes (its report's node-limited routing, section 2.1.2 [U]), which
        bounds the network traffic of its hierarchical dispatch
        (:mod:`models.studies.planner.dispatcher`).
    """

    name: str
    layers: int
    hidden: int
    vocab: int
    seq: int
    attention: GroupedQueryAttention | LatentAttention
    experts: int
    top_k: int
    expert_ffn: int
    shared_experts: int = 0
    shared_ffn: int = 0
    dense_layers: int = 0
    dense_ffn: int = 0
    sliding_window: int = 0
    sliding_layers: int = 0
    mtp_layers: int = 0
    router_bias: bool = False
    expert_bias: bool = False
    tied: bool = False
    global_batch: int = 0
    source: str = ""
    routing_groups: int = 1
    group_limit: int = 1

    kind = "moe"
    #: Trained with flash attention (the default software stack is ``flash`` where the GPU has it):
    #: every preset's training framework runs fused attention kernels.
    flash_attention = True

    def __post_init__(self):
        for key in ("layers", "hidden", "vocab", "seq", "experts", "top_k", "expert_ffn"):
            _whole(key, getattr(self, key))
        for key in ("shared_experts", "shared_ffn", "dense_layers", "dense_ffn", "sliding_window",
                    "sliding_layers", "mtp_layers", "global_batch"):
            _whole(key, getattr(self, key), 0)
        if not isinstance(self.attention, (GroupedQueryAttention, LatentAttention)):
            raise MoeSpecError(f"attention must be a GroupedQueryAttention or LatentAttention, received "
                               f"{type(self.attention).__name__}")
        if self.top_k > self.experts:
            raise MoeSpecError(f"top_k ({self.top_k}) must be at most the routed experts ({self.experts}): "
                               "a token cannot go to more experts than there are")
        if self.dense_layers > self.layers:
            raise MoeSpecError(f"dense_layers ({self.dense_layers}) must be at most layers ({self.layers})")
        if self.dense_layers and not self.dense_ffn:
            raise MoeSpecError(f"dense_layers ({self.dense_layers}) need their dense_ffn width >= 1, "
                               f"received {self.dense_ffn}")
        if self.sliding_layers > self.layers:
            raise MoeSpecError(f"sliding_layers ({self.sliding_layers}) must be at most layers ({self.layers})")
        if bool(self.sliding_layers) != bool(self.sliding_window):
            raise MoeSpecError(f"sliding_window ({self.sliding_window}) and sliding_layers "
                               f"({self.sliding_layers}) must both be 0 or both >= 1")
        _whole("routing_groups", self.routing_groups)
        _whole("group_limit", self.group_limit)
        if self.experts % self.routing_groups:
            raise MoeSpecError(f"routing_groups ({self.routing_groups}) must divide the routed experts "
                               f"({self.experts}): groups of consecutive experts")
        if self.group_limit > self.routing_groups:
            raise MoeSpecError(f"group_limit ({self.group_limit}) must be at most routing_groups "
                               f"({self.routing_groups})")
        if self.routing_groups > 1 and self.top_k > self.group_limit * (self.experts // self.routing_groups):
            raise MoeSpecError(f"top_k ({self.top_k}) must be at most the {self.group_limit * self.experts // self.routing_groups} "
                               f"experts of group_limit ({self.group_limit}) groups")
        if self.shared_experts and not self.shared_ffn:
            object.__setattr__(self, "shared_ffn", self.expert_ffn)

    # ------------------------------------------------------------------ counts
    @property
    def moe_layers(self) -> int:
        """Layers whose FFN is routed experts."""
        return self.layers - self.dense_layers

    @property
    def group_limited(self) -> bool:
        """Whether routing limits a token's groups (``group_limit < routing_groups``)."""
        return self.group_limit < self.routing_groups

    @property
    def tokens_per_sample(self) -> int:
        return self.seq

    @property
    def expert_parameters(self) -> int:
        """Parameters of one routed expert (SwiGLU, with its biases when it has them)."""
        h, f = self.hidden, self.expert_ffn
        return 3 * h * f + ((2 * f + h) if self.expert_bias else 0)

    @property
    def router_parameters(self) -> int:
        """The router of one MoE layer (``h x experts``, its bias when it has one)."""
        return self.hidden * self.experts + (self.experts if self.router_bias else 0)

    @property
    def shared_parameters(self) -> int:
        """The shared experts of one MoE layer."""
        return self.shared_experts * 3 * self.hidden * self.shared_ffn

    @property
    def attention_parameters(self) -> int:
        """One layer's attention block with its input norm (RMSNorm, ``h``)."""
        return self.attention.parameters(self.hidden) + self.hidden

    def _moe_layer(self, experts: int) -> int:
        """One MoE layer holding ``experts`` routed experts (the FFN norm included)."""
        return (self.attention_parameters + self.hidden + self.router_parameters + self.shared_parameters
                + experts * self.expert_parameters)

    @property
    def dense_layer_parameters(self) -> int:
        return self.attention_parameters + self.hidden + 3 * self.hidden * self.dense_ffn

    @property
    def embedding_parameters(self) -> int:
        return self.vocab * self.hidden

    @property
    def head_parameters(self) -> int:
        """Final norm and the output projection (none when tied)."""
        return self.hidden + (0 if self.tied else self.vocab * self.hidden)

    @property
    def routed_expert_parameters(self) -> int:
        """All routed experts of the model: what expert parallelism shards."""
        return self.moe_layers * self.experts * self.expert_parameters

    @property
    def parameters(self) -> int:
        """All parameters of the main model (MTP modules apart), as the model cards count them."""
        return (self.dense_layers * self.dense_layer_parameters + self.moe_layers * self._moe_layer(self.experts)
                + self.embedding_parameters + self.head_parameters)

    @property
    def mtp_module_parameters(self) -> int:
        """One MTP module: its two norms, the ``2h x h`` projection, one MoE layer and its final
        norm (the embedding and the output head are shared with the model)."""
        h = self.hidden
        return 2 * h + 2 * h * h + self._moe_layer(self.experts) + h

    @property
    def mtp_parameters(self) -> int:
        return self.mtp_layers * self.mtp_module_parameters

    @property
    def active_parameters(self) -> int:
        """Parameters one token uses: all but the routed experts it is not sent to (the
        embedding table included; MTP apart)."""
        return self.parameters - self.moe_layers * (self.experts - self.top_k) * self.expert_parameters

    def _moe_layer_products(self) -> int:
        """Weights of one MoE layer's products a token passes through (router, top-k experts, shared)."""
        h = self.hidden
        return (self.attention_matmul + h * self.experts + self.top_k * 3 * h * self.expert_ffn
                + self.shared_parameters)

    @property
    def attention_matmul(self) -> int:
        """Weights of one layer's attention projections."""
        return sum(k * n for _, k, n in self.attention.products(self.hidden))

    @property
    def active_matmul_parameters(self) -> int:
        """Weights that multiply a token's activations in the main model: attention projections,
        dense FFNs, router, its top-k routed experts, shared experts and the output head
        (Kaplan's ``N`` with the head: no embedding lookup, norms, biases or sinks)."""
        h = self.hidden
        dense = self.attention_matmul + 3 * h * self.dense_ffn
        return self.dense_layers * dense + self.moe_layers * self._moe_layer_products() + self.vocab * h

    @property
    def mtp_active_matmul_parameters(self) -> int:
        """What one token multiplies in the MTP modules (projection, MoE layer, the shared head)."""
        h = self.hidden
        return self.mtp_layers * (2 * h * h + self._moe_layer_products() + self.vocab * h)

    # ------------------------------------------------------------------ FLOPs
    def attention_flops_per_token(self, window: bool = True) -> float:
        """Forward FLOPs of one layer's attention core per token, averaged over the layers
        (scores and weighted values over ``s_eff``, Megatron's full-matrix count). [FLOP]"""
        a = self.attention
        per_position = 2.0 * a.heads * (a.qk_dim + a.v_dim)
        full = self.layers - (self.sliding_layers if window else 0)
        sliding = self.sliding_layers if window else 0
        s_window = min(self.seq, self.sliding_window) if sliding else 0
        return per_position * (full * self.seq + sliding * s_window) / self.layers

    def forward_flops_per_token(self, *, mtp: bool = True) -> float:
        """Forward FLOPs per token: ``2 N_active`` plus the attention cores (and the MTP modules'
        products and attention when ``mtp`` and the model has them). [FLOP]"""
        flops = 2.0 * self.active_matmul_parameters + self.layers * self.attention_flops_per_token()
        if mtp and self.mtp_layers:
            a = self.attention
            flops += (2.0 * self.mtp_active_matmul_parameters
                      + self.mtp_layers * 2.0 * a.heads * (a.qk_dim + a.v_dim) * self.seq)
        return flops

    def training_flops_per_token(self, *, mtp: bool = True) -> float:
        """Model FLOPs of training per token: three forwards (the backward is two). [FLOP]"""
        return 3 * self.forward_flops_per_token(mtp=mtp)

    # ------------------------------------------------------------------ kernels
    def layer_ops(self, micro_batch: int, *, dense: bool = False, sliding: bool = False, tp: int = 1, ep: int = 1,
                  etp: int | None = None, elem: float = 2, act: int = 2, balance: float = 1.0) -> tuple:
        """The forward kernels of one layer on one GPU, for :class:`models.studies.compute.ComputeModel`.

        Attention split by heads over ``tp`` (Megatron); MLA's down-projections ``q_a`` and
        ``kv_a`` are not split. The attention core is one flash kernel over ``s`` positions (half
        executed, causal) or over the window on a ``sliding`` layer, in 16-bit. A MoE layer: the
        router (kept in 16-bit, as DeepSeek-V3 keeps its gating), the permutation of the routed
        token copies to expert order and back (a memory pass each way), the **grouped GEMMs** of
        the ``experts / ep`` experts one GPU holds, each over the tokens routed to it from the
        ``ep`` GPUs of its group (``ep m top_k / experts`` when balanced, times ``balance`` >= 1
        for the busiest GPU) and ``expert_ffn / etp`` wide, which the compute model quantises
        into tiles and waves expert by expert; the shared experts as one product over every
        token. No communication here (dispatch and combine are the layout's).

        Parameters
        ----------
        micro_batch : int
            Sequences per micro-batch ``b``.
        dense : bool
            A dense-FFN layer (the first ``dense_layers``) rather than a MoE one.
        sliding : bool
            A sliding-window layer.
        tp, ep, etp : int
            Tensor-, expert- and expert-tensor-parallel degrees (``etp`` defaults to ``tp``).
        elem, act : float
            Bytes per product operand and per stored activation element.
        balance : float
            Tokens of the busiest GPU's experts over the balanced share (1: force-balanced).

        Raises
        ------
        MoeSpecError
            For a degree that does not divide what it splits, or ``balance`` below 1.
        """
        etp = tp if etp is None else etp
        b = _whole("micro_batch", micro_batch)
        for key, value in (("tp", tp), ("ep", ep), ("etp", etp)):
            _whole(key, value)
        if isinstance(balance, bool) or not isinstance(balance, (int, float)) or not 1 <= balance < math.inf:
            raise MoeSpecError(f"balance must be a number >= 1, received {balance!r}")
        a = self.attention
        if a.heads % tp:
            raise MoeSpecError(f"tp ({tp}) must divide the attention heads ({a.heads})")
        if self.experts % ep:
            raise MoeSpecError(f"ep ({ep}) must divide the routed experts ({self.experts})")
        width = self.dense_ffn if dense else self.expert_ffn
        if width % (tp if dense else etp):
            degree = ("tp", tp) if dense else ("etp", etp)
            raise MoeSpecError(f"{degree[0]} ({degree[1]}) must divide the FFN width ({width})")
        h, s = self.hidden, self.seq
        m = b * s
        heads = a.heads // tp
        ops = []
        for name, k, n in a.products(h):
            split_out = name in ("q", "k", "v", "q_b", "kv_b")
            if name in ("k", "v") and isinstance(a, GroupedQueryAttention):
                n = max(n // tp, a.head_dim)  # K/V heads replicated when tp exceeds them
            elif split_out:
                n //= tp
            elif name == "o":
                k //= tp
            ops.append(matmul_op(name, m, n, k, elem))
        window = min(s, self.sliding_window) if sliding and self.sliding_window else s
        core = 2.0 * b * heads * s * window * (a.qk_dim + a.v_dim)
        ops.append(Op("flash_attention", "attention", core, float(act) * m * heads * (2 * a.qk_dim + 2 * a.v_dim),
                      executed=0.5 if window == s else 1.0, backward=2.5, quantised=False))
        x = float(act) * m * h / tp  # with sequence parallelism when tp > 1
        ops += [memory_op("norms", 4 * x, 2), memory_op("residual", 2 * 3 * x, 2)]
        if dense:
            f = self.dense_ffn // tp
            ops += [matmul_op("ffn_in", m, 2 * f, h, elem), matmul_op("ffn_out", m, h, f, elem),
                    memory_op("activation", 3.0 * act * m * f)]
            return tuple(ops)
        local = self.experts // ep
        copies = m * self.top_k
        per_expert = math.ceil(ep * copies * balance / self.experts)
        fe = self.expert_ffn // etp
        ops += [matmul_op("router", m, self.experts, h, act, quantised=False),
                memory_op("permute", 2.0 * 2 * act * copies * h, 2),
                matmul_op("experts_in", per_expert, 2 * fe, h, elem, batch=local),
                matmul_op("experts_out", per_expert, h, fe, elem, batch=local),
                memory_op("expert_activation", 3.0 * act * local * per_expert * fe)]
        if self.shared_experts:
            fs = self.shared_experts * self.shared_ffn // tp
            ops += [matmul_op("shared_in", m, 2 * fs, h, elem), matmul_op("shared_out", m, h, fs, elem),
                    memory_op("shared_activation", 3.0 * act * m * fs)]
        return tuple(ops)


#: A workload the MoE module understands (what :func:`moe_workload` returns).
MoeWorkload: TypeAlias = "MoeTransformer"


# --------------------------------------------------------------------------- model state
@dataclass(frozen=True, slots=True)
class ModelState:
    """Parameters, gradients and optimizer state of one GPU of the heaviest pipeline stage.

    Attributes
    ----------
    stage : int
        The pipeline stage they belong to (0 first).
    dense_parameters, expert_parameters : float
        Parameters of that stage held by one GPU: the dense part (attention, norms, router,
        shared experts, dense FFNs, embedding and head) over ``tp``, the routed experts over
        ``etp x ep``.
    parameters, gradients, optimizer : float
        [bytes]
    """

    stage: int
    dense_parameters: float
    expert_parameters: float
    parameters: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        """[bytes]"""
        return self.parameters + self.gradients + self.optimizer

    def to_records(self) -> list:
        """One tidy row: the stage, its parameters per GPU (dense, experts) and the bytes.

        Examples
        --------
        >>> row = model_state(MOE_PRESETS["mixtral-8x7b"], ep=8, dp=8).to_records()[0]
        >>> row["stage"], row["expert_parameters"], round(row["total_bytes"] / 1e9, 1)
        (0, 5637144576.0, 113.5)
        """
        return tidy_records({"stage": self.stage, "dense_parameters": self.dense_parameters,
                             "expert_parameters": self.expert_parameters, "parameters_bytes": self.parameters,
                             "gradients_bytes": self.gradients, "optimizer_bytes": self.optimizer,
                             "total_bytes": self.total})


def _stages(w: MoeTransformer, pp: int) -> list:
    """Megatron's even split of the layers over ``pp`` stages, the first stages taking the
    remainder (as the dense planner splits): per stage (dense layers, MoE layers)."""
    base, more = divmod(w.layers, pp)
    counts = [base + (s < more) for s in range(pp)]
    out, start = [], 0
    for n in counts:
        dense = max(0, min(start + n, w.dense_layers) - start)
        out.append((dense, n - dense))
        start += n
    return out


def stage_parameters(w: MoeTransformer, dense_layers: int, moe_layers: int, *, first: bool, last: bool) -> tuple:
    """(dense, routed-expert) parameters of one pipeline stage holding these layers: the first
    stage also holds the embedding, the last the head and the MTP modules (DeepSeek-V3's
    placement). The dense part counts attention, norms, routers, shared experts and dense FFNs."""
    expert_layer = w.experts * w.expert_parameters
    dense = dense_layers * w.dense_layer_parameters + moe_layers * (w._moe_layer(w.experts) - expert_layer)
    experts = moe_layers * expert_layer
    if first:
        dense += w.embedding_parameters
    if last:
        dense += w.head_parameters + w.mtp_layers * (w.mtp_module_parameters - expert_layer)
        experts += w.mtp_layers * expert_layer
    return dense, experts


def model_state(w: MoeTransformer, *, ep: int = 1, tp: int = 1, etp: int | None = None, pp: int = 1,
                dp: int = 1, cp: int = 1, zero: int = 1, dtype: str = "bf16", split=None) -> ModelState:
    """Model state per GPU with the routed experts sharded by expert parallelism ``ep``.

    Megatron-Core's folding: the dense layers run on ``tp x cp x dp`` GPUs per stage, the expert
    layers on the same GPUs as ``etp x ep x edp`` (``etp`` defaults to ``tp``), so ``edp = tp cp dp
    / (etp ep)`` replicas hold each expert. Mixed-precision Adam as the planner counts it, from its
    one table (:func:`models.studies.planner.gpu_memory.state_bytes`): bf16 and the low-precision
    recipes 16-bit weights, fp32 gradients and 12 bytes of optimizer state (fp32 master and two
    moments); fp16 16-bit weights and gradients and 16 bytes of optimizer state; fp32 4 + 4 + 8.
    ZeRO/distributed optimizer: ``zero >= 1`` shards the optimizer state, ``>= 2`` the gradients,
    ``>= 3`` the weights, over ``dp x cp`` for the dense part and over ``edp`` for the experts.
    Stage 0 holds the embedding, the last stage the head and the MTP modules (as DeepSeek-V3 places
    them); the heaviest stage is returned. ``split``, when given, is the model indices of each
    stage's layers (``pp`` of them; :func:`models.studies.planner.parallel.stage_split`'s
    ``stages``) instead of the even split.

    Raises
    ------
    MoeSpecError
        For a degree that is not a whole number >= 1, ``ep`` not dividing the experts, ``etp x
        ep`` not dividing ``tp x cp x dp``, ``pp`` above the layers or ``zero`` outside 0-3.
    """
    etp = tp if etp is None else etp
    for key, value in (("ep", ep), ("tp", tp), ("etp", etp), ("pp", pp), ("dp", dp), ("cp", cp)):
        _whole(key, value)
    if isinstance(zero, bool) or zero not in (0, 1, 2, 3):
        raise MoeSpecError(f"zero must be 0, 1, 2 or 3, received {zero!r}")
    if w.experts % ep:
        raise MoeSpecError(f"ep ({ep}) must divide the routed experts ({w.experts}) of {w.name}")
    dense_group = tp * cp * dp
    if dense_group % (etp * ep):
        raise MoeSpecError(f"etp x ep ({etp} x {ep} = {etp * ep}) must divide tp x cp x dp ({tp} x {cp} x {dp} "
                           f"= {dense_group}): the expert layers fold the dense layers' GPUs")
    if pp > w.layers:
        raise MoeSpecError(f"pp ({pp}) must be at most the layers ({w.layers}) of {w.name}")
    edp = dense_group // (etp * ep)
    weight, grad, optimizer = state_bytes(dtype)
    if split is None:
        stages = _stages(w, pp)
    else:
        if len(split) != pp:
            raise MoeSpecError(f"split must hold the layers of pp ({pp}) stages, received {len(split)}")
        stages = [(sum(1 for i in held if i < w.dense_layers), sum(1 for i in held if i >= w.dense_layers))
                  for held in split]
    best = None
    for s, (dense_layers, moe_layers) in enumerate(stages):
        dense, experts = stage_parameters(w, dense_layers, moe_layers, first=s == 0, last=s == pp - 1)
        d, e = dense / tp, experts / (etp * ep)
        shard_d, shard_e = dp * cp, edp
        params = weight * (d / (shard_d if zero >= 3 else 1) + e / (shard_e if zero >= 3 else 1))
        grads = grad * (d / (shard_d if zero >= 2 else 1) + e / (shard_e if zero >= 2 else 1))
        opt = optimizer * (d / (shard_d if zero >= 1 else 1) + e / (shard_e if zero >= 1 else 1))
        state = ModelState(s, d, e, params, grads, opt)
        if best is None or state.total > best.total:
            best = state
    assert best is not None
    return best


# --------------------------------------------------------------------------- presets
_MIXTRAL_SOURCE = ("Mistral AI, Mixtral-8x7B-v0.1 and Mixtral-8x22B-v0.1 config.json (Hugging Face "
                   "mistralai/...); Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088): 8 experts, top-2")
_DEEPSEEK_SOURCE = ("DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv 2412.19437) section 4.2 and "
                    "config.json of deepseek-ai/DeepSeek-V3: 61 layers, hidden 7168, MLA (128 heads, "
                    "q_lora 1536, kv_lora 512, nope 128, rope 64, v 128), first 3 layers dense (18432), "
                    "256 routed experts top-8 of width 2048 + 1 shared, 1 MTP module, vocab 129280; "
                    "group-limited routing n_group 8, topk_group 4 (at most 4 nodes, section 2.1.2 [U]); "
                    "pre-trained at 4K tokens, batch up to 15,360 sequences")
_QWEN3_SOURCE = ("Qwen Team 2025, Qwen3 Technical Report (arXiv 2505.09388) table 2 and config.json of "
                 "Qwen/Qwen3-30B-A3B and Qwen/Qwen3-235B-A22B: 128 experts, top-8, no shared experts, "
                 "QK-norm, head_dim 128")
_GPT_OSS_SOURCE = ("OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card and config.json of openai/gpt-oss-120b: "
                   "36 layers, hidden 2880, 64 query / 8 KV heads of 64, sliding window of 128 tokens on "
                   "alternate layers, attention sinks, 128 experts top-4 of width 2880 with biases, "
                   "vocab 201088")
_KIMI_SOURCE = ("Moonshot AI 2025, Kimi K2 technical report (arXiv 2507.20534) and config.json of "
                "moonshotai/Kimi-K2-Instruct: the DeepSeek-V3 architecture with 64 heads, 384 experts "
                "top-8 + 1 shared, 1 dense layer, vocab 163840; n_group 1, topk_group 1 (routing not limited) [U]")

#: The MoE presets by name.
MOE_PRESETS: Mapping[str, MoeTransformer] = MappingProxyType({w.name: w for w in (
    MoeTransformer("mixtral-8x7b", 32, 4096, 32000, 4096, GroupedQueryAttention(32, 8, 128),
                   experts=8, top_k=2, expert_ffn=14336, source=_MIXTRAL_SOURCE),
    MoeTransformer("mixtral-8x22b", 56, 6144, 32000, 4096, GroupedQueryAttention(48, 8, 128),
                   experts=8, top_k=2, expert_ffn=16384, source=_MIXTRAL_SOURCE),
    MoeTransformer("deepseek-v3", 61, 7168, 129280, 4096, LatentAttention(128, 1536, 512, 128, 64, 128),
                   experts=256, top_k=8, expert_ffn=2048, shared_experts=1, dense_layers=3,
                   dense_ffn=18432, mtp_layers=1, global_batch=15360, source=_DEEPSEEK_SOURCE,
                   routing_groups=8, group_limit=4),
    MoeTransformer("qwen3-30b-a3b", 48, 2048, 151936, 4096, GroupedQueryAttention(32, 4, 128, qk_norm=True),
                   experts=128, top_k=8, expert_ffn=768, source=_QWEN3_SOURCE),
    MoeTransformer("qwen3-235b-a22b", 94, 4096, 151936, 4096, GroupedQueryAttention(64, 4, 128, qk_norm=True),
                   experts=128, top_k=8, expert_ffn=1536, source=_QWEN3_SOURCE),
    MoeTransformer("gpt-oss-120b", 36, 2880, 201088, 4096,
                   GroupedQueryAttention(64, 8, 64, bias=True, sinks=True), experts=128, top_k=4,
                   expert_ffn=2880, sliding_window=128, sliding_layers=18, router_bias=True,
                   expert_bias=True, source=_GPT_OSS_SOURCE),
    MoeTransformer("kimi-k2", 61, 7168, 163840, 4096, LatentAttention(64, 1536, 512, 128, 64, 128),
                   experts=384, top_k=8, expert_ffn=2048, shared_experts=1, dense_layers=1,
                   dense_ffn=18432, source=_KIMI_SOURCE),
)})

_GQA_KEYS = ("kv_heads", "head_dim")
_MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_MOE_KEYS = ("layers", "hidden", "vocab", "seq", "heads", "experts", "top_k", "expert_ffn", "shared_experts",
             "shared_ffn", "dense_layers", "dense_ffn", "sliding_window", "sliding_layers", "mtp_layers", "batch",
             "routing_groups", "group_limit")
_MOE_REQUIRED = ("layers", "hidden", "vocab", "seq", "heads", "experts", "top_k", "expert_ffn")
# Whole numbers above this are refused (far beyond any model: every count stays a finite float).
_MOE_LIMIT = 100_000_000

#: The text grammar of :func:`moe_workload`.
MOE_GRAMMAR = ("a MoE preset name (" + ", ".join(MOE_PRESETS) + ") or moe:layers=L,hidden=H,vocab=V,seq=S,"
               "heads=A,experts=E,top_k=K,expert_ffn=F[,kv_heads=G][,head_dim=D][,shared_experts=N]"
               "[,shared_ffn=F][,dense_layers=N,dense_ffn=F][,sliding_window=W,sliding_layers=N]"
               "[,mtp_layers=N][,batch=B][,routing_groups=G,group_limit=M], with q_lora_rank, kv_lora_rank, qk_nope_head_dim, "
               "qk_rope_head_dim and v_head_dim for latent attention (MLA)")


def is_moe_spec(text) -> bool:
    """Whether a workload text names a MoE preset or is a ``moe:`` spec (:func:`moe_workload`)."""
    if not isinstance(text, str):
        return isinstance(text, MoeTransformer)
    key = text.strip().lower()
    return key.replace("_", "-") in MOE_PRESETS or key.partition(":")[0].strip() == "moe"


def moe_workload(spec: str | MoeTransformer) -> MoeTransformer:
    """A MoE preset by name, a ``moe:`` spec text (:data:`MOE_GRAMMAR`), or a
    :class:`MoeTransformer` as is.

    Raises
    ------
    MoeSpecError
        Naming what was expected and what was received.

    Examples
    --------
    >>> moe_workload("moe:layers=2,hidden=64,vocab=100,seq=32,heads=4,experts=8,top_k=2,expert_ffn=32").top_k
    2
    >>> moe_workload("moe:layers=2,hidden=64,vocab=100,seq=32,heads=4,experts=8,top_k=9,"
    ...              "expert_ffn=32")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    models.studies.moe.MoeSpecError: top_k (9) must be at most the routed experts (8): a token cannot go ...
    """
    if isinstance(spec, MoeTransformer):
        return spec
    if not isinstance(spec, str):
        raise MoeSpecError(f"expected {MOE_GRAMMAR}; received a {type(spec).__name__}")
    key = spec.strip().lower().replace("_", "-")
    if key in MOE_PRESETS:
        return MOE_PRESETS[key]
    family, sep, body = spec.strip().partition(":")
    if not sep or family.strip().lower() != "moe":
        shown = spec if len(spec) <= 60 else spec[:57] + "..."
        raise MoeSpecError(f"unknown MoE workload {shown!r}: expected {MOE_GRAMMAR}")
    known = _MOE_KEYS + _GQA_KEYS + _MLA_KEYS
    values: dict = {}
    for item in body.split(","):
        name, eq, value = (part.strip() for part in item.partition("="))
        name = name.lower()
        if not eq or name not in known:
            raise MoeSpecError(f"malformed MoE workload item {item.strip()[:40]!r}: expected key=value with key "
                               f"in {', '.join(known)}")
        if name in values:
            raise MoeSpecError(f"MoE workload key {name!r} given twice")
        if not value.isdigit() or not value.isascii() or len(value) > 12 or int(value) > _MOE_LIMIT:
            raise MoeSpecError(f"MoE workload {name} must be a whole number from 0 to {_MOE_LIMIT}, "
                               f"received {value[:20]!r}")
        values[name] = int(value)
    missing = [k for k in _MOE_REQUIRED if k not in values]
    if missing:
        raise MoeSpecError(f"MoE workload spec lacks {', '.join(missing)}: expected {MOE_GRAMMAR}")
    mla = [k for k in _MLA_KEYS if k in values]
    if mla and len(mla) < len(_MLA_KEYS):
        raise MoeSpecError(f"latent attention needs all of {', '.join(_MLA_KEYS)}: received only {', '.join(mla)}")
    if mla and any(k in values for k in _GQA_KEYS):
        raise MoeSpecError("expected either latent attention (q_lora_rank, ...) or grouped-query attention "
                           "(kv_heads, head_dim), received keys of both")
    heads = values.pop("heads")
    if mla:
        attention: GroupedQueryAttention | LatentAttention = LatentAttention(heads, *(values.pop(k) for k in _MLA_KEYS))
    else:
        head_dim = values.pop("head_dim", values["hidden"] // heads if heads else 0)
        attention = GroupedQueryAttention(heads, values.pop("kv_heads", heads), head_dim)
    batch = values.pop("batch", 0)
    return MoeTransformer("moe", attention=attention, global_batch=batch, **values)
