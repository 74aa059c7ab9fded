"""Plain-text tables for the command line (display edge: values arrive already formatted).

Examples
--------
>>> print(format_table(["system", "GPUs"], [["dgx1", "8"], ["dgx2", "16"]], align="<>"))
system  GPUs
dgx1       8
dgx2      16
"""

from __future__ import annotations

__all__ = ["format_table"]


def format_table(headers, rows, *, align: str | None = None, gap: int = 2) -> str:
    """Columns as wide as their widest cell, separated by ``gap`` spaces.

    Parameters
    ----------
    headers : sequence of str
    rows : sequence of sequence of str
    align : str, optional
        One character per column, ``"<"`` (left) or ``">"`` (right); default all left.
    gap : int
        Spaces between columns.

    Returns
    -------
    str
        The table, without trailing spaces.
    """
    align = align or "<" * len(headers)
    table = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = []
    for row in table:
        cells = [c.ljust(w) if a == "<" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        lines.append((" " * gap).join(cells).rstrip())
    return "\n".join(lines)
