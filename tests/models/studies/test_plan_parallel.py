"""The planner's context, expert and uneven pipeline parallelism: known answers by hand, Megatron's
refusals, every error path and invariants."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

import topo
from models.engine.fabric import PreparedFabric
from models.studies.moe import MOE_PRESETS, MoeSpecError
from models.studies.planner import NoLayoutError, PlanError, SkipCode, plan, search
from models.studies.planner.parallel import SplitError, alltoall_split, cp_ring_bytes, dispatch_bytes, stage_split
from models.studies.workload import PRESETS, UnknownDtypeError

# A small MoE model: 32 experts of width 512, top-4, 8 heads of 128, 2,048 tokens.
SMALL = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"


@pytest.fixture(scope="module")
def two_hosts():
    """Two DGX H100, prepared once (frozen: read only) so that the module's plans share its
    channel searches."""
    return PreparedFabric(topo.build("2xdgxh100"))


# ------------------------------------------------------------------ known answers by hand
def test_moe_memory_per_gpu_by_hand(two_hosts):
    # Mixtral-8x7B, tp1 pp1 dp16 ep8, ZeRO 1, bf16. Per layer: attention q, o 4096 x 4096 and k, v
    # 4096 x 1024 = 41,943,040, two norms 8,192, router 4096 x 8 = 32,768: 41,984,000; x 32 layers
    # = 1,343,488,000; embedding 32,000 x 4,096 = 131,072,000; head 131,072,000 + final norm 4,096.
    dense = 1_343_488_000 + 131_072_000 + 131_076_096
    # Experts: 8 per layer of 3 x 4096 x 14336 = 176,160,768, over ep 8: one per GPU, 32 layers.
    experts = 32 * 176_160_768
    p = plan("mixtral-8x7b", two_hosts, tp=1, pp=1, dp=16, ep=8, zero=1, recompute="full", simulate=0)
    assert p.layout.edp == 2
    m = p.memory
    assert m.parameters == pytest.approx(2 * (dense + experts))
    assert m.gradients == pytest.approx(4 * (dense + experts))  # accumulated in fp32 with bf16
    # Adam's 12 bytes, the dense part over dp x cp = 16, the experts over edp = 16 / 8 = 2.
    assert m.optimizer == pytest.approx(12 * (dense / 16 + experts / 2))


def test_cp_ring_bytes_per_step_by_hand(two_hosts):
    # Llama 3 8B at 8,192 tokens over cp 2: 4,096 tokens x (K 8 x 128 + V 8 x 128) x 2 bytes.
    assert cp_ring_bytes(PRESETS["llama3-8b"], 1, 2, 1, 2) == 4096 * 2048 * 2
    # tp 4 splits the 8 K/V heads: 2 each of K and V per rank.
    assert cp_ring_bytes(PRESETS["llama3-8b"], 1, 2, 4, 2) == 4096 * 512 * 2
    p = plan("llama3-8b", two_hosts, tp=1, cp=2, pp=1, dp=8, zero=1, recompute="full", simulate=0)
    cp = p.component("cp_comm")
    assert cp.detail.nbytes == 4096 * 2048 * 2 and cp.detail.layers == 32
    assert cp.time > 0 and 0 <= cp.exposed <= cp.time
    assert {len(g) for g in p.groups["cp"]} == {2} and len(p.groups["cp"]) == 8


def test_ep_dispatch_bytes_and_its_nvlink_network_split_by_hand(two_hosts):
    # ep 16 over 2 DGX H100: 1/16 of each rank's buffer stays, 7/16 crosses NVLink, 8/16 the network.
    assert alltoall_split(range(16), lambda g: g // 8) == (1 / 16, 7 / 16, 8 / 16)
    p = plan(SMALL, two_hosts, tp=1, pp=1, dp=16, ep=16, zero=1, recompute="none", simulate=0)
    assert p.groups["ep"] == (tuple(range(16)),)
    ep = p.component("ep_comm").detail
    # 2,048 tokens x top-4 x hidden 1,024 x 2 bytes (bf16 dispatch and combine).
    assert ep.dispatch_bytes == ep.combine_bytes == 2048 * 4 * 1024 * 2 == dispatch_bytes(2048, 4, 1024, 2)
    assert ep.network_fraction == 0.5 and ep.layers == 4
    # fp8 training dispatches fp8's copy (1 byte) and combines in 16-bit.
    fp8 = plan(SMALL, two_hosts, tp=1, pp=1, dp=16, ep=16, zero=1, recompute="none", simulate=0, dtype="fp8")
    assert fp8.component("ep_comm").detail.dispatch_bytes == 2048 * 4 * 1024
    # Inside one host (ep 8) nothing leaves the NVLink domain, and the all-to-alls are faster.
    local = plan(SMALL, two_hosts, tp=1, pp=1, dp=16, ep=8, zero=1, recompute="none", simulate=0)
    assert local.component("ep_comm").detail.network_fraction == 0
    assert local.component("ep_comm").time < p.component("ep_comm").time


def test_uneven_split_of_126_layers_over_64_chunks():
    split = stage_split(126, 16, 4, embedding_in_split=True, loss_in_split=True)
    assert split.chunk_layers[0] == 1 and split.chunk_layers[-1] == 1
    assert set(split.chunk_layers[1:-1]) == {2} and sum(split.chunk_layers) == 126
    assert [len(s) for s in split.stages] == [7] + [8] * 14 + [7]
    # First / last stage counts: 126 = 6 + 14 x 8 + 8.
    assert [len(s) for s in stage_split(126, 16, first=6, last=8).stages] == [6] + [8] * 14 + [8]


def test_llama3_405b_plans_over_pp16_v4(two_hosts):
    G = topo.build("64xdgxh100")
    p = plan("llama3-405b", G, tp=8, pp=16, virtual_stages=4, zero=1, recompute="full", simulate=0)
    assert p.layout.embedding_in_split and p.layout.loss_in_split and p.layout.dp == 4
    assert p.fits and p.timing == "analytical"


def test_the_step_breakdown_names_every_exposed_term(two_hosts):
    p = plan(SMALL, two_hosts, tp=2, pp=2, dp=4, ep=4, zero=1, recompute="none", simulate=0)
    names = [c.name for c in p.components]
    assert names == ["compute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "bubble", "dp_comm", "optimizer"]
    assert p.step_time == pytest.approx(sum(c.exposed for c in p.components))
    assert p.timing_why.code.value == "analytical_only"  # simulate=0: analytical, with a note


def test_overlap_and_dualpipe_hide_what_they_should(two_hosts):
    flat = dict(tp=1, pp=1, dp=16, ep=16, zero=1, recompute="none", simulate=0)
    none = plan(SMALL, two_hosts, **flat)
    batch = plan(SMALL, two_hosts, ep_overlap="batch", **flat)
    assert batch.component("ep_comm").exposed < none.component("ep_comm").exposed
    assert batch.component("ep_comm").time == none.component("ep_comm").time
    base = dict(tp=1, pp=2, dp=8, ep=8, zero=1, recompute="none", simulate=0)
    none = plan(SMALL, two_hosts, **base)
    dual = plan(SMALL, two_hosts, ep_overlap="dualpipe", **base)
    assert dual.component("bubble").exposed == 0  # pp 2: pp / 2 - 1 = 0 slots
    assert dual.component("pp_comm").exposed == 0
    assert dual.memory.parameters == pytest.approx(2 * none.memory.parameters, rel=1e-4)  # stages 0 and 1


# ------------------------------------------------------------------ Megatron's refusals
@pytest.mark.parametrize("workload, options, code", [
    (SMALL, dict(tp=1, pp=1, dp=16, ep=3), SkipCode.EP_EXPERTS),
    (SMALL, dict(tp=1, pp=2, dp=8, ep=16), SkipCode.EP_FOLD),
    (SMALL, dict(tp=2, pp=1, dp=8, ep=8, etp=1, sequence_parallel=False), SkipCode.EP_SEQUENCE_PARALLEL),
    (SMALL.replace("expert_ffn=512", "expert_ffn=510"), dict(tp=4, pp=1, dp=4, ep=1, etp=4), SkipCode.ETP_FFN),
    ("llama3-8b", dict(tp=1, pp=1, dp=1, cp=16, seq_length=8200), SkipCode.CP_SEQUENCE),
    ("llama3-8b", dict(tp=1, pp=1, dp=8, cp=2, software="fused"), SkipCode.CP_FLASH),
    ("transformer:layers=4,hidden=768,heads=12,seq=4096,vocab=1000,flash=1", dict(tp=4, pp=1, dp=1, cp=4,
                                                                                  cp_comm="a2a"), SkipCode.CP_HEADS),
    ("llama3-8b", dict(tp=1, pp=4, dp=4, last_stage_layers=30), SkipCode.SPLIT),
    ("llama3-8b", dict(tp=1, pp=4, dp=4, virtual_stages=2, embedding_in_split=True), SkipCode.SPLIT),
    (SMALL, dict(tp=1, pp=4, dp=4, ep=4, ep_overlap="dualpipe", global_batch=12), SkipCode.DUALPIPE),
])
def test_megatron_refusals_name_the_reason(two_hosts, workload, options, code):
    with pytest.raises(NoLayoutError) as error:
        search(workload, two_hosts, zero=1, recompute="none", simulate=0, **options)
    assert [s.code for s in error.value.skipped] == [code]


def test_the_search_covers_ep_and_etp_and_refuses_with_reasons(two_hosts):
    result = search(SMALL, two_hosts, zero=1, recompute="none", simulate=0, pp=1)
    eps = {(p.layout.tp, p.layout.ep, p.layout.etp) for p in result.plans}
    assert {(1, 16, 1), (2, 8, 1), (2, 8, 2), (4, 4, 4)} <= eps
    assert all(p.layout.ngpus == 16 for p in result.plans)


def test_cp_is_searched_for_long_sequences(two_hosts):
    result = search("llama3-8b", two_hosts, seq_length=32768, zero=1, recompute="full", simulate=0, tp=8, pp=1)
    assert {p.layout.cp for p in result.plans} == {1, 2}


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("options, message", [
    (dict(cp_comm="ring"), "cp_comm must be one of p2p, a2a, a2a\\+p2p, received 'ring'"),
    (dict(ep_overlap="always"), "ep_overlap must be one of none, batch, dualpipe"),
    (dict(expert_balance=0.5), "expert_balance must be a number from 1"),
    (dict(expert_balance=True), "expert_balance must be a number from 1"),
    (dict(first_stage_layers=-1), "first_stage_layers must be a whole number >= 0"),
    (dict(last_stage_layers=None), "last_stage_layers must be a whole number >= 0, received None"),
    (dict(embedding_in_split="yes"), "embedding_in_split must be True or False"),
    (dict(cp=0), "cp must be a whole number >= 1"),
    (dict(ep=1.5), "ep must be a whole number >= 1"),
    (dict(dispatch_dtype="fp6"), "unknown dtype 'fp6'"),
])
def test_bad_options_are_refused(two_hosts, options, message):
    expected = UnknownDtypeError if "dtype" in message else PlanError
    with pytest.raises(expected, match=message):
        search(SMALL, two_hosts, simulate=0, **options)


def test_ep_on_a_dense_workload_is_refused(two_hosts):
    with pytest.raises(NoLayoutError, match="EP_DENSE"):
        search("llama3-8b", two_hosts, ep=2, tp=8, pp=1, simulate=0)


@pytest.mark.parametrize("args, options, message", [
    ((126, 16), dict(first=200), "leave -74 for 15 other stages"),
    ((8, 1), dict(first=4), "first/last stage layers need a pipeline"),
    ((8, 2), dict(first=4, embedding_in_split=True), "expected either first/last stage layers"),
    ((9, 4, 2), dict(), "9 layers = 9 do not split into pp x v = 8 chunks"),
    ((12, 4, 2), dict(first=3), "do not split into 2 chunks each"),
    ((1, 3, 1), dict(embedding_in_split=True, loss_in_split=True), "leaves stage 0 without layers"),
    ((8, 2), dict(first=-1), "must be >= 0"),
])
def test_split_errors_name_expected_and_received(args, options, message):
    with pytest.raises(SplitError, match=message):
        stage_split(*args, **options)


def test_top_k_above_experts_is_a_typed_error():
    with pytest.raises(MoeSpecError, match=r"top_k \(9\) must be at most the routed experts \(8\)"):
        dataclasses.replace(MOE_PRESETS["mixtral-8x7b"], top_k=9)


@pytest.mark.parametrize("argv, message", [
    (["plan", "deepseek-v3", "--system", "2xdgxh100", "--tp", "1", "--pp", "1", "--ep", "48"],
     "ep 48 does not divide the 256 routed experts"),
    (["plan", "deepseek-v3", "--system", "2xdgxh100", "--tp", "1", "--pp", "2", "--ep", "16"],
     "etp x ep = 16 does not divide tp x cp x dp = 8"),
    (["plan", "llama3-8b", "--system", "2xdgxh100", "--tp", "1", "--pp", "1", "--cp", "16", "--seq-length", "8200"],
     "does not split into 2 x cp = 32 chunks"),
    (["plan", "llama3-8b", "--system", "2xdgxh100", "--tp", "1", "--pp", "4", "--first-stage-layers", "32"],
     "expected a positive whole number each"),
    (["plan", "llama3-8b", "--system", "2xdgxh100", "--tp", "8", "--pp", "1", "--ep", "2"],
     "expert parallelism needs a mixture-of-experts workload: expected ep 1 and etp 1"),
    (["plan", SMALL.replace("top_k=4", "top_k=33"), "--system", "2xdgxh100"],
     "top_k (33) must be at most the routed experts (32)"),
    (["plan", SMALL, "--system", "2xdgxh100", "--expert-balance", "0.5"], "--expert-balance must be a number"),
])
def test_cli_refuses_bad_layouts_in_one_line(capsys, argv, message):
    from tests.test_cli_commands import one_line_error

    assert message in one_line_error(capsys, *argv)


def test_cli_plans_deepseek_v3_with_ep(capsys):
    from tests.test_cli_commands import run

    status, out, err = run(capsys, "plan", "deepseek-v3", "--system", "32xdgxh100", "--tp", "1", "--pp", "8",
                           "--ep", "32", "--zero", "1", "--recompute", "full", "--simulate", "0", "--dispatcher", "flat")
    assert status == 0, err
    # 4,096 tokens x top-8 x 7,168 x 2 bytes = 448 MiB; ep 32 over 4 hosts: 24 of 32 peers elsewhere.
    assert "dispatch 448.0 + combine 448.0 MiB per rank over ep32 (75% off the NVLink domain)" in out
    assert "timing: analytical (analytical only (simulate=0))" in out


# ------------------------------------------------------------------ invariants
@settings(max_examples=60, deadline=None)
@given(layers=st.integers(1, 130), pp=st.integers(1, 16), v=st.integers(1, 4), first=st.integers(0, 20),
       last=st.integers(0, 20), emb=st.booleans(), loss=st.booleans())
def test_a_split_holds_every_layer_once_and_no_stage_empty(layers, pp, v, first, last, emb, loss):
    try:
        split = stage_split(layers, pp, v, first=first, last=last, embedding_in_split=emb, loss_in_split=loss)
    except SplitError:
        return
    held = [i for s in split.stages for i in s]
    assert sorted(held) == list(range(layers))
    assert all(split.stages) and len(split.chunk_layers) == pp * (v if (v > 1 or first or last or emb or loss) else 1)


@settings(max_examples=25, deadline=None)
@given(domains=st.lists(st.integers(0, 3), min_size=1, max_size=24))
def test_alltoall_shares_add_up(domains):
    kept, nvlink, network = alltoall_split(range(len(domains)), lambda g: domains[g])
    assert kept + nvlink + network == pytest.approx(1.0)
    assert (network == 0) == (len(set(domains)) == 1)


@settings(max_examples=8, deadline=None)
@given(low=st.floats(1.0, 3.0), more=st.floats(0.0, 3.0))
def test_a_worse_balance_never_speeds_the_step(two_hosts, low, more):
    options = dict(tp=1, pp=1, dp=16, ep=16, zero=1, recompute="none", simulate=0)
    a = plan(SMALL, two_hosts, expert_balance=low, **options)
    b = plan(SMALL, two_hosts, expert_balance=low + more, **options)
    assert b.step_time >= a.step_time
    assert b.component("ep_comm").time >= a.component("ep_comm").time
