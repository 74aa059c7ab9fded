"""The ``dgxtopo`` parser assembled from every command's module, and :func:`main`: parse, run,
and every input error reported in one line with exit status 2."""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from types import MappingProxyType

from topo.errors import DgxTopoError, LimitError

from . import (alltoallv, bound, collective, compare, dispatch, files, graphs, grouped, measured, p2p, plan, report, schedule, sets, simulate, systems,
               tuner, whatif)
from .inputs import check_files
from .options import (SIZE_HELP, TOPO_FILE_HELP, WHATIF_HELP, Command, Parser, UsageError, parse_size, spec_help,
                      too_much)

#: Every subcommand, in the order ``dgxtopo --help`` lists them: each command's module (one topic,
#: one or two commands) defines its :class:`Command`; adding a command is a module and a line here.
COMMANDS: tuple[Command, ...] = (
    systems.SYSTEMS, systems.TOPO, p2p.P2P, collective.COLLECTIVE, sets.PAIRS, sets.SUBSETS, compare.COMPARE,
    report.REPORT, measured.CALIBRATE, measured.CHECK, files.IMPORT, files.EXPORT, bound.BOUND, whatif.WHATIF,
    plan.PLAN, plan.GPUS, simulate.SIMULATE, schedule.SCHEDULE, tuner.TUNER, graphs.GRAPHS,
    dispatch.DISPATCH, grouped.GROUPED, alltoallv.ALLTOALLV)


def _grammars(parser) -> list:
    """The shared grammars a subcommand's own options take (its epilog shows only these): the
    system spec with --system, topology files with --topo-file, what-ifs with --fail/--degrade,
    sizes with an option of type SIZE."""
    dests = {action.dest for action in parser._actions}
    sized = any(action.type is parse_size for action in parser._actions)
    return [text() if callable(text) else text
            for wanted, text in (("system" in dests, spec_help), ("topo_file" in dests, TOPO_FILE_HELP),
                                 ("fail" in dests, WHATIF_HELP), (sized, SIZE_HELP)) if wanted]


def _fill(text: str) -> str:
    return textwrap.fill(text, 79, break_long_words=False, break_on_hyphens=False)


_LAYOUT = MappingProxyType({"formatter_class": argparse.RawDescriptionHelpFormatter})


def _top_parser() -> tuple:
    """The top-level parser of ``dgxtopo`` and its (empty) subcommand action."""
    from topo.version import __version__

    parser = Parser(prog="dgxtopo", description="Model NVIDIA DGX interconnect fabrics and what "
                     "NCCL-style communication achieves on them.",
                     epilog=lambda: "\n\n".join(_fill(text) for text in (spec_help(), TOPO_FILE_HELP,
                                                                          WHATIF_HELP, SIZE_HELP)),
                     **_LAYOUT)
    parser.add_argument("--version", action="version", version=f"dgxtopo {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
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
                    "max_events": "--max-events", "max_hops": "--max-hops", "max_seconds": "--max-seconds",
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
    return str(too_much(error.what, error.size, error.limit, option))


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
        check_files(args)  # before any work, the same rule for every command
        status = args.run(args)  # plan: 2 when no layout fits (the verdict is printed)
    except LimitError as error:
        print(f"dgxtopo: error: {_limit_error(error)}", file=sys.stderr)
        return 2
    except (UsageError, DgxTopoError) as error:
        text = str(error)
        if getattr(error, "whys", ()):  # a tuning error names NCCL's reasons: in words here
            from ..reasons_text import error_text
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
