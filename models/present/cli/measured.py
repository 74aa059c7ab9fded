"""``calibrate`` and ``check``: measured nccl-tests outputs, fitted to the measurement model or
compared with the prediction size by size."""

from __future__ import annotations

import json
import os

from .inputs import calibration_of, fabric_of, read_text
from .options import (Command, UsageError, at_least, calibration_option, gpus_per_thread_option, json_option,
                      nccl_option, system_option)
from .outputs import print_json


def _read_run(path, args):
    from ...studies.benchmarks import BenchmarkParseError, read_benchmark

    text = read_text(path, "benchmark", args)
    try:
        return read_benchmark(text, name="standard input" if path == "-" else path,
                              collective=args.collective, max_rows=args.max_rows)
    except BenchmarkParseError as error:
        from ..file_kinds import FileKind, file_kind, misplaced

        found = file_kind(text)
        if found not in (FileKind.NCCL_TESTS, FileKind.P2P, FileKind.TEXT):
            raise UsageError(misplaced(path, found, "nccl-tests or p2pBandwidthLatencyTest output")) from None
        if path in str(error):
            raise
        raise BenchmarkParseError(f"{path}: {error}") from None


def _measurement_arguments(parser) -> None:
    from ...predict.collectives import COLLECTIVE_NAMES
    from ...studies.benchmarks import MAX_ROWS

    system_option(parser, whatif=False)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids of the ranks, in rank order "
                        "(default: from CUDA_VISIBLE_DEVICES and the device lines)")
    gpus_per_thread_option(parser, default=None, help_default="the run's own nGpus")
    nccl_option(parser)
    parser.add_argument("--collective", choices=COLLECTIVE_NAMES,
                        help="the collective, if the output does not name it (one it names or "
                             "its columns imply must be the same)")
    parser.add_argument("--inplace", action="store_true", help="use the in-place columns")
    parser.add_argument("--max-rows", type=at_least(1), default=MAX_ROWS, metavar="N",
                        help=f"refuse outputs of more than N result rows (default {MAX_ROWS}; each "
                             f"row is an estimate)")


def _calibrate_arguments(parser) -> None:
    parser.add_argument("files", metavar="FILE", nargs="+", help="nccl-tests (or p2pBandwidthLatencyTest) output")
    _measurement_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="calibration JSON to write (replaced atomically)")
    json_option(parser, "the fitted constants: what was written, with its content")


def _calibrate(args) -> None:
    from ..json_shapes import calibration_file_json, calibration_json
    from ..text import calibration_table

    from ...studies.calibration import calibrate
    from ..output import write_text_atomic

    runs = [_read_run(path, args) for path in args.files]
    result = calibrate(runs, fabric_of(args, args.system), gpus=args.gpus, gpus_per_thread=args.g,
                       profile=args.nccl, inplace=args.inplace)
    data = calibration_file_json(result)
    path = write_text_atomic(args.out, json.dumps(data, indent=2))
    if args.json:
        print_json(calibration_json(args.out, path.stat().st_size, data))
        return
    print(calibration_table(result))
    print(f"wrote {args.out}")


def _check_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="nccl-tests output")
    _measurement_arguments(parser)
    calibration_option(parser)
    parser.add_argument("--explain", action="store_true", help="show the measurement model's terms")
    json_option(parser)
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write a page of measured vs predicted busbw, time and error by "
                             "size (replaced atomically)")


def _check(args) -> None:
    from ..explain import explain_check
    from ..json_shapes import check_json
    from ..text import check_table

    from ...studies.calibration import check

    calibration = calibration_of(args)
    run = _read_run(args.file, args)
    if not hasattr(run, "rows"):
        raise UsageError(f"{args.file} is a p2pBandwidthLatencyTest output: check takes nccl-tests")
    result = check(run, fabric_of(args, args.system), gpus=args.gpus, gpus_per_thread=args.g,
                   profile=args.nccl, calibration=calibration, inplace=args.inplace)
    written = None
    if args.out is not None:
        from ..report.write import write_check_html  # plotly only for this option
        written = write_check_html(args.out, result, source=os.path.basename(args.file))
    if args.json:
        print_json(check_json(result))
        return
    print(check_table(result))
    if args.explain:
        print()
        print(explain_check(result))
    if written is not None:
        print(f"wrote {args.out}")


CALIBRATE = Command("calibrate", "fit the measurement model to nccl-tests outputs", _calibrate_arguments,
                    _calibrate)
CHECK = Command("check", "measured vs predicted for one nccl-tests output", _check_arguments, _check)
