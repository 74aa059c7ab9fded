"""A send-count matrix read from text: the bytes each rank sends each rank, for ``dgxtopo
alltoallv --matrix FILE`` (:func:`models.predict.alltoall.alltoallv`).

The format: one row per sender, one column per receiver, in rank order (the order of ``--gpus``);
the entries separated by commas (CSV) or white space, each a size as nccl-tests' ``-b``/``-e`` read
it (``4096``, ``64K``, ``1M``: :func:`topo.units.parse_nbytes`, the one parser of sizes). Blank
lines and lines starting with ``#`` are skipped. The diagonal is a rank's copy to itself, not timed.

The file is read as every input is (:func:`topo.inputs.read_input`: regular files or ``-``, sized
before reading, :data:`MATRIX_INPUT`); :func:`parse_matrix` checks the shape against the ranks
before it parses an entry, and every refusal is a :class:`MatrixFileError` naming the file, the
line and what was expected and received.

Examples
--------
>>> parse_matrix("0, 1K\\n2K 0", 2, source="m.csv").tolist()
[[0, 1024], [2048, 0]]
>>> parse_matrix("0 1\\n2 0", 4, source="m.csv")
Traceback (most recent call last):
...
models.present.send_matrix.MatrixFileError: m.csv: expected 4 rows of 4 entries of bytes (one row per sending rank, one column per receiving rank, 4 ranks), received 2 rows of 2
"""

from __future__ import annotations

import re

import numpy as np

from topo.errors import DgxTopoError
from topo.inputs import InputFileError, InputKind
from topo.units import MAX_NBYTES, MiB, parse_nbytes

__all__ = ["MatrixFileError", "MATRIX_INPUT", "parse_matrix"]

#: The kind of input a matrix is, for :func:`topo.inputs.read_input`: at the command line's default
#: limit of routed pairs (70,000, about 265 ranks) a matrix of 19-digit entries is about 1.4 MB.
MATRIX_INPUT = InputKind("matrix", "send-count matrix", 4 * MiB)

_SEPARATOR = re.compile(r"\s+")
_EXPECTED = "one row per sending rank, one column per receiving rank"


class MatrixFileError(InputFileError):
    """A send-count matrix that cannot be read: empty, not text, of another shape than the ranks,
    or an entry that is not a size (negative, fractional, NaN, infinite, not a number)."""


def _rows(text: str) -> list:
    """``(line number, entries)`` of every line that holds entries: a line with a comma is CSV
    (each field one entry, an empty field kept as ``""`` to be refused: ``0,,1K`` is not two
    entries), any other is split at white space."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        body = line.strip().lstrip("\ufeff")
        if not body or body.startswith("#"):
            continue
        if "," in body:
            rows.append((number, [e.strip() for e in body.split(",")]))
        else:
            rows.append((number, [e for e in _SEPARATOR.split(body) if e]))
    return rows


def _why(entry: str) -> str:
    """What an entry the size parser refused is, in words, where a word says more than its message."""
    lower = entry.lower().lstrip("+-")
    if not entry:
        return "an empty field"
    if lower in ("nan", "inf", "infinity"):
        return "not a finite number"
    if entry.startswith("-"):
        return "negative"
    if re.fullmatch(r"[0-9]*\.[0-9]+(e[+-]?[0-9]+)?|[0-9]+e[+-]?[0-9]+", lower):
        return "a decimal number, not whole bytes"
    return "not a size"


def parse_matrix(text: str, n: int, *, source: str = "matrix") -> np.ndarray:
    """The ``n x n`` send-count matrix in ``text`` as int64 bytes (``[i, j]``: rank i to rank j).

    Parameters
    ----------
    text : str
        The file's text.
    n : int
        The ranks (the GPUs the operation runs on).
    source : str
        The file as messages name it.

    Returns
    -------
    numpy.ndarray
        ``n x n`` int64. [bytes]

    Raises
    ------
    MatrixFileError
        An empty file, another number of rows or of entries in a row than ``n``, an entry that is
        not a size (:func:`topo.units.parse_nbytes`), or a rank sending more than 2**62 bytes.
    """
    rows = _rows(text)
    where = f"{source}: expected {n} rows of {n} entries of bytes ({_EXPECTED}, {n} ranks)"
    if not rows:
        raise MatrixFileError(f"{where}, received no entries (an empty file, or only comments)", path=source)
    if len(rows) != n:
        widths = {len(entries) for _, entries in rows}
        received = f"{len(rows)} rows of {widths.pop()}" if len(widths) == 1 else f"{len(rows)} rows"
        raise MatrixFileError(f"{where}, received {received}", path=source)
    for number, entries in rows:
        if len(entries) != n:
            raise MatrixFileError(f"{source}: line {number}: expected {n} entries (one per receiving rank), "
                                  f"received {len(entries)}", path=source, line=number)
    m = np.empty((n, n), dtype=np.int64)
    for i, (number, entries) in enumerate(rows):
        for j, entry in enumerate(entries):
            try:
                m[i, j] = parse_nbytes(entry)
            except DgxTopoError as error:
                raise MatrixFileError(f"{source}: line {number}, column {j + 1}: expected bytes (digits with an "
                                      f"optional binary suffix K, M, G, T), received {entry[:40]!r}: "
                                      f"{_why(entry)}", path=source, line=number) from error
        if sum(int(v) for v in m[i]) > MAX_NBYTES:
            raise MatrixFileError(f"{source}: line {number}: expected a rank to send at most 2**62 bytes, "
                                  f"received a row of {sum(int(v) for v in m[i])}", path=source, line=number)
    return m
