"""Checking MSCCL schedules (models.schedules.check): the two real schedules hold; hand-made broken
ones are each refused naming the rule, the GPU, the threadblock and the step; generated ring
all_gathers hold for any size, and one mutation of one is refused.

Known answers: the real files' counts (224 sends and 224 receives each, by grep); a 2-GPU
all_reduce of one chunk written by hand (each rank sends its chunk and reduces the other's into
its own) holds, and every output chunk then holds both ranks' contributions."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.schedules import (MSCCL, ScheduleCheckError, ScheduleError, check_schedule, parse_msccl, read_msccl,
                              to_msccl_xml)
from models.schedules.msccl import MSCCL_LIMITS, Gpu, Schedule, Step, Threadblock
from models.schedules.ring import ring_all_gather
from tests.conftest import DATA
from topo.errors import LimitError

AP2LL = DATA / "msccl" / "ndv4_ap2ll.xml"
AG1M = DATA / "msccl" / "ndv5_ag-1m.xml"


def test_the_real_all_reduce_holds():
    result = check_schedule(read_msccl(AP2LL))
    assert (result.collective, result.ngpus, result.chunks, result.threadblocks, result.steps, result.channels,
            result.transfers, result.postcondition) == ("all_reduce", 8, 128, 128, 2672, 2, 224, True)
    assert [row["steps"] for row in result.to_records()] == [2672]


def test_the_real_all_gather_holds():
    result = check_schedule(read_msccl(AG1M))
    assert (result.collective, result.threadblocks, result.steps, result.channels, result.transfers) == \
        ("all_gather", 448, 448, 32, 224)
    # Every chunk moves in one hop: a receive waits only on its send.
    assert result.depth == 2


def _step(gpu, tb, s, **change):
    return lambda sched: _edit(sched, gpu, tb, lambda t: replace(t, steps=tuple(
        replace(x, **change) if x.s == s else x for x in t.steps)))


def _edit(schedule: Schedule, gpu: int, tb: int, fn) -> Schedule:
    gpus = list(schedule.gpus)
    g = gpus[gpu]
    gpus[gpu] = replace(g, threadblocks=tuple(fn(t) if t.id == tb else t for t in g.threadblocks))
    return replace(schedule, gpus=tuple(gpus))


def _drop(gpu, tb, s):
    return lambda sched: _edit(sched, gpu, tb, lambda t: replace(t, steps=tuple(
        replace(x, s=i) for i, x in enumerate(x for x in t.steps if x.s != s))))


def _refused(schedule, rule, where, *, through_xml=True):
    if through_xml:  # the broken schedule as a file would give it
        schedule = parse_msccl(to_msccl_xml(schedule))
    with pytest.raises(ScheduleCheckError) as caught:
        check_schedule(schedule)
    error = caught.value
    assert error.rule == rule, str(error)
    assert (error.gpu, error.tb, error.step) in where, str(error)
    assert "\n" not in str(error) and str(error).startswith("MSCCL schedule, gpu ")
    return str(error)


def test_a_dangling_dependency_is_refused_by_name():
    ring = ring_all_gather(3)
    message = _refused(_step(1, 0, 2, depid=5, deps=0)(ring), "dependency", {(1, 0, 2)})
    assert "depends on tb 5, which gpu 1 does not have (1 threadblocks)" in message
    two = ring_all_gather(3, chunks=2, channels=2)
    message = _refused(_step(0, 1, 1, depid=0, deps=9)(two), "dependency", {(0, 1, 1)})
    assert "depends on step 9 of tb 0, which has 4 steps" in message
    message = _refused(_step(0, 1, 1, depid=0, deps=2)(two), "dependency", {(0, 1, 1)})
    assert "whose hasdep=0: it never signals" in message
    message = _refused(_step(0, 1, 1, depid=1, deps=3)(two), "dependency", {(0, 1, 1)})
    assert "its own threadblock, which comes after it" in message


def test_a_dependency_cycle_is_a_deadlock():
    two = ring_all_gather(3, chunks=2, channels=2)
    cycle = _step(0, 1, 0, depid=0, deps=0, hasdep=True)(_step(0, 0, 0, depid=1, deps=0, hasdep=True)(two))
    message = _refused(cycle, "deadlock", {(0, 0, 0), (0, 1, 0)})
    assert "form a cycle" in message


def test_a_race_is_refused_by_name():
    # Channel 1's copy writes gpu 2's chunk 0 of the output, which channel 0's copy writes too.
    two = ring_all_gather(3, chunks=2, channels=2)
    message = _refused(_step(2, 1, 0, dstoff=4)(two), "race", {(2, 0, 0), (2, 1, 0)})
    assert "writes o[4], which gpu 2 tb" in message and "with no order between them" in message
    # Ordered by a dependency (with its signal), the same writes are no race; the output is then wrong.
    # (after channel 0's send of it too, which reads it): then gpu 2's chunk 1 is never copied,
    # and gpu 0 is the first to miss it.
    ordered = _step(2, 0, 1, hasdep=True)(_step(2, 1, 0, dstoff=4, depid=0, deps=1)(two))
    message = _refused(ordered, "postcondition", {(0, 1, 2)})
    assert "output chunk o[5] holds {unset}, expected {2:1}" in message


def test_a_read_unordered_with_a_write_is_a_race():
    # Channel 1 sends output chunk 4 of gpu 2 (channel 0 writes it by its copy) instead of its own.
    two = ring_all_gather(3, chunks=2, channels=2)
    _refused(_step(2, 1, 1, srcoff=4)(two), "race", {(2, 0, 0), (2, 1, 1)})


def test_a_missed_chunk_is_refused_by_name():
    ring = ring_all_gather(4)
    # gpu 0 copies a scratch chunk nobody wrote instead of its input: its output chunk 0, and every
    # copy the ring makes of it, hold no rank's data.
    gpu0 = replace(ring.gpus[0], s_chunks=1)
    broken = _step(0, 0, 0, srcbuf="s")(replace(ring, gpus=(gpu0, *ring.gpus[1:])))
    message = _refused(broken, "postcondition", {(0, 0, 0)})
    assert "output chunk o[0] holds {unset}, expected {0:0}: lacks {0:0} (last written by tb 0 step 0)" in message
    # gpu 2 keeps the last chunk it receives in the wrong place: o[1] is never written.
    message = _refused(_step(2, 0, 4, dstoff=0, srcoff=0)(ring), "postcondition", {(2, None, None), (2, 0, 4)})
    assert "gpu 2" in message


def test_an_unknown_instruction_is_refused_by_name():
    from models.schedules import ScheduleFormatError

    text = to_msccl_xml(ring_all_gather(3)).replace('type="rcs"', 'type="rcx"', 2)
    with pytest.raises(ScheduleFormatError, match=r"gpu 0, tb 0, step 2: type='rcx'") as caught:
        parse_msccl(text)
    assert (caught.value.gpu, caught.value.tb, caught.value.step) == (0, 0, 2)


def test_threadblocks_and_steps_beyond_the_runtimes_limits_are_refused_by_name():
    ring = ring_all_gather(2)
    idle = tuple(Threadblock(id=i, send=-1, recv=-1, chan=0, steps=()) for i in range(1, 217))
    many = replace(ring, gpus=(replace(ring.gpus[0], threadblocks=ring.gpus[0].threadblocks + idle), ring.gpus[1]))
    message = _refused(many, "limits", {(0, 216, None)})
    assert "217 threadblocks, more than 216 (MSCCL_MAX_NUM_THREAD_BLOCKS" in message
    nops = tuple(Step(i, "nop", "i", -1, "o", -1, 0) for i in range(257))
    long = _edit(ring, 1, 0, lambda t: replace(t, steps=t.steps + tuple(replace(x, s=x.s + 3) for x in nops)))
    assert "260 steps, more than 256" in _refused(long, "limits", {(1, 0, 256)})
    # The limits are the runtime's, passed in: a stricter runtime refuses what the default takes.
    strict = replace(MSCCL_LIMITS, name="strict", max_steps=2)
    with pytest.raises(ScheduleCheckError, match="gpu 0, tb 0, step 2: 3 steps, more than 2"):
        check_schedule(ring, limits=strict)
    assert check_schedule(ring).limits == "msccl-executor-nccl"
    assert check_schedule(ring_all_gather(2, dialect=MSCCL)).limits == "microsoft/msccl"


@pytest.mark.parametrize("change, where, message", [
    (_step(0, 0, 0, cnt=72), {(0, 0, 0)}, "cnt=72, expected below 72 (MSCCL_MAX_COUNT)"),
    (_step(0, 0, 0, dstoff=3), {(0, 0, 0)}, "copy of 1 chunks at o[3], outside the 3 chunks of the o buffer"),
    (_step(0, 0, 0, srcoff=-1), {(0, 0, 0)}, "copy of 1 chunks at i[-1]"),
    (lambda s: _edit(s, 1, 0, lambda t: replace(t, chan=1)), {(1, 0, None)}, "chan=1, expected below nchannels=1"),
    (lambda s: _edit(s, 1, 0, lambda t: replace(t, send=1)), {(1, 0, None)}, "send=1, expected -1 or another rank"),
    (lambda s: _edit(s, 1, 0, lambda t: replace(t, recv=3)), {(1, 0, None)}, "recv=3, expected -1 or another rank"),
    (lambda s: _edit(s, 1, 0, lambda t: replace(t, send=-1)), {(1, 0, 1)}, "send on a threadblock with send=-1"),
    (lambda s: _edit(s, 1, 0, lambda t: replace(t, recv=-1)), {(1, 0, 2)},
     "recv-copy-send on a threadblock with recv=-1"),
    (lambda s: replace(s, gpus=(replace(s.gpus[0], o_chunks=2), *s.gpus[1:])), {(0, None, None)},
     "o_chunks=2, expected 3 (nchunksperloop=3 for all_gather) or 0"),
])
def test_what_the_runtime_refuses_is_refused_by_name(change, where, message):
    assert message in _refused(change(ring_all_gather(3)), "limits", where)


def test_two_threadblocks_on_one_connection_are_refused():
    two = ring_all_gather(3, chunks=2, channels=2)
    message = _refused(_edit(two, 0, 1, lambda t: replace(t, chan=0)), "limits", {(0, 1, None)})
    assert "send=1 on channel 0, as tb 0: one connection per channel, peer and direction" in message


def test_a_send_without_a_matching_receive_is_refused_by_name():
    ring = ring_all_gather(4)  # per rank: cpy, s, rcs, rcs, r
    message = _refused(_drop(1, 0, 4)(ring), "matching", {(0, 0, 3)})
    assert "sends to gpu 1 on channel 0 (3 sends), but gpu 1 receives only 2 from gpu 0 there" in message
    message = _refused(_drop(0, 0, 1)(ring), "matching", {(1, 0, 4)})
    assert "receives from gpu 0 on channel 0 (3 receives), but gpu 0 sends only 2" in message
    message = _refused(_step(1, 0, 2, cnt=2, dstoff=0)(ring), "matching", {(1, 0, 2)})
    assert "receives 2 chunks from gpu 0 on channel 0, but the matching send (gpu 0, tb 0, step 1) sends 1" in message


def _all_reduce_pair(extra=()) -> Schedule:
    """Two ranks, one chunk, in place: send mine, reduce the other's into mine."""
    gpus = tuple(Gpu(id=r, i_chunks=1, o_chunks=0, s_chunks=0, threadblocks=(Threadblock(
        id=0, send=1 - r, recv=1 - r, chan=0, steps=(Step(0, "s", "i", 0, "i", 0, 1),
                                                     Step(1, "rrc", "i", 0, "i", 0, 1)) + extra),))
                 for r in range(2))
    return Schedule(name="pair", protocol="LL", collective="all_reduce", coll="allreduce", nchannels=1,
                    nchunksperloop=1, ngpus=2, inplace=True, outofplace=None, min_bytes=0, max_bytes=2**27,
                    nthreads=None, gpus=gpus, dialect=MSCCL)


def test_reductions_are_unions_and_a_double_count_is_refused():
    assert check_schedule(_all_reduce_pair()).postcondition
    twice = _all_reduce_pair((Step(2, "re", "i", 0, "i", 0, 1),))
    message = _refused(twice, "postcondition", {(0, 0, 2), (1, 0, 2)})
    assert "reduces the contribution of rank 0's chunk 0 twice" in message
    no_reduce = _edit(_all_reduce_pair(), 1, 0, lambda t: replace(t, steps=(t.steps[0], replace(t.steps[1], type="r"))))
    assert "output chunk i[0] holds {0:0}, expected {0:0, 1:0}: lacks {1:0}" in _refused(no_reduce, "postcondition",
                                                                                           {(1, 0, 1)})


def test_an_unchecked_collective_still_gets_every_other_check():
    ring = ring_all_gather(3, dialect=MSCCL)  # [MR] reads coll="custom", [MX] does not
    custom = replace(ring, collective="custom", coll="custom")
    assert not check_schedule(custom).postcondition
    _refused(_drop(1, 0, 3)(custom), "matching", {(0, 0, 2)})


def test_bad_arguments_and_oversized_work_raise_typed_errors():
    with pytest.raises(ScheduleError, match="expected a Schedule .*received str"):
        check_schedule("ring.xml")
    with pytest.raises(LimitError, match="max_slots=10"):
        check_schedule(ring_all_gather(4), max_slots=10)
    with pytest.raises(LimitError, match="a schedule of 8 threadblocks with steps: 8 is more than max_threadblocks=7"):
        check_schedule(ring_all_gather(4, chunks=2, channels=2), max_threadblocks=7)


def test_errors_survive_pickling():
    with pytest.raises(ScheduleCheckError) as caught:
        check_schedule(_drop(1, 0, 4)(ring_all_gather(4)))
    again = pickle.loads(pickle.dumps(caught.value))
    assert (str(again), again.rule, again.gpu, again.tb, again.step) == \
        (str(caught.value), "matching", 0, 0, 3)


_RING = st.builds(lambda n, k, c, inplace: (n, k, min(c, k), inplace),
                  st.integers(2, 8), st.integers(1, 5), st.integers(1, 5), st.booleans())


@settings(max_examples=40)
@given(ring=_RING)
def test_ring_all_gathers_hold_for_any_size(ring):
    n, k, c, inplace = ring
    result = check_schedule(ring_all_gather(n, chunks=k, channels=c, inplace=inplace))
    assert result.postcondition and result.transfers == n * k * (n - 1)
    # Every rank runs the same steps in lock step: a step waits at most for the previous one of
    # its neighbour, so the longest chain is a threadblock's steps.
    assert result.depth == -(-k // c) * (n + (0 if inplace else 1))


@settings(max_examples=60)
@given(ring=_RING, data=st.data())
def test_one_mutation_of_a_ring_is_refused(ring, data):
    n, k, c, inplace = ring
    schedule = ring_all_gather(n, chunks=k, channels=c, inplace=inplace)
    g = data.draw(st.integers(0, n - 1), label="gpu")
    tb = schedule.gpus[g].threadblocks[data.draw(st.integers(0, c - 1), label="tb")]
    if n > 2 and data.draw(st.booleans(), label="swap a peer"):
        peer = data.draw(st.sampled_from([p for p in range(n) if p not in (g, tb.send)]), label="peer")
        broken = _edit(schedule, g, tb.id, lambda t: replace(t, send=peer))
    else:
        broken = _drop(g, tb.id, data.draw(st.integers(0, len(tb.steps) - 1), label="step"))(schedule)
    with pytest.raises(ScheduleCheckError) as caught:
        check_schedule(broken)
    assert caught.value.gpu is not None


def _oracle_race(schedule) -> bool:
    """Whether two steps of one GPU touch one chunk, one of them writing, with no path between them
    in the happens-before (program order, dependencies, send before its receive), by brute force."""
    import networkx as nx

    G = nx.DiGraph()
    sends, recvs, access = {}, {}, []
    for g in schedule.gpus:
        for tb in g.threadblocks:
            for step in tb.steps:
                node = (g.id, tb.id, step.s)
                G.add_node(node)
                if step.s:
                    G.add_edge((g.id, tb.id, step.s - 1), node)
                if step.depid >= 0:
                    G.add_edge((g.id, step.depid, step.deps), node)
                op = step.instruction
                if op.sends:
                    sends.setdefault((g.id, tb.send, tb.chan), []).append(node)
                if op.receives:
                    recvs.setdefault((tb.recv, g.id, tb.chan), []).append(node)
                for i in range(step.cnt):
                    if op.reads_src:
                        access.append((g.id, (step.srcbuf, step.srcoff + i), node, False))
                    if op.writes_dst:
                        access.append((g.id, (step.dstbuf, step.dstoff + i), node, True))
    for key, out in sends.items():
        G.add_edges_from(zip(out, recvs[key]))
    closure = nx.transitive_closure_dag(G)
    return any(a[0] == b[0] and a[1] == b[1] and (a[3] or b[3]) and a[2] != b[2]
               and not closure.has_edge(a[2], b[2]) and not closure.has_edge(b[2], a[2])
               for i, a in enumerate(access) for b in access[i + 1:])


@settings(max_examples=60)
@given(ring=_RING, data=st.data())
def test_races_are_what_brute_force_finds(ring, data):
    """Random moves of copies and receives onto other output chunks, and random dependencies
    between threadblocks (signalled): the checker's verdict on races is the brute-force one."""
    n, k, c, _ = ring
    schedule = ring_all_gather(n, chunks=k, channels=c)
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        g = data.draw(st.integers(0, n - 1), label="gpu")
        tb = schedule.gpus[g].threadblocks[data.draw(st.integers(0, c - 1), label="tb")]
        s = data.draw(st.integers(0, len(tb.steps) - 1), label="step")
        if data.draw(st.booleans(), label="move") and tb.steps[s].type != "s":
            schedule = _step(g, tb.id, s, dstoff=data.draw(st.integers(0, n * k - 1), label="to"))(schedule)
        elif c > 1:
            other = schedule.gpus[g].threadblocks[data.draw(st.integers(0, c - 1), label="on")]
            if other.id != tb.id:
                d = data.draw(st.integers(0, len(other.steps) - 1), label="dep")
                schedule = _step(g, other.id, d, hasdep=True)(_step(g, tb.id, s, depid=other.id, deps=d)(schedule))
    try:
        check_schedule(schedule)
        verdict = False
    except ScheduleCheckError as error:
        if error.rule == "deadlock":
            return
        verdict = error.rule == "race"
    assert verdict == _oracle_race(schedule)


def _pair(collective, coll, inplace, chunks, steps) -> Schedule:
    """A 2-rank schedule of one threadblock each (peer: the other rank); ``steps(r)`` are rank r's."""
    i_chunks, o_chunks = chunks
    gpus = tuple(Gpu(id=r, i_chunks=i_chunks, o_chunks=o_chunks, s_chunks=0, threadblocks=(Threadblock(
        id=0, send=1 - r, recv=1 - r, chan=0,
        steps=tuple(Step(s, *args) for s, args in enumerate(steps(r)))),)) for r in range(2))
    return Schedule(name=coll, protocol="Simple", collective=collective, coll=coll, nchannels=1,
                    nchunksperloop=2 if collective != "all_reduce" else 1, ngpus=2, inplace=inplace, outofplace=None,
                    min_bytes=0, max_bytes=2**27, nthreads=None, gpus=gpus, dialect=MSCCL)


# Each known answer: the textbook 2-rank schedule, and the same with one chunk taken from the
# wrong place (the output then lacks or misplaces a contribution).
PAIRS = {
    "reduce_scatter out of place": (
        ("reduce_scatter", "reduce_scatter", False, (2, 1)),
        lambda r: [("s", "i", 1 - r, "o", -1, 1), ("rrc", "i", r, "o", 0, 1)],
        lambda r: [("s", "i", r, "o", -1, 1), ("rrc", "i", r, "o", 0, 1)]),
    "reduce_scatter in place": (
        ("reduce_scatter", "reduce_scatter", True, (2, 0)),
        lambda r: [("s", "i", 1 - r, "i", -1, 1), ("rrc", "i", r, "i", r, 1)],
        lambda r: [("s", "i", 1 - r, "i", -1, 1), ("rrc", "i", r, "i", 1 - r, 1)]),
    "all_to_all": (
        ("all_to_all", "alltoall", False, (2, 2)),
        lambda r: [("cpy", "i", r, "o", r, 1), ("s", "i", 1 - r, "o", -1, 1), ("r", "o", -1, "o", 1 - r, 1)],
        lambda r: [("cpy", "i", r, "o", r, 1), ("s", "i", r, "o", -1, 1), ("r", "o", -1, "o", 1 - r, 1)]),
    "all_reduce out of place": (
        ("all_reduce", "allreduce", False, (1, 1)),
        lambda r: [("s", "i", 0, "o", -1, 1), ("rrc", "i", 0, "o", 0, 1)],
        lambda r: [("s", "i", 0, "o", -1, 1), ("r", "i", -1, "o", 0, 1)]),
    "all_reduce by residual add": (  # [MR]'s ra, taken as a local reduction
        ("all_reduce", "allreduce", False, (1, 1)),
        lambda r: [("cpy", "i", 0, "o", 0, 1), ("s", "i", 0, "o", -1, 1), ("r", "o", -1, "i", 0, 1),
                   ("ra", "i", 0, "o", 0, 1)],
        lambda r: [("cpy", "i", 0, "o", 0, 1), ("s", "i", 0, "o", -1, 1), ("r", "o", -1, "i", 0, 1),
                   ("nop", "i", -1, "o", -1, 0)]),
}


@pytest.mark.parametrize("name", PAIRS)
def test_each_collectives_postcondition_on_a_two_rank_schedule(name):
    head, good, bad = PAIRS[name]
    assert check_schedule(_pair(*head, good)).postcondition
    _refused(_pair(*head, bad), "postcondition", {(0, 0, s) for s in range(4)} | {(1, 0, s) for s in range(4)}
             | {(0, None, None)})
