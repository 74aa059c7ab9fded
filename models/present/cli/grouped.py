"""``grouped``: gather and scatter as NCCL runs them, a group of sends and receives (its per-peer
schedule), swept over sizes as nccl-tests' gather_perf and scatter_perf print them."""

from __future__ import annotations

import topo

from .inputs import fabric_of
from .options import Command, gpus_per_thread_option, json_option, nccl_option, size_sweep, sweep_options, system_option
from .outputs import print_json

#: The operations, each with nccl-tests' source (size ``count x n x typesize``, the whole buffer).
OPERATIONS = ("gather", "scatter")


def _grouped_arguments(parser) -> None:
    parser.add_argument("op", metavar="OP", choices=OPERATIONS, help="one of " + ", ".join(OPERATIONS))
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7 (default: all)")
    parser.add_argument("--root", type=int, default=0, metavar="GPU", help="the root's GPU id (default 0)")
    sweep_options(parser, minimum="32M", maximum="32M", factor=2)
    nccl_option(parser)
    gpus_per_thread_option(parser)
    parser.add_argument("--explain", action="store_true", help="show the per-peer schedule of the largest size")
    json_option(parser)


def _grouped(args) -> None:
    from ...engine.nccltests import algbw, algbw_to_busbw
    from ...predict.alltoall import gather, scatter
    from ...engine.fabric import prepare

    G = prepare(fabric_of(args, args.system), nccl=args.nccl)
    n = len(topo.select_gpus(G.G, args.gpus))
    run = gather if args.op == "gather" else scatter
    rows, last = [], None
    for size in size_sweep(args.minbytes, args.maxbytes, args.stepfactor):
        block = size // n  # nccl-tests: count x n x typesize, one block a rank
        last = run(G, block, args.root, args.gpus, gpus_per_thread=args.g)
        total = block * n
        bw = float(algbw(total, last.time))
        # nccl-tests' gather and scatter: busbw = algbw x (n - 1) / n, alltoall's factor
        rows.append((total, last.time, bw, float(algbw_to_busbw("alltoall", bw, n))))
    if args.json:
        print_json({"operation": args.op, "gpus": list(last.gpus), "root": args.root,
                    "rows": [{"size_bytes": s, "time_us": t * 1e6, "algbw_gbps": a / 1e9, "busbw_gbps": b / 1e9}
                             for s, t, a, b in rows]})
        return
    from ..alltoall_text import explain_p2p_estimate, grouped_table

    print(grouped_table(args.op, last, args.root, rows, args.g))
    if args.explain:
        print()
        print(explain_p2p_estimate(last))


GROUPED = Command("grouped", "predicted nccl-tests gather or scatter: NCCL's grouped sends and receives",
                  _grouped_arguments, _grouped)
