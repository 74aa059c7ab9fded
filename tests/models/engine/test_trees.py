"""NCCL's trees (models.engine.nccl.trees): chains, the double binary tree, their join.

Known answers are derived by hand from NVIDIA/nccl v2.27.7-1 src/graph/trees.cc (the derivation is in the
comments); invariants are checked with hypothesis over many rank counts.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.engine.nccl.trees import (
    TREE_PATTERNS, BinaryTree, TreeError, binary_tree, btree_links, double_binary_tree,
    intra_chain, nccl_tree_depth, rank_tree,
)
from topo.errors import DgxTopoError


def check_tree(up, children, nranks, root):
    """Invariant checker: a rooted tree spanning 0..nranks-1, links consistent both ways.

    Returns the depth (edges on the longest root-to-leaf path).
    """
    assert len(up) == nranks
    assert [r for r in range(nranks) if up[r] is None] == [root]
    seen_as_child = [c for r in range(nranks) for c in children(r)]
    assert sorted(seen_as_child) == sorted(set(range(nranks)) - {root})   # each non-root once
    for r in range(nranks):
        for c in children(r):
            assert up[c] == r
    depth = {root: 0}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for child in children(node):
            assert child not in depth          # no cycle
            depth[child] = depth[node] + 1
            queue.append(child)
    assert len(depth) == nranks                # connected
    return max(depth.values())


def expected_root(tree_index, nranks):
    """NVIDIA/nccl v2.27.7-1 src/graph/trees.cc: tree 0 rooted at 0; tree 1 is the mirror (root n-1) for even n and
    the shift by one (root 1) for odd n (rank 0 when n = 1)."""
    if tree_index == 0 or nranks == 1:
        return 0
    return nranks - 1 if nranks % 2 == 0 else 1


# ================================================================== known answers
def test_btree_known_answer_12_ranks():
    """n = 12: the root's child is 16 >> 1 = 8 (16 = first power of two >= 12). Rank 8
    (bit 8): up = 0 | 16 = 16 >= 12 -> 8 ^ 8 = 0; children 8 - 4 = 4 and 8 + 4 = 12, out of
    range, halved to 8 + 2 = 10. Rank 10 (bit 2): up = 8 | 4 = 12 -> 10 ^ 2 = 8; children 9,
    11. Rank 4: up = 0 | 8 = 8; children 2, 6. Odd ranks are leaves."""
    t = binary_tree(12)
    assert t.root == 0 and t.children(0) == (8,)
    assert t.children(8) == (4, 10) and t.children(4) == (2, 6) and t.children(10) == (9, 11)
    assert t.children(2) == (1, 3) and t.children(6) == (5, 7)
    assert all(t.children(r) == () for r in range(1, 12, 2))
    assert t.depth == 4
    assert btree_links(12, 11) == (10, None, None)


def test_dtree_known_answer_13_ranks_shift():
    """n = 13 (odd): tree 0 has 0 -> 8, 8 -> (4, 12), 12 -> (10) (12 + 2 = 14 and 12 + 1 = 13
    are out of range). Tree 1 shifts every label by one: root 1 -> 9, 9 -> (5, 0), 0 -> (11)."""
    dt = double_binary_tree(13)
    t0, t1 = dt.trees
    assert dt.transform == "shift"
    assert t0.children(8) == (4, 12) and t0.children(12) == (10,)
    assert t1.root == 1 and t1.children(1) == (9,) and t1.children(9) == (5, 0)
    assert t1.children(0) == (11,)


def test_dtree_known_answer_8_ranks_mirror():
    """n = 8 (even): tree 0 is 0 -> 4 -> (2, 6) -> (1, 3), (5, 7); tree 1 maps r -> 7 - r."""
    t0, t1 = double_binary_tree(8).trees
    assert [t0.up[r] for r in range(8)] == [None, 2, 4, 2, 0, 6, 4, 6]
    assert [t1.up[r] for r in range(8)] == [1, 3, 1, 7, 5, 3, 5, None]
    assert t1.children(3) == (5, 1)          # slots keep their roles under the mirror


@pytest.mark.parametrize("nranks, expected", [(1, (None, None, None)), (2, (None, None, 1)),
                                              (3, (None, None, 2)), (16, (None, None, 8)),
                                              (17, (None, None, 16))])
def test_root_links(nranks, expected):
    assert btree_links(nranks, 0) == expected


def test_single_rank():
    dt = double_binary_tree(1)
    for t in dt.trees:
        assert (t.root, t.depth, t.children(0), t.up) == (0, 0, (), (None,))


# ===================================================================== invariants
# Every rank count up to 130 (both parities, every power-of-two boundary up to 128), the
# boundaries around 256 ... 2048, and random counts up to 3000 (the tree is O(n) to check, so
# a few hundred random large n cost seconds and find nothing the exhaustive part does not).
_SMALL_RANKS = list(range(1, 131))
_BOUNDARY_RANKS = [n + d for n in (256, 512, 1024, 2048) for d in (-1, 0, 1)] + [3000]


def _check_double_binary_tree(nranks):
    dt = double_binary_tree(nranks)
    assert dt.transform == ("mirror" if nranks % 2 == 0 else "shift")
    depths = []
    for index, t in enumerate(dt.trees):
        assert t.root == expected_root(index, nranks)
        assert len(t.down0) == len(t.down1) == nranks
        depths.append(check_tree(t.up, t.children, nranks, t.root))
        assert t.depth == depths[-1]
        assert all(len(t.children(r)) <= 2 for r in range(nranks))
    # Depth is ceil(log2 n), ncclGetBtree in NVIDIA/nccl v2.27.7-1 src/graph/trees.cc.
    assert depths[0] == depths[1] == (nranks - 1).bit_length()
    t0, t1 = dt.trees
    # Tree 0: children straddle their parent (d0 = rank - low, d1 = rank + low); leaves are
    # the odd ranks.
    for r in range(nranks):
        if t0.down0[r] is not None:
            assert t0.down0[r] < r
        if t0.down1[r] is not None:
            assert t0.down1[r] > r
    if nranks > 1:
        assert t0.leaves == frozenset(range(1, nranks, 2))
    # "Every node is an interior node in at most one of the two trees" (4.2): holds for even n;
    # for odd n >= 3 rank 0 (tree 0's root) also forwards in tree 1, and only rank 0 does.
    both = t0.interior & t1.interior
    if nranks % 2 == 0 or nranks == 1:
        assert both == frozenset()
    else:
        assert both == frozenset({0})
    assert (t0.interior - {t0.root}) & (t1.interior - {t1.root}) == frozenset()


def test_double_binary_tree_invariants_every_small_and_boundary_count():
    for nranks in _SMALL_RANKS + _BOUNDARY_RANKS:
        _check_double_binary_tree(nranks)


@settings(max_examples=25, deadline=None)
@given(st.integers(131, 3000))
def test_double_binary_tree_invariants(nranks):
    _check_double_binary_tree(nranks)


def test_btree_links_agree_with_binary_tree_on_every_rank_of_small_counts():
    for nranks in _SMALL_RANKS + _BOUNDARY_RANKS[:3]:
        t = binary_tree(nranks)
        assert [btree_links(nranks, r) for r in range(nranks)] == list(zip(t.up, t.down0, t.down1))


# Every (count, rank) with count <= 130 or 255 ... 257 is checked above; here random ranks
# of other counts.
@settings(max_examples=40, deadline=None)
@given(st.integers(131, 2000).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_btree_links_agree_with_binary_tree(args):
    nranks, rank = args
    t = binary_tree(nranks)
    assert btree_links(nranks, rank) == (t.up[rank], t.down0[rank], t.down1[rank])


@pytest.mark.parametrize("nnodes", [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 100])
def test_nccl_depth_formula_versus_the_built_tree(nnodes):
    """4.2: NCCL's depth uses log2i (floor); the built tree is ceil(log2) deep, so they agree
    for powers of two only."""
    ppn = 8
    built = ppn - 1 + binary_tree(nnodes).depth
    formula = nccl_tree_depth(ppn * nnodes, nnodes)
    power_of_two = nnodes & (nnodes - 1) == 0
    assert formula == built if power_of_two else formula == built - 1


# ========================================================================== chains
@pytest.mark.parametrize("pattern, expected", [
    ("tree", (5, 5, 5)), ("balanced_tree", (5, 7, 5)), ("split_tree", (5, 7, 7))])
def test_chain_attachment_points(pattern, expected):
    """4.1: parent on intra[0]; child0 on intra[0] for TREE, else intra[1]; child1 on
    intra[1] for SPLIT_TREE, else intra[0]."""
    c = intra_chain([5, 7, 6, 4], pattern)
    assert (c.to_parent, c.to_child0, c.to_child1) == expected


def test_chain_links():
    c = intra_chain([5, 7, 6, 4])
    assert [c.up(r) for r in (5, 7, 6, 4)] == [None, 5, 7, 6]
    assert [c.down(r) for r in (5, 7, 6, 4)] == [7, 6, 4, None]
    assert c.depth == 3 and c.pattern == "balanced_tree"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.order = (1,)


def test_one_gpu_chain():
    c = intra_chain([3], "tree")
    assert (c.up(3), c.down(3), c.to_parent, c.to_child0, c.to_child1) == (None, None, 3, 3, 3)


@pytest.mark.parametrize("order, pattern, match", [
    ([], "tree", "empty chain"), ([1, 1], "tree", "repeated"), ([0, 1], "ring", "tree pattern"),
    ([0], "balanced_tree", "needs at least 2 GPUs"), ([0], "split_tree", "needs at least 2"),
    ([0, -1], "tree", "integers >= 0"), ([0, "1"], "tree", "integers >= 0"),
    ([True, 2], "tree", "integers >= 0"),
])
def test_chain_errors(order, pattern, match):
    with pytest.raises(TreeError, match=match):
        intra_chain(order, pattern)


def test_chain_rank_not_in_chain():
    with pytest.raises(TreeError, match=r"rank 9 is not in this chain: expected one of \[0, 1\]"):
        intra_chain([0, 1]).up(9)


# ============================================================= chains + inter tree
@st.composite
def chains_and_tree(draw):
    nnodes = draw(st.integers(1, 40))
    ppn = draw(st.integers(1, 8))
    pattern = "tree" if ppn == 1 else draw(st.sampled_from(TREE_PATTERNS))
    ranks = list(range(nnodes * ppn))
    order = draw(st.permutations(ranks))
    chains = [intra_chain(order[n * ppn:(n + 1) * ppn], pattern) for n in range(nnodes)]
    tree = double_binary_tree(nnodes).trees[draw(st.integers(0, 1))]
    return chains, tree, ppn, pattern


# 100 examples: the pattern x tree-index x ppn space is small (3 x 2 x 8), and the
# known answer above pins one case exactly.
@settings(max_examples=100, deadline=None)
@given(chains_and_tree())
def test_rank_tree_invariants(args):
    chains, tree, ppn, pattern = args
    t = rank_tree(chains, tree)
    nranks = len(chains) * ppn
    assert t.root == chains[tree.root].order[0]
    depth = check_tree(t.up, lambda r: t.down[r], nranks, t.root)
    assert t.depth == depth
    assert max(len(d) for d in t.down) <= 3          # NCCL_MAX_TREE_ARITY
    for chain in chains:                             # chains are kept inside each node
        for a, b in zip(chain.order, chain.order[1:]):
            assert t.up[b] == a
    for node, chain in enumerate(chains):            # one up-link per node, to its parent node
        parent = tree.up[node]
        if parent is not None:
            assert t.up[chain.to_parent] in chains[parent].order
    if pattern == "tree":
        assert t.depth == ppn - 1 + tree.depth
    else:
        assert ppn - 1 + tree.depth <= t.depth <= ppn - 1 + 2 * tree.depth


def test_rank_tree_balanced_known_answer():
    """4 nodes x 2 GPUs, balanced pattern, tree 0 (0 -> 2 -> (1, 3)): node 2's child 0 (node 1)
    attaches to its intra[1], child 1 (node 3) to its intra[0]."""
    chains = [intra_chain([2 * n, 2 * n + 1]) for n in range(4)]
    t = rank_tree(chains, binary_tree(4))
    assert t.up[4] == 0                    # node 2 is node 0's down1 -> node 0's intra[0]
    assert t.up[2] == 5                    # node 1 is node 2's down0 -> node 2's intra[1]
    assert t.up[6] == 4                    # node 3 is node 2's down1 -> node 2's intra[0]
    assert t.down[4] == (5, 6) and t.down[5] == (2,)
    assert t.depth == 4


@pytest.mark.parametrize("make, match", [
    (lambda: rank_tree([intra_chain([0, 1])], binary_tree(2)), "one chain per node"),
    (lambda: rank_tree([intra_chain([0, 1], "tree"), intra_chain([2, 3])], binary_tree(2)),
     "mix patterns"),
    (lambda: rank_tree([intra_chain([0, 1]), intra_chain([2, 4])], binary_tree(2)),
     "ranks 0 to 3 once each"),
    (lambda: rank_tree([intra_chain([0, 1]), intra_chain([1, 2])], binary_tree(2)),
     "ranks 0 to 3 once each"),
    (lambda: rank_tree([intra_chain([0, 1])], "tree"), "must be a BinaryTree"),
    (lambda: rank_tree([[0, 1]], binary_tree(1)), "Chain objects"),
])
def test_rank_tree_errors(make, match):
    with pytest.raises(TreeError, match=match):
        make()


@pytest.mark.parametrize("make, match", [
    (lambda: btree_links(0, 0), "nranks must be an integer >= 1"),
    (lambda: btree_links(4, 4), "rank must be an integer from 0 to 3"),
    (lambda: btree_links(4, -1), "rank must be"),
    (lambda: btree_links(4, True), "rank must be"),
    (lambda: binary_tree(2.0), "nranks"),
    (lambda: double_binary_tree(True), "nranks"),
    (lambda: double_binary_tree(-3), "nranks"),
    (lambda: nccl_tree_depth(4, 8), "nnodes must be from 1 to nranks"),
    (lambda: nccl_tree_depth(4, 0), "nranks must be"),
])
def test_tree_errors(make, match):
    with pytest.raises(TreeError, match=match):
        make()
    assert issubclass(TreeError, DgxTopoError)


def test_trees_are_frozen():
    t = binary_tree(4)
    assert isinstance(t, BinaryTree)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.root = 1
