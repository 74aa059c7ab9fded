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

**Sweeps**: :func:`components` lists what a sweep fails one at a time (``fail_each``):

* ``"nvlink"``: one physical link of each NVLink bundle (one row per bundle, both directions);
* ``"nvswitch"``, ``"nic"``: each NVSwitch, each NIC;
* ``"gpu"``: each GPU of the job, which then runs on the others.

The sweep itself, with its symmetry classes and executors, is :mod:`models.studies.sweep`.

Examples
--------
>>> import topo
>>> G = topo.dgx1v()
>>> parse_failure("gpu0-gpu3:1", G)
Failure(nodes=('gpu0', 'gpu3'), count=1, factor=None)
>>> w = apply_failures(G, ["gpu0-gpu3:1", "gpu5"])
>>> w.graph.edges["gpu0", "gpu3"]["links"], w.lost_gpus, w.job_gpus()
(1, ('gpu5',), (0, 1, 2, 3, 4, 5, 6))
>>> len(components(topo.dgx2(), "nvswitch")), str(components(G, "nvlink")[0])
(12, 'gpu0-gpu3:1')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx

import topo
from topo import transform
from topo.errors import DgxTopoError, TopologyError
from topo.select import GpuIds

from ..engine.results import tidy_records

__all__ = ["WhatIfError", "FailureSpecError", "FabricDisconnectedError", "Failure", "WhatIf", "parse_failure",
           "parse_degrade", "parse_failures", "apply_failures", "failed_fabric", "components", "brief_repr",
           "FAIL_EACH", "FAILURE_GRAMMAR"]

#: What a sweep (:func:`models.studies.sweep.sweep`) can fail one at a time.
FAIL_EACH = ("nvlink", "nvswitch", "nic", "gpu")
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


def brief_repr(value: object) -> str:
    """``repr(value)``, shortened to about 60 characters (for messages that echo bad input)."""
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
        raise FailureSpecError(f"{brief_repr(text)} in failure spec {brief_repr(raw)} is not a node name: "
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
                        f"{brief_repr(part)} in failure spec {brief_repr(raw)} is not a node of "
                        f"{G.graph.get('name', 'the fabric')}: expected a node id such as "
                        f"{next(iter(G), None)!r}")
        raise FailureSpecError(f"failure spec {brief_repr(raw)} names no node of "
                               f"{G.graph.get('name', 'the fabric')}: expected {FAILURE_GRAMMAR}")
    if len(cuts) > 1:
        raise FailureSpecError(f"failure spec {brief_repr(raw)} has several '-': give the fabric "
                               f"(G=) to tell which one separates the two nodes")
    if not cuts:
        return (text,)
    return text[:cuts[0]], text[cuts[0] + 1:]


def _check_against(G, failure: Failure, raw) -> Failure:
    name = G.graph.get("name", "the fabric")
    for node in failure.nodes:
        if node not in G:
            raise FailureSpecError(f"{brief_repr(node)} in failure spec {brief_repr(raw)} is not a node of "
                                   f"{name}: expected a node id such as {next(iter(G), None)!r}")
    if failure.is_node:
        return failure
    u, v = failure.nodes
    if u == v:
        raise FailureSpecError(f"failure spec {brief_repr(raw)} links {u!r} to itself: expected two "
                               f"different nodes")
    if not (G.has_edge(u, v) and G.has_edge(v, u)):
        raise FailureSpecError(f"{u!r} and {v!r} are not directly linked in {name}: failure spec "
                               f"{brief_repr(raw)} expected an edge (a link bundle)")
    if failure.count is not None:
        links = min(G.edges[u, v]["links"], G.edges[v, u]["links"])
        if not 1 <= failure.count <= links:
            raise FailureSpecError(f"failure spec {brief_repr(raw)} fails {failure.count} links: the "
                                   f"{u}-{v} bundle has {links}, expected 1 to {links}")
    return failure


def parse_failure(text: str | Failure, G: nx.DiGraph | None = None) -> Failure:
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
        raise FailureSpecError(f"a failure spec must be text, received {brief_repr(text)}: expected "
                               f"{FAILURE_GRAMMAR}")
    raw, body = text, text.strip()
    if "=" in body:
        raise FailureSpecError(f"failure spec {brief_repr(raw)} has '=': a degrade (U-V=FACTOR) is "
                               f"given with parse_degrade / --degrade")
    count = None
    if ":" in body:
        body, _, count_text = body.partition(":")
        if not _COUNT_TEXT.fullmatch(count_text.strip()):
            raise FailureSpecError(f"link count {brief_repr(count_text)} in failure spec {brief_repr(raw)}: "
                                   f"expected a whole number of links >= 1 after ':'")
        count = int(count_text)
        if count < 1:
            raise FailureSpecError(f"failure spec {brief_repr(raw)} fails {count} links: expected at "
                                   f"least 1")
    body = body.strip()
    if not body:
        raise FailureSpecError(f"empty failure spec {brief_repr(raw)}: expected {FAILURE_GRAMMAR}")
    _node_name(body, raw)
    nodes = _split_pair(body, raw, G)
    if count is not None and len(nodes) == 1:
        raise FailureSpecError(f"failure spec {brief_repr(raw)} gives a link count to the part "
                               f"{nodes[0]!r}: expected U-V:N for links of a bundle")
    if any(not n for n in nodes):
        raise FailureSpecError(f"failure spec {brief_repr(raw)} lacks a node: expected {FAILURE_GRAMMAR}")
    failure = Failure(tuple(nodes), count)
    return failure if G is None else _check_against(G, failure, raw)


def parse_degrade(text: str | Failure, G: nx.DiGraph | None = None) -> Failure:
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
        raise FailureSpecError(f"a degrade spec must be text, received {brief_repr(text)}: expected "
                               f"U-V=FACTOR with 0 < FACTOR <= 1")
    raw = text
    body, sep, factor_text = text.strip().partition("=")
    if not sep:
        raise FailureSpecError(f"degrade spec {brief_repr(raw)} has no '=FACTOR': expected U-V=FACTOR "
                               f"with 0 < FACTOR <= 1 (0.5 halves the bundle's bandwidth)")
    factor_text = factor_text.strip()
    if not _FACTOR_TEXT.fullmatch(factor_text):
        raise FailureSpecError(f"degrade factor {brief_repr(factor_text)} in {brief_repr(raw)}: expected a "
                               f"decimal number with 0 < FACTOR <= 1")
    factor = float(factor_text)
    if not 0 < factor <= 1:
        hint = (" (to fail the links, give the failure U-V instead)" if factor == 0 else
                " (a degrade only slows links: topo.add_links or topo.scale_links add capacity)")
        raise FailureSpecError(f"degrade factor {factor_text} in {brief_repr(raw)} is out of range: "
                               f"expected 0 < FACTOR <= 1{hint}")
    body = body.strip()
    if not body:
        raise FailureSpecError(f"degrade spec {brief_repr(raw)} lacks the link: expected U-V=FACTOR")
    _node_name(body, raw)
    nodes = _split_pair(body, raw, G)
    if len(nodes) != 2 or not all(nodes):
        raise FailureSpecError(f"degrade spec {brief_repr(raw)} names no link bundle: expected U-V=FACTOR "
                               f"(two linked nodes)")
    failure = Failure(tuple(nodes), None, factor)
    return failure if G is None else _check_against(G, failure, raw)


def parse_failures(text: str, G: nx.DiGraph | None = None) -> tuple:
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
        raise FailureSpecError(f"failure specs must be text, received {brief_repr(text)}: expected "
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

    def job_gpus(self, gpus: GpuIds = None) -> tuple:
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

    def to_records(self) -> list:
        """Tidy rows, one per change (failure or degrade) in :attr:`changes`' order (:mod:`models.engine.results`
        names the columns); no change gives none.

        Columns: ``change`` (the spec, ``"gpu0-gpu3:1"``), ``action`` (``"fail"`` or
        ``"degrade"``), ``part`` (a failed part's node; ``""`` for links), ``u``, ``v`` (a link
        bundle's nodes; ``""`` for a part), ``factor`` (a degrade's; None for a failure),
        ``links_before``, ``links_after`` (the bundle's physical links from ``u`` to ``v`` in
        :attr:`base` and :attr:`graph`; 0 once it is gone), ``bandwidth_before_Bps``,
        ``bandwidth_after_Bps`` (its bandwidth from ``u`` to ``v`` [B/s]; 0 once gone), and
        ``lost_gpu`` (the part is a GPU, which leaves the job). A part's row has None in the four
        link columns.

        Examples
        --------
        >>> import topo
        >>> w = apply_failures(topo.dgx1v(), "gpu0-gpu3:1", degrade="gpu0-gpu1=0.5")
        >>> [(r["change"], r["links_before"], r["links_after"], r["bandwidth_after_Bps"] / 1e9)
        ...  for r in w.to_records()]
        [('gpu0-gpu1=0.5', 1, 1, 12.5), ('gpu0-gpu3:1', 2, 1, 25.0)]
        """
        rows = []
        for c in self.changes:
            row = {"change": str(c), "action": "fail" if c.factor is None else "degrade",
                   "part": str(c.nodes[0]) if c.is_node else "", "u": "" if c.is_node else str(c.nodes[0]),
                   "v": "" if c.is_node else str(c.nodes[1]), "factor": c.factor}
            for when, G in (("before", self.base), ("after", self.graph)):
                edge = None if c.is_node else G.adj[c.nodes[0]].get(c.nodes[1], {}) if c.nodes[0] in G else {}
                row[f"links_{when}"] = None if edge is None else int(edge.get("links", 0))
                row[f"bandwidth_{when}_Bps"] = None if edge is None else float(edge.get("bandwidth", 0.0))
            row["lost_gpu"] = c.is_node and c.nodes[0] in self.lost_gpus
            rows.append(row)
        names = ("change", "action", "part", "u", "v", "factor", "links_before", "links_after",
                 "bandwidth_before_Bps", "bandwidth_after_Bps", "lost_gpu")
        return tidy_records({name: [r[name] for r in rows] for name in names}) if rows else []


def failed_fabric(G: nx.DiGraph, changes: Iterable[Failure]) -> object:
    """The fabric with ``changes`` (:class:`Failure` s) applied, validated; TopologyError if it is
    no fabric."""
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


def apply_failures(G: nx.DiGraph, fail: str | Failure | Iterable[str | Failure] = (),
                   degrade: str | Failure | Iterable[str | Failure] = ()) -> WhatIf:
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
        H = failed_fabric(G, changes)
    except TopologyError as err:
        raise FabricDisconnectedError(f"failing {_describe(changes)} disconnects the fabric: {err}") from err
    lost = tuple(n for n in topo.gpus(G) if n in failed_parts)
    if changes:  # the name says what was changed: "DGX-1V (fail gpu0-gpu3:1)"
        label = ", ".join(("degrade " if c.factor is not None else "fail ") + str(c) for c in changes)
        H.graph["name"] = f"{G.graph.get('name', 'fabric')} ({label})"
    return WhatIf(G, H, tuple(changes), lost)


# ------------------------------------------------------------------------------ components
def components(G: nx.DiGraph, fail_each: str, gpus: GpuIds = None) -> tuple:
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
        raise WhatIfError(f"fail_each={brief_repr(fail_each)}: expected one of {', '.join(FAIL_EACH)}")
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
        has = [kind for kind in FAIL_EACH if kind == "gpu" or any(
            True for _ in (((u, v) for u, v, k in G.edges(data="kind") if k == "nvlink") if kind == "nvlink"
                           else topo.nodes_of_kind(G, kind)))]
        raise WhatIfError(f"{G.graph.get('name', 'the fabric')} has no {fail_each} to fail: "
                          f"expected fail_each= one of the parts it has ({', '.join(has)})")
    return found
