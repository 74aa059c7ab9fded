# PYTHON_ARGCOMPLETE_OK (shell completion: the completion extra, see models.present.cli.core)
"""The ``dgxtopo`` command line: thin, parse -> size the work -> call the library -> print.

Subcommands (``dgxtopo COMMAND --help`` for each)
-------------------------------------------------
``systems``     the built-in systems with their GPUs, links and bisection bandwidth.
``topo``        a system's connection matrix in the layout of ``nvidia-smi topo -m``.
``p2p``         predicted GPU-to-GPU bandwidth and latency as p2pBandwidthLatencyTest prints them.
``collective``  a predicted nccl-tests sweep, and what NCCL would run (``--explain``: why).
``pairs``       busbw of every 2-GPU communicator.
``subsets``     every k-GPU set ranked by busbw.
``compare``     the same collective on the same GPU count of several systems.
``report``      one self-contained HTML file comparing systems, with figures.
``calibrate``   fit the measurement model to nccl-tests outputs; print the fitted constants.
``check``       measured vs predicted per size (time, busbw, error) for one nccl-tests output.
``import``      read ``nvidia-smi topo -m`` text or NCCL's topology XML; write the fabric as JSON.
``export``      write a system (or a topology file, after what-ifs) as JSON or GraphML.
``bound``       the best busbw any schedule could reach on a GPU set, beside NCCL's, and the cut.
``whatif``      every single (or pair of) failure of a kind of component, ranked by the loss.
``plan``        a training step of a workload on a fabric: layout, placement, where time goes.
``gpus``        GPU generations ranked for a workload, with the resource that binds.
``simulate``    a training step (or a task graph) as a timeline: overlap, contention, a trace.
``schedule``    ``schedule check FILE``: an MSCCL XML schedule read and checked as its runtime would.
``tuner``       the model's choices per size band as the config of NCCL's example tuner plugin.
``dispatch``    one MoE token dispatch, NCCL's flat all-to-all against hierarchical (NVLink, then RDMA).
``grouped``     gather or scatter swept as nccl-tests prints them: NCCL's grouped sends and receives.
``alltoallv``   an all-to-allv of a send-count matrix file (``--matrix FILE``): NCCL's per-peer schedule.

Every command that takes a system names it ``--system SPEC`` (``compare`` and ``report`` take
several: ``--system dgx2 2xdgx1v``): the one form that reads the same next to each command's own
positionals (a collective, a workload, a file). Each also takes ``--topo-file FILE`` (a fabric
written by import or export) instead, and ``--nodes N [--network fat_tree|rail|rail_only]`` to
join N copies of it. The modelling commands take what-ifs, ``--fail SPEC`` and ``--degrade SPEC``
(:mod:`models.studies.whatif`).

Conventions: every command that produces a result prints it as JSON with ``--json`` (the
commands that write a file: what they wrote, with its summary); every ``--out`` says what it
wrote unless ``--json``; ``--top`` cuts the JSON like the table; ``COMMAND --help`` ends with the
grammars that command's options take, and only those. Bad input (an unknown system, a malformed
option, work beyond a limit) prints one line on stderr that points to the command's help and
exits 2; a limit is raised by the library as :class:`topo.LimitError` naming its keyword, which
the command line maps to its option. Ctrl-C prints one line and exits 130, leaving no partial file.
Work that takes more than about 2 s shows a progress bar on stderr when stderr is a terminal
(never with ``--json``). The JSON forms are documented in docs/json.md and are
stable. Tables live in :mod:`models.present.text`, JSON shapes in :mod:`models.present.json_shapes`,
the ``--explain`` working in :mod:`models.present.explain`.

Layout: one module per command, or per family of two commands that are one topic
(``systems``: systems and topo; ``sets``: pairs and subsets; ``measured``: calibrate and check;
``files``: import and export; ``plan``: plan and gpus), each defining its :class:`Command` (its
arguments and its action); :mod:`.options` holds the limits, grammars and options several commands
share, :mod:`.inputs` the fabric and files a command line names, :mod:`.outputs` JSON, progress and
pages; :mod:`.core` assembles the parser and runs :func:`main`. Adding a command: a module
defining its :class:`Command`, and one line in :data:`COMMANDS` (:mod:`.core`).
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    "main": "models.present.cli.core",
    "build_parser": "models.present.cli.core",
    "COMMANDS": "models.present.cli.core",
    "Command": "models.present.cli.options",
    "parse_size": "models.present.cli.options",
    "MAX_GPUS": "models.present.cli.options",
    "MAX_HOST_GPUS": "models.present.cli.options",
    "MAX_PAIRS": "models.present.cli.options",
    "MAX_SETS": "models.present.cli.options",
    "MAX_SEARCHES": "models.present.cli.options",
    "MAX_PLAN_GPUS": "models.present.cli.options",
    "MAX_BOUND_GPUS": "models.present.cli.options",
    "MAX_REPORT_GPUS": "models.present.cli.options",
    "ALGORITHMS": "models.present.cli.options",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .core import COMMANDS, build_parser, main
    from .options import (ALGORITHMS, MAX_BOUND_GPUS, MAX_GPUS, MAX_HOST_GPUS, MAX_PAIRS, MAX_PLAN_GPUS,
                          MAX_REPORT_GPUS, MAX_SEARCHES, MAX_SETS, Command, parse_size)

__getattr__, __dir__ = lazy_face(__name__, _FACE)
