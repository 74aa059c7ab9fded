"""Reading MSCCL XML (models.schedules.msccl): the two real schedules of Azure/msccl-executor-nccl
(tests/data/msccl, see its README) read as the runtime reads them, both dialects, and malformed
input refused with one typed error naming where.

Known answers: the attribute values of ap2ll.xml's gpu 0 are those schedules.md (1.10) quotes
from the file; the counts of steps by type are those of the files (grep)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.schedules import EXECUTOR, MSCCL, ScheduleFormatError, parse_msccl, read_msccl, to_msccl_xml
from models.schedules.msccl import MSCCL_INPUT
from models.schedules.ring import ring_all_gather
from tests.conftest import DATA
from tests.xml_fuzz import hostile_texts, with_attribute
from topo.errors import CountError
from topo.inputs import InputFileError

AP2LL = DATA / "msccl" / "ndv4_ap2ll.xml"
AG1M = DATA / "msccl" / "ndv5_ag-1m.xml"

SMALL = ('<algo name="x" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0">'
         '<gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0"><tb id="0" send="1" recv="1" chan="0">'
         '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>'
         '</tb></gpu><gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0"/></algo>')


def test_ap2ll_reads_as_the_runtime_reads_it():
    s = read_msccl(AP2LL)
    assert (s.name, s.protocol, s.collective, s.coll, s.nchannels, s.nchunksperloop, s.ngpus) == \
        ("allreduce_pairs", "LL", "all_reduce", "allreduce", 2, 128, 8)
    assert (s.inplace, s.outofplace, s.min_bytes, s.max_bytes, s.dialect) == (True, False, 512, 40960, EXECUTOR)
    g0 = s.gpus[0]
    assert (g0.i_chunks, g0.o_chunks, g0.s_chunks) == (128, 0, 112)
    tb0, tb1, tb2 = g0.threadblocks[:3]
    assert [(tb.send, tb.recv, tb.chan) for tb in (tb0, tb1, tb2)] == [(-1, -1, 0), (-1, -1, 1), (1, 1, 0)]
    s0, s1 = tb2.steps[:2]
    assert (s0.type, s0.srcbuf, s0.srcoff, s0.cnt) == ("s", "i", 8, 8)
    assert (s1.type, s1.dstbuf, s1.dstoff, s1.cnt, s1.hasdep) == ("r", "s", 0, 8, True)
    assert [(st.type, st.depid, st.deps) for st in tb0.steps[:6]] == [("nop", d, 1) for d in (4, 6, 8, 10, 12, 14)]
    assert [st.type for st in tb0.steps[6:13]] == ["re"] * 7 and tb0.steps[12].hasdep
    assert [(st.srcbuf, st.dstbuf, st.dstoff) for st in tb0.steps[6:13]] == [("s", "i", 0)] * 7
    kinds = Counter(st.type for g in s.gpus for tb in g.threadblocks for st in tb.steps)
    assert kinds == {"nop": 1328, "re": 896, "s": 224, "r": 224} and s.nsteps == 2672
    rows = s.to_records()
    assert len(rows) == 2672 and rows[0] == {"gpu": 0, "tb": 0, "send": -1, "recv": -1, "chan": 0, "s": 0,
                                             "type": "nop", "srcbuf": "i", "srcoff": -1, "dstbuf": "o",
                                             "dstoff": -1, "cnt": 0, "depid": 4, "deps": 1, "hasdep": False}


def test_ag1m_reads_as_the_runtime_reads_it():
    s = read_msccl(AG1M)
    assert (s.name, s.collective, s.nchannels, s.nchunksperloop, s.inplace, s.min_bytes, s.max_bytes) == \
        ("all_gather_llm", "all_gather", 32, 32, True, 1048576, 2097151)
    assert all((g.i_chunks, g.o_chunks, g.s_chunks) == (0, 32, 0) for g in s.gpus)
    assert s.nthreadblocks == s.nsteps == 448
    assert Counter(st.type for g in s.gpus for tb in g.threadblocks for st in tb.steps) == {"s": 224, "r": 224}


@pytest.mark.parametrize("path", [AP2LL, AG1M])
def test_written_xml_reads_back_the_same(path):
    s = read_msccl(path)
    assert parse_msccl(to_msccl_xml(s)) == s


@settings(max_examples=30)
@given(n=st.integers(2, 6), k=st.integers(1, 4), inplace=st.booleans(), msccl=st.booleans())
def test_generated_schedules_read_back_the_same(n, k, inplace, msccl):
    s = ring_all_gather(n, chunks=k, channels=1 + (k - 1) // 2, inplace=inplace, dialect=MSCCL if msccl else EXECUTOR)
    assert parse_msccl(to_msccl_xml(s)) == s


def test_the_dialect_is_told_by_outofplace():
    assert parse_msccl(SMALL).dialect is MSCCL
    executor = SMALL.replace('inplace="0"', 'inplace="0" outofplace="1" minBytes="0" maxBytes="1"')
    assert parse_msccl(executor).dialect is EXECUTOR
    # [MX] names reduce_scatter without the underscore, [MR] with it; [MR] defaults the window.
    rs = SMALL.replace('coll="allgather"', 'coll="reduce_scatter"')
    assert parse_msccl(rs).collective == "reduce_scatter" and parse_msccl(rs).max_bytes == 2**27
    with pytest.raises(ScheduleFormatError, match="coll='reduce_scatter', expected one of.*reducescatter"):
        parse_msccl(rs.replace('inplace="0"', 'inplace="0" outofplace="1" minBytes="0" maxBytes="1"'))
    with pytest.raises(ScheduleFormatError, match="missing attribute 'minBytes'.*executor"):
        parse_msccl(SMALL.replace('inplace="0"', 'inplace="0" outofplace="1"'))
    ra = SMALL.replace('type="s"', 'type="ra"')
    assert parse_msccl(ra).gpus[0].threadblocks[0].steps[0].type == "ra"
    with pytest.raises(ScheduleFormatError, match="type='ra'"):
        parse_msccl(ra.replace('inplace="0"', 'inplace="0" outofplace="1" minBytes="0" maxBytes="1"'))


@pytest.mark.parametrize("old, new, message, where", [
    ('type="s"', 'type="xyz"', "type='xyz', expected one of cpy, nop, r, ra, rcs, re, rrc, rrcs, rrs, s", (0, 0, 0)),
    ('type="s"', 'type="st"', "type='st'", (0, 0, 0)),
    ('cnt="1"', 'cnt="abc"', "cnt='abc', expected a whole number", (0, 0, 0)),
    ('cnt="1"', 'cnt="--5"', "cnt='--5', expected a whole number", (0, 0, 0)),
    ('cnt="1"', 'cnt="\u00b2"', "expected a whole number", (0, 0, 0)),
    ('cnt="1"', 'cnt="1.5"', "cnt='1.5', expected a whole number", (0, 0, 0)),
    ('cnt="1"', 'cnt="99999999999999999999"', "cnt='99999999999999999999', expected a whole number", (0, 0, 0)),
    ('cnt="1"', 'cnt="4294967296"', "expected a whole number from 0 to 2147483647", (0, 0, 0)),
    ('cnt="1"', 'cnt="-1"', "cnt='-1', expected a whole number from 0", (0, 0, 0)),
    ('srcbuf="i"', 'srcbuf="x"', "srcbuf='x', expected one of i, o, s", (0, 0, 0)),
    ('depid="-1"', 'depid="0"', "depid=0 and deps=-1, expected both -1 or both >= 0", (0, 0, 0)),
    ('hasdep="0"', 'hasdep="2"', "hasdep='2', expected 0 or 1", (0, 0, 0)),
    ('<step s="0"', '<step s="1"', "s='1', expected 0: steps run 0, 1, ... in order", (0, 0, 0)),
    ('<tb id="0"', '<tb id="3"', "id='3', expected 0: threadblock ids", (0, 0, None)),
    ('send="1"', 'send="-2"', "send='-2', expected a whole number from -1", (0, 0, None)),
    ('chan="0"', 'chan=""', "chan='', expected a whole number", (0, 0, None)),
    ('<gpu id="1"', '<gpu id="0"', "id='0', expected 1: one <gpu> per rank", (1, None, None)),
    ('o_chunks="2" s_chunks="0"/>', 'o_chunks="2"/>', "missing attribute 's_chunks'", (1, None, None)),
    ('ngpus="2"', 'ngpus="3"', "ngpus=3 but 2 <gpu> elements", (None, None, None)),
    ('proto="Simple"', 'proto="simple"', "proto='simple', expected one of Simple, LL128, LL", (None, None, None)),
    ('inplace="0"', 'inplace="yes"', "inplace='yes', expected a whole number", (None, None, None)),
    ('inplace="0"', 'inplace="0" nthreads="100"', "nthreads=100, expected a multiple of 32", (None, None, None)),
    ('name="x"', 'name="' + "x" * 64 + '"', "name of 64 characters, expected at most 63", (None, None, None)),
    ('<algo ', '<algorithm ', "root element <algorithm>, expected <algo>", (None, None, None)),
])
def test_malformed_schedules_are_refused_naming_where(old, new, message, where):
    text = SMALL.replace(old, new, 1).replace("</algo>", "</algorithm>" if old == "<algo " else "</algo>")
    with pytest.raises(ScheduleFormatError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.").replace("<", "<")) as caught:
        parse_msccl(text)
    assert (caught.value.gpu, caught.value.tb, caught.value.step) == where
    assert "\n" not in str(caught.value)


def test_the_new_ir_format_is_refused_naming_the_old_one():
    with pytest.raises(ScheduleFormatError, match=r"new format \(<op>\).*old_format=True"):
        parse_msccl(SMALL.replace("<step ", "<op "))


@pytest.mark.parametrize("text", hostile_texts("algo"))
def test_hostile_or_broken_text_raises_only_the_typed_error(text):
    with pytest.raises(ScheduleFormatError):
        parse_msccl(text)


@settings(max_examples=60)
@given(cut=st.integers(0, len(SMALL) - 1))
def test_truncated_xml_raises_only_the_typed_error(cut):
    with pytest.raises(ScheduleFormatError):
        parse_msccl(SMALL[:cut])


_ATTRIBUTE = st.sampled_from(["cnt", "srcoff", "dstoff", "depid", "deps", "send", "recv", "chan", "id", "s",
                              "ngpus", "nchannels", "nchunksperloop", "i_chunks", "type", "srcbuf", "hasdep"])
_VALUE = st.one_of(st.integers(-3, 2**40).map(str), st.text(max_size=6), st.sampled_from(["nop", "r", "o", "1e3"]))


@settings(max_examples=150)
@given(name=_ATTRIBUTE, value=_VALUE, nth=st.integers(0, 3))
def test_any_attribute_value_parses_or_raises_the_typed_error(name, value, nth):
    from models.schedules import ScheduleError, check_schedule
    from topo.errors import LimitError

    text = with_attribute(SMALL, name, value, nth)
    if text is None:
        return
    try:
        schedule = parse_msccl(text)
    except ScheduleFormatError:
        return
    try:  # what reads is a Schedule the checker takes or refuses by type, never crashes on
        check_schedule(schedule)
    except (ScheduleError, LimitError):
        pass


def test_files_are_read_by_the_input_rules(tmp_path):
    with pytest.raises(InputFileError, match="it is a directory, expected a regular file"):
        read_msccl(tmp_path)
    with pytest.raises(InputFileError, match="MSCCL schedule XML.*--max-input"):
        read_msccl(AP2LL, limit=1000)
    assert MSCCL_INPUT.limit == 16 * 2**20 and os.path.getsize(AP2LL) < MSCCL_INPUT.limit
    path = tmp_path / "small.xml"
    path.write_text(SMALL)
    assert read_msccl(path).ngpus == 2


def test_the_ring_builder_refuses_what_is_no_ring():
    with pytest.raises(CountError, match="expected ngpus a whole number >= 2, received 1"):
        ring_all_gather(1)
    with pytest.raises(CountError, match="expected channels at most chunks=2, received 3"):
        ring_all_gather(4, chunks=2, channels=3)
    assert replace(ring_all_gather(3), name="y").name == "y"
