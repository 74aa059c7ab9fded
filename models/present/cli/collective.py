"""``collective``: a predicted nccl-tests sweep, and what NCCL would run (``--explain``: why)."""

from __future__ import annotations

import topo

from .inputs import calibration_of, fabric_of, measurement_note_of
from .options import (ALGORITHMS, MAX_PAIRS, Command, at_least, collective_argument, json_option,
                      measurement_options, nccl_option, size_sweep, sweep_options, system_option)
from .outputs import print_json


def _collective_arguments(parser) -> None:
    collective_argument(parser)
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7 (default: all)")
    sweep_options(parser, minimum="32M", maximum="32M", factor=2)
    parser.add_argument("--algo", choices=ALGORITHMS,
                        help="force NCCL's algorithm: " + ", ".join(ALGORITHMS) + " (nvls and nvls_tree "
                             "need NVSwitches that reduce, as on dgxh100; pat a release that has it)")
    parser.add_argument("--proto", choices=("LL", "LL128", "Simple"), help="force NCCL's protocol")
    nccl_option(parser)
    measurement_options(parser)
    parser.add_argument("--explain", action="store_true",
                        help="show channels, bottleneck, latency and bandwidth terms (a field with --json)")
    json_option(parser)
    parser.add_argument("--limit", type=at_least(1), default=MAX_PAIRS, metavar="N",
                        help=f"alltoall and sendrecv: refuse routing more than N GPU pairs (alltoall "
                             f"routes the pairs inside each host, and one per GPU across hosts; "
                             f"default {MAX_PAIRS})")


def _collective(args) -> None:
    import numpy as np

    from ...engine.nccl.algorithms.catalog import algorithm_named
    from ...engine.nccltests import count_from_nbytes
    from ...predict.collectives import estimate

    calibration = calibration_of(args)  # a bad file fails before any work
    G = fabric_of(args, args.system)
    nranks = len(topo.select_gpus(G, args.gpus))
    requested = np.array(size_sweep(args.minbytes, args.maxbytes, args.stepfactor), dtype=np.int64)
    # nccl-tests rounds every size down to whole float32 elements per rank.
    counts, sizes = (np.atleast_1d(x) for x in count_from_nbytes(args.coll, requested, nranks))
    algorithms = None if args.algo is None else (algorithm_named(args.algo),)
    e = estimate(G, args.coll, sizes, args.gpus, protocol=args.proto, profile=args.nccl, gpus_per_thread=args.g,
                 calibration=calibration, max_pairs=args.limit, algorithms=algorithms)
    if args.json:  # the JSON shapes import every record's module: only for --json
        from ..json_shapes import collective_json

        print_json(collective_json(G, e, explain=args.explain))
    else:
        from ..text import collective_table

        print(collective_table(G, e, counts, explain=args.explain, measurement=measurement_note_of(args)))


COLLECTIVE = Command("collective", "predicted nccl-tests sweep of a collective", _collective_arguments,
                     _collective)
