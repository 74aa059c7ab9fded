"""``whatif``: every single (or pair of) failure of a kind of component, ranked by the busbw it costs."""

from __future__ import annotations

from .inputs import fabric_of
from .options import (Command, UsageError, at_least, collective_argument, json_option, nccl_option, parse_size,
                      positive_seconds, system_option)
from .outputs import print_json, progress_for, write_figures


_FAIL_EACH_HELP = ("nvlink: one physical link of each NVLink bundle (NV2 becomes NV1; one row per bundle); "
                   "nvswitch, nic: each one; gpu: each GPU of the job, which runs on the others")


def _whatif_arguments(parser) -> None:
    from ...studies.sweep import DASK_TIMEOUT, MAX_CASES, MAX_SECONDS
    from ...studies.whatif import FAIL_EACH

    collective_argument(parser)
    system_option(parser)
    parser.add_argument("--fail-each", choices=FAIL_EACH, required=True, help=_FAIL_EACH_HELP)
    parser.add_argument("--pairs", action="store_true", help="every pair of failures instead of every single one")
    parser.add_argument("--gpus", metavar="IDS", help="the job's GPU ids such as 0-3 (default: all)")
    parser.add_argument("-s", "--size", type=parse_size, default=parse_size("1G"), metavar="SIZE",
                        help="message size (default 1G)")
    parser.add_argument("--executor", default="auto", metavar="WHERE",
                        help="where the estimates run: auto (default: in this process when quick, "
                             "else a process pool), inline, process, or dask://HOST:PORT (a Dask "
                             "scheduler; the extra dgx-topo[dask])")
    parser.add_argument("--top", type=at_least(1), metavar="N", help="show only the N worst")
    nccl_option(parser)
    json_option(parser)
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write the fabric coloured by each failure's loss and the ranked bar "
                             "chart (replaced atomically)")
    parser.add_argument("--max-cases", type=at_least(1), default=MAX_CASES, metavar="N",
                        help=f"refuse sweeps that classify more than N failure cases (default {MAX_CASES}; "
                             f"--pairs grows as the square; the hosts of a cluster that are copies count once)")
    parser.add_argument("--max-seconds", type=positive_seconds, default=MAX_SECONDS, metavar="S",
                        help=f"refuse sweeps that would take more than S seconds in this process (predicted "
                             f"from a few of their failures, timed; default {MAX_SECONDS:g})")
    parser.add_argument("--dask-timeout", type=positive_seconds, default=DASK_TIMEOUT, metavar="S",
                        help=f"seconds to reach a dask:// scheduler (default {DASK_TIMEOUT:g})")


def _whatif_sweep(args) -> None:
    from ...studies.sweep import ExecutorConnectionError, ExecutorSpecError, SweepSizeError, sweep
    from ..json_shapes import sweep_json
    from ..sweep_text import format_sweep

    executor = None if args.executor == "auto" else args.executor
    G = fabric_of(args, args.system)
    with progress_for(args, f"whatif {args.fail_each}", "case") as progress:
        try:
            result = sweep(G, args.coll, args.size, fail_each=args.fail_each, pairs=args.pairs, gpus=args.gpus,
                           executor=executor, progress=progress, max_cases=args.max_cases,
                           max_seconds=args.max_seconds, profile=args.nccl, dask_timeout=args.dask_timeout)
        except SweepSizeError as error:  # the library names its keyword; the command line, its option
            option = {"max_cases": "--max-cases", "max_seconds": "--max-seconds"}[error.keyword]
            unit = {"max_cases": "N", "max_seconds": "S"}[error.keyword]
            raise UsageError(str(error).replace(f"pass a larger {error.keyword}=", f"raise it with {option} {unit}")
                              .replace(f"more than {error.keyword}=", "more than the limit of ")
                              .replace("fail_each=", "--fail-each ").replace("pairs=True", "--pairs")
                              .replace("(gpus=)", "(--gpus)")) from None
        except (ExecutorSpecError, ExecutorConnectionError) as error:
            raise UsageError(str(error).replace("executor=", "--executor ")
                              .replace("raise dask_timeout", "raise --dask-timeout S")) from None
    if args.out is not None:
        from ..whatif_plot import sweep_fabric_figure, sweep_figure

        figures = [sweep_figure(result)] + ([] if args.pairs else [sweep_fabric_figure(G, result)])
        write_figures(args.out, f"dgx-topo: what each failure costs on {result.fabric}", figures,
                       [format_sweep(result, top=args.top)])
    if args.json:
        print_json(sweep_json(result, args.top))
        return
    print(format_sweep(result, top=args.top))
    if args.out is not None:
        print(f"wrote {args.out}")


WHATIF = Command("whatif", "every failure of a kind of component, ranked by the busbw it costs",
                 _whatif_arguments, _whatif_sweep, epilog="Failures (--fail-each): " + _FAIL_EACH_HELP + ".")
