"""NCCL's trees: the intra-node chain of a tree channel and the inter-node double binary tree.

Written from NVIDIA/nccl v2.27.7-1 src/graph/trees.cc (NVIDIA/nccl src/graph/trees.cc,
src/graph/connect.cc, v2.27.7), not from NCCL's code.

Inside a node a tree channel is a **chain** of the local GPUs in the channel's order
(:func:`intra_chain`). Across nodes NCCL builds a **double binary tree** over node indices
(:func:`double_binary_tree`): tree 0 is a binary tree rooted at node 0 whose leaves are the
odd nodes; tree 1 is its mirror (``r -> n-1-r``) when the node count is even, or tree 0
shifted by one node (``r -> r+1 mod n``) when it is odd. Channel ``c`` uses tree 0 and its copy
``c + nChannels`` tree 1, so each node forwards (is interior) in one tree and only receives
(is a leaf) in the other, halving the per-node load. :func:`rank_tree` joins the chains and
one binary tree into the tree over every rank that a channel runs.

Ranks are integers; a missing neighbour is ``None`` (NCCL's logs print ``-1``).

References
----------
.. [1] NVIDIA/nccl v2.27.7-1 src/graph/trees.cc (``ncclTopoPreset``: chains, treeToParent/treeToChild0/1),
   (``ncclGetBtree``, ``ncclGetDtree``, depth, ``NCCL_MAX_TREE_ARITY`` = 3), 3.1 (one GPU per
   node turns every tree pattern into ``TREE``).

Examples
--------
>>> from models.engine.nccl.trees import double_binary_tree
>>> dt = double_binary_tree(8)
>>> t0, t1 = dt.trees
>>> t0.root, t0.children(0), t0.children(4), t0.depth
(0, (4,), (2, 6), 3)
>>> dt.transform, t1.root, t1.children(7), t1.children(3)
('mirror', 7, (3,), (5, 1))
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from topo.errors import DgxTopoError

from ..results import tidy_records

__all__ = [
    "TREE_PATTERNS", "TreeError", "BinaryTree", "DoubleBinaryTree", "Chain", "RankTree",
    "btree_links", "binary_tree", "double_binary_tree", "intra_chain", "rank_tree",
    "nccl_tree_depth",
]

#: Tree patterns of NCCL's tree graph (NCCL_TOPO_PATTERN_BALANCED_TREE, TREE, SPLIT_TREE).
TREE_PATTERNS = ("balanced_tree", "tree", "split_tree")


class TreeError(DgxTopoError):
    """Bad input to a tree builder."""


def _check_count(nranks) -> int:
    if isinstance(nranks, bool) or not isinstance(nranks, int) or nranks < 1:
        raise TreeError(f"nranks must be an integer >= 1, received {nranks!r}")
    return nranks


def btree_links(nranks: int, rank: int) -> tuple:
    """``ncclGetBtree``: parent and children of ``rank`` in tree 0 over ``nranks`` ranks.

    ``bit`` is the lowest set bit of ``rank``. The parent is ``(rank ^ bit) | (bit << 1)``, or
    ``rank ^ bit`` when that is out of range. The children are ``rank - bit/2`` and
    ``rank + bit/2``, the second halving its offset until it is in range. Rank 0 is the root;
    its only child is the largest power of two below ``nranks``
    (NVIDIA/nccl v2.27.7-1 src/graph/trees.cc).

    Parameters
    ----------
    nranks : int
        Ranks (nodes) in the tree, >= 1.
    rank : int
        0 <= rank < nranks.

    Returns
    -------
    (up, down0, down1) : tuple of int or None
        ``down0 < rank < down1`` when present.

    Raises
    ------
    TreeError
        For a bad ``nranks`` or ``rank``.

    Examples
    --------
    >>> btree_links(12, 0), btree_links(12, 8), btree_links(12, 10)
    ((None, None, 8), (0, 4, 10), (8, 9, 11))
    """
    _check_count(nranks)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < nranks:
        raise TreeError(f"rank must be an integer from 0 to {nranks - 1}, received {rank!r}")
    if rank == 0:
        # The first power of two >= nranks; its half is the root's only child. With one rank
        # the half is 0 (the root itself), so there is no child.
        bit = 1 << (nranks - 1).bit_length()
        return None, None, (bit >> 1) if nranks > 1 else None
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    low = bit >> 1
    if low == 0:
        return up, None, None
    down0 = rank - low
    while low and rank + low >= nranks:
        low >>= 1
    return up, down0, (rank + low) if low else None


@dataclass(frozen=True, slots=True)
class BinaryTree:
    """A tree over ranks ``0 .. nranks-1``, as NCCL's up/down0/down1 arrays.

    Attributes
    ----------
    nranks : int
    root : int
    up : tuple of int or None
        Parent of each rank (None for the root).
    down0, down1 : tuple of int or None
        The two child slots of each rank (NCCL's ``d0``/``d1``).
    depth : int
        Edges on the longest root-to-leaf path (0 for one rank).
    """

    nranks: int
    root: int
    up: tuple
    down0: tuple
    down1: tuple
    depth: int

    def children(self, rank: int) -> tuple:
        """Children of ``rank`` in slot order (down0, down1), without the empty slots."""
        return tuple(c for c in (self.down0[rank], self.down1[rank]) if c is not None)

    @property
    def interior(self) -> frozenset:
        """Ranks that have at least one child (forward data), root included."""
        return frozenset(r for r in range(self.nranks) if self.children(r))

    @property
    def leaves(self) -> frozenset:
        """Ranks without children."""
        return frozenset(range(self.nranks)) - self.interior

    def to_records(self) -> list:
        """Tidy rows, one per rank (:mod:`models.engine.results`): ``rank``, its parent ``up``
        and child slots ``down0``, ``down1`` (None where empty, NCCL's -1), ``depth`` (the
        tree's).

        Examples
        --------
        >>> [(r["rank"], r["up"], r["down0"], r["down1"]) for r in double_binary_tree(3).trees[0].to_records()]
        [(0, None, None, 2), (1, 2, None, None), (2, 0, 1, None)]
        """
        return tidy_records({"rank": list(range(self.nranks)), "up": list(self.up), "down0": list(self.down0),
                             "down1": list(self.down1), "depth": self.depth})


def _depth(root, children_of, nranks) -> int:
    depth = {root: 0}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for child in children_of(node):
            depth[child] = depth[node] + 1
            queue.append(child)
    return max(depth.values()) if nranks else 0


def _tree(nranks: int, links) -> BinaryTree:
    up, down0, down1 = zip(*links)
    root = up.index(None)

    def children(rank):
        return [c for c in (down0[rank], down1[rank]) if c is not None]

    return BinaryTree(nranks, root, tuple(up), tuple(down0), tuple(down1),
                      _depth(root, children, nranks))


def binary_tree(nranks: int) -> BinaryTree:
    """Tree 0 of NCCL's double binary tree over ``nranks`` ranks (nodes), rooted at 0.

    Examples
    --------
    >>> t = binary_tree(6)
    >>> t.up, t.depth
    ((None, 2, 4, 2, 0, 4), 3)
    """
    _check_count(nranks)
    return _tree(nranks, [btree_links(nranks, r) for r in range(nranks)])


@dataclass(frozen=True, slots=True)
class DoubleBinaryTree:
    """NCCL's two complementary inter-node trees (``ncclGetDtree``).

    Attributes
    ----------
    nranks : int
    trees : tuple of BinaryTree
        Tree 0 (channels ``c < nChannels``) and tree 1 (their copies).
    transform : str
        ``"mirror"`` (even ``nranks``: rank r of tree 1 plays rank ``n-1-r`` of tree 0) or
        ``"shift"`` (odd: rank r plays rank ``r-1 mod n``).
    """

    nranks: int
    trees: tuple
    transform: str

    def to_records(self) -> list:
        """Tidy rows, one per tree and rank: ``tree`` (0 or 1), then :meth:`BinaryTree.to_records`'
        columns, and the ``transform`` that makes tree 1 of tree 0."""
        return [{"tree": t, **row, "transform": self.transform}
                for t, tree in enumerate(self.trees) for row in tree.to_records()]


def double_binary_tree(nranks: int) -> DoubleBinaryTree:
    """NCCL's double binary tree over ``nranks`` ranks (nodes).

    Tree 1 is tree 0 relabelled: mirrored (``r -> n-1-r``, root ``n-1``) for even ``nranks``,
    shifted by one (``r -> r+1 mod n``, root 1) for odd ``nranks`` (NVIDIA/nccl v2.27.7-1 src/graph/trees.cc). The
    child slots keep their roles under the relabelling (so in a mirrored tree ``down0`` is the
    higher rank); the note does not say how NCCL orders them, which only matters for which
    local GPU a child attaches to under the balanced pattern.

    With an even count, the ranks with children in tree 0 (the even ranks) and in tree 1
    (the odd ranks) are disjoint. With an odd count this holds for every rank except rank
    0, the root of tree 0, which also has a child in tree 1 (it plays rank ``n-1`` there);
    counting only non-root forwarding ranks, the two sets are disjoint for every count.

    Parameters
    ----------
    nranks : int
        Nodes, >= 1.

    Returns
    -------
    DoubleBinaryTree

    Examples
    --------
    >>> dt = double_binary_tree(5)
    >>> dt.transform, dt.trees[1].root, dt.trees[1].up
    ('shift', 1, (1, None, 3, 0, 3))
    """
    _check_count(nranks)
    tree0 = binary_tree(nranks)
    if nranks % 2 == 0:
        def relabel(r):
            return None if r is None else nranks - 1 - r

        def source(r):
            return nranks - 1 - r
        transform = "mirror"
    else:
        def relabel(r):
            return None if r is None else (r + 1) % nranks

        def source(r):
            return (r - 1 + nranks) % nranks
        transform = "shift"
    links = []
    for rank in range(nranks):
        s = source(rank)
        links.append((relabel(tree0.up[s]), relabel(tree0.down0[s]), relabel(tree0.down1[s])))
    return DoubleBinaryTree(nranks, (tree0, _tree(nranks, links)), transform)


@dataclass(frozen=True, slots=True)
class Chain:
    """One tree channel inside one node: the local GPUs as a chain (``ncclTopoPreset``).

    Attributes
    ----------
    order : tuple of int
        The channel's GPU order ``treeIntra[0..n-1]`` (global ranks).
    pattern : str
        The tree graph's pattern, one of :data:`TREE_PATTERNS`.
    """

    order: tuple
    pattern: str

    def up(self, rank: int) -> int | None:
        """``intra[i-1]`` for ``rank = intra[i]``, None for the first GPU."""
        i = self._index(rank)
        return self.order[i - 1] if i > 0 else None

    def down(self, rank: int) -> int | None:
        """``intra[i+1]`` for ``rank = intra[i]``, None for the last GPU."""
        i = self._index(rank)
        return self.order[i + 1] if i + 1 < len(self.order) else None

    def _index(self, rank):
        try:
            return self.order.index(rank)
        except ValueError:
            raise TreeError(f"rank {rank!r} is not in this chain: expected one of "
                            f"{list(self.order)}") from None

    def to_records(self) -> list:
        """Tidy rows, one per GPU of the chain in its order: ``position`` (0 first), ``rank``,
        its ``up`` and ``down`` in the chain (None at the ends) and the ``pattern``.

        Examples
        --------
        >>> [(r["rank"], r["up"], r["down"]) for r in Chain((4, 5, 6), "tree").to_records()]
        [(4, None, 5), (5, 4, 6), (6, 5, None)]
        """
        n = len(self.order)
        return tidy_records({"position": list(range(n)), "rank": list(self.order),
                             "up": [None] + list(self.order[:-1]), "down": list(self.order[1:]) + [None],
                             "pattern": self.pattern}) if n else []

    @property
    def to_parent(self) -> int:
        """The GPU connected to the parent node: ``intra[0]``."""
        return self.order[0]

    @property
    def to_child0(self) -> int:
        """The GPU connected to child 0: ``intra[0]`` for TREE, else ``intra[1]``."""
        return self.order[0 if self.pattern == "tree" else 1]

    @property
    def to_child1(self) -> int:
        """The GPU connected to child 1: ``intra[1]`` for SPLIT_TREE, else ``intra[0]``."""
        return self.order[1 if self.pattern == "split_tree" else 0]

    @property
    def depth(self) -> int:
        """Edges from the first to the last GPU: ``len(order) - 1``."""
        return len(self.order) - 1


def intra_chain(order: Sequence[int], pattern: str = "balanced_tree") -> Chain:
    """The chain of one tree channel on one node.

    Parameters
    ----------
    order : sequence of int
        The channel's GPUs as ranks, in the order the search found them.
    pattern : str
        ``"balanced_tree"`` (NCCL's default tree graph), ``"tree"`` or ``"split_tree"``.

    Returns
    -------
    Chain

    Raises
    ------
    TreeError
        For an empty or repeated order, an unknown pattern, or a balanced/split pattern on
        one GPU (NCCL's search uses TREE then, NVIDIA/nccl v2.27.7-1 src/graph/search.cc).

    Examples
    --------
    >>> c = intra_chain([0, 3, 2, 1])
    >>> c.up(0), c.down(0), c.up(1), c.down(1)
    (None, 3, 2, None)
    >>> c.to_parent, c.to_child0, c.to_child1
    (0, 3, 0)
    """
    order = tuple(order)
    if pattern not in TREE_PATTERNS:
        raise TreeError(f"unknown tree pattern {pattern!r}: expected one of {list(TREE_PATTERNS)}")
    if not order:
        raise TreeError("empty chain: expected at least one rank")
    if any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in order):
        raise TreeError(f"chain ranks must be integers >= 0, received {list(order)}")
    if len(set(order)) != len(order):
        raise TreeError(f"rank repeated in chain {list(order)}: expected distinct ranks")
    if len(order) == 1 and pattern != "tree":
        raise TreeError(f"pattern {pattern!r} needs at least 2 GPUs per node; with one GPU "
                        f"NCCL's search uses 'tree' (NVIDIA/nccl v2.27.7-1 src/graph/search.cc)")
    return Chain(order, pattern)


@dataclass(frozen=True, slots=True)
class RankTree:
    """The tree over every rank that one channel runs: chains joined by a binary tree.

    Attributes
    ----------
    nranks : int
    root : int
        The first GPU of the root node's chain.
    up : tuple of int or None
        Parent of each rank.
    down : tuple of tuple of int
        Children of each rank (at most 3: ``NCCL_MAX_TREE_ARITY``).
    depth : int
        Edges on the longest root-to-leaf path.
    """

    nranks: int
    root: int
    up: tuple
    down: tuple
    depth: int

    def to_records(self) -> list:
        """Tidy rows, one per rank: ``rank``, its parent ``up`` (None at the root), its
        children ``down0``, ``down1``, ``down2`` (at most ``NCCL_MAX_TREE_ARITY`` = 3; None where
        fewer), and the tree's ``root`` and ``depth``."""
        slots = [[d[k] if k < len(d) else None for d in self.down] for k in range(3)]
        return tidy_records({"rank": list(range(self.nranks)), "up": list(self.up), "down0": slots[0],
                             "down1": slots[1], "down2": slots[2], "root": self.root, "depth": self.depth})


def rank_tree(chains: Sequence[Chain], tree: BinaryTree) -> RankTree:
    """Join one chain per node with one inter-node tree (``connectTrees``).

    Inside node n the chain gives up/down. The chain's ``to_parent`` GPU takes as parent the
    GPU of the parent node that serves this node's slot (``to_child0`` if the node is the
    parent's ``down0``, ``to_child1`` if it is ``down1``), and that GPU takes it as a child
    (NVIDIA/nccl v2.27.7-1 src/graph/trees.cc).

    Parameters
    ----------
    chains : sequence of Chain
        One per node, node index = position; all with the same pattern, together holding
        ranks ``0 .. nranks-1`` once each.
    tree : BinaryTree
        The inter-node tree over ``len(chains)`` nodes (one of :func:`double_binary_tree`).

    Returns
    -------
    RankTree

    Raises
    ------
    TreeError
        For a node count that does not match, mixed patterns, or ranks that are not
        ``0 .. nranks-1`` once each.

    Examples
    --------
    Two nodes of 4 GPUs, tree 0, the TREE pattern: depth = (4 - 1) + 1.

    >>> from models.engine.nccl.trees import intra_chain, rank_tree, double_binary_tree
    >>> chains = [intra_chain([0, 1, 2, 3], "tree"), intra_chain([4, 5, 6, 7], "tree")]
    >>> t = rank_tree(chains, double_binary_tree(2).trees[0])
    >>> t.root, t.down[0], t.up[4], t.depth
    (0, (1, 4), 0, 4)
    """
    chains = tuple(chains)
    if not isinstance(tree, BinaryTree):
        raise TreeError(f"tree must be a BinaryTree, received {type(tree).__name__}")
    if len(chains) != tree.nranks:
        raise TreeError(f"expected one chain per node of the tree ({tree.nranks}), received "
                        f"{len(chains)}")
    if not all(isinstance(c, Chain) for c in chains):
        raise TreeError("chains must be Chain objects (see intra_chain)")
    patterns = {c.pattern for c in chains}
    if len(patterns) > 1:
        raise TreeError(f"chains mix patterns {sorted(patterns)}: expected one tree pattern")
    ranks = [r for c in chains for r in c.order]
    nranks = len(ranks)
    if sorted(ranks) != list(range(nranks)):
        raise TreeError(f"chains must hold ranks 0 to {nranks - 1} once each, received "
                        f"{sorted(ranks)}")
    up = [None] * nranks
    down = [[] for _ in range(nranks)]
    for chain in chains:
        for a, b in zip(chain.order, chain.order[1:]):
            up[b] = a
            down[a].append(b)
    for node, chain in enumerate(chains):
        parent = tree.up[node]
        if parent is None:
            continue
        parent_chain = chains[parent]
        attach = parent_chain.to_child0 if tree.down0[parent] == node else parent_chain.to_child1
        up[chain.to_parent] = attach
        down[attach].append(chain.to_parent)
    root = chains[tree.root].to_parent
    depth = _depth(root, lambda r: down[r], nranks)
    return RankTree(nranks, root, tuple(up), tuple(tuple(d) for d in down), depth)


def nccl_tree_depth(nranks: int, nnodes: int) -> int:
    """NCCL's tree depth formula, ``nRanks/nNodes - 1 + log2i(nNodes)``
    (NVIDIA/nccl v2.27.7-1 src/graph/trees.cc).

    This is the depth NCCL's latency model charges (5.5: ``2 x ((ppn-1) x intraLat +
    log2i(nNodes) x interLat)``). ``log2i`` rounds down, while the binary tree of
    :func:`binary_tree` has depth ``ceil(log2(nNodes))``, so the formula is one short of the
    built tree for node counts that are not powers of two.

    Examples
    --------
    >>> nccl_tree_depth(32, 4), nccl_tree_depth(24, 3)
    (9, 8)
    >>> binary_tree(3).depth
    2
    """
    _check_count(nranks)
    _check_count(nnodes)
    if nnodes > nranks:
        raise TreeError(f"nnodes must be from 1 to nranks ({nranks}), received {nnodes}")
    return nranks // nnodes - 1 + (nnodes.bit_length() - 1)
