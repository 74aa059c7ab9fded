"""THE GPU-set key: which GPU sets of a fabric give the same answer, so that one is computed.

Two GPU sets are *equivalent* when a symmetry of the fabric maps one onto the other; a model
whose answer depends only on the fabric's structure then gives both the same answer, and
computes it once. Everything in :mod:`models` that shares work between GPU sets uses the keys of
this module, held by :class:`models.engine.fabric.PreparedFabric` (``fabric.symmetry``); the
graph-level primitives are :func:`topo.interchangeable_gpus` (GPUs that swap freely) and
:func:`topo.gpu_automorphisms` (maps that move GPUs).

**The key** (:class:`GpuSymmetry`): within a class of interchangeable GPUs every permutation is
an automorphism, and an automorphism maps classes onto classes. NCCL ranks a communicator's GPUs
in GPU order and its search works in that order, so the key keeps it: the classes of the set's
GPUs in rank order (the *word* it picks from the classes along the GPU order), the smallest over
the automorphisms found that keep the set's rank order, and the rank of a root GPU. Two sets with
one key are mapped onto each other rank by rank by an automorphism. (A key by the number of GPUs
in each class alone would merge {gpu0, gpu5} with {gpu1, gpu4} where 0 and 4, 1 and 5 are alike,
whose rank 0 differs; and sendrecv's ring over a set depends on its order.) An automorphism
search that stopped early only leaves some equivalent sets with different keys (more work, never
a wrong answer).

**What the symmetry is of** must be what the model reads, and nothing less:

* :meth:`FabricSymmetry.nccl` keys NCCL's estimates. On one host it is the symmetry of the
  *support* of NCCL's paths between the fabric's GPUs (the edges its channels can cross, NVB
  relays included): links no path uses cannot change an estimate. The old planner rule (on
  NVSwitch hosts, NVLink edges only and no automorphisms) is wrong where a GPU has lost its
  NVLinks: its paths then cross the PCIe tree, which the rule ignored, so it keyed GPU 3 with
  GPU 0 (one PCIe switch) and with GPU 4 (the other socket) alike.
* On a cluster (:class:`ClusterSymmetry`), the hosts whose swap is an automorphism of the whole
  cluster (:func:`host_classes`: the same parts and links, the same network ports) are
  interchangeable, and within a host the symmetry of the host with its network ports pinned
  applies: a set is keyed by the (host class, local key) of its first host, then those of its
  other hosts sorted. The first host is not swapped with the others: NCCL's model takes the
  channels and their NICs from the first node's search, so a set is not its mirror image.
  With ``units`` (the planner's key, :meth:`FabricSymmetry.nccl`), classes of hosts that swap
  whole with the switches they alone are cabled to (:func:`class_units`: the leaves of a fat
  tree) are one shape too: a set is then its hosts per class, whatever the classes (on
  128 DGX H100 under 32 leaves, two GPUs on two leaves are one estimate, not 32 x 31).
* :meth:`FabricSymmetry.graph` keys the bounds: the whole graph (or its edges of some kinds).
* :meth:`FabricSymmetry.both` keys a section that shows both (the report's bound vs NCCL).

Counting before enumerating: :meth:`GpuSymmetry.count` counts the words of k-GPU sets (a
dynamic programme, an upper bound of the classes where automorphisms merge some), and
:meth:`GpuSymmetry.set_classes` refuses at once, with :class:`SymmetryLimitError` naming the
keyword, work beyond its ``max_classes``.

Examples
--------
>>> import topo
>>> from models.engine.fabric import PreparedFabric
>>> sym = PreparedFabric(topo.dgx2()).symmetry.nccl("all_reduce")
>>> [len(c) for c in sym.classes], sym.key(["gpu0", "gpu1"]) == sym.key(["gpu0", "gpu7"])
([8, 8], True)
>>> sym.count(2), len(sym.set_classes([2]))
(3, 3)
"""

from __future__ import annotations

import itertools
from types import MappingProxyType

import networkx as nx
import numpy as np
from networkx.algorithms.isomorphism import DiGraphMatcher

from topo.errors import LimitError
from topo.schema import gpus as gpu_nodes_of
from topo.symmetry import colour_refinement, gpu_automorphisms, interchangeable_gpus, interchangeable_nodes

__all__ = ["GpuSymmetry", "ClusterSymmetry", "path_support", "FabricSymmetry", "FabricClasses", "SymmetryLimitError",
           "host_classes", "class_units", "host_copies", "host_places", "interchangeable_nodes", "MAX_SET_CLASSES", "FABRIC_NODE_KEYS", "FABRIC_EDGE_KEYS"]

#: Default limit of the GPU-set classes one call enumerates (:meth:`GpuSymmetry.set_classes`,
#: keyword ``max_classes``): each class is an estimate or a bound to compute.
MAX_SET_CLASSES = 5000


class SymmetryLimitError(LimitError):
    """More GPU-set classes than the caller's limit (a :class:`topo.errors.LimitError`: its
    ``keyword`` names the argument that raises it, which the CLI maps to its option)."""


class GpuSymmetry:
    """The symmetry of one scope: classes of interchangeable GPUs and automorphisms.

    Parameters
    ----------
    S : networkx.DiGraph
        The scope: a fabric, its support, a host with pinned ports.
    edge_kinds : iterable of str, optional
        Only edges of these kinds make GPUs distinct (bounds over NVLink only).

    Attributes
    ----------
    gpus : tuple
        The scope's GPU nodes, in GPU order.
    classes : tuple of tuple
        Interchangeable GPUs, in GPU order.
    """

    def __init__(self, S=None, *, edge_kinds=None, _parts=None):
        self._graph = S
        self._map_rows = None
        if _parts is not None:
            self.gpus, self.classes, self._maps = _parts
        else:
            self.gpus = tuple(gpu_nodes_of(S))
            self.classes = tuple(tuple(c) for c in interchangeable_gpus(S, edge_kinds=edge_kinds))
            self._maps = None  # found on first use (P2P needs the classes alone)
        self.class_of = MappingProxyType({g: c for c, members in enumerate(self.classes) for g in members})
        self.position = MappingProxyType({g: i for i, g in enumerate(self.gpus)})
        # The classes along the GPU order: a set's key is the word it picks from it.
        self.word = tuple(self.class_of[g] for g in self.gpus)

    @property
    def maps(self) -> tuple:
        """Automorphisms as GPU maps, identity first (:func:`topo.gpu_automorphisms`)."""
        if self._maps is None:
            self._maps = tuple(gpu_automorphisms(self._graph))
        elif callable(self._maps):  # a meet's: the maps both keep, found on first use
            self._maps = tuple(self._maps())
        return self._maps

    def key(self, nodes, root=None) -> tuple:
        """The canonical key of a GPU set (and of its root GPU, for broadcast and reduce).

        The classes of the set's GPUs in rank (GPU) order, the smallest over the automorphisms
        that keep the set's rank order; with the root's rank. Two sets with one key are mapped
        onto each other, rank by rank, by an automorphism: NCCL's search, which works in rank
        order, and rooted or ordered patterns (sendrecv's ring) see the same problem.
        """
        position = self.position
        ranked = sorted(nodes, key=position.__getitem__)
        rank = None if root is None else ranked.index(root)
        if len(self.classes) == 1:
            # Every GPU of one class: every image's word is all zeros, so no map can lower it
            # (the automorphisms are not searched: on GB300 NVL72 that search costs seconds).
            return (0,) * len(ranked), rank
        best = None
        for m in self.maps:
            image = [m[g] for g in ranked]
            if any(position[x] > position[y] for x, y in zip(image, image[1:])):
                continue  # not rank-preserving on this set
            candidate = tuple(self.class_of[g] for g in image)
            if best is None or candidate < best:
                best = candidate
        return best, rank

    def keys(self, sets) -> list:
        """:meth:`key` of many GPU sets at once (no root), vectorised over the sets and the
        automorphisms: the same keys, for the sets of :func:`models.predict.collectives.subsets`.

        Parameters
        ----------
        sets : sequence of sequence of int
            GPU sets of one size as positions in :attr:`gpus`, each in ascending order (rank
            order), as ``itertools.combinations`` gives them.

        Returns
        -------
        list of tuple
            ``key(set)`` for every set, in order.
        """
        sets = np.asarray(sets, dtype=np.intp)
        if sets.size == 0 or len(self.classes) == 1:
            return [self.key([self.gpus[i] for i in row]) for row in sets]
        maps = self._map_array()  # (automorphisms, GPUs): the image position of each position
        word = np.asarray(self.word, dtype=np.intp)
        rows, k = sets.shape
        out: list = []
        # Blocks of sets, so that the (automorphisms x sets x k) images stay small.
        block = max(1, 2_000_000 // (len(maps) * k))
        for start in range(0, rows, block):
            image = maps[:, sets[start:start + block]]
            # An automorphism counts for a set when it keeps the set's rank order.
            alive = np.all(image[:, :, 1:] > image[:, :, :-1], axis=2)
            words = word[image]
            # The smallest word over the automorphisms that count, column by column (identity
            # first, which always counts): lexicographic order.
            best = np.empty(words.shape[1:], dtype=np.intp)
            for column in range(k):
                values = np.where(alive, words[:, :, column], len(self.classes))
                best[:, column] = low = values.min(axis=0)
                alive &= values == low
            out += [(tuple(row), None) for row in best.tolist()]
        return out

    def _map_array(self) -> np.ndarray:
        """:attr:`maps` as an array of image positions, one row per automorphism."""
        if self._map_rows is None:
            position = self.position
            self._map_rows = np.array([[position[m[g]] for g in self.gpus] for m in self.maps], dtype=np.intp)
        return self._map_rows

    def count(self, k: int) -> int:
        """Words of k GPUs (distinct class sequences along the GPU order): the number of classes
        of k-GPU sets without automorphisms (exact where there are none, else an upper bound),
        computed without listing them."""
        word = self.word
        # ways[j]: distinct words of length j in the prefix so far; seen[c]: ways before the
        # previous occurrence of class c (its words would be counted twice).
        ways = [1] + [0] * k
        before: dict = {}
        for c in word:
            new = ways[:]
            for j in range(1, k + 1):
                new[j] += ways[j - 1] - before.get(c, [0] * (k + 1))[j - 1]
            before[c] = ways
            ways = new
        return ways[k]

    def meet(self, other: "GpuSymmetry") -> "GpuSymmetry":
        """The symmetries two scopes share (a key of both answers): GPUs interchangeable in both,
        automorphisms of both."""
        classes: dict = {}
        for g in self.gpus:
            classes.setdefault((self.class_of[g], other.class_of[g]), []).append(g)
        # Found when a key needs them: none does where every GPU is of one class.
        return GpuSymmetry(_parts=(self.gpus, tuple(tuple(c) for c in classes.values()),
                                   lambda: [m for m in self.maps if m in other.maps]))

    def set_classes(self, sizes, *, max_classes: int | None = MAX_SET_CLASSES) -> dict:
        """Every GPU set of the given sizes, grouped into classes, without listing the sets.

        Returns
        -------
        dict
            Representative (GPU positions in :attr:`gpus`, the class's first set in
            ``itertools.combinations`` order) -> number of sets in the class, by size.

        Raises
        ------
        SymmetryLimitError
            When the words (:meth:`count`) exceed ``max_classes``, before any is listed.
        """
        sizes = list(sizes)
        total = sum(self.count(k) for k in sizes)
        if max_classes is not None and total > max_classes:
            what = (f"GPU sets of {', '.join(map(str, sizes))} GPUs fall into up to {total:,} symmetry "
                    f"classes ({len(self.gpus)} GPUs in {len(self.classes)} classes of interchangeable GPUs)")
            raise SymmetryLimitError(what, keyword="max_classes", size=total, limit=max_classes,
                                     message=f"{what}, more than max_classes={max_classes:,}: raise max_classes")
        out: dict = {}
        for k in sizes:
            found: dict = {}
            for rep, sets in _words(self.word, k):
                key = self.key([self.gpus[i] for i in rep])
                if key in found:
                    first, n = found[key]
                    found[key] = (min(first, rep), n + sets)
                else:
                    found[key] = (rep, sets)
            out.update(sorted(found.values()))
        return out


def _words(word, k):
    """``(first positions, number of position sets)`` of every distinct length-k subsequence of
    ``word``: the first (earliest) embedding is the smallest set in combinations order."""
    n = len(word)
    nxt = [dict() for _ in range(n + 1)]  # nxt[i][c]: first position >= i of class c
    for i in range(n - 1, -1, -1):
        nxt[i] = dict(nxt[i + 1])
        nxt[i][word[i]] = i
    symbols = sorted(set(word))

    def embeddings(sub):
        ways = [1] * (n + 1)  # ways[i]: embeddings of the empty suffix in word[i:]
        for c in reversed(sub):
            new = [0] * (n + 1)
            for i in range(n - 1, -1, -1):
                new[i] = new[i + 1] + (ways[i + 1] if word[i] == c else 0)
            ways = new
        return ways[0]

    def grow(start, prefix, positions):
        if len(prefix) == k:
            yield tuple(positions), embeddings(prefix)
            return
        for c in symbols:
            i = nxt[start].get(c)
            if i is not None and n - i >= k - len(prefix):
                yield from grow(i + 1, prefix + [c], positions + [i])

    yield from grow(0, [], [])


# ------------------------------------------------------------------------------ hosts
def host_places(G) -> dict:
    """Each host node's place within its host: its name without the dotted prefix every node of
    its host shares (``h3.gpu0`` -> ``gpu0`` in a cluster of DGX, ``r1.t2.gpu0`` -> ``gpu0`` in
    a cluster of GB200 NVL72 racks, whose hosts are the trays; ``gpu0`` stays ``gpu0`` in a lone
    DGX). Whole name components only, and never the last, so a host's places are as distinct as
    its names (a dot inside an imported name, ``0000:07:00.0``, strips nothing it does not share).

    Returns
    -------
    dict
        Node (with a non-negative ``host``) -> its place (str).
    """
    names_of: dict = {}
    for n, h in G.nodes(data="host"):
        if isinstance(h, int) and h >= 0:
            names_of.setdefault(h, []).append(n)
    places: dict = {}
    for nodes in names_of.values():
        parts = [str(n).split(".") for n in nodes]
        first, keep = parts[0], min(len(p) for p in parts) - 1
        common = 0
        while common < keep and all(p[common] == first[common] for p in parts):
            common += 1
        for n, p in zip(nodes, parts):
            places[n] = ".".join(p[common:])
    return places


def _attributes(data, own_domains=frozenset()) -> tuple:
    """A node's or edge's attributes as a comparable key, without the labels of where it sits:
    ``host``, and an ``nvlink_domain`` that only its host has (a cluster's hosts are numbered
    domains; the rack of a GB200 NVL72 is one domain shared by its trays, which stays)."""
    return tuple(sorted((k, "own" if k == "nvlink_domain" and v in own_domains else repr(v))
                        for k, v in data.items() if k != "host"))


def host_classes(G, marked=frozenset(), *, outside: str = "node") -> list:
    """The hosts of ``G`` grouped into classes whose swaps are automorphisms of the whole fabric.

    A host is its nodes with a non-negative ``host``; two hosts swap when they hold the same
    places (:func:`host_places`) with the same attributes (but ``host``) and the same edges, to the
    same places of their own host or to the same node outside (a network switch, a rack's
    NVSwitch chip), and the same nodes are ``marked`` (a job's GPUs). Linear in the edges.
    With ``outside="kind"`` an edge to a node outside the host is compared by that node's kind
    only: the hosts are copies of each other, as one host's channel search sees it (the NIC
    cabled to another leaf switch carries the same port), not swaps of the whole fabric.

    Returns
    -------
    list of list of int
        Host numbers, each class in host order, classes by first host.
    """
    host_of = {n: h for n, h in G.nodes(data="host") if isinstance(h, int) and h >= 0}
    nodes_of: dict = {}
    hosts_of_domain: dict = {}
    for n, h in host_of.items():
        nodes_of.setdefault(h, []).append(n)
    for n, domain in G.nodes(data="nvlink_domain"):
        if domain is not None:
            hosts_of_domain.setdefault(domain, set()).add(host_of.get(n))
    own = frozenset(d for d, hosts in hosts_of_domain.items() if len(hosts) == 1 and None not in hosts)
    places = {n: ("local", place) for n, place in host_places(G).items()}
    # The key of an edge's attributes, by their items: the hosts' copies of a link are alike.
    edge_keys: dict = {}

    def edge_key(d):
        items = tuple(d.items())
        try:
            return edge_keys[items]
        except KeyError:
            key = edge_keys[items] = _attributes(d)
            return key
        except TypeError:  # a value that is not hashable
            return _attributes(d)

    signature: dict = {}
    for h, nodes in nodes_of.items():
        parts = []
        for n in nodes:
            def far(w):
                if host_of.get(w) == h:
                    return places[w]
                return ("outside", str(w) if outside == "node" else G.nodes[w].get("kind"))
            out = sorted((far(w), edge_key(d)) for w, d in G.adj[n].items())
            into = sorted((far(w), edge_key(d)) for w, d in G.pred[n].items())
            parts.append((places[n][1], _attributes(G.nodes[n], own), n in marked, tuple(out), tuple(into)))
        signature.setdefault(tuple(sorted(parts)), []).append(h)
    return sorted((sorted(hosts) for hosts in signature.values()), key=lambda c: c[0])


def host_copies(G):
    """The hosts of ``G`` grouped into classes of identical copies: a list of classes, each a
    list of ``{place: node}`` per host (in host order), or None.

    Hosts joined only through NVSwitch chips of no host (the 18 compute trays of a GB200 NVL72
    on the rack's switch chips, host -1) that are copies of one another can be permuted: every
    permutation within a class of identical hosts is an automorphism of the fabric, even when
    another host differs (a what-if that damaged one tray). A pair's figures then depend only
    on its GPUs' places within their hosts, their hosts' classes and whether the hosts are the
    same, so the GPUs of two hosts per class give the whole matrix (on an NVL72, 28 pairs
    instead of 5,112). A node's place in its host is its ``(kind, index)``. Checked exactly, in
    time linear in the edges: the same places, the same attributes (but ``host``) and the same
    edges (to the same places or the same shared nodes, with the same attributes). None when
    there is nothing to gain (fewer than 3 hosts, no two hosts alike) or the hosts are joined
    otherwise (a cluster's network).
    """
    hosts: dict = {}
    place: dict = {}
    for n, data in G.nodes(data=True):
        h = data.get("host")
        if isinstance(h, int) and h >= 0:
            local = hosts.setdefault(h, {})
            key = place[n] = (data.get("kind"), data.get("index"))
            if key in local:
                return None
            local[key] = n
    if len(hosts) < 3:  # nothing to gain over the interchangeable classes
        return None
    order = [hosts[h] for h in sorted(hosts)]
    host_of = {n: i for i, local in enumerate(order) for n in local.values()}
    kind = G.nodes
    for n in host_of:
        if any(v not in host_of and kind[v]["kind"] != "nvswitch" for v in _neighbours(G, n)):
            return None

    def same(x0, x, r, k):
        """Whether node x of host k is node x0 of host r under the map of places."""
        if {**kind[x0], "host": None} != {**kind[x], "host": None}:
            return False
        for adjacency in (G.adj, G.pred):
            out0, out = adjacency[x0], adjacency[x]
            if len(out0) != len(out):
                return False
            for y0, e0 in out0.items():
                h = host_of.get(y0)
                if h is None:
                    y = y0
                elif h == r:
                    y = order[k][place[y0]]
                else:
                    return False  # an edge between two hosts
                if out.get(y) != e0:
                    return False
        return True

    classes: list = []  # per class: the host numbers (positions in ``order``)
    for k, local in enumerate(order):
        for members in classes:
            r = members[0]
            if local.keys() == order[r].keys() and all(same(order[r][m], local[m], r, k) for m in local):
                members.append(k)
                break
        else:
            classes.append([k])
    if all(len(members) == 1 for members in classes):
        return None
    return [[order[k] for k in members] for members in classes]


def _neighbours(G, n):
    """Successors and predecessors of ``n``."""
    yield from G.adj[n]
    yield from G.pred[n]


def class_units(G, classes, marked=frozenset()) -> list:
    """The host classes of ``G`` (:func:`host_classes`) grouped into *units* whose classes swap
    whole, each with the nodes outside the hosts it alone is cabled to: on a fat tree, the leaf
    switches and the hosts under each (two DGX H100 on one leaf are then one shape wherever the
    leaf is).

    Two classes ``a`` and ``b`` (the same number of hosts) swap when the map that exchanges
    their hosts in host order (node by place, :func:`host_places`) and the outside nodes their
    nodes are cabled to (matched link by link, unambiguously) is an automorphism of ``G``: every
    edge touching a moved node has its image, with the same attributes, and every moved node its
    image's attributes (but ``host``, ``index`` and a host's own ``nvlink_domain``; ``marked``
    nodes stay marked). Checked exactly, for the first class of a unit against each other one:
    those swaps generate every permutation of the unit's classes. Anything ambiguous (a node
    with outside neighbours alike) leaves the classes apart (more work, never a wrong answer).

    Returns
    -------
    list of list of int
        Class numbers (positions in ``classes``), each unit in class order.
    """
    host_of = {n: h for n, h in G.nodes(data="host") if isinstance(h, int) and h >= 0}
    nodes_of: dict = {}
    for n, place in host_places(G).items():
        nodes_of.setdefault(host_of[n], {})[place] = n
    domains: dict = {}
    for n, domain in G.nodes(data="nvlink_domain"):
        if domain is not None:
            domains.setdefault(domain, set()).add(host_of.get(n))
    own = frozenset(d for d, hosts in domains.items() if len(hosts) == 1 and None not in hosts)

    def attributes(n):
        data = G.nodes[n]
        drop = ("host",) if n in host_of else ("host", "index")
        return _attributes({k: v for k, v in data.items() if k not in drop}, own), n in marked

    def outside(n, adjacency):
        found = [(repr(sorted(d.items())), G.nodes[w].get("kind"), w) for w, d in adjacency[n].items()
                 if w not in host_of]
        found.sort(key=lambda x: x[:2])
        return found

    def swap(a, b):
        ha, hb = classes[a], classes[b]
        if len(ha) != len(hb):
            return None
        pi: dict = {}
        for x, y in zip(ha, hb):
            if nodes_of[x].keys() != nodes_of[y].keys():
                return None
            for place, n in nodes_of[x].items():
                m = nodes_of[y][place]
                pi[n], pi[m] = m, n
        hosts = dict(pi)
        for n, m in hosts.items():
            for adjacency in (G.adj, G.pred):
                mine, theirs = outside(n, adjacency), outside(m, adjacency)
                if [x[:2] for x in mine] != [x[:2] for x in theirs] \
                        or len({x[:2] for x in mine}) != len(mine):
                    return None  # unlike, or alike neighbours: no unambiguous match
                for (_, _, w), (_, _, v) in zip(mine, theirs):
                    if pi.get(w, v) != v or pi.get(v, w) != w:
                        return None
                    pi[w], pi[v] = v, w
        for u, image in pi.items():
            if attributes(u) != attributes(image):
                return None
            for adjacency in (G.adj, G.pred):
                there = adjacency[image]
                for v, d in adjacency[u].items():
                    if there.get(pi.get(v, v)) != d:
                        return None
        return pi

    units: list = []
    placed: set = set()
    for a in range(len(classes)):
        if a in placed:
            continue
        unit = [a]
        for b in range(a + 1, len(classes)):
            if b not in placed and swap(a, b) is not None:
                unit.append(b)
                placed.add(b)
        units.append(unit)
    return units


class ClusterSymmetry:
    """The GPU-set key of a cluster: hosts that swap (:func:`host_classes`), and within a host
    the symmetry of the host with its outside neighbours pinned (kept in place).

    Attributes
    ----------
    host_class : dict
        Host number -> class number.
    unit : dict
        Class number -> the first class of its unit (``units=True``: classes that swap whole
        with the switches they alone are cabled to, :func:`class_units`), else itself.
    """

    def __init__(self, G, marked=frozenset(), system=None, *, units=False):
        self.G = G
        classes = host_classes(G, marked)
        self.host_class = {h: c for c, hosts in enumerate(classes) for h in hosts}
        # Class -> the first class of its unit (:func:`class_units`; itself without ``units``).
        self.unit = {c: members[0] for members in (class_units(G, classes, marked) if units else
                                                   [[c] for c in range(len(classes))]) for c in members}
        self._representative = [hosts[0] for hosts in classes]
        self._local: dict = {}
        self._names: dict = {}
        self.system = system
        self._inside: dict = {}  # class -> (symmetry of the paths, place -> GPU) or None
        self.gpus = tuple(gpu_nodes_of(G))
        self.host = {g: G.nodes[g]["host"] for g in self.gpus}
        places = host_places(G)
        self.place = {g: places[g] for g in self.gpus if g in places}  # GPU -> its place in its host

    def inside(self, c: int) -> tuple | None:
        """The symmetry of NCCL's paths between the GPUs of a host of class ``c`` (its
        representative), the key of a communicator within one host (NCCL searches it without
        NICs, so where they are cabled does not matter), and the representative's GPUs by
        place. None without the fabric's NCCL view, or when the paths leave the host (the trays
        of a GB200 NVL72 meet on the rack's switches)."""
        if c not in self._inside:
            inside = None
            if self.system is not None:
                G, host = self.G, self._representative[c]
                gpus = [g for g in self.gpus if self.host[g] == host]
                S = path_support(G, self.system, gpus)
                if all(G.nodes[n].get("host") == host for n in S):
                    inside = (GpuSymmetry(S), {self.place[g]: g for g in gpus})
            self._inside[c] = inside
        return self._inside[c]

    def local(self, c: int) -> GpuSymmetry:
        """The symmetry within a host of class ``c`` (its representative, ports pinned)."""
        if c not in self._local:
            G, host = self.G, self._representative[c]
            nodes = [n for n, h in G.nodes(data="host") if h == host]
            outside = {w for n in nodes for w in (*G.adj[n], *G.pred[n])} - set(nodes)
            H = G.subgraph([*nodes, *outside]).copy()
            for w in outside:  # pinned: no automorphism moves a node outside the host
                H.nodes[w]["model"] = f"pinned {w}"
            H.remove_edges_from([(u, v) for u, v in list(H.edges) if u in outside and v in outside])
            self._local[c] = GpuSymmetry(H)
            self._names[c] = {self.place[g]: g for g in gpu_nodes_of(H)}
        return self._local[c]

    def keys(self, sets) -> list:
        """:meth:`key` of many GPU sets given as positions in :attr:`gpus` (as
        :meth:`GpuSymmetry.keys`)."""
        gpus = self.gpus
        return [self.key([gpus[i] for i in row]) for row in sets]

    def key(self, nodes, root=None) -> tuple:
        """``("hosts", first host's (unit, local key, root), the (local key, root) of the others
        of its class, sorted, then per other class the sorted (unit, local key, root) of its
        hosts, sorted)``. The first host stays first: NCCL's model takes the channels and their
        NICs from the first node's search. A class is a host's place up to the fabric's swaps (on
        a fat tree its leaf switch): two sets with one key have their hosts under the same number
        of classes, as many in each, and a swap of classes within units maps one onto the other.
        Without ``units`` every class is its own unit."""
        by_host: dict = {}
        for g in nodes:
            by_host.setdefault(self.host[g], []).append(g)
        if len(by_host) == 1:
            (h, members), = by_host.items()
            c = self.unit[self.host_class[h]]
            inside = self.inside(c)
            if inside is not None:  # one host: the symmetry of its paths, NICs unpinned
                symmetry, place = inside
                mapped = [place[self.place[g]] for g in members]
                r = place[self.place[root]] if root is not None else None
                return ("inside", c, symmetry.key(mapped, r))
        groups: dict = {}
        first = None
        for h, members in sorted(by_host.items()):
            c = self.host_class[h]
            u = self.unit[c]
            local = self.local(u)
            names = self._names[u]
            mapped = [names[self.place[g]] for g in members]
            r = names[self.place[root]] if root is not None and root in members else None
            shape = (u, local.key(mapped, r), r is not None)
            if first is None:
                first, first_class = shape, c
            else:
                groups.setdefault(c, []).append(shape)
        same = tuple(sorted(groups.pop(first_class, ())))
        return ("hosts", first, same) + tuple(sorted(tuple(sorted(g)) for g in groups.values()))


class FabricSymmetry:
    """Every GPU-set key of one fabric, each built on first use (module docstring).

    Parameters
    ----------
    G : networkx.DiGraph
    system : models.engine.nccl.system.NcclSystem or callable
        NCCL's view of ``G`` (its hops give the support of NCCL's paths), or a function of no
        argument that returns it, called when a key first needs it (a prepared fabric's view,
        built on first use: the graph's own keys never read it).
    """

    def __init__(self, G, system):
        self.G = G
        self._system = system
        self._scopes: dict = {}

    @property
    def system(self):
        """NCCL's view of ``G`` (:class:`models.engine.nccl.system.NcclSystem`)."""
        if callable(self._system):
            self._system = self._system()
        return self._system

    def _scope(self, key, build):
        if key not in self._scopes:
            self._scopes[key] = build()
        return self._scopes[key]

    @property
    def hosts(self) -> int:
        return len({self.G.nodes[g]["host"] for g in gpu_nodes_of(self.G)})

    def nccl(self, collective: str | None = None, *, network: bool = True, units: bool = False):
        """The key of NCCL's estimates: :class:`ClusterSymmetry` for a collective of NCCL's
        channels on a cluster (``network=True``), else the symmetry of the support of NCCL's
        paths (point-to-point collectives: alltoall, sendrecv). ``units``: on a cluster, classes
        of hosts that swap whole with their switches are one shape too (:func:`class_units`)."""
        if self.hosts > 1 and network:
            if units:
                return self._scope("cluster units", lambda: ClusterSymmetry(self.G, system=self.system, units=True))
            return self._scope("cluster", lambda: ClusterSymmetry(self.G, system=self.system))
        return self._scope("support", lambda: GpuSymmetry(self._support()))

    def graph(self, edge_kinds=None) -> GpuSymmetry:
        """The key of answers that read the whole graph (or its edges of ``edge_kinds``): the
        bounds."""
        kinds = None if edge_kinds is None else tuple(sorted(edge_kinds))
        return self._scope(("graph", kinds), lambda: GpuSymmetry(self.G, edge_kinds=kinds))

    def both(self, edge_kinds=None) -> GpuSymmetry:
        """The key of a pair of answers, a bound and NCCL's estimate (single host)."""
        kinds = None if edge_kinds is None else tuple(sorted(edge_kinds))
        return self._scope(("both", kinds), lambda: self.graph(kinds).meet(self.nccl(network=False)))

    def _support(self):
        """The fabric restricted to the edges NCCL's paths between its GPUs use."""
        return path_support(self.G, self.system, gpu_nodes_of(self.G))


def path_support(G, system, gpus) -> nx.DiGraph:
    """``G`` restricted to the edges NCCL's paths between ``gpus`` use (both directions), and
    those GPUs: every path of ``system`` (an NcclSystem of ``G``) between two of them, direct or
    through an NVB relay among them."""
    members = set(gpus)
    support = set()
    for a, b in itertools.permutations(gpus, 2):
        for (u, v), _ in system.hop(a, b, ())[1]:  # PCIe / switch / direct
            support.add((u, v))
        for (u, v), _ in system.hop(a, b, members)[1]:  # with NVB relays
            support.add((u, v))
    S = G.edge_subgraph(support | {(v, u) for u, v in support}).copy()
    S.add_nodes_from((g, G.nodes[g]) for g in gpus)
    return S


# ------------------------------------------------------------------------------ whole fabrics
#: What an isomorphism of two fabrics must keep: what the models read from nodes and edges (not
#: names, indices or labels of where a part sits, which the edges already say).
FABRIC_NODE_KEYS = ("kind", "host", "model", "compute_capability", "memory_bandwidth", "ports")
FABRIC_EDGE_KEYS = ("kind", "links", "bandwidth", "latency", "link", "host_bridge")


class FabricClasses:
    """Fabrics with marked nodes grouped into isomorphism classes: colour refinement
    (:func:`topo.symmetry.colour_refinement`) buckets them, VF2 confirms, so a class is computed
    once (the failed fabrics of a what-if sweep: the 102 NVLink bundles of a DGX-2 fall into 5
    classes). A node's label is its :data:`FABRIC_NODE_KEYS` and its mark (a job's GPU, a pinned
    node outside a host); an edge's, its :data:`FABRIC_EDGE_KEYS` and its mark (a failed link).
    """

    def __init__(self):
        self._buckets: dict = {}  # certificate -> class indices
        self._labelled: list = []  # class index -> labelled representative

    def __len__(self) -> int:
        return len(self._labelled)

    def add(self, H, marks=None, edge_marks=None) -> tuple:
        """``(class index, mapping)`` of fabric ``H``: the mapping takes the nodes of ``H`` to
        those of the class's representative (None for a new class).

        Parameters
        ----------
        H : networkx.DiGraph
        marks : dict, optional
            Node -> mark (any hashable, compared as its repr); unmarked nodes are None.
        edge_marks : dict, optional
            (u, v) -> mark.
        """
        marks = marks or {}
        edge_marks = edge_marks or {}

        def node_label(n, d):
            return tuple(d.get(k) for k in FABRIC_NODE_KEYS), marks.get(n)

        def edge_label(u, v, d):
            return tuple(d.get(k) for k in FABRIC_EDGE_KEYS), edge_marks.get((u, v))

        colour = colour_refinement(H, node_label, edge_label)
        labels = {n: repr(node_label(n, d)) for n, d in H.nodes(data=True)}
        certificate = (tuple(sorted(colour.values())), tuple(sorted(labels.values())))
        bucket = self._buckets.setdefault(certificate, [])
        L = nx.DiGraph()
        L.add_nodes_from((n, {"label": (colour[n], labels[n])}) for n in H)
        L.add_edges_from((u, v, {"label": repr(edge_label(u, v, d))}) for u, v, d in H.edges(data=True))
        for index in bucket:
            matcher = DiGraphMatcher(L, self._labelled[index], node_match=_same_label,
                                     edge_match=_same_label)
            if matcher.is_isomorphic():
                return index, dict(matcher.mapping)
        self._labelled.append(L)
        bucket.append(len(self._labelled) - 1)
        return len(self._labelled) - 1, None


def _same_label(a, b) -> bool:
    return a["label"] == b["label"]
