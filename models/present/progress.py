"""Progress bars for long command-line work (display edge).

A bar is drawn on stderr with tqdm, only when stderr is a terminal and the output is not JSON,
and only once the work has taken more than :data:`DELAY` seconds (quick runs print nothing).
tqdm is a dependency of dgx-topo; should it be missing (a source tree used without
installing), there is simply no bar. Library functions take a plain ``progress(done, total)``
callable and never draw anything themselves.

Examples
--------
>>> import io
>>> with progress_bar("searching", enabled=False) as progress:
...     progress(1, 2)  # accepted and ignored: no bar
"""

from __future__ import annotations

import contextlib
import sys

__all__ = ["progress_bar", "wants_progress", "DELAY"]

#: Seconds of work before a bar appears. [s]
DELAY = 2.0


def wants_progress(*, json_output: bool, stream=None) -> bool:
    """Whether to draw a bar: stderr (or ``stream``) is a terminal and the output is not JSON."""
    stream = sys.stderr if stream is None else stream
    if json_output:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


@contextlib.contextmanager
def progress_bar(description: str, *, enabled: bool, unit: str = "step", stream=None, delay: float = DELAY):
    """A ``progress(done, total)`` callable driving a tqdm bar, closed on exit.

    Parameters
    ----------
    description : str
        Shown left of the bar.
    enabled : bool
        False gives a callable that does nothing (see :func:`wants_progress`).
    unit : str
        What one step is (``search``, ``system``).
    stream : file, optional
        Where to draw (default stderr).
    delay : float
        Seconds before the bar appears. [s]

    Yields
    ------
    callable
        ``progress(done, total)``.
    """
    bar = None
    if enabled:
        try:
            from tqdm import tqdm  # display only; the library never needs it
        except ImportError:
            tqdm = None
        if tqdm is not None:
            bar = tqdm(desc=description, total=None, unit=unit, file=sys.stderr if stream is None else stream,
                       delay=delay, leave=False, dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        if bar is None:
            return
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)
        if done >= total:
            bar.refresh()  # the last step is drawn even when it came quickly

    try:
        yield progress
    finally:
        if bar is not None:
            bar.close()
