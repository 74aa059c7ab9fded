"""What importing the packages pulls in, checked in one fresh interpreter (one subprocess
instead of one per check: each costs a second of numpy/networkx imports).

- ``import models`` (and the NCCL model's modules, the CLI with its parser built) imports
  neither plotly (only the plotting modules and the report command do) nor scipy (an optional
  extra, models.predict.p2p).
- ``topo`` (with topo.layout) never imports ``models``.
- ``topo.plot`` and ``models.present.plot`` do import plotly (so the checks above can fail).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_CODE = """
import sys
import models
bad = [m for m in ('plotly', 'scipy') if m in sys.modules]
assert not bad, f'import models imported {bad}'
import models.present.cli, models.engine.nccl, models.engine.nccl.tuning, models.engine.nccl.trees, models.engine.nccltests
import topo, topo.layout
models.present.cli.build_parser()
assert 'plotly' not in sys.modules, sorted(m for m in sys.modules if 'plotly' in m)[:3]
for name in [m for m in sys.modules if m.split('.')[0] in ('models', 'topo')]:
    sys.modules.pop(name)
import topo, topo.layout
assert not any(m.split('.')[0] == 'models' for m in sys.modules), 'topo imported models'
import topo.plot, models.present.plot
assert 'plotly' in sys.modules, 'the plotting modules did not import plotly'
"""


def test_imports_pull_in_only_what_they_need():
    result = subprocess.run([sys.executable, "-c", _CODE], capture_output=True, text=True,
                            cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr
