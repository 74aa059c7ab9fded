"""The behaviour table of NCCL releases (models.engine.nccl.releases): one row per profile, one
typed cell per behaviour, the docstring copies true, and each behaviour deciding on its own.

Known answers are NCCL's rules at the tags each profile names (NVIDIA/nccl src/graph/tuning.cc,
src/init.cc, src/graph/paths.cc, src/transport/nvls.cc); the tree-cap case is the v2.5 / v2.7
``maxTreeBw`` rule that the ring latency flag used to decide.
"""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

import models.engine.nccl.profiles as profiles_module
import models.engine.nccl.releases as releases
from models.engine.nccl.profiles import PROFILES, nccl_profile, versions_table
from models.engine.nccl.releases import (BEHAVIOURS, COLUMNS, Behaviour, Ll128Rule, NvlsAlgorithms,
                                         RingBuilder, RingLatency, TreeCap, behaviour_table)
from models.present.versions_text import format_behaviour_table, versions_rows
from models.engine.nccl.tuning import ChannelGraph, Communicator, bus_bandwidth, latency
from topo.units import GB


def test_one_row_per_profile_carried_by_the_profile():
    assert list(BEHAVIOURS) == list(PROFILES)
    for version, profile in PROFILES.items():
        assert profile.behaviour is BEHAVIOURS[version]
        assert profile.behaviour.tag == profile.tag


def test_every_cell_is_a_member_of_its_column():
    for row in BEHAVIOURS.values():
        for column in COLUMNS:
            value = getattr(row, column.name)
            if column.name.startswith("nvls_") and row.nvls is NvlsAlgorithms.NONE \
                    or column.name.startswith("legacy_") \
                    and row.ring_builder is RingBuilder.TOPOLOGY_SEARCH:
                assert value is None, (row.profile, column.name)
            else:
                assert isinstance(value, column.kind) and issubclass(column.kind, Behaviour), \
                    (row.profile, column.name)
        assert {f.name for f in dataclasses.fields(row)} >= {c.name for c in COLUMNS}


def test_the_docstring_table_is_the_generated_one():
    doc = releases.__doc__
    inside = doc[doc.index(".. behaviour-table") + len(".. behaviour-table"):
                 doc.index(".. end-behaviour-table")]
    assert inside.strip() == format_behaviour_table()
    assert behaviour_table()[1][:3] == ("2.3.5", "v2.3.5-5", "nvlink_counts")


def test_the_profiles_docstring_table_names_every_profile_its_releases_and_tag():
    """The first three columns of the profiles docstring table are versions_table's, in words."""
    rows = re.findall(r"^(\d\.\S+-\S+)\s+(\d\.\d+\.\d+)\s+(v?\d\S+-\d+)\s", profiles_module.__doc__,
                      flags=re.MULTILINE)
    assert rows == [row[:3] for row in versions_rows()]


def test_the_versions_table_behaviour_words_come_from_the_table():
    for (_, version, _, words), (_, _, _, behaviour), row in zip(versions_rows(), versions_table(),
                                                                 BEHAVIOURS.values()):
        assert version == row.profile and behaviour is row
        assert words.split(", ") == [row.ring_builder.label, row.tree.label, row.ll128.label,
                                     row.nvb.label, row.pxn.label, row.selection.label]


def test_ll128_rule_and_its_constants_agree():
    """LISTED_COMPUTE_CAPABILITIES reads the profile's list; the other rules have none."""
    for profile in PROFILES.values():
        listed = profile.behaviour.ll128 is Ll128Rule.LISTED_COMPUTE_CAPABILITIES
        assert listed == (profile.ll128_compute_capabilities is not None) or \
            profile.behaviour.ll128 is Ll128Rule.NONE, profile.version


def test_nvls_cells_agree_with_the_nvls_constants():
    for profile in PROFILES.values():
        assert (profile.behaviour.nvls is NvlsAlgorithms.NONE) == (profile.nvls is None)


def test_the_tree_cap_is_decided_by_its_own_column():
    """v2.5: maxTreeBw 70 GB/s on 2 nodes (nNodes > 1); v2.7: 110 GB/s (nNodes > 2). Changing the
    ring latency rule alone leaves the cap alone (it used to decide it); the cap rule alone moves
    the cap to the other column of the release's own caps."""
    g = ChannelGraph(8, 20 * GB, "NVL", pattern="balanced_tree")
    caps = {}
    for version in ("2.5.7", "2.7.8"):
        comm = Communicator(16, g, g, 70, nnodes=2, profile=version)
        caps[version] = bus_bandwidth("all_reduce", "tree", "Simple", comm).value
    assert caps == {"2.5.7": pytest.approx(70 * GB), "2.7.8": pytest.approx(110 * GB)}
    v27 = nccl_profile("2.7.8")
    swapped = dataclasses.replace(v27, behaviour=dataclasses.replace(
        v27.behaviour, ring_latency=RingLatency.NSTEPS_HW))
    comm = Communicator(16, g, g, 70, nnodes=2, profile=swapped)
    assert bus_bandwidth("all_reduce", "tree", "Simple", comm).value == pytest.approx(110 * GB)
    assert latency("all_reduce", "ring", "Simple", comm).terms[0].name.startswith("nsteps")
    capped = dataclasses.replace(v27, behaviour=dataclasses.replace(
        v27.behaviour, tree_cap=TreeCap.TOTAL_V2_5))
    comm = Communicator(16, g, g, 70, nnodes=2, profile=capped)     # v2.7's "several nodes" cap
    assert bus_bandwidth("all_reduce", "tree", "Simple", comm).value == pytest.approx(80 * GB)


def test_cells_cite_the_tag_and_the_file():
    cell = BEHAVIOURS["2.12.12"].cell("pxn")
    assert cell == "nvlink_peer: PXN (NVIDIA/nccl v2.12.12-1 src/graph/paths.cc, src/graph/topo.h)"
    assert BEHAVIOURS["2.3.7"].cell("nvls_ratio").startswith("- (NVIDIA/nccl v2.3.7-1")
    with pytest.raises(KeyError):
        BEHAVIOURS["2.3.7"].cell("no_such_column")


def test_no_behaviour_is_compared_as_a_string():
    """Modules decide behaviours by identity with an enum member, never by string equality."""
    import models.engine.nccl.channels as channels
    import models.engine.nccl.nvls as nvls
    import models.engine.nccl.system as system
    import models.engine.nccl.tuning as tuning
    for module in (channels, nvls, system, tuning):
        source = inspect.getsource(module)
        assert not re.search(r"(profile|rules|behaviour)\.\w+ *(==|!=|in) *\(?[\"']", source), module


def test_no_gpu_relay_before_v2_8():
    """NVB paths arrive in v2.8 (src/graph/paths.cc): on a DGX-1V, GPUs 0, 1 and 5 (0 and 5 share
    no NVLink) ring over NVLink with a relay through GPU 1 from v2.8 on, over the CPUs (SYS) in
    v2.7; the hop of v2.7 never names a relay."""
    import topo
    from models.engine.nccl.system import NcclSystem
    from models.engine.routes import PathType
    from models.predict.collectives import estimate

    G = topo.dgx1v()
    members = ("gpu0", "gpu1", "gpu5")
    assert NcclSystem(G, "2.8.4").hop("gpu5", "gpu0", members)[0] == PathType.NVB
    assert NcclSystem(G, "2.7.8").hop("gpu5", "gpu0", members)[0] == PathType.SYS
    old, new = (estimate(G, "all_reduce", 2**30, [0, 1, 5], profile=v) for v in ("2.7.8", "2.8.4"))
    assert (old.ring.type_intra, new.ring.type_intra) == (PathType.SYS, PathType.NVB)
