"""Failed and degraded parts as the command line writes them: specs -> a transformed fabric.

The what-if options of ``dgxtopo`` (``--fail SPEC``, ``--degrade SPEC``) name parts of a
fabric by their node ids and are applied with :mod:`topo.transform`, so every model run
afterwards reads the changed capacities from the graph itself.

Grammar
-------
``--fail``
    ``A-B``    the whole bundle of links between nodes A and B (an NVLink pair such as
               ``gpu0-gpu3``, both directions; any directly linked pair is accepted);
    ``A-B:K``  K physical links of that bundle (``gpu0-gpu3:1`` turns an NV2 pair into NV1);
    ``NODE``   a part and its links: ``nvswitch3``, ``mlx5_1``, ``gpu2``, ``pcie0``.
``--degrade``
    ``A-B=F``  the links between A and B run at F times their bandwidth, 0 < F <= 1
               (``gpu0-gpu3=0.5``); the link count is unchanged.

Node ids are the fabric's own (``topo --json`` lists the GPUs and NICs; clusters prefix
``h0.``). A node id containing ``-`` is read as a node when it is one; ``A-B`` must split
into two node ids in exactly one way. Failures are applied first, in the order given, then
degradations. A removed GPU leaves the others in place; GPU ids on the command line are
positions among the GPUs left, as CUDA would number the devices.

Errors are :class:`FailureSpecError` (a :class:`topo.errors.TransformError`) naming the spec
and what was expected; a change that leaves an invalid fabric (a GPU cut off) raises the
:class:`topo.errors.TopologyError` of :func:`topo.validate`.

Examples
--------
>>> import topo
>>> G = topo.dgx1v()
>>> H = apply_whatif(G, fail=["gpu0-gpu3:1"], degrade=["gpu0-gpu1=0.5"])
>>> H.edges["gpu0", "gpu3"]["links"], H.edges["gpu0", "gpu1"]["bandwidth"] / 1e9
(1, 12.5)
>>> H.graph["name"]
'DGX-1V (fail gpu0-gpu3:1; degrade gpu0-gpu1=0.5)'
>>> parse_failure(G, "nvswitch3")
Traceback (most recent call last):
...
models.failures.FailureSpecError: --fail 'nvswitch3': no node 'nvswitch3' in DGX-1V: expected NODE, A-B or A-B:K with node ids such as gpu0, mlx5_0, cpu0
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import networkx as nx

import topo
from topo.errors import TopologyError, TransformError

__all__ = ["FailureSpecError", "Failure", "Degradation", "parse_failure", "parse_degrade",
           "apply_failure", "apply_degradation", "apply_whatif", "FAIL_GRAMMAR", "DEGRADE_GRAMMAR"]

#: The grammars as help texts and messages state them.
FAIL_GRAMMAR = "NODE, A-B or A-B:K"
DEGRADE_GRAMMAR = "A-B=F with 0 < F <= 1"

_MAX_SPEC = 200  # longer specs are shown shortened in messages
_COUNT = re.compile(r"[0-9]{1,9}")


class FailureSpecError(TransformError):
    """A ``--fail`` or ``--degrade`` spec that is malformed or names no part of the fabric."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A parsed ``--fail`` spec.

    Attributes
    ----------
    spec : str
        The text as given.
    nodes : tuple of str
        One node (a failed part) or two (a failed bundle of links between them).
    links : int or None
        Physical links to remove from the bundle; None for the whole bundle or a node.
    """

    spec: str
    nodes: tuple
    links: int | None = None


@dataclass(frozen=True, slots=True)
class Degradation:
    """A parsed ``--degrade`` spec: the links between ``nodes`` run at ``factor`` x bandwidth."""

    spec: str
    nodes: tuple
    factor: float


def _show(spec) -> str:
    text = repr(spec)
    return text if len(text) <= _MAX_SPEC else text[:_MAX_SPEC // 2] + f"...' ({len(text)} characters)"


def _examples(G) -> str:
    """A few node ids of ``G``, GPUs and NICs first, for messages."""
    kinds = {"gpu": [], "nic": [], "other": []}
    for node, kind in G.nodes(data="kind"):
        kinds.get(kind, kinds["other"]).append(str(node))
    picked = kinds["gpu"][:1] + kinds["nic"][:1] + kinds["other"][:1]
    return ", ".join(picked) or "none"


def _name(G) -> str:
    return str(G.graph.get("name", "the fabric"))


def _pair(G, text: str, option: str, spec, grammar: str) -> tuple:
    """The two node ids ``text`` (``A-B``) names; exactly one split must fit."""
    splits = [(text[:i], text[i + 1:]) for i, ch in enumerate(text) if ch == "-"]
    fitting = [(a, b) for a, b in splits if a in G and b in G]
    if len(fitting) > 1:
        raise FailureSpecError(f"{option} {_show(spec)}: ambiguous, it splits into node pairs "
                               f"{', '.join(f'{a} and {b}' for a, b in fitting)}: expected exactly one")
    if not fitting:
        if not splits:
            raise FailureSpecError(f"{option} {_show(spec)}: expected {grammar}, received no '-' "
                                   f"between two node ids")
        missing = sorted({n for pair in splits for n in pair if n not in G})
        shown = ", ".join(repr(n) for n in missing[:3])
        raise FailureSpecError(f"{option} {_show(spec)}: no node {shown} in {_name(G)}: expected "
                               f"{grammar} with node ids such as {_examples(G)}")
    a, b = fitting[0]
    if a == b:
        raise FailureSpecError(f"{option} {_show(spec)}: a link from {a} to itself: expected two "
                               f"different nodes")
    if not (G.has_edge(a, b) and G.has_edge(b, a)):
        raise FailureSpecError(f"{option} {_show(spec)}: {a} and {b} are not directly linked in "
                               f"{_name(G)}: expected two nodes with links between them")
    return a, b


def parse_failure(G: nx.DiGraph, spec: str) -> Failure:
    """Read a ``--fail`` spec against the fabric it applies to.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric (not modified).
    spec : str
        ``NODE``, ``A-B`` or ``A-B:K`` (module docstring).

    Returns
    -------
    Failure

    Raises
    ------
    FailureSpecError
        For a malformed spec, an unknown node, two nodes without links between them, or a
        link count that is not 1 to the bundle's links.
    """
    option = "--fail"
    if not isinstance(spec, str) or not spec or spec != spec.strip():
        raise FailureSpecError(f"{option} {_show(spec)}: expected {FAIL_GRAMMAR} (node ids such as "
                               f"{_examples(G)}), without spaces")
    if spec in G:
        return Failure(spec, (spec,))
    text, count = spec, None
    if ":" in spec:
        text, _, count_text = spec.rpartition(":")
        if not _COUNT.fullmatch(count_text) or int(count_text) < 1:
            raise FailureSpecError(f"{option} {_show(spec)}: the link count {count_text!r} is not a "
                                   f"whole number >= 1: expected A-B:K such as gpu0-gpu3:1")
        count = int(count_text)
    if count is None and "-" not in text:
        raise FailureSpecError(f"{option} {_show(spec)}: no node {spec!r} in {_name(G)}: expected "
                               f"{FAIL_GRAMMAR} with node ids such as {_examples(G)}")
    a, b = _pair(G, text, option, spec, FAIL_GRAMMAR)
    if count is not None:
        links = min(G.edges[a, b].get("links", 1), G.edges[b, a].get("links", 1))
        if count > links:
            raise FailureSpecError(f"{option} {_show(spec)}: {a}-{b} has {links} link"
                                   f"{'s' if links != 1 else ''}: expected K from 1 to {links}")
    return Failure(spec, (a, b), count)


def parse_degrade(G: nx.DiGraph, spec: str) -> Degradation:
    """Read a ``--degrade`` spec (``A-B=F``, 0 < F <= 1) against its fabric.

    Raises
    ------
    FailureSpecError
        For a malformed spec, unknown nodes, nodes without links, or a factor that is not
        a number in (0, 1].
    """
    option = "--degrade"
    if not isinstance(spec, str) or "=" not in spec or spec != spec.strip():
        raise FailureSpecError(f"{option} {_show(spec)}: expected {DEGRADE_GRAMMAR}, such as "
                               f"gpu0-gpu3=0.5")
    text, _, factor_text = spec.rpartition("=")
    try:
        factor = float(factor_text) if len(factor_text) <= 40 else math.nan
    except ValueError:
        factor = math.nan
    if not (math.isfinite(factor) and 0 < factor <= 1) or factor_text != factor_text.strip():
        raise FailureSpecError(f"{option} {_show(spec)}: the factor {factor_text[:40]!r} is not a number "
                               f"in (0, 1]: expected {DEGRADE_GRAMMAR} (to remove links use --fail)")
    a, b = _pair(G, text, option, spec, DEGRADE_GRAMMAR)
    return Degradation(spec, (a, b), factor)


def apply_failure(G: nx.DiGraph, failure) -> nx.DiGraph:
    """A new fabric with one failure (a :class:`Failure` or its spec text) applied."""
    if not isinstance(failure, Failure):
        failure = parse_failure(G, failure)
    if len(failure.nodes) == 1:
        return topo.remove_nodes(G, failure.nodes)
    a, b = failure.nodes
    count = failure.links if failure.links is not None else G.edges[a, b]["links"]
    return topo.remove_links(G, a, b, count)


def apply_degradation(G: nx.DiGraph, degradation) -> nx.DiGraph:
    """A new fabric with one degradation (a :class:`Degradation` or its spec text) applied."""
    if not isinstance(degradation, Degradation):
        degradation = parse_degrade(G, degradation)
    a, b = degradation.nodes
    return topo.scale_links(G, a, b, degradation.factor)


def apply_whatif(G: nx.DiGraph, fail=(), degrade=()) -> nx.DiGraph:
    """``G`` with every failure, then every degradation, applied (each spec read against the
    fabric as the previous ones left it); ``G`` itself when there are none.

    The result's ``name`` says what was changed (``"DGX-1V (fail gpu0-gpu3)"``), so every
    table printed from it does; ``system`` is kept.

    Parameters
    ----------
    G : networkx.DiGraph
    fail : iterable of str or Failure
    degrade : iterable of str or Degradation

    Returns
    -------
    networkx.DiGraph
    """
    fail, degrade = list(fail or ()), list(degrade or ())
    if not fail and not degrade:
        return G
    H = G
    for option, items, apply in (("--fail", fail, apply_failure), ("--degrade", degrade, apply_degradation)):
        for item in items:
            try:
                H = apply(H, item)
            except FailureSpecError:
                raise
            except TopologyError as error:  # the change leaves an invalid fabric: say which change
                spec = getattr(item, "spec", item)
                raise type(error)(f"{option} {_show(spec)} leaves an invalid fabric: {error}") from None
    parts = []
    if fail:
        parts.append("fail " + ", ".join(f.spec if isinstance(f, Failure) else str(f) for f in fail))
    if degrade:
        parts.append("degrade " + ", ".join(d.spec if isinstance(d, Degradation) else str(d) for d in degrade))
    H = H.copy() if H is G else H
    H.graph["name"] = f"{_name(G)} ({'; '.join(parts)})"
    return H
