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


_FACES = ("models", "models.engine", "models.engine.nccl", "models.predict", "models.studies",
          "models.present", "models.present.report")


def test_every_face_is_small_and_every_name_it_lists_resolves():
    """A face lists what a user calls (about 30 names); each resolves to what its module defines."""
    import importlib

    for name in _FACES:
        face = importlib.import_module(name)
        listed = getattr(face, "__all__", [])
        assert len(listed) <= 32, (name, len(listed))
        assert all(getattr(face, n) is not None for n in listed), name


def test_a_face_name_that_is_also_a_submodule_stays_the_face_name():
    """Importing a submodule binds it to its package's attribute of that name: a face name that is
    also a submodule's would then read as the module. The wing faces list no such name; topo
    (``cluster``) and models.engine.nccl (``legacy_rings``) keep theirs with topo.faces.Face,
    checked after importing the submodule (which, without Face, leaves the module there)."""
    import importlib
    import pkgutil

    clashes = {}
    for name in ("topo", "models", "models.engine", "models.engine.nccl", "models.predict",
                 "models.studies", "models.present", "models.present.report"):
        face = importlib.import_module(name)
        submodules = {m.name for m in pkgutil.iter_modules(face.__path__)}
        clashes[name] = sorted(set(face.__all__) & submodules)
    assert clashes == {"topo": ["cluster"], "models": [], "models.engine": [],
                       "models.engine.nccl": ["legacy_rings"], "models.predict": [],
                       "models.studies": [], "models.present": [], "models.present.report": []}
    import types

    for package, names in clashes.items():
        for name in names:
            importlib.import_module(f"{package}.{name}")  # binds the module, unless the face keeps its name
            assert not isinstance(getattr(importlib.import_module(package), name), types.ModuleType), name
    assert importlib.import_module("models.engine.nccl.legacy_rings").LegacyRings


def test_a_name_no_face_lists_is_an_attribute_error_naming_it():
    import importlib

    import pytest

    for name in _FACES:
        with pytest.raises(AttributeError, match="no_such_name"):
            getattr(importlib.import_module(name), "no_such_name")


_LAZY = """
import sys
import models.engine.nccl.tuning
siblings = [m for m in ('models.engine.nccl.legacy_rings', 'models.predict.collectives',
                        'models.studies.planner') if m in sys.modules]
assert not siblings, f'importing one module of models.engine.nccl imported {siblings}'
import models, models.engine, models.predict, models.studies, models.present
assert 'models.predict.collectives' not in sys.modules, 'import models imported its modules'
assert 'plotly' not in sys.modules, 'a face imported plotly'
import models.predict as predict
predict.p2p_matrix
assert 'models.predict.p2p' in sys.modules and 'models.predict.collectives' not in sys.modules
models.estimate
assert 'models.predict.collectives' in sys.modules
"""


def test_faces_import_a_module_only_when_one_of_its_names_is_asked_for():
    result = subprocess.run([sys.executable, "-c", _LAZY], capture_output=True, text=True,
                            cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr


_CORE_COMMANDS = """
import contextlib, io, runpy, sys

def imported(before, *prefixes):
    return sorted(m for m in set(sys.modules) - before if any(m == p or m.startswith(p + '.') for p in prefixes))

before = set(sys.modules)
sys.argv = ['dgxtopo', '--version']
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module('models.present.cli', run_name='__main__', alter_sys=True)
    except SystemExit as exit_:
        assert exit_.code == 0, exit_.code
assert not imported(before, 'networkx', 'numpy', 'models.predict', 'models.engine'), imported(before, 'networkx', 'numpy')

from models.present.cli.core import main

def run(argv):
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0, argv

# Never for the text of p2p and collective: plotting, scipy, the JSON shapes, the explain records,
# every study (calibration with its bounds and benchmarks, the planner), the other kinds of
# model (simulation, decomposition), and numpy.ma (np.unique on strings imports it).
OPTIONAL = ('plotly', 'scipy', 'numpy.ma', 'models.studies', 'models.schedules', 'models.present.json_shapes',
            'models.present.explain', 'models.present.plot', 'models.present.report', 'models.predict.simulate',
            'models.predict.taskgraph', 'models.predict.decompose', 'models.predict.dispatch')
# Nor for one NVLink domain's collective: the point-to-point (alltoall, sendrecv) model and the
# network's load (across hosts only).
P2P_ONLY = ('models.predict.alltoall', 'models.engine.nccl.p2p_plan', 'models.predict.network', 'models.predict.flows')
for argv in (['p2p', '--system', 'gb200nvl72'], ['p2p', '--system', 'gb200nvl72', '--mode', 'maxflow']):
    run(argv)
# P2P matrices read the graph: none of NCCL's model beyond the release's figures.
bad = imported(before, *OPTIONAL, *P2P_ONLY, 'models.engine.nccl.system', 'models.engine.nccl.search',
               'models.predict.collectives', 'models.predict.measure')
assert not bad, ('p2p', bad)
run(['collective', 'all_reduce', '--system', 'gb200nvl72', '-b', '8', '-e', '8G', '-f', '2'])
bad = imported(before, *OPTIONAL, *P2P_ONLY)
assert not bad, ('collective', bad)
assert imported(before, 'models.engine.nccl.search', 'networkx'), 'the check sees nothing'
"""


def test_the_core_commands_import_only_what_they_run():
    """Issue 40's CLI speed target (examples/nvl72_benchmark.py) as sets of modules, not times:
    ``dgxtopo --version`` imports neither networkx nor numpy nor any model; ``p2p`` in both modes
    on a GB200 NVL72 imports none of NCCL's channel search and collective model; ``p2p`` and the
    31-size ``collective all_reduce`` sweep print their text without plotly, scipy, numpy.ma, the
    JSON shapes, the explain records, any study, the simulator, or the point-to-point and
    network models (alltoall, sendrecv and what crosses hosts)."""
    result = subprocess.run([sys.executable, "-c", _CORE_COMMANDS], capture_output=True, text=True,
                            cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr
