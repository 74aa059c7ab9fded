"""``p2p``: predicted GPU-to-GPU bandwidth and latency as p2pBandwidthLatencyTest prints them."""

from __future__ import annotations

from .inputs import fabric_of
from .options import MAX_PAIRS, Command, at_least, json_option, system_option
from .outputs import print_json


def _p2p_arguments(parser) -> None:
    from ...predict.p2p import MODES

    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0,3,5-7 (default: all)")
    parser.add_argument("--mode", choices=MODES, default="route",
                        help="route: the copy CUDA makes (default); maxflow: NVLink maximum flow")
    parser.add_argument("--bidirectional", action="store_true",
                        help="both directions at once instead of one")
    parser.add_argument("--latency", action="store_true", help="also print the latency matrix")
    parser.add_argument("--p2p", choices=("enabled", "disabled"), default="enabled",
                        help="peer access: enabled (default) or disabled, every pair staged "
                             "through host memory (p2pBandwidthLatencyTest's P2P=Disabled)")
    json_option(parser, "the matrices (every matrix at once)")
    parser.add_argument("--limit", type=at_least(1), default=MAX_PAIRS, metavar="N",
                        help=f"refuse more than N GPU pairs (default {MAX_PAIRS})")


def _p2p(args) -> None:
    from ...predict.p2p import p2p_report

    G = fabric_of(args, args.system)
    report = p2p_report(G, args.gpus, mode=args.mode, p2p=args.p2p, max_pairs=args.limit)
    if args.json:  # the JSON shapes import every record's module: only for --json
        from ..json_shapes import p2p_json

        print_json(p2p_json(report))
        return
    from ..text import format_p2p_report

    print(format_p2p_report(report, bidirectional=args.bidirectional, latency=args.latency))


P2P = Command("p2p", "GPU-to-GPU bandwidth and latency as p2pBandwidthLatencyTest prints them (predicted)",
              _p2p_arguments, _p2p)
