"""The exceptions dgx-topo raises for bad input.

Every error a user can cause derives from :class:`DgxTopoError`, so a caller (and the CLI,
which prints one line and exits 2) can catch them all without catching programming errors.
Messages say what was expected and what was received.
"""

from __future__ import annotations

__all__ = ["DgxTopoError", "TopologyError", "UnknownSystemError"]


class DgxTopoError(ValueError):
    """Base class of every input error raised by dgx-topo."""


class TopologyError(DgxTopoError):
    """A fabric graph breaks the schema (see :data:`topo.schema.ATTRIBUTES`)."""


class UnknownSystemError(DgxTopoError):
    """A system name that is not in :data:`topo.SYSTEMS`."""
