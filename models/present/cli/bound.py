"""``bound``: the best busbw any schedule could reach on a GPU set, beside NCCL's, and the cut."""

from __future__ import annotations

import argparse

import topo

from .inputs import fabric_of
from .options import (MAX_BOUND_GPUS, Command, UsageError, at_least, collective_argument, json_option, nccl_option,
                      parse_size, system_option)
from .outputs import print_json, write_figures


_RELAY_HELP = ("which nodes may forward data: none (GPU to GPU links only), switches (NVSwitches, "
               "PCIe switches, CPUs and the network, as NCCL relays; default) or all (GPUs too)")


def _edge_kinds(text: str) -> tuple:
    kinds = tuple(k.strip() for k in str(text).split(","))
    bad = [k for k in kinds if k not in topo.EDGE_KINDS]
    if not kinds or bad:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(topo.EDGE_KINDS)}, "
                                         f"received {text!r}")
    return kinds


def _bound_arguments(parser) -> None:
    collective_argument(parser)
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7 (default: all)")
    parser.add_argument("-s", "--size", type=parse_size, default=parse_size("8G"), metavar="SIZE",
                        help="size of NCCL's estimate beside the bound, and of the bound's time "
                             "(default 8G: the bandwidth term dominates)")
    parser.add_argument("--relay", choices=("none", "switches", "all"), default="switches", help=_RELAY_HELP)
    parser.add_argument("--links", type=_edge_kinds, metavar="KINDS",
                        help="only these edge kinds carry data, comma-separated from "
                             f"{', '.join(topo.EDGE_KINDS)} (default: every link)")
    parser.add_argument("--root", type=at_least(0), metavar="ID",
                        help="root GPU of broadcast and reduce (default: the lowest id, nccl-tests' root 0)")
    parser.add_argument("--trees", action="store_true",
                        help="also pack spanning trees that meet the bound (the schedule; not for "
                             "alltoall and sendrecv, whose schedule is a flow)")
    nccl_option(parser)
    parser.add_argument("--explain", action="store_true",
                        help="also the formulation, the rates and where NCCL's gap comes from")
    json_option(parser, "text")
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write the tree packing drawn on the fabric (implies --trees; "
                             "replaced atomically)")
    parser.add_argument("--limit", type=at_least(2), default=MAX_BOUND_GPUS, metavar="N",
                        help=f"refuse sets of more than N GPUs (default {MAX_BOUND_GPUS}; the work "
                             f"grows faster than the GPUs)")


def _bound(args) -> None:
    from ..explain import bound_summary, explain_bound
    from ..json_shapes import bound_json

    from ...studies.bounds import bound

    if (args.trees or args.out) and args.coll in ("alltoall", "sendrecv"):
        raise UsageError(f"--trees and --out pack spanning trees for broadcast, reduce, all_gather, "
                          f"reduce_scatter and all_reduce, received {args.coll} (its bound is a flow LP)")
    G = fabric_of(args, args.system)
    b = bound(G, args.coll, args.size, args.gpus, relay=args.relay, trees=bool(args.trees or args.out),
              root=args.root, edge_kinds=args.links, profile=args.nccl, max_gpus=args.limit)
    if args.out is not None:
        from ..bounds_plot import packing_figure

        figures = [packing_figure(G, packing) for packing in b.packings]
        write_figures(args.out, f"dgx-topo: {b.collective} bound on {b.system}", figures, [bound_summary(b)])
    if args.json:
        print_json(bound_json(b))
        return
    print(explain_bound(b) if args.explain else bound_summary(b))
    if args.out is not None:
        print(f"wrote {args.out}")


BOUND = Command("bound", "the best busbw any schedule could reach, beside NCCL's, and the binding cut",
                _bound_arguments, _bound, epilog=lambda: "Relays (--relay): " + _RELAY_HELP + ". Links (--links): "
                + ", ".join(topo.EDGE_KINDS) + ", comma-separated.")
