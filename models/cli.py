"""The ``dgxtopo`` command line: thin, parse -> call the library -> print.

Subcommands
-----------
``dgxtopo systems [--json]``
    The built-in systems with their GPUs, links and bisection bandwidth.
``dgxtopo topo NAME [--json] [--no-legend]``
    The system's connection matrix in the layout of ``nvidia-smi topo -m``.
``dgxtopo p2p NAME [--gpus IDS] [--mode route|maxflow] [--bidirectional] [--latency] [--json]``
    Predicted GPU-to-GPU bandwidth (and latency) in the layout of p2pBandwidthLatencyTest.

Bad input (an unknown system, a malformed option) prints one line on stderr and exits 2.
The JSON forms are documented in the README ("JSON output") and stay stable.
"""

from __future__ import annotations

import argparse
import json
import sys

import topo
from topo.units import to_GBps

from .display import format_table
from .p2p import MODES, format_p2p_report, p2p_report

__all__ = ["main", "build_parser"]


class _UsageError(Exception):
    """A malformed command line; reported in one line like every other input error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage and exit; we report one line.
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def _print_json(data) -> None:
    print(json.dumps(data, indent=2))


def _systems(args) -> None:
    summaries = [topo.summarize(topo.build(name)) for name in topo.SYSTEMS]
    if args.json:
        _print_json({"systems": [s.to_dict() for s in summaries]})
        return
    headers = ["system", "name", "GPUs", "GPU model", "NVLink links", "NVSwitches", "NICs",
               "NVLink/GPU (GB/s)", "bisection (GB/s)"]
    rows = [[s.system, s.name, s.gpus, ", ".join(s.gpu_models), s.nvlink_links, s.nvswitches,
             s.nics, f"{to_GBps(s.injection):.1f}", f"{to_GBps(s.bisection):.1f}"]
            for s in summaries]
    print(format_table(headers, rows, align="<<><>>>>>"))
    print("\nBandwidths are line rates per direction; bisection counts NVLink only.")


def _topo(args) -> None:
    G = topo.build(args.name)
    matrix = topo.connection_matrix(G)
    if args.json:
        _print_json({"system": G.graph["system"], **matrix.to_dict()})
        return
    print(topo.format_connection_matrix(matrix, legend=not args.no_legend))


def _p2p(args) -> None:
    report = p2p_report(topo.build(args.name), args.gpus, mode=args.mode)
    if args.json:
        _print_json(report.to_dict())
        return
    print(format_p2p_report(report, bidirectional=args.bidirectional, latency=args.latency))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dgxtopo``."""
    parser = _Parser(prog="dgxtopo", description="Model NVIDIA DGX interconnect fabrics and what "
                     "NCCL-style communication achieves on them.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    systems = commands.add_parser("systems", help="list the built-in systems")
    systems.add_argument("--json", action="store_true", help="print JSON instead of a table")
    systems.set_defaults(run=_systems)

    show = commands.add_parser("topo", help="connection matrix as nvidia-smi topo -m prints it")
    show.add_argument("name", metavar="NAME", help="system name: " + ", ".join(topo.SYSTEMS))
    show.add_argument("--json", action="store_true", help="print JSON instead of the matrix")
    show.add_argument("--no-legend", action="store_true", help="omit the legend")
    show.set_defaults(run=_topo)

    p2p = commands.add_parser("p2p", help="GPU-to-GPU bandwidth and latency as "
                              "p2pBandwidthLatencyTest prints them (predicted)")
    p2p.add_argument("name", metavar="NAME", help="system name: " + ", ".join(topo.SYSTEMS))
    p2p.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0,3,5-7 (default: all)")
    p2p.add_argument("--mode", choices=MODES, default="route",
                     help="route: the copy CUDA makes (default); maxflow: NVLink maximum flow")
    p2p.add_argument("--bidirectional", action="store_true",
                     help="both directions at once instead of one")
    p2p.add_argument("--latency", action="store_true", help="also print the latency matrix")
    p2p.add_argument("--json", action="store_true", help="print JSON (every matrix) instead")
    p2p.set_defaults(run=_p2p)
    return parser


def main(argv=None) -> int:
    """Run ``dgxtopo``; returns the exit status (0, or 2 for bad input)."""
    try:
        args = build_parser().parse_args(argv)
        args.run(args)
    except (_UsageError, topo.DgxTopoError) as error:
        print(f"dgxtopo: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `dgxtopo topo dgx2 | head`: the reader left, nothing to report.
        sys.stderr.close()
        return 0
    return 0
