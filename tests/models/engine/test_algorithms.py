"""The algorithm seam (models.engine.nccl.algorithms): NCCL's algorithms as objects, the free
functions of the tuning model delegating to them, a user's own algorithm competing in the selection
with ties to the lower index, and the one Collective table the collective tuples read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models.engine.nccl as nccl
from models.engine.nccl.algorithms import (ALGORITHMS, NVLS, NVLS_TREE, PAT, RING, TREE, Algorithm, algorithm_set,
                                           resolve, serving)
from models.engine.nccl.communicator import BusBandwidth, Latency, LatencyTerm
from models.engine.nccl.pipelining import PATTERNS, PIPELINE_COLLECTIVES
from models.engine.nccl.tuning import (ChannelGraph, Communicator, NoAlgorithmError, UnknownAlgorithmError,
                                       applicability, bus_bandwidth, bus_to_alg_ratio, latency, select_algorithm,
                                       tune, tuning_table)
from models.engine.nccl.reasons import Cause, Why
from models.engine.nccltests import COLLECTIVES, NCCL_COLLECTIVES
from models.present.reasons_text import reason_text
from models.studies.bounds import BOUND_COLLECTIVES

G = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
NVLS_GRAPH = ChannelGraph(8, 40e9, "NVL", bw_inter=60e9, pattern="nvls", same_channels=False)
ONE_NODE = Communicator(8, G, G, 90, nvls=NVLS_GRAPH)
TWO_NODES = Communicator(16, G, G, 90, nnodes=2, nvls=NVLS_GRAPH)
ONE_PER_NODE = Communicator(4, G, G, 90, nnodes=4)


@dataclass(frozen=True)
class Fixed(Algorithm):
    """A user's schedule written from the interface alone: 1 TB/s of bus bandwidth after 200 us,
    for all_reduce only."""

    name: str = "fixed"
    index: int = 50
    collectives: frozenset = frozenset({"all_reduce"})

    def bus_bandwidth(self, collective, protocol, comm):
        return BusBandwidth(collective, self.name, protocol, 1, 1e12, "fixed", 1e12, (), 1e12)

    def latency(self, collective, protocol, comm):
        term = LatencyTerm("setup", 1, 200e-6)
        return Latency(collective, self.name, protocol, 0.0, (term,), term.value, "NVLINK", 0.0)


FIXED = Fixed()


def test_nccls_set_is_the_face_and_in_nccls_index_order():
    assert nccl.ALGORITHMS is ALGORITHMS
    assert [a.name for a in ALGORITHMS] == [a.name for a in (TREE, RING, NVLS, NVLS_TREE, PAT)]
    assert [a.index for a in ALGORITHMS] == [0, 1, 4, 5, 6]  # NCCL_ALGO_* (src/include/device.h)
    assert [a.nccl_name for a in ALGORITHMS] == ["Tree", "Ring", "NVLS", "NVLSTree", "PAT"]


@pytest.mark.parametrize("comm", [ONE_NODE, TWO_NODES, ONE_PER_NODE])
@pytest.mark.parametrize("collective", NCCL_COLLECTIVES)
def test_the_free_functions_are_the_objects_answers(comm, collective):
    for a in ALGORITHMS:
        for p in ("LL", "LL128", "Simple"):
            by_name, by_object = tune(collective, a.name, p, comm), tune(collective, a, p, comm)
            assert by_name == by_object
            assert applicability(collective, a, p, comm) == a.applies(collective, p, comm)
            if by_object.enabled:
                assert bus_bandwidth(collective, a.name, p, comm) == a.bus_bandwidth(collective, p, comm)
                assert latency(collective, a.name, p, comm) == a.latency(collective, p, comm)
        assert bus_to_alg_ratio(collective, a.name, comm.nranks, nnodes=comm.nnodes) == \
            a.bus_to_alg_ratio(collective, comm.nranks, comm.profile, comm.nnodes)


def test_a_users_algorithm_wins_where_faster_and_not_where_slower():
    sizes = [2**10, 2**30]
    nccl_choice = select_algorithm("all_reduce", sizes, ONE_NODE)
    mine = select_algorithm("all_reduce", sizes, ONE_NODE, algorithms=ALGORITHMS + (FIXED,))
    assert mine.algorithm.tolist() == [nccl_choice.algorithm[0], "fixed"]
    assert mine.time[0] == nccl_choice.time[0]
    assert mine.time[1] == pytest.approx(200e-6 + 2**30 / 1e12 / (8 / 14))  # its bus x the ring ratio
    # It serves only what it lists: broadcast stays NCCL's.
    assert select_algorithm("broadcast", 2**30, ONE_NODE, algorithms=ALGORITHMS + (FIXED,)).algorithm == "ring"
    assert FIXED.applies("broadcast", "Simple", ONE_NODE) == (False, Why(Cause.NOT_SERVED, algorithm="fixed",
                                                                         collective="broadcast"))
    assert reason_text(FIXED.applies("broadcast", "Simple", ONE_NODE)[1]) == "fixed does not run broadcast"
    assert [t.algorithm for t in tuning_table("all_reduce", ONE_NODE, algorithms=[FIXED, RING])][::3] == \
        ["ring", "fixed"]


def test_a_tie_goes_to_the_lower_index_whatever_the_order_given():
    twin = dataclasses.replace(RING, name="twin", index=100)
    first = dataclasses.replace(RING, name="first", index=-1)
    assert select_algorithm("all_reduce", 2**30, ONE_PER_NODE, algorithms=[twin, RING]).algorithm == "ring"
    assert select_algorithm("all_reduce", 2**30, ONE_PER_NODE, algorithms=[RING, first]).algorithm == "first"
    assert [a.name for a in algorithm_set([PAT, RING, TREE])] == ["tree", "ring", "pat"]


def test_names_and_sets_are_checked():
    assert resolve("Ring") is RING and resolve(FIXED) is FIXED
    with pytest.raises(UnknownAlgorithmError, match="expected one of \\['tree', 'ring'"):
        tune("all_reduce", "collnet", "Simple", ONE_NODE)
    for bad in ("ring", ["ring"], [], [RING, dataclasses.replace(TREE, name="ring")], None.__class__):
        with pytest.raises(UnknownAlgorithmError):
            algorithm_set(bad)
    with pytest.raises(NoAlgorithmError, match="matching algorithm=\\['tree', 'pat'\\]"):
        select_algorithm("broadcast", 8, ONE_NODE, algorithms=[PAT, TREE])
    with pytest.raises(NoAlgorithmError, match="matching algorithm='tree'"):
        select_algorithm("broadcast", 8, ONE_NODE, algorithms=[TREE])


def test_each_algorithm_names_the_graphs_it_runs_on():
    assert RING.graph(ONE_NODE) is G and TREE.graph(ONE_NODE) is G and PAT.graph(ONE_NODE) is G
    assert NVLS.graph(ONE_NODE) is NVLS_GRAPH and NVLS_TREE.graph(ONE_NODE) is NVLS_GRAPH
    assert NVLS.graph(Communicator(8, G, G, 90)) is None
    graphs = type("Graphs", (), {"ring": "R", "tree": None, "nvls": "N"})()
    assert [a.search(graphs) for a in ALGORITHMS] == [None, "R", "N", "N", None]
    assert [a.searched(graphs) for a in ALGORITHMS] == ["R"] * 5  # no tree searched: the ring's
    assert [a.network(graphs) for a in ALGORITHMS] == [("R", "tree"), ("R", "ring"), None, ("N", "tree"), None]
    assert [a.name for a in ALGORITHMS if a.pipelined] == ["tree", "ring"]
    assert [a.name for a in ALGORITHMS if a.multimem] == ["nvls", "nvls_tree"]


def test_one_collective_table():
    assert list(COLLECTIVES) == ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
                                 "sendrecv"]
    # NCCL's ncclFunc_t order (src/include/device.h).
    assert NCCL_COLLECTIVES == ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")
    assert PIPELINE_COLLECTIVES == NCCL_COLLECTIVES and BOUND_COLLECTIVES == tuple(COLLECTIVES)
    assert dict(PATTERNS) == {"broadcast": "chain", "reduce": "chain", "all_gather": "ring",
                              "reduce_scatter": "ring", "all_reduce": "ring"}
    assert {c.name: c.bound for c in COLLECTIVES.values() if c.bound != "cut"} == {
        "broadcast": "rooted", "reduce": "rooted", "alltoall": "flow", "sendrecv": "flow"}
    # Every collective NCCL tunes is served by Ring; the others by no NCCL algorithm.
    served = {name: [a.name for a in serving(name)] for name in COLLECTIVES}
    assert served == {"all_reduce": ["tree", "ring", "nvls", "nvls_tree"], "all_gather": ["ring", "nvls", "pat"],
                      "reduce_scatter": ["ring", "nvls", "pat"], "broadcast": ["ring"], "reduce": ["ring"],
                      "alltoall": [], "sendrecv": []}
    assert not any(np.isnan(select_algorithm(c, 2**20, ONE_NODE).time) for c in NCCL_COLLECTIVES)


@settings(max_examples=40, deadline=None)
@given(log_size=st.integers(0, 34), scale=st.floats(0.1, 10), setup=st.floats(0, 1e-3),
       comm=st.sampled_from([ONE_NODE, TWO_NODES, ONE_PER_NODE]))
def test_more_algorithms_never_choose_slower_and_forcing_never_beats_the_choice(log_size, scale, setup, comm):
    """An extra contender can only lower the chosen time (to its own where it wins); a set of one
    is never faster than the choice among all (NCCL's tuning-model releases take the minimum)."""
    @dataclass(frozen=True)
    class Scaled(Fixed):
        name: str = "scaled"

        def bus_bandwidth(self, collective, protocol, comm):
            bus = super().bus_bandwidth(collective, protocol, comm)
            return dataclasses.replace(bus, value=bus.value * scale / 10)

        def latency(self, collective, protocol, comm):
            lat = super().latency(collective, protocol, comm)
            return dataclasses.replace(lat, value=setup)

    extra = Scaled()
    size = 2**log_size
    nccl_time = select_algorithm("all_reduce", size, comm).time
    chosen = select_algorithm("all_reduce", size, comm, algorithms=ALGORITHMS + (extra,))
    own = select_algorithm("all_reduce", size, comm, algorithms=[extra]).time
    assert chosen.time == min(nccl_time, own)
    assert chosen.algorithm == ("scaled" if own < nccl_time else select_algorithm("all_reduce", size, comm).algorithm)
    for a in ALGORITHMS:
        try:
            forced = select_algorithm("all_reduce", size, comm, algorithms=[a]).time
        except NoAlgorithmError:
            continue
        assert forced >= nccl_time
