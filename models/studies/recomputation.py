"""Activation recomputation as strategy objects (:data:`RECOMPUTES`): which kernels of a layer run
again before its backward, and which stored activations that spares.

A layout holds one (``Layout.recompute``; ``plan(..., recompute=...)`` and ``plan --recompute MODE``
take its name, one of :data:`~models.studies.planner.records.RECOMPUTE`, or a :class:`Recompute` of
your own): :func:`as_recompute` reads the name once, and the workloads and the planner ask the object
what stays stored (:meth:`Recompute.drops`), what forward work runs again
(:meth:`Recompute.recomputes`) and which collectives the backward repeats
(:meth:`Recompute.repeated`), never its name. The modules are Megatron-Core's ``--recompute-modules`` vocabulary (with
``--recompute-granularity selective``; Megatron-Core v0.13 on [U: the release that brought
``layernorm``, ``mla_up_proj`` and ``moe_act``]), so a user reads ``deepseek`` as the Megatron flags
that reproduce it:

* :data:`NO_RECOMPUTE` (``none``): every activation stored.
* :data:`SELECTIVE` (``selective``): Megatron's default selective recomputation, ``core_attn``
  (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  section 4.3): the attention core runs again; its ``s^2`` terms are not stored.
* :data:`FULL` (``full``): the whole layer's forward again; only its input stored.
* :data:`DEEPSEEK` (``deepseek``): DeepSeek-V3's scheme (DeepSeek-V3 Technical Report, arXiv
  2412.19437, section 3.2.3 "recomputation of RMSNorm and MLA up-projection" and section 3.3.3
  "low-precision storage": activations cached in FP8 for the backward of the FP8 linear layers, the
  SwiGLU of the MoE recomputed from its cached input) [U: recalled from the report; the project's
  reference (models-moe.md section 2.4) is silent on recomputation]: modules ``layernorm``,
  ``mla_up_proj``, ``moe_act``, and the linear layers' inputs and the MoE SwiGLU's inputs kept in
  the step's low-precision dtype when it has one (:data:`models.studies.workload.QUANTISED_BYTES`;
  16-bit otherwise). For mixture-of-experts workloads (the modules name MoE and MLA parts).

Why a module list and not one more name only: Megatron-Core exposes recomputation this way, so
the objects are the flags users set; ``deepseek`` is one such list with its FP8 caching.

Examples
--------
>>> recompute_named("deepseek").recomputes("kv_b"), recompute_named("deepseek").recomputes("experts_in")
(True, False)
>>> SELECTIVE.recomputes("flash_attention"), FULL.recomputes("ffn_out"), NO_RECOMPUTE.recomputes("norms")
(True, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Recompute", "NO_RECOMPUTE", "SELECTIVE", "FULL", "DEEPSEEK", "RECOMPUTES", "RECOMPUTE_MODULES",
           "SEARCHED", "recompute_named", "as_recompute"]

#: The kernels (op names of :meth:`models.studies.workload.Transformer.layer_ops` and
#: :meth:`models.studies.moe.MoeTransformer.layer_ops`) each Megatron-Core recompute module runs
#: again: ``core_attn`` the attention core, ``layernorm`` the layer's norms, ``mla_up_proj`` MLA's
#: up-projections ``q_b`` and ``kv_b``, ``moe_act`` the routed and shared experts' activation.
RECOMPUTE_MODULES = MappingProxyType({
    "core_attn": frozenset(("flash_attention", "scores", "softmax", "context")),
    "layernorm": frozenset(("norms",)),
    "mla_up_proj": frozenset(("q_b", "kv_b")),
    "moe_act": frozenset(("expert_activation", "shared_activation")),
})


@dataclass(frozen=True)
class Recompute:
    """One recomputation strategy (module docstring).

    Attributes
    ----------
    name : str
        What ``--recompute`` and records call it.
    modules : tuple of str
        Megatron-Core recompute modules (:data:`RECOMPUTE_MODULES`).
    whole_layer : bool
        The layer's whole forward runs again (``full``); ``modules`` is then moot.
    low_precision_cache : bool
        The linear layers' inputs and the MoE SwiGLU's inputs are stored in the step's
        low-precision dtype (when it has one).
    moe_only : bool
        Applies to mixture-of-experts workloads only.
    """

    name: str = "none"
    modules: tuple = ()
    whole_layer: bool = False
    low_precision_cache: bool = False
    moe_only: bool = False

    def __str__(self) -> str:
        return self.name

    def recomputes(self, op: str) -> bool:
        """Whether the kernel named ``op`` of a layer runs again before the layer's backward."""
        return self.whole_layer or any(op in RECOMPUTE_MODULES[m] for m in self.modules)

    def drops(self, module: str) -> bool:
        """Whether the tensors ``module`` produces are recomputed rather than stored."""
        return self.whole_layer or module in self.modules

    def repeated(self, forward: int) -> int:
        """How many of the ``forward`` collectives a layer's forward runs (tensor-parallel
        all-reduces or their sequence-parallel pairs, expert all-to-alls) its backward runs again
        before its own: all of them when the whole forward runs again (a layer's 2 tensor-parallel
        all-reduces of the forward again beside the backward's 2; Shoeybi et al. 2019, "Megatron-LM",
        section 3), none when only modules inside the parallel regions run again."""
        return forward if self.whole_layer else 0


#: Every activation stored (``none``).
NO_RECOMPUTE = Recompute()
#: The attention core (``selective``, Megatron's default module list).
SELECTIVE = Recompute("selective", ("core_attn",))
#: The whole layer (``full``).
FULL = Recompute("full", whole_layer=True)
#: DeepSeek-V3's (``deepseek``).
DEEPSEEK = Recompute("deepseek", ("layernorm", "mla_up_proj", "moe_act"), low_precision_cache=True, moe_only=True)
#: The strategies ``--recompute`` chooses among, in the order :data:`RECOMPUTE` lists their names.
RECOMPUTES = (NO_RECOMPUTE, SELECTIVE, FULL, DEEPSEEK)


#: The strategies a search tries when none is given, in this order: every activation stored and
#: the whole layer again, and DeepSeek-V3's for a mixture-of-experts workload (``moe_only``).
SEARCHED = (NO_RECOMPUTE, DEEPSEEK, FULL)


def recompute_named(name: str, strategies=RECOMPUTES) -> Recompute | None:
    """The strategy of ``strategies`` called ``name``, or None."""
    return next((r for r in strategies if r.name == name), None)


def as_recompute(value) -> Recompute | None:
    """``value`` as a strategy: a :class:`Recompute` (one of your own included) as it is, a name of
    :data:`RECOMPUTES` as its object; None for anything else (the caller names what it expected).

    >>> as_recompute("full") is FULL, as_recompute(SELECTIVE) is SELECTIVE, as_recompute("some")
    (True, True, None)
    """
    if isinstance(value, Recompute):
        return value
    return recompute_named(value) if isinstance(value, str) else None
