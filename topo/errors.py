"""The exceptions dgx-topo raises for bad input.

Every error a user can cause derives from :class:`DgxTopoError`, so a caller (and the CLI,
which prints one line and exits 2) can catch them all without catching programming errors.
Messages say what was expected and what was received.
"""

from __future__ import annotations

__all__ = [
    "DgxTopoError", "TopologyError", "SystemSpecError", "UnknownSystemError", "SizeError",
    "CountError", "TransformError", "UnknownPartError",
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


class TransformError(DgxTopoError):
    """A what-if transformation asked of nodes, edges or factors that do not fit the fabric."""


class UnknownPartError(TopologyError):
    """A part model (GPU, CPU, link technology) that is not in the catalogue of topo.specs."""
