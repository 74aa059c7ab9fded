"""``schedule``: MSCCL XML schedules. ``schedule check FILE`` reads and checks one as its runtime
would; ``schedule evaluate FILE`` times it on a fabric beside NCCL's own choice and the bound;
``schedule export COLLECTIVE`` writes NCCL's rings or trees or the bound-reaching tree packing as one."""

from __future__ import annotations

from .inputs import fabric_of, read_text
from .options import (UsageError, at_least, json_option, parse_size, size_sweep,
                      system_option, Command, nccl_option)
from .outputs import print_json, progress_for

_ACTIONS = ("check", "evaluate", "export")


def _schedule_arguments(parser) -> None:
    from ...schedules.evaluate import SCHEDULE_MAX_EVENTS
    from ...schedules.export import PACKING_MAX_HOPS

    parser.add_argument("action", choices=_ACTIONS, help="check: read FILE and check it (limits, dependencies, "
                        "send/receive matching, deadlock, races, the collective's postcondition); evaluate: check "
                        "FILE and time it on --system beside NCCL and the bound; export: write COLLECTIVE's "
                        "schedule (--source) to --out")
    parser.add_argument("target", metavar="FILE|COLLECTIVE",
                        help="check, evaluate: an MSCCL XML schedule (- for standard input); export: all_gather, "
                             "reduce_scatter or all_reduce (--source nccl --algo tree: all_reduce)")
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="evaluate: the GPU of each rank, in order of their ids "
                        "(default: the first ngpus); export: the GPU set (default: all)")
    parser.add_argument("-b", "--minbytes", type=parse_size, metavar="SIZE",
                        help="evaluate (export --evaluate: default 1G): smallest size (default the schedule's minBytes, else its maxBytes)")
    parser.add_argument("-e", "--maxbytes", type=parse_size, metavar="SIZE",
                        help="evaluate: largest size (default the schedule's maxBytes)")
    parser.add_argument("-f", "--stepfactor", type=at_least(2), default=2, metavar="F",
                        help="evaluate: size multiplier, an integer >= 2 (default 2)")
    parser.add_argument("--source", choices=("packing", "nccl"), default="packing",
                        help="export: the tree packing that meets the bound (default), or NCCL's rings or trees")
    parser.add_argument("--algo", choices=("ring", "tree"), default="ring",
                        help="export --source nccl: NCCL's ring graph (default) or its tree graph (tree all_reduce)")
    parser.add_argument("--proto", choices=("Simple", "LL128", "LL"),
                        help="export: the schedule's protocol (default Simple; with --size, the one of Simple, "
                             "LL128 and LL that times fastest there)")
    parser.add_argument("--chunks", type=at_least(1), metavar="K",
                        help="export --source packing: chunks of each GPU's block (default: the most of 128, 96, "
                             "64, 48, 32, 24, 16, 12, 8 whose rounding of the trees' rates costs at most 1 %% and "
                             "whose threadblocks fit the runtime's 256 steps)")
    parser.add_argument("--size", type=parse_size, metavar="SIZE",
                        help="export --source packing: write the schedule for this message size, its protocol "
                             "(unless --proto) and chunks per GPU (1, 2, 4 ... 128) those that time fastest there "
                             "(default: the --chunks rule); export --evaluate times it at this size")
    parser.add_argument("--max-events", type=at_least(1), metavar="N",
                        help=f"evaluate, export --evaluate: the most simulator events the timings take (all sizes "
                             f"together); export --size: those of the timings that choose (the work grows with "
                             f"the size, the steps and the GPUs; default {SCHEDULE_MAX_EVENTS})")
    parser.add_argument("--max-hops", type=at_least(1), metavar="N",
                        help=f"export --source packing: the most tree hops building the packing's schedule may "
                             f"write (GPUs x (GPUs - 1) x chunks a GPU, twice for all_reduce; default "
                             f"{PACKING_MAX_HOPS})")
    parser.add_argument("--out", metavar="FILE", help="export: the MSCCL XML file to write (required)")
    nccl_option(parser)
    parser.add_argument("--evaluate", action="store_true",
                        help="export: also time what was written, as evaluate does (-b/-e default --size, else 1G)")
    parser.add_argument("--explain", action="store_true", help="evaluate, export --evaluate: what each step costs")
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


#: What ``check`` does not read (it reads FILE and the input limit only), each option's flag and
#: its value when not given: given to ``check``, it is refused rather than ignored.
_NOT_CHECK = (("system", "--system", None), ("topo_file", "--topo-file", None), ("fail", "--fail", []),
              ("degrade", "--degrade", []), ("gpus", "--gpus", None), ("minbytes", "-b", None),
              ("maxbytes", "-e", None), ("stepfactor", "-f", 2), ("source", "--source", "packing"),
              ("algo", "--algo", "ring"), ("proto", "--proto", None), ("chunks", "--chunks", None),
              ("size", "--size", None), ("max_events", "--max-events", None), ("max_hops", "--max-hops", None),
              ("out", "--out", None), ("nccl", "--nccl", None), ("evaluate", "--evaluate", False),
              ("explain", "--explain", False))


def _check(args) -> None:
    from ..json_shapes import schedule_check_json
    from ..schedule_text import schedule_check_text

    given = [flag for dest, flag, unset in _NOT_CHECK if getattr(args, dest, unset) not in (unset, None)]
    if given:
        raise UsageError(f"schedule check: reads FILE only (the checks need no fabric nor sizes): expected no "
                         f"{given[0]}, received it")
    source, schedule, result = _read(args)
    if args.json:
        print_json(schedule_check_json(schedule, result, source=source))
        return
    print(schedule_check_text(schedule, result, source=source))


def _evaluate(args) -> None:
    from ..json_shapes import schedule_evaluation_json
    from ..schedule_text import schedule_evaluation_text

    if args.max_hops is not None:
        raise UsageError("schedule evaluate: --max-hops limits the packing export builds, received it")
    if args.size is not None:
        raise UsageError("schedule evaluate: --size is export's (the size a packing is written for); "
                         "give the sizes to time with -b/-e")
    G = fabric_of(args, args.system)
    source, schedule, _ = _read(args)
    evaluation = _evaluation(args, G, schedule, args.gpus, schedule.min_bytes or schedule.max_bytes,
                             schedule.max_bytes)
    if args.json:
        print_json(schedule_evaluation_json(evaluation, source=source))
        return
    print(schedule_evaluation_text(evaluation, source=source, explain=args.explain))


def _evaluation(args, G, schedule, gpus, low, top):
    """The schedule timed at the sizes asked: refused beyond --max-events, with a bar."""
    from ...schedules.evaluate import SCHEDULE_MAX_EVENTS, evaluate_schedule

    top = args.maxbytes if args.maxbytes is not None else top
    low = args.minbytes if args.minbytes is not None else min(low, top)
    with progress_for(args, f"timing {schedule.name}", "task") as progress:
        return evaluate_schedule(G, schedule, size_sweep(low, top, args.stepfactor), gpus, profile=args.nccl,
                                 max_events=SCHEDULE_MAX_EVENTS if args.max_events is None else args.max_events,
                                 progress=progress)



def _export(args) -> None:
    from ...schedules.check import check_schedule
    from ...schedules.evaluate import SCHEDULE_MAX_EVENTS
    from ...schedules.export import PACKING_MAX_HOPS, export_schedule, sized_chunks
    from ...schedules.msccl import to_msccl_xml
    from ..json_shapes import schedule_evaluation_json
    from ..output import check_output_paths, write_text_atomic

    if args.out is None:
        raise UsageError("schedule export: the following arguments are required: --out FILE")
    if args.max_events is not None and args.size is None and not args.evaluate:
        raise UsageError("schedule export: --max-events limits the timings that choose a size's protocol and chunks "
                         "and those of --evaluate: expected it with --size or --evaluate")
    if args.max_hops is not None and args.source != "packing":
        raise UsageError(f"schedule export: --max-hops limits building the packing: expected it with --source "
                         f"packing, received --source {args.source}")
    if args.size is not None and (args.source != "packing" or args.chunks is not None):
        raise UsageError(f"schedule export: --size chooses a packing's chunks per GPU: expected --source "
                         f"packing without --chunks, received --source {args.source}"
                         f"{' with --chunks' if args.chunks is not None else ''}")
    check_output_paths({"--out": args.out})
    G = fabric_of(args, args.system)
    tried = ()
    max_hops = PACKING_MAX_HOPS if args.max_hops is None else args.max_hops
    if args.size is not None and args.algo == "ring":  # sized, refused beyond --max-events, with a bar
        with progress_for(args, f"timing the packing at {args.size} B", "task") as progress:
            schedule, tried = sized_chunks(G, args.target, args.gpus, args.size, profile=args.nccl,
                                           protocol=args.proto, progress=progress, max_hops=max_hops,
                                           max_events=SCHEDULE_MAX_EVENTS if args.max_events is None else args.max_events)
    else:  # the packing's build refused beyond --max-hops, with a bar
        with progress_for(args, f"building the {args.source}'s {args.target}", "part") as progress:
            schedule = export_schedule(G, args.target, args.gpus, source=args.source, profile=args.nccl,
                                       protocol=args.proto or "Simple", chunks=args.chunks, algorithm=args.algo,
                                       size=args.size, max_hops=max_hops, progress=progress)
    result = check_schedule(schedule)  # what is written holds
    evaluation = None
    if args.evaluate:  # timed before it is written: a refusal (--max-events) writes nothing
        import topo

        ids = {g: i for i, g in enumerate(topo.gpus(G))}
        gpus = sorted(ids[g] for g in topo.select_gpus(G, args.gpus))
        at = args.size if args.size is not None else 2**30
        evaluation = _evaluation(args, G, schedule, gpus, at, at)
    write_text_atomic(args.out, to_msccl_xml(schedule))
    if args.json:
        from ..json_shapes import sized_choice_json

        print_json({"path": args.out, "source": args.source, **result.to_records()[0],
                    **({"choice": sized_choice_json(schedule, tried, args.size)} if tried else {}),
                    **({"evaluation": schedule_evaluation_json(evaluation, source=args.out)} if evaluation else {})})
        return
    print(f"# dgxtopo: wrote {args.out}: {schedule.name}, {result.collective} on {result.ngpus} GPUs, "
          f"{result.protocol}, {result.steps} steps, {result.threadblocks} threadblocks, {schedule.nchannels} "
          f"channels (checked: OK)")
    if tried and args.explain:
        from ..schedule_text import sized_choice_text

        print(sized_choice_text(schedule, tried, args.size))
    if evaluation is not None:
        from topo.units import to_GBps

        from ...engine.fabric import prepare
        from ...schedules.evaluate import achieved_graph
        from ...studies.bounds import bound
        from ..schedule_text import schedule_evaluation_text

        print(schedule_evaluation_text(evaluation, source=args.out, explain=args.explain))
        if args.source == "packing":
            own = bound(achieved_graph(prepare(G, nccl=args.nccl), evaluation.pricing.achieved_ratio), args.target,
                        max(p.nbytes for p in evaluation.points), gpus, edge_kinds=["nvlink"], nccl=False)
            print(f"bound: every link at its line rate (dgxtopo bound); the packing's trees cross NVLink at what "
                  f"NCCL's kernels achieve (x{evaluation.pricing.achieved_ratio:.4f} of NCCL's figure), where its "
                  f"bound is {to_GBps(own.bound_busbw):.2f} GB/s")


def _schedule(args) -> None:
    {"check": _check, "evaluate": _evaluate, "export": _export}[args.action](args)


SCHEDULE = Command("schedule", "check, evaluate or export an MSCCL XML schedule", _schedule_arguments, _schedule)
