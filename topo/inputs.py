"""Reading the files a command is given: one reader for every kind of input file.

Every file dgx-topo reads goes through :func:`read_input` (text) or :func:`read_json` (a JSON
document), so that every kind is read the same way:

* **Regular files only.** A directory, a FIFO, a device or a socket is refused in one line
  before it is opened (reading a FIFO nobody writes to would block for ever); so is a path
  that does not exist or cannot be read.
* **Standard input** is ``-`` for the kinds where piping makes sense (``stdin=True`` in
  :data:`INPUT_KINDS`), as in ``dgxtopo topo --system dgxh100 | dgxtopo import - --gpu h100``. A
  terminal is refused: nothing would ever arrive but what the user types.
* **Sized before reading.** Each kind has a documented limit in bytes (:data:`INPUT_KINDS`);
  a larger file is refused from its size alone, before a byte is read (standard input is read
  up to one byte past the limit). A caller raises the limit with ``limit=`` (the command line's
  ``--max-input SIZE``).
* **Text** is UTF-8, a leading byte order mark dropped. JSON must be (RFC 8259):
  undecodable bytes are refused naming the line;
  the logs of the other kinds may hold stray bytes, which are replaced (U+FFFD).
* **JSON nesting is bounded** (:data:`MAX_JSON_DEPTH`): every JSON form dgx-topo reads nests a
  few levels, and a deeper document is refused instead of exhausting the parser's recursion.
* **Errors name the file** (and the line, where there is one): :class:`InputFileError`.

Examples
--------
>>> parse_json('{"a": [1, 2]}', source="x.json")
{'a': [1, 2]}
>>> parse_json('{"a": [1, 2}', source="x.json")
Traceback (most recent call last):
...
topo.inputs.InputFileError: x.json: line 1: expected JSON (Expecting ',' delimiter, column 12)
>>> INPUT_KINDS["calibration"].limit
1048576
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from types import MappingProxyType

from .errors import DgxTopoError
from .units import MiB

__all__ = ["InputFileError", "InputKind", "INPUT_KINDS", "MAX_JSON_DEPTH", "STDIN", "BOM", "read_input",
           "read_json", "parse_json", "json_depth", "file_type"]

#: The path that means standard input.
STDIN = "-"
#: UTF-8's byte order mark, which some editors write first: dropped where text is read.
BOM = b"\xef\xbb\xbf"
#: The deepest nesting of arrays and objects any JSON input may have. The fabric form (node-link
#: data with attribute dicts) nests 4 levels, a calibration 3, a task graph 4; 64 leaves room.
MAX_JSON_DEPTH = 64


class InputFileError(DgxTopoError):
    """An input file that cannot be read as asked: not a regular file, too large, undecodable or
    malformed JSON. The message names the file (and the line where there is one)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


@dataclass(frozen=True, slots=True)
class InputKind:
    """One kind of input file.

    Attributes
    ----------
    name : str
        The key of :data:`INPUT_KINDS`.
    what : str
        What it is, for messages ("nccl-tests output").
    limit : int
        The largest file read by default. [bytes]
    stdin : bool
        Whether ``-`` (standard input) is accepted.
    json : bool
        Whether the content is JSON (strict UTF-8, bounded nesting).
    """

    name: str
    what: str
    limit: int
    stdin: bool = True
    json: bool = False


# Limits: a few times the largest real file of each kind, far below what would take long to parse.
# - fabric: export of a 4096-GPU cluster (the default --max-gpus) is about 20 MB of JSON, 29 MB of
#   GraphML (512 GPUs, 64xdgxh100: 2.6 MB and 3.7 MB, measured 2026-12-01).
# - nvidia-smi topo -m of 72 GPUs with NICs is about 60 KB.
# - NCCL_TOPO_DUMP_FILE of a DGX H100 is about 20 KB; XML import cost grows with elements.
# - nccl-tests / p2pBandwidthLatencyTest: a full 8 B - 16 GB sweep is 3 KB; logs with
#   NCCL_DEBUG=INFO of a few hundred ranks reach a few MB.
# - calibration JSON ('dgxtopo calibrate --out') is about 1 KB.
# - task graph JSON (one training step's operations) stays below a few MB for thousands of ops.
INPUT_KINDS: dict = MappingProxyType({kind.name: kind for kind in (
    InputKind("fabric", "topology file (JSON or GraphML)", 64 * MiB),
    InputKind("nvidia-smi", "nvidia-smi topo -m output", 4 * MiB),
    InputKind("nccl-xml", "NCCL topology XML", 16 * MiB),
    InputKind("import", "nvidia-smi topo -m output or NCCL topology XML", 16 * MiB),
    InputKind("benchmark", "nccl-tests or p2pBandwidthLatencyTest output", 16 * MiB),
    InputKind("calibration", "calibration file", 1 * MiB, json=True),
    InputKind("task-graph", "task graph JSON", 64 * MiB, json=True),
)})


def _kind(kind) -> InputKind:
    if isinstance(kind, InputKind):
        return kind
    if kind not in INPUT_KINDS:
        raise InputFileError(f"unknown input kind {kind!r}: expected one of {', '.join(INPUT_KINDS)}")
    return INPUT_KINDS[kind]


def file_type(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` is, for messages ("a FIFO (named pipe)"); None for a
    regular file. Shared by the input reader and the output writer (models.present.output).

    >>> import os; file_type(os.stat("/").st_mode)
    'a directory'
    """
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, None)):
        if test(mode):
            return name
    return "not a regular file"


def _too_large(where: str, size: str, limit: int, option: str) -> InputFileError:
    return InputFileError(f"{where} is {size}, more than the limit of {limit} bytes for this kind "
                          f"of file: raise it with {option} SIZE")


def _read_stdin(spec: InputKind, limit: int, option: str) -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    where = f"standard input ({spec.what})"
    try:
        if stream is None or sys.stdin.isatty():
            raise InputFileError(f"cannot read {where}: it is a terminal, expected the {spec.what} "
                                 f"piped in (or a file name instead of -)", path=STDIN)
        data = stream.read(limit + 1)
    except (OSError, ValueError, AttributeError) as error:  # closed, or captured (no stdin at all)
        raise InputFileError(f"cannot read {where}: {getattr(error, 'strerror', None) or error}",
                             path=STDIN) from None
    if len(data) > limit:
        raise _too_large(where, f"longer than {limit} bytes", limit, option)
    return data


def _read_path(path: str, spec: InputKind, limit: int, option: str) -> bytes:
    where = f"{spec.what} {path!r}"
    try:
        # O_NONBLOCK: opening a FIFO nobody writes to returns at once instead of blocking; the
        # fstat of what was opened (not a stat of the name) decides, so nothing can swap it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError, TypeError) as error:
        raise InputFileError(f"cannot read {where}: {getattr(error, 'strerror', None) or error}",
                             path=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"cannot read {where}: it is {file_type(info.st_mode)}, expected a "
                                 f"regular file", path=path)
        if info.st_size > limit:
            raise _too_large(where, f"{info.st_size} bytes", limit, option)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            data = handle.read(limit + 1)  # a file that grew since fstat is still bounded
    except OSError as error:
        raise InputFileError(f"cannot read {where}: {error.strerror or error}", path=path) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise _too_large(where, f"longer than {limit} bytes", limit, option)
    return data


def _decode(data: bytes, source: str, strict: bool) -> str:
    data = data.removeprefix(BOM)  # an editor's byte order mark is not content (RFC 8259, 8.1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if not strict:
            return data.decode("utf-8", errors="replace")
        line = data.count(b"\n", 0, error.start) + 1
        raise InputFileError(f"{source}: line {line}: expected UTF-8 text, received byte "
                             f"0x{data[error.start]:02x}", path=source, line=line) from None


def read_input(path, kind: str | InputKind, *, limit: int | None = None, option: str = "--max-input") -> str:
    """The text of an input file of a given kind (``-``: standard input, where the kind takes it).

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    kind : str or InputKind
        A key of :data:`INPUT_KINDS` (``"fabric"``, ``"nvidia-smi"``, ``"nccl-xml"``,
        ``"import"``, ``"benchmark"``, ``"calibration"``, ``"task-graph"``), or a kind of its
        own (an :class:`InputKind` a reader outside ``topo`` defines, as MSCCL schedules do).
    limit : int, optional
        The largest file accepted [bytes] (default: the kind's).
    option : str
        The option named in the message that refuses a file over the limit.

    Returns
    -------
    str

    Raises
    ------
    InputFileError
        For a path that does not exist or cannot be read, that is not a regular file, a file
        over the limit, ``-`` for a kind that does not take standard input (or a terminal on
        it), or a JSON kind's text that is not UTF-8.

    Examples
    --------
    >>> read_input("/", "calibration")
    Traceback (most recent call last):
    ...
    topo.inputs.InputFileError: cannot read calibration file '/': it is a directory, expected a regular file
    """
    spec = _kind(kind)
    if limit is None:
        limit = spec.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InputFileError(f"expected a limit in bytes, a whole number >= 0, received {limit!r}")
    try:
        text = os.fspath(path)
    except TypeError:
        raise InputFileError(f"expected a file name for the {spec.what}, received "
                             f"{type(path).__name__}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if text == "":
        raise InputFileError(f"expected a file name for the {spec.what}, received ''", path=text)
    if text == STDIN:
        if not spec.stdin:
            raise InputFileError(f"the {spec.what} cannot be read from standard input: expected a "
                                 f"file name instead of -", path=text)
        data = _read_stdin(spec, limit, option)
        source = "standard input"
    else:
        data = _read_path(text, spec, limit, option)
        source = text
    return _decode(data, source, strict=spec.json)


def json_depth(value) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (a scalar is 0), without recursion.

    >>> json_depth({"a": [1, {"b": []}]}), json_depth(3)
    (4, 0)
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def parse_json(text: str, *, source: str = "input", max_depth: int = MAX_JSON_DEPTH):
    """Parse JSON text with bounded nesting; errors name ``source`` and the line.

    Parameters
    ----------
    text : str
    source : str
        The file it came from, for messages.
    max_depth : int
        The deepest nesting accepted (:data:`MAX_JSON_DEPTH`).

    Returns
    -------
    object
        The parsed value (``NaN`` and ``Infinity`` are refused: they are not JSON; a leading
        byte order mark is ignored, as RFC 8259 allows).

    Raises
    ------
    InputFileError
        For text that is not JSON, a non-finite number, or nesting deeper than ``max_depth``.
    """
    if not isinstance(text, str):
        raise InputFileError(f"{source}: expected JSON text, received {type(text).__name__}", path=source)

    def constant(name):
        raise InputFileError(f"{source}: expected JSON, received {name} (not a JSON number)", path=source)

    try:
        value = json.loads(text.removeprefix("\ufeff"), parse_constant=constant)
    except json.JSONDecodeError as error:
        raise InputFileError(f"{source}: line {error.lineno}: expected JSON ({error.msg}, column "
                             f"{error.colno})", path=source, line=error.lineno) from None
    except InputFileError:
        raise
    except RecursionError:
        raise InputFileError(f"{source}: expected JSON nested at most {max_depth} levels deep, "
                             f"received deeper nesting", path=source) from None
    except ValueError:  # an integer of more digits than Python converts (4300 by default)
        raise InputFileError(f"{source}: expected JSON numbers of at most "
                             f"{sys.get_int_max_str_digits()} digits, received a longer one",
                             path=source) from None
    depth = json_depth(value)
    if depth > max_depth:
        raise InputFileError(f"{source}: expected JSON nested at most {max_depth} levels deep, "
                             f"received {depth}", path=source)
    return value


def read_json(path, kind: str, *, limit: int | None = None, option: str = "--max-input",
              max_depth: int = MAX_JSON_DEPTH):
    """:func:`read_input` then :func:`parse_json`: a JSON input file, parsed.

    Raises
    ------
    InputFileError
        As :func:`read_input` and :func:`parse_json` do.
    """
    text = read_input(path, kind, limit=limit, option=option)
    source = "standard input" if os.fspath(path) == STDIN else os.fspath(path)
    return parse_json(text, source=source, max_depth=max_depth)
