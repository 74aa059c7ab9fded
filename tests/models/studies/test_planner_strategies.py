"""The planner's strategies as objects (models.studies.planner.ep_overlap, .cp_exchange; issue 40
items 3 and 5): chosen once from a name at the edge, passed down as objects, a user's own one
taking part like the built-in ones."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from models.present.plan_text import component_note
from models.studies.planner import BubbleDetail, Component, ExpertParallelDetail, Layout, PlanError, SkipCode, plan
from models.studies.planner.cp_exchange import (ALL_TO_ALL, CP_COMM, CP_EXCHANGES, RING, AllToAllExchange,
                                                cp_exchange_named)
from models.studies.planner.ep_overlap import (BATCH_OVERLAP, DUALPIPE, EP_OVERLAP, EP_OVERLAPS, NO_OVERLAP,
                                               BatchOverlap, DualPipe, EpOverlap, EpOverlapError, ep_overlap_named)
from models.studies.planner.parallel_graph import plan_step_graph

# tests/models/studies/test_parallel_graph.py's small MoE
SMALL = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"


def test_registries_name_each_strategy_once():
    assert EP_OVERLAP == ("none", "batch", "dualpipe") and CP_COMM == ("p2p", "a2a", "a2a+p2p")
    assert [ep_overlap_named(n) for n in EP_OVERLAP] == list(EP_OVERLAPS)
    assert [cp_exchange_named(n) for n in CP_COMM] == list(CP_EXCHANGES)
    assert ep_overlap_named("always") is None and cp_exchange_named("ring") is None
    assert [str(o) for o in EP_OVERLAPS] == list(EP_OVERLAP)


def test_overlap_known_answers():
    # 1F1B: (pp - 1) / v slots; DualPipe (arXiv 2412.19437 table 2): pp / 2 - 1, never below 0
    assert NO_OVERLAP.bubble_slots(8, 2) == BATCH_OVERLAP.bubble_slots(8, 2) == 3.5
    assert DUALPIPE.bubble_slots(8, 1) == 3.0 and DUALPIPE.bubble_slots(2, 1) == 0.0
    # 5 s of all-to-alls beside 3 s of compute: all exposed, or the 2 s the compute cannot hide
    assert NO_OVERLAP.exposed_ep(5.0, 3.0) == 5.0
    assert BATCH_OVERLAP.exposed_ep(5.0, 3.0) == DUALPIPE.exposed_ep(5.0, 3.0) == 2.0
    assert BATCH_OVERLAP.exposed_ep(1.0, 3.0) == 0.0
    assert NO_OVERLAP.exposed_pp(0.4) == BATCH_OVERLAP.exposed_pp(0.4) == 0.4 and DUALPIPE.exposed_pp(0.4) == 0.0
    assert [(o.parameter_copies, o.extra_in_flight) for o in EP_OVERLAPS] == [(1, 0), (1, 0), (2, 1)]
    assert [o.simulated for o in EP_OVERLAPS] == [True, True, True]
    assert [o.bidirectional for o in EP_OVERLAPS] == [False, False, True]
    # DualPipe feeds micro-batches from both ends: even pp and micro-batches, no interleaving
    assert not DUALPIPE.refuses(4, 8, 1)
    assert DUALPIPE.refuses(3, 8, 1) and DUALPIPE.refuses(4, 7, 1) and DUALPIPE.refuses(4, 8, 2)
    assert DUALPIPE.refuses(4, 6, 1)  # fewer than 2 x pp micro-batches
    assert not NO_OVERLAP.refuses(3, 7, 2) and not BATCH_OVERLAP.refuses(3, 7, 2)


def test_exchange_known_answers():
    from models.studies.workload import PRESETS

    w = PRESETS["llama3-8b"]  # 32 heads, 8 KV heads of 128: K and V 1,024 wide each
    ring, = RING.buffers(w, 1, 2, 1, 2)
    assert ring == 4096 * 2048 * 2  # 4,096 tokens per rank x (K + V) x 2 bytes
    q, k, v, o = ALL_TO_ALL.buffers(w, 1, 2, 1, 2)
    assert (q, k, v, o) == (4096 * 4096 * 2, 4096 * 1024 * 2, 4096 * 1024 * 2, 4096 * 4096 * 2)
    # the ring's steps hide behind 1/cp of the attention each; the all-to-alls are all exposed
    ring_layer = RING.layer_timer((ring,), 4, lambda dim, coll, n: n / 1e9, None)
    assert ring_layer(0.0, 0.0, False) == pytest.approx((3 * ring / 1e9 + 3 * 2 * ring / 1e9,) * 2)
    assert ring_layer(1.0, 1.0, False) == (pytest.approx(9 * ring / 1e9), 0.0)
    a2a_layer = ALL_TO_ALL.layer_timer((1.0, 2.0), 4, None, lambda dim, n: n)
    assert a2a_layer(9.0, 9.0, False) == (6.0, 6.0) and a2a_layer(9.0, 9.0, True) == (9.0, 9.0)
    assert ALL_TO_ALL.refuses(6, 4) and not ALL_TO_ALL.refuses(8, 4) and not RING.refuses(6, 4)


def test_a_layout_reads_a_name_once_as_its_object():
    lay = Layout(2, 1, 1, 0, 1, 4, "none", True, "tp-dp-pp", cp=2, cp_comm="a2a")
    assert lay.cp_comm is ALL_TO_ALL and lay == Layout(2, 1, 1, 0, 1, 4, "none", True, "tp-dp-pp", cp=2,
                                                       cp_comm=ALL_TO_ALL)
    assert lay.label().startswith("tp2 cp2a2a pp1")
    assert Layout(1, 1, 1, 0, 1, 1, "none", False, "tp-dp-pp").cp_comm is RING
    with pytest.raises(PlanError, match="cp_comm must be one of p2p, a2a, a2a\\+p2p, received 'ring'"):
        Layout(2, 1, 1, 0, 1, 4, "none", True, "tp-dp-pp", cp=2, cp_comm="ring")
    with pytest.raises(PlanError, match="cp_comm must be one of p2p, a2a, a2a\\+p2p or a CpExchange, received NoneType None"):
        Layout(2, 1, 1, 0, 1, 4, "none", True, "tp-dp-pp", cp=2, cp_comm=None)


def test_a_users_exchange_without_a_label_is_marked_by_its_name():
    @dataclass(frozen=True)
    class Mine(AllToAllExchange):
        name: str = "mine"
        label: str = ""

    lay = Layout(2, 1, 1, 0, 1, 4, "none", True, "tp-dp-pp", cp=2, cp_comm=Mine())
    assert lay.label().startswith("tp2 cp2mine pp1")
    assert Layout(2, 1, 1, 0, 1, 4, "none", True, "tp-dp-pp", cp=2).label().startswith("tp2 cp2 pp1")


def test_names_and_objects_plan_alike(cluster):
    by_name = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, ep_overlap="batch", simulate=0)
    by_object = plan(SMALL, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, ep_overlap=BATCH_OVERLAP,
                     simulate=0)
    assert by_name.step_time == by_object.step_time and by_name.component("ep_comm").detail.overlap is BATCH_OVERLAP
    assert by_name.component("ep_comm").detail.to_records()[0]["overlap"] == "batch"
    cp = plan("llama3-8b", cluster, tp=2, pp=2, cp=2, cp_comm=ALL_TO_ALL, global_batch=8, seq_length=16384,
              simulate=0)
    assert cp.layout.cp_comm is ALL_TO_ALL and cp.component("cp_comm").detail.to_records()[0]["comm"] == "a2a"
    with pytest.raises(PlanError, match="ep_overlap must be one of none, batch, dualpipe, received 3"):
        plan(SMALL, cluster, tp=1, pp=2, ep=8, global_batch=32, ep_overlap=3, simulate=0)


@dataclass(frozen=True)
class _HalfHidden(BatchOverlap):
    """A user's overlap: half of the all-to-alls hidden at best."""

    name: str = "half"

    def exposed_ep(self, ep_time: float, compute: float) -> float:
        return max(ep_time / 2, ep_time - compute)


def test_an_overlaps_words_follow_its_class_not_its_name():
    # DualPipe's bubble on pp8, F&B 3 ms, B 1 ms, W 1 ms: (8/2 - 1)(3 + 1 - 3) = 3 ms of 480 x 3 ms;
    # 1F1B's (p - 1)/m = 7/480. A DualPipe by another name is DualPipe; a user's class named
    # "dualpipe" is the user's own (its bubble may differ), shown by its name.
    def words(overlap):
        bubble = BubbleDetail(8, 1, 480, overlap=overlap, slot=3e-3, backward_input=1e-3, weight=1e-3)
        ep = ExpertParallelDetail(8, 1, 4, 2 * 2 ** 20, 2 * 2 ** 20, 0.0, 1.0, overlap)
        return (component_note(Component("bubble", 3e-3, 3e-3, bubble)),
                component_note(Component("ep_comm", 1e-3, 1e-3, ep)).rsplit("; ", 1)[1])

    dualpipe = ("(PP/2-1)(F&B+B-3W) = 3 x (3.00 + 1.00 - 3 x 1.00 ms) = 0.21% of the ideal step", "DualPipe overlap")
    assert words(DUALPIPE) == words(DualPipe(name="mirror")) == dualpipe
    assert words(_HalfHidden(name="dualpipe")) == ("(p-1)/m = 7/480 of the ideal step", "dualpipe overlap")
    assert [words(o)[1] for o in (NO_OVERLAP, BATCH_OVERLAP)] == ["not overlapped", "batch-level overlap"]


@dataclass(frozen=True)
class _WideRing(AllToAllExchange):
    """A user's exchange: the all-to-all's, refusing nothing."""

    name: str = "wide"
    label: str = "w"

    def refuses(self, heads: int, cp: int) -> bool:
        return False


def test_a_users_strategies_take_part(cluster):
    options = dict(tp=1, pp=2, ep=8, zero=1, global_batch=32, simulate=0)
    none = plan(SMALL, cluster, ep_overlap="none", **options).component("ep_comm")
    half = plan(SMALL, cluster, ep_overlap=_HalfHidden(), **options)
    ep = half.component("ep_comm")
    # compute hides more than half of the paired blocks' all-to-alls; a stage's warm-up and
    # cool-down blocks (a of its m = 4) run alone, all exposed: (1 - a) / 2 + a
    alone = [_HalfHidden().alone(2, 4, s) for s in (0, 1)]
    assert alone == [0.75, 0.25]
    assert ep.time == none.time and any(ep.exposed == pytest.approx(none.time * (1 + a) / 2) for a in alone)
    assert component_note(ep).endswith("; half overlap")
    assert plan_step_graph(half, cluster.G).tasks  # simulated as batch overlap's two streams
    # 6 heads over cp 4: the all-to-all refuses it, the user's exchange not
    w = "transformer:layers=2,hidden=768,heads=6,seq=8192,vocab=32000,flash=1"
    with pytest.raises(PlanError) as error:
        plan(w, cluster, tp=1, pp=1, dp=1, cp=4, cp_comm="a2a", global_batch=4, simulate=0)
    assert SkipCode.CP_HEADS in {s.code for s in error.value.skipped}
    wide = plan(w, cluster, tp=1, pp=1, dp=1, cp=4, cp_comm=_WideRing(), global_batch=4, simulate=0)
    assert wide.layout.label().startswith("tp1 cp4w pp1") and wide.component("cp_comm").exposed > 0
    assert component_note(wide.component("cp_comm")).startswith("2 layers x wide K/V exchange of ")


# ------------------------------------------------------------------ the search over overlaps
def test_a_search_covers_every_overlap_asked_for(cluster):
    from models.present.plan_text import format_search
    from models.studies.planner import search

    kw = dict(tp=1, pp=2, ep=8, zero=1, global_batch=64, simulate=0)
    every = search(SMALL, cluster, ep_overlap=EP_OVERLAPS, **kw)
    alone = {o.name: search(SMALL, cluster, ep_overlap=o, **kw) for o in EP_OVERLAPS}
    # each overlap's layouts, priced as its own search prices them, ranked together
    assert len(every.plans) == sum(len(s.plans) for s in alone.values())
    assert {p.component("ep_comm").detail.overlap.name for p in every.plans} == set(EP_OVERLAP)
    assert every.best.step_time == min(s.best.step_time for s in alone.values())
    assert every.best.component("ep_comm").detail.overlap is DUALPIPE  # pp 2: no bubble, sends hidden
    # the table names each row's overlap only when they differ
    assert format_search(every).splitlines()[1].split()[8] == "dualpipe"
    assert "dualpipe" not in format_search(alone["dualpipe"])
    # a dense workload has no all-to-alls: the first overlap only
    dense = dict(tp=2, pp=2, global_batch=16, simulate=0)
    assert len(search("llama3-8b", cluster, ep_overlap=["none", "batch"], **dense).plans) == \
        len(search("llama3-8b", cluster, **dense).plans)


@pytest.mark.parametrize("value, words", [
    ([], "ep_overlap must be one overlap or a list of distinct ones, received []"),
    (["batch", BATCH_OVERLAP], "ep_overlap must be one overlap or a list of distinct ones, received ['batch', "),
    (["batch", "sometimes"], "ep_overlap must be one of none, batch, dualpipe, received 'sometimes'"),
])
def test_a_list_of_overlaps_is_checked(cluster, value, words):
    with pytest.raises(PlanError) as error:
        plan(SMALL, cluster, tp=1, pp=2, ep=8, global_batch=32, ep_overlap=value, simulate=0)
    assert str(error.value).startswith(words)


def test_the_cli_searches_the_overlaps_it_is_given(capsys):
    from tests.test_cli_commands import one_line_error, run

    status, out, err = run(capsys, "plan", SMALL, "--system", "2xdgxh100", "--tp", "1", "--pp", "2", "--ep", "8",
                           "--zero", "1", "--recompute", "none", "--global-batch", "64", "--ep-overlap",
                           "none,dualpipe", "--search", "--simulate", "0")
    assert status == 0, err
    rows = out.splitlines()[1:4]
    assert rows[0].split()[8] == "dualpipe" and {r.split()[8] for r in rows} == {"none", "dualpipe"}
    line = one_line_error(capsys, "plan", SMALL, "--system", "dgxh100", "--ep-overlap", "batch,batch")
    assert "expected distinct names of none, batch, dualpipe (comma-separated) or all, received 'batch,batch'" in line


@dataclass(frozen=True)
class _TwoCopies(BatchOverlap):
    """A user's overlap claiming two parameter copies without saying which ranks hold them."""

    name: str = "two"
    parameter_copies: int = 2


@dataclass(frozen=True)
class _Mirrored(_TwoCopies):
    """The same, holding stage s on ranks s and pp - 1 - s as DualPipe does."""

    def rank_stages(self, pp: int) -> tuple:
        return tuple(tuple(sorted({r, pp - 1 - r})) for r in range(pp))


@dataclass(frozen=True)
class _Short(EpOverlap):
    """Ranks missing: one rank fewer than the pipeline."""

    name: str = "short"

    def rank_stages(self, pp: int) -> tuple:
        return tuple((s,) for s in range(pp - 1))


def test_an_overlap_whose_copies_and_ranks_disagree_is_refused(cluster):
    with pytest.raises(EpOverlapError, match=r"_TwoCopies has parameter_copies 2, but its rank_stages\(2\) gives "
                                             r"stage 0 on 1 rank: expected 2 ranks, each of stages 0-1 on 2 ranks"):
        _TwoCopies()
    with pytest.raises(EpOverlapError, match=r"rank_stages\(2\) gives 1 ranks: expected 2 ranks"):
        _Short()
    for copies in (0, 1.5, True):
        with pytest.raises(EpOverlapError, match=f"parameter_copies must be a whole number >= 1, received {copies!r}"):
            BatchOverlap(parameter_copies=copies)
    mirrored = _Mirrored()  # consistent: planned with two copies of each stage, as DualPipe's memory
    options = dict(tp=1, pp=2, ep=8, zero=0, global_batch=32, simulate=0)
    two = plan(SMALL, cluster, ep_overlap=mirrored, **options).memory
    one = plan(SMALL, cluster, ep_overlap="batch", **options).memory
    assert two.parameters > one.parameters
