"""Collective schedules as data: MSCCL XML read (:mod:`models.schedules.msccl`) and checked
(:mod:`models.schedules.check`); the ring all_gather built as one (:mod:`models.schedules.ring`).
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
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .check import CHECKED_COLLECTIVES, ScheduleCheck, ScheduleCheckError, check_schedule
    from .msccl import (EXECUTOR, MSCCL, RuntimeLimits, Schedule, ScheduleError, ScheduleFormatError, parse_msccl,
                        read_msccl, to_msccl_xml)
    from .ring import ring_all_gather

__getattr__, __dir__ = lazy_face(__name__, _FACE)
