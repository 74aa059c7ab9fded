"""Collective schedules as data: MSCCL XML read (:mod:`models.schedules.msccl`), checked
(:mod:`models.schedules.check`) and timed on a fabric beside NCCL and the bound
(:mod:`models.schedules.evaluate`); the ring all_gather built as one (:mod:`models.schedules.ring`),
NCCL's rings and trees and the bound-reaching tree packing written as one (:mod:`models.schedules.export`,
the packing's steps and channels :mod:`models.schedules.packed`),
the packing's schedule beside NCCL and the bounds on one GPU set (:mod:`models.schedules.compare`).
A schedule is not a fabric, so :mod:`topo` knows nothing of it.

Its face lists what a user calls, each imported from its module on first use (:mod:`topo.faces`).
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    "read_msccl": "models.schedules.msccl",
    "parse_msccl": "models.schedules.msccl",
    "to_msccl_xml": "models.schedules.msccl",
    "Schedule": "models.schedules.msccl",
    "ScheduleError": "models.schedules.msccl",
    "ScheduleFormatError": "models.schedules.msccl",
    "RuntimeLimits": "models.schedules.msccl",
    "MSCCL": "models.schedules.msccl",
    "EXECUTOR": "models.schedules.msccl",
    "check_schedule": "models.schedules.check",
    "ScheduleCheck": "models.schedules.check",
    "ScheduleCheckError": "models.schedules.check",
    "CHECKED_COLLECTIVES": "models.schedules.check",
    "ring_all_gather": "models.schedules.ring",
    "evaluate_schedule": "models.schedules.evaluate",
    "ScheduleEvaluation": "models.schedules.evaluate",
    "SchedulePoint": "models.schedules.evaluate",
    "SchedulePricing": "models.schedules.evaluate",
    "ScheduleEvaluationError": "models.schedules.evaluate",
    "export_schedule": "models.schedules.export",
    "nccl_schedule": "models.schedules.export",
    "packing_schedule": "models.schedules.export",
    "ExportError": "models.schedules.export",
    "schedule_packing": "models.schedules.export",
    "packing_comparison": "models.schedules.compare",
    "PackingComparison": "models.schedules.compare",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .check import CHECKED_COLLECTIVES, ScheduleCheck, ScheduleCheckError, check_schedule
    from .msccl import (EXECUTOR, MSCCL, RuntimeLimits, Schedule, ScheduleError, ScheduleFormatError, parse_msccl,
                        read_msccl, to_msccl_xml)
    from .evaluate import (ScheduleEvaluation, ScheduleEvaluationError, SchedulePoint, SchedulePricing,
                           evaluate_schedule)
    from .export import ExportError, export_schedule, nccl_schedule, packing_schedule, schedule_packing
    from .compare import PackingComparison, packing_comparison
    from .ring import ring_all_gather

__getattr__, __dir__ = lazy_face(__name__, _FACE)
