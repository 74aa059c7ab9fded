"""The tuner config (models.studies.tuner): its rows are the collective model's choices band by band,
and it reads back in the column order of NCCL's example tuner plugin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from models.engine.nccl.algorithms.catalog import algorithm_named
from models.engine.nccltests import NCCL_COLLECTIVES, UnknownCollectiveError
from models.predict.collectives import Estimator, estimate
from models.studies.tuner import (CSV_COLUMNS, MAX_BYTES, TunerError, TunerRow, TunerRows, parse_tuner_config,
                                  tuner_config, tuner_rows)

#: Fabrics whose choices change in different ways: NVLS on one DGX H100; Tree, Ring and NVLSTree
#: alternating across two; NCCL 2.12's Tree and Ring on half a DGX-1V.
CASES = {"dgxh100": ("dgxh100", None, None), "2xdgxh100": ("2xdgxh100", "0-3,8-11", None),
         "dgx1v-2.12": ("dgx1v", "0-3", "2.12")}


@pytest.fixture(scope="module")
def computed():
    out = {}
    for name, (spec, gpus, profile) in CASES.items():
        G = topo.build(spec)
        out[name] = (tuner_rows(G, gpus=gpus, profile=profile), Estimator(G, profile=profile), gpus)
    return out


def _choice(estimator, collective, sizes, gpus) -> list:
    """(algorithm, protocol, channels NCCL runs) that estimate chose at each size: the channels are
    its algorithm's blocks of the graph's channels (comm->nChannels, comm->nvlsChannels)."""
    e = estimator.estimate(collective, sizes, gpus)
    G = estimator.fabric.G
    nodes = topo.select_gpus(G, gpus)
    cc = min(G.nodes[n]["compute_capability"] for n in nodes)
    nnodes = e.ring.nnodes  # NCCL's nodes: a multi-node NVLink domain's hosts are one
    return [(a, p, algorithm_named(a).blocks(c, estimator.fabric.profile, cc, nnodes))
            for a, p, c in zip(np.atleast_1d(e.algorithm).tolist(), np.atleast_1d(e.protocol).tolist(),
                               np.atleast_1d(e.nchannels).tolist())]


def _named(row) -> tuple:
    return row.algorithm, row.protocol, row.nchannels


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_row_names_what_estimate_chose_at_every_power_of_two_and_on_both_sides_of_each_edge(computed, case):
    rows, estimator, gpus = computed[case]
    for collective in NCCL_COLLECTIVES:
        own = [r for r in rows if r.collective == collective]
        sizes = sorted({2**k for k in range(32)} | {r.min_bytes for r in own} | {r.max_bytes for r in own}
                       | {r.min_bytes - 1 for r in own} - {-1, 0})
        for size, chosen in zip(sizes, _choice(estimator, collective, sizes, gpus)):
            assert _named(rows.row_for(collective, size)) == chosen, (collective, size)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bands_tile_every_size_and_each_edge_changes_the_choice(computed, case):
    rows, _, _ = computed[case]
    assert [r.collective for r in rows] == sorted((r.collective for r in rows), key=NCCL_COLLECTIVES.index)
    for collective in NCCL_COLLECTIVES:
        own = [r for r in rows if r.collective == collective]
        assert own[0].min_bytes == 0 and own[-1].max_bytes == MAX_BYTES
        for a, b in zip(own, own[1:]):
            assert a.max_bytes + 1 == b.min_bytes and _named(a) != _named(b)


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(sorted(CASES)), collective=st.sampled_from(NCCL_COLLECTIVES),
       size=st.integers(1, MAX_BYTES))
def test_any_size_is_covered_by_the_row_naming_estimates_choice(computed, case, collective, size):
    rows, estimator, gpus = computed[case]
    assert _named(rows.row_for(collective, size)) == _choice(estimator, collective, size, gpus)[0]


def test_nnodes_and_nranks_come_from_the_gpu_set(computed):
    assert {(r.nnodes, r.nranks) for r in computed["2xdgxh100"][0]} == {(2, 8)}
    assert {(r.nnodes, r.nranks) for r in computed["dgx1v-2.12"][0]} == {(1, 4)}


def test_a_large_all_reduce_on_a_dgx_h100_reads_back_as_nvls_simple_in_the_plugins_column_order(computed):
    rows = computed["dgxh100"][0]
    text = tuner_config(rows)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert text.splitlines()[-len(lines) - 1] == "# " + ",".join(CSV_COLUMNS[:8])
    nbytes = 2**30
    e = estimate(topo.build("dgxh100"), "all_reduce", nbytes)
    (line,) = [line for line in lines if line.startswith("allreduce,")
               and int(line.split(",")[1]) <= nbytes <= int(line.split(",")[2])]
    # channels: what NCCL runs, comm->nvlsChannels = 16 on sm90 (NVIDIA/nccl v2.27.7-1
    # src/transport/nvls.cc, NVLS_NCHANNELS_SM90), not the NVLS graph's 8 heads (e.nchannels).
    assert dict(zip(CSV_COLUMNS, line.split(","))) == {
        "collective_type": "allreduce", "min_bytes": str(rows.row_for("all_reduce", nbytes).min_bytes),
        "max_bytes": str(MAX_BYTES), "algorithm": "nvls", "protocol": "simple", "channels": "16",
        "nNodes": "1", "nRanks": "8"}
    assert (str(e.algorithm), str(e.protocol), int(e.nchannels)) == ("nvls", "Simple", 8)
    assert parse_tuner_config(text) == rows.rows


def test_a_gb200_nvl72_rack_is_one_nccl_node_running_24_nvls_channels():
    """NCCL fuses a GB200 NVL72's 18 trays into one node (MNNVL), so the plugin sees nNodes 1; on
    one node sm100 runs comm->nvlsChannels = 24 (NVIDIA/nccl v2.27.7-1 src/transport/nvls.cc,
    NVLS_NCHANNELS_SM100; 32 only across nodes), though the NVLS graph has 32 heads."""
    G = topo.build("gb200nvl72")
    (row,) = [r for r in tuner_rows(G, collectives=["all_reduce"]) if r.max_bytes == MAX_BYTES]
    e = estimate(G, "all_reduce", 2**30)
    assert (row.algorithm, row.nnodes, row.nranks, row.nchannels) == ("nvls", 1, 72, 24)
    assert (str(e.algorithm), int(e.nchannels), e.ring.nnodes) == ("nvls", 32, 1)


def test_a_ring_row_on_a_dgx_h100_asks_for_the_24_channels_nccl_runs_not_the_12_its_search_found(computed):
    """NCCL's ring search on a DGX H100 (18 NVLinks x 20.6 GB/s = 370.8 GB/s per GPU) starts at 60
    GB/s, 6 channels x 60 = 360 <= 370.8; ncclTopoDupChannels makes them 12 x 30; pass 2's 12 x 40
    = 480 > 370.8 fails: 12 channels (NVIDIA/nccl v2.27.7-1 src/graph/search.cc, traced by hand).
    ncclTopoPostset doubles them: comm->nChannels = min(MAXCHANNELS 32, 2 x 12) = 24
    (src/graph/connect.cc), the count Ring kernels run and the plugin's channels column replaces."""
    rows = computed["dgxh100"][0]
    ring = [r for r in rows if r.algorithm == "ring"]
    e = estimate(topo.build("dgxh100"), "all_gather", 2**30)
    assert str(e.algorithm) == "ring" and int(e.nchannels) == 12
    assert ring and {r.nchannels for r in ring} == {24}
    assert ",ring,simple,24,1,8" in tuner_config(rows)


def test_the_config_has_no_spaces_and_eight_fields_a_line(computed):
    for rows, _, _ in computed.values():
        for line in tuner_config(rows, title="a title").splitlines():
            assert line.startswith("#") or (" " not in line and line.count(",") == 7)


def test_a_config_reads_back_with_the_optional_columns_and_comments():
    text = "# c\n\nallgather,0,1023,ring,ll,12,1,8,-1,-1\n  reducescatter,1024,2047,pat,ll128,4,2,16,1\n"
    assert parse_tuner_config(text) == (TunerRow("all_gather", 0, 1023, "ring", "LL", 12, 1, 8),
                                        TunerRow("reduce_scatter", 1024, 2047, "pat", "LL128", 4, 2, 16))


@pytest.mark.parametrize("line, words", [
    ("allreduce,0,1,ring,ll,1,1", "line 1: expected 8 to 10 comma-separated fields"),
    ("allreduce,0,1,ring,ll,1,1,8,1,1,1", "received 11"),
    ("all_reduce,0,1,ring,ll,1,1,8", "received 'all_reduce', 'ring', 'll'"),
    ("allreduce,0,1,ring,LL,1,1,8", "received 'allreduce', 'ring', 'LL'"),
    ("allreduce,0,1,rings,ll,1,1,8", "expected a collective, algorithm and protocol"),
    ("allreduce,0,1k,ring,ll,1,1,8", "expected integers for min_bytes"),
])
def test_a_malformed_line_is_refused_naming_it(line, words):
    with pytest.raises(TunerError, match=words.replace("(", r"\(")):
        parse_tuner_config(line)


def test_what_the_plugin_cannot_take_is_refused_by_name():
    G = topo.build("dgxh100")
    with pytest.raises(TunerError, match="expected one of them, received 'alltoall'"):
        tuner_rows(G, collectives=["alltoall"])
    with pytest.raises(UnknownCollectiveError):
        tuner_rows(G, collectives=["allreduce_x"])
    with pytest.raises(TunerError, match="at least 2 GPUs.*received 1"):
        tuner_rows(G, gpus=[3])
    with pytest.raises(TunerError, match="max_bytes of at least 1, received 0"):
        tuner_rows(G, max_bytes=0)
    with pytest.raises(topo.GpuSelectionError):
        tuner_rows(G, gpus=[9])


def test_a_smaller_top_ends_the_last_band_there():
    rows = tuner_rows(topo.build("dgxh100"), collectives=["all_reduce", "all_reduce"], max_bytes="1M")
    assert [(r.min_bytes, r.max_bytes, r.algorithm, r.protocol) for r in rows] == [(0, 2**20, "ring", "LL")]
    assert rows.to_records()[0]["gpus"] == tuple(range(8))


def test_rows_of_one_collective_with_one_choice_merge():
    rows = TunerRows((TunerRow("reduce", 0, 9, "ring", "LL", 2, 1, 2),), (0, 1), "2.27.7")
    assert len(rows) == 1 and rows[0].covers(9) and not rows[0].covers(10) and rows.row_for("reduce", 10) is None
