"""``schedule``: MSCCL XML schedules. ``schedule check FILE`` reads and checks one as its runtime
would; ``schedule evaluate FILE`` times it on a fabric beside NCCL's own choice and the bound;
``schedule export COLLECTIVE`` writes NCCL's rings or the bound-reaching tree packing as one."""

from __future__ import annotations

from .inputs import fabric_of, read_text
from .options import (UsageError, at_least, json_option, parse_size, size_sweep,
                      system_option, Command, nccl_option)
from .outputs import print_json

_ACTIONS = ("check", "evaluate", "export")


def _schedule_arguments(parser) -> None:
    parser.add_argument("action", choices=_ACTIONS, help="check: read FILE and check it (limits, dependencies, "
                        "send/receive matching, deadlock, races, the collective's postcondition); evaluate: check "
                        "FILE and time it on --system beside NCCL and the bound; export: write COLLECTIVE's "
                        "schedule (--source) to --out")
    parser.add_argument("target", metavar="FILE|COLLECTIVE",
                        help="check, evaluate: an MSCCL XML schedule (- for standard input); export: all_gather, "
                             "reduce_scatter or all_reduce (the packing: all_gather)")
    system_option(parser, whatif=False)
    parser.add_argument("--gpus", metavar="IDS", help="evaluate: the GPU of each rank, in order of their ids "
                        "(default: the first ngpus); export: the GPU set (default: all)")
    parser.add_argument("-b", "--minbytes", type=parse_size, metavar="SIZE",
                        help="evaluate: smallest size (default the schedule's minBytes, else its maxBytes)")
    parser.add_argument("-e", "--maxbytes", type=parse_size, metavar="SIZE",
                        help="evaluate: largest size (default the schedule's maxBytes)")
    parser.add_argument("-f", "--stepfactor", type=at_least(2), default=2, metavar="F",
                        help="evaluate: size multiplier, an integer >= 2 (default 2)")
    parser.add_argument("--source", choices=("packing", "nccl"), default="packing",
                        help="export: the tree packing that meets the bound (default), or NCCL's rings")
    parser.add_argument("--proto", choices=("Simple", "LL128", "LL"), default="Simple",
                        help="export: the schedule's protocol (default Simple)")
    parser.add_argument("--chunks", type=at_least(1), metavar="K",
                        help="export --source packing: chunks of each GPU's block (default: the fewest of 8, "
                             "12, 16, 24, 32, 48, 64 whose rounding of the trees' rates costs at most 2 %%)")
    parser.add_argument("--out", metavar="FILE", help="export: the MSCCL XML file to write (required)")
    nccl_option(parser)
    parser.add_argument("--explain", action="store_true", help="evaluate: what each step costs")
    json_option(parser, "the summary")


def _read(args):
    from ...schedules.check import check_schedule
    from ...schedules.msccl import MSCCL_INPUT, ScheduleError, parse_msccl

    source = "standard input" if args.target == "-" else args.target
    try:
        schedule = parse_msccl(read_text(args.target, MSCCL_INPUT, args))
        return source, schedule, check_schedule(schedule)
    except ScheduleError as error:  # one line naming the file, the GPU, threadblock and step
        raise ScheduleError(f"{source}: {error}", gpu=error.gpu, tb=error.tb, step=error.step) from None


def _check(args) -> None:
    from ..json_shapes import schedule_check_json
    from ..schedule_text import schedule_check_text

    source, schedule, result = _read(args)
    if args.json:
        print_json(schedule_check_json(schedule, result, source=source))
        return
    print(schedule_check_text(schedule, result, source=source))


def _evaluate(args) -> None:
    from ...schedules.evaluate import evaluate_schedule
    from ..schedule_text import schedule_evaluation_text

    G = fabric_of(args, args.system)
    source, schedule, _ = _read(args)
    top = args.maxbytes if args.maxbytes is not None else schedule.max_bytes
    low = args.minbytes if args.minbytes is not None else (schedule.min_bytes or top)
    evaluation = evaluate_schedule(G, schedule, size_sweep(low, top, args.stepfactor), args.gpus, profile=args.nccl)
    if args.json:
        print_json({"source": source, "pricing": evaluation.pricing.to_records()[0],
                    "rows": evaluation.to_records()})
        return
    print(schedule_evaluation_text(evaluation, source=source, explain=args.explain))


def _export(args) -> None:
    from ...schedules.check import check_schedule
    from ...schedules.export import export_schedule
    from ...schedules.msccl import to_msccl_xml
    from ..output import check_output_paths, write_text_atomic

    if args.out is None:
        raise UsageError("schedule export: the following arguments are required: --out FILE")
    check_output_paths({"--out": args.out})
    G = fabric_of(args, args.system)
    schedule = export_schedule(G, args.target, args.gpus, source=args.source, profile=args.nccl,
                               protocol=args.proto, chunks=args.chunks)
    result = check_schedule(schedule)  # what is written holds
    write_text_atomic(args.out, to_msccl_xml(schedule))
    if args.json:
        print_json({"path": args.out, "source": args.source, **result.to_records()[0]})
        return
    print(f"# dgxtopo: wrote {args.out}: {schedule.name}, {result.collective} on {result.ngpus} GPUs, "
          f"{result.protocol}, {result.steps} steps, {result.threadblocks} threadblocks, {schedule.nchannels} "
          f"channels (checked: OK)")


def _schedule(args) -> None:
    {"check": _check, "evaluate": _evaluate, "export": _export}[args.action](args)


SCHEDULE = Command("schedule", "check, evaluate or export an MSCCL XML schedule", _schedule_arguments, _schedule)
