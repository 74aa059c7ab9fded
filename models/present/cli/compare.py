"""``compare``: the same collective on the same GPU count of several systems."""

from __future__ import annotations

import topo

from .inputs import calibration_of, fabrics_of
from .options import (Command, UsageError, at_least, json_option, max_gpus_option, measurement_options, nccl_option,
                      size_sweep, sweep_options, systems_option, topo_file_options, whatif_options)
from .outputs import print_json, progress_for


def _compare_arguments(parser) -> None:
    from ...predict.collectives import COLLECTIVE_NAMES

    systems_option(parser, default="at least one, or --topo-file")
    topo_file_options(parser, many=True)
    whatif_options(parser)
    parser.add_argument("--collective", default="all_reduce", choices=COLLECTIVE_NAMES,
                        help="collective (default all_reduce)")
    parser.add_argument("--ngpus", type=at_least(1), metavar="N",
                        help="compare the first N GPUs of each system")
    sweep_options(parser, minimum="1K", maximum="1G", factor=4)
    nccl_option(parser)
    measurement_options(parser)
    parser.add_argument("--out", metavar="FILE",
                        help="also write an HTML figure of busbw and time by size (replaced atomically)")
    json_option(parser)
    max_gpus_option(parser)


def _compare_name(G, args) -> str:
    """A system's label in compare: its spec name, or its display name after a what-if."""
    return G.graph["name"] if (args.fail or args.degrade) else G.graph.get("system", G.graph["name"])


def _compare(args) -> None:
    import numpy as np

    from ...predict.collectives import estimate
    from ..json_shapes import compare_json
    from ..text import compare_table

    calibration = calibration_of(args)
    fabrics = fabrics_of(args, list(args.system))
    counts = [(G.graph["name"], len(topo.gpus(G))) for G in fabrics]
    ngpus = args.ngpus if args.ngpus is not None else min(n for _, n in counts)
    if args.ngpus is None and len({n for _, n in counts}) > 1:
        raise UsageError(f"expected systems with the same GPU count, received "
                          f"{', '.join(f'{k}: {v}' for k, v in counts)}; pass --ngpus N to "
                          f"compare the first N GPUs of each")
    sizes = np.array(size_sweep(args.minbytes, args.maxbytes, args.stepfactor), dtype=np.int64)
    names = [_compare_name(G, args) for G in fabrics]
    estimates = []
    with progress_for(args, f"{args.collective} on {len(fabrics)} systems", "system") as progress:
        for G in fabrics:
            estimates.append(estimate(G, args.collective, sizes, list(range(ngpus)), profile=args.nccl,
                                      gpus_per_thread=args.g, calibration=calibration))
            progress(len(estimates), len(fabrics))
    if args.out is not None:
        from ..report.write import write_compare_figure  # plotly only for this option
        write_compare_figure(estimates, names, args.out)
    if args.json:
        print_json(compare_json(args.collective, ngpus, names, estimates))
        return
    print(compare_table(args.collective, ngpus, names, estimates))
    if args.out is not None:
        print(f"wrote {args.out}")


COMPARE = Command("compare", "a collective on the same GPU count of several systems", _compare_arguments,
                  _compare)
