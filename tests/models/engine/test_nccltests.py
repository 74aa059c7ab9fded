"""nccl-tests' size convention, algbw and busbw (models.engine.nccltests).

Expected factors are NVIDIA/nccl-tests doc/PERFORMANCE.md (src/*.cu, version 2.19.6),
written out here independently of the module's own table.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.engine.nccltests import (
    COLLECTIVES, UnknownCollectiveError, algbw, busbw, busbw_factor, busbw_to_algbw, collective,
    count_from_nbytes, nbytes_from_count,
)
from topo.errors import DgxTopoError

# NVIDIA/nccl-tests doc/PERFORMANCE.md: busbw factor as a function of n, per collective.
FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,       # src/all_reduce.cu
    "all_gather": lambda n: (n - 1) / n,           # src/all_gather.cu
    "reduce_scatter": lambda n: (n - 1) / n,       # src/reduce_scatter.cu
    "broadcast": lambda n: 1.0,                    # src/broadcast.cu
    "reduce": lambda n: 1.0,                       # src/reduce.cu
    "alltoall": lambda n: (n - 1) / n,             # src/alltoall.cu
    "sendrecv": lambda n: 1.0,                     # src/sendrecv.cu
}


def test_every_collective_is_covered():
    assert list(COLLECTIVES) == ["all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                 "reduce", "alltoall", "sendrecv"]
    assert set(FACTORS) == set(COLLECTIVES)


@pytest.mark.parametrize("name", list(FACTORS))
@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 7, 8, 16, 256, 4096])
def test_busbw_factor(name, nranks):
    assert busbw_factor(name, nranks) == pytest.approx(FACTORS[name](nranks), rel=1e-15)
    assert isinstance(busbw_factor(name, nranks), float)


@pytest.mark.parametrize("name, n, value", [
    ("all_reduce", 8, 1.75), ("all_reduce", 2, 1.0), ("all_gather", 8, 0.875),
    ("reduce_scatter", 4, 0.75), ("alltoall", 16, 0.9375), ("sendrecv", 8, 1.0),
    ("all_reduce", 1, 0.0), ("all_gather", 1, 0.0)])
def test_busbw_factor_known_values(name, n, value):
    assert busbw_factor(name, n) == value


def test_vectorised_over_ranks_and_sizes():
    n = np.array([2, 4, 8])
    np.testing.assert_allclose(busbw_factor("all_reduce", n), [1.0, 1.5, 1.75])
    sizes = np.array([1e6, 2e6, 4e6])
    np.testing.assert_allclose(algbw(sizes, 1e-3), [1e9, 2e9, 4e9])
    np.testing.assert_allclose(busbw("all_reduce", sizes, 1e-3, n), [1e9, 3e9, 7e9])
    np.testing.assert_allclose(busbw("all_gather", 8e6, np.array([1e-3, 2e-3]), 8),
                               [7e9, 3.5e9])


@given(name=st.sampled_from(list(FACTORS)), nranks=st.integers(1, 10_000),
       nbytes=st.floats(0, 1e13), time=st.floats(1e-9, 1e3))
def test_busbw_is_algbw_times_factor(name, nranks, nbytes, time):
    a = algbw(nbytes, time)
    assert a == nbytes / time
    assert busbw(name, nbytes, time, nranks) == pytest.approx(a * FACTORS[name](nranks), rel=1e-12)


@given(name=st.sampled_from(list(FACTORS)), nranks=st.integers(2, 10_000),
       bandwidth=st.floats(1, 1e13))
def test_busbw_to_algbw_inverts_the_factor(name, nranks, bandwidth):
    alg = busbw_to_algbw(name, bandwidth, nranks)
    assert alg * busbw_factor(name, nranks) == pytest.approx(bandwidth, rel=1e-12)


@pytest.mark.parametrize("name, count, nranks, expected", [
    ("all_reduce", 1024, 8, 4096), ("broadcast", 1024, 8, 4096), ("reduce", 1024, 8, 4096),
    ("sendrecv", 1024, 8, 4096), ("all_gather", 1024, 8, 32768),
    ("reduce_scatter", 1024, 8, 32768), ("alltoall", 1024, 8, 32768),
])
def test_size_convention(name, count, nranks, expected):
    """6: S = count x typesize, or x n for all_gather/reduce_scatter (total) and alltoall."""
    assert nbytes_from_count(name, count, nranks) == expected
    assert nbytes_from_count(name, count, nranks, typesize=2) == expected / 2


@pytest.mark.parametrize("name, nbytes, nranks, count, size", [
    ("all_reduce", 1000, 8, 250, 1000), ("all_reduce", 1003, 8, 250, 1000),
    ("all_gather", 1000, 8, 31, 992), ("reduce_scatter", 1024, 8, 32, 1024),
    ("alltoall", 8, 8, 0, 0), ("all_gather", 8, 8, 0, 0), ("sendrecv", 8, 8, 2, 8),
])
def test_count_from_nbytes_rounds_down_like_nccl_tests(name, nbytes, nranks, count, size):
    assert count_from_nbytes(name, nbytes, nranks) == (count, size)


@given(name=st.sampled_from(list(FACTORS)), count=st.integers(0, 2**30),
       nranks=st.integers(1, 512), typesize=st.sampled_from([1, 2, 4, 8]))
def test_count_round_trip(name, count, nranks, typesize):
    size = nbytes_from_count(name, count, nranks, typesize)
    assert count_from_nbytes(name, size, nranks, typesize) == (count, size)


def test_count_from_nbytes_vectorised():
    counts, sizes = count_from_nbytes("all_gather", np.array([1024, 4096]), 4)
    assert counts.tolist() == [64, 256] and sizes.tolist() == [1024, 4096]


def test_collective_lookup():
    spec = collective("reduce_scatter")
    assert (spec.count_name, spec.peers_in_size, spec.factor) == ("recvcount", True, "(n-1)/n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.factor = "1"


@pytest.mark.parametrize("bad", ["allreduce", "AllReduce", "all-reduce", "", None, 3])
def test_unknown_collective(bad):
    with pytest.raises(UnknownCollectiveError, match=r"expected one of \['all_reduce', "
                       r"'all_gather', 'reduce_scatter', 'broadcast', 'reduce', 'alltoall', "
                       r"'sendrecv'\]"):
        busbw_factor(bad, 8)
    assert issubclass(UnknownCollectiveError, DgxTopoError)


@pytest.mark.parametrize("call, match", [
    (lambda: busbw_factor("all_reduce", 0), "nranks"),
    (lambda: busbw_factor("all_reduce", -2), "nranks"),
    (lambda: busbw_factor("all_reduce", 2.5), "nranks"),
    (lambda: busbw_factor("all_reduce", True), "nranks"),
    (lambda: busbw_factor("all_reduce", [2, 0]), "nranks"),
    (lambda: busbw_factor("all_reduce", "8"), "nranks"),
    (lambda: algbw(-1, 1.0), "nbytes"),
    (lambda: algbw(float("nan"), 1.0), "nbytes"),
    (lambda: algbw(1, 0.0), "time"),
    (lambda: algbw(1, [1.0, -1.0]), "time"),
    (lambda: algbw(1, float("nan")), "time"),
    (lambda: busbw_to_algbw("all_reduce", 1e9, 1), "factor of all_reduce is 0"),
    (lambda: nbytes_from_count("all_reduce", -1, 8), "count"),
    (lambda: nbytes_from_count("all_reduce", 1.5, 8), "count"),
    (lambda: nbytes_from_count("all_reduce", 4, 8, typesize=0), "typesize"),
    (lambda: count_from_nbytes("all_reduce", 4, 8, typesize=True), "typesize"),
    (lambda: count_from_nbytes("all_reduce", -4, 8), "invalid size -4: negative"),
])
def test_errors(call, match):
    with pytest.raises(DgxTopoError, match=match):
        call()


def test_integral_float_ranks_are_accepted():
    assert busbw_factor("all_reduce", 8.0) == 1.75
