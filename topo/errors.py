"""The exceptions dgx-topo raises for bad input.

Every error a user can cause derives from :class:`DgxTopoError`, so a caller (and the CLI,
which prints one line and exits 2) can catch them all without catching programming errors.
Messages say what was expected and what was received.
"""

from __future__ import annotations

__all__ = [
    "DgxTopoError", "TopologyError", "SystemSpecError", "UnknownSystemError", "SizeError",
    "CountError", "LimitError", "TransformError", "UnknownPartError",
]


class DgxTopoError(ValueError):
    """Base class of every input error raised by dgx-topo."""


class TopologyError(DgxTopoError):
    """A fabric graph breaks the schema (see :data:`topo.schema.ATTRIBUTES`)."""


class SystemSpecError(DgxTopoError):
    """A system spec (``NAME`` or ``NxNAME[:network]``) that is malformed or too large."""


class UnknownSystemError(SystemSpecError):
    """A system name that is not in :data:`topo.SYSTEMS`."""


class SizeError(DgxTopoError):
    """A message size that is not a whole number of bytes in the accepted range."""


class CountError(DgxTopoError):
    """A count option (``--top``, ``-k``, ``--ngpus``) that is not a whole number in range."""


class LimitError(DgxTopoError):
    """Work beyond a limit the caller set, refused before it starts.

    Every wing raises this one type for every limit, naming the keyword argument that sets
    it, so that a caller can tell which knob raises it (the command line maps the keyword to
    its option: ``max_sets`` to ``--limit``).

    Attributes
    ----------
    what : str
        The work refused, in words.
    keyword : str
        The keyword argument whose limit was exceeded (``max_sets``, ``max_pairs``, ...).
    size, limit : int or float
        The work asked for and the limit (a count, or seconds for a time limit).
    message : str or None
        The whole message, where the raiser words it itself (a subclass that says what raising
        the limit costs); None: ``"{what}: {size} is more than {keyword}={limit}"``.

    Examples
    --------
    >>> str(LimitError("12870 sets of 8 GPUs", keyword="max_sets", size=12870, limit=100))
    '12870 sets of 8 GPUs: 12870 is more than max_sets=100'
    """

    def __init__(self, what: str, *, keyword: str, size: float, limit: float, message: str | None = None):
        super().__init__(f"{what}: {size} is more than {keyword}={limit}" if message is None else message)
        self.what, self.keyword, self.size, self.limit, self.message = what, keyword, size, limit, message

    def __reduce__(self):  # keyword-only arguments: rebuilt from them (pickled by process pools)
        return (_limit_error, (type(self), self.what, self.keyword, self.size, self.limit, self.message))


def _limit_error(cls, what, keyword, size, limit, message) -> LimitError:
    return cls(what, keyword=keyword, size=size, limit=limit, message=message)


class TransformError(DgxTopoError):
    """A what-if transformation asked of nodes, edges or factors that do not fit the fabric."""


class UnknownPartError(TopologyError):
    """A part model (GPU, CPU, link technology) that is not in the catalogue of topo.specs."""
