"""dgx-topo models: what a fabric delivers, and the ``dgxtopo`` command line.

The cost layer imports :mod:`topo`, never the reverse, and does not import plotly. Its modules,
in the order data flows:

- :mod:`models.engine.routes` (how a copy travels), :mod:`models.predict.p2p` (the P2P model),
  :mod:`models.predict.maxflow`;
- :mod:`models.engine.nccl` (NCCL's view of the graph and its choices, per version: ``profiles``,
  ``system``, ``tuning``, ``search``, ``trees``, ``legacy_rings``, ``channels``),
  :mod:`models.engine.nccltests` (nccl-tests' size and bandwidth conventions);
- :mod:`models.predict.collectives` (``estimate``, ``pairwise``, ``subsets``), :mod:`models.predict.network`
  (what the network between hosts gives NCCL's channels), :mod:`models.predict.measure`
  (what the machine measures), :mod:`models.studies.benchmarks` (reading real outputs),
  :mod:`models.studies.calibration` (fit and check against them);
- :mod:`models.studies.whatif` (failures and sweeps), :mod:`models.studies.bounds` (optimal schedules),
  :mod:`models.studies.workload`, :mod:`models.studies.compute`, :mod:`models.studies.planner` (training steps);
- :mod:`models.predict.simulate` (many tasks at once as a timeline: :mod:`models.predict.decompose`,
  :mod:`models.predict.flows`), :mod:`models.studies.stepgraph` (a planner layout as a task graph);
- :mod:`models.schedules` (collective schedules as data: MSCCL XML read by
  :mod:`models.schedules.msccl`, checked by :mod:`models.schedules.check`);
- presentation, the only place with words: :mod:`models.present.format` (numbers as people read
  them), :mod:`models.present.text` (tables; :mod:`models.present.plan_text`,
  :mod:`models.present.sweep_text`, :mod:`models.present.versions_text` by topic),
  :mod:`models.present.json_shapes` (``--json``),
  :mod:`models.present.explain` (``--explain``), :mod:`models.present.page` (one HTML page),
  :mod:`models.present.output`, :mod:`models.present.plot` and the other ``*_plot`` modules,
  :mod:`models.present.report`, :mod:`models.present.cli`. Results are numbers and offer
  ``to_records()`` (:mod:`models.engine.results`).

Each wing's own face (``models.engine``, ``models.predict``, ``models.studies``,
``models.present``) lists what a user calls from it, imported on first use as here.

``models.engine.nccltests`` stays a module: its ``busbw()`` function is not re-exported under the same
name.
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face as _lazy_face
from topo.version import __version__

# What a user calls, and the module that has it. The face imports a module only when one of its
# names is first asked for (topo.faces), so that ``import models`` (and the command line's
# start-up) costs nothing beyond topo; every other name is imported from its module.
_FACE = MappingProxyType({
    "__version__": "topo.version",
    "prepare": "models.engine.fabric",
    "PreparedFabric": "models.engine.fabric",
    "estimate": "models.predict.collectives",
    "pairwise": "models.predict.collectives",
    "subsets": "models.predict.collectives",
    "CollectiveEstimate": "models.predict.collectives",
    "p2p_matrix": "models.predict.p2p",
    "p2p_latency_matrix": "models.predict.p2p",
    "p2p_path": "models.predict.p2p",
    "p2p_report": "models.predict.p2p",
    "maxflow_matrix": "models.predict.maxflow",
    "measured": "models.predict.measure",
    "nccl_profile": "models.engine.nccl.profiles",
    "NcclSystem": "models.engine.nccl.system",
    "search_channels": "models.engine.nccl.search",
    "tune": "models.engine.nccl.tuning",
    "bound": "models.studies.bounds",
    "subset_bounds": "models.studies.bounds",
    "apply_failures": "models.studies.whatif",
    "sweep": "models.studies.sweep",
    "workload": "models.studies.workload",
    "plan": "models.studies.planner.layouts",
    "search": "models.studies.planner.layouts",
    "gpus_ranking": "models.studies.planner.ranking",
    "calibrate": "models.studies.calibration",
    "check": "models.studies.calibration",
    "read_benchmark": "models.studies.benchmarks",
    "simulate": "models.predict.simulate",
    "simulate_plan": "models.studies.stepgraph",
    "task_graph": "models.predict.taskgraph",
})

__all__: list[str] = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .engine.fabric import PreparedFabric, prepare
    from .engine.nccl.profiles import nccl_profile
    from .engine.nccl.search import search_channels
    from .engine.nccl.system import NcclSystem
    from .engine.nccl.tuning import tune
    from .predict.collectives import CollectiveEstimate, estimate, pairwise, subsets
    from .predict.maxflow import maxflow_matrix
    from .predict.measure import measured
    from .predict.p2p import p2p_latency_matrix, p2p_matrix, p2p_path, p2p_report
    from .predict.simulate import simulate
    from .predict.taskgraph import task_graph
    from .studies.benchmarks import read_benchmark
    from .studies.bounds import bound, subset_bounds
    from .studies.calibration import calibrate, check
    from .studies.planner.layouts import plan, search
    from .studies.planner.ranking import gpus_ranking
    from .studies.stepgraph import simulate_plan
    from .studies.sweep import sweep
    from .studies.whatif import apply_failures
    from .studies.workload import workload

__getattr__, __dir__ = _lazy_face(__name__, _FACE)
