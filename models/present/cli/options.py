"""The command line's shared vocabulary: limits, grammars, argparse types and the options several
commands take (``--system``, ``--topo-file``, what-ifs, ``--nccl``, sizes, ``--json``).

A limit is the default of the option that raises it, documented where it is set; a malformed
value is an :class:`UsageError`, reported in one line by :func:`models.present.cli.core.main`.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Callable

import topo
from topo.errors import DgxTopoError

from ..startup import read_startup_data


# The grammar of --fail and --degrade (models.studies.whatif.FAILURE_GRAMMAR, shortened for --help).
FAIL_GRAMMAR = "NODE, A-B or A-B:K"
DEGRADE_GRAMMAR = "A-B=F with 0 < F <= 1"


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
#: estimates every group shape of every layout; 64 GPUs (8xdgxh100) take about 15 s, a MoE
#: search of 256 (deepseek-v3 on 32xdgxh100) about 30 s.
MAX_PLAN_GPUS = 512
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


def spec_help() -> str:
    """The system spec's grammar and names, from the shipped start-up data (models.present.startup:
    the registry's, without importing it)."""
    data = read_startup_data()
    return _SPEC_HELP.format(grammar=data["spec_grammar"], names=", ".join(data["systems"]),
                             variants=", ".join(data["variants"]))
TOPO_FILE_HELP = (
    "Topology files (--topo-file FILE): a fabric written by 'dgxtopo import' or 'dgxtopo export', "
    "JSON or GraphML (told apart by content), used instead of a system; --nodes N joins N copies "
    "of it like NxNAME does a built-in system.")
WHATIF_HELP = (
    f"What-ifs: --fail {FAIL_GRAMMAR} takes out a part (gpu2, nvswitch3, mlx5_1) or the links "
    f"between two nodes (gpu0-gpu3), or K of them (gpu0-gpu3:1); --degrade {DEGRADE_GRAMMAR} "
    f"(gpu0-gpu3=0.5) slows links down. Both repeat; node ids as the fabric names them.")
SIZE_HELP = ("Sizes (SIZE) are bytes as nccl-tests takes them: 8, 64K, 256M, 1G, 2T (K, M, G, T "
              "are binary multiples: 64K = 65536).")


class UsageError(Exception):
    """A malformed command line; reported in one line like every other input error."""


class Parser(argparse.ArgumentParser):
    """argparse's parser with one-line errors and an epilog that may be a callable, called when the
    help is first formatted: filling the grammars' text costs more than parsing a command line."""

    def format_help(self):
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()

    def error(self, message):  # argparse would print the usage and exit; we report one line.
        raise UsageError(f"{message} (see '{self.prog} --help')")


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


def at_least(minimum: int):
    """An argparse type: a whole number >= ``minimum`` (argparse names the option)."""
    from topo.units import parse_count

    def parse(text: str) -> int:
        try:
            return parse_count(str(text), name="value", minimum=minimum)
        except DgxTopoError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, received {text!r}")
    return value


# ------------------------------------------------------------------------- sizing work
def too_much(what: str, size: int, limit: int, option: str) -> UsageError:
    return UsageError(f"{what}, more than the limit of {limit}: raise it with {option} N "
                       f"(the work grows with it)")


def size_sweep(minimum: int, maximum: int, factor: int) -> list:
    if maximum < minimum:
        raise UsageError(f"the largest size ({maximum} B) is below the smallest ({minimum} B): "
                          f"expected -e >= -b")
    sizes, size = [], minimum
    while size <= maximum:
        sizes.append(size)
        size = size * factor if size else 1
    return sizes


# ------------------------------------------------------- a command, and the options commands share
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


def json_option(parser, what: str = "a table") -> None:
    parser.add_argument("--json", action="store_true", help=f"print JSON instead of {what}")


def max_gpus_option(parser, default: int = MAX_GPUS) -> None:
    parser.add_argument("--max-gpus", type=at_least(1), default=default, metavar="N",
                        help=f"refuse systems with more than N GPUs before building them "
                             f"(default {default})")
    parser.add_argument("--max-host-gpus", type=at_least(1), default=MAX_HOST_GPUS, metavar="N",
                        help=f"refuse a --topo-file fabric with a host of more than N GPUs (default "
                             f"{MAX_HOST_GPUS}; NCCL's search over one host grows with the square of its GPUs)")


def topo_file_options(parser, *, many: bool = False) -> None:
    """``--topo-file`` (repeatable with ``many``), ``--nodes``, ``--network``."""
    if many:
        parser.add_argument("--topo-file", action="append", default=[], metavar="FILE",
                            help="also a fabric written by import or export (JSON or GraphML); repeatable")
    else:
        parser.add_argument("--topo-file", metavar="FILE",
                            help="a fabric written by import or export (JSON or GraphML) instead of a system")
    parser.add_argument("--nodes", type=at_least(1), metavar="N",
                        help="with --topo-file: a cluster of N copies of the file's system")
    parser.add_argument("--network", choices=topo.NETWORKS,
                        help=f"with --nodes: the InfiniBand network joining them, {', '.join(topo.NETWORKS)} "
                             f"(default fat_tree)")
    max_input_option(parser)


def max_input_option(parser) -> None:
    parser.add_argument("--max-input", type=parse_size, metavar="SIZE",
                        help="refuse input files larger than SIZE (default: per kind, "
                             "topo.inputs.INPUT_KINDS: 64M for fabrics and task graphs, 16M for benchmark outputs, "
                             "imports and MSCCL schedules, 4M for send-count matrices, 1M for calibrations)")


def whatif_options(parser) -> None:
    parser.add_argument("--fail", action="append", default=[], metavar="SPEC",
                        help=f"take out a part or links, {FAIL_GRAMMAR}: gpu2, nvswitch3, mlx5_1, "
                             f"gpu0-gpu3, gpu0-gpu3:1 (repeatable)")
    parser.add_argument("--degrade", action="append", default=[], metavar="SPEC",
                        help=f"slow links down, {DEGRADE_GRAMMAR}: gpu0-gpu3=0.5 (repeatable)")


def system_option(parser, *, whatif: bool = True) -> None:
    """``--system SPEC`` (every command names its system so), ``--topo-file`` and what-ifs."""
    parser.add_argument("--system", metavar="SPEC", help="system or cluster (see below)")
    topo_file_options(parser)
    if whatif:
        whatif_options(parser)
    max_gpus_option(parser)


def systems_option(parser, *, default: str) -> None:
    """``--system SPEC [SPEC ...]`` for the commands that take several (compare, report)."""
    parser.add_argument("--system", metavar="SPEC", nargs="+", action="extend", default=[],
                        help=f"systems or clusters, repeatable ({default}; see below)")


def nccl_option(parser) -> None:
    # --nccl takes any release the profiles cover; nccl_profile() raises a one-line typed error.
    from ...engine.nccl.profiles import PROFILES

    parser.add_argument("--nccl", metavar="VERSION", default=None, help=(
        f"NCCL release to model, {min(p.first for p in PROFILES.values())[0]}.0 to "
        f"{'.'.join(map(str, max(p.last for p in PROFILES.values())[:2]))}.x, e.g. 2.3.7, 2.12.12, "
        f"v2.27.7-1 (default: the reference version); each maps to the profile governing it "
        f"(models.present.versions_text.format_versions_table())"))


def gpus_per_thread_option(parser, *, default=1, help_default="1: one process per GPU, as "
                            "training frameworks run") -> None:
    parser.add_argument("-g", "--gpus-per-thread", dest="g", type=at_least(1), default=default, metavar="N",
                        help=f"GPUs one host thread drives, nccl-tests' -g (default {help_default})")


def calibration_option(parser) -> None:
    parser.add_argument("--calibration", metavar="FILE",
                        help="measurement constants fitted by 'dgxtopo calibrate' (its JSON file; "
                             "default: the constants fitted to the shipped DGX-2 runs)")


def measurement_options(parser) -> None:
    """``-g N`` and ``--calibration FILE``: how the predicted time becomes what nccl-tests measures."""
    gpus_per_thread_option(parser)
    calibration_option(parser)


def collective_argument(parser) -> None:
    from ...predict.collectives import COLLECTIVE_NAMES

    parser.add_argument("coll", metavar="COLLECTIVE", choices=COLLECTIVE_NAMES,
                        help="one of " + ", ".join(COLLECTIVE_NAMES))


def sweep_options(parser, *, minimum: str, maximum: str, factor: int) -> None:
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size(minimum), metavar="SIZE",
                        help=f"smallest size (default {minimum})")
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size(maximum), metavar="SIZE",
                        help=f"largest size (default {maximum})")
    parser.add_argument("-f", "--stepfactor", type=at_least(2), default=factor, metavar="F",
                        help=f"size multiplier, an integer >= 2 (default {factor})")
