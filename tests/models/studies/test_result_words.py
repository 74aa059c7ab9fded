"""Results are numbers, words live in models.present: why a plan does not fit (Plan.fits and
Plan.memory), why it was not simulated (Plan.timing_why), what it warns of (Plan.warning_codes),
which layouts a search refused (Search.skipped_layouts, SkippedLayout, TpConstraint), what a
failure leaves of a sweep's job (SweepRow.status, cause, gpus_lost) and which condition of
ncclTopoDupChannels decided (ChannelDuplication.why) are codes and numbers; models.present words them
exactly as dgx-topo did before (the known answers below are main's sentences before the words
moved), and the planner's errors carry their numbers and are worded the same."""

from __future__ import annotations

import pickle

import pytest

import topo
from models.engine.fabric import PreparedFabric
from models.engine.nccl.duplication import ChannelDuplication, DupWhy, dup_channels
from models.present.plan_text import (CROSS_HOST_TP_WARNING, fit_note, memory_note, plan_error_text, skipped_note,
                                      skipped_notes, timing_note, tp_limit_note, warning_note,
                                      warning_notes)
from models.present.search_text import duplication_note
from models.present.sweep_text import sweep_row_note
from models.studies.planner.cp_exchange import HierarchicalExchange
from models.studies.planner import (DoesNotFitError, Memory, NoLayoutError, PlanError, PlanWarning, SkipCode,
                                    SkippedLayout, TimingCode, TimingWhy, calibrate_plan, plan, search)
from models.studies.stepgraph import PlanDoesNotFitError, StepGraphError, step_graph, step_graph_size
from models.studies.sweep import SweepRow, SweepStatus, sweep
from models.studies.workload import PRESETS, TpConstraint, TpLimit, resnet50, tp_limit, workload

SMALL = "transformer:layers=4,hidden=512,heads=8,seq=256,vocab=1000"
EIGHT = "transformer:layers=8,hidden=512,heads=8,seq=256,vocab=1000"
FLASH = "transformer:layers=4,hidden=768,heads=12,seq=256,vocab=1000,flash=1"
MOE = "moe:layers=4,hidden=768,vocab=1000,seq=256,heads=12,experts=8,top_k=2,expert_ffn=510"
OOM_WORDS = ("out of memory: needs 437.2 GB of 17.2 GB (weights 43.7, gradients 43.7, optimizer 349.2, "
             "activations 0.7) per GPU")


@pytest.fixture(scope="module")
def dgx1v():
    """Prepared once: the module's plans share its channel searches."""
    return PreparedFabric(topo.build("dgx1v"))


@pytest.fixture(scope="module")
def oom(dgx1v):
    return plan("gpt3-175b", dgx1v, tp=8, pp=1, dp=1, simulate=0)


# ------------------------------------------------------------------ memory and fit
def test_a_plan_that_does_not_fit_is_its_memory_in_words(dgx1v, oom):
    assert not oom.fits and not oom.memory.fits and oom.memory.total > oom.memory.capacity
    assert fit_note(oom) == OOM_WORDS
    assert memory_note(oom.memory) == OOM_WORDS.removeprefix("out of memory: needs ").removesuffix(" per GPU")
    assert fit_note(plan(SMALL, dgx1v, tp=1, pp=1, dp=8, global_batch=16, simulate=0)) == ""
    assert memory_note(Memory(2e9, 2e9, 12e9, 4e9, 80e9)) == \
        "20.0 GB of 80.0 GB (weights 2.0, gradients 2.0, optimizer 12.0, activations 4.0)"


# ------------------------------------------------------------------ warnings
@pytest.mark.parametrize("code, words", [
    (PlanWarning.CROSS_HOST_TP, "tensor parallelism across hosts: every layer's activations cross the network twice "
                                "per pass, which is rarely wise (modelled as asked)"),
    (PlanWarning.ABOVE_PEAK, "the measurement implies more than the hardware's peak (fitted fractions above 1): "
                             "check the measured layout, batch and dtype")])
def test_each_warning_is_worded(code, words):
    assert warning_note(code) == words


def test_every_warning_code_is_worded():
    assert {warning_note(code) for code in PlanWarning} and all(warning_note(code) for code in PlanWarning)
    assert warning_note(PlanWarning.CROSS_HOST_TP) == CROSS_HOST_TP_WARNING


def test_the_warnings_are_codes_of_what_happened(dgx1v):
    cross = plan("transformer:layers=4,hidden=1024,heads=16,seq=256,vocab=1000", topo.build("2xdgx1v"), tp=16, pp=1,
                 dp=1, simulate=0)
    assert cross.warning_codes == (PlanWarning.CROSS_HOST_TP,) and warning_notes(cross) == (CROSS_HOST_TP_WARNING,)
    base = plan(SMALL, dgx1v, tp=1, pp=1, dp=8, global_batch=16, simulate=0)
    assert base.warning_codes == ()
    # measured faster than the model from hardware facts predicts: fitted fractions above 1
    fast = calibrate_plan(SMALL, dgx1v, f"{0.7 * base.step_time * 1e3:.6f}ms", tp=1, pp=1, dp=8, global_batch=16,
                          simulate=0)
    assert max(fast.calibration.fitted.values()) > 1 and fast.warning_codes == (PlanWarning.ABOVE_PEAK,)
    slow = calibrate_plan(SMALL, dgx1v, f"{2 * base.step_time * 1e3:.6f}ms", tp=1, pp=1, dp=8, global_batch=16,
                          simulate=0)
    assert max(slow.calibration.fitted.values()) < 1 and slow.warning_codes == ()


# ------------------------------------------------------------------ timing
@pytest.mark.parametrize("why, words", [
    (TimingWhy(TimingCode.NOT_AMONG_BEST, count=1), "not among the 1 best of the analytical first pass"),
    (TimingWhy(TimingCode.ANALYTICAL_ONLY), "analytical only (simulate=0)"),
    (TimingWhy(TimingCode.BEYOND_BUDGET, max_events=579), "beyond the simulations' budget max_events=579"),
    (TimingWhy(TimingCode.NEEDS_EVENTS, events=2307, max_events=10),
     "its simulation needs 2307 events, beyond the budget max_events=10"),
    (TimingWhy(TimingCode.CNN), "a CNN's step is not simulated: step graphs follow Megatron's transformer schedule"),
    (TimingWhy(TimingCode.INTERLEAVED), "interleaved 1F1B is not simulated: step graphs build plain 1F1B"),
    (TimingWhy(TimingCode.OVERLAP_FIRST_PASS, overlap=0.25),
     "overlap=0.25 shapes the first pass only: the simulation overlaps the gradient buckets as the schedule allows"),
    (None, "")])
def test_each_timing_code_is_worded(why, words):
    assert timing_note(why) == words


def test_every_timing_code_is_worded():
    numbers = dict(count=2, events=30, max_events=20, overlap=0.5)
    assert len({timing_note(TimingWhy(code, **numbers)) for code in TimingCode}) == len(TimingCode)


def test_the_timing_numbers_are_the_searchs(dgx1v):
    s = search(SMALL, dgx1v, tp=1, pp=1, global_batch=16, simulate=1, max_events=10**9)
    assert s.best.simulated and s.best.timing_why is None
    assert {p.timing_why for p in s.plans[1:] if p.fits} == {TimingWhy(TimingCode.NOT_AMONG_BEST, count=1)}
    assert {p.timing_why for p in search(SMALL, dgx1v, tp=1, pp=1, global_batch=16, simulate=0).plans} == \
        {TimingWhy(TimingCode.ANALYTICAL_ONLY)}
    options = dict(tp=8, pp=1, dp=1, zero=0, global_batch=4, recompute="none")
    events = 3 * step_graph_size(plan(SMALL, dgx1v, simulate=0, **options), workload=SMALL)
    budget = search(SMALL, dgx1v, tp=8, pp=1, dp=1, global_batch=4, max_events=events)
    assert budget.best.simulated and {timing_note(p) for p in budget.plans[1:] if p.fits} == \
        {f"beyond the simulations' budget max_events={events}"}
    small = plan(SMALL, dgx1v, max_events=events - 1, **options)
    assert small.timing_why == TimingWhy(TimingCode.NEEDS_EVENTS, events=events, max_events=events - 1)
    assert timing_note(small) == f"its simulation needs {events} events, beyond the budget max_events={events - 1}"
    assert plan("resnet50", dgx1v, dp=8, global_batch=64).timing_why == TimingWhy(TimingCode.CNN)
    assert plan(SMALL, dgx1v, tp=1, pp=2, dp=4, global_batch=16, virtual_stages=2, simulate=0).timing_why == \
        TimingWhy(TimingCode.INTERLEAVED)
    assert plan(SMALL, dgx1v, tp=1, pp=1, dp=8, global_batch=16, overlap=0.25, simulate=1).timing_why == \
        TimingWhy(TimingCode.OVERLAP_FIRST_PASS, overlap=0.25)


# ------------------------------------------------------------------ refused layouts
@pytest.mark.parametrize("constraint, words", [
    (TpConstraint(TpLimit.KV_HEADS, 6, 4), "tensor parallel 6 neither divides nor is a multiple of kv_heads (4)"),
    (TpConstraint(TpLimit.FFN, 2, 1001), "tensor parallel 2 does not divide ffn (1001)"),
    (TpConstraint(TpLimit.CNN, 2), "a CNN is data parallel only here (tensor parallel 1)"),
    (TpConstraint(TpLimit.HEADS, 2, 25), "tensor parallel 2 does not divide heads (25)")])
def test_each_tensor_parallel_limit_is_worded(constraint, words):
    assert tp_limit_note(constraint) == words


def test_the_tensor_parallel_limits_are_the_workloads_numbers():
    assert tp_limit(workload("transformer:layers=2,hidden=768,heads=12,kv_heads=4,seq=256,vocab=1000"), 6) == \
        TpConstraint(TpLimit.KV_HEADS, 6, 4)
    assert tp_limit(workload("transformer:layers=2,hidden=512,heads=8,ffn=1001,seq=256,vocab=1000"), 2) == \
        TpConstraint(TpLimit.FFN, 2, 1001)
    assert tp_limit(resnet50(), 2) == TpConstraint(TpLimit.CNN, 2) and tp_limit(resnet50(), 1) is None
    assert tp_limit(PRESETS["gpt2-1.5b"], 2) == TpConstraint(TpLimit.HEADS, 2, 25)
    assert tp_limit(PRESETS["llama3-70b"], 16) is None  # 8 K/V heads, replicated
    assert {limit.value for limit in TpLimit} == {"cnn", "heads", "ffn", "kv_heads"}


#: (search arguments, the refusals' numbers, main's words of the error the search raised).
REFUSED = [
    (("transformer:layers=4,hidden=768,heads=12,seq=256,vocab=1000", "dgx1v"), dict(tp=3),
     [SkippedLayout(SkipCode.TP_HOST, 3, count=8)],
     "no layout of transformer on 8 GPUs of DGX-1V: tp3: a tensor-parallel group takes part of one host of 8 GPUs "
     "or whole hosts"),
    ((SMALL, "dgx1v"), dict(pp=3), [SkippedLayout(SkipCode.GPUS, t, 3, count=8) for t in (1, 2, 4, 8)],
     "no layout of transformer on 8 GPUs of DGX-1V: tp1 pp3: does not divide 8 GPUs; tp2 pp3: does not divide 8 "
     "GPUs; tp4 pp3: does not divide 8 GPUs; tp8 pp3: does not divide 8 GPUs"),
    ((SMALL, "2xdgx1v"), dict(tp=1, pp=16, dp=1), [SkippedLayout(SkipCode.LAYERS, 1, 16, count=4)],
     "no layout of transformer on 16 GPUs of 2xDGX-1V: pp16: more stages than 4 layers"),
    ((SMALL, "dgx1v"), dict(tp=1, pp=1, dp=8, global_batch=12),
     [SkippedLayout(SkipCode.BATCH, 1, 1, 8, count=12, micro_batch=1)],
     "no layout of transformer on 8 GPUs of DGX-1V: tp1 pp1 dp8: global batch 12 is not a multiple of dp x "
     "micro-batch = 8"),
    ((SMALL, "dgx1v"), dict(tp=1, pp=1, dp=8, virtual_stages=2),
     [SkippedLayout(SkipCode.INTERLEAVE_PIPELINE, 1, 1, 8, 2)],
     "no layout of transformer on 8 GPUs of DGX-1V: tp1 pp1 v2 dp8: interleaving needs a pipeline (pp > 1)"),
    ((SMALL, "dgx1v"), dict(tp=1, pp=4, dp=2, virtual_stages=3),
     [SkippedLayout(SkipCode.INTERLEAVE_LAYERS, 1, 4, 2, 3, count=4)],
     "no layout of transformer on 8 GPUs of DGX-1V: tp1 pp4 v3 dp2: 4 layers do not split into pp x v = 12 chunks"),
    ((EIGHT, "dgx1v"), dict(tp=1, pp=4, dp=2, virtual_stages=2, global_batch=12),
     [SkippedLayout(SkipCode.INTERLEAVE_MICRO_BATCHES, 1, 4, 2, 2, count=6)],
     "no layout of transformer on 8 GPUs of DGX-1V: tp1 pp4 v2 dp2: 6 micro-batches are not a multiple of pp = 4"),
    (("transformer:layers=2,hidden=512,heads=8,ffn=1001,seq=256,vocab=1000", "dgx1v"), dict(tp=2),
     [SkippedLayout(SkipCode.TP_LIMIT, 2, tp_limit=TpConstraint(TpLimit.FFN, 2, 1001))],
     "no layout of transformer on 8 GPUs of DGX-1V: tp2: tensor parallel 2 does not divide ffn (1001)"),
    ((FLASH, "dgxa100"), dict(tp=1, pp=1, dp=4, ep=2), [SkippedLayout(SkipCode.EP_DENSE, 1, 1, 4, ep=2)],
     "no layout of transformer on 4 GPUs of DGX A100: tp1 pp1 dp4 ep2: expert parallelism needs a mixture-of-experts "
     "workload: expected ep 1 and etp 1"),
    ((MOE, "dgx1v"), dict(tp=1, pp=1, dp=8, ep=3), [SkippedLayout(SkipCode.EP_EXPERTS, 1, 1, 8, count=8, ep=3)],
     "no layout of moe on 8 GPUs of DGX-1V: tp1 pp1 dp8 ep3: ep 3 does not divide the 8 routed experts"),
    ((MOE, "dgx1v"), dict(tp=1, pp=2, dp=4, ep=8), [SkippedLayout(SkipCode.EP_FOLD, 1, 2, 4, count=4, ep=8)],
     "no layout of moe on 8 GPUs of DGX-1V: tp1 pp2 dp4 ep8: etp x ep = 8 does not divide tp x cp x dp = 4: "
     "expected the expert layers to fold the stage's GPUs"),
    ((MOE, "dgx1v"), dict(tp=2, pp=1, dp=4, ep=2, etp=1, sequence_parallel=False),
     [SkippedLayout(SkipCode.EP_SEQUENCE_PARALLEL, 2, 1, 4, ep=2)],
     "no layout of moe on 8 GPUs of DGX-1V: tp2 pp1 dp4 ep2: expert with tensor parallelism needs sequence "
     "parallelism (Megatron refuses it off): expected --sequence-parallel on"),
    ((MOE, "dgx1v"), dict(tp=4, pp=1, dp=2, ep=1, etp=4), [SkippedLayout(SkipCode.ETP_FFN, 4, 1, 2, count=510, etp=4)],
     "no layout of moe on 8 GPUs of DGX-1V: tp4 pp1 dp2 etp4: etp 4 does not divide the expert FFN width 510"),
    ((FLASH, "dgxa100"), dict(tp=1, pp=1, dp=1, cp=8, seq_length=264),
     [SkippedLayout(SkipCode.CP_SEQUENCE, 1, 1, 1, count=264, cp=8)],
     "no layout of transformer on 8 GPUs of DGX A100: tp1 cp8 pp1 dp1: the sequence of 264 tokens does not split "
     "into 2 x cp = 16 chunks"),
    ((SMALL, "dgxa100"), dict(tp=1, pp=1, dp=4, cp=2, software="fused"),
     [SkippedLayout(SkipCode.CP_FLASH, 1, 1, 4, cp=2)],
     "no layout of transformer on 8 GPUs of DGX A100: tp1 cp2 pp1 dp4: context parallelism needs flash attention: "
     "expected the flash software stack"),
    ((FLASH, "dgxa100"), dict(tp=4, pp=1, dp=1, cp=2, cp_comm="a2a"),
     [SkippedLayout(SkipCode.CP_HEADS, 4, 1, 1, count=3, cp=2)],
     "no layout of transformer on 8 GPUs of DGX A100: tp4 cp2 pp1 dp1: all-to-all context parallelism needs the 3 "
     "heads per rank (query or key/value, the fewer) divisible by cp 2"),
    # a2a+p2p sized 4 x 2 (the degree it implies, cp 8): 12 heads over tp 2 leave 6 per rank, not a multiple of 4
    ((FLASH, "2xdgxa100"), dict(tp=2, pp=1, dp=1, cp_comm=HierarchicalExchange((4, 2))),
     [SkippedLayout(SkipCode.CP_HIERARCHY, 2, 1, 1, count=6, cp=8)],
     "no layout of transformer on 16 GPUs of 2xDGX A100: tp2 cp8 pp1 dp1: a2a+p2p context parallelism needs sizes "
     "a x p = cp 8, both >= 2, and the 6 heads per rank (query or key/value, the fewer) divisible by a"),
    ((SMALL, "dgx1v"), dict(tp=1, pp=2, dp=4, first_stage_layers=4),
     [SkippedLayout(SkipCode.SPLIT, 1, 2, 4, count=4, split=(4, 0, False, False))],
     "no layout of transformer on 8 GPUs of DGX-1V: tp1 pp2 dp4: 4 layers with 4 on the first stage and the even "
     "share on the last leave 0 for 1 other stages: expected a positive whole number each"),
    ((MOE, "dgx1v"), dict(tp=1, pp=2, dp=4, ep=2, ep_overlap="dualpipe", global_batch=12),
     [SkippedLayout(SkipCode.DUALPIPE, 1, 2, 4, count=3, ep=2)],
     "no layout of moe on 8 GPUs of DGX-1V: tp1 pp2 dp4 ep2: DualPipe needs an even pp, an even number of "
     "micro-batches of at least 2 x pp and no interleaving (received pp 2, 3 micro-batches)"),
]


@pytest.mark.parametrize("args, options, refused, words", REFUSED)
def test_a_search_that_refuses_every_layout_raises_its_numbers(dgx1v, args, options, refused, words):
    G = dgx1v if args[1] == "dgx1v" else topo.build(args[1])
    with pytest.raises(NoLayoutError) as caught:
        search(args[0], G, simulate=0, **({"zero": 1, "recompute": "none"} if args[0] in (MOE, FLASH) else {}),
               **options)
    error = caught.value
    assert list(error.skipped) == refused and error.workload in ("transformer", "moe")
    assert f" on {error.ngpus} GPUs of {error.fabric}: " in words
    assert plan_error_text(error) == words  # main's words of the error, byte for byte
    assert str(error).startswith(words.split(": ")[0] + ": ") and repr(refused[0]) in str(error)
    assert pickle.loads(pickle.dumps(error)).skipped == error.skipped


def test_every_skip_code_is_worded_and_reaches_the_search():
    assert {refused[0].code for _, _, refused, _ in REFUSED} == set(SkipCode)
    for code in SkipCode:
        record = SkippedLayout(code, 2, 2, 2, 2, count=4, micro_batch=1,
                               tp_limit=TpConstraint(TpLimit.HEADS, 2, 5))
        assert skipped_note(record).split(": ", 1)[1]


def test_a_search_lists_the_layouts_it_refused(dgx1v):
    s = search(SMALL, dgx1v, global_batch=12, simulate=0)
    assert s.skipped_layouts == (SkippedLayout(SkipCode.BATCH, 1, 1, 8, count=12, micro_batch=1),)
    assert skipped_notes(s) == ("tp1 pp1 dp8: global batch 12 is not a multiple of dp x micro-batch = 8",)
    (row,) = s.skipped_layouts[0].to_records()
    assert row == {"code": "batch", "tp": 1, "pp": 1, "dp": 8, "virtual_stages": 1, "count": 12, "micro_batch": 1,
                   "tp_limit": None, "tp_limit_value": None, "cp": 1, "ep": 1, "etp": 1, "first_stage_layers": 0,
                   "last_stage_layers": 0, "embedding_in_split": False, "loss_in_split": False}
    assert SkippedLayout(SkipCode.TP_LIMIT, 2, tp_limit=TpConstraint(TpLimit.HEADS, 2, 25)).to_records()[0][
        "tp_limit_value"] == 25


# ------------------------------------------------------------------ errors that carry a plan
def test_the_errors_of_a_plan_that_does_not_fit_carry_it(dgx1v, oom):
    with pytest.raises(DoesNotFitError) as caught:
        calibrate_plan("gpt3-175b", dgx1v, "2s", tp=8, pp=1, dp=1, simulate=0)
    assert isinstance(caught.value, PlanError) and caught.value.plan == oom
    assert plan_error_text(caught.value) == (
        f"the measured layout tp8 pp1 dp1 zero0 mb1 rc=full sp tp-dp-pp does not fit ({OOM_WORDS}): expected a "
        "layout that runs")
    with pytest.raises(PlanDoesNotFitError) as graph:
        step_graph(oom, dgx1v.G, workload="gpt3-175b")
    assert isinstance(graph.value, StepGraphError)
    # The library's own message names the bytes needed and the GPU's (a Python caller reads it).
    for error in (caught.value, graph.value):
        assert f"needs {oom.memory.total:.4g} bytes per GPU, which has {oom.memory.capacity:.4g}" in str(error)
    assert plan_error_text(graph.value) == f"the plan does not fit ({OOM_WORDS}): expected a layout that fits in memory"
    assert pickle.loads(pickle.dumps(caught.value)).plan == oom
    other = PlanError("tp must be a whole number >= 1, received 0")
    assert plan_error_text(other) == str(other)


# ------------------------------------------------------------------ sweeps
def _row(status, cause="", nranks=3, lost=1):
    return SweepRow((), 0.0, float("inf"), 1.0, None, None, None, nranks, status, cause, lost, ())


@pytest.mark.parametrize("row, words", [
    (_row(SweepStatus.RUNS), "the job runs on 3 GPUs"),
    (_row(SweepStatus.RUNS, nranks=1), "the job runs on 1 GPU"),
    (_row(SweepStatus.RUNS, nranks=8, lost=0), ""),
    (_row(SweepStatus.DISCONNECTS_FABRIC, "GPU 'h1.gpu0' cannot be reached", nranks=0, lost=0),
     "disconnects the fabric: GPU 'h1.gpu0' cannot be reached"),
    (_row(SweepStatus.NO_GPU_LEFT, nranks=0), "no GPU of the job is left"),
    (_row(SweepStatus.CANNOT_COMMUNICATE, "no route", nranks=8, lost=0), "the job's GPUs cannot communicate: no route"),
    (_row(SweepStatus.CANNOT_COMMUNICATE, "no route", nranks=2, lost=2),
     "the job's GPUs cannot communicate: no route; the job runs on 2 GPUs")])
def test_each_sweep_status_is_worded(row, words):
    assert sweep_row_note(row) == words


def test_a_sweeps_rows_hold_what_the_failure_left():
    gpus = sweep(topo.dgx1v(), "all_reduce", 2**20, fail_each="gpu", gpus="0-3", executor="inline")
    assert {(r.status, r.cause, r.nranks, r.gpus_lost) for r in gpus.rows} == {(SweepStatus.RUNS, "", 3, 1)}
    assert {sweep_row_note(r) for r in gpus.rows} == {"the job runs on 3 GPUs"}
    alone = sweep(topo.dgx1v(), "all_reduce", 2**20, fail_each="gpu", gpus=[0], executor="inline")
    assert [(r.status, r.nranks, r.gpus_lost, sweep_row_note(r)) for r in alone.rows] == \
        [(SweepStatus.NO_GPU_LEFT, 0, 1, "no GPU of the job is left")]
    G = topo.remove_nodes(topo.build("2xdgx1v"), ["h0.mlx5_1", "h0.mlx5_2", "h0.mlx5_3"])
    nics = sweep(G, "sendrecv", 2**20, fail_each="nic", gpus=[0, 8], executor="inline")
    assert [sweep_row_note(r) for r in nics.rows] == [
        "disconnects the fabric: GPU 'h1.gpu0' cannot be reached from GPU 'h0.gpu0': expected every GPU to reach "
        "every other GPU over the fabric (disconnected fabric)", "", "", "", ""]
    assert [r.status for r in nics.rows] == [SweepStatus.DISCONNECTS_FABRIC] + [SweepStatus.RUNS] * 4
    (first, *_) = nics.to_records()
    assert (first["status"], first["gpus_lost"], first["cause"]) == ("disconnects_fabric", 0, nics.rows[0].cause)


# ------------------------------------------------------------------ channel duplication
@pytest.mark.parametrize("call, why, words", [
    (dict(nchannels=4, bw_intra=100e9, compute_capability=90, pattern="nvls"), DupWhy.NVLS,
     "NVLS graphs are never duplicated"),
    (dict(nchannels=4, bw_intra=24e9, compute_capability=70), DupWhy.BELOW_MIN_BW, "bwIntra below 2.5e+10 B/s"),
    (dict(nchannels=5, bw_intra=40e9, compute_capability=90), DupWhy.COMPUTE_CAPABILITY,
     "ccMin > 80, bwIntra below 5e+10 B/s and more than 4 channels"),
    (dict(nchannels=32, bw_intra=30e9, compute_capability=70, max_channels=32), DupWhy.AT_MAX_CHANNELS,
     "already at maxChannels (32)"),
    (dict(nchannels=20, bw_intra=30e9, compute_capability=70, max_channels=32), DupWhy.DUPLICATED,
     "duplicated to min(2 x 20, 32) channels")])
def test_each_duplication_condition_is_worded_with_its_numbers(call, why, words):
    d = dup_channels(**call)
    assert d.why is why and d.duplicated == (why is DupWhy.DUPLICATED) and d.found == call["nchannels"]
    assert duplication_note(d) == words


def test_every_duplication_code_is_worded():
    assert {w.value for w in DupWhy} == {"nvls", "below_min_bw", "compute_capability", "at_max_channels", "duplicated"}
    d = dup_channels(6, 60e9, compute_capability=90)
    assert all(duplication_note(ChannelDuplication(12, 30e9, 30e9, True, why, 6, 32, d.rule)) for why in DupWhy)
    (row,) = d.to_records()
    assert (row["nchannels"], row["found"], row["max_channels"], row["why"], row["bw_intra_Bps"]) == \
        (12, 6, 32, "duplicated", 30e9)
    assert row["min_bw_Bps"] == 25e9 and row["cc_bw_below_Bps"] == 50e9


# ------------------------------------------------------------------ records of the new types
def test_the_new_types_give_tidy_records():
    assert TimingWhy(TimingCode.NOT_AMONG_BEST, count=8).to_records() == [
        {"code": "not_among_best", "count": 8, "events": None, "max_events": None, "overlap": None}]
    assert TpConstraint(TpLimit.KV_HEADS, 6, 4).to_records() == [{"limit": "kv_heads", "tp": 6, "value": 4}]

