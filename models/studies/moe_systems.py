"""DeepSeek-V3 on 256 GPUs of three systems: the best of a bounded set of layouts on each.

The report's section "DeepSeek-V3 on 256 GPUs: GB200 NVL72 vs DGX B200 vs DGX H100" (issue 40,
item 6) as data. Each system's layouts are a fixed, documented candidate set, not the planner's full
search (which covers tensor, context and expert-tensor parallelism too and takes minutes on these
fabrics): no tensor or context parallelism (DeepSeek-V3 was trained with none, DeepSeek-AI 2024,
"DeepSeek-V3 Technical Report", section 3.2), pipeline degrees :data:`MOE_PP`, expert-parallel
degrees :data:`MOE_EP` where they divide the data-parallel degree (Megatron folds the expert group
out of data x context parallel; the planner refuses the rest), ZeRO stages :data:`MOE_ZERO` and
recomputation :data:`MOE_RECOMPUTE`. Every candidate is timed by the planner's analytical first pass
(:func:`models.studies.planner.search` with ``simulate=0``) and ranked as the planner ranks
(:func:`models.studies.planner.layouts.plan_order`).
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.errors import DgxTopoError

from .planner.layouts import plan_order, search
from .recomputation import DEEPSEEK, FULL, NO_RECOMPUTE
from .planner.records import Search

__all__ = ["MOE_WORKLOAD", "MOE_SYSTEMS", "MOE_GPUS", "MOE_PP", "MOE_EP", "MOE_ZERO", "MOE_RECOMPUTE",
           "MOE_SHOWN_WITH",            "SystemLayouts", "MoeComparison", "moe_candidates", "system_layouts", "moe_comparison"]

#: The workload (:mod:`models.studies.moe`'s preset: 671 B parameters, 37 B active per token).
MOE_WORKLOAD = "deepseek-v3"
#: The systems compared (:func:`topo.build` names), each with at least :data:`MOE_GPUS` GPUs; a
#: GB200 NVL72 rack has 72, so four racks give 288 and the job takes the first 256.
MOE_SYSTEMS = ("4xgb200nvl72", "32xdgxb200", "32xdgxh100")
#: The report shows the section when it compares one of these systems (the hosts of :data:`MOE_SYSTEMS`).
MOE_SHOWN_WITH = ("gb200nvl72", "dgxb200", "dgxh100")
#: GPUs of the job on every system.
MOE_GPUS = 256
#: The candidate set: pipeline degrees, expert-parallel degrees (kept where they divide the
#: data-parallel degree ``MOE_GPUS / pp``), ZeRO stages and recomputation.
MOE_PP = (4, 8, 16)
MOE_EP = (8, 16, 32, 64)
MOE_ZERO = (1, 2)
#: Recomputation strategies (:mod:`models.studies.recomputation`): none, DeepSeek-V3's own (norms,
#: MLA up-projections and expert activations again, activations cached in the low-precision dtype;
#: :data:`~models.studies.recomputation.DEEPSEEK`) and full.
MOE_RECOMPUTE = (NO_RECOMPUTE, DEEPSEEK, FULL)


@dataclass(frozen=True, slots=True)
class SystemLayouts:
    """One system's candidates of the section.

    Attributes
    ----------
    system : str
        Its :func:`topo.build` name.
    search : Search or None
        Every candidate evaluated, ranked as the planner ranks (fitting first, by step time);
        ``search.best`` is the section's layout. None where ``error`` says why.
    error : str or None
    """

    system: str
    search: Search | None
    error: str | None = None

    def to_records(self) -> list:
        """The search's rows (:meth:`~models.studies.planner.Search.to_records`), each with its
        ``system``; one row with the ``error`` when refused."""
        if self.search is None:
            return [{"system": self.system, "error": self.error}]
        return [{"system": self.system, **row} for row in self.search.to_records()]


@dataclass(frozen=True, slots=True)
class MoeComparison:
    """The section as data: ``workload`` on ``ngpus`` GPUs of each system.

    Attributes
    ----------
    workload : str
    ngpus : int
    systems : tuple of SystemLayouts
        One per system, in :data:`MOE_SYSTEMS`'s order.
    candidates : int
        Candidate layouts per system (:func:`moe_candidates`).
    """

    workload: str
    ngpus: int
    systems: tuple
    candidates: int

    def to_records(self) -> list:
        """Every system's rows (:meth:`SystemLayouts.to_records`)."""
        return [row for r in self.systems for row in r.to_records()]


def moe_candidates(ngpus: int = MOE_GPUS) -> tuple:
    """The candidate layouts on ``ngpus`` GPUs as :func:`~models.studies.planner.search` options
    (``tp=1, cp=1`` and one ``pp``, ``ep``, ``zero``, ``recompute`` each; ``recompute`` by name,
    as a user passes it).

    >>> len(moe_candidates())  # pp4: ep 8-64; pp8: ep 8-32; pp16: ep 8, 16; each x 2 ZeRO x 3 recompute
    54
    """
    return tuple(dict(tp=1, cp=1, pp=pp, ep=ep, zero=zero, recompute=rc.name)
                 for pp in MOE_PP if ngpus % pp == 0
                 for ep in MOE_EP if (ngpus // pp) % ep == 0
                 for zero in MOE_ZERO for rc in MOE_RECOMPUTE)


def system_layouts(name: str, fabric, *, workload: str = MOE_WORKLOAD, ngpus: int = MOE_GPUS) -> SystemLayouts:
    """Every candidate of :func:`moe_candidates` of ``workload`` on the first ``ngpus`` GPUs of a
    prepared fabric, ranked; a refusal (every candidate refused, a model that does not cover the
    fabric) is the record's ``error``."""
    plans, skipped = [], []
    try:
        for options in moe_candidates(ngpus):
            s = search(workload, fabric, gpus=list(range(ngpus)), simulate=0, **options)
            plans += s.plans
            skipped += s.skipped_layouts
    except DgxTopoError as error:
        return SystemLayouts(name, None, str(error))
    plans.sort(key=plan_order)
    return SystemLayouts(name, Search(tuple(plans), tuple(skipped)))


def moe_comparison(fabrics) -> MoeComparison:
    """:func:`system_layouts` of :data:`MOE_WORKLOAD` on :data:`MOE_GPUS` GPUs of each of
    :data:`MOE_SYSTEMS` (``fabrics[name]``: its prepared fabric)."""
    return MoeComparison(MOE_WORKLOAD, MOE_GPUS, tuple(system_layouts(name, fabrics[name]) for name in MOE_SYSTEMS),
                         len(moe_candidates(MOE_GPUS)))
