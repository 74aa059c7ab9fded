"""NCCL's graph dump beside the model's search (models.studies.graph_compare): the synthetic DGX
H100 dump (tests/data, NCCL's layout with the figures of its search traced by hand) agrees
with the model graph by graph and channel by channel; an edited channel or field is marked; a
dump that does not fit the fabric is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import topo
from models.engine.nccl.graph_dump import parse_graph_dump
from models.engine.nccl.search import search_channels
from models.studies.graph_compare import COMPARED_FIELDS, GraphCompareError, compare_graph_dump

TEXT = (Path(__file__).parents[2] / "data" / "nccl_graph_dgxh100_synthetic.xml").read_text()
RING = "<channel>" + " ".join(f'<gpu dev="{d}"/>' for d in range(8)) + "</channel>"


@pytest.fixture(scope="module")
def dgxh100():
    return topo.build("dgxh100")


def test_the_synthetic_dump_is_the_models_search_on_a_dgx_h100(dgxh100):
    c = compare_graph_dump(dgxh100, parse_graph_dump(TEXT))
    assert c.same and c.gpus == tuple(range(8)) and c.nccl == "2.27.7"
    assert [(g.name, g.nccl["nchannels"], g.model["nchannels"], g.differs) for g in c.graphs] == [
        ("ring", 12, 12, ()), ("tree", 12, 12, ()), ("nvls", 8, 8, ())]
    ring = search_channels(dgxh100)  # the model's own figures, as the dump writes them
    assert (ring.nchannels, ring.bw_intra, ring.type_intra.name) == (12, 30e9, "NVL")
    assert [p.model for p in c.channels if p.graph == "nvls"] == [(h,) for h in range(8)]
    assert len(c.to_records()) == 32 and all(r["same"] for r in c.to_records())


def test_an_edited_channel_and_field_are_marked(dgxh100):
    swapped = RING.replace('<gpu dev="6"/> <gpu dev="7"/>', '<gpu dev="7"/> <gpu dev="6"/>')
    text = TEXT.replace(RING, swapped, 4)  # ring channels 0-3 (the ring comes first)
    text = text.replace('nchannels="12" speedintra="30"', 'nchannels="12" speedintra="20"', 1)
    c = compare_graph_dump(dgxh100, parse_graph_dump(text))
    ring = [p for p in c.channels if p.graph == "ring"]
    assert not c.same and [p.same for p in ring] == [False] * 4 + [True] * 8
    assert ring[0].nccl == (0, 1, 2, 3, 4, 5, 7, 6) and ring[0].model == tuple(range(8))
    assert c.graphs[0].differs == ("bw_intra",) and c.graphs[1].differs == ()
    assert set(c.graphs[0].differs) <= set(COMPARED_FIELDS)


def test_a_channel_only_one_side_has_is_marked_as_missing_on_the_other(dgxh100):
    text = TEXT.replace(RING + "\n", "", 1).replace('nchannels="12"', 'nchannels="11"', 1)
    c = compare_graph_dump(dgxh100, parse_graph_dump(text))
    last = [p for p in c.channels if p.graph == "ring"][-1]
    assert (last.channel, last.nccl, last.model, last.same) == (11, None, tuple(range(8)), False)
    assert c.graphs[0].differs == ("nchannels",)


def test_a_gpu_subset_is_the_communicator_and_gpus_outside_it_are_refused(dgxh100):
    four = ('<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="1" speedintra="40" '
            'speedinter="40" latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="1"><channel>'
            '<gpu dev="0"/><gpu dev="1"/><gpu dev="2"/><gpu dev="3"/></channel></graph></graphs>')
    c = compare_graph_dump(dgxh100, parse_graph_dump(four))
    assert c.gpus == (0, 1, 2, 3) and [g.name for g in c.graphs] == ["ring", "tree", "nvls"]
    assert c.graphs[1].nccl is None and c.graphs[1].differs == ("missing",)
    with pytest.raises(GraphCompareError, match=r"GPU\(s\) 2, 3 outside the communicator 0,1"):
        compare_graph_dump(dgxh100, parse_graph_dump(four), "0,1")


def test_a_gpu_the_host_has_not_is_refused_in_one_line(dgxh100):
    text = TEXT.replace('<gpu dev="7"/>', '<gpu dev="9"/>', 1)
    with pytest.raises(GraphCompareError, match="ring channel 0 names GPU dev 9 of host, which the fabric has "
                                                "not: expected devs below 8") as caught:
        compare_graph_dump(dgxh100, parse_graph_dump(text))
    assert "\n" not in str(caught.value)
