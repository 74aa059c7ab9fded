"""A user's own algorithm, written outside the package, competes with NCCL's: the estimate takes it
where it is faster and not where it is slower, and it shows by name in the records, in --explain's
text and in the simulator's decomposition. ``algorithms=[RING]`` is what ``--algo ring`` prints."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from dataclasses import dataclass

import numpy as np
import pytest

import topo
from models.engine.nccl import ALGORITHMS
from models.engine.nccl.algorithms import RING, Algorithm, Ring
from models.engine.nccl.communicator import BandwidthStep, BusBandwidth, Latency, LatencyTerm
from models.engine.nccl.tuning import UnknownAlgorithmError
from models.predict.collectives import Estimator, estimate
from models.predict.decompose import Decomposer
from models.present.cli import main
from models.present.explain import explain
from models.studies.sweep import sweep
from topo.units import to_GBps, to_us


@dataclass(frozen=True)
class WideRing(Ring):
    """A ring on twice the lanes that pays 1 ms to set them up: twice NCCL's Ring's bus bandwidth,
    its latency + 1 ms."""

    name: str = "wide_ring"
    index: int = 100

    def bus_bandwidth(self, collective, protocol, comm):
        bus = super().bus_bandwidth(collective, protocol, comm)
        step = BandwidthStep("two lanes", 2.0, None, "", bus.value, 2 * bus.value, False)
        return dataclasses.replace(bus, steps=bus.steps + (step,), value=2 * bus.value)

    def latency(self, collective, protocol, comm):
        lat = super().latency(collective, protocol, comm)
        setup = LatencyTerm("lane setup", 1, 1e-3)
        return dataclasses.replace(lat, terms=lat.terms + (setup,), value=lat.value + setup.value)


WIDE_RING = WideRing()
SIZES = [2**10, 2**30]


@pytest.fixture(scope="module")
def a100():
    return topo.build("dgxa100")


def test_it_is_chosen_where_faster_and_not_where_slower(a100):
    nccl = estimate(a100, "all_reduce", SIZES)
    mine = estimate(a100, "all_reduce", SIZES, algorithms=ALGORITHMS + (WIDE_RING,))
    assert mine.algorithm.tolist() == [nccl.algorithm[0], "wide_ring"]
    # 1 KiB: NCCL's choice, unchanged; 1 GiB: twice Ring's bandwidth beats NCCL's choice.
    assert mine.time[0] == nccl.time[0] and mine.time[1] < nccl.time[1]
    ring = estimate(a100, "all_reduce", SIZES, algorithms=[RING])
    assert mine.nccl_time[1] == pytest.approx(ring.nccl_time[1] - ring.latency[1] + mine.latency[1]
                                              - 2**30 / ring.bandwidth[1] / 2)
    assert mine.algorithm_at() is WIDE_RING and mine.algorithm_at(0) in ALGORITHMS


def test_it_shows_in_the_records_and_the_explanation(a100):
    e = estimate(a100, "all_reduce", SIZES, algorithms=ALGORITHMS + (WIDE_RING,))
    assert [row["algorithm"] for row in e.to_records()] == [str(e.algorithm[0]), "wide_ring"]
    text = explain(e)
    assert "chosen: wide_ring/Simple" in text
    assert any(line.strip().startswith("wide_ring Simple") for line in text.splitlines())  # its tuning row


def test_the_simulator_decomposes_it_and_a_sweep_ranks_with_it(a100):
    steps = Decomposer(a100, algorithms=ALGORITHMS + (WIDE_RING,)).collective("all_reduce", 2**30, range(8))
    assert steps.algorithm == "wide_ring" and steps.blocks > 0 and len(steps.edges) > 0
    plain = Decomposer(a100).collective("all_reduce", 2**30, range(8))
    assert steps.time < plain.time
    s = sweep(a100, "all_reduce", 2**30, fail_each="gpu", executor="inline",
              algorithms=ALGORITHMS + (WIDE_RING,))
    base = sweep(a100, "all_reduce", 2**30, fail_each="gpu", executor="inline")
    assert s.baseline_busbw > base.baseline_busbw


def test_an_estimator_keeps_its_algorithms_apart(a100):
    mine = Estimator(a100, algorithms=ALGORITHMS + (WIDE_RING,))
    nccl = Estimator(mine.fabric)  # the same prepared fabric: nothing cached answers for the other
    assert str(mine.estimate("all_reduce", 2**30).algorithm) == "wide_ring"
    assert str(nccl.estimate("all_reduce", 2**30).algorithm) != "wide_ring"
    assert str(mine.estimate("all_reduce", 2**30).algorithm) == "wide_ring"


def test_a_set_of_one_is_what_algo_prints():
    G = topo.build("dgxh100")
    e = estimate(G, "all_reduce", 2**30, algorithms=[RING])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["collective", "all_reduce", "--system", "dgxh100", "--algo", "ring", "-b", "1G", "-e", "1G", "--json"])
    (row,) = json.loads(out.getvalue())["rows"]
    assert (row["algorithm"], row["protocol"], row["nchannels"]) == ("ring", str(e.protocol), int(e.nchannels))
    assert row["time_us"] == float(to_us(e.time)) and row["busbw_gbps"] == float(to_GBps(e.busbw))
    assert e.time == estimate(G, "all_reduce", 2**30, algorithm="ring").time
    assert estimate(G, "all_reduce", 2**30).algorithm != "ring"  # forcing changed something


def test_bad_algorithm_sets_are_refused(a100):
    for bad in (["ring"], "ring", [], [RING, RING], [object()], 3):
        with pytest.raises(UnknownAlgorithmError, match="algorithm"):
            estimate(a100, "all_reduce", 2**20, algorithms=bad)
    with pytest.raises(UnknownAlgorithmError, match="expected one of \\['ring'\\]"):
        estimate(a100, "all_reduce", 2**20, algorithm="tree", algorithms=[RING])


@dataclass(frozen=True)
class Exchange(Algorithm):
    """An alltoall schedule of one's own: 100 GB/s of bus bandwidth after 10 us."""

    name: str = "exchange"
    index: int = 101
    collectives: frozenset = frozenset({"alltoall"})

    def bus_bandwidth(self, collective, protocol, comm):
        return BusBandwidth(collective, self.name, protocol, 1, 1e11, "fixed", 1e11, (), 1e11)

    def latency(self, collective, protocol, comm):
        term = LatencyTerm("setup", 1, 10e-6)
        return Latency(collective, self.name, protocol, 0.0, (term,), term.value, "NVLINK", 0.0)

    def bus_to_alg_ratio(self, collective, nranks, profile, nnodes=1):
        return 1.0


def test_an_algorithm_of_ones_own_may_run_alltoall(a100):
    """NCCL runs alltoall as grouped sends (the point-to-point model); an algorithm that lists it
    runs it instead, and the simulator decomposes it."""
    e = estimate(a100, "alltoall", 2**30, algorithms=ALGORITHMS + (Exchange(),))
    assert str(e.algorithm) == "exchange" and float(e.nccl_time) == pytest.approx(10e-6 + 2**30 / 1e11)
    assert e.nvls_choice is None and str(estimate(a100, "alltoall", 2**30).algorithm) == "p2p"
    steps = Decomposer(a100, algorithms=ALGORITHMS + (Exchange(),)).collective("alltoall", 2**30, range(8))
    assert steps.algorithm == "exchange" and len(steps.edges) > 0


def test_point_to_point_collectives_ignore_a_set_but_refuse_one_forced(a100):
    e = estimate(a100, "alltoall", 2**20, algorithms=ALGORITHMS + (WIDE_RING,))
    assert str(e.algorithm) == "p2p"
    with pytest.raises(topo.DgxTopoError, match="received 'wide_ring'/None"):
        estimate(a100, "alltoall", 2**20, algorithms=[WIDE_RING])
    assert np.isfinite(e.time)
