"""Writing output files safely: the one writer behind every ``--out``.

A file is written atomically: the text goes to a temporary file in the target's directory,
is flushed to disk (``fsync``) and then renamed over the target, so an interrupted or failed
run leaves either the old file or the new one, never a partial one, and no temporary file.

Only a regular file is ever replaced. The target is checked before any work and again just
before the rename; a directory, a device (``/dev/full``), a FIFO, a socket, an empty path or a
path whose directory does not exist (or is not writable) raises :class:`OutputPathError`
naming the path and what was expected, and leaves whatever is there untouched.

Nor is a file the command reads: ``check_output_path(path, inputs=...)`` refuses a path that is
one of the inputs (the same name resolved, or a hard link to it), so ``calibrate m.txt --out
m.txt`` cannot replace the measurement. ``-`` and the standard streams (``/dev/stdout``,
``/dev/fd/N``) are refused too: a stream cannot be replaced atomically, and what a command prints
goes to standard output already.

A command with several outputs (``simulate --trace T --out F``) checks them together through
:func:`check_output_paths`, the one rule every command's outputs go through: each is checked as
above against every input, and no two may be the same file (resolved, or hard links to one
file), or the second write would replace the first.

Symbolic links are written through: a path that is a symlink is resolved, the same rules
apply to the file it points to, and that file is replaced (the link itself stays). A link
to a device, a directory or a FIFO is refused like the device itself; a dangling link whose
target directory exists creates the target file, as ``echo text > link`` would.

Examples
--------
>>> check_output_path("")
Traceback (most recent call last):
...
models.present.output.OutputPathError: cannot write to '': expected a file name such as report.html
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from topo.errors import DgxTopoError
from topo.inputs import file_type

__all__ = ["OutputPathError", "check_output_path", "check_output_paths", "write_text_atomic"]


class OutputPathError(DgxTopoError):
    """A path an output file cannot be written to (or replaced at)."""


# Names of the standard streams: a stream is not a file that can be replaced atomically.
_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/fd/", "/proc/self/fd/")


def _check_resolved(path: str, target: Path) -> None:
    """Refuse anything at ``target`` (the resolved path) but a regular file or nothing."""
    where = f"cannot write to {path!r}"
    via = f" (a symlink to {str(target)!r})" if os.path.islink(path) else ""
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet: the directory decides
        mode = None
    except OSError as error:
        raise OutputPathError(f"{where}: {error.strerror or error}") from None
    if mode is not None:
        kind = file_type(mode)
        if kind is not None:
            raise OutputPathError(f"{where}{via}: it is {kind}, expected a regular file "
                                  f"such as report.html")
        return
    parent = target.parent
    if not parent.exists():
        raise OutputPathError(f"{where}{via}: directory {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise OutputPathError(f"{where}{via}: {str(parent)!r} is not a directory")


def check_output_path(path, *, inputs=()) -> Path:
    """Check that an output file can be written at ``path``; return the file to replace.

    Parameters
    ----------
    path : str or os.PathLike
    inputs : iterable of str or os.PathLike
        The files the command reads: ``path`` must be none of them (replacing an input, such as
        the measurement being calibrated, would lose it). ``-`` (standard input) is skipped.

    Returns
    -------
    pathlib.Path
        The regular file that will be replaced (``path`` with symlinks resolved), or that
        will be created.

    Raises
    ------
    OutputPathError
        If ``path`` is empty or ``-``, is (or links to) a directory, a device, a FIFO or a
        socket, is one of ``inputs``, or its directory does not exist, is not a directory or
        is not writable.

    Examples
    --------
    >>> check_output_path("/nonexistent-dir/report.html")
    Traceback (most recent call last):
    ...
    models.present.output.OutputPathError: cannot write to '/nonexistent-dir/report.html': directory '/nonexistent-dir' does not exist
    """
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise OutputPathError(f"cannot write to {path!r}: expected a file name such as report.html")
    if text == "" or "\0" in text:
        raise OutputPathError(f"cannot write to {text!r}: expected a file name such as report.html")
    if text == "-":
        raise OutputPathError("cannot write to '-': output files are replaced atomically, so standard "
                              "output is not one; expected a file name such as report.html (the "
                              "printed output goes to standard output already)")
    if text.startswith(_STREAMS):
        raise OutputPathError(f"cannot write to {text!r}: it is a standard stream, expected a regular "
                              f"file such as report.html (output files are replaced atomically; the "
                              f"printed output goes to standard output already)")
    target = Path(os.path.realpath(text))
    _check_resolved(text, target)
    for source in inputs:
        if os.fspath(source) != "-" and _same_file(target, source):
            raise OutputPathError(f"cannot write to {text!r}: it is the input {os.fspath(source)!r}, "
                                  f"which would be replaced; expected another file name")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot write to {text!r}: directory {str(target.parent)!r} "
                              f"is not writable")
    return target


def check_output_paths(outputs, *, inputs=()) -> dict:
    """Check every output file of a command at once: the rule of :func:`check_output_path` for
    each, and no two the same file.

    Parameters
    ----------
    outputs : mapping of str to (str or os.PathLike)
        Each output's name (the option that names it, such as ``"--trace"``) and its path; a
        path of None (an output not asked for) is skipped.
    inputs : iterable of str or os.PathLike
        The files the command reads (see :func:`check_output_path`).

    Returns
    -------
    dict
        Each output's name and the regular file that will be replaced or created.

    Raises
    ------
    OutputPathError
        For a path :func:`check_output_path` refuses, or two outputs that are one file.

    Examples
    --------
    >>> check_output_paths({"--trace": "t.json", "--out": "./t.json"})
    Traceback (most recent call last):
    ...
    models.present.output.OutputPathError: cannot write --out to './t.json': it is also where --trace goes ('t.json'), and one would replace the other; expected two different files
    """
    inputs = list(inputs)
    targets: dict = {}
    for name, path in outputs.items():
        if path is None:
            continue
        target = check_output_path(path, inputs=inputs)
        for other, (other_path, other_target) in targets.items():
            if target == other_target or _same_file(target, other_target):
                raise OutputPathError(f"cannot write {name} to {os.fspath(path)!r}: it is also where {other} "
                                      f"goes ({os.fspath(other_path)!r}), and one would replace the other; "
                                      f"expected two different files")
        targets[name] = (path, target)
    return {name: target for name, (_, target) in targets.items()}


def _same_file(target: Path, source) -> bool:
    """Whether ``source`` (an input path) is the file at ``target``: the same resolved name,
    or the same inode (a hard link)."""
    try:
        if Path(os.path.realpath(os.fspath(source))) == target:
            return True
        return target.exists() and os.path.samefile(target, source)
    except (OSError, TypeError, ValueError):
        return False


def _new_file_mode(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomic(path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; see the module's rules.

    Parameters
    ----------
    path : str or os.PathLike
    text : str

    Returns
    -------
    pathlib.Path
        The file written (symlinks resolved).

    Raises
    ------
    OutputPathError
        For a path :func:`check_output_path` refuses, or a disk error while writing (the old
        file, if any, is left as it was).
    """
    target = check_output_path(path)
    where = f"cannot write to {os.fspath(path)!r}"
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise OutputPathError(f"{where}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _new_file_mode(target))
        # Checked again: something other than a regular file may have appeared meanwhile.
        _check_resolved(os.fspath(path), target)
        os.replace(temporary, target)
    except BaseException as error:  # Ctrl-C included: no temporary file is left behind
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise OutputPathError(f"{where}: {error.strerror or error}") from None
        raise
    return target
