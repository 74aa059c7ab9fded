"""What ``dgxtopo`` prints before it models anything, shipped as data so that it starts at once.

``dgxtopo --help`` names the built-in systems and the spec grammar (:mod:`topo.registry`), and
``dgxtopo systems`` summarises every built-in system (:func:`topo.summarize`): the same for
every user of a release, and costly to compute (networkx, numpy and eight fabrics built for a
table). They are written once into ``data/startup.json`` next to this module; the command line
reads that file, and ``tests/models/present/test_startup.py`` recomputes it and checks that it
matches. After a change to the registry, a builder or the systems table, rewrite it from the
repository root with::

    python -m models.present.startup
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["STARTUP_DATA", "startup_data", "read_startup_data", "main"]

#: The shipped file (package data).
STARTUP_DATA = Path(__file__).parent / "data" / "startup.json"


def startup_data() -> dict:
    """The file's content, computed from the registry and the built-in systems.

    Returns
    -------
    dict
        ``spec_grammar`` (:data:`topo.registry.SPEC_GRAMMAR`), ``systems`` and ``variants``
        (registry names, in order), ``systems_table`` and ``systems_json`` (what ``dgxtopo
        systems`` prints without and with ``--json``, final newline excluded), ``algorithms``
        (the names ``--algo`` takes: NCCL's algorithms, Ring first, then in NCCL's index order).
    """
    import topo
    from topo.registry import SPEC_GRAMMAR

    from ..engine.nccl.algorithms.catalog import ALGORITHMS
    from ..engine.nccl.algorithms.ring import RING

    from .json_shapes import systems_json
    from .text import systems_table

    summaries = [topo.summarize(topo.build(name)) for name in topo.SYSTEMS]
    return {"spec_grammar": SPEC_GRAMMAR, "systems": list(topo.SYSTEMS), "variants": list(topo.VARIANTS),
            "systems_table": systems_table(summaries),
            "systems_json": json.dumps(systems_json(summaries), indent=2),
            "algorithms": [a.name for a in sorted(ALGORITHMS, key=lambda a: (a is not RING, a.index))]}


def read_startup_data() -> dict:
    """The shipped file's content (:func:`startup_data` when it was written)."""
    return json.loads(STARTUP_DATA.read_text(encoding="utf-8"))


def main() -> None:
    """Rewrite the shipped file from :func:`startup_data`."""
    from .output import write_text_atomic

    write_text_atomic(STARTUP_DATA, json.dumps(startup_data(), indent=1) + "\n")
    print(f"wrote {STARTUP_DATA}")


if __name__ == "__main__":  # python -m models.present.startup
    main()
