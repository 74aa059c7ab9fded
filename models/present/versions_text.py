"""Words of the NCCL releases modelled: the profiles each release maps to
(:func:`models.engine.nccl.profiles.versions_table`) and the behaviour table
(:func:`models.engine.nccl.releases.behaviour_table`), as text.

Examples
--------
>>> print(format_versions_table().splitlines()[0].split())
['releases', 'profile', 'constants', 'behaviour']
>>> versions_rows()[0]
('2.0.0-2.3.6', '2.3.5', 'v2.3.5-5', 'rings from NVLink counts, no trees, no LL128, no GPU relay, no PXN, LL/Simple by size threshold')
>>> format_behaviour_table().splitlines()[1].split()[:3]
['profile', 'tag', 'rings']
"""

from __future__ import annotations

from types import MappingProxyType

from ..engine.nccl.profiles import ANY_PATCH, versions_table
from ..engine.nccl.releases import ReleaseBehaviour, behaviour_table

__all__ = ["format_versions_table", "format_behaviour_table", "versions_rows", "release_text", "behaviour_text"]


def release_text(release: tuple) -> str:
    """A release ``(major, minor, patch)`` as NCCL numbers it, ``x`` for :data:`ANY_PATCH
    <models.engine.nccl.profiles.ANY_PATCH>` (every patch release).

    >>> release_text((2, 12, 0)), release_text((2, 13, ANY_PATCH))
    ('2.12.0', '2.13.x')
    """
    major, minor, patch = release
    return f"{major}.{minor}.{'x' if patch == ANY_PATCH else patch}"


def behaviour_text(behaviour: ReleaseBehaviour) -> str:
    """The behaviours that set a release apart, in words: the labels of its ring builder, tree
    rule, LL128 rule, NVB relay, PXN and algorithm selection."""
    b = behaviour
    return ", ".join(cell.label for cell in (b.ring_builder, b.tree, b.ll128, b.nvb, b.pxn, b.selection))


def versions_rows() -> tuple:
    """:func:`models.engine.nccl.profiles.versions_table` in words: ``(releases, profile, NCCL tag of the constants, behaviour)`` per profile,
    oldest first."""
    return tuple((f"{release_text(first)}-{release_text(last)}", version, tag, behaviour_text(behaviour))
                 for (first, last), version, tag, behaviour in versions_table())


def format_versions_table() -> str:
    """:func:`versions_rows` as aligned text (for ``--help`` and docs/nccl-versions.md)."""
    rows = (("releases", "profile", "constants", "behaviour"),) + versions_rows()
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3]
                     for row in rows)


#: Column headers shortened to keep the behaviour table narrow.
_SHORT = MappingProxyType({"ring_builder": "rings", "selection": "choice", "ring_latency": "ring_lat",
                          "inter_latency": "inter_lat", "nvls_mnnvl": "nvls_mnnvl", "nvls_latency": "nvls_lat"})
_SPLIT = 9   # the first table: profile, tag and the ring, tree, selection and latency columns
_SPLIT_2 = 20   # the second: the caps, LL128, NVB, PXN, MNNVL and NVLS columns; the third: the rest


def format_behaviour_table() -> str:
    """:func:`models.engine.nccl.releases.behaviour_table` as the three reStructuredText tables
    of that module's docstring (profile and tag, then the first seven behaviours; profile, then
    the next eleven; profile, then the rest: PAT steps, CTA policy, symmetric kernels, copy
    engines, where the tuning model lives)."""
    rows = behaviour_table()
    rows = (tuple(_SHORT.get(name, name) for name in rows[0]),) + rows[1:]

    def table(columns):
        part = [tuple(row[i] for i in columns) for row in rows]
        widths = [max(len(row[i]) for row in part) for i in range(len(columns))]
        rule = " ".join("=" * w for w in widths)

        def line(row):
            return " ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()

        return "\n".join([rule, line(part[0]), rule, *map(line, part[1:]), rule])

    return "\n\n".join((table(range(_SPLIT)), table((0, *range(_SPLIT, _SPLIT_2))),
                        table((0, *range(_SPLIT_2, len(rows[0]))))))
