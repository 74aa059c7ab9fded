"""The ``dgxtopo`` command line: thin, parse -> call the library -> print.

Subcommands
-----------
``dgxtopo systems [--json]``
    The built-in systems with their GPUs, links and bisection bandwidth.
``dgxtopo topo NAME [--json] [--no-legend]``
    The system's connection matrix in the layout of ``nvidia-smi topo -m``.
``dgxtopo p2p NAME [--gpus IDS] [--mode route|maxflow] [--bidirectional] [--latency] [--json]``
    Predicted GPU-to-GPU bandwidth (and latency) in the layout of p2pBandwidthLatencyTest.
``dgxtopo collective COLL --system NAME [--gpus IDS] [-b MIN] [-e MAX] [-f FACTOR] [--algo A]
[--proto P] [--nccl VERSION] [--explain] [--json]``
    A predicted nccl-tests sweep (float32, sum): size, count, type, redop, root, time, algbw,
    busbw, and what NCCL would run.
``dgxtopo pairs COLL --system NAME -s SIZE [--json]``
    busbw of every 2-GPU communicator.
``dgxtopo subsets COLL --system NAME -k K -s SIZE [--top N] [--json]``
    Every K-GPU set ranked by busbw.
``dgxtopo report [NAMES...] [--out FILE]``
    One self-contained HTML file comparing systems (default: all built-in) with figures.
``dgxtopo compare SYSTEM SYSTEM... [--collective COLL] [--ngpus N] [-b] [-e] [-f] [--out FILE] [--json]``
    Time and busbw by size of the same collective on the same GPU count of several systems
    (for instance one DGX-2 against two DGX-1V: ``dgxtopo compare dgx2 2xdgx1v``).

Bad input (an unknown system, a malformed option) prints one line on stderr and exits 2.
The JSON forms are documented in the README ("JSON output") and stay stable.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np

import topo
from topo.units import to_GBps, to_us

from .display import format_table
from .nccltests import count_from_nbytes
from .collectives import COLLECTIVE_NAMES, estimate, pairwise, subsets
from .nccl.profiles import PROFILES
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


_SIZE = re.compile(r"^(\d+)([KMGT]?)B?$", re.IGNORECASE)
_MULTIPLE = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str) -> int:
    """A size as nccl-tests takes it: ``8``, ``64K``, ``256M``, ``1G`` (binary multiples). [bytes]

    >>> parse_size("256M"), parse_size("8")
    (268435456, 8)
    """
    match = _SIZE.match(str(text).strip())
    if not match:
        raise argparse.ArgumentTypeError(
            f"malformed size {text!r}: expected bytes such as 8, 64K, 256M or 1G")
    return int(match.group(1)) * _MULTIPLE[match.group(2).upper()]


def _factor(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 2:
        raise argparse.ArgumentTypeError(f"malformed factor {text!r}: expected an integer >= 2")
    return value


def _sweep(minimum: int, maximum: int, factor: int) -> list:
    if maximum < minimum:
        raise _UsageError(f"the largest size ({maximum} B) is below the smallest ({minimum} B): "
                          f"expected -e >= -b")
    sizes, size = [], minimum
    while size <= maximum:
        sizes.append(size)
        size = size * factor if size else 1
    return sizes


# nccl-tests' root column: the root rank for rooted collectives, -1 otherwise.
_ROOT = {"broadcast": 0, "reduce": 0}
_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}


def _collective(args) -> None:
    G = topo.build(args.system)
    gpus = topo.select_gpus(G, args.gpus)
    nranks = len(gpus)
    requested = np.array(_sweep(args.minbytes, args.maxbytes, args.stepfactor), dtype=np.int64)
    # nccl-tests rounds every size down to whole float32 elements per rank.
    counts, sizes = (np.atleast_1d(x).astype(np.int64)
                     for x in count_from_nbytes(args.coll, requested, nranks))
    e = estimate(G, args.coll, sizes, args.gpus, algorithm=args.algo, protocol=args.proto,
                 profile=args.nccl)
    ids = list(e.gpus)
    times, algbw, busbw = (np.atleast_1d(x) for x in (e.time, e.algbw, e.busbw))
    algorithms, protocols, nchannels = (np.atleast_1d(x) for x in (e.algorithm, e.protocol, e.nchannels))
    if args.json:
        rows = [{"size_bytes": int(size), "time_us": float(to_us(t)), "algbw_gbps": float(to_GBps(a)),
                 "busbw_gbps": float(to_GBps(b)), "algorithm": str(al), "protocol": str(pr),
                 "nchannels": int(nc)}
                for size, t, a, b, al, pr, nc in zip(sizes, times, algbw, busbw, algorithms, protocols,
                                                     nchannels)]
        _print_json({"system": G.graph["system"], "collective": args.coll, "gpus": ids, "rows": rows})
        return
    print(f"# dgxtopo: predicted nccl-tests {args.coll} on {G.graph['name']} GPUs "
          f"{','.join(map(str, ids))} ({nranks} ranks); {e.model}")
    print(f"# {'size':>10}  {'count':>12}  {'type':>6}  {'redop':>6}  {'root':>5}  {'time':>9}  "
          f"{'algbw':>7}  {'busbw':>7}  {'algo':>5}  {'proto':>6}  {'nch':>3}")
    print(f"# {'(B)':>10}  {'(elements)':>12}  {'':>6}  {'':>6}  {'':>5}  {'(us)':>9}  "
          f"{'(GB/s)':>7}  {'(GB/s)':>7}")
    root = _ROOT.get(args.coll, -1)
    redop = _REDOP.get(args.coll, "none")
    for size, count, t, a, b, al, pr, nc in zip(sizes, counts, times, algbw, busbw, algorithms,
                                                  protocols, nchannels):
        print(f"  {int(size):>10}  {int(count):>12}  {'float':>6}  {redop:>6}  {root:>5}  "
              f"{to_us(t):>9.2f}  {to_GBps(a):>7.2f}  {to_GBps(b):>7.2f}  {al:>5}  {pr:>6}  {nc:>3}")
    print(f"# Avg bus bandwidth    : {to_GBps(float(np.mean(busbw))):.4g}")
    if args.explain:
        print()
        print(e.explain())


def _pairs(args) -> None:
    G = topo.build(args.system)
    matrix = pairwise(G, args.coll, args.size, profile=args.nccl)
    n = matrix.shape[0]
    if args.json:
        _print_json({"system": G.graph["system"], "collective": args.coll, "size_bytes": args.size,
                     "gpus": list(range(n)),
                     "busbw_gbps": [[None if np.isnan(v) else float(to_GBps(v)) for v in row]
                                    for row in matrix]})
        return
    print(f"Predicted {args.coll} busbw (GB/s) of every GPU pair on {G.graph['name']} at "
          f"{args.size} B")
    headers = ["GPU"] + [str(j) for j in range(n)]
    rows = [[str(i)] + ["-" if np.isnan(v) else f"{to_GBps(v):.2f}" for v in row]
            for i, row in enumerate(matrix)]
    print(format_table(headers, rows, align=">" * (n + 1)))


def _subsets(args) -> None:
    G = topo.build(args.system)
    ranking = subsets(G, args.coll, args.size, args.k, profile=args.nccl)
    shown = ranking if args.top is None else ranking[:args.top]
    if args.json:
        _print_json({"system": G.graph["system"], "collective": args.coll, "k": args.k,
                     "size_bytes": args.size, "count": len(ranking),
                     "subsets": [{"gpus": list(r.gpus), "busbw_gbps": to_GBps(r.busbw),
                                  "algbw_gbps": to_GBps(r.algbw), "time_us": to_us(r.time),
                                  "algorithm": r.algorithm, "protocol": r.protocol,
                                  "nchannels": r.nchannels} for r in shown]})
        return
    print(f"{len(ranking)} sets of {args.k} GPUs on {G.graph['name']}, ranked by predicted "
          f"{args.coll} busbw at {args.size} B" + ("" if args.top is None else f" (top {len(shown)})"))
    headers = ["rank", "GPUs", "busbw (GB/s)", "algbw (GB/s)", "time (us)", "algo", "proto", "nch"]
    rows = [[i + 1, ",".join(map(str, r.gpus)), f"{to_GBps(r.busbw):.2f}", f"{to_GBps(r.algbw):.2f}",
             f"{to_us(r.time):.2f}", r.algorithm, r.protocol, r.nchannels] for i, r in enumerate(shown)]
    print(format_table(headers, rows, align="><>>><<>"))


def _compare(args) -> None:
    fabrics = [topo.build(name) for name in args.systems]
    counts = {G.graph.get("system", name): len(topo.gpus(G)) for name, G in zip(args.systems, fabrics)}
    ngpus = args.ngpus if args.ngpus is not None else min(counts.values())
    if args.ngpus is None and len(set(counts.values())) > 1:
        raise _UsageError(f"expected systems with the same GPU count, received "
                          f"{', '.join(f'{k}: {v}' for k, v in counts.items())}; pass --ngpus N to "
                          f"compare the first N GPUs of each")
    sizes = np.array(_sweep(args.minbytes, args.maxbytes, args.stepfactor), dtype=np.int64)
    estimates = [estimate(G, args.collective, sizes, list(range(ngpus)), profile=args.nccl)
                 for G in fabrics]
    names = [G.graph.get("system", n) for n, G in zip(args.systems, fabrics)]
    if args.out:
        from .report import write_compare_figure  # plotly only for this option
        write_compare_figure(estimates, names, args.out)
    if args.json:
        _print_json({"collective": args.collective, "ngpus": ngpus, "systems": names,
                     "rows": [{"size_bytes": int(size),
                               "results": [{"system": name, "time_us": float(to_us(np.atleast_1d(e.time)[i])),
                                            "busbw_gbps": float(to_GBps(np.atleast_1d(e.busbw)[i])),
                                            "algorithm": str(np.atleast_1d(e.algorithm)[i]),
                                            "protocol": str(np.atleast_1d(e.protocol)[i])}
                                           for name, e in zip(names, estimates)]}
                              for i, size in enumerate(sizes)]})
        return
    print(f"Predicted {args.collective} on {ngpus} GPUs: " + " vs ".join(
        f"{name} ({e.model})" for name, e in zip(names, estimates)))
    headers = ["size (B)"]
    for name in names:
        headers += [f"{name} time (us)", f"{name} busbw (GB/s)", "algo/proto"]
    headers.append("faster")
    rows = []
    for i, size in enumerate(sizes):
        row = [str(int(size))]
        times = []
        for e in estimates:
            t = np.atleast_1d(e.time)[i]
            times.append(t)
            row += [f"{to_us(t):.2f}", f"{to_GBps(np.atleast_1d(e.busbw)[i]):.2f}",
                    f"{np.atleast_1d(e.algorithm)[i]}/{np.atleast_1d(e.protocol)[i]}"]
        order = np.argsort(times)
        ratio = times[order[1]] / times[order[0]] if len(times) > 1 else 1.0
        row.append(f"{names[order[0]]} x{ratio:.2f}")
        rows.append(row)
    print(format_table(headers, rows, align=">" + ">><" * len(names) + "<"))


def _report(args) -> None:
    from .report import write_report  # imports plotly: only this command pays for it

    written = write_report(args.out, args.names or None)
    print(f"wrote {written.path} ({written.nbytes / 1e6:.1f} MB) comparing {', '.join(written.systems)}")


def _add_model_options(parser, *, sizes: str) -> None:
    parser.add_argument("coll", metavar="COLLECTIVE", choices=COLLECTIVE_NAMES,
                        help="one of " + ", ".join(COLLECTIVE_NAMES))
    parser.add_argument("--system", required=True, help="system name: " + ", ".join(topo.SYSTEMS))
    parser.add_argument("--nccl", choices=sorted(PROFILES), default=None,
                        help="NCCL version profile of the model (default: the reference version)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    if sizes == "one":
        parser.add_argument("-s", "--size", type=parse_size, required=True,
                            help="message size in bytes (8, 64K, 256M, 1G)")


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

    coll = commands.add_parser("collective", help="predicted nccl-tests sweep of a collective")
    _add_model_options(coll, sizes="sweep")
    coll.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7 (default: all)")
    coll.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("32M"),
                      help="smallest size (default 32M, as nccl-tests)")
    coll.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("32M"),
                      help="largest size (default 32M)")
    coll.add_argument("-f", "--stepfactor", type=_factor, default=2, help="size multiplier (default 2)")
    coll.add_argument("--algo", choices=("ring", "tree"), help="force NCCL's algorithm")
    coll.add_argument("--proto", choices=("LL", "LL128", "Simple"), help="force NCCL's protocol")
    coll.add_argument("--explain", action="store_true",
                      help="show channels, bottleneck, latency and bandwidth terms")
    coll.set_defaults(run=_collective)

    pairs = commands.add_parser("pairs", help="busbw of every 2-GPU communicator")
    _add_model_options(pairs, sizes="one")
    pairs.set_defaults(run=_pairs)

    sets = commands.add_parser("subsets", help="every k-GPU set ranked by busbw")
    _add_model_options(sets, sizes="one")
    sets.add_argument("-k", type=int, required=True, help="GPUs per set")
    sets.add_argument("--top", type=int, help="show only the best N")
    sets.set_defaults(run=_subsets)

    compare = commands.add_parser("compare", help="a collective on the same GPU count of several systems")
    compare.add_argument("systems", metavar="SYSTEM", nargs="+",
                         help="systems or clusters: " + ", ".join(topo.SYSTEMS) + ", 2xdgx1v, 16xdgx2:rail")
    compare.add_argument("--collective", default="all_reduce", choices=COLLECTIVE_NAMES,
                         help="collective (default all_reduce)")
    compare.add_argument("--ngpus", type=int, help="compare the first N GPUs of each system")
    compare.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("1K"),
                         help="smallest size (default 1K)")
    compare.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("1G"),
                         help="largest size (default 1G)")
    compare.add_argument("-f", "--stepfactor", type=_factor, default=4, help="size multiplier (default 4)")
    compare.add_argument("--nccl", choices=sorted(PROFILES), default=None, help="NCCL version profile")
    compare.add_argument("--out", help="also write an HTML figure of busbw and time by size")
    compare.add_argument("--json", action="store_true", help="print JSON instead of a table")
    compare.set_defaults(run=_compare)

    report = commands.add_parser("report", help="write an offline HTML report comparing systems")
    report.add_argument("names", metavar="NAME", nargs="*",
                        help="systems or clusters (default: all built-in): " + ", ".join(topo.SYSTEMS)
                        + ", 2xdgx1v, ...")
    report.add_argument("--out", default="report.html", metavar="FILE",
                        help="HTML file to write, replaced atomically (default: report.html)")
    report.set_defaults(run=_report)
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


if __name__ == "__main__":  # python -m models.cli
    raise SystemExit(main())
