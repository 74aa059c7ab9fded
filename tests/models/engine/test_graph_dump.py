"""NCCL's graph dump (models.engine.nccl.graph_dump): read as NCCL writes it (the synthetic
DGX H100 dump in tests/data, which follows ncclTopoGetXmlFromGraphs' layout), malformed input
refused naming the element, and any mutation read or refused by the typed error only."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.engine.nccl.graph_dump import (GRAPH_DUMP_INPUT, GraphDumpError, parse_graph_dump,
                                           read_graph_dump)
from tests.xml_fuzz import hostile_texts, with_attribute
from topo.inputs import InputFileError

DUMP = Path(__file__).parents[2] / "data" / "nccl_graph_dgxh100_synthetic.xml"

#: A small dump of both nodes' kinds of channel: one ring channel over two nodes (NET in, GPUs, NET out).
SMALL = ('<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="24" '
         'speedinter="24" latencyinter="0" typeintra="NVL" typeinter="PXB" samechannels="0">'
         '<channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/><net dev="0"/></channel>'
         '<channel><net dev="1"/><gpu dev="1"/><gpu dev="0"/><net dev="1"/></channel>'
         '</graph></graphs>')


def test_the_synthetic_dgx_h100_dump_reads_as_written():
    dump = read_graph_dump(DUMP)
    ring, tree, nvls = dump.graphs
    assert [(g.id, g.name, g.pattern, g.nchannels) for g in dump.graphs] == [
        (0, "ring", "ring", 12), (1, "tree", "balanced_tree", 12), (3, "nvls", "nvls", 8)]
    assert (ring.bw_intra, ring.bw_inter, ring.type_intra, ring.type_inter, ring.same_channels) == \
        (30e9, 30e9, "NVL", "PIX", True)
    assert (nvls.bw_intra, nvls.bw_inter, nvls.same_channels) == (40e9, 60e9, False)
    assert {c.devs for c in ring.channels} == {tuple(range(8))}
    assert [c.devs[0] for c in nvls.channels] == list(range(8))
    assert all(c.net_in is None and c.net_out is None for g in dump.graphs for c in g.channels)
    assert dump.graph("collnet_direct") is None and dump.graph("tree") is tree
    assert len(dump.to_records()) == 12 + 12 + 8


def test_nets_and_long_topo_ids_read_as_nccl_writes_them():
    # NCCL_TOPO_ID(systemId, localId) = systemId << 56 | localId (src/graph/topo.h), read by strtol(.., 0).
    text = SMALL.replace('<gpu dev="1"/><gpu dev="0"/>', '<gpu dev="0x100000000000001"/><gpu dev="0"/>')
    ring = parse_graph_dump(text).graphs[0]
    assert [(c.net_in, c.gpus, c.net_out) for c in ring.channels] == [
        (0, ((0, 0), (0, 1)), 0), (1, ((1, 1), (0, 0)), 1)]
    assert ring.type_inter == "PXB" and ring.bw_inter == 24e9


@pytest.mark.parametrize("old, new, message", [
    ('<graphs version="1">', '<graphs version="2">', "<graphs>: version='2', expected 1"),
    ('<graphs version="1">', '<system version="1">', "expected the root element <graphs>"),
    ('id="0"', 'id="5"', "id='5', expected one of 0 (ring)"),
    ('id="0"', 'id="x"', "id='x', expected a whole number"),
    ('pattern="4"', 'pattern="7"', "<graph id=0>: pattern='7', expected one of 1 (balanced_tree)"),
    ('nchannels="2"', 'nchannels="3"', "nchannels=3 but 2 <channel> element(s)"),
    ('nchannels="2"', 'nchannels="-2"', "nchannels='-2', expected a whole number from 0"),
    ('speedintra="24"', 'speedintra="nan"', "speedintra='nan', expected a finite number"),
    ('speedintra="24"', 'speedintra="fast"', "speedintra='fast', expected a number"),
    (' speedinter="24"', '', "missing attribute 'speedinter'"),
    ('typeintra="NVL"', 'typeintra="NVLINK"', "typeintra='NVLINK', expected a path type"),
    ('samechannels="0"', 'samechannels="2"', "samechannels='2', expected 0 or 1"),
    ('<gpu dev="1"/><gpu dev="0"/>', '<gpu dev="0"/><gpu dev="0"/>', "dev='0' is listed twice in one channel"),
    ('<gpu dev="1"/><gpu dev="0"/>', '<gpu dev="1"/><net dev="3"/><gpu dev="0"/>', "no <net> between GPUs"),
    ('<net dev="1"/><gpu dev="1"/>', '<gpu dev="1"/>', "one <net>: expected none (one node) or two"),
    ('<gpu dev="1"/><gpu dev="0"/>', '<gpu/><gpu dev="0"/>', "missing attribute 'dev'"),
    ('<gpu dev="1"/><gpu dev="0"/>', '<nvlink/>', "unknown element, expected <gpu> or <net>"),
    ('<channel><net dev="1"/><gpu dev="1"/><gpu dev="0"/><net dev="1"/></channel>', '<chan/>',
     "<chan>: unknown element, expected <channel>"),
    ('<channel><net dev="1"/><gpu dev="1"/><gpu dev="0"/><net dev="1"/></channel>',
     '<channel><net dev="1"/><net dev="1"/></channel>', "no <gpu>"),
])
def test_malformed_dumps_are_refused_naming_the_element(old, new, message):
    text = SMALL.replace(old, new, 1)
    if old.startswith("<graphs"):
        text = text.replace("</graphs>", "</system>") if "system" in new else text
    assert text != SMALL
    with pytest.raises(GraphDumpError) as caught:
        parse_graph_dump(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_dump_without_graphs_or_with_one_graph_twice_is_refused():
    with pytest.raises(GraphDumpError, match="no <graph>"):
        parse_graph_dump('<graphs version="1"/>')
    graph = SMALL[len('<graphs version="1">'):-len("</graphs>")]
    with pytest.raises(GraphDumpError, match=r"graph ids \[0, 0\]: expected each graph once"):
        parse_graph_dump(f'<graphs version="1">{graph}{graph}</graphs>')


@pytest.mark.parametrize("text", hostile_texts("graphs"))
def test_hostile_or_broken_text_raises_only_the_typed_error(text):
    with pytest.raises(GraphDumpError):
        parse_graph_dump(text)


@settings(max_examples=60)
@given(cut=st.integers(0, len(SMALL) - 1))
def test_truncated_xml_raises_only_the_typed_error(cut):
    with pytest.raises(GraphDumpError):
        parse_graph_dump(SMALL[:cut])


_ATTRIBUTE = st.sampled_from(["version", "id", "pattern", "crossnic", "nchannels", "speedintra", "speedinter",
                              "latencyinter", "typeintra", "typeinter", "samechannels", "dev"])
_VALUE = st.one_of(st.integers(-3, 2**70).map(str), st.integers(0, 2**64).map(hex), st.text(max_size=6),
                   st.sampled_from(["NVL", "SYS", "1e3", "inf", "0x", "-0"]))


@settings(max_examples=150)
@given(name=_ATTRIBUTE, value=_VALUE, nth=st.integers(0, 5))
def test_any_attribute_value_parses_or_raises_the_typed_error(name, value, nth):
    text = with_attribute(SMALL, name, value, nth)
    if text is None:
        return
    try:
        dump = parse_graph_dump(text)
    except GraphDumpError:
        return
    for g in dump.graphs:  # what reads is whole: the counts agree and the bandwidths are finite
        assert g.nchannels == len(g.channels) and g.bw_intra >= 0 and g.bw_inter >= 0


def test_files_are_read_by_the_input_rules(tmp_path):
    with pytest.raises(InputFileError, match="it is a directory, expected a regular file"):
        read_graph_dump(tmp_path)
    with pytest.raises(InputFileError, match="NCCL graph XML.*--max-input"):
        read_graph_dump(DUMP, limit=1000)
    assert GRAPH_DUMP_INPUT.limit == 16 * 2**20
