"""The what-if sweep: every failure of one kind, ranked by the busbw it costs.

:func:`sweep` evaluates every single failure of one kind of component, or every pair with
``pairs=True`` (the failure grammar and :func:`models.studies.whatif.components` say which), and
ranks them by the loss of busbw they cause (a fraction of the baseline's busbw), with the time
and the worst P2P bandwidth between the job's GPUs.

**One estimate per symmetry class of the whole fabric.** Two failures whose failed fabrics are
isomorphic (same parts, links and job GPUs up to a relabelling of nodes) give the same answer,
and are computed once (:class:`models.engine.symmetry.FabricClasses`: colour refinement, confirmed
by VF2): the 102 NVLink bundles of a DGX-2 fall into 5 classes, its 12 NVSwitches into 2. On a
cluster the hosts come first: failures in hosts whose swap is an automorphism of the cluster
(:func:`models.engine.symmetry.host_classes`, the job's GPUs marked) are one case (failing GPU 3
of host 0 and of host 5 of a uniform cluster), and the failures of one host are classified on the
host alone, with what lies outside it (network ports, a rack's switch chips) kept in place up to
twins. ``symmetry=False`` computes every case (the tests check both agree).

**Sized by cost, refused at once.** Classifying a case costs about a millisecond per host it
touches. An estimate costs what its channel searches cost: a failed host is searched anew once
per shape of the failure (the same failure in any copy of a host shares it: the search is
keyed by the host's local names, :mod:`models.engine.nccl.search`), everything else is in the
sweep's memo. The baseline's time is no guide to a failed host's search (a healthy host's ends at
its first speed, a failed one tries speed after speed), so the sweep times a few of its own
failures, one per failed host shape and spread over them (their searches serve the sweep), and
predicts the rest: builds, new searches and estimates whose searches are shared. A sweep with
more classified cases than ``max_cases`` or whose work would take more than ``max_seconds`` in
all (in this process, whatever executor runs it) is refused with :class:`SweepSizeError`, whose
``keyword`` names the argument to raise, before the failed fabrics are classified on a cluster
(on one host, where the classes are known only then, after) and before any is estimated.

The estimates run on any :class:`concurrent.futures.Executor`. By default (``executor=None``)
a sweep whose distinct estimates would take at most :data:`IN_PROCESS_SECONDS` runs in this
process, where a pool's start-up would cost more than it saves; a larger one on a local
:class:`~concurrent.futures.ProcessPoolExecutor` with one worker per idle core (with fewer than
two, in-process), each given the failures of one failed host shape at a time (they share its
search). ``executor="dask://HOST:PORT"`` runs on a Dask distributed scheduler (the optional
extra ``dgx-topo[dask]``), reached within ``dask_timeout`` seconds or refused with
:class:`ExecutorConnectionError`; ``executor=client.get_executor()`` runs on a client the caller
owns. Every case is a pure function of its graph, so the results are identical whatever runs
them.

Examples
--------
>>> import topo
>>> s = sweep(topo.dgx2(), "all_reduce", 2**30, fail_each="nvswitch")
>>> len(s.rows), s.evaluations, round(s.rows[0].loss, 3), s.rows[0].label
(12, 2, 0.166, 'nvswitch0')
>>> c = sweep(topo.build("4xdgx1v"), "all_reduce", 2**30, fail_each="nic")
>>> len(c.rows), c.evaluations   # 16 NICs: the first host's 4, and hosts 1-3 are copies
(16, 8)
"""

from __future__ import annotations

import enum
import ipaddress
import itertools
import math
import numbers
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

import networkx as nx

import topo
from topo.errors import LimitError, TopologyError
from topo.select import GpuIds
from topo.units import Sizes

from ..engine.fabric import PreparedFabric
from ..engine.memo import BoundedMemo
from ..engine.nccl.algorithms.base import Algorithm
from ..engine.nccl.algorithms.catalog import algorithm_set
from ..engine.nccl.profiles import NcclProfile
from ..engine.nccl.search import ChannelSearchError
from ..engine.nccltests import collective as _collective
from ..engine.routes import RouteError
from ..engine.symmetry import FABRIC_NODE_KEYS, FabricClasses, host_classes, host_places, interchangeable_nodes
from ..predict.collectives import estimate
from ..predict.p2p import p2p_matrix
from .whatif import WhatIfError, brief_repr, components, failed_fabric

__all__ = ["SweepSizeError", "ExecutorSpecError", "ExecutorConnectionError", "SweepStatus", "SweepRow", "Sweep",
           "sweep",
           "MAX_CASES", "MAX_SECONDS", "IN_PROCESS_SECONDS", "DASK_TIMEOUT"]

#: Default limit of the failure cases one :func:`sweep` classifies (``max_cases``): each builds
#: or labels a failed fabric (about 15 ms for a DGX-2). The cases of identical hosts of a cluster
#: are not classified one by one; pairs grow as the square (the 102 NVLink bundles of a DGX-2
#: give 5,151 pairs).
MAX_CASES = 2000
#: Default limit of a sweep's predicted time (``max_seconds``), timed on its own first failures
#: (:func:`sweep`). [s]
MAX_SECONDS = 30.0
#: With ``executor=None``, a sweep whose estimates would take at most this long in this process
#: (predicted as for ``max_seconds``) runs in-process: a local process pool's start-up (about
#: 0.2 s) would cost more than it saves. So does one with fewer than two idle cores. [s]
IN_PROCESS_SECONDS = 1.0
#: Default time to reach a Dask scheduler (``dask_timeout``). [s]
DASK_TIMEOUT = 5.0


class SweepSizeError(LimitError, WhatIfError):
    """A sweep beyond its limits (a :class:`topo.errors.LimitError`: ``keyword`` names the
    argument that raises it, ``max_cases`` or ``max_seconds``, which the CLI maps to its option;
    ``size`` and ``limit`` are failure cases or seconds)."""


class ExecutorSpecError(WhatIfError):
    """An ``executor=`` that is neither an Executor nor a known text form."""


class ExecutorConnectionError(WhatIfError):
    """A Dask scheduler that cannot be reached within ``dask_timeout``."""


# ------------------------------------------------------------------------------ results
class SweepStatus(enum.Enum):
    """What a failure case leaves of the collective (:attr:`SweepRow.status`)."""

    #: The collective runs (on ``nranks`` GPUs).
    RUNS = "runs"
    #: The failed fabric is no fabric (``cause``: the schema's error).
    DISCONNECTS_FABRIC = "disconnects_fabric"
    #: The failure takes out every GPU of the job.
    NO_GPU_LEFT = "no_gpu_left"
    #: The job's GPUs are left without a route or channel between them (``cause``: the error).
    CANNOT_COMMUNICATE = "cannot_communicate"


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One failure case of a :class:`Sweep`.

    Attributes
    ----------
    failed : tuple of Failure
        The failed components (one, or two with ``pairs=True``).
    busbw : float
        Predicted busbw with them failed; 0 if the fabric or the job is disconnected. [B/s]
    time : float
        Predicted time; ``math.inf`` if the collective cannot run. [s]
    loss : float
        ``1 - busbw / baseline busbw``: 0 for no effect, 1 for no bandwidth left.
    p2p_pair : tuple or None
        The ordered GPU pair (source, destination nodes) whose P2P bandwidth fell most, as a
        fraction of its baseline (None when P2P is not computed, or for no pair left).
    p2p : float or None
        That pair's P2P bandwidth with the failure (0 if disconnected). [B/s]
    p2p_loss : float or None
        ``1 - p2p / baseline`` of that pair: the largest P2P loss of any pair of the job.
    nranks : int
        GPUs the job runs on (fewer than the baseline's after a GPU failure; 0 when the fabric is
        disconnected or no GPU of the job is left).
    status : SweepStatus
        Whether the collective runs, and why not.
    cause : str
        The message of the error that stops it (:attr:`SweepStatus.DISCONNECTS_FABRIC`,
        :attr:`SweepStatus.CANNOT_COMMUNICATE`; '' otherwise).
    gpus_lost : int
        GPUs of the job the failure takes out (the job runs on the others).
    representative : tuple of Failure
        The case whose estimate this row reuses (itself unless a symmetry mapped it).

    :func:`models.present.sweep_text.sweep_row_note` words the status, the cause and the GPUs
    left.
    """

    failed: tuple
    busbw: float
    time: float
    loss: float
    p2p_pair: tuple | None
    p2p: float | None
    p2p_loss: float | None
    nranks: int
    status: SweepStatus
    cause: str
    gpus_lost: int
    representative: tuple

    @property
    def label(self) -> str:
        """The failed components as comma-separated specs (:func:`parse_failures` reads it)."""
        return ",".join(map(str, self.failed))


@dataclass(frozen=True, slots=True)
class Sweep:
    """Every single (or pair) failure of a kind of component, ranked by the busbw it costs.

    Words and JSON: :mod:`models.present.sweep_text`.

    Attributes
    ----------
    fabric : str
        The fabric's name.
    collective : str
    nbytes : int
        [bytes]
    gpus : tuple of int
        The job's GPU ids in the fabric.
    fail_each : str
    pairs : bool
    baseline_busbw : float
        [B/s]
    baseline_time : float
        [s]
    p2p : bool
        Whether rows carry the P2P effect.
    rows : tuple of SweepRow
        Ranked: largest loss first (then largest P2P loss, then fabric order).
    evaluations : int
        Distinct estimates run (symmetry classes), the baseline excluded.
    """

    fabric: str
    collective: str
    nbytes: int
    gpus: tuple
    fail_each: str
    pairs: bool
    baseline_busbw: float
    baseline_time: float
    p2p: bool
    rows: tuple
    evaluations: int

    def to_records(self) -> list:
        """Tidy rows, one per failure case in rank order (:mod:`models.engine.results` names the
        columns): ``rank``, ``failed`` (the specs), ``busbw_Bps`` [B/s], ``time_s`` [s], ``loss``
        and ``p2p_loss`` (fractions of the baseline), ``nranks``, ``status``
        (:class:`SweepStatus`'s value), ``cause`` and ``gpus_lost``."""
        return [{"rank": rank, "failed": r.label, "busbw_Bps": r.busbw, "time_s": r.time, "loss": r.loss,
                 "nranks": r.nranks, "p2p_loss": r.p2p_loss, "status": r.status.value, "cause": r.cause,
                 "gpus_lost": r.gpus_lost}
                for rank, r in enumerate(self.rows, 1)]


# ------------------------------------------------------------------------------ evaluation
@dataclass(frozen=True, slots=True)
class _Outcome:
    busbw: float
    time: float
    p2p: dict | None  # (source node, destination node) -> P2P bandwidth [B/s]
    nranks: int
    cause: str = ""  # the error that keeps the job's GPUs from communicating ('' when they can)


def _evaluate(H, collective, nbytes, job_nodes, p2p, profile, searches=None, algorithms=None) -> _Outcome:
    """One estimate on a failed fabric (module level: executors pickle it). ``searches``: a memo
    of channel searches shared by the fabrics of one sweep in this process (hosts a failure
    leaves alone are searched once)."""
    fabric = PreparedFabric(H, nccl=profile, searches=searches, freeze=False)  # the caller's G, or ours
    ids = sorted(fabric.ids[n] for n in job_nodes)
    try:
        e = estimate(fabric, collective, nbytes, ids, algorithms=algorithms)
    except (RouteError, ChannelSearchError) as err:
        return _Outcome(0.0, math.inf, None, len(ids), str(err))
    pairs = None
    if p2p and len(ids) > 1:
        matrix = p2p_matrix(fabric, ids)
        nodes = [n for n in fabric.ids if n in set(job_nodes)]
        pairs = {(a, b): float(matrix[i, j]) for i, a in enumerate(nodes) for j, b in enumerate(nodes)
                 if i != j}
    return _Outcome(float(e.busbw), float(e.time), pairs, len(ids))


def _evaluate_batch(tasks, collective, nbytes, p2p, profile, algorithms=None) -> list:
    """The estimates of failed fabrics that search the same failed host shape (module level:
    executors pickle it), sharing one memo of channel searches: the hosts the failures leave
    alone and the failed host are searched once per batch, not once per fabric."""
    searches = BoundedMemo(256)
    return [_evaluate(H, collective, nbytes, remaining, p2p, profile, searches, algorithms)
            for H, remaining in tasks]


@dataclass(frozen=True, slots=True)
class _Cost:
    """What a sweep's parts take in this process, timed on the sweep's own failures (the
    baseline's time alone is no guide: a healthy host's search ends at its first speed, a failed
    host's tries speed after speed; on 16xDGX H100 the baseline's 0.071 s per estimate predicted
    5.7 s for an NVLink sweep that took 54 s in this process). [s]"""

    build: float  # building a failed fabric (each distinct case is built to be classified)
    search: float  # an estimate whose failed host shape is searched anew
    cached: float  # an estimate whose searches are all in the memo (the same shape again)
    probed: int  # failed host shapes the probe already searched
    timed: int  # failures the search time was timed on

    def predict(self, estimates: int, shapes: int, classify: int) -> float:
        """The time left for ``classify`` cases to build and ``estimates`` estimates of ``shapes``
        failed host shapes."""
        new = max(shapes - self.probed, 0)
        return classify * self.build + new * self.search + max(estimates - new, 0) * self.cached

    def words(self, estimates: int, shapes: int, classify: int) -> str:
        new = max(shapes - self.probed, 0)
        parts = [f"{classify:,} failed fabrics to build and classify at about {self.build:.2g} s each"] \
            if classify else []
        if estimates:
            parts.append(f"{new:,} failed host shapes to search at about {self.search:.2g} s each (timed on "
                         f"{self.timed} of them)")
        if estimates > new:
            parts.append(f"{estimates - new:,} estimates sharing those searches at about {self.cached:.2g} s")
        return ", ".join(parts)


def _probe(G, collective, size, job, p2p, profile, picks, cases, searches, algorithms, baseline) -> _Cost:
    """Time a few of a cluster's failures before they are classified (``picks``: one case per
    failed host shape, spread over them; their searches serve the shapes' later estimates): each
    build and estimate (its failed host searched anew), and the first again, built anew (every
    search in the memo). Without picks (one host, or parts of no host), only a build of the first
    case that builds (the search is timed on the first tasks, :func:`_run`)."""
    builds, searched, cached = [], [], None
    for case in picks or cases[:8]:
        started = time.perf_counter()
        try:
            H = failed_fabric(G, case)
        except TopologyError:
            continue
        builds.append(time.perf_counter() - started)
        if not picks:
            break
        remaining = [n for n in job if n in H]
        if not remaining:
            continue
        started = time.perf_counter()
        _evaluate(H, collective, size, remaining, p2p, profile, searches, algorithms)
        searched.append(time.perf_counter() - started)
        if cached is None:  # the same failure built anew: only its searches are in the memo
            started = time.perf_counter()
            _evaluate(failed_fabric(G, case), collective, size, remaining, p2p, profile, searches, algorithms)
            cached = time.perf_counter() - started
    build = sum(builds) / len(builds) if builds else 0.0
    if not searched:
        return _Cost(build, baseline, baseline, 0, 0)
    return _Cost(build, sum(searched) / len(searched), cached, len(searched), len(searched))


def _spread(items: list, k: int = 3) -> list:
    """Up to ``k`` of ``items``: the first, the last and evenly between."""
    if len(items) <= k:
        return list(items)
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


# ------------------------------------------------------------------------------ executors
_DASK_ADDRESS = re.compile(r"dask://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


def _executor_kind(executor, dask_timeout) -> str:
    """Check ``executor=`` before any work: ``"auto"``, ``"inline"``, ``"process"``,
    ``"dask"`` or ``"given"``."""
    if isinstance(dask_timeout, bool) or not isinstance(dask_timeout, numbers.Real) \
            or not 0 < dask_timeout <= 3600:
        raise ExecutorSpecError(f"dask_timeout must be a number of seconds in (0, 3600], received "
                                f"{brief_repr(dask_timeout)}")
    if executor is None:
        return "auto"
    if isinstance(executor, Executor):
        return "given"
    if isinstance(executor, str):
        if executor in ("inline", "process"):
            return executor
        if executor.startswith("dask://"):
            match = _DASK_ADDRESS.fullmatch(executor)
            if match is None or not 1 <= int(match["port"]) <= 65535:
                raise ExecutorSpecError(f"executor={brief_repr(executor)}: expected dask://HOST:PORT with a "
                                        f"host name or address and a port from 1 to 65535")
            if find_spec("distributed") is None:  # the optional extra dgx-topo[dask], not imported here
                raise ExecutorSpecError(f"executor={executor!r} needs Dask distributed: install the "
                                        f"optional extra, pip install 'dgx-topo[dask]'")
            return "dask"
    raise ExecutorSpecError(f"executor={brief_repr(executor)}: expected None (automatic), 'inline', "
                            f"'process', 'dask://HOST:PORT' or a concurrent.futures.Executor "
                            f"(e.g. a Dask client's get_executor())")


def _dask_client(executor, timeout):
    """A client of the scheduler ``dask://HOST:PORT``, or :class:`ExecutorConnectionError` within
    ``timeout`` seconds (an unknown host at once)."""
    import socket

    from distributed import Client  # checked by _executor_kind

    match = _DASK_ADDRESS.fullmatch(executor)
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as err:
            raise ExecutorConnectionError(f"executor={executor!r}: unknown host {host!r} ({err.strerror or err})") \
                from None
    address = f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"
    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise ExecutorConnectionError(
            f"executor={executor!r}: no Dask scheduler answered at {address} within {timeout:g} s "
            f"({type(err).__name__}); start one (dask scheduler --port {port}) or raise dask_timeout") from None


def _idle_cores() -> int:
    """The cores this process may use that no other process keeps busy (the one-minute load
    average, this process counted in it): a pool on busy cores only adds its start-up, and its
    workers do not share the searches an in-process sweep does."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform: every core
        return cores
    return max(1, min(cores, math.floor(cores - load + 1)))


def _executor(kind, executor, n_tasks, seconds, client) -> tuple:
    """``(executor, close)``: where to run ``n_tasks`` (None: in-process) predicted to take
    ``seconds`` in this process, what to shut down (``client``: the Dask client of ``dask://``,
    connected before any work)."""
    cores = _idle_cores()
    if n_tasks == 0 or kind == "inline":
        return None, None
    if kind == "auto":
        if seconds <= IN_PROCESS_SECONDS or n_tasks < 2 or cores < 2:
            return None, None
        kind = "process"
    if kind == "process":
        pool = ProcessPoolExecutor(max_workers=max(1, min(cores, n_tasks)))
        return pool, pool.shutdown
    if kind == "dask":
        return client.get_executor(), None
    return executor, None  # the caller's: the caller shuts it down


def _ticker(progress):
    if progress is None:
        return lambda done, total: None
    update = getattr(progress, "update", None)
    if callable(update):
        def tick(done, total):
            if getattr(progress, "total", total) != total:
                progress.total = total
            update(1)
        return tick
    if callable(progress):
        return progress
    raise WhatIfError(f"progress={brief_repr(progress)}: expected a callable progress(done, total) or "
                      f"a tqdm-style bar with update(n)")


# ------------------------------------------------------------------------------ cases
def _host_of(G, n):
    h = G.nodes[n].get("host")
    return h if isinstance(h, int) and h >= 0 else None


class _ClusterCases:
    """Single failures of a cluster keyed by symmetry, without building a graph per case.

    A failure in a host is moved to the first host of its class (:func:`host_classes`, the job's
    GPUs marked: the swap of two hosts of a class is an automorphism), and there keyed by the
    *twin classes* of the parts it fails: parts of one host with the same attributes, job mark
    and links to the same nodes (:func:`interchangeable_nodes`; a transposition of two twins is an
    automorphism, so every permutation within a class is), and, outside the hosts, nodes with
    the same attributes and the same links (a rack's NVSwitch chips). Equal keys are failures
    that an automorphism of the cluster maps onto each other: one estimate. A failure of one part
    of no host (a network switch, a rack's chip) is keyed by its twins there (a transposition of
    twins is an automorphism too); one of parts of several hosts has no key and is classified on
    the whole failed fabric."""

    def __init__(self, G, job):
        self.G = G
        self.job = frozenset(job)
        # The job's first host is a class of its own: NCCL's model takes the channels and the NICs
        # they use from the first node's search (models.engine.nccl.search), so a failure there is
        # not the same failure in another host (failing a NIC of host 0 or host 1 of a 2xDGX-1V
        # costs 29 % or 7 %).
        lead = _host_of(G, min(job, key=lambda n: (G.nodes[n]["host"], G.nodes[n]["index"])))
        classes = [[lead]] + [rest for hosts in host_classes(G, self.job)
                              if (rest := [h for h in hosts if h != lead])]
        self.host_class = {h: c for c, hosts in enumerate(classes) for h in hosts}
        self.first_host = [hosts[0] for hosts in classes]
        self.place = host_places(G)
        self.by_place = {(G.nodes[n]["host"], place): n for n, place in self.place.items()}
        self.outside_twins = None
        self._twins: dict = {}

    def _local_twins(self, c) -> dict:
        """Node of the first host of class ``c`` -> its twin class."""
        if c not in self._twins:
            G, host = self.G, self.first_host[c]
            nodes = [n for n in G if _host_of(G, n) == host]

            def label(n):
                return tuple(G.nodes[n].get(k) for k in FABRIC_NODE_KEYS), n in self.job
            self._twins[c] = {n: i for i, members in enumerate(interchangeable_nodes(G, nodes, label=label))
                              for n in members}
        return self._twins[c]

    def _outside(self, n) -> tuple:
        if self.outside_twins is None:
            G = self.G
            outside = [n for n in G if _host_of(G, n) is None]
            self.outside_twins = {n: i for i, members in enumerate(interchangeable_nodes(
                G, outside, label=lambda n: tuple(G.nodes[n].get(k) for k in FABRIC_NODE_KEYS)))
                for n in members}
        return ("outside", self.outside_twins[n])

    def shape(self, key) -> tuple:
        """A key without its host class: the same failure in the lead host and in a copy of it
        searches one failed host shape (the channel search is shared by the local names of a
        host's nodes, :mod:`models.engine.nccl.search`), so its estimates cost one search."""
        c, ends, count, factor = key
        if c == "outside":  # no host searched apart: a shape of its own
            return key
        if ("place", c) not in self._twins:
            places: dict = {}
            for n, i in self._local_twins(c).items():
                places.setdefault(i, []).append(self.place[n])
            self._twins["place", c] = {i: min(members) for i, members in places.items()}
        place = self._twins["place", c]
        return tuple(sorted(end if end[0] == "outside" else ("host", place[end[1]]) for end in ends)), count, factor

    def key(self, case) -> tuple | None:
        """The key of a single failure (None: classify it on the whole failed fabric)."""
        if len(case) != 1:
            return None
        failure = case[0]
        hosts = {_host_of(self.G, n) for n in failure.nodes} - {None}
        if not hosts and len(failure.nodes) == 1:  # a part of no host: by its twins (a rack's chips)
            return "outside", self._outside(failure.nodes[0]), failure.count, failure.factor
        if len(hosts) != 1:
            return None
        (h,) = hosts
        c = self.host_class[h]
        twins = self._local_twins(c)
        ends = []
        for n in failure.nodes:
            if _host_of(self.G, n) is None:
                ends.append(self._outside(n))
            else:
                ends.append(("host", twins[self.by_place[self.first_host[c], self.place[n]]]))
        return c, tuple(sorted(ends)), failure.count, failure.factor


def _classify(G, cases, keys, cluster, job, *, symmetry, tick) -> tuple:
    """Per case: a ``(SweepStatus, cause)`` (it disconnects the fabric or the job), or ``(task,
    remaining job nodes, mapping)``; and the tasks, one ``(failed fabric, remaining job nodes, case)`` per class.
    ``keys``: the cases' keys (:meth:`_ClusterCases.key`; None: classify the whole failed
    fabric). ``mapping`` takes the case's nodes to the task's (None: the same nodes, or a
    cluster case, whose P2P figures are not computed)."""
    assigned: list = []
    tasks: list = []
    full = FabricClasses() if symmetry else None
    local_of: dict = {}  # key -> class of the host's failures
    first_of: dict = {}  # class of the host's failures -> what its first case gave
    for done, (case, key) in enumerate(zip(cases, keys), 1):
        if key is None:
            assigned.append(_full_case(G, case, job, full, tasks))
        else:
            if key not in local_of:
                # The key alone (twins): VF2 over a host with its outside nodes (a tray and the 18
                # twin switch chips of an NVL72) took minutes.
                local_of[key] = key
            if local_of[key] not in first_of:
                first_of[local_of[key]] = _full_case(G, case, job, None, tasks)
            first = first_of[local_of[key]]
            if isinstance(first[0], SweepStatus):  # the class is no fabric: say how this case fails
                assigned.append(_full_case(G, case, job, None, tasks)
                                if first[0] is SweepStatus.DISCONNECTS_FABRIC else first)
            else:
                assigned.append((first[0], _remaining(case, job), None))
        tick(done, len(cases))
    return assigned, tasks


def _remaining(case, job) -> list:
    failed = {f.nodes[0] for f in case if f.is_node}
    return [n for n in job if n not in failed]


def _full_case(G, case, job, classes, tasks):
    """Apply a case and classify its failed fabric in ``classes`` (None: a task of its own)."""
    try:
        H = failed_fabric(G, case)
    except TopologyError as err:
        return SweepStatus.DISCONNECTS_FABRIC, str(err)
    remaining = [n for n in job if n in H]
    if not remaining:
        return SweepStatus.NO_GPU_LEFT, ""
    if classes is not None:
        index, mapping = classes.add(H, {n: "job" for n in remaining})
        if index == len(tasks):
            tasks.append((H, remaining, case))
        return index, remaining, mapping
    tasks.append((H, remaining, case))
    return len(tasks) - 1, remaining, None


# ------------------------------------------------------------------------------ sweep
def _loss(value, base) -> float:
    return 0.0 if not base else 1.0 - value / base


def _p2p_effect(after, before) -> tuple:
    """(pair, bandwidth, loss) of the pair of the job whose P2P bandwidth falls most."""
    if before is None:
        return None, None, None
    if after is None:  # disconnected: every pair of the job loses everything
        pair = next(iter(before), None)
        return (pair, 0.0, 1.0) if pair is not None else (None, None, None)
    worst = None
    for pair, base in before.items():  # baseline order, so ties go to the first pair
        if pair not in after:
            continue  # a failed GPU's pairs
        value = after[pair]
        loss = _loss(value, base)
        if worst is None or loss > worst[2]:
            worst = (pair, value, loss)
    if worst is None or worst[2] <= 0:  # no pair loses: no pair to name
        return None, None, 0.0
    return worst


def _check_count(name, value, *, real=False) -> None:
    kinds = numbers.Real if real else numbers.Integral
    if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0 \
            or (real and not math.isfinite(value)) or (not real and value < 1):
        raise WhatIfError(f"{name} must be a {'number' if real else 'whole number'} > 0, received "
                          f"{brief_repr(value)}")


def sweep(G: nx.DiGraph | PreparedFabric, collective: str, nbytes: Sizes, *, fail_each: str = "nvlink",
          pairs: bool = False, gpus: GpuIds = None, executor: str | Executor | None = None,
          progress: Any = None, max_cases: int = MAX_CASES,
          max_seconds: float = MAX_SECONDS, symmetry: bool = True, p2p: bool | None = None,
          profile: str | NcclProfile | None = None, dask_timeout: float = DASK_TIMEOUT,
          algorithms: Sequence[Algorithm] | None = None) -> Sweep:
    """Evaluate every failure of one kind of component and rank them by the busbw they cost.

    Parameters
    ----------
    G : networkx.DiGraph or models.engine.fabric.PreparedFabric
        A valid fabric (not modified).
    collective : str
        One of :data:`models.predict.collectives.COLLECTIVE_NAMES`.
    nbytes : int or str
        One message size (``2**30``, ``"1G"``). [bytes]
    fail_each : str
        One of :data:`models.studies.whatif.FAIL_EACH`.
    pairs : bool
        Every pair of failures instead of every single one.
    gpus : iterable of int or str, optional
        The job's GPU ids; every GPU by default.
    executor : None, str or concurrent.futures.Executor
        None: in-process when the estimates would take at most :data:`IN_PROCESS_SECONDS`,
        else a local process pool; ``"inline"``, ``"process"``, ``"dask://HOST:PORT"``; or any Executor
        (a Dask client's ``get_executor()``), which the caller keeps and shuts down.
    progress : callable or tqdm-style bar, optional
        ``progress(done, total)`` after each case classified and each estimate, or an object
        with ``update(n)`` (its ``total`` is set).
    max_cases : int
        Refuse sweeps that classify more failure cases (default :data:`MAX_CASES`).
    max_seconds : float
        Refuse sweeps whose estimates would take longer in this process (default
        :data:`MAX_SECONDS`). [s]
    symmetry : bool
        Compute isomorphic failed fabrics once (default).
    p2p : bool, optional
        Also compute the worst P2P bandwidth between the job's GPUs; by default on a single
        host (where P2P bandwidth is the NVLink/PCIe figure users compare).
    profile : str or NcclProfile, optional
        NCCL version profile (the prepared fabric's by default).
    dask_timeout : float
        Seconds to reach a ``dask://`` scheduler (default :data:`DASK_TIMEOUT`).
    algorithms : sequence of Algorithm, optional
        The algorithms every estimate chooses among (as for :func:`models.predict.collectives.estimate`;
        default NCCL's); an executor pickles them.

    Returns
    -------
    Sweep

    Raises
    ------
    WhatIfError
        For an unknown ``fail_each``, a fabric without such parts, or a bad ``progress``.
    SweepSizeError
        Beyond ``max_cases`` or ``max_seconds`` (``keyword`` names which).
    ExecutorSpecError, ExecutorConnectionError
        For an unknown ``executor``, ``dask://`` without Dask distributed installed, or a
        scheduler that does not answer.
    topo.SizeError, topo.GpuSelectionError, models.engine.nccltests.UnknownCollectiveError, topo.TopologyError
        For a bad size, GPU ids, collective or fabric.
    """
    if isinstance(G, PreparedFabric):
        profile = G.profile if profile is None else profile
        G = G.G
    topo.validate(G)
    size = topo.parse_nbytes(nbytes)
    if not isinstance(size, int):
        raise topo.SizeError(f"a sweep takes one message size, received {brief_repr(nbytes)}")
    _check_count("max_cases", max_cases)
    _check_count("max_seconds", max_seconds, real=True)
    job = topo.gpus(G) if gpus is None else topo.select_gpus(G, gpus)
    position = {n: i for i, n in enumerate(topo.gpus(G))}
    job = sorted(job, key=position.__getitem__)
    p2p = (len({G.nodes[n]["host"] for n in topo.gpus(G)}) == 1) if p2p is None else bool(p2p)
    collective = _collective(collective).name
    algorithms = algorithm_set(algorithms)
    tick = _ticker(progress)
    executor_kind = _executor_kind(executor, dask_timeout)
    if pairs not in (True, False):
        raise WhatIfError(f"pairs must be True or False, received {brief_repr(pairs)}")

    singles = components(G, fail_each, gpus)
    name = G.graph.get("name", "the fabric")
    what = f"fail_each={fail_each!r}{' with pairs=True' if pairs else ''} on {name}"
    n_cases = math.comb(len(singles), 2) if pairs else len(singles)
    if pairs and n_cases > max_cases:
        raise SweepSizeError(
            what, keyword="max_cases", size=n_cases, limit=max_cases, message=(
                f"{what} gives {n_cases:,} failure cases ({len(singles)} components), more than "
                f"max_cases={max_cases:,}: pass a larger max_cases= (each case builds and classifies a "
                f"failed fabric, about 15 ms on a DGX-2){', fewer GPUs (gpus=)' if fail_each == 'gpu' else ''} "
                f"or another fail_each="))
    cases = list(itertools.combinations(singles, 2)) if pairs else [(s,) for s in singles]
    # The cases of identical hosts of a cluster are one case (P2P figures are per host copy: then
    # every case is classified on the whole fabric).
    hosts = {G.nodes[n]["host"] for n in topo.gpus(G)}
    cluster = _ClusterCases(G, job) if symmetry and len(hosts) > 1 and not p2p else None
    keys = [cluster.key(case) for case in cases] if cluster is not None else [None] * len(cases)
    to_classify = len({k for k in keys if k is not None}) + sum(k is None for k in keys)
    if to_classify > max_cases:
        raise SweepSizeError(
            what, keyword="max_cases", size=to_classify, limit=max_cases, message=(
                f"{what} gives {to_classify:,} failure cases to classify ({len(cases):,} cases), more than "
                f"max_cases={max_cases:,}: pass a larger max_cases= (each builds or labels a failed fabric, "
                f"about 15 ms on a DGX-2){', fewer GPUs (gpus=)' if fail_each == 'gpu' else ''} or another "
                f"fail_each="))
    # A Dask scheduler is reached (or refused) before any work.
    client = _dask_client(executor, dask_timeout) if executor_kind == "dask" else None
    try:
        return _run(G, collective, size, job, p2p, profile, cases, keys, cluster, symmetry, tick, what,
                    max_seconds, fail_each, pairs, executor_kind, executor, client, position, algorithms)
    finally:
        if client is not None:
            client.close()


def _run(G, collective, size, job, p2p, profile, cases, keys, cluster, symmetry, tick, what, max_seconds,
         fail_each, pairs, executor_kind, executor, client, position, algorithms) -> Sweep:
    """The sweep's work once its arguments are checked and its cases counted."""
    searches = BoundedMemo(256)  # shared by the fabrics estimated in this process
    started = time.perf_counter()
    base = _evaluate(G, collective, size, job, p2p, profile, searches, algorithms)  # checks the profile too
    baseline = time.perf_counter() - started
    shape_of = {k: cluster.shape(k) for k in keys if k is not None} if cluster is not None else {}
    first_of: dict = {}  # one case per failed host shape of a cluster, in the cases' order
    for case, key in zip(cases, keys):
        if key is not None:
            first_of.setdefault(shape_of[key], case)
    cost = _probe(G, collective, size, job, p2p, profile, _spread(list(first_of.values())), cases, searches,
                  algorithms, baseline)

    def refuse_beyond(estimates, shapes, classify, what_counted):
        predicted = time.perf_counter() - started + cost.predict(estimates, shapes, classify)
        if predicted > max_seconds:
            counted = f"needs {what_counted}{estimates:,} distinct estimates, " if estimates else "needs "
            raise SweepSizeError(
                what, keyword="max_seconds", size=predicted, limit=max_seconds, message=(
                    f"{what} {counted}{cost.words(estimates, shapes, classify)}: about {predicted:.2g} s in all, "
                    f"more than max_seconds={max_seconds:g}: pass a larger max_seconds= or fewer GPUs (gpus=)"))
        return predicted

    distinct = {k for k in keys if k is not None}
    unkeyed = sum(k is None for k in keys)
    if first_of:  # every key is an estimate of its own (unless the fabric disconnects)
        refuse_beyond(len(distinct) + unkeyed, len(set(shape_of.values())) + unkeyed, len(distinct) + unkeyed,
                      "up to ")
    else:  # the classes are known once every case is classified: that much first
        refuse_beyond(0, 0, len(cases), "")
    total = len(cases)
    assigned, tasks = _classify(G, cases, keys, cluster, job, symmetry=symmetry, tick=tick)
    done = total
    total += len(tasks)
    outcomes: list = [None] * len(tasks)
    if not cost.timed and tasks:
        # No search timed yet (one host, or parts of no host): the first tasks are the probe, a
        # few spread over them, evaluated for good (each is a class of its own: none is wasted).
        timed = []
        for i in _spread(list(range(len(tasks)))):
            H, remaining, _ = tasks[i]
            begun = time.perf_counter()
            outcomes[i] = _evaluate(H, collective, size, remaining, p2p, profile, searches, algorithms)
            timed.append(time.perf_counter() - begun)
            done += 1
            tick(done, total)
        each = sum(timed) / len(timed)
        cost = _Cost(cost.build, each, each, 0, len(timed))
    # The tasks that search one failed host shape (a key's, or a task of its own) run together.
    batches: dict = {}
    for i, (_, _, case) in enumerate(tasks):
        if outcomes[i] is None:
            key = cluster.key(case) if cluster is not None else None
            batches.setdefault(shape_of.get(key, ("task", i)), []).append(i)
    left = sum(map(len, batches.values()))
    predicted = refuse_beyond(left, len(batches), 0, "")

    runner, close = _executor(executor_kind, executor, len(batches), predicted - (time.perf_counter() - started),
                              client)
    try:
        if runner is None:
            for batch in batches.values():
                for i in batch:
                    H, remaining, _ = tasks[i]
                    outcomes[i] = _evaluate(H, collective, size, remaining, p2p, profile, searches, algorithms)
                    done += 1
                    tick(done, total)
        else:
            futures = {runner.submit(_evaluate_batch, [tasks[i][:2] for i in batch], collective, size, p2p,
                                     profile, algorithms): batch for batch in batches.values()}
            for future in as_completed(futures):
                for i, outcome in zip(futures[future], future.result()):
                    outcomes[i] = outcome
                    done += 1
                    tick(done, total)
    finally:
        if close is not None:
            close()

    job_set = set(job)
    rows = []
    for case, where in zip(cases, assigned):
        if isinstance(where[0], SweepStatus):
            lost = len(job_set) - len(_remaining(case, job)) if where[0] is SweepStatus.DISCONNECTS_FABRIC \
                else len(job_set)
            rows.append(SweepRow(case, 0.0, math.inf, 1.0, *_p2p_effect(None, base.p2p), 0, *where, lost, case))
            continue
        index, remaining, mapping = where
        out = outcomes[index]
        lost = len(job_set) - out.nranks
        status = SweepStatus.CANNOT_COMMUNICATE if out.cause else SweepStatus.RUNS
        after = out.p2p
        if after is not None and mapping is not None:
            # This case's P2P pairs are the representative's under the isomorphism.
            after = {(a, b): after[mapping[a], mapping[b]] for a in remaining for b in remaining
                     if a != b}
        rows.append(SweepRow(case, out.busbw, out.time, _loss(out.busbw, base.busbw),
                             *_p2p_effect(after, base.p2p), out.nranks, status, out.cause, lost,
                             tasks[index][2]))
    order = sorted(range(len(rows)), key=lambda i: (-rows[i].loss, -(rows[i].p2p_loss or 0.0), i))
    return Sweep(G.graph.get("name", "fabric"), collective, size,
                 tuple(position[n] for n in job), fail_each, bool(pairs), base.busbw, base.time,
                 base.p2p is not None, tuple(rows[i] for i in order), len(tasks))
