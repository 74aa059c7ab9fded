"""Makes an example runnable as ``python examples/NAME.py`` from a checkout where dgx-topo is
not installed (``pip install -e .`` is then not needed, nor ``PYTHONPATH=.``).

Each example imports this module first: Python puts the script's directory (``examples/``) on
``sys.path``, so it is found there; it adds the repository root behind it only when ``topo``
cannot be imported, so an installed dgx-topo is the one that runs when there is one.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("topo") is None:
    sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
