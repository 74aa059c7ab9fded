# PYTHON_ARGCOMPLETE_OK (shell completion: the completion extra, see _complete)
"""The ``dgxtopo`` command line: thin, parse -> size the work -> call the library -> print.

Subcommands (``dgxtopo COMMAND --help`` for each)
-------------------------------------------------
``systems``     the built-in systems with their GPUs, links and bisection bandwidth.
``topo``        a system's connection matrix in the layout of ``nvidia-smi topo -m``.
``p2p``         predicted GPU-to-GPU bandwidth and latency as p2pBandwidthLatencyTest prints them.
``collective``  a predicted nccl-tests sweep, and what NCCL would run (``--explain``: why).
``pairs``       busbw of every 2-GPU communicator.
``subsets``     every k-GPU set ranked by busbw.
``compare``     the same collective on the same GPU count of several systems.
``report``      one self-contained HTML file comparing systems, with figures.
``calibrate``   fit the measurement model to nccl-tests outputs; print the fitted constants.
``check``       measured vs predicted per size (time, busbw, error) for one nccl-tests output.
``import``      read ``nvidia-smi topo -m`` text or NCCL's topology XML; write the fabric as JSON.
``export``      write a system (or a topology file, after what-ifs) as JSON or GraphML.
``bound``       the best busbw any schedule could reach on a GPU set, beside NCCL's, and the cut.
``whatif``      every single (or pair of) failure of a kind of component, ranked by the loss.
``plan``        a training step of a workload on a fabric: layout, placement, where time goes.
``gpus``        GPU generations ranked for a workload, with the resource that binds.
``simulate``    a training step (or a task graph) as a timeline: overlap, contention, a trace.
``schedule``    ``schedule check FILE``: an MSCCL XML schedule read and checked as its runtime would.

Every command that takes a system names it ``--system SPEC`` (``compare`` and ``report`` take
several: ``--system dgx2 2xdgx1v``): the one form that reads the same next to each command's own
positionals (a collective, a workload, a file). Each also takes ``--topo-file FILE`` (a fabric
written by import or export) instead, and ``--nodes N [--network fat_tree|rail|rail_only]`` to
join N copies of it. The modelling commands take what-ifs, ``--fail SPEC`` and ``--degrade SPEC``
(:mod:`models.studies.whatif`).

Conventions: every command that produces a result prints it as JSON with ``--json`` (the
commands that write a file: what they wrote, with its summary); every ``--out`` says what it
wrote unless ``--json``; ``--top`` cuts the JSON like the table; ``COMMAND --help`` ends with the
grammars that command's options take, and only those. Bad input (an unknown system, a malformed
option, work beyond a limit) prints one line on stderr that points to the command's help and
exits 2; a limit is raised by the library as :class:`topo.LimitError` naming its keyword, which
the command line maps to its option. Ctrl-C prints one line and exits 130, leaving no partial file.
Work that takes more than about 2 s shows a progress bar on stderr when stderr is a terminal
(never with ``--json``). The JSON forms are documented in the README ("JSON output") and are
stable. Tables live in :mod:`models.present.text`, JSON shapes in :mod:`models.present.json_shapes`,
the ``--explain`` working in :mod:`models.present.explain`.

Adding a command: write ``_NAME_arguments(parser)`` and ``_NAME(args)`` and append a
:class:`Command` to :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import sys
import textwrap
from types import MappingProxyType
from dataclasses import dataclass
from typing import Callable

import topo
from topo.errors import DgxTopoError, LimitError

from .startup import read_startup_data

# The grammar of --fail and --degrade (models.studies.whatif.FAILURE_GRAMMAR, shortened for --help).
FAIL_GRAMMAR = "NODE, A-B or A-B:K"
DEGRADE_GRAMMAR = "A-B=F with 0 < F <= 1"

__all__ = ["main", "build_parser", "Command", "COMMANDS", "parse_size", "MAX_GPUS", "MAX_HOST_GPUS", "MAX_PAIRS",
           "MAX_SETS", "MAX_SEARCHES", "MAX_PLAN_GPUS", "MAX_BOUND_GPUS", "MAX_REPORT_GPUS", "ALGORITHMS"]

#: Default of ``--max-gpus``: the most GPUs a system or cluster may have before it is built.
MAX_GPUS = 4096
#: Default of ``--max-host-gpus``: the most GPUs one host of a fabric file may hold. NCCL's channel
#: search over a host (models.engine.nccl.search) routes every GPU pair and checks every pair at
#: each step, so its work grows with the square of the host's GPUs and more: an imported 32-GPU
#: server takes seconds, 128 GPUs minutes, 300 GPUs more than an hour (issue 24). The built-in
#: hosts hold at most 16 (DGX-2), the largest PCIe servers 20.
MAX_HOST_GPUS = 32
#: Default of ``--limit`` for ``p2p`` (GPU pairs routed: 16xdgx2, 256 GPUs, 65,280 pairs, fits)
#: and for alltoall / sendrecv in ``collective`` (GPU pairs routed: those inside each host plus
#: one per GPU across hosts; 4096 GPUs of 256 DGX-2 route 65,536 and fit).
MAX_PAIRS = 70_000
#: Default of ``--limit`` for ``pairs`` and ``subsets``: the most GPU sets, C(GPUs, k). Every
#: k on every built-in system fits (at most C(16, 8) = 12,870).
MAX_SETS = 50_000
#: Default of ``--max-searches`` for ``pairs`` and ``subsets``: the most estimates (one channel
#: search each per GPU set that differs up to the fabric's symmetry). Built-in systems need at
#: most 61 (dgx1v, k = 4); 2xdgx1v needs 349 for k = 4 and 8,458 for k = 8 (the GPU-set key keeps
#: rank order: models.engine.symmetry).
MAX_SEARCHES = 150
#: Default of ``--limit`` for ``plan``: the most GPUs a planned job may use. A layout search
#: estimates every group shape of every layout; 64 GPUs (8xdgxh100) take about 15 s.
MAX_PLAN_GPUS = 128
#: Default of ``--limit`` for ``bound``: the most GPUs in the set. The cut bounds grow faster
#: than linearly with the GPUs (4xdgx2, 64 GPUs: about 1 s; 16xdgx2, 256 GPUs: about 50 s);
#: alltoall's LP has its own limit (models.studies.bounds.MAX_LP_VARIABLES).
MAX_BOUND_GPUS = 128
#: Default of ``--max-gpus`` for ``report``: the most GPUs of a system in the report. The page
#: estimates every collective at every size, the set classes and a training step of each system:
#: 64xdgx2 (1,024 GPUs) took more than 38 s of CPU (issue 24); 128 is plan's and bound's limit.
MAX_REPORT_GPUS = 128
#: What ``--algo`` forces (NCCL's algorithms by name, :data:`models.engine.nccl.ALGORITHMS`, read
#: from the start-up data; a release or fabric without one says so in one line).
ALGORITHMS = tuple(read_startup_data()["algorithms"])

_SPEC_HELP = (
    "Systems (--system SPEC): {grammar}. NAME is a built-in system ({names}; case, '-' "
    "and '_' ignored) or a variant of one ({variants}); NxNAME[:network] is a cluster of N of them "
    "joined by an InfiniBand network, fat_tree (default), rail or rail_only.")


def _spec_help() -> str:
    """The system spec's grammar and names, from the shipped start-up data (models.present.startup:
    the registry's, without importing it)."""
    data = read_startup_data()
    return _SPEC_HELP.format(grammar=data["spec_grammar"], names=", ".join(data["systems"]),
                             variants=", ".join(data["variants"]))
_TOPO_FILE_HELP = (
    "Topology files (--topo-file FILE): a fabric written by 'dgxtopo import' or 'dgxtopo export', "
    "JSON or GraphML (told apart by content), used instead of a system; --nodes N joins N copies "
    "of it like NxNAME does a built-in system.")
_WHATIF_HELP = (
    f"What-ifs: --fail {FAIL_GRAMMAR} takes out a part (gpu2, nvswitch3, mlx5_1) or the links "
    f"between two nodes (gpu0-gpu3), or K of them (gpu0-gpu3:1); --degrade {DEGRADE_GRAMMAR} "
    f"(gpu0-gpu3=0.5) slows links down. Both repeat; node ids as the fabric names them.")
_SIZE_HELP = ("Sizes (SIZE) are bytes as nccl-tests takes them: 8, 64K, 256M, 1G, 2T (K, M, G, T "
              "are binary multiples: 64K = 65536).")


class _UsageError(Exception):
    """A malformed command line; reported in one line like every other input error."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser with one-line errors and an epilog that may be a callable, called when the
    help is first formatted: filling the grammars' text costs more than parsing a command line."""

    def format_help(self):
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()

    def error(self, message):  # argparse would print the usage and exit; we report one line.
        raise _UsageError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------------ parsing input values
# argparse types over topo's strict shared parsers (one parser per kind of value). A
# DgxTopoError is a ValueError, which argparse would swallow into "invalid value": re-raised
# as ArgumentTypeError, its message reaches the user.
def parse_size(text: str) -> int:
    """A size as nccl-tests takes it: ``8``, ``64K``, ``256M``, ``1G`` (binary multiples). [bytes]

    >>> parse_size("256M"), parse_size("8")
    (268435456, 8)
    """
    from topo.units import parse_nbytes

    try:
        return parse_nbytes(str(text))
    except DgxTopoError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _count(minimum: int):
    """An argparse type: a whole number >= ``minimum`` (argparse names the option)."""
    from topo.units import parse_count

    def parse(text: str) -> int:
        try:
            return parse_count(str(text), name="value", minimum=minimum)
        except DgxTopoError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return parse


def _seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, received {text!r}")
    return value


# ------------------------------------------------------------------------- sizing work
def _too_much(what: str, size: int, limit: int, option: str) -> _UsageError:
    return _UsageError(f"{what}, more than the limit of {limit}: raise it with {option} N "
                       f"(the work grows with it)")


def _sized(spec: str, max_gpus: int) -> tuple:
    """``(parsed spec, one host of it built)``: the GPUs of a system spec counted on one host,
    before any cluster is joined; beyond ``max_gpus``, refused."""
    from topo.registry import parse_system_spec

    parsed = parse_system_spec(spec, max_hosts=max_gpus)  # every host has at least one GPU
    host = topo.build(parsed.system)
    gpus = parsed.hosts * len(topo.gpus(host))
    if gpus > max_gpus:
        raise _too_much(f"{spec} has {gpus} GPUs", gpus, max_gpus, "--max-gpus")
    return parsed, host


def _built(spec: str, sized: tuple, limit: int) -> object:
    """The system or cluster of a spec :func:`_sized` sized: a single system is the host it built
    (``topo.build`` of the spec builds the same), a cluster is joined by ``topo.build``."""
    parsed, host = sized
    return topo.build(spec, max_hosts=limit) if parsed.is_cluster else host


def _build(spec: str, args) -> object:
    """Build a system or cluster after checking its size against ``--max-gpus``."""
    limit = getattr(args, "max_gpus", MAX_GPUS)
    return _built(spec, _sized(spec, limit), limit)


def _progress(args, description: str, unit: str):
    from .progress import progress_bar, wants_progress

    return progress_bar(description, enabled=wants_progress(json_output=getattr(args, "json", False)),
                        unit=unit)


def _sweep(minimum: int, maximum: int, factor: int) -> list:
    if maximum < minimum:
        raise _UsageError(f"the largest size ({maximum} B) is below the smallest ({minimum} B): "
                          f"expected -e >= -b")
    sizes, size = [], minimum
    while size <= maximum:
        sizes.append(size)
        size = size * factor if size else 1
    return sizes


def _print_json(data) -> None:
    print(json.dumps(data, indent=2))


# ---------------------------------------------------------------------------- commands
@dataclass(frozen=True)
class Command:
    """One ``dgxtopo`` subcommand: its name, one-line help, arguments and action."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]
    description: str = ""
    #: Grammars of this command's own values, printed after the shared ones by ``--help``; a
    #: function giving them where they come from a module only the command needs.
    epilog: str | Callable[[], str] = ""


def _json_option(parser, what: str = "a table") -> None:
    parser.add_argument("--json", action="store_true", help=f"print JSON instead of {what}")


def _max_gpus_option(parser, default: int = MAX_GPUS) -> None:
    parser.add_argument("--max-gpus", type=_count(1), default=default, metavar="N",
                        help=f"refuse systems with more than N GPUs before building them "
                             f"(default {default})")
    parser.add_argument("--max-host-gpus", type=_count(1), default=MAX_HOST_GPUS, metavar="N",
                        help=f"refuse a --topo-file fabric with a host of more than N GPUs (default "
                             f"{MAX_HOST_GPUS}; NCCL's search over one host grows with the square of its GPUs)")


def _topo_file_options(parser, *, many: bool = False) -> None:
    """``--topo-file`` (repeatable with ``many``), ``--nodes``, ``--network``."""
    if many:
        parser.add_argument("--topo-file", action="append", default=[], metavar="FILE",
                            help="also a fabric written by import or export (JSON or GraphML); repeatable")
    else:
        parser.add_argument("--topo-file", metavar="FILE",
                            help="a fabric written by import or export (JSON or GraphML) instead of a system")
    parser.add_argument("--nodes", type=_count(1), metavar="N",
                        help="with --topo-file: a cluster of N copies of the file's system")
    parser.add_argument("--network", choices=topo.NETWORKS,
                        help=f"with --nodes: the InfiniBand network joining them, {', '.join(topo.NETWORKS)} "
                             f"(default fat_tree)")
    _max_input_option(parser)


def _max_input_option(parser) -> None:
    parser.add_argument("--max-input", type=parse_size, metavar="SIZE",
                        help="refuse input files larger than SIZE (default: per kind, "
                             "topo.inputs.INPUT_KINDS: 64M for fabrics, 16M for benchmark outputs, "
                             "imports and MSCCL schedules, 1M for calibrations)")


def _whatif_options(parser) -> None:
    parser.add_argument("--fail", action="append", default=[], metavar="SPEC",
                        help=f"take out a part or links, {FAIL_GRAMMAR}: gpu2, nvswitch3, mlx5_1, "
                             f"gpu0-gpu3, gpu0-gpu3:1 (repeatable)")
    parser.add_argument("--degrade", action="append", default=[], metavar="SPEC",
                        help=f"slow links down, {DEGRADE_GRAMMAR}: gpu0-gpu3=0.5 (repeatable)")


def _system_option(parser, *, whatif: bool = True) -> None:
    """``--system SPEC`` (every command names its system so), ``--topo-file`` and what-ifs."""
    parser.add_argument("--system", metavar="SPEC", help="system or cluster (see below)")
    _topo_file_options(parser)
    if whatif:
        _whatif_options(parser)
    _max_gpus_option(parser)


def _systems_option(parser, *, default: str) -> None:
    """``--system SPEC [SPEC ...]`` for the commands that take several (compare, report)."""
    parser.add_argument("--system", metavar="SPEC", nargs="+", action="extend", default=[],
                        help=f"systems or clusters, repeatable ({default}; see below)")


def _read_text(path: str, kind: str, args) -> str:
    """An input file's text through topo.inputs (regular files or -, sized before reading)."""
    from topo.inputs import read_input

    return read_input(path, kind, limit=getattr(args, "max_input", None))


def _inputs(args) -> list:
    """Every file the command line names as an input (--topo-file, --calibration, --graph, FILE...)."""
    paths = []
    for name in ("file", "files", "topo_file", "calibration", "graph"):
        value = getattr(args, name, None)
        paths += value if isinstance(value, list) else [] if value is None else [value]
    if paths.count("-") > 1:
        raise _UsageError("standard input (-) can be read once: expected at most one input given as -")
    return paths


def _load_topo_file(path: str, args=None) -> object:
    """The fabric of a JSON or GraphML file written by import or export (told apart by content,
    :func:`models.present.file_kinds.file_kind`)."""
    from .file_kinds import FileKind, file_kind, misplaced

    text = _read_text(path, "fabric", args)
    kind = file_kind(text)
    try:
        if kind in (FileKind.FABRIC_JSON, FileKind.JSON):
            return topo.from_json(text.lstrip("\ufeff \t\r\n"))
        if kind in (FileKind.FABRIC_GRAPHML, FileKind.XML):
            return topo.from_graphml(text.lstrip("\ufeff \t\r\n"))
    except DgxTopoError as error:
        raise type(error)(f"{path}: {error}") from None
    raise _UsageError(misplaced(path, kind, "a fabric written by 'dgxtopo import' or 'dgxtopo export' "
                                            "(JSON or GraphML)"))


def _from_topo_file(path: str, args) -> object:
    """A fabric from ``--topo-file``, joined into ``--nodes`` copies; sized against --max-gpus."""
    limit = getattr(args, "max_gpus", MAX_GPUS)
    G = _load_topo_file(path, args)
    gpus = len(topo.gpus(G))
    nodes = getattr(args, "nodes", None)
    total = gpus * (nodes or 1)
    if total > limit:
        what = f"{nodes} x {path}" if nodes else path
        raise _too_much(f"{what} has {total} GPUs", total, limit, "--max-gpus")
    host_limit = getattr(args, "max_host_gpus", None)  # the commands that search a host's channels
    per_host = collections.Counter(G.nodes[g]["host"] for g in topo.gpus(G))
    if host_limit is not None and per_host and max(per_host.values()) > host_limit:
        most = max(per_host.values())
        host = min(h for h, count in per_host.items() if count == most)
        raise _too_much(f"{path} has {most} GPUs in host {host}", most, host_limit, "--max-host-gpus")
    if nodes is None:
        return G
    return topo.cluster(G, nodes, network=getattr(args, "network", None) or "fat_tree", max_hosts=limit)


def _check_cluster_options(args) -> None:
    files = getattr(args, "topo_file", None)
    if getattr(args, "nodes", None) is not None and not files:
        raise _UsageError("--nodes N joins copies of a --topo-file fabric: expected --topo-file FILE "
                          "(a cluster of a built-in system is written NxNAME, such as 2xdgx1v)")
    if getattr(args, "network", None) is not None and getattr(args, "nodes", None) is None:
        raise _UsageError("--network applies to a cluster: expected --nodes N with it")


def _whatif(G, args):
    """``G`` with the command line's --fail and --degrade applied (models.studies.whatif)."""
    from ..studies.whatif import apply_failures

    fail, degrade = getattr(args, "fail", None) or (), getattr(args, "degrade", None) or ()
    if not fail and not degrade:
        return G
    return apply_failures(G, fail, degrade).graph


def _fabric(args, spec: str | None) -> object:
    """The one system a command runs on: a spec or ``--topo-file`` (exactly one), what-ifs applied."""
    path = getattr(args, "topo_file", None)
    _check_cluster_options(args)
    if spec is not None and path is not None:
        raise _UsageError("expected either --system SPEC or --topo-file FILE, received both")
    if spec is None and path is None:
        raise _UsageError("the following arguments are required: --system SPEC (or --topo-file FILE)")
    G = _from_topo_file(path, args) if path is not None else _build(spec, args)
    return _whatif(G, args)


def _fabrics(args, specs) -> list:
    """Several systems (``compare``, ``report``): the specs, then each ``--topo-file``."""
    _check_cluster_options(args)
    limit = getattr(args, "max_gpus", MAX_GPUS)
    sized = [_sized(spec, limit) for spec in specs]  # every spec sized before a cluster is joined
    fabrics = ([_built(spec, size, limit) for spec, size in zip(specs, sized)]
               + [_from_topo_file(path, args) for path in args.topo_file])
    if not fabrics:
        raise _UsageError("expected at least one system: SPEC or --topo-file FILE")
    return [_whatif(G, args) for G in fabrics]


def _nccl_option(parser) -> None:
    # --nccl takes any release the profiles cover; nccl_profile() raises a one-line typed error.
    from ..engine.nccl.profiles import PROFILES

    parser.add_argument("--nccl", metavar="VERSION", default=None, help=(
        f"NCCL release to model, {min(p.first for p in PROFILES.values())[0]}.0 to "
        f"{'.'.join(map(str, max(p.last for p in PROFILES.values())[:2]))}.x, e.g. 2.3.7, 2.12.12, "
        f"v2.27.7-1 (default: the reference version); each maps to the profile governing it "
        f"(models.present.versions_text.format_versions_table())"))


def _gpus_per_thread_option(parser, *, default=1, help_default="1: one process per GPU, as "
                            "training frameworks run") -> None:
    parser.add_argument("-g", "--gpus-per-thread", dest="g", type=_count(1), default=default, metavar="N",
                        help=f"GPUs one host thread drives, nccl-tests' -g (default {help_default})")


def _calibration_option(parser) -> None:
    parser.add_argument("--calibration", metavar="FILE",
                        help="measurement constants fitted by 'dgxtopo calibrate' (its JSON file; "
                             "default: the constants fitted to the shipped DGX-2 runs)")


def _measurement_options(parser) -> None:
    """``-g N`` and ``--calibration FILE``: how the predicted time becomes what nccl-tests measures."""
    _gpus_per_thread_option(parser)
    _calibration_option(parser)


def _calibration(args):
    """The ``--calibration`` file read as a :class:`models.studies.calibration.Calibration` (None without one)."""
    path = getattr(args, "calibration", None)
    if path is None:
        return None
    from ..studies.calibration import Calibration

    text = _read_text(path, "calibration", args)
    return Calibration.from_json(text, source="standard input" if path == "-" else path)


def _measurement_note(args) -> str:
    from .text import measurement_note

    return measurement_note(getattr(args, "g", 1) or 1, getattr(args, "calibration", None))


def _collective_argument(parser) -> None:
    from ..predict.collectives import COLLECTIVE_NAMES

    parser.add_argument("coll", metavar="COLLECTIVE", choices=COLLECTIVE_NAMES,
                        help="one of " + ", ".join(COLLECTIVE_NAMES))


def _sweep_options(parser, *, minimum: str, maximum: str, factor: int) -> None:
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size(minimum), metavar="SIZE",
                        help=f"smallest size (default {minimum})")
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size(maximum), metavar="SIZE",
                        help=f"largest size (default {maximum})")
    parser.add_argument("-f", "--stepfactor", type=_count(2), default=factor, metavar="F",
                        help=f"size multiplier, an integer >= 2 (default {factor})")


def _sets_options(parser) -> None:
    parser.add_argument("--limit", type=_count(1), default=MAX_SETS, metavar="N",
                        help=f"refuse more than N GPU sets (default {MAX_SETS})")
    parser.add_argument("--max-searches", type=_count(1), default=MAX_SEARCHES, metavar="N",
                        help=f"refuse sets that need more than N estimates, one per set that differs "
                             f"up to the fabric's symmetry (default {MAX_SEARCHES})")


# systems
def _systems_arguments(parser) -> None:
    _json_option(parser)


def _systems(args) -> None:
    # The same for every user: shipped (models.present.startup), so that it answers at once.
    print(read_startup_data()["systems_json" if args.json else "systems_table"])


# topo
def _topo_arguments(parser) -> None:
    _system_option(parser)
    _json_option(parser, "the matrix")
    parser.add_argument("--no-legend", action="store_true", help="omit the legend")


def _topo(args) -> None:
    G = _fabric(args, args.system)
    matrix = topo.connection_matrix(G)
    if args.json:
        _print_json({"system": G.graph["system"], **matrix.to_dict()})
        return
    print(topo.format_connection_matrix(matrix, legend=not args.no_legend))


# p2p
def _p2p_arguments(parser) -> None:
    from ..predict.p2p import MODES

    _system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0,3,5-7 (default: all)")
    parser.add_argument("--mode", choices=MODES, default="route",
                        help="route: the copy CUDA makes (default); maxflow: NVLink maximum flow")
    parser.add_argument("--bidirectional", action="store_true",
                        help="both directions at once instead of one")
    parser.add_argument("--latency", action="store_true", help="also print the latency matrix")
    parser.add_argument("--p2p", choices=("enabled", "disabled"), default="enabled",
                        help="peer access: enabled (default) or disabled, every pair staged "
                             "through host memory (p2pBandwidthLatencyTest's P2P=Disabled)")
    _json_option(parser, "the matrices (every matrix at once)")
    parser.add_argument("--limit", type=_count(1), default=MAX_PAIRS, metavar="N",
                        help=f"refuse more than N GPU pairs (default {MAX_PAIRS})")


def _p2p(args) -> None:
    from ..predict.p2p import p2p_report
    from .json_shapes import p2p_json
    from .text import format_p2p_report

    G = _fabric(args, args.system)
    report = p2p_report(G, args.gpus, mode=args.mode, p2p=args.p2p, max_pairs=args.limit)
    if args.json:
        _print_json(p2p_json(report))
        return
    print(format_p2p_report(report, bidirectional=args.bidirectional, latency=args.latency))


# collective
def _collective_arguments(parser) -> None:
    _collective_argument(parser)
    _system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7 (default: all)")
    _sweep_options(parser, minimum="32M", maximum="32M", factor=2)
    parser.add_argument("--algo", choices=ALGORITHMS,
                        help="force NCCL's algorithm: " + ", ".join(ALGORITHMS) + " (nvls and nvls_tree "
                             "need NVSwitches that reduce, as on dgxh100; pat a release that has it)")
    parser.add_argument("--proto", choices=("LL", "LL128", "Simple"), help="force NCCL's protocol")
    _nccl_option(parser)
    _measurement_options(parser)
    parser.add_argument("--explain", action="store_true",
                        help="show channels, bottleneck, latency and bandwidth terms (a field with --json)")
    _json_option(parser)
    parser.add_argument("--limit", type=_count(1), default=MAX_PAIRS, metavar="N",
                        help=f"alltoall and sendrecv: refuse routing more than N GPU pairs (alltoall "
                             f"routes the pairs inside each host, and one per GPU across hosts; "
                             f"default {MAX_PAIRS})")


def _collective(args) -> None:
    import numpy as np

    from ..engine.nccl.algorithms.catalog import algorithm_named
    from ..engine.nccltests import count_from_nbytes
    from ..predict.collectives import estimate
    from .json_shapes import collective_json
    from .text import collective_table

    calibration = _calibration(args)  # a bad file fails before any work
    G = _fabric(args, args.system)
    nranks = len(topo.select_gpus(G, args.gpus))
    requested = np.array(_sweep(args.minbytes, args.maxbytes, args.stepfactor), dtype=np.int64)
    # nccl-tests rounds every size down to whole float32 elements per rank.
    counts, sizes = (np.atleast_1d(x) for x in count_from_nbytes(args.coll, requested, nranks))
    algorithms = None if args.algo is None else (algorithm_named(args.algo),)
    e = estimate(G, args.coll, sizes, args.gpus, protocol=args.proto, profile=args.nccl, gpus_per_thread=args.g,
                 calibration=calibration, max_pairs=args.limit, algorithms=algorithms)
    if args.json:
        _print_json(collective_json(G, e, explain=args.explain))
    else:
        print(collective_table(G, e, counts, explain=args.explain, measurement=_measurement_note(args)))


# pairs
def _pairs_arguments(parser) -> None:
    _collective_argument(parser)
    _system_option(parser)
    parser.add_argument("-s", "--size", type=parse_size, required=True, metavar="SIZE",
                        help="message size in bytes (8, 64K, 256M, 1G)")
    _nccl_option(parser)
    _measurement_options(parser)
    _bound_column_option(parser)
    _json_option(parser)
    _sets_options(parser)


def _bound_column_option(parser) -> None:
    parser.add_argument("--bound", action="store_true",
                        help="also the optimal-schedule bound of each set and NCCL's share of it "
                             "('NCCL gets X of the Y this fabric allows'; relays through switches, "
                             "as 'dgxtopo bound' by default)")


def _ranked(args, k: int, function):
    """``(graph, prepared fabric, result)``: one prepared fabric for the ranking and its bounds."""
    from ..engine.fabric import PreparedFabric

    calibration = _calibration(args)  # a bad file fails before any work
    G = _fabric(args, args.system)
    fabric = PreparedFabric(G, nccl=args.nccl)  # the command's own graph: frozen while it runs
    with _progress(args, f"{args.coll} on sets of {k} GPUs", "search") as progress:
        return G, fabric, function(fabric, collective=args.coll, nbytes=args.size, gpus_per_thread=args.g,
                                   calibration=calibration, max_sets=args.limit, max_searches=args.max_searches,
                                   progress=progress)


def _pairs(args) -> None:
    from ..predict.collectives import pairwise
    from .json_shapes import pairs_json
    from .text import pairs_table

    G, fabric, matrix = _ranked(args, 2, pairwise)
    bounds = None
    if args.bound:
        from ..studies.bounds import pairwise_bounds
        bounds = pairwise_bounds(fabric, args.coll)
    if args.json:
        _print_json(pairs_json(G, args.coll, args.size, matrix, bounds))
    else:
        print(pairs_table(G, args.coll, args.size, matrix, bounds))


def _set_bounds(fabric, collective: str, results) -> dict:
    """GPU ids -> bound busbw [B/s] of each set shown, one bound per class of the whole graph's
    symmetry (the bounds' key, models.engine.symmetry; not the estimates' key, which ignores
    links NCCL's paths do not use and a bound may), as :func:`models.subset_bounds` does."""
    from ..studies.bounds import bound

    key = fabric.symmetry.graph().key
    nodes = list(fabric.ids)
    found: dict = {}
    values = {}
    for r in results:
        if len(r.gpus) < 2:
            values[tuple(r.gpus)] = 0.0
            continue
        k = key([nodes[i] for i in r.gpus])
        if k not in found:
            found[k] = bound(fabric, collective, 2**30, list(r.gpus), nccl=False).bound_busbw
        values[tuple(r.gpus)] = found[k]
    return values


# subsets
def _subsets_arguments(parser) -> None:
    _collective_argument(parser)
    _system_option(parser)
    parser.add_argument("-k", type=_count(1), required=True, help="GPUs per set")
    parser.add_argument("-s", "--size", type=parse_size, required=True, metavar="SIZE",
                        help="message size in bytes (8, 64K, 256M, 1G)")
    parser.add_argument("--top", type=_count(1), metavar="N", help="show only the best N")
    _nccl_option(parser)
    _measurement_options(parser)
    _bound_column_option(parser)
    _json_option(parser)
    _sets_options(parser)


def _subsets(args) -> None:
    from ..predict.collectives import subsets
    from .json_shapes import subsets_json
    from .text import subsets_table

    G, fabric, ranking = _ranked(args, args.k, lambda G, **kw: subsets(G, k=args.k, **kw))
    shown = ranking if args.top is None else ranking[:args.top]
    bounds = _set_bounds(fabric, args.coll, shown) if args.bound else None
    if args.json:
        _print_json(subsets_json(G, args.coll, args.k, args.size, ranking, shown, bounds))
    else:
        print(subsets_table(G, args.coll, args.k, args.size, ranking, shown, bounds))


# compare
def _compare_arguments(parser) -> None:
    from ..predict.collectives import COLLECTIVE_NAMES

    _systems_option(parser, default="at least one, or --topo-file")
    _topo_file_options(parser, many=True)
    _whatif_options(parser)
    parser.add_argument("--collective", default="all_reduce", choices=COLLECTIVE_NAMES,
                        help="collective (default all_reduce)")
    parser.add_argument("--ngpus", type=_count(1), metavar="N",
                        help="compare the first N GPUs of each system")
    _sweep_options(parser, minimum="1K", maximum="1G", factor=4)
    _nccl_option(parser)
    _measurement_options(parser)
    parser.add_argument("--out", metavar="FILE",
                        help="also write an HTML figure of busbw and time by size (replaced atomically)")
    _json_option(parser)
    _max_gpus_option(parser)


def _compare_name(G, args) -> str:
    """A system's label in compare: its spec name, or its display name after a what-if."""
    return G.graph["name"] if (args.fail or args.degrade) else G.graph.get("system", G.graph["name"])


def _compare(args) -> None:
    import numpy as np

    from ..predict.collectives import estimate
    from .json_shapes import compare_json
    from .text import compare_table

    calibration = _calibration(args)
    fabrics = _fabrics(args, list(args.system))
    counts = [(G.graph["name"], len(topo.gpus(G))) for G in fabrics]
    ngpus = args.ngpus if args.ngpus is not None else min(n for _, n in counts)
    if args.ngpus is None and len({n for _, n in counts}) > 1:
        raise _UsageError(f"expected systems with the same GPU count, received "
                          f"{', '.join(f'{k}: {v}' for k, v in counts)}; pass --ngpus N to "
                          f"compare the first N GPUs of each")
    sizes = np.array(_sweep(args.minbytes, args.maxbytes, args.stepfactor), dtype=np.int64)
    names = [_compare_name(G, args) for G in fabrics]
    estimates = []
    with _progress(args, f"{args.collective} on {len(fabrics)} systems", "system") as progress:
        for G in fabrics:
            estimates.append(estimate(G, args.collective, sizes, list(range(ngpus)), profile=args.nccl,
                                      gpus_per_thread=args.g, calibration=calibration))
            progress(len(estimates), len(fabrics))
    if args.out is not None:
        from .report.write import write_compare_figure  # plotly only for this option
        write_compare_figure(estimates, names, args.out)
    if args.json:
        _print_json(compare_json(args.collective, ngpus, names, estimates))
        return
    print(compare_table(args.collective, ngpus, names, estimates))
    if args.out is not None:
        print(f"wrote {args.out}")


# report
def _report_arguments(parser) -> None:
    _systems_option(parser, default="default: every built-in system")
    parser.add_argument("--out", default="report.html", metavar="FILE",
                        help="HTML file to write, replaced atomically (default: report.html)")
    _json_option(parser, "a line: what was written, with its summary")
    _topo_file_options(parser, many=True)
    _max_gpus_option(parser, default=MAX_REPORT_GPUS)


def _report(args) -> None:
    from .json_shapes import report_json

    from .report.write import write_report  # imports plotly: only this command pays for it

    _check_cluster_options(args)
    names = list(args.system)
    for name in names:  # sized before anything is built
        _sized(name, args.max_gpus)
    if args.topo_file:
        from .output import write_text_atomic
        from .report.analysis import analyse_report
        from .report.html import render_report
        fabrics = _fabrics(args, names)
        with _progress(args, "report", "step") as progress:
            text = render_report(analyse_report(fabrics, progress=progress))
        path = write_text_atomic(args.out, text)
        written = (path, path.stat().st_size, [G.graph.get("name", "fabric") for G in fabrics])
    else:
        with _progress(args, "report", "step") as progress:
            result = write_report(args.out, names or None, progress=progress)
        written = (result.path, result.nbytes, list(result.systems))
    path, nbytes, systems = written
    if args.json:
        _print_json(report_json(args.out, nbytes, systems))
        return
    print(f"wrote {path} ({nbytes / 1e6:.1f} MB) comparing {', '.join(systems)}")


# calibrate and check (measured nccl-tests outputs)
def _read_run(path, args):
    from ..studies.benchmarks import BenchmarkParseError, read_benchmark

    text = _read_text(path, "benchmark", args)
    try:
        return read_benchmark(text, name="standard input" if path == "-" else path,
                              collective=args.collective, max_rows=args.max_rows)
    except BenchmarkParseError as error:
        from .file_kinds import FileKind, file_kind, misplaced

        found = file_kind(text)
        if found not in (FileKind.NCCL_TESTS, FileKind.P2P, FileKind.TEXT):
            raise _UsageError(misplaced(path, found, "nccl-tests or p2pBandwidthLatencyTest output")) from None
        if path in str(error):
            raise
        raise BenchmarkParseError(f"{path}: {error}") from None


def _measurement_arguments(parser) -> None:
    from ..predict.collectives import COLLECTIVE_NAMES
    from ..studies.benchmarks import MAX_ROWS

    _system_option(parser, whatif=False)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids of the ranks, in rank order "
                        "(default: from CUDA_VISIBLE_DEVICES and the device lines)")
    _gpus_per_thread_option(parser, default=None, help_default="the run's own nGpus")
    _nccl_option(parser)
    parser.add_argument("--collective", choices=COLLECTIVE_NAMES,
                        help="the collective, if the output does not name it (one it names or "
                             "its columns imply must be the same)")
    parser.add_argument("--inplace", action="store_true", help="use the in-place columns")
    parser.add_argument("--max-rows", type=_count(1), default=MAX_ROWS, metavar="N",
                        help=f"refuse outputs of more than N result rows (default {MAX_ROWS}; each "
                             f"row is an estimate)")


def _calibrate_arguments(parser) -> None:
    parser.add_argument("files", metavar="FILE", nargs="+", help="nccl-tests (or p2pBandwidthLatencyTest) output")
    _measurement_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="calibration JSON to write (replaced atomically)")
    _json_option(parser, "the fitted constants: what was written, with its content")


def _calibrate(args) -> None:
    from .json_shapes import calibration_file_json, calibration_json
    from .text import calibration_table

    from ..studies.calibration import calibrate
    from .output import write_text_atomic

    runs = [_read_run(path, args) for path in args.files]
    result = calibrate(runs, _fabric(args, args.system), gpus=args.gpus, gpus_per_thread=args.g,
                       profile=args.nccl, inplace=args.inplace)
    text = json.dumps(calibration_file_json(result), indent=2)
    path = write_text_atomic(args.out, text)
    if args.json:
        _print_json(calibration_json(args.out, path.stat().st_size, json.loads(text)))
        return
    print(calibration_table(result))
    print(f"wrote {args.out}")


def _check_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="nccl-tests output")
    _measurement_arguments(parser)
    _calibration_option(parser)
    parser.add_argument("--explain", action="store_true", help="show the measurement model's terms")
    _json_option(parser)
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write a page of measured vs predicted busbw, time and error by "
                             "size (replaced atomically)")


def _check(args) -> None:
    from .explain import explain_check
    from .json_shapes import check_json
    from .text import check_table

    from ..studies.calibration import check

    calibration = _calibration(args)
    run = _read_run(args.file, args)
    if not hasattr(run, "rows"):
        raise _UsageError(f"{args.file} is a p2pBandwidthLatencyTest output: check takes nccl-tests")
    result = check(run, _fabric(args, args.system), gpus=args.gpus, gpus_per_thread=args.g,
                   profile=args.nccl, calibration=calibration, inplace=args.inplace)
    written = None
    if args.out is not None:
        from .report.write import write_check_html  # plotly only for this option
        written = write_check_html(args.out, result, source=os.path.basename(args.file))
    if args.json:
        _print_json(check_json(result))
        return
    print(check_table(result))
    if args.explain:
        print()
        print(explain_check(result))
    if written is not None:
        print(f"wrote {args.out}")


# import and export
IMPORT_FORMATS = ("auto", "nvidia-smi", "nccl-xml")
EXPORT_FORMATS = ("json", "graphml", "nccl-xml")


def _import_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="nvidia-smi topo -m output, or NCCL's topology XML "
                        "(NCCL_TOPO_DUMP_FILE)")
    parser.add_argument("--format", choices=IMPORT_FORMATS, default="auto",
                        help="the file's format (default auto: XML if it starts with '<', else nvidia-smi)")
    parser.add_argument("--gpu", metavar="MODEL",
                        help="GPU model as nvidia-smi names it ('Tesla V100-SXM2-16GB') or a short form "
                             "('v100-sxm2'); required for nvidia-smi text, which does not say")
    parser.add_argument("--out", metavar="FILE",
                        help="fabric JSON to write, replaced atomically (default: write nothing, "
                             "print the summary only)")
    parser.add_argument("--name", help="the fabric's name in every output (default: imported)")
    _json_option(parser, "the summary: what was read and written")
    parser.add_argument("--pcie", metavar="LINK",
                        help="PCIe link of every device, e.g. pcie3_x16 (default: by GPU generation)")
    parser.add_argument("--socket-link", metavar="LINK",
                        help="CPU-to-CPU link, e.g. upi (default: qpi_bdw; ignored with --cpu)")
    _max_input_option(parser)
    smi = parser.add_argument_group("nvidia-smi text only")
    smi.add_argument("--cpu", metavar="CPU", help="CPU model of every socket, a key of topo.CPUS "
                     "(default: cores and threads read off the CPU affinity)")
    smi.add_argument("--nvswitch", action=argparse.BooleanOptionalAction, default=None,
                     help="whether the GPUs talk through NVSwitches (default: inferred from the NV# counts)")
    smi.add_argument("--nvswitches", type=_count(1), metavar="N",
                     help="NVSwitch chips to build (default: the known system's, else one per NVLink of a GPU)")
    smi.add_argument("--nvswitch-links", metavar="LIST",
                     help="NVLinks from every GPU to each NVSwitch chip, such as 5,4,4,5 (default: the known system's)")
    smi.add_argument("--like", metavar="SYSTEM",
                     help="built-in system to take what the text cannot say from (NVSwitch wiring, CPUs, NIC ports, "
                          "PCIe links), or 'none' (default: the known system of the GPU model)")
    smi.add_argument("--max-devices", type=_count(1), default=None, metavar="N",
                     help="refuse printouts of more than N GPUs and NICs (default 128, at most 1024)")
    smi.add_argument("--hosts", type=_count(1), metavar="N",
                     help="hosts of an NVLink domain that spans several, the printed one copied to each "
                          "(default: the known system's, 18 for a GB200 NVL72 tray)")
    smi.add_argument("--nic-link", metavar="LINK",
                     help="network port of every NIC, e.g. ib_hdr, or 'none' (default: by GPU generation)")


def _import_format(args, text: str) -> str:
    if args.format != "auto":
        return args.format
    return "nccl-xml" if text.lstrip("\ufeff \t\r\n").startswith("<") else "nvidia-smi"


def _links_list(text):
    """``--nvswitch-links 5,4,4,5`` as a tuple of whole numbers (the importer checks the values)."""
    if text is None:
        return None
    parts = text.split(",")
    if not all(part.strip().isdigit() and len(part.strip()) <= 4 for part in parts):
        raise _UsageError(f"--nvswitch-links {text!r}: expected whole numbers separated by commas, such as 5,4,4,5")
    return tuple(int(part) for part in parts)


def _import(args) -> None:
    from .json_shapes import import_json
    from .text import import_summary

    from .file_kinds import FileKind, file_kind, misplaced

    text = _read_text(args.file, "import", args)
    found = file_kind(text)
    if found not in (FileKind.NVIDIA_SMI, FileKind.NCCL_XML, FileKind.XML, FileKind.TEXT) or \
            (found is FileKind.TEXT and args.format == "auto"):
        raise _UsageError(misplaced(args.file, found, "nvidia-smi topo -m output (a GPU0 column) or an NCCL "
                                                      "topology XML (a <system> element)"))
    kind = _import_format(args, text)
    name = {} if args.name is None else {"name": args.name}
    if kind == "nvidia-smi":
        if args.gpu is None:
            raise _UsageError(f"{args.file}: nvidia-smi topo -m does not name the GPU model: expected "
                              f"--gpu MODEL such as 'Tesla V100-SXM2-16GB' or v100-sxm2")
        nic = {} if args.nic_link is None else {"nic_link": None if args.nic_link.lower() == "none" else args.nic_link}
        like = "auto" if args.like is None else None if args.like.lower() == "none" else args.like
        try:
            G = topo.from_nvidia_smi(text, gpu=args.gpu, cpu=args.cpu, pcie=args.pcie, nvswitch=args.nvswitch,
                                     nvswitches=args.nvswitches, nvswitch_links=_links_list(args.nvswitch_links),
                                     socket_link=args.socket_link, like=like, hosts=args.hosts, **nic, **name,
                                     **({} if args.max_devices is None else {"max_devices": args.max_devices}))
        except DgxTopoError as error:
            raise type(error)(f"{args.file}: {error}") from None
        what = "nvidia-smi topo -m"
        nvswitch_origin = ("inferred from the NV# counts" if args.nvswitch is None
                           else "--nvswitch" if args.nvswitch else "--no-nvswitch")
        pcie_origin = "rebuilt from the PIX/PXB/PHB classes"
    else:
        given = [option for option, value in (("--cpu", args.cpu), ("--nvswitch/--no-nvswitch", args.nvswitch),
                                              ("--nvswitches", args.nvswitches), ("--nic-link", args.nic_link),
                                              ("--nvswitch-links", args.nvswitch_links), ("--like", args.like),
                                              ("--hosts", args.hosts), ("--max-devices", args.max_devices))
                 if value is not None]
        if given:
            raise _UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to nvidia-smi text: "
                              f"an NCCL topology XML says it itself")
        try:
            G = topo.from_nccl_xml(text, gpu=args.gpu, pcie=args.pcie, socket_link=args.socket_link, **name)
        except DgxTopoError as error:
            raise type(error)(f"{args.file}: {error}") from None
        what = "NCCL topology XML"
        nvswitch_origin = "from the XML's NVLink targets"
        pcie_origin = "from the XML's PCI bridges"
    nbytes = None
    if args.out is not None:
        from .output import write_text_atomic
        nbytes = write_text_atomic(args.out, topo.to_json(G)).stat().st_size
    if args.json:
        _print_json(import_json(G, source=args.file, what=what, nvswitch_origin=nvswitch_origin,
                                pcie_origin=pcie_origin, path=args.out, nbytes=nbytes))
        return
    print(import_summary(G, source=args.file, what=what, nvswitch_origin=nvswitch_origin,
                         pcie_origin=pcie_origin, out=args.out))


def _export_arguments(parser) -> None:
    _system_option(parser)
    parser.add_argument("--format", choices=EXPORT_FORMATS, default="json",
                        help="json (networkx node-link data with a format version; default), graphml, or "
                             "nccl-xml (NCCL's topology XML of host 0, what NCCL_TOPO_DUMP_FILE holds)")
    parser.add_argument("--out", required=True, metavar="FILE", help="file to write, replaced atomically")
    _json_option(parser, "a line: what was written, with its summary")


def _export(args) -> None:
    from .json_shapes import export_json

    from .output import write_text_atomic

    G = _fabric(args, args.system)
    write = {"json": topo.to_json, "graphml": topo.to_graphml, "nccl-xml": topo.to_nccl_xml}[args.format]
    path = write_text_atomic(args.out, write(G))
    if args.json:
        _print_json(export_json(G, args.out, args.format, path.stat().st_size))
        return
    print(f"wrote {args.out} ({args.format}: {G.graph.get('name', '?')}, {len(topo.gpus(G))} GPUs, "
          f"{G.number_of_nodes()} nodes, {G.number_of_edges()} edges)")


# Pages of figures (bound, whatif, plan --out): one self-contained HTML file (models.present.page).
def _write_figures(path: str, title: str, figures, lines=()) -> None:
    """Write ``figures`` (plotly) under a title and a few blocks of text, atomically."""
    from .output import write_text_atomic
    from .page import figures_page

    write_text_atomic(path, figures_page(title, figures, lines))


# The options that name an output file, on every command that has them.
_OUTPUTS = ("out", "trace")


def _check_files(args) -> None:
    """The one rule of every command's files, checked by :func:`main` before any work: inputs
    read once, and outputs (--out, --trace) writable, none of them an input and no two the same
    file (:func:`models.present.output.check_output_paths`)."""
    inputs = _inputs(args)
    outputs = {f"--{name}": getattr(args, name) for name in _OUTPUTS if getattr(args, name, None) is not None}
    if outputs:
        from .output import check_output_paths
        check_output_paths(outputs, inputs=inputs)


# bound
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
    _collective_argument(parser)
    _system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7 (default: all)")
    parser.add_argument("-s", "--size", type=parse_size, default=parse_size("8G"), metavar="SIZE",
                        help="size of NCCL's estimate beside the bound, and of the bound's time "
                             "(default 8G: the bandwidth term dominates)")
    parser.add_argument("--relay", choices=("none", "switches", "all"), default="switches", help=_RELAY_HELP)
    parser.add_argument("--links", type=_edge_kinds, metavar="KINDS",
                        help="only these edge kinds carry data, comma-separated from "
                             f"{', '.join(topo.EDGE_KINDS)} (default: every link)")
    parser.add_argument("--root", type=_count(0), metavar="ID",
                        help="root GPU of broadcast and reduce (default: the lowest id, nccl-tests' root 0)")
    parser.add_argument("--trees", action="store_true",
                        help="also pack spanning trees that meet the bound (the schedule; not for "
                             "alltoall and sendrecv, whose schedule is a flow)")
    _nccl_option(parser)
    parser.add_argument("--explain", action="store_true",
                        help="also the formulation, the rates and where NCCL's gap comes from")
    _json_option(parser, "text")
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write the tree packing drawn on the fabric (implies --trees; "
                             "replaced atomically)")
    parser.add_argument("--limit", type=_count(2), default=MAX_BOUND_GPUS, metavar="N",
                        help=f"refuse sets of more than N GPUs (default {MAX_BOUND_GPUS}; the work "
                             f"grows faster than the GPUs)")


def _bound(args) -> None:
    from .explain import bound_summary, explain_bound
    from .json_shapes import bound_json

    from ..studies.bounds import bound

    if (args.trees or args.out) and args.coll in ("alltoall", "sendrecv"):
        raise _UsageError(f"--trees and --out pack spanning trees for broadcast, reduce, all_gather, "
                          f"reduce_scatter and all_reduce, received {args.coll} (its bound is a flow LP)")
    G = _fabric(args, args.system)
    b = bound(G, args.coll, args.size, args.gpus, relay=args.relay, trees=bool(args.trees or args.out),
              root=args.root, edge_kinds=args.links, profile=args.nccl, max_gpus=args.limit)
    if args.out is not None:
        from .bounds_plot import packing_figure

        figures = [packing_figure(G, packing) for packing in b.packings]
        _write_figures(args.out, f"dgx-topo: {b.collective} bound on {b.system}", figures, [bound_summary(b)])
    if args.json:
        _print_json(bound_json(b))
        return
    print(explain_bound(b) if args.explain else bound_summary(b))
    if args.out is not None:
        print(f"wrote {args.out}")


# whatif
_FAIL_EACH_HELP = ("nvlink: one physical link of each NVLink bundle (NV2 becomes NV1; one row per bundle); "
                   "nvswitch, nic: each one; gpu: each GPU of the job, which runs on the others")


def _whatif_arguments(parser) -> None:
    from ..studies.sweep import DASK_TIMEOUT, MAX_CASES, MAX_SECONDS
    from ..studies.whatif import FAIL_EACH

    _collective_argument(parser)
    _system_option(parser)
    parser.add_argument("--fail-each", choices=FAIL_EACH, required=True, help=_FAIL_EACH_HELP)
    parser.add_argument("--pairs", action="store_true", help="every pair of failures instead of every single one")
    parser.add_argument("--gpus", metavar="IDS", help="the job's GPU ids such as 0-3 (default: all)")
    parser.add_argument("-s", "--size", type=parse_size, default=parse_size("1G"), metavar="SIZE",
                        help="message size (default 1G)")
    parser.add_argument("--executor", default="auto", metavar="WHERE",
                        help="where the estimates run: auto (default: in this process when quick, "
                             "else a process pool), inline, process, or dask://HOST:PORT (a Dask "
                             "scheduler; the extra dgx-topo[dask])")
    parser.add_argument("--top", type=_count(1), metavar="N", help="show only the N worst")
    _nccl_option(parser)
    _json_option(parser)
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write the fabric coloured by each failure's loss and the ranked bar "
                             "chart (replaced atomically)")
    parser.add_argument("--max-cases", type=_count(1), default=MAX_CASES, metavar="N",
                        help=f"refuse sweeps that classify more than N failure cases (default {MAX_CASES}; "
                             f"--pairs grows as the square; the hosts of a cluster that are copies count once)")
    parser.add_argument("--max-seconds", type=_seconds, default=MAX_SECONDS, metavar="S",
                        help=f"refuse sweeps that would take more than S seconds in this process (predicted "
                             f"from a few of their failures, timed; default {MAX_SECONDS:g})")
    parser.add_argument("--dask-timeout", type=_seconds, default=DASK_TIMEOUT, metavar="S",
                        help=f"seconds to reach a dask:// scheduler (default {DASK_TIMEOUT:g})")


def _whatif_sweep(args) -> None:
    from ..studies.sweep import ExecutorConnectionError, ExecutorSpecError, SweepSizeError, sweep
    from .json_shapes import sweep_json
    from .sweep_text import format_sweep

    executor = None if args.executor == "auto" else args.executor
    G = _fabric(args, args.system)
    with _progress(args, f"whatif {args.fail_each}", "case") as progress:
        try:
            result = sweep(G, args.coll, args.size, fail_each=args.fail_each, pairs=args.pairs, gpus=args.gpus,
                           executor=executor, progress=progress, max_cases=args.max_cases,
                           max_seconds=args.max_seconds, profile=args.nccl, dask_timeout=args.dask_timeout)
        except SweepSizeError as error:  # the library names its keyword; the command line, its option
            option = {"max_cases": "--max-cases", "max_seconds": "--max-seconds"}[error.keyword]
            unit = {"max_cases": "N", "max_seconds": "S"}[error.keyword]
            raise _UsageError(str(error).replace(f"pass a larger {error.keyword}=", f"raise it with {option} {unit}")
                              .replace(f"more than {error.keyword}=", "more than the limit of ")
                              .replace("fail_each=", "--fail-each ").replace("pairs=True", "--pairs")
                              .replace("(gpus=)", "(--gpus)")) from None
        except (ExecutorSpecError, ExecutorConnectionError) as error:
            raise _UsageError(str(error).replace("executor=", "--executor ")
                              .replace("raise dask_timeout", "raise --dask-timeout S")) from None
    if args.out is not None:
        from .whatif_plot import sweep_fabric_figure, sweep_figure

        figures = [sweep_figure(result)] + ([] if args.pairs else [sweep_fabric_figure(G, result)])
        _write_figures(args.out, f"dgx-topo: what each failure costs on {result.fabric}", figures,
                       [format_sweep(result, top=args.top)])
    if args.json:
        _print_json(sweep_json(result, args.top))
        return
    print(format_sweep(result, top=args.top))
    if args.out is not None:
        print(f"wrote {args.out}")


# plan and gpus
def _workload_argument(parser) -> None:
    from ..studies.workload import PRESETS

    parser.add_argument("workload", metavar="WORKLOAD",
                        help=f"a preset ({', '.join(PRESETS)}) or a transformer spec (see below)")


def _dtype_option(parser, default=None) -> None:
    from ..studies.workload import DTYPES

    parser.add_argument("--dtype", choices=DTYPES, default=default,
                        help="training data type" + (f" (default {default})" if default else
                                                     " (default bf16 where the GPU has it, else fp16)"))


def _plan_number(name: str, *, low: float, high: float, low_open: bool = True):
    """An argparse type for the plan's fractions and scales: a plain finite number in range."""
    shown = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 and text.strip().lower() not in ("nan", "inf") else math.nan
        except ValueError:
            value = math.nan
        if not (low < value <= high if low_open else low <= value <= high):
            raise argparse.ArgumentTypeError(f"{name} must be a number in {shown}, received {text[:40]!r}")
        return value
    return parse


def _layout_options(parser):
    """The layout options of ``plan`` (and ``simulate``, which plans first); returns their group."""
    from ..studies.planner.records import RECOMPUTE

    layout = parser.add_argument_group("layout (degrees not given are searched)")
    for option, what in (("--tp", "tensor"), ("--pp", "pipeline"), ("--dp", "data")):
        layout.add_argument(option, type=_count(1), metavar="N", help=f"{what}-parallel degree")
    layout.add_argument("--zero", type=int, choices=(0, 1, 2, 3), metavar="K",
                        help="ZeRO stage 0-3 (3 is FSDP; default: searched)")
    layout.add_argument("--micro-batch", type=_count(1), default=1, metavar="B",
                        help="micro-batch per GPU [samples] (default 1)")
    layout.add_argument("--global-batch", type=_count(1), metavar="B",
                        help="global batch [samples] (default: the workload's published one)")
    layout.add_argument("--seq-length", type=_count(1), metavar="N",
                        help="train at this sequence length [tokens] (default: the workload's own)")
    _dtype_option(layout)
    layout.add_argument("--recompute", choices=RECOMPUTE, metavar="MODE",
                        help=f"activation recomputation, {', '.join(RECOMPUTE)} (default: none and full "
                             f"searched)")
    layout.add_argument("--sequence-parallel", choices=("on", "off"),
                        help="sequence parallelism with tensor parallelism (default on)")
    layout.add_argument("--virtual-stages", type=_count(1), default=1, metavar="V",
                        help="model chunks per GPU, interleaved 1F1B (default 1: plain 1F1B)")
    return layout


def _plan_arguments(parser) -> None:
    from ..studies.planner.calibrate import MEASURED_GRAMMAR
    from ..studies.workload import SOFTWARE

    _workload_argument(parser)
    _system_option(parser)
    _nccl_option(parser)
    _layout_options(parser)
    model = parser.add_argument_group("compute and overlap model")
    model.add_argument("--software", choices=SOFTWARE, metavar="STACK",
                       help="which kernels are fused: " + "; ".join(f"{k}: {v.description}" for k, v in
                                                                     SOFTWARE.items())
                            + " (default flash for models trained with it on Ampere or newer, else fused)")
    model.add_argument("--efficiency", type=_plan_number("--efficiency", low=0, high=1), metavar="F",
                       help="fraction of the dense peak a full wave of a matrix multiply reaches "
                            "(default per GPU generation and dtype)")
    model.add_argument("--attention-efficiency", type=_plan_number("--attention-efficiency", low=0, high=1),
                       metavar="F", help="fraction of the dense peak of flash attention (default 0.6)")
    model.add_argument("--memory-efficiency", type=_plan_number("--memory-efficiency", low=0, high=1),
                       metavar="F", help="fraction of the HBM bandwidth of a streaming kernel (default 0.8)")
    model.add_argument("--overlap", type=_plan_number("--overlap", low=0, high=1, low_open=False),
                       metavar="F", help="analytical first pass: fraction of the backward that hides data-parallel "
                                         "communication (default 1; 0: gradients reduced after it); a simulated "
                                         "step overlaps as its schedule allows")
    model.add_argument("--bucket", type=parse_size, metavar="SIZE",
                       help="gradient bucket (default 25M, PyTorch DDP's)")
    from ..studies.compute import MAX_SCALE
    model.add_argument("--compute-scale", type=_plan_number("--compute-scale", low=0, high=MAX_SCALE), metavar="K",
                       help="multiply every kernel's time by K (a --calibrate result)")
    model.add_argument("--calibrate", metavar="MEASURED",
                       help=f"fit the compute model to one measured step of this layout: {MEASURED_GRAMMAR}")
    parser.add_argument("--search", action="store_true", help="rank every layout instead of printing the best")
    from ..studies.planner.layouts import DEFAULT_SIMULATED, PLAN_MAX_EVENTS
    parser.add_argument("--simulate", type=_count(0), default=DEFAULT_SIMULATED, metavar="N",
                        help=f"simulate the N best layouts of the analytical first pass and rank them by "
                             f"their simulated step (default {DEFAULT_SIMULATED}; 0: analytical only)")
    parser.add_argument("--max-events", type=_count(1), default=PLAN_MAX_EVENTS, metavar="N",
                        help=f"the simulations' budget in events, three per task (default {PLAN_MAX_EVENTS}); "
                             f"layouts beyond it keep their analytical step")
    parser.add_argument("--top", type=_count(1), metavar="N",
                        help="with --search: layouts shown (default: 10 in text, all in JSON)")
    _json_option(parser, "text")
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write the step-time breakdown per layout and memory per GPU "
                             "(replaced atomically)")
    parser.add_argument("--limit", type=_count(1), default=MAX_PLAN_GPUS, metavar="N",
                        help=f"refuse jobs of more than N GPUs (default {MAX_PLAN_GPUS}; the search "
                             f"grows with the GPUs)")


def _planner_words(command):
    """The command, its planner errors that carry numbers raised again in words
    (:func:`models.present.plan_text.plan_error_text`)."""
    def run(args):
        from ..studies.planner.records import DoesNotFitError, NoLayoutError
        from ..studies.stepgraph import PlanDoesNotFitError
        try:
            return command(args)
        except (NoLayoutError, DoesNotFitError, PlanDoesNotFitError) as error:
            from .plan_text import plan_error_text
            raise DgxTopoError(plan_error_text(error)) from None
    return run


@_planner_words
def _plan(args) -> int:
    from ..studies.planner.calibrate import calibrate_plan
    from ..studies.planner.layouts import plan, search
    from ..studies.workload import DEFAULT_BUCKET, with_seq_length
    from .json_shapes import plan_calibration_json, plan_json, search_json
    from .plan_text import format_plan, format_search

    if args.top is not None and not args.search:
        raise _UsageError("--top ranks layouts: expected it with --search")
    if args.calibrate is not None and args.compute_scale is not None:
        raise _UsageError("--calibrate fits the compute scale: expected --calibrate or --compute-scale, not both")
    w = _dense_workload(args.workload)  # a bad workload fails before the fabric is built
    if args.seq_length is not None:
        w = with_seq_length(w, args.seq_length)
    G = _fabric(args, args.system)
    degrees = (args.tp, args.pp, args.dp)
    ngpus = math.prod(degrees) if None not in degrees else len(topo.gpus(G))
    if ngpus > args.limit:
        raise _too_much(f"a plan of {ngpus} GPUs", ngpus, args.limit, "--limit")
    options = dict(tp=args.tp, pp=args.pp, dp=args.dp, zero=args.zero, micro_batch=args.micro_batch,
                   global_batch=args.global_batch, dtype=args.dtype, recompute=args.recompute,
                   profile=args.nccl,
                   sequence_parallel=None if args.sequence_parallel is None else args.sequence_parallel == "on",
                   virtual_stages=args.virtual_stages, software=args.software, efficiency=args.efficiency,
                   attention_efficiency=args.attention_efficiency, memory_efficiency=args.memory_efficiency,
                   bucket=DEFAULT_BUCKET if args.bucket is None else args.bucket,
                   simulate=args.simulate, max_events=args.max_events)
    if args.overlap is not None:
        options["overlap"] = args.overlap
    top = 10 if args.top is None else args.top
    if args.calibrate is not None:
        best = calibrate_plan(w, G, args.calibrate, **options)
        options["compute_scale"] = best.calibration.scale
    elif args.compute_scale is not None:
        options["compute_scale"] = args.compute_scale
    if args.search or args.out is not None:
        result = search(w, G, **options)
        if args.calibrate is None:
            best = result.best if result.best.fits else plan(w, G, **options)
    elif args.calibrate is None:
        result, best = None, plan(w, G, **options)
    if args.out is not None:
        from .plan_plot import memory_figure, step_time_figure

        _write_figures(args.out, f"dgx-topo: {best.workload} on {best.fabric}",
                       [step_time_figure(result), memory_figure(result)],
                       [format_plan(best, verbose=True)])
    fits = best.fits if not args.search else bool(result.fitting())
    if args.json:
        if args.search:
            data = search_json(result, args.top)  # every layout unless --top says how many
            if args.calibrate is not None:
                data["calibration"] = plan_calibration_json(best.calibration)
            _print_json(data)
        else:
            print(json.dumps(plan_json(best), indent=2))
        return 0 if fits else _does_not_fit(best, result if args.search else None)
    if args.search:
        print(format_search(result, top=top))
        if args.calibrate is not None:
            print(format_plan(best, verbose=True))
    else:
        print(format_plan(best, verbose=True))
    if args.out is not None:
        print(f"wrote {args.out}")
    return 0 if fits else _does_not_fit(best, result if args.search else None)


def _does_not_fit(best, result) -> int:
    """A job that fits nowhere is a request the fabric cannot meet: the verdict and its numbers are
    printed on standard output, and one line on standard error says why, with exit status 2."""
    if result is not None:  # --search: the layout closest to fitting says what is missing
        best = min(result.plans, key=lambda p: p.memory.total)
        what = f"no layout of {best.workload} fits on {best.fabric}; the closest,"
    else:
        what = f"{best.workload} does not fit on {best.fabric}:"
    from .plan_text import fit_note

    print(f"dgxtopo: error: {what} {best.layout.label()}: {fit_note(best)}", file=sys.stderr)
    return 2


def _gpus_arguments(parser) -> None:
    _workload_argument(parser)
    _dtype_option(parser, default="fp16")
    parser.add_argument("--micro-batch", type=_count(1), default=1, metavar="B",
                        help="micro-batch per GPU [samples] (default 1)")
    _json_option(parser)


def _gpus(args) -> None:
    from ..studies.planner.ranking import gpus_ranking
    from .json_shapes import gpus_ranking_json
    from .plan_text import format_gpus_ranking, format_workload

    w = _dense_workload(args.workload)
    ranks = gpus_ranking(w, dtype=args.dtype, micro_batch=args.micro_batch)
    if args.json:
        _print_json(gpus_ranking_json(w.name, args.dtype, ranks))
        return
    print(f"{format_workload(w)}\nGPU generations ranked by the time of one training sample ({args.dtype}, "
          f"micro-batch {args.micro_batch}, data parallel over 8 GPUs of one board)")
    print(format_gpus_ranking(ranks))


# simulate
def _simulate_arguments(parser) -> None:
    from ..predict.simulate import MAX_EVENTS

    parser.add_argument("workload", metavar="WORKLOAD", nargs="?",
                        help="a workload (as for plan) whose step is simulated; or --graph FILE.json")
    parser.add_argument("--graph", metavar="FILE.json", help="simulate your own task graph instead (see below)")
    _system_option(parser)
    _nccl_option(parser)
    layout = _layout_options(parser)
    layout.add_argument("--bucket", type=parse_size, default=None, metavar="SIZE",
                        help="data-parallel gradient bucket (default 25M, PyTorch DDP's)")
    parser.add_argument("--no-sm-share", action="store_true",
                        help="do not slow compute by the SMs NCCL's kernels hold")
    parser.add_argument("--trace", metavar="OUT.json",
                        help="also write a Chrome trace (Perfetto, chrome://tracing), replaced atomically")
    _json_option(parser, "text")
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write a Gantt chart and the links' utilisation (replaced atomically)")
    parser.add_argument("--max-events", type=_count(1), default=MAX_EVENTS, metavar="N",
                        help=f"refuse simulations of more than N events, three per task and folded image "
                             f"(default {MAX_EVENTS})")
    parser.add_argument("--limit", type=_count(1), default=MAX_PLAN_GPUS, metavar="N",
                        help=f"refuse jobs of more than N GPUs (default {MAX_PLAN_GPUS})")


@_planner_words
def _simulate(args) -> None:
    from ..predict.simulate import read_task_graph, simulate
    from ..studies.planner.layouts import plan
    from ..studies.stepgraph import compute_time, step_graph
    from ..studies.workload import DEFAULT_BUCKET, with_seq_length
    from .json_shapes import simulation_json
    from .text import simulation_table

    if (args.workload is None) == (args.graph is None):
        raise _UsageError("expected either WORKLOAD or --graph FILE.json, received "
                          + ("both" if args.workload else "neither"))
    if args.graph is not None:  # the layout options shape a workload's step, not a given graph
        given = [option for option, value in (
            ("--tp", args.tp), ("--pp", args.pp), ("--dp", args.dp), ("--zero", args.zero),
            ("--micro-batch", None if args.micro_batch == 1 else args.micro_batch),
            ("--global-batch", args.global_batch), ("--seq-length", args.seq_length), ("--dtype", args.dtype),
            ("--recompute", args.recompute), ("--sequence-parallel", args.sequence_parallel),
            ("--virtual-stages", None if args.virtual_stages == 1 else args.virtual_stages),
            ("--bucket", args.bucket)) if value is not None]
        if given:
            raise _UsageError(f"{', '.join(given)} shape(s) a WORKLOAD's step: expected none with --graph")
    w = _dense_workload(args.workload) if args.workload is not None else None
    if w is not None and args.seq_length is not None:
        w = with_seq_length(w, args.seq_length)
    G = _fabric(args, args.system)
    planned = None
    if w is not None:
        degrees = (args.tp, args.pp, args.dp)
        ngpus = math.prod(degrees) if None not in degrees else len(topo.gpus(G))
        if ngpus > args.limit:
            raise _too_much(f"a plan of {ngpus} GPUs", ngpus, args.limit, "--limit")
        if args.virtual_stages != 1:
            raise _UsageError("simulate builds plain 1F1B schedules: expected --virtual-stages 1, received "
                              f"{args.virtual_stages} (plan --virtual-stages models the interleaved step)")
        planned = plan(w, G, tp=args.tp, pp=args.pp, dp=args.dp, zero=args.zero, micro_batch=args.micro_batch,
                       global_batch=args.global_batch, dtype=args.dtype, recompute=args.recompute,
                       sequence_parallel=None if args.sequence_parallel is None else args.sequence_parallel == "on",
                       profile=args.nccl, simulate=0)  # the analytical step, compared below
        graph = step_graph(planned, G, workload=w, bucket=DEFAULT_BUCKET if args.bucket is None else args.bucket,
                           max_events=args.max_events)  # counted on the plan before the graph is built
    else:
        graph = read_task_graph(args.graph, ngpus=len(topo.gpus(G)), compute_time=compute_time(G),
                                limit=args.max_input)
    with _progress(args, "simulate", "task") as progress:
        result = simulate(G, graph, profile=args.nccl, sm_share=not args.no_sm_share, max_events=args.max_events,
                          progress=progress)
    if args.trace is not None:
        from .output import write_text_atomic
        from .simulate_plot import chrome_trace
        write_text_atomic(args.trace, json.dumps(chrome_trace(result)))
    if args.out is not None:
        from .simulate_plot import gantt_figure, link_heatmap_figure
        _write_figures(args.out, f"dgx-topo: {result.name or 'task graph'} on {result.fabric}",
                       [gantt_figure(result), link_heatmap_figure(result)], [simulation_table(result)])
    if args.json:
        data = simulation_json(result)
        if planned is not None:
            data["plan_step_time_s"] = planned.step_time
        _print_json(data)
        return
    print(simulation_table(result))
    if planned is not None:
        print(f"  the planner's analytical estimate of the step: {planned.step_time * 1e3:.3f} ms")
    for path in (args.trace, args.out):
        if path is not None:
            print(f"wrote {path}")


def _workload_grammar() -> str:
    from ..studies.moe import MOE_PRESETS
    from ..studies.workload import WORKLOAD_GRAMMAR

    return (WORKLOAD_GRAMMAR + ". The mixture-of-experts presets (" + ", ".join(MOE_PRESETS) + ") and moe: specs "
            "are described but not planned yet")


def _dense_workload(text):
    """The dense workload a command's WORKLOAD names; a MoE preset or ``moe:`` spec is read (a bad
    one refused in its own words) and then refused, naming what it is."""
    from ..studies.moe import is_moe_spec, moe_workload
    from ..studies.workload import MoeNotPlannedError, parse_workload

    if is_moe_spec(text):
        w = moe_workload(text)
        raise MoeNotPlannedError(f"{w.name} is a mixture-of-experts workload ({w.parameters / 1e9:.1f} B parameters, "
                                 f"{w.active_parameters / 1e9:.1f} B active): expected a dense transformer or a CNN "
                                 "(expert-parallel layouts are not planned yet)")
    return parse_workload(text)


_GRAPH_HELP = ('Task graphs (--graph): {"tasks": [{"id": "grad", "op": "all_reduce", "gpus": [0, 1], '
               '"bytes": 1048576}, {"id": "mm", "op": "compute", "gpu": 0, "seconds": 0.001, "after": '
               '["grad"]}]}; op is a collective, send (src, dst, bytes) or compute (seconds, or flops with '
               'dtype); see models.predict.simulate')


#: Every subcommand, in the order ``dgxtopo --help`` lists them.
def _schedule_arguments(parser) -> None:
    # One action for now; `evaluate` and `export` (issue 41) join it, with their own options.
    parser.add_argument("action", choices=("check",), help="check: read FILE and check it (limits, dependencies, "
                        "send/receive matching, deadlock, races, the collective's postcondition)")
    parser.add_argument("file", metavar="FILE", help="an MSCCL XML schedule (- for standard input)")
    _max_input_option(parser)
    _json_option(parser, "the summary")


def _schedule(args) -> None:
    from .json_shapes import schedule_check_json
    from .schedule_text import schedule_check_text

    from ..schedules.check import check_schedule
    from ..schedules.msccl import MSCCL_INPUT, ScheduleError, parse_msccl

    source = "standard input" if args.file == "-" else args.file
    try:
        schedule = parse_msccl(_read_text(args.file, MSCCL_INPUT, args))
        result = check_schedule(schedule)
    except ScheduleError as error:  # one line naming the file, the GPU, threadblock and step
        raise ScheduleError(f"{source}: {error}", gpu=error.gpu, tb=error.tb, step=error.step) from None
    if args.json:
        _print_json(schedule_check_json(schedule, result, source=source))
        return
    print(schedule_check_text(schedule, result, source=source))


COMMANDS: list[Command] = tuple([
    Command("systems", "list the built-in systems", _systems_arguments, _systems),
    Command("topo", "connection matrix as nvidia-smi topo -m prints it", _topo_arguments, _topo),
    Command("p2p", "GPU-to-GPU bandwidth and latency as p2pBandwidthLatencyTest prints them (predicted)",
            _p2p_arguments, _p2p),
    Command("collective", "predicted nccl-tests sweep of a collective", _collective_arguments, _collective),
    Command("pairs", "busbw of every 2-GPU communicator", _pairs_arguments, _pairs),
    Command("subsets", "every k-GPU set ranked by busbw", _subsets_arguments, _subsets),
    Command("compare", "a collective on the same GPU count of several systems", _compare_arguments,
            _compare),
    Command("report", "write an offline HTML report comparing systems", _report_arguments, _report),
    Command("calibrate", "fit the measurement model to nccl-tests outputs", _calibrate_arguments, _calibrate),
    Command("check", "measured vs predicted for one nccl-tests output", _check_arguments, _check),
    Command("import", "read nvidia-smi topo -m text or an NCCL topology XML into a fabric file",
            _import_arguments, _import),
    Command("export", "write a system or cluster as JSON or GraphML", _export_arguments, _export),
    Command("bound", "the best busbw any schedule could reach, beside NCCL's, and the binding cut",
            _bound_arguments, _bound, epilog=lambda: "Relays (--relay): " + _RELAY_HELP + ". Links (--links): "
            + ", ".join(topo.EDGE_KINDS) + ", comma-separated."),
    Command("whatif", "every failure of a kind of component, ranked by the busbw it costs",
            _whatif_arguments, _whatif_sweep, epilog="Failures (--fail-each): " + _FAIL_EACH_HELP + "."),
    Command("plan", "a training step on a fabric: the best layout and where the time goes",
            _plan_arguments, _plan, epilog=lambda: "Workloads (WORKLOAD): " + _workload_grammar() + ". Exit "
            "status: 0 when the layout fits (with --search: when one does); 2 when none fits (the "
            "verdict and its numbers are printed, and one line on standard error says why) and for bad input."),
    Command("gpus", "GPU generations ranked for a workload", _gpus_arguments, _gpus,
            epilog=lambda: "Workloads (WORKLOAD): " + _workload_grammar() + "."),
    Command("simulate", "a training step or your task graph as a timeline: overlap and shared links",
            _simulate_arguments, _simulate,
            epilog=lambda: "Workloads (WORKLOAD): " + _workload_grammar() + ". " + _GRAPH_HELP + "."),
    Command("schedule", "check an MSCCL XML schedule as its runtime would", _schedule_arguments, _schedule),
])


def _grammars(parser) -> list:
    """The shared grammars a subcommand's own options take (its epilog shows only these): the
    system spec with --system, topology files with --topo-file, what-ifs with --fail/--degrade,
    sizes with an option of type SIZE."""
    dests = {action.dest for action in parser._actions}
    sized = any(action.type is parse_size for action in parser._actions)
    return [text() if callable(text) else text
            for wanted, text in (("system" in dests, _spec_help), ("topo_file" in dests, _TOPO_FILE_HELP),
                                 ("fail" in dests, _WHATIF_HELP), (sized, _SIZE_HELP)) if wanted]


def _fill(text: str) -> str:
    return textwrap.fill(text, 79, break_long_words=False, break_on_hyphens=False)


_LAYOUT = MappingProxyType({"formatter_class": argparse.RawDescriptionHelpFormatter})


def _top_parser() -> tuple:
    """The top-level parser of ``dgxtopo`` and its (empty) subcommand action."""
    from topo.version import __version__

    parser = _Parser(prog="dgxtopo", description="Model NVIDIA DGX interconnect fabrics and what "
                     "NCCL-style communication achieves on them.",
                     epilog=lambda: "\n\n".join(_fill(text) for text in (_spec_help(), _TOPO_FILE_HELP,
                                                                          _WHATIF_HELP, _SIZE_HELP)),
                     **_LAYOUT)
    parser.add_argument("--version", action="version", version=f"dgxtopo {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    return parser, subparsers


def _add_command(subparsers, command: Command, *, options: bool = True) -> None:
    """Add ``command``'s subparser; with its options, epilog and runner unless ``options`` is False
    (listed for --help only)."""
    sub = subparsers.add_parser(command.name, help=command.help,
                                description=command.description or command.help, **_LAYOUT)
    if not options:
        return
    command.arguments(sub)
    sub.epilog = lambda: _epilog(command, sub)
    sub.set_defaults(run=command.run)


def _epilog(command: Command, sub) -> str | None:
    """A subcommand's epilog: its own text, then the shared grammars its options take."""
    own = command.epilog() if callable(command.epilog) else command.epilog
    return "\n\n".join(_fill(text) for text in ([own] if own else []) + _grammars(sub)) or None


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The argument parser of ``dgxtopo``, one subparser per entry of :data:`COMMANDS`; each
    subcommand's epilog holds its own grammars, then the shared ones it takes.

    ``commands``: the names of the subcommands whose options to add (default: all). The others
    are listed, as ``dgxtopo --help`` shows them, without options.
    """
    parser, subparsers = _top_parser()
    for command in COMMANDS:
        _add_command(subparsers, command, options=commands is None or command.name in commands)
    return parser


def _parser_for(argv) -> argparse.ArgumentParser:
    """The parser :func:`main` needs for ``argv``: when ``argv`` starts with a command's name, the
    top level and that one subcommand only (every word after it is that subcommand's, so nothing
    else can be printed: not the top level's help, which lists every command, nor an invalid
    choice, which names them); otherwise :func:`build_parser` with the command it names, if any,
    built (its options import only the modules that command needs)."""
    if argv and not argv[0].startswith("-"):
        command = next((command for command in COMMANDS if command.name == argv[0]), None)
        if command is not None:
            parser, subparsers = _top_parser()
            _add_command(subparsers, command)
            return parser
    return build_parser(_command_of(argv))


def _command_of(argv) -> list:
    """The subcommand ``argv`` runs, as :func:`build_parser`'s ``commands``. The top level takes
    no option with a value, so the first word that is not an option is the command; with none
    (``--help``, ``--version``, a mistake) no subcommand is built."""
    for word in argv:
        if not word.startswith("-"):
            return [word]
    return []


def _subcommand_parser(parser, name: str):
    """The subparser of a command (for its one-line usage errors)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name, parser)
    return parser


# Library keywords a message may name, and the option that sets each on the command line: the
# library's typed errors name the keyword (gpus_per_thread=, topo.LimitError.keyword); the command
# line names its option.
_KEYWORD_OPTIONS = MappingProxyType({"gpus_per_thread": "-g", "fail_each": "--fail-each", "max_hosts": "--max-gpus",
                    "socket_link": "--socket-link", "gpus": "--gpus", "collective": "--collective",
                    "pairs": "--pairs", "max_cases": "--max-cases", "max_sets": "--limit",
                    "max_searches": "--max-searches", "calibration": "--calibration",
                    "max_rows": "--max-rows", "max_pairs": "--limit", "max_gpus": "--limit",
                    "max_events": "--max-events", "max_seconds": "--max-seconds",
                    "dask_timeout": "--dask-timeout", "max_devices": "--max-devices"})
_KEYWORD = re.compile(r"\b(" + "|".join(_KEYWORD_OPTIONS) + r")=(?:True\b)?|\b(gpus_per_thread)\b")


def _option_words(message: str) -> str:
    """``message`` with each library keyword (``fail_each=``, ``gpus_per_thread must``) named as
    the command line's option (``--fail-each``, ``-g must``)."""
    message = message.replace("max_hosts=, on the command line --max-gpus", "--max-gpus N")
    message = re.sub(r"more than max_devices=(\d+) \(--max-devices N on the command line; ",
                     r"more than the limit of \1 (raise it with --max-devices N; ", message)

    def option(match):
        name = _KEYWORD_OPTIONS[match.group(1) or match.group(2)]
        end = match.end()
        value_follows = match.group(0).endswith("=") and end < len(message) and not message[end].isspace() \
            and message[end] not in ",;:)"
        return name + (" " if value_follows else "")
    return _KEYWORD.sub(option, message)


def _limit_error(error: LimitError) -> str:
    if error.message is not None:  # worded by the library: its keywords named as options
        return _option_words(" ".join(error.message.splitlines()))
    option = _KEYWORD_OPTIONS.get(error.keyword, error.keyword)
    return str(_too_much(error.what, error.size, error.limit, option))


def _complete(parser) -> None:
    """Shell completion through argcomplete (``pip install 'dgx-topo[completion]'``, then
    ``eval "$(register-python-argcomplete dgxtopo)"``); it answers and exits."""
    try:
        import argcomplete
    except ImportError:  # not installed: no completion, the command runs as usual
        return
    argcomplete.autocomplete(parser)


def main(argv=None) -> int:
    """Run ``dgxtopo``; returns the exit status (0; 2 for bad input and when ``plan`` finds no layout
    that fits; 130 when interrupted)."""
    try:
        completing = "_ARGCOMPLETE" in os.environ  # shell completion asks (the completion extra)
        parser = build_parser() if completing else _parser_for(sys.argv[1:] if argv is None else argv)
        try:
            if completing:  # answer, exit
                _complete(parser)
            args, extra = parser.parse_known_args(argv)
            if getattr(args, "run", None) is None:  # a command line _command_of misread: build them all
                parser = build_parser()
                args, extra = parser.parse_known_args(argv)
            if extra:  # the command's own help knows the options it takes
                _subcommand_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
        except SystemExit as exit_:  # --help and --version print and stop here
            return int(exit_.code or 0)
        _check_files(args)  # before any work, the same rule for every command
        status = args.run(args)  # plan: 2 when no layout fits (the verdict is printed)
    except LimitError as error:
        print(f"dgxtopo: error: {_limit_error(error)}", file=sys.stderr)
        return 2
    except (_UsageError, DgxTopoError) as error:
        text = str(error)
        if getattr(error, "whys", ()):  # a tuning error names NCCL's reasons: in words here
            from .reasons_text import error_text
            text = error_text(error)
        # One line even when a name inside the message (a node id read from a file) holds a newline.
        print(f"dgxtopo: error: {_option_words(' '.join(text.splitlines()))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dgxtopo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `dgxtopo topo --system dgx2 | head`: the reader left, nothing to report.
        sys.stderr.close()
        return 0
    return status or 0


if __name__ == "__main__":  # python -m models.present.cli
    raise SystemExit(main())
