"""The README's printed output, regenerated from the commands that print it.

Every ```text block of README.md starts with the command line that prints it, ``$ dgxtopo ...``
(exact, options included); the rest of the block is that command's standard output. This module
runs each command in-process and rewrites the blocks; ``tests/test_readme.py`` checks that the
README matches. After a change that alters printed output, run from the repository root:

    python -m tests.regen_readme
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"
#: A ```text block: its whole body (group 1).
TEXT_BLOCK = re.compile(r"```text\n(.*?)```", re.S)
PROMPT = "$ dgxtopo "


def command_of(block: str) -> str | None:
    """The ``dgxtopo ...`` command line a block shows (without ``$ ``), or None."""
    first = block.split("\n", 1)[0]
    return first[2:] if first.startswith(PROMPT) else None


_WORKDIR: list = []


def _workdir() -> Path:
    """A scratch directory holding copies of ``examples/`` and ``tests/data/``, where the README's commands run: the
    files they read are there under the same relative paths, and the files they write (``--out``)
    land there, never in the repository."""
    if not _WORKDIR:
        scratch = Path(tempfile.mkdtemp(prefix="dgxtopo-readme-"))
        # Removed when the process ends (each test worker, or the regenerating run), not left in
        # the temporary directory.
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        shutil.copytree(README.parent / "examples", scratch / "examples")
        shutil.copytree(README.parent / "tests" / "data", scratch / "tests" / "data")
        _WORKDIR.append(scratch)
    return _WORKDIR[0]


def run_command(command: str) -> str:
    """The standard output of ``dgxtopo ARGS`` run in-process (in :func:`_workdir`); fails on a
    non-zero status."""
    from models.present.cli import main

    argv = shlex.split(command)[1:]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(_workdir())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        os.chdir(here)
    if status != 0:
        raise RuntimeError(f"README command {command!r} exited {status}: {err.getvalue().strip()}")
    return out.getvalue()


def expected_block(block: str) -> str:
    """The block as it should read: its command line, then what the command prints."""
    command = command_of(block)
    return f"$ {command}\n{run_command(command)}"


def regenerate(text: str) -> str:
    """README text with every command block's output replaced by the command's real output."""
    def replace(match):
        block = match.group(1)
        if command_of(block) is None:
            return match.group(0)
        return f"```text\n{expected_block(block)}```"
    return TEXT_BLOCK.sub(replace, text)


def main() -> int:
    text = README.read_text(encoding="utf-8")
    new = regenerate(text)
    if new != text:
        README.write_text(new, encoding="utf-8")
        print(f"rewrote the command output in {README.name}")
    else:
        print(f"{README.name}: every command block is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
