"""``schedule``: ``schedule check FILE``, an MSCCL XML schedule read and checked as its runtime would.

One action for now; ``evaluate`` and ``export`` (issue 41) join it with their own options.
"""

from __future__ import annotations

from .inputs import read_text
from .options import Command, json_option, max_input_option
from .outputs import print_json


def _schedule_arguments(parser) -> None:
    parser.add_argument("action", choices=("check",), help="check: read FILE and check it (limits, dependencies, "
                        "send/receive matching, deadlock, races, the collective's postcondition)")
    parser.add_argument("file", metavar="FILE", help="an MSCCL XML schedule (- for standard input)")
    max_input_option(parser)
    json_option(parser, "the summary")


def _schedule(args) -> None:
    from ...schedules.check import check_schedule
    from ...schedules.msccl import MSCCL_INPUT, ScheduleError, parse_msccl
    from ..json_shapes import schedule_check_json
    from ..schedule_text import schedule_check_text

    source = "standard input" if args.file == "-" else args.file
    try:
        schedule = parse_msccl(read_text(args.file, MSCCL_INPUT, args))
        result = check_schedule(schedule)
    except ScheduleError as error:  # one line naming the file, the GPU, threadblock and step
        raise ScheduleError(f"{source}: {error}", gpu=error.gpu, tb=error.tb, step=error.step) from None
    if args.json:
        print_json(schedule_check_json(schedule, result, source=source))
        return
    print(schedule_check_text(schedule, result, source=source))


SCHEDULE = Command("schedule", "check an MSCCL XML schedule as its runtime would", _schedule_arguments, _schedule)
