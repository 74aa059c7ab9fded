"""NCCL profiles (models.engine.nccl) and the tuning model (models.engine.nccl.tuning).

Known answers come from NVIDIA/nccl's source at the tag each test names (src/graph/tuning.cc,
src/graph/search.cc, src/graph/topo.h) and from examples derived by hand from those tables.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import topo
from hypothesis import given, settings
from hypothesis import strategies as st

from models.engine.nccltests import UnknownCollectiveError, busbw as nccl_tests_busbw, busbw_factor
from models.engine.nccl.profiles import (
    DEFAULT_VERSION, PROFILES, PROTOCOLS, TABLE_ALGORITHMS, MissingConstantError, NcclProfile,
    UnknownNcclVersionError, nccl_profile,
)
from models.engine.nccl.reasons import Cause, Why
from models.engine.nccl.duplication import ChannelSearchError, dup_channels
from models.engine.nccl.tuning import (
    NCCL_COLLECTIVES, ChannelGraph, Communicator, NoAlgorithmError, TuningError,
    UnknownAlgorithmError, UnknownProtocolError, UnsupportedCollectiveError, algo_time,
    applicability, bus_bandwidth, bus_to_alg_ratio, comm_channels, latency, nsteps,
    select_algorithm, tune, tuning_table,
)
from models.present.reasons_text import error_text, reason_text
from topo.errors import DgxTopoError
from topo.units import GB, MiB, to_GBps, to_us, us

REF = nccl_profile("2.27.7")
OLD = nccl_profile("2.12.12")


def graph(nchannels=12, bw=30, type_intra="NVL", **kw):
    """A channel graph with ``bw`` in GB/s."""
    return ChannelGraph(nchannels, bw * GB, type_intra, **kw)


def h100(**kw):
    """Hand-derived from v2.27.7-1 tuning.cc: 8 x H100, one node, ring and tree graphs 12 ch x 30 GB/s."""
    ring = graph(12, 30)
    tree = graph(12, 30, pattern="balanced_tree")
    return Communicator(8, ring, tree, 90, **kw)


def zero_latency(profile: NcclProfile) -> NcclProfile:
    """The profile with every latency constant zero (for closed forms)."""
    return dataclasses.replace(
        profile,
        base_latency=tuple(tuple(0.0 for _ in row) for row in profile.base_latency),
        hw_latency=tuple(tuple(tuple(0.0 for _ in p) for p in a) for a in profile.hw_latency))


# =========================================================================== profiles
def test_default_profile_is_the_reference_version():
    assert DEFAULT_VERSION == "2.27.7"
    assert nccl_profile() is PROFILES["2.27.7"]
    assert nccl_profile(None).tag == "v2.27.7-1"
    assert list(PROFILES)[0] == "2.3.5" and list(PROFILES)[-1] == "2.31.0"


@pytest.mark.parametrize("spelling", ["2.12.12", "v2.12.12-1", "V2.12.12", " 2.12.12-1 "])
def test_profile_accepts_tag_spellings(spelling):
    assert nccl_profile(spelling) is OLD


def test_profile_passes_a_profile_through():
    assert nccl_profile(OLD) is OLD


@pytest.mark.parametrize("bad", ["2.33", "1.3.4", "3.0.0", "", 2.27, "2.12.x", "2. 12", "2.12.12-"])
def test_unknown_version_lists_valid_ones(bad):
    with pytest.raises(UnknownNcclVersionError, match=r"expected a release from 2\.0\.0 to 2\.32\.x"):
        nccl_profile(bad)
    assert issubclass(UnknownNcclVersionError, DgxTopoError)
    assert issubclass(UnknownNcclVersionError, ValueError)


def test_profiles_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        REF.max_channels = 32


def test_reference_constants_in_si_units():
    """NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc tables: spot checks, converted from GB/s and µs to B/s and s."""
    assert REF.ll_max_bw(2, 1) == 141 * GB                      # llMaxBws Hopper N1
    assert REF.ll_max_bw(0, 4) == 20.4 * GB                     # Volta/Intel N4+
    assert REF.per_ch_max_tree_ll128_bw(2, 8) == 29.0 * GB      # Hopper N4+
    assert REF.per_ch_max_tree_bw(1, 2) == 23.6 * GB            # Ampere N2
    assert REF.per_ch_max_ring_ll128_bw(3, 1) == 73.4 * GB      # Blackwell v2.25-2.27
    assert REF.base_lat("tree", "Simple") == pytest.approx(8.4 * us, rel=1e-12)
    assert REF.base_lat("ring", "LL128") == pytest.approx(14.0 * us, rel=1e-12)
    assert REF.hw_lat("NET", "tree", "LL128") == pytest.approx(8.5 * us, rel=1e-12)
    assert REF.hw_lat("PCI", "ring", "Simple") == pytest.approx(5.7 * us, rel=1e-12)
    assert REF.net_overhead == pytest.approx((1.0 * us, 2.0 * us, 1.0 * us))
    assert REF.max_channels == 64 and REF.nccl_steps == 8
    assert REF.dup_channels.min_bw == 25 * GB and REF.dup_channels.cc_bw_below == 50 * GB


def test_v2_12_constants():
    """NVIDIA/nccl v2.12.12-1 src/graph/tuning.cc: baseLat, hwLat, NET Ring Simple 28 (v2.12-v2.13 only)."""
    assert OLD.base_lat("ring", "LL128") == pytest.approx(10.0 * us, rel=1e-12)
    assert OLD.base_lat("tree", "Simple") == 0.0
    assert OLD.hw_lat("NVLINK", "ring", "LL") == pytest.approx(0.47 * us, rel=1e-12)
    assert OLD.hw_lat("NVLINK", "tree", "Simple") == pytest.approx(28 * us, rel=1e-12)
    assert OLD.hw_lat("NET", "ring", "Simple") == pytest.approx(28 * us, rel=1e-12)
    assert OLD.per_ch_max_ring_ll128_bw(0, 1) == OLD.per_ch_max_tree_ll128_bw(1, 4) == 20 * GB
    assert OLD.ring_ll_factor == 1 / 4 and OLD.ring_ll_factor_single_node_copy == 1 / 3


@pytest.mark.parametrize("profile", list(PROFILES.values()), ids=list(PROFILES))
def test_table_shapes(profile):
    assert np.shape(profile.base_latency) == (len(TABLE_ALGORITHMS), len(PROTOCOLS))
    assert np.shape(profile.hw_latency) == (3, len(TABLE_ALGORITHMS), len(PROTOCOLS))
    rows = len(profile.ll_max_bws)
    for table in (profile.ll_max_bws, profile.per_ch_max_ring_ll128_bws,
                  profile.per_ch_max_tree_ll128_bws, profile.per_ch_max_tree_bws):
        assert np.shape(table) == (rows, 3)
    # 23 entries per row; v2.5's Simple row has 22 (src/enqueue.cc v2.5.7-1; the releases before it take it); 24 from v2.29.2
    # (src/graph/tuning.cc v2.29.2-1, one more size bucket at the top).
    lengths = [len(row) for row in profile.tree_correction_factor]
    assert lengths == ([24] * 3 if profile.first >= (2, 29, 0) else [23, 23, 22] if profile.first < (2, 7, 0)
                       else [23] * 3)


@pytest.mark.parametrize("profile", list(PROFILES.values()), ids=list(PROFILES))
def test_speed_arrays_descend_in_bytes_per_second(profile):
    arrays = [profile.speed_intra, profile.speed_inter, profile.speed_sm90_intra,
              profile.speed_sm90_inter, profile.speed_sm100_intra, profile.speed_sm100_inter]
    for array in (a for a in arrays if a is not None):
        assert all(a > b for a, b in zip(array, array[1:]))
        assert array[-1] >= 0.12 * GB and array[0] <= 96 * GB


@pytest.mark.parametrize("version, cc, inter, first", [
    ("2.27.7", 70, False, 40), ("2.27.7", 80, True, 48), ("2.27.7", 90, False, 60),
    ("2.27.7", 90, True, 48), ("2.27.7", 100, False, 90), ("2.27.7", 100, True, 96),
    ("2.12.12", 70, False, 44), ("2.12.12", 90, False, 44), ("2.12.12", 70, True, 48),
])
def test_speed_array_choice(version, cc, inter, first):
    """NVIDIA/nccl v2.27.7-1 src/graph/search.cc: ccMin >= 100 -> sm100, >= 90 -> sm90, else generic arrays."""
    assert nccl_profile(version).speed_array(cc, inter=inter)[0] == first * GB


@pytest.mark.parametrize("version, cc, expected", [
    ("2.27.7", 60, 18), ("2.27.7", 70, 20), ("2.27.7", 80, 20), ("2.27.7", 86, 12),
    ("2.27.7", 89, 20), ("2.27.7", 90, 20.6), ("2.27.7", 100, 40.1), ("2.27.7", 50, 20),
    ("2.12.12", 60, 18), ("2.12.12", 70, 22), ("2.12.12", 86, 12), ("2.12.12", 90, 22),
])
def test_nvlink_bandwidth_per_compute_capability(version, cc, expected):
    """ncclTopoNVLinkBw, NVIDIA/nccl v2.27.7-1 / v2.12.12-1 src/graph/topo.h."""
    assert nccl_profile(version).nvlink_bandwidth(cc) == pytest.approx(expected * GB)


def test_old_profile_lists_and_refuses_what_it_lacks():
    assert OLD.missing == ("tree_pattern_factor",)
    assert REF.missing == ()
    with pytest.raises(MissingConstantError, match=r"lacks 'tree_pattern_factor'.*'2.27.7'"):
        OLD.require("tree_pattern_factor")
    with pytest.raises(MissingConstantError, match="compute capability 90"):
        OLD.compute_capability_index(90)
    assert OLD.compute_capability_index(80) == 1 and REF.compute_capability_index(100) == 3


def test_path_rank_rejects_types_of_other_versions():
    assert REF.path_rank("NVB") < REF.path_rank("PIX") < REF.path_rank("PXN") < REF.path_rank("SYS")
    with pytest.raises(DgxTopoError, match="unknown path type 'C2C' for NCCL 2.12.12"):
        OLD.path_rank("C2C")


# ================================================== worked example (v2.27.7-1 tables)
# Derived by hand from NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc: 8 x H100
# NVSwitch, one node, ring and tree graphs 12 ch x 30 GB/s, AllReduce (nsteps 14, ratio 8/14).
# Columns: algorithm, protocol, busBw [GB/s], algBw stored [GB/s], latency [µs] as printed
# (one decimal), then the exact expressions the note derives them from.
WORKED_H100 = [
    ("ring", "LL", 141.0, 80.6, 15.0, 141.0, 141.0 * 8 / 14, 6.6 + 14 * 0.6),
    ("ring", "LL128", 331.2, 189.3, 40.6, 360 * .92, 360 * .92 * 8 / 14, 14 + 14 * 1.9),
    ("ring", "Simple", 360.0, 205.7, 56.0, 360.0, 360 * 8 / 14, 8.4 + 14 * 3.4),
    ("tree", "LL", 87.2, 43.6, 15.2, 331.2 / 3.8, 331.2 / 3.8 / 2, 6.8 + 2 * 7 * 0.6),
    ("tree", "LL128", 257.6, 128.8, 31.5, 331.2 * 7 / 9, 331.2 * 7 / 9 / 2, 14 + 2 * 7 * 1.25),
    ("tree", "Simple", 331.2, 165.6, 64.4, 331.2, 331.2 / 2, 8.4 + 2 * 7 * 4.0),
]


@pytest.mark.parametrize("algo, proto, bus, alg, lat, bus_exact, alg_exact, lat_exact", WORKED_H100,
                         ids=[f"{r[0]}-{r[1]}" for r in WORKED_H100])
def test_worked_example_5_8_table(algo, proto, bus, alg, lat, bus_exact, alg_exact, lat_exact):
    cell = tune("all_reduce", algo, proto, h100())
    assert cell.enabled
    assert round(to_GBps(cell.bus.value), 1) == bus
    assert round(to_GBps(cell.bandwidth), 1) == alg
    assert round(to_us(cell.latency.value), 1) == lat
    assert to_GBps(cell.bus.value) == pytest.approx(bus_exact, rel=1e-12)
    assert to_GBps(cell.bandwidth) == pytest.approx(alg_exact, rel=1e-12)
    assert to_us(cell.latency.value) == pytest.approx(lat_exact, rel=1e-12)


def test_worked_example_5_8_caps():
    """Worked example: Ring LL is bound by llMaxBw 141; the tree rows start from the AllReduce cap 331.2."""
    comm = h100()
    ring_ll = bus_bandwidth("all_reduce", "ring", "LL", comm)
    assert ring_ll.raw == 360 * GB and ring_ll.bound_by == "llMaxBws[2][0]"
    assert ring_ll.steps[0].before == 360 * GB and ring_ll.steps[0].after == 141 * GB
    for proto in PROTOCOLS:
        tree = bus_bandwidth("all_reduce", "tree", proto, comm)
        assert tree.steps[0].name == "Tree AllReduce"
        assert to_GBps(tree.steps[0].after) == pytest.approx(331.2)
        assert tree.steps[0].cap == pytest.approx(12 * 38.7 * GB)
        assert tree.bound_by is None
    ring_ll128 = bus_bandwidth("all_reduce", "ring", "LL128", comm)
    assert ring_ll128.steps[0].cap == pytest.approx(440.4 * GB) and not ring_ll128.steps[0].bound


def test_worked_example_5_8_one_mebibyte():
    """Worked example: at 1 MiB Ring LL wins at 28.0 µs; Tree LL128 45.1; Ring LL128 46.1."""
    s = select_algorithm("all_reduce", 1 * MiB, h100())
    assert (s.algorithm, s.protocol) == ("ring", "LL")
    assert round(to_us(s.time), 1) == 28.0
    times = {(c.tuning.algorithm, c.tuning.protocol): to_us(c.time) for c in s.candidates}
    assert len(times) == 6
    assert round(times["tree", "LL128"], 1) == 45.1
    assert round(times["ring", "LL128"], 1) == 46.1
    assert min(times, key=times.get) == ("ring", "LL")
    assert times["ring", "LL"] == pytest.approx(15.0 + 1048576 / (1000 * 141 * 8 / 14), rel=1e-12)
    factors = {c.tuning.protocol: c.tree_correction for c in s.candidates
               if c.tuning.algorithm == "tree"}
    assert factors == {"LL": .5, "LL128": .6, "Simple": .5}     # logSize 14 at 1 MiB


# ============================================================ search-side rules (3.7)
def test_dup_channels_reproduces_the_search_traces_of_3_8():
    """3.8: H100 ring 6 x 60 -> 12 x 30; H100 tree 12 x 30 stays; A100 ring 6 x 40 -> 12 x 20."""
    ring = dup_channels(6, 60 * GB, compute_capability=90)
    assert (ring.nchannels, ring.bw_intra, ring.bw_inter, ring.duplicated) == (12, 30 * GB, 30 * GB, True)
    tree = dup_channels(12, 30 * GB, compute_capability=90, max_channels=12, pattern="balanced_tree")
    assert (tree.nchannels, tree.bw_intra, tree.duplicated) == (12, 30 * GB, False)
    a100 = dup_channels(6, 40 * GB, compute_capability=80)
    assert (a100.nchannels, a100.bw_intra) == (12, 20 * GB)


@pytest.mark.parametrize("nch, bw, cc, expected", [
    (4, 24, 70, 4),     # bwIntra < 25: never
    (4, 25, 70, 8),     # exactly 25 duplicates
    (5, 40, 90, 5),     # ccMin > 80, bw < 50, nCh > 4
    (4, 40, 90, 8),     # ... but 4 channels duplicate
    (5, 40, 80, 10),    # ccMin 80 is not > 80
    (5, 50, 90, 10),    # bw 50 is not < 50
])
def test_dup_channels_thresholds(nch, bw, cc, expected):
    result = dup_channels(nch, bw * GB, compute_capability=cc)
    assert result.nchannels == expected
    assert result.nchannels * result.bw_intra == pytest.approx(nch * bw * GB)


def test_dup_channels_clipped_by_max_channels_lowers_the_total():
    """3.7: bw is divided by DIVUP(dup, nCh) = 2 even when maxChannels clips dup below 2 x nCh."""
    result = dup_channels(20, 30 * GB, compute_capability=70, max_channels=32)
    assert (result.nchannels, result.bw_intra) == (32, 15 * GB)
    assert result.nchannels * result.bw_intra < 20 * 30 * GB
    at_max = dup_channels(32, 30 * GB, compute_capability=70, max_channels=32)
    assert (at_max.nchannels, at_max.bw_intra, at_max.duplicated) == (32, 30 * GB, False)


def test_dup_channels_nvls_and_errors():
    assert not dup_channels(4, 100 * GB, compute_capability=90, pattern="nvls").duplicated
    # v2.12: [U] the v2.18 rule without its sm90 clause.
    assert dup_channels(8, 40 * GB, compute_capability=90, profile="2.12.12").duplicated
    with pytest.raises(ChannelSearchError, match="nchannels"):
        dup_channels(0, 40 * GB, compute_capability=70)
    with pytest.raises(ChannelSearchError, match="bw_intra"):
        dup_channels(4, -1, compute_capability=70)
    with pytest.raises(ChannelSearchError, match="compute_capability"):
        dup_channels(4, 40 * GB, compute_capability="70")
    with pytest.raises(ChannelSearchError, match="pattern"):
        dup_channels(4, 40 * GB, compute_capability=70, pattern="chain")
    with pytest.raises(ChannelSearchError, match="max_channels"):
        dup_channels(8, 40 * GB, compute_capability=70, max_channels=4)


def test_comm_channels():
    """0 / 3.7: comm->nChannels = min(MAXCHANNELS, 2 x min(ring, tree))."""
    assert comm_channels(12, 12) == 24
    assert comm_channels(12, 8) == 16
    assert comm_channels(40, 40) == 64
    assert comm_channels(40, 40, profile="2.12.12") == 32     # [U] MAXCHANNELS 32
    assert comm_channels(12, 12, profile="2.4.8") == 16      # MAXCHANNELS 16 (v2.4)
    with pytest.raises(TuningError, match="tree_nchannels"):
        comm_channels(12, 0)


# ======================================================================= closed forms
@settings(max_examples=60, deadline=None)
@given(collective=st.sampled_from(NCCL_COLLECTIVES), protocol=st.sampled_from(PROTOCOLS),
       nranks=st.integers(2, 64), nchannels=st.integers(1, 32),
       bw=st.floats(0.5, 60, allow_nan=False), nbytes=st.integers(1, 2**34),
       version=st.sampled_from(["2.27.7", "2.12.12"]))
def test_zero_latency_ring_busbw_is_the_channel_bandwidth(collective, protocol, nranks, nchannels,
                                                         bw, nbytes, version):
    """With zero latency, nccl-tests' busbw of the predicted ring time is NCCL's busBw: the
    channels' bandwidth times the protocol factor, capped (nccl-tests doc/PERFORMANCE.md)."""
    profile = zero_latency(nccl_profile(version))
    g = graph(nchannels, bw)
    comm = Communicator(nranks, g, g, 70, profile=profile)
    s = select_algorithm(collective, nbytes, comm, algorithm="ring", protocol=protocol)
    cell = tune(collective, "ring", protocol, comm)
    assert s.latency == 0
    assert s.busbw == pytest.approx(cell.bus.value, rel=1e-9)
    if protocol == "Simple":
        assert s.busbw == pytest.approx(nchannels * bw * GB, rel=1e-9)
    elif cell.bus.bound_by is None:
        assert s.busbw == pytest.approx(nchannels * bw * GB * cell.bus.steps[0].factor, rel=1e-9)


@pytest.mark.parametrize("collective", NCCL_COLLECTIVES)
@pytest.mark.parametrize("nranks", [2, 3, 4, 7, 8, 16, 100])
def test_ring_ratio_is_the_inverse_of_the_nccl_tests_factor(collective, nranks):
    """nccl-tests doc/PERFORMANCE.md: NCCL's ring bus->alg ratio nRanks/nsteps inverts nccl-tests' factor."""
    assert bus_to_alg_ratio(collective, "ring", nranks) * busbw_factor(collective, nranks) \
        == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("collective", NCCL_COLLECTIVES)
@pytest.mark.parametrize("nranks", [2, 5, 8])
def test_selection_busbw_is_nccl_tests_busbw_of_the_time(collective, nranks):
    g = graph(4, 20)
    s = select_algorithm(collective, np.array([64, 2**20, 2**30]), Communicator(nranks, g, g, 70))
    np.testing.assert_allclose(s.algbw, s.nbytes / s.time)
    np.testing.assert_allclose(s.busbw, nccl_tests_busbw(collective, s.nbytes, s.time, nranks))
    np.testing.assert_allclose(s.busbw / s.algbw, busbw_factor(collective, nranks))


def test_nsteps():
    assert [nsteps(c, 8) for c in NCCL_COLLECTIVES] == [8, 8, 7, 7, 14]


# ================================================================== time versus size
@settings(max_examples=60, deadline=None)
@given(collective=st.sampled_from(NCCL_COLLECTIVES), protocol=st.sampled_from(PROTOCOLS),
       sizes=st.lists(st.integers(0, 2**36), min_size=2, max_size=20, unique=True),
       nnodes=st.sampled_from([1, 2, 4]))
def test_ring_time_increases_with_size(collective, protocol, sizes, nnodes):
    g = graph(8, 24)
    comm = Communicator(8 * nnodes, g, g, 80, nnodes=nnodes)
    sizes = np.sort(np.array(sizes))
    t = select_algorithm(collective, sizes, comm, algorithm="ring", protocol=protocol).time
    assert np.all(np.diff(t) > 0)


@pytest.mark.parametrize("collective", NCCL_COLLECTIVES)
@pytest.mark.parametrize("nnodes", [1, 2])
def test_time_increases_along_a_doubling_sweep(collective, nnodes):
    """nccl-tests' -f 2 sweep: every candidate, and so NCCL's choice, gets slower each step
    (the tree correction factor never more than doubles between adjacent sizes)."""
    sizes = 2.0 ** np.arange(3, 34)
    g = graph(6, 20, pattern="balanced_tree")
    s = select_algorithm(collective, sizes, Communicator(8 * nnodes, g, g, 70, nnodes=nnodes))
    assert np.all(np.diff(s.time) > 0)
    for candidate in s.candidates:
        assert np.all(np.diff(candidate.time) > 0)


def test_tree_time_drops_where_the_correction_factor_rises():
    """NCCL's treeCorrectionFactor LL goes .4 -> .5 at 1 MiB (5.7), so 1 MiB - 1 B is slower
    than 1 MiB on Tree LL: the model's time is not monotone in size, by NCCL's design."""
    t = select_algorithm("all_reduce", [2**20 - 1, 2**20], h100(), algorithm="tree", protocol="LL")
    assert t.candidates[0].tree_correction.tolist() == [.4, .5]
    assert t.time[1] < t.time[0]


def test_tree_correction_bounds():
    """5.7: no correction below 64 B (logSize < 0) nor from 512 MiB (logSize >= 23)."""
    comm = h100()
    cell = tune("all_reduce", "tree", "Simple", comm)
    t = algo_time(cell, [0, 63, 64, 127, 128, 2**28 - 1, 2**29, 2**40], comm)
    assert t.tree_correction.tolist() == [1.0, 1.0, .9, .9, .9, .9, 1.0, 1.0]
    ring = algo_time(tune("all_reduce", "ring", "Simple", comm), 2**20, comm)
    assert ring.tree_correction == 1.0 and ring.plateau == 1.0


# ======================================================================= selection
def test_array_and_scalar_selection_agree():
    sizes = 2 ** np.arange(0, 34, 3)
    comm = h100()
    s = select_algorithm("all_reduce", sizes, comm)
    for i, size in enumerate(sizes):
        one = select_algorithm("all_reduce", int(size), comm)
        assert (one.algorithm, one.protocol) == (s.algorithm[i], s.protocol[i])
        assert one.time == s.time[i] and one.bus_bandwidth == s.bus_bandwidth[i]
        assert isinstance(one.time, float) and isinstance(one.algorithm, str)


def test_selection_is_the_minimum_over_candidates():
    sizes = 2.0 ** np.arange(3, 34)
    s = select_algorithm("all_reduce", sizes, h100())
    times = np.stack([c.time for c in s.candidates])
    np.testing.assert_array_equal(s.time, times.min(axis=0))


def test_h100_large_all_reduce_is_ring_simple_at_the_channel_bandwidth():
    s = select_algorithm("all_reduce", 8 * 2**30, h100())
    assert (s.algorithm, s.protocol) == ("ring", "Simple")
    assert s.bus_bandwidth == 360 * GB
    assert 0.99 * 360 * GB < s.busbw < 360 * GB


def test_ties_go_to_the_lower_index():
    """5.7: strictly-lower time wins, so equal times keep the lower (algorithm, protocol)."""
    flat = zero_latency(REF)
    tie = dataclasses.replace(
        flat, ring_ll128_factor=1.0,
        per_ch_max_ring_ll128_bws=tuple((1e15,) * 3 for _ in flat.ll_max_bws),
        tree_factor=2.0, per_ch_max_tree_bws=tuple((1e15,) * 3 for _ in flat.ll_max_bws),
        tree_correction_factor=tuple((1.0,) * 23 for _ in PROTOCOLS))
    g = graph(4, 20, pattern="balanced_tree")
    comm = Communicator(2, g, g, 70, profile=tie)
    ring = select_algorithm("all_reduce", 2**20, comm, algorithm="ring", protocol=None, profile=tie)
    assert (ring.algorithm, ring.protocol) == ("ring", "LL128")       # LL128 (1) ties Simple (2)
    both = select_algorithm("all_reduce", 2**20, comm, protocol="Simple")
    assert [c.time for c in both.candidates][0] == [c.time for c in both.candidates][1]
    assert both.algorithm == "tree"                                    # Tree (0) ties Ring (1)


def test_forcing_algorithm_and_protocol():
    comm = h100()
    s = select_algorithm("all_reduce", 2**30, comm, algorithm="TREE", protocol="ll128")
    assert (s.algorithm, s.protocol) == ("tree", "LL128")
    assert len(s.candidates) == 1
    only_ring = select_algorithm("all_reduce", 64, comm, algorithm="ring")
    assert {c.tuning.algorithm for c in only_ring.candidates} == {"ring"}
    assert len(select_algorithm("all_reduce", 64, comm, protocol="Simple").candidates) == 2


def test_forcing_a_disabled_combination_explains_why():
    g = graph(2, 12, "PHB")
    comm = Communicator(4, g, g, 70)
    with pytest.raises(NoAlgorithmError, match=r"ring/LL128: Why\(LL128_TYPE_INTRA") as caught:
        select_algorithm("all_reduce", 1024, comm, algorithm="ring", protocol="LL128")
    assert caught.value.whys == (Why(Cause.LL128_TYPE_INTRA, algorithm="ring", path_limit="NVB", path_type="PHB"),)
    assert error_text(caught.value).endswith("ring/LL128: LL128 needs typeIntra <= NVB, the ring graph has PHB")
    with pytest.raises(NoAlgorithmError, match="RING_ONLY") as caught:
        select_algorithm("reduce_scatter", 1024, comm, algorithm="tree")
    assert "tree/Simple: NCCL runs reduce_scatter with Ring only" in error_text(caught.value)
    with pytest.raises(NoAlgorithmError, match="disabled") as caught:
        algo_time(tune("all_reduce", "ring", "LL128", comm), 1024, comm)
    assert error_text(caught.value) == ("ring/LL128 is disabled for all_reduce: LL128 needs typeIntra <= NVB, "
                                        "the ring graph has PHB")


# ==================================================================== applicability
@pytest.mark.parametrize("collective", ["broadcast", "reduce", "all_gather", "reduce_scatter"])
def test_only_all_reduce_runs_tree(collective):
    table = tuning_table(collective, h100())    # no NVLS graph: NVLS/NVLSTree off; PAT off
    assert [(t.algorithm, t.enabled) for t in table] == [
        ("tree", False), ("tree", False), ("tree", False), ("ring", True), ("ring", True),
        ("ring", True)] + [(a, False) for a in ("nvls", "nvls_tree", "pat") for _ in range(3)]
    assert all(t.bandwidth == 0 and t.bus is None for t in table[:3])
    assert all(t.enabled for t in tuning_table("all_reduce", h100())[:6])


@pytest.mark.parametrize("version, kw, enabled, reason", [
    ("2.27.7", dict(type_intra="NVL"), True, ""),
    ("2.27.7", dict(type_intra="NVB"), True, ""),
    ("2.27.7", dict(type_intra="PIX"), False, "typeIntra <= NVB"),
    ("2.27.7", dict(type_intra="PHB"), False, "typeIntra <= NVB"),
    ("2.27.7", dict(type_inter="PXB"), True, ""),
    ("2.27.7", dict(type_inter="PHB"), False, "typeInter <= PXB"),
    ("2.27.7", dict(cc=60), False, "compute capability >= 70"),
    ("2.27.7", dict(cc=70, cc_max=80), False, "one compute capability"),
    ("2.27.7", dict(cc=75), True, ""),
    ("2.27.7", dict(cc=90, type_inter="PXN"), True, ""),
    ("2.27.7", dict(cc=90, type_inter="PHB"), False, "typeInter <= PXN"),
    ("2.12.12", dict(type_intra="NVL"), True, ""),
    ("2.12.12", dict(type_intra="NVB"), False, "typeIntra <= NVL"),
    ("2.12.12", dict(cc=80), True, ""),
    ("2.12.12", dict(cc=75), False, "compute capabilities \\[70, 80\\]"),
    ("2.12.12", dict(cc=80, type_inter="PXN"), False, "typeInter <= PXB"),
])
def test_ll128_enabling_rules(version, kw, enabled, reason):
    """LL128 enabling, NVIDIA/nccl v2.27.7-1 and v2.12.12-1 src/graph/tuning.cc."""
    g = graph(4, 20, kw.get("type_intra", "NVL"), type_inter=kw.get("type_inter", "PIX"))
    comm = Communicator(8, g, g, kw.get("cc", 70), compute_capability_max=kw.get("cc_max"),
                        profile=version)
    ok, why = applicability("all_reduce", "ring", "LL128", comm)
    assert ok is enabled
    if enabled:
        assert why is None
    else:
        assert re.search(reason, reason_text(why)), why


def test_ll128_cuda_11_8_rule():
    g = graph(4, 40)
    two = Communicator(2, g, g, 90, cuda_11_8=True)
    assert not applicability("all_reduce", "ring", "LL128", two)[0]
    assert applicability("all_reduce", "tree", "LL128", two)[0]
    assert applicability("all_gather", "ring", "LL128", two)[0]
    assert applicability("all_reduce", "ring", "LL128", Communicator(2, g, g, 90))[0]
    assert applicability("all_reduce", "ring", "LL128", Communicator(4, g, g, 90, cuda_11_8=True))[0]
    ok, why = applicability("all_reduce", "ring", "LL128", Communicator(4, g, g, 90, profile="2.12.12"))
    assert not ok and why.cause is Cause.LL128_LISTED_COMPUTE_CAPABILITIES  # v2.12: all sm70 or all sm80 only
    assert (why.allowed, why.compute_capability, why.release) == ((70, 80), 90, "2.12.12")
    assert applicability("all_reduce", "ring", "LL128", two)[1] == Why(Cause.LL128_CUDA_11_8)


def test_ll128_disabled_on_pascal_dgx1():
    g = graph(4, 18)
    table = tuning_table("all_reduce", Communicator(8, g, g, 60))
    assert [t.protocol for t in table[:6] if not t.enabled] == ["LL128", "LL128"]


# =============================================================== bus bandwidth rules
def test_ring_ll_factors_of_v2_12():
    """5.4: v2.8-v2.20 Ring LL x1/4 for AllReduce/Reduce or multi-node, x1/3 otherwise."""
    g = graph(2, 22)
    comm = Communicator(8, g, g, 70)
    old = Communicator(8, g, g, 70, profile="2.12.12")
    for collective, factor in [("all_reduce", 1 / 4), ("reduce", 1 / 4), ("broadcast", 1 / 3),
                               ("all_gather", 1 / 3), ("reduce_scatter", 1 / 3)]:
        b = bus_bandwidth(collective, "ring", "LL", old)
        assert b.value == pytest.approx(44 * GB * factor) and b.bound_by is None
        assert b.value == pytest.approx(bus_bandwidth(collective, "ring", "LL", comm).value
                                        * factor / 0.5)
    multi = Communicator(16, g, g, 70, nnodes=2, profile="2.12.12")
    assert bus_bandwidth("all_gather", "ring", "LL", multi).steps[0].factor == 1 / 4


def test_ring_ll128_ppn1_factor_of_v2_12():
    """5.4: v2.7-v2.21 use 0.7 for Ring LL128 with fewer than 2 ranks per node."""
    g = graph(2, 10, type_inter="PXB")
    one_per_node = Communicator(4, g, g, 70, nnodes=4, profile="2.12.12")
    assert bus_bandwidth("all_reduce", "ring", "LL128", one_per_node).steps[0].factor == 0.7
    ref = Communicator(4, g, g, 70, nnodes=4)
    assert bus_bandwidth("all_reduce", "ring", "LL128", ref).steps[0].factor == 0.92


def test_tree_ll128_factor_and_inter_bandwidth_on_many_nodes():
    """5.4: bw = bwIntra on <= 2 nodes, bwInter beyond; Tree LL128 x120/128 multi-node."""
    g = ChannelGraph(4, 40 * GB, "NVL", bw_inter=10 * GB, type_inter="PXB", pattern="balanced_tree")
    two = bus_bandwidth("all_reduce", "tree", "LL128", Communicator(16, g, g, 80, nnodes=2))
    four = bus_bandwidth("all_reduce", "tree", "LL128", Communicator(32, g, g, 80, nnodes=4))
    assert (two.channel_bandwidth_name, two.raw) == ("bwIntra", 160 * GB)
    assert (four.channel_bandwidth_name, four.raw) == ("bwInter", 40 * GB)
    assert two.steps[1].factor == 120 / 128
    assert two.steps[0].cap == pytest.approx(4 * 23.6 * GB)     # perChMaxTreeBws Ampere N2
    assert four.steps[0].cap == pytest.approx(4 * 17.8 * GB)    # Ampere N4+


def test_ll_max_bw_row_by_cpu_vendor_on_several_nodes():
    """5.1: index1 = compCapIndex on one node; multi-node 1 for AMD CPUs, else 0."""
    g = graph(16, 40, type_inter="PXB")
    intel = bus_bandwidth("all_reduce", "ring", "LL", Communicator(16, g, g, 90, nnodes=2))
    amd = bus_bandwidth("all_reduce", "ring", "LL", Communicator(16, g, g, 90, nnodes=2,
                                                                 cpu_vendor="amd"))
    assert (intel.value, intel.bound_by) == (39.0 * GB, "llMaxBws[0][1]")
    assert (amd.value, amd.bound_by) == (22.5 * GB, "llMaxBws[1][1]")


def test_tree_pattern_factor():
    """5.4: x0.85 when the tree graph's pattern is TREE; unknown for v2.12."""
    plain = graph(4, 20, pattern="tree")
    balanced = graph(4, 20, pattern="balanced_tree")
    a = bus_bandwidth("all_reduce", "tree", "Simple", Communicator(8, plain, plain, 70))
    b = bus_bandwidth("all_reduce", "tree", "Simple", Communicator(8, balanced, balanced, 70))
    assert a.value == pytest.approx(b.value * 0.85)
    assert a.steps[-1].name == "Tree pattern TREE"
    with pytest.raises(MissingConstantError, match="tree_pattern_factor"):
        bus_bandwidth("all_reduce", "tree", "Simple", Communicator(8, plain, plain, 70, profile="2.12.12"))
    with pytest.raises(TuningError, match="Ring only"):
        bus_bandwidth("broadcast", "tree", "Simple", Communicator(8, plain, plain, 70))


# ===================================================================== latency rules
def test_nvb_and_loc_count_as_pci():
    """5.1: intraHw is NVLINK only for typeIntra NVL; NVB counts as PCI."""
    for type_intra, hw in [("NVL", "NVLINK"), ("NVB", "PCI"), ("PIX", "PCI"), ("LOC", "PCI")]:
        g = graph(2, 20, type_intra)
        lat = latency("all_reduce", "ring", "Simple", Communicator(4, g, g, 70))
        assert lat.intra_hardware == hw
        assert lat.terms[0].per_step == REF.hw_lat(hw, "ring", "Simple")


def test_broadcast_latency_same_channels_or_not():
    """5.5: Broadcast/Reduce add one step if the channels are the same, else nsteps steps, and
    Simple then uses the Tree Simple hardware latency."""
    same = graph(4, 20)
    mixed = graph(4, 20, same_channels=False)
    a = latency("broadcast", "ring", "Simple", Communicator(8, same, same, 70))
    b = latency("reduce", "ring", "Simple", Communicator(8, mixed, mixed, 70))
    c = latency("reduce", "ring", "LL", Communicator(8, mixed, mixed, 70))
    assert (a.terms[0].count, a.terms[0].per_step) == (1, REF.hw_lat("NVLINK", "ring", "Simple"))
    assert (b.terms[0].count, b.terms[0].per_step) == (8, REF.hw_lat("NVLINK", "tree", "Simple"))
    assert (c.terms[0].count, c.terms[0].per_step) == (8, REF.hw_lat("NVLINK", "ring", "LL"))
    assert to_us(a.value) == pytest.approx(8.4 + 3.4)
    assert to_us(b.value) == pytest.approx(8.4 + 8 * 4.0)


def test_multi_node_ring_latency_reference():
    """5.5: 2 nodes x 8 GPUs, AllReduce: nsteps 30, nInterSteps 2(nNodes-1) = 2; intraLat
    floored by netOverhead x3 for Simple; interLat = hwLat[NET][Ring] + 2 x latencyInter."""
    g = graph(8, 24, type_inter="PXB", latency_inter=2 * us)
    intel = latency("all_reduce", "ring", "Simple", Communicator(16, g, g, 80, nnodes=2))
    amd = latency("all_reduce", "ring", "Simple", Communicator(16, g, g, 80, nnodes=2,
                                                               cpu_vendor="amd"))
    assert [t.count for t in intel.terms] == [28, 2]
    assert to_us(intel.terms[0].per_step) == pytest.approx(3.4)          # max(3.4, 3 x 1.0)
    assert to_us(amd.terms[0].per_step) == pytest.approx(6.0)            # max(3.4, 3 x 2.0)
    assert to_us(amd.net_overhead) == pytest.approx(6.0)
    assert to_us(intel.terms[1].per_step) == pytest.approx(14.0 + 2 + 2)
    assert to_us(intel.value) == pytest.approx(8.4 + 28 * 3.4 + 2 * 18.0)
    ll = latency("all_reduce", "ring", "LL", Communicator(16, g, g, 80, nnodes=2))
    assert to_us(ll.terms[0].per_step) == pytest.approx(1.0)             # max(0.6, 1.0)
    assert to_us(ll.terms[1].per_step) == pytest.approx(2.7 + 2)
    ag = latency("all_gather", "ring", "LL", Communicator(16, g, g, 80, nnodes=2))
    assert [t.count for t in ag.terms] == [14, 1]


def test_one_rank_per_node_uses_net_tree_latency():
    """5.5: with ppn == 1 the inter-node latency is hwLat[NET][Tree][p] even for Ring."""
    g = graph(2, 12, type_inter="PXB")
    lat = latency("all_reduce", "ring", "LL", Communicator(4, g, g, 80, nnodes=4))
    assert to_us(lat.terms[1].per_step) == pytest.approx(5.0)
    assert lat.terms[1].count == 6


def test_tree_latency_multi_node():
    """5.5: Tree AllReduce base + 2((ppn-1) intraLat + log2i(nNodes) interLat)."""
    g = graph(4, 20, type_inter="PXB", pattern="balanced_tree")
    lat = latency("all_reduce", "tree", "LL128", Communicator(48, g, g, 80, nnodes=6))
    assert [t.count for t in lat.terms] == [14, 4]                      # log2i(6) = 2
    assert to_us(lat.value) == pytest.approx(14 + 14 * 1.25 + 4 * 8.5)


def test_multi_node_ring_latency_v2_12():
    """5.5 history: v2.12 nInterSteps = 2 nNodes, LL intraLat x1.8 multi-node, interLat =
    latencyInter if set else hwLat[NET][a][p], no net overhead."""
    g = graph(4, 22, type_inter="PXB")
    lat = latency("all_reduce", "ring", "LL", Communicator(16, g, g, 70, nnodes=2, profile="2.12.12"))
    assert [t.count for t in lat.terms] == [26, 4]
    assert to_us(lat.terms[0].per_step) == pytest.approx(0.47 * 1.8)
    assert to_us(lat.terms[1].per_step) == pytest.approx(2.7)
    assert lat.net_overhead == 0
    set_inter = graph(4, 22, type_inter="PXB", latency_inter=7 * us)
    lat = latency("all_reduce", "ring", "Simple", Communicator(16, set_inter, set_inter, 70,
                                                               nnodes=2, profile="2.12.12"))
    assert to_us(lat.terms[1].per_step) == pytest.approx(7.0)


def test_ring_plateau_rule():
    """5.7: multi-node Ring Simple AllReduce latency x1.4 (cc >= 80) or x1.9 (cc < 80) once
    nBytes / (comm->nChannels x nRanks) >= 64."""
    g = graph(8, 24, type_inter="PXB")
    comm = Communicator(16, g, g, 80, nnodes=2)                  # comm->nChannels = 16
    threshold = 64 * 16 * 16
    cell = tune("all_reduce", "ring", "Simple", comm)
    t = algo_time(cell, [threshold - 1, threshold], comm)
    assert t.plateau.tolist() == [1.0, 1.4]
    np.testing.assert_allclose(t.latency, cell.latency.value * np.array([1.0, 1.4]))
    volta = Communicator(16, g, g, 70, nnodes=2, nchannels=4)
    t = algo_time(tune("all_reduce", "ring", "Simple", volta), [64 * 4 * 16 - 1, 64 * 4 * 16], volta)
    assert t.plateau.tolist() == [1.0, 1.9]
    one_node = Communicator(8, g, g, 80)
    assert algo_time(tune("all_reduce", "ring", "Simple", one_node), 2**30, one_node).plateau == 1.0
    assert algo_time(tune("all_gather", "ring", "Simple", comm), 2**30, comm).plateau == 1.0
    pinned = Communicator(16, g, g, 70, nnodes=2, nchannels=16, profile="2.12.12")
    assert algo_time(tune("all_reduce", "ring", "Simple", pinned), 2**30, pinned).plateau == 1.9


def test_results_show_their_working_and_are_frozen():
    cell = tune("all_reduce", "ring", "LL", h100())
    assert cell.latency.base + sum(t.value for t in cell.latency.terms) == cell.latency.value
    assert cell.bus.steps[-1].after == cell.bus.value
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.bandwidth = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.bus.steps[0].after = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        select_algorithm("all_reduce", 8, h100()).time = 0


# ====================================================================== error paths
def test_unknown_and_unsupported_collectives():
    with pytest.raises(UnknownCollectiveError, match=r"expected one of \['all_reduce'"):
        select_algorithm("allreduce", 8, h100())
    for name in ("alltoall", "sendrecv"):
        with pytest.raises(UnsupportedCollectiveError, match=r"expected one of \['broadcast'"):
            tune(name, "ring", "Simple", h100())
    assert issubclass(UnsupportedCollectiveError, TuningError)
    assert issubclass(TuningError, DgxTopoError)


@pytest.mark.parametrize("bad", ["nvlstree", "collnet", None, 1])
def test_unknown_algorithm(bad):
    with pytest.raises(UnknownAlgorithmError, match=r"expected one of \['tree', 'ring', 'nvls', "
                                                    r"'nvls_tree', 'pat'\]"):
        tune("all_reduce", bad, "Simple", h100())


@pytest.mark.parametrize("bad", ["LL64", "simple128", None, 0])
def test_unknown_protocol(bad):
    with pytest.raises(UnknownProtocolError, match=r"expected one of \['LL', 'LL128', 'Simple'\]"):
        tune("all_reduce", "ring", bad, h100())
    if bad is not None:
        with pytest.raises(UnknownProtocolError):
            select_algorithm("all_reduce", 8, h100(), protocol=bad)


@pytest.mark.parametrize("kw, match", [
    (dict(nchannels=0), "nchannels"), (dict(nchannels=True), "nchannels"),
    (dict(nchannels=2.0), "nchannels"), (dict(bw_intra=0), "bw_intra"),
    (dict(bw_intra=float("nan")), "bw_intra"), (dict(bw_intra="30"), "bw_intra"),
    (dict(bw_inter=-1.0), "bw_inter"), (dict(type_intra="NVLINK"), "type_intra"),
    (dict(type_inter="pix"), "type_inter"), (dict(pattern="chain"), "pattern"),
    (dict(same_channels=1), "same_channels"), (dict(latency_inter=-1e-6), "latency_inter"),
    (dict(latency_inter=float("inf")), "latency_inter"),
])
def test_channel_graph_validation(kw, match):
    args = dict(nchannels=4, bw_intra=20 * GB, type_intra="NVL") | kw
    with pytest.raises(TuningError, match=match):
        ChannelGraph(**args)


def test_channel_graph_defaults():
    g = ChannelGraph(4, 20 * GB, "NVL")
    assert (g.bw_inter, g.type_inter, g.pattern, g.same_channels, g.latency_inter) == \
        (20 * GB, "PIX", "ring", True, 0.0)
    assert g.hardware == "NVLINK"


@pytest.mark.parametrize("kw, match", [
    (dict(nranks=1), "single rank"), (dict(nranks=0), "nranks"), (dict(nranks=8.0), "nranks"),
    (dict(nnodes=0), "nnodes"), (dict(nnodes=9), "nnodes"),
    (dict(compute_capability=-1), "compute_capability"),
    (dict(compute_capability="90"), "compute_capability"),
    (dict(compute_capability_max=80), "compute_capability_max"),
    (dict(cpu_vendor="arm"), "cpu_vendor"), (dict(nchannels=0), "nchannels"),
    (dict(cuda_11_8="yes"), "cuda_11_8"), (dict(ring="ring"), "ring must be a ChannelGraph"),
    (dict(tree=None), "tree must be a ChannelGraph"),
])
def test_communicator_validation(kw, match):
    g = graph()
    args = dict(nranks=8, ring=g, tree=g, compute_capability=90) | kw
    with pytest.raises(TuningError, match=match):
        Communicator(**args)


@pytest.mark.parametrize("bad", [-1, [1, -8], float("nan"), float("inf"), 1.5, "1.5M", [[1], [2, 3]]])
def test_bad_sizes(bad):
    # The one size parser (topo.parse_nbytes) and its one error, as for estimate() and the CLI.
    with pytest.raises(topo.SizeError, match="invalid size"):
        select_algorithm("all_reduce", bad, h100())


def test_old_profile_refuses_what_it_cannot_model():
    old = h100(profile="2.12.12")
    with pytest.raises(MissingConstantError, match="compute capability < 90"):
        tune("all_reduce", "ring", "LL", old)
    with pytest.raises(MissingConstantError, match="compute capability < 90"):
        select_algorithm("all_reduce", 8, old)
    # Ring Simple needs no cap table, so v2.12 can still price it on sm90.
    forced = select_algorithm("all_reduce", 8, old, algorithm="ring", protocol="Simple")
    assert forced.bus_bandwidth == 360 * GB
    g = graph(2, 20, "C2C")
    with pytest.raises(DgxTopoError, match="unknown path type 'C2C'"):
        applicability("all_reduce", "ring", "LL128", Communicator(4, g, g, 80, profile="2.12.12"))
    with pytest.raises(UnknownNcclVersionError):
        h100(profile="2.33.0")


def test_a_communicator_cannot_be_tuned_under_another_release():
    """Issue 9 item 2: the communicator owns its profile; a different one is refused."""
    comm = h100()
    assert comm.profile is REF
    assert select_algorithm("all_reduce", 8, comm, profile="2.27.7").time > 0   # the same: fine
    for call in (lambda: tune("all_reduce", "ring", "LL", comm, "2.18.6"),
                 lambda: select_algorithm("all_reduce", 8, comm, profile="2.19.4"),
                 lambda: algo_time(tune("all_reduce", "ring", "LL", comm), 8, comm, "2.21.5"),
                 lambda: tuning_table("all_reduce", comm, "2.23.4")):
        with pytest.raises(TuningError, match="runs NCCL 2.27.7, received profile"):
            call()


# Importing models (and the NCCL model's modules) imports no plotly, and topo never imports
# models: checked in tests/test_imports.py (one subprocess for every import check).


def test_profile_link_figures_are_nccls_and_below_line_rate():
    """NCCL 2.27.7 src/graph/topo.h and topo.cc: per-link figures NCCL charges, per direction."""
    ref = nccl_profile("2.27.7")
    assert [ref.nvlink_bandwidth(cc) / GB for cc in (60, 70, 80, 90, 100)] == [18, 20, 20, 20.6, 40.1]
    assert [ref.link_bandwidth(f"pcie{g}_x16") / GB for g in (3, 4, 5)] == [12, 24, 48]
    assert [ref.link_bandwidth(k) / GB for k in ("ib_edr", "ib_hdr", "ib_ndr")] == [12.5, 25, 50]
    assert (ref.inter_cpu_bandwidth("qpi_bdw") / GB, ref.inter_cpu_bandwidth("upi_skl") / GB) == (6, 10)
    for cc, link in ((60, "nvlink1"), (70, "nvlink2"), (80, "nvlink3"), (90, "nvlink4"), (100, "nvlink5")):
        assert ref.nvlink_bandwidth(cc) < topo.LINKS[link].bandwidth, "NCCL never charges above line rate"
    with pytest.raises(MissingConstantError, match="nvlink9|no bandwidth"):
        ref.link_bandwidth("nvlink9")
    with pytest.raises(MissingConstantError, match="inter-socket"):
        ref.inter_cpu_bandwidth("pcie3_x16")
