"""Collective schedules as data: MSCCL XML read (:mod:`models.schedules.msccl`) and checked
(:mod:`models.schedules.check`). A schedule is not a fabric, so :mod:`topo` knows nothing of it.

>>> from models.schedules import check_schedule, parse_msccl
"""

from .check import CHECKED_COLLECTIVES, ScheduleCheck, ScheduleCheckError, check_schedule
from .msccl import (EXECUTOR, MSCCL, Schedule, ScheduleError, ScheduleFormatError, parse_msccl, read_msccl,
                    to_msccl_xml)

__all__ = ["CHECKED_COLLECTIVES", "ScheduleCheck", "ScheduleCheckError", "check_schedule", "EXECUTOR", "MSCCL",
           "Schedule", "ScheduleError", "ScheduleFormatError", "parse_msccl", "read_msccl", "to_msccl_xml"]
