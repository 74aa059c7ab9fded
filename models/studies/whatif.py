"""What-if failures: fail or degrade parts of a fabric, and sweep every failure of a kind.

A what-if is a transformed graph (:mod:`topo.transform`), so every model sees the change.
This module turns what users write into such graphs and ranks the failures by what they cost.

**Failure specs** (:func:`parse_failure`, :func:`parse_degrade`, :func:`parse_failures`):

* ``"gpu0-gpu3"`` fails the whole link bundle between two nodes (every physical link, both
  directions): the edge is gone;
* ``"gpu0-gpu3:1"`` fails ``1`` of its physical links (any count from 1 to the bundle's
  ``links``; the links of a bundle are interchangeable, so which one does not matter): an
  NV2 bundle becomes NV1 and its bandwidth halves;
* ``"nvswitch3"``, ``"mlx5_1"``, ``"gpu2"`` fails a part, which goes with its edges; a failed
  GPU leaves the job, which runs on the GPUs that remain (:meth:`WhatIf.job_gpus`);
* ``"gpu0-gpu3=0.5"`` (a *degrade*) scales the bundle's bandwidth by a factor in (0, 1]
  (links that trained at a lower rate or width); the links stay.

:func:`apply_failures` applies specs and returns a :class:`WhatIf` holding the new validated
graph. A failure that leaves no valid fabric (a GPU cut off from its CPU or from the other
GPUs, a host cut off from the network) *disconnects the fabric*: :func:`apply_failures`
raises :class:`FabricDisconnectedError`, and a sweep reports the case as a row with zero
busbw and an infinite time.

**Sweeps** (:func:`sweep`) evaluate every single failure of one kind of component, or every
pair with ``pairs=True``, and rank them by the loss of busbw they cause (a fraction of the
baseline's busbw), with the time and the worst P2P bandwidth between the job's GPUs:

* ``fail_each="nvlink"``: one physical link of each NVLink bundle (one row per bundle, both
  directions);
* ``"nvswitch"``, ``"nic"``: each NVSwitch, each NIC;
* ``"gpu"``: each GPU of the job, which then runs on the others (the row says so; busbw
  then compares communicators of different sizes, and may even rise).

Failures whose failed fabrics are isomorphic (same parts, links and job GPUs up to a
relabelling of nodes, found by colour refinement and confirmed by a VF2 isomorphism) are
computed once: the 102 NVLink bundles of a DGX-2 fall into 5 classes, its 12 NVSwitches
into 2. ``symmetry=False`` computes every case (the tests check both agree).

The estimates run on any :class:`concurrent.futures.Executor`. By default
(``executor=None``) a sweep whose distinct estimates would take at most
:data:`IN_PROCESS_SECONDS` (timed on the baseline estimate) runs in this process, where a
pool's start-up would cost more than it saves; a larger one on a local
:class:`~concurrent.futures.ProcessPoolExecutor` with one worker per core (on one core,
always in-process). ``executor="dask://HOST:PORT"`` runs on a Dask distributed scheduler (the optional
extra ``dgx-topo[dask]``), and ``executor=client.get_executor()`` on a client the caller
owns. Every case is a pure function of its graph, so the results are identical whatever
runs them.

Examples
--------
>>> import topo
>>> G = topo.dgx1v()
>>> parse_failure("gpu0-gpu3:1", G)
Failure(nodes=('gpu0', 'gpu3'), count=1, factor=None)
>>> w = apply_failures(G, ["gpu0-gpu3:1", "gpu5"])
>>> w.graph.edges["gpu0", "gpu3"]["links"], w.lost_gpus, w.job_gpus()
(1, ('gpu5',), (0, 1, 2, 3, 4, 5, 6))
>>> s = sweep(topo.dgx2(), "all_reduce", 2**30, fail_each="nvswitch")
>>> len(s.rows), s.evaluations, round(s.rows[0].loss, 3), s.rows[0].label
(12, 2, 0.166, 'nvswitch0')
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import os
import re
import time
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from networkx.algorithms.isomorphism import DiGraphMatcher

import topo
from topo import transform
from topo.errors import DgxTopoError, TopologyError
from topo.units import to_GBps, to_us

from ..predict.collectives import estimate
from ..present.text import format_table
from ..engine.nccltests import collective as _collective
from ..engine.nccl.search import ChannelSearchError
from ..predict.p2p import p2p_matrix
from ..engine.routes import RouteError

__all__ = ["WhatIfError", "FailureSpecError", "FabricDisconnectedError", "SweepSizeError",
           "ExecutorSpecError", "Failure", "WhatIf", "parse_failure", "parse_degrade",
           "parse_failures", "apply_failures", "components", "SweepRow", "Sweep", "sweep",
           "FAIL_EACH", "MAX_CASES", "IN_PROCESS_SECONDS", "FAILURE_GRAMMAR",
           "terminal_progress"]

#: What :func:`sweep` can fail one at a time.
FAIL_EACH = ("nvlink", "nvswitch", "nic", "gpu")
#: Default limit of the failure cases one :func:`sweep` evaluates (``max_cases``). Pairs grow
#: as the square: the 102 NVLink bundles of a DGX-2 give 5,151 pairs, each a transformed
#: graph to build and classify (about 15 ms) before the symmetry classes are estimated.
MAX_CASES = 2000
#: With ``executor=None``, a sweep whose distinct estimates would take at most this long in
#: this process (the baseline estimate's time x their number) runs in-process: a local process
#: pool's start-up (about 0.2 s) would cost more than it saves. [s]
IN_PROCESS_SECONDS = 1.0
#: The failure-spec grammar, for help texts.
FAILURE_GRAMMAR = ("NODE (a part: nvswitch3, mlx5_1, gpu2), U-V (every link between two nodes), "
                   "U-V:N (N physical links of the bundle); degrade: U-V=FACTOR with 0 < FACTOR <= 1")

_NODE_TEXT = re.compile(r"[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*")
_COUNT_TEXT = re.compile(r"[0-9]{1,6}")
_FACTOR_TEXT = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")


class WhatIfError(DgxTopoError):
    """A what-if or sweep asked for something that cannot be done (base class)."""


class FailureSpecError(WhatIfError):
    """A failure or degrade spec that is malformed or does not fit the fabric."""


class FabricDisconnectedError(WhatIfError):
    """Failures that leave no valid fabric (``topo.validate`` refuses the result)."""


class SweepSizeError(WhatIfError):
    """A sweep with more failure cases than its ``max_cases`` allows."""


class ExecutorSpecError(WhatIfError):
    """An ``executor=`` that is neither an Executor nor a known text form."""


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


# ------------------------------------------------------------------------------ specs
@dataclass(frozen=True, slots=True)
class Failure:
    """One failed or degraded component.

    Attributes
    ----------
    nodes : tuple
        ``(node,)`` for a part, ``(u, v)`` for a link bundle.
    count : int or None
        Physical links failed in the bundle; None for all of them (or for a part).
    factor : float or None
        A degrade: the bundle's bandwidth is multiplied by it (0 < factor <= 1); None for a
        failure.
    """

    nodes: tuple
    count: int | None = None
    factor: float | None = None

    @property
    def is_node(self) -> bool:
        """True for a failed part (rather than links)."""
        return len(self.nodes) == 1

    def __str__(self) -> str:
        text = "-".join(map(str, self.nodes))
        if self.factor is not None:
            return f"{text}={self.factor:g}"
        return text if self.count is None else f"{text}:{self.count}"


def _node_name(text: str, raw: str) -> str:
    if not _NODE_TEXT.fullmatch(text):
        raise FailureSpecError(f"{_show(text)} in failure spec {_show(raw)} is not a node name: "
                               f"expected {FAILURE_GRAMMAR}")
    return text


def _split_pair(text: str, raw: str, G) -> tuple:
    """``"u-v"`` into two node ids (resolved against ``G`` where names contain ``-``)."""
    cuts = [i for i, c in enumerate(text) if c == "-"]
    if G is not None:
        for i in cuts:
            u, v = text[:i], text[i + 1:]
            if u in G and v in G:
                return u, v
        if text in G:
            return (text,)
        for i in cuts:
            for part in (text[:i], text[i + 1:]):
                if part and part not in G:
                    raise FailureSpecError(
                        f"{_show(part)} in failure spec {_show(raw)} is not a node of "
                        f"{G.graph.get('name', 'the fabric')}: expected a node id such as "
                        f"{next(iter(G), None)!r}")
        raise FailureSpecError(f"failure spec {_show(raw)} names no node of "
                               f"{G.graph.get('name', 'the fabric')}: expected {FAILURE_GRAMMAR}")
    if len(cuts) > 1:
        raise FailureSpecError(f"failure spec {_show(raw)} has several '-': give the fabric "
                               f"(G=) to tell which one separates the two nodes")
    if not cuts:
        return (text,)
    return text[:cuts[0]], text[cuts[0] + 1:]


def _check_against(G, failure: Failure, raw) -> Failure:
    name = G.graph.get("name", "the fabric")
    for node in failure.nodes:
        if node not in G:
            raise FailureSpecError(f"{_show(node)} in failure spec {_show(raw)} is not a node of "
                                   f"{name}: expected a node id such as {next(iter(G), None)!r}")
    if failure.is_node:
        return failure
    u, v = failure.nodes
    if u == v:
        raise FailureSpecError(f"failure spec {_show(raw)} links {u!r} to itself: expected two "
                               f"different nodes")
    if not (G.has_edge(u, v) and G.has_edge(v, u)):
        raise FailureSpecError(f"{u!r} and {v!r} are not directly linked in {name}: failure spec "
                               f"{_show(raw)} expected an edge (a link bundle)")
    if failure.count is not None:
        links = min(G.edges[u, v]["links"], G.edges[v, u]["links"])
        if not 1 <= failure.count <= links:
            raise FailureSpecError(f"failure spec {_show(raw)} fails {failure.count} links: the "
                                   f"{u}-{v} bundle has {links}, expected 1 to {links}")
    return failure


def parse_failure(text, G=None) -> Failure:
    """A failure spec (``"gpu0-gpu3"``, ``"gpu0-gpu3:1"``, ``"nvswitch3"``) as a :class:`Failure`.

    Parameters
    ----------
    text : str
        See :data:`FAILURE_GRAMMAR`. Surrounding spaces are ignored.
    G : networkx.DiGraph, optional
        The fabric: the nodes must exist, a bundle must be an edge, a link count must be 1
        to the bundle's ``links``. Without it only the form is checked.

    Returns
    -------
    Failure

    Raises
    ------
    FailureSpecError
        For text that is not a spec (a degrade included), an unknown node, two nodes without
        an edge, or a link count out of range; the message names what was received.
    """
    if isinstance(text, Failure):
        if text.factor is not None:
            raise FailureSpecError(f"{text} is a degrade: expected a failure (no '=FACTOR')")
        return text if G is None else _check_against(G, text, str(text))
    if not isinstance(text, str):
        raise FailureSpecError(f"a failure spec must be text, received {_show(text)}: expected "
                               f"{FAILURE_GRAMMAR}")
    raw, body = text, text.strip()
    if "=" in body:
        raise FailureSpecError(f"failure spec {_show(raw)} has '=': a degrade (U-V=FACTOR) is "
                               f"given with parse_degrade / --degrade")
    count = None
    if ":" in body:
        body, _, count_text = body.partition(":")
        if not _COUNT_TEXT.fullmatch(count_text.strip()):
            raise FailureSpecError(f"link count {_show(count_text)} in failure spec {_show(raw)}: "
                                   f"expected a whole number of links >= 1 after ':'")
        count = int(count_text)
        if count < 1:
            raise FailureSpecError(f"failure spec {_show(raw)} fails {count} links: expected at "
                                   f"least 1")
    body = body.strip()
    if not body:
        raise FailureSpecError(f"empty failure spec {_show(raw)}: expected {FAILURE_GRAMMAR}")
    _node_name(body, raw)
    nodes = _split_pair(body, raw, G)
    if count is not None and len(nodes) == 1:
        raise FailureSpecError(f"failure spec {_show(raw)} gives a link count to the part "
                               f"{nodes[0]!r}: expected U-V:N for links of a bundle")
    if any(not n for n in nodes):
        raise FailureSpecError(f"failure spec {_show(raw)} lacks a node: expected {FAILURE_GRAMMAR}")
    failure = Failure(tuple(nodes), count)
    return failure if G is None else _check_against(G, failure, raw)


def parse_degrade(text, G=None) -> Failure:
    """A degrade spec ``"U-V=FACTOR"`` (0 < FACTOR <= 1) as a :class:`Failure` with a factor.

    Parameters
    ----------
    text : str
    G : networkx.DiGraph, optional
        The fabric, to check that the nodes exist and are linked.

    Returns
    -------
    Failure

    Raises
    ------
    FailureSpecError
        For malformed text, a factor out of (0, 1], an unknown node or a missing edge.
    """
    if isinstance(text, Failure):
        if text.factor is None or len(text.nodes) != 2:
            raise FailureSpecError(f"{text} is not a degrade: expected U-V=FACTOR")
        return text if G is None else _check_against(G, text, str(text))
    if not isinstance(text, str):
        raise FailureSpecError(f"a degrade spec must be text, received {_show(text)}: expected "
                               f"U-V=FACTOR with 0 < FACTOR <= 1")
    raw = text
    body, sep, factor_text = text.strip().partition("=")
    if not sep:
        raise FailureSpecError(f"degrade spec {_show(raw)} has no '=FACTOR': expected U-V=FACTOR "
                               f"with 0 < FACTOR <= 1 (0.5 halves the bundle's bandwidth)")
    factor_text = factor_text.strip()
    if not _FACTOR_TEXT.fullmatch(factor_text):
        raise FailureSpecError(f"degrade factor {_show(factor_text)} in {_show(raw)}: expected a "
                               f"decimal number with 0 < FACTOR <= 1")
    factor = float(factor_text)
    if not 0 < factor <= 1:
        hint = (" (to fail the links, give the failure U-V instead)" if factor == 0 else
                " (a degrade only slows links: topo.add_links or topo.scale_links add capacity)")
        raise FailureSpecError(f"degrade factor {factor_text} in {_show(raw)} is out of range: "
                               f"expected 0 < FACTOR <= 1{hint}")
    body = body.strip()
    if not body:
        raise FailureSpecError(f"degrade spec {_show(raw)} lacks the link: expected U-V=FACTOR")
    _node_name(body, raw)
    nodes = _split_pair(body, raw, G)
    if len(nodes) != 2 or not all(nodes):
        raise FailureSpecError(f"degrade spec {_show(raw)} names no link bundle: expected U-V=FACTOR "
                               f"(two linked nodes)")
    failure = Failure(tuple(nodes), None, factor)
    return failure if G is None else _check_against(G, failure, raw)


def parse_failures(text, G=None) -> tuple:
    """Comma-separated failure specs (``"gpu0-gpu3:1,nvswitch3"``), as a sweep row names them.

    Parameters
    ----------
    text : str
    G : networkx.DiGraph, optional

    Returns
    -------
    tuple of Failure

    Raises
    ------
    FailureSpecError
        As :func:`parse_failure`, or for an empty item.
    """
    if not isinstance(text, str):
        raise FailureSpecError(f"failure specs must be text, received {_show(text)}: expected "
                               f"comma-separated {FAILURE_GRAMMAR}")
    return tuple(parse_failure(item, G) for item in text.split(","))


# ------------------------------------------------------------------------------ applying
@dataclass(frozen=True, slots=True)
class WhatIf:
    """A fabric with failures and degrades applied.

    Attributes
    ----------
    base : networkx.DiGraph
        The fabric before (not modified).
    graph : networkx.DiGraph
        The new validated fabric.
    changes : tuple of Failure
        What was applied, failures of parts last.
    lost_gpus : tuple
        GPU nodes that failed (they leave every job).
    """

    base: object = field(repr=False)
    graph: object = field(repr=False)
    changes: tuple
    lost_gpus: tuple

    def job_gpus(self, gpus=None) -> tuple:
        """The ids in :attr:`graph` of a job given by ids of :attr:`base`, failed GPUs dropped.

        Parameters
        ----------
        gpus : iterable of int or str, optional
            GPU ids of the base fabric (``"0-3"``, ``[0, 3]``); all GPUs by default.

        Returns
        -------
        tuple of int
            Ascending ids in the new fabric (GPU ids are positions, so those after a failed
            GPU move down).

        Raises
        ------
        topo.GpuSelectionError
            For bad ids.
        WhatIfError
            If every GPU of the job failed.
        """
        nodes = topo.gpus(self.base) if gpus is None else topo.select_gpus(self.base, gpus)
        position = {n: i for i, n in enumerate(topo.gpus(self.graph))}
        ids = tuple(sorted(position[n] for n in nodes if n in position))
        if not ids:
            raise WhatIfError(f"every GPU of the job failed ({', '.join(map(str, self.lost_gpus))}): "
                              f"expected at least one GPU left to run it")
        return ids


def _apply(G, changes) -> object:
    """The fabric with ``changes`` applied (validated); TopologyError if it is no fabric."""
    H = G
    for c in changes:
        if c.is_node:
            continue
        u, v = c.nodes
        if c.factor is not None:
            H = transform.scale_links(H, u, v, c.factor)
        else:
            links = min(H.edges[u, v]["links"], H.edges[v, u]["links"])
            H = transform.remove_links(H, u, v, links if c.count is None else c.count)
    parts = [c.nodes[0] for c in changes if c.is_node]
    if parts:
        H = transform.remove_nodes(H, parts)
    return H


def _describe(changes) -> str:
    return ", ".join(map(str, changes))


def apply_failures(G, fail=(), degrade=()) -> WhatIf:
    """Apply failures and degrades to a fabric.

    Link changes are applied first, in the order given, then every failed part at once.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    fail : str, Failure or iterable of them
        Failure specs (:func:`parse_failure`); a string may hold several, comma-separated.
    degrade : str, Failure or iterable of them
        Degrade specs (:func:`parse_degrade`).

    Returns
    -------
    WhatIf

    Raises
    ------
    FailureSpecError
        For a bad spec, a link change on a failed part, or the same bundle changed twice.
    FabricDisconnectedError
        If the result is no valid fabric (``topo.validate``'s reason in the message).
    topo.TopologyError
        If ``G`` itself is not a valid fabric.
    """
    topo.validate(G)
    fail = [fail] if isinstance(fail, (str, Failure)) else list(fail)
    degrade = [degrade] if isinstance(degrade, (str, Failure)) else list(degrade)
    failures = [f for item in fail for f in
                ((item,) if isinstance(item, Failure) else parse_failures(item, G))]
    failures = [parse_failure(f, G) for f in failures]
    degrades = [parse_degrade(d, G) for d in degrade]
    changes = degrades + [f for f in failures if not f.is_node]
    parts = [f for f in failures if f.is_node]
    failed_parts = {f.nodes[0] for f in parts}
    seen: set = set()
    for c in changes:
        bundle = frozenset(c.nodes)
        if bundle in seen:
            raise FailureSpecError(f"the {'-'.join(c.nodes)} bundle is changed twice: expected one "
                                   f"failure or degrade per bundle")
        seen.add(bundle)
        if failed_parts & set(c.nodes):
            raise FailureSpecError(f"{c} changes links of a failed part "
                                   f"({', '.join(sorted(map(str, failed_parts & set(c.nodes))))}): "
                                   f"its links fail with it")
    changes += parts
    try:
        H = _apply(G, changes)
    except TopologyError as err:
        raise FabricDisconnectedError(f"failing {_describe(changes)} disconnects the fabric: {err}") from err
    lost = tuple(n for n in topo.gpus(G) if n in failed_parts)
    if changes:  # the name says what was changed: "DGX-1V (fail gpu0-gpu3:1)"
        label = ", ".join(("degrade " if c.factor is not None else "fail ") + str(c) for c in changes)
        H.graph["name"] = f"{G.graph.get('name', 'fabric')} ({label})"
    return WhatIf(G, H, tuple(changes), lost)


# ------------------------------------------------------------------------------ components
def components(G, fail_each: str, gpus=None) -> tuple:
    """The single failures a sweep of ``fail_each`` evaluates, in fabric order.

    Parameters
    ----------
    G : networkx.DiGraph
    fail_each : str
        One of :data:`FAIL_EACH`.
    gpus : iterable of int or str, optional
        The job (for ``"gpu"``: only its GPUs fail).

    Returns
    -------
    tuple of Failure

    Raises
    ------
    WhatIfError
        For an unknown ``fail_each``, or a fabric without such components.
    """
    if fail_each not in FAIL_EACH:
        raise WhatIfError(f"fail_each={_show(fail_each)}: expected one of {', '.join(FAIL_EACH)}")
    if fail_each == "nvlink":
        order = {n: i for i, n in enumerate(G.nodes)}
        found = tuple(Failure((u, v), 1) for u, v, kind in G.edges(data="kind")
                      if kind == "nvlink" and order[u] < order[v])
    elif fail_each == "gpu":
        job = topo.gpus(G) if gpus is None else topo.select_gpus(G, gpus)
        found = tuple(Failure((n,)) for n in topo.gpus(G) if n in set(job))
    else:
        found = tuple(Failure((n,)) for n in topo.nodes_of_kind(G, fail_each))
    if not found:
        raise WhatIfError(f"{G.graph.get('name', 'the fabric')} has no {fail_each} to fail: "
                          f"expected fail_each= one of the parts it has ({', '.join(FAIL_EACH)})")
    return found


# ------------------------------------------------------------------------------ symmetry
# What an isomorphism of failed fabrics must keep: what the models read from nodes and edges
# (not names, indices or labels of where a part sits, which the edges already say).
_NODE_KEYS = ("kind", "host", "model", "compute_capability", "memory_bandwidth", "ports")
_EDGE_KEYS = ("kind", "links", "bandwidth", "latency", "link", "host_bridge")


def _labelled(H, job) -> tuple:
    nodes = {n: (tuple(d.get(k) for k in _NODE_KEYS), n in job) for n, d in H.nodes(data=True)}
    edges = {(u, v): tuple(d.get(k) for k in _EDGE_KEYS) for u, v, d in H.edges(data=True)}
    return nodes, edges


def _refine(H, nodes, edges) -> dict:
    """Colour refinement (1-WL) of the labelled fabric: node -> stable colour.

    Isomorphisms map nodes onto nodes of the same stable colour, so the sorted colours are a
    certificate (equal for isomorphic fabrics) and matching colours prunes VF2's search.
    Colours are Python hashes: comparable within this process, which is where classes form.
    """
    colour = {n: hash(label) for n, label in nodes.items()}
    edges = {e: hash(label) for e, label in edges.items()}  # labels may hold None: sort hashes
    classes = len(set(colour.values()))
    for _ in range(len(colour)):
        colour = {n: hash((colour[n],
                           tuple(sorted((edges[n, w], colour[w]) for w in H.adj[n])),
                           tuple(sorted((edges[w, n], colour[w]) for w in H.pred[n]))))
                  for n in H}
        refined = len(set(colour.values()))
        if refined == classes:
            break
        classes = refined
    return colour


def _label_graph(colour, edges):
    """A bare copy of the fabric labelled for VF2: stable node colours, edge labels."""
    L = nx.DiGraph()
    L.add_nodes_from((n, {"label": c}) for n, c in colour.items())
    L.add_edges_from((u, v, {"label": label}) for (u, v), label in edges.items())
    return L


def _same_label(a, b) -> bool:
    return a["label"] == b["label"]


class _Classes:
    """Failed fabrics grouped into isomorphism classes (one estimate per class)."""

    def __init__(self):
        self.buckets: dict = {}  # certificate -> class indices
        self.labelled: list = []  # class index -> labelled representative

    def add(self, H, job) -> tuple:
        """``(class index, mapping)`` of ``H`` with ``job`` marked: the mapping takes the nodes
        of ``H`` to those of the class's representative (None for a new class)."""
        nodes, edges = _labelled(H, job)
        colour = _refine(H, nodes, edges)
        bucket = self.buckets.setdefault(tuple(sorted(colour.values())), [])
        L = _label_graph(colour, edges)
        for index in bucket:
            matcher = DiGraphMatcher(L, self.labelled[index], node_match=_same_label,
                                     edge_match=_same_label)
            if matcher.is_isomorphic():
                return index, dict(matcher.mapping)
        self.labelled.append(L)
        bucket.append(len(self.labelled) - 1)
        return len(self.labelled) - 1, None


# ------------------------------------------------------------------------------ evaluation
@dataclass(frozen=True, slots=True)
class _Outcome:
    busbw: float
    time: float
    p2p: dict | None  # (source node, destination node) -> P2P bandwidth [B/s]
    nranks: int
    note: str = ""


def _evaluate(H, collective, nbytes, job_nodes, p2p, profile) -> _Outcome:
    """One estimate on a failed fabric (module level: executors pickle it)."""
    position = {n: i for i, n in enumerate(topo.gpus(H))}
    ids = sorted(position[n] for n in job_nodes)
    try:
        e = estimate(H, collective, nbytes, ids, profile=profile)
    except (RouteError, ChannelSearchError) as err:
        return _Outcome(0.0, math.inf, None, len(ids), f"the job's GPUs cannot communicate: {err}")
    pairs = None
    if p2p and len(ids) > 1:
        M = np.asarray(p2p_matrix(H, ids), dtype=float)
        nodes = [n for n in topo.gpus(H) if n in set(job_nodes)]
        pairs = {(a, b): float(M[i, j]) for i, a in enumerate(nodes) for j, b in enumerate(nodes)
                 if i != j}
    return _Outcome(float(e.busbw), float(e.time), pairs, len(ids))


def _executor_kind(executor) -> str:
    """Check ``executor=`` before any work: ``"auto"``, ``"inline"``, ``"process"``,
    ``"dask"`` or ``"given"``."""
    if executor is None:
        return "auto"
    if isinstance(executor, Executor):
        return "given"
    if isinstance(executor, str):
        if executor in ("inline", "process"):
            return executor
        if executor.startswith("dask://") and len(executor) > len("dask://"):
            try:
                import distributed  # noqa: F401  (optional extra dgx-topo[dask])
            except ImportError as err:
                raise ExecutorSpecError(f"executor={executor!r} needs Dask distributed: install the "
                                        f"optional extra, pip install 'dgx-topo[dask]'") from err
            return "dask"
    raise ExecutorSpecError(f"executor={_show(executor)}: expected None (automatic), 'inline', "
                            f"'process', 'dask://HOST:PORT' or a concurrent.futures.Executor "
                            f"(e.g. a Dask client's get_executor())")


def _executor(kind, executor, n_tasks, seconds_each) -> tuple:
    """``(executor, close)``: where to run ``n_tasks`` (None: in-process), what to shut down."""
    cores = os.cpu_count() or 1
    if n_tasks == 0 or kind == "inline":
        return None, None
    if kind == "auto":
        if n_tasks * seconds_each <= IN_PROCESS_SECONDS or n_tasks < 2 or cores < 2:
            return None, None
        kind = "process"
    if kind == "process":
        pool = ProcessPoolExecutor(max_workers=max(1, min(cores, n_tasks)))
        return pool, pool.shutdown
    if kind == "dask":
        from distributed import Client  # checked by _executor_kind
        client = Client("tcp://" + executor[len("dask://"):], set_as_default=False)
        return client.get_executor(), client.close
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
    raise WhatIfError(f"progress={_show(progress)}: expected a callable progress(done, total) or "
                      f"a tqdm-style bar with update(n)")


def terminal_progress(stream=None, *, label: str = "whatif"):
    """A ``progress(done, total)`` callback that redraws one status line on a terminal.

    Writes nothing unless ``stream`` is a terminal (so piped ``--json`` output stays clean).

    Parameters
    ----------
    stream : file, optional
        Default ``sys.stderr``.
    label : str
        Text before the counts.

    Returns
    -------
    callable
    """
    import sys

    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        return lambda done, total: None

    def show(done, total):
        stream.write(f"\r{label}: {done}/{total}")
        if done >= total:
            stream.write("\n")
        stream.flush()
    return show


# ------------------------------------------------------------------------------ results
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
        GPUs the job runs on (fewer than the baseline's after a GPU failure).
    note : str
        "disconnects the fabric: ...", "the job runs on 15 GPUs", ... or "".
    representative : tuple of Failure
        The case whose estimate this row reuses (itself unless a symmetry mapped it).
    """

    failed: tuple
    busbw: float
    time: float
    loss: float
    p2p_pair: tuple | None
    p2p: float | None
    p2p_loss: float | None
    nranks: int
    note: str
    representative: tuple

    @property
    def label(self) -> str:
        """The failed components as comma-separated specs (:func:`parse_failures` reads it)."""
        return ",".join(map(str, self.failed))


def _size_text(nbytes: int) -> str:
    value, units = float(nbytes), ("B", "KiB", "MiB", "GiB", "TiB")
    step = 0
    while value >= 1024 and step < len(units) - 1:
        value /= 1024
        step += 1
    return f"{value:.4g} {units[step]}"


def _percent(fraction: float) -> str:
    return f"{100 * fraction + 0.0:.1f}%".replace("-0.0%", "0.0%")


_WHAT = {"nvlink": "one link of each NVLink bundle", "nvswitch": "each NVSwitch",
         "nic": "each NIC", "gpu": "each GPU of the job (the job runs on the others)"}


@dataclass(frozen=True, slots=True)
class Sweep:
    """Every single (or pair) failure of a kind of component, ranked by the busbw it costs.

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

    def to_dict(self) -> dict:
        """``{"baseline": {"busbw_gbps", "time_us"}, "rows": [{"failed", "busbw_gbps",
        "time_us", "loss"}, ...]}``; an infinite time is ``None`` (JSON null)."""
        def us(t):
            return None if math.isinf(t) else float(to_us(t))
        return {"baseline": {"busbw_gbps": float(to_GBps(self.baseline_busbw)),
                             "time_us": us(self.baseline_time)},
                "rows": [{"failed": r.label, "busbw_gbps": float(to_GBps(r.busbw)),
                          "time_us": us(r.time), "loss": r.loss} for r in self.rows]}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text (strict: no NaN or Infinity)."""
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    def format(self, top: int | None = None) -> str:
        """A text table of the ranking (the ``top`` worst rows, all by default)."""
        what = _WHAT[self.fail_each] + (", every pair" if self.pairs else "")
        gbps = lambda b: f"{to_GBps(b):.1f}"  # noqa: E731
        lines = [f"{self.collective} {_size_text(self.nbytes)} on {self.fabric} "
                 f"({len(self.gpus)} GPUs), failing {what}: {len(self.rows)} cases, "
                 f"{self.evaluations} distinct estimates",
                 f"baseline: busbw {gbps(self.baseline_busbw)} GB/s, time "
                 f"{to_us(self.baseline_time):.1f} us"
                 + (";  P2P: the pair of the job whose P2P bandwidth falls most" if self.p2p else "")]
        headers = ["rank", "failed", "busbw GB/s", "time us", "loss"]
        align = "<<>>>"
        with_p2p = self.p2p
        if with_p2p:
            headers += ["P2P pair", "P2P GB/s", "P2P loss"]
            align += "<>>"
        headers.append("note")
        align += "<"
        table = []
        for rank, r in enumerate(self.rows[:top] if top is not None else self.rows, 1):
            cells = [str(rank), r.label, gbps(r.busbw),
                     "inf" if math.isinf(r.time) else f"{to_us(r.time):.1f}", _percent(r.loss)]
            if with_p2p:
                cells += ["-" if r.p2p_pair is None else "->".join(map(str, r.p2p_pair)),
                          "-" if r.p2p is None else gbps(r.p2p),
                          "-" if r.p2p_loss is None else _percent(r.p2p_loss)]
            table.append(cells + [r.note])
        lines.append(format_table(headers, table, align=align))
        if top is not None and top < len(self.rows):
            lines.append(f"... {len(self.rows) - top} more")
        return "\n".join(lines)


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


def sweep(G, collective: str, nbytes, *, fail_each: str = "nvlink", pairs: bool = False,
          gpus=None, executor=None, progress=None, max_cases: int = MAX_CASES,
          symmetry: bool = True, p2p: bool | None = None, profile=None) -> Sweep:
    """Evaluate every failure of one kind of component and rank them by the busbw they cost.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    collective : str
        One of :data:`models.COLLECTIVE_NAMES`.
    nbytes : int or str
        One message size (``2**30``, ``"1G"``). [bytes]
    fail_each : str
        One of :data:`FAIL_EACH` (see the module docstring).
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
        Refuse sweeps of more failure cases (default :data:`MAX_CASES`).
    symmetry : bool
        Compute isomorphic failed fabrics once (default).
    p2p : bool, optional
        Also compute the worst P2P bandwidth between the job's GPUs; by default on a single
        host (where P2P bandwidth is the NVLink/PCIe figure users compare).
    profile : str or NcclProfile, optional
        NCCL version profile.

    Returns
    -------
    Sweep

    Raises
    ------
    WhatIfError
        For an unknown ``fail_each``, a fabric without such parts, or a bad ``progress``.
    SweepSizeError
        For more cases than ``max_cases`` (the message gives the count and the option).
    ExecutorSpecError
        For an unknown ``executor``, or ``dask://`` without Dask distributed installed.
    topo.SizeError, topo.GpuSelectionError, models.UnknownCollectiveError, topo.TopologyError
        For a bad size, GPU ids, collective or fabric.
    """
    topo.validate(G)
    size = topo.parse_nbytes(nbytes)
    if not isinstance(size, int):
        raise topo.SizeError(f"a sweep takes one message size, received {_show(nbytes)}")
    if isinstance(max_cases, bool) or not isinstance(max_cases, numbers.Integral) or max_cases < 1:
        raise WhatIfError(f"max_cases must be a whole number >= 1, received {_show(max_cases)}")
    job = topo.gpus(G) if gpus is None else topo.select_gpus(G, gpus)
    position = {n: i for i, n in enumerate(topo.gpus(G))}
    job = sorted(job, key=position.__getitem__)
    p2p = (len({G.nodes[n]["host"] for n in topo.gpus(G)}) == 1) if p2p is None else bool(p2p)
    collective = _collective(collective).name
    tick = _ticker(progress)
    executor_kind = _executor_kind(executor)
    if pairs not in (True, False):
        raise WhatIfError(f"pairs must be True or False, received {_show(pairs)}")

    singles = components(G, fail_each, gpus)
    n_cases = math.comb(len(singles), 2) if pairs else len(singles)
    if n_cases > max_cases:
        raise SweepSizeError(
            f"fail_each={fail_each!r}{' with pairs=True' if pairs else ''} on "
            f"{G.graph.get('name', 'the fabric')} gives {n_cases:,} failure cases "
            f"({len(singles)} components), more than max_cases={max_cases:,}: pass a larger "
            f"max_cases= (each case builds and classifies a failed fabric, about 15 ms on a "
            f"DGX-2){', fewer GPUs (gpus=)' if fail_each == 'gpu' else ''} or another fail_each=")
    cases = list(itertools.combinations(singles, 2)) if pairs else [(s,) for s in singles]
    started = time.perf_counter()
    base = _evaluate(G, collective, size, job, p2p, profile)  # checks the profile too
    seconds_each = time.perf_counter() - started
    total = len(cases)
    done = 0

    classes = _Classes()
    assigned: list = []  # per case: (class index, job nodes) or a "disconnects" note
    tasks: list = []  # per class: (graph, job nodes)
    job_set = set(job)
    for case in cases:
        try:
            H = _apply(G, case)
        except TopologyError as err:
            assigned.append(f"disconnects the fabric: {err}")
        else:
            remaining = [n for n in job if n in H]
            if not remaining:
                assigned.append("no GPU of the job is left")
            elif symmetry:
                index, mapping = classes.add(H, set(remaining))
                if index == len(tasks):
                    tasks.append((H, remaining, case))
                assigned.append((index, remaining, mapping))
            else:
                tasks.append((H, remaining, case))
                assigned.append((len(tasks) - 1, remaining, None))
        done += 1
        tick(done, total + len(tasks))
    total += len(tasks)

    outcomes: list = [None] * len(tasks)
    runner, close = _executor(executor_kind, executor, len(tasks), seconds_each)
    try:
        if runner is None:
            for i, (H, remaining, _) in enumerate(tasks):
                outcomes[i] = _evaluate(H, collective, size, remaining, p2p, profile)
                done += 1
                tick(done, total)
        else:
            futures = {runner.submit(_evaluate, H, collective, size, remaining, p2p, profile): i
                       for i, (H, remaining, _) in enumerate(tasks)}
            for future in as_completed(futures):
                outcomes[futures[future]] = future.result()
                done += 1
                tick(done, total)
    finally:
        if close is not None:
            close()

    rows = []
    for case, where in zip(cases, assigned):
        if isinstance(where, str):
            rows.append(SweepRow(case, 0.0, math.inf, 1.0, *_p2p_effect(None, base.p2p), 0,
                                 where, case))
            continue
        index, remaining, mapping = where
        out = outcomes[index]
        notes = [out.note] if out.note else []
        if fail_each == "gpu" or out.nranks != len(job_set):
            notes.append(f"the job runs on {out.nranks} GPU{'s' if out.nranks != 1 else ''}")
        after = out.p2p
        if after is not None and mapping is not None:
            # This case's P2P pairs are the representative's under the isomorphism.
            after = {(a, b): after[mapping[a], mapping[b]] for a in remaining for b in remaining
                     if a != b}
        rows.append(SweepRow(case, out.busbw, out.time, _loss(out.busbw, base.busbw),
                             *_p2p_effect(after, base.p2p), out.nranks, "; ".join(notes),
                             tasks[index][2]))
    order = sorted(range(len(rows)), key=lambda i: (-rows[i].loss, -(rows[i].p2p_loss or 0.0), i))
    return Sweep(G.graph.get("name", "fabric"), collective, size,
                 tuple(position[n] for n in job), fail_each, bool(pairs), base.busbw, base.time,
                 base.p2p is not None, tuple(rows[i] for i in order), len(tasks))
