"""``dgxtopo`` starts without the models: lazy package faces, the parser of the command that runs,
and the shipped start-up data (models.present.startup), which must be what the registry gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import models
from models.present.cli import COMMANDS, build_parser
from models.present.startup import read_startup_data, startup_data


def test_shipped_startup_data_is_what_the_registry_and_the_systems_give():
    # On failure: python -m models.present.startup (rewrites models/present/data/startup.json).
    assert read_startup_data() == startup_data()


_START = """
import contextlib, io, sys
HEAVY = ('networkx', 'numpy', 'plotly', 'scipy', 'models.predict', 'models.studies', 'models.engine.nccl',
         'models.engine.fabric')
def heavy():
    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in HEAVY))
import models.present.cli as cli
assert not heavy(), f'importing the CLI imported {heavy()[:5]}'
for argv in (['--help'], ['--version'], ['systems'], ['systems', '--json'], []):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli.main(argv)
    assert not heavy(), f'dgxtopo {" ".join(argv)} imported {heavy()[:5]}'
import topo, models
assert not heavy(), f'import topo, models imported {heavy()[:5]}'
print('ok')
"""


def test_starting_imports_no_model_networkx_numpy_plotly_or_scipy():
    result = subprocess.run([sys.executable, "-c", _START], capture_output=True, text=True,
                            cwd=Path(__file__).parents[3])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def _choices(parser) -> dict:
    return next(a for a in parser._actions if a.dest == "command").choices


def test_the_parser_of_one_command_prints_the_help_of_the_whole_parser():
    full = build_parser()
    assert build_parser([]).format_help() == full.format_help()
    for name in ("bound", "plan", "systems"):
        one = _choices(build_parser([name]))[name]
        assert one.format_help() == _choices(full)[name].format_help()
        assert one.get_default("run") is next(c.run for c in COMMANDS if c.name == name)
    # The commands not built are listed (for --help) but take no option.
    assert _choices(build_parser(["bound"]))["plan"].get_default("run") is None


def test_lazy_faces_give_every_public_name_and_keep_names_over_submodules():
    import topo.cluster  # noqa: F401  (the module binds itself to the package: the function stays)

    assert topo.cluster is topo.registry.cluster and callable(topo.cluster)
    for face in (topo, models):
        missing = [name for name in face.__all__ if not hasattr(face, name)]
        assert not missing, missing
        assert set(face.__all__) <= set(dir(face))


def _run(argv) -> tuple:
    import contextlib
    import io

    from models.present import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


def test_a_command_line_prints_what_the_whole_parser_prints(monkeypatch):
    # main builds the parser of the command that runs, alone when the command line starts with it;
    # every help, usage and error it can print is the whole parser's, byte for byte.
    from models.present.cli import core

    argvs = [["--help"], ["--version"], [], ["colective"], ["--help", "plan"], ["-h", "systems"],
             ["collective", "all_reduce", "--system", "dgx1v", "--gpus"], ["p2p", "-h"], ["bound", "--version"],
             ["plan", "bert-large", "--system", "dgx1v", "--dtype", "fp7"], ["systems", "extra"]]
    argvs += [[command.name, option] for command in COMMANDS for option in ("--help", "--no-such-option")]
    lazy = [_run(argv) for argv in argvs]
    whole = build_parser()  # one parser parses every command line (argparse keeps no state between them)
    monkeypatch.setattr(core, "_parser_for", lambda argv: whole)
    assert lazy == [_run(argv) for argv in argvs]
    assert all(status in (0, 2) and (out or err) for status, out, err in lazy)
