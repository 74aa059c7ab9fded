"""The data-parallel collectives and the optimizer pass at the training state's own bytes
(models.studies.planner.gpu_memory.state_bytes, .optimizer_pass_bytes; issue 40).

Known answers: Megatron-LM accumulates and reduces bf16's gradients in fp32 ("bfloat16 requires
gradient accumulation and all-reduce to be done in fp32", megatron/training/arguments.py [U:
recalled]) and fp16's in fp16, and gathers the 16-bit parameters (the distributed optimizer after
the step; ZeRO 3 before each pass). So a gradient collective moves 4 bytes a parameter in bf16 and
fp8 (bf16 weights, fp32 main gradients in Megatron with Transformer Engine [U]), 2 in fp16, 4 in
fp32; a parameter all_gather 2, 2, 2 and 4. One fused Adam pass reads the gradient, reads and
writes the optimizer state and writes the 16-bit weight (fp32: reads and writes the weight)."""

from __future__ import annotations

import pytest

from models.studies.compute import compute_model
from models.studies.moe import moe_workload
from models.studies.planner import Layout, plan
from models.studies.planner.gpu_memory import optimizer_pass_bytes, state_bytes
from models.studies.planner.parallel_graph import plan_step_graph
from models.studies.planner.parallel_step import stage_parameters
from models.studies.planner.step import step_components
from models.studies.recomputation import NO_RECOMPUTE
from models.studies.stepgraph import step_graph
from models.studies.workload import workload

DENSE = "transformer:layers=4,hidden=512,heads=8,seq=256,vocab=1000"
MOE = "moe:layers=4,hidden=1024,vocab=32000,seq=2048,heads=8,experts=32,top_k=4,expert_ffn=512"
#: (gradient, parameter) bytes a parameter on the wire, by hand (module docstring).
WIRE = {"bf16": (4, 2), "fp8": (4, 2), "fp16": (2, 2), "fp32": (4, 4)}


def _dp_calls(dtype: str, zero: int) -> list:
    """The data-parallel collectives the analytical step asks for, one bucket each."""
    w = workload(DENSE)
    calls = []

    def comm(dimension, collective, nbytes):
        if dimension == "dp":
            calls.append((collective, nbytes))
        return 1e-3

    layout = Layout(2, 1, 4, zero, 1, 8, NO_RECOMPUTE, True, "tp-dp-pp")
    step_components(w, layout, compute_model("H100", dtype), comm, bucket=1e15)  # one bucket
    return calls


@pytest.mark.parametrize("dtype", sorted(WIRE))
def test_the_dense_steps_collectives_move_the_states_bytes(dtype):
    local = workload(DENSE).parameters / 2  # tp2, one stage
    grad, param = WIRE[dtype]
    assert _dp_calls(dtype, 0) == [("all_reduce", pytest.approx(local * grad))]
    assert _dp_calls(dtype, 1) == [("reduce_scatter", pytest.approx(local * grad)),
                                   ("all_gather", pytest.approx(local * param))]
    assert sorted(_dp_calls(dtype, 3)) == [("all_gather", pytest.approx(local * param)),
                                           ("reduce_scatter", pytest.approx(local * grad))]


def test_bf16_reduces_twice_fp16s_bytes_and_gathers_the_same():
    (rs16, n16), (ag16, p16) = _dp_calls("fp16", 1)
    (rs, n), (ag, p) = _dp_calls("bf16", 1)
    assert (rs, ag) == (rs16, ag16) == ("reduce_scatter", "all_gather")
    assert n == 2 * n16 and p == p16


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_a_mixture_of_experts_plan_by_hand(host, cluster, dtype):
    # ep8 x dp8 on one DGX H100: every GPU reduces the dense parameters over its 8 data-parallel
    # peers and its 4 of the 32 experts of each layer (3 x 1,024 x 512 each, SwiGLU) over none
    # (edp 1): only the dense part travels. On two hosts (edp 2) the experts' travel too.
    w = moe_workload(MOE)
    dense, experts = stage_parameters(w, tuple(range(w.layers)), 0, 1)  # the one stage's
    assert experts == 4 * 32 * 3 * 1024 * 512
    p = plan(MOE, host, tp=1, pp=1, ep=8, zero=1, global_batch=8, dtype=dtype, simulate=0)
    grad, param = WIRE[dtype]
    d = p.component("dp_comm").detail
    assert (d.degree, d.nbytes, d.parameter_bytes) == (8, pytest.approx(dense * grad), pytest.approx(dense * param))
    p = plan(MOE, cluster, tp=1, pp=1, ep=8, zero=1, global_batch=16, dtype=dtype, simulate=0)
    d = p.component("dp_comm").detail
    local = dense + experts / 8
    assert (d.degree, d.nbytes, d.parameter_bytes) == (16, pytest.approx(local * grad), pytest.approx(local * param))


def test_the_dense_step_graphs_buckets_are_the_analytical_bytes(cluster):
    # fp8 trains bf16 weights with fp32 gradients: 4 bytes a parameter reduced, 2 gathered (the
    # parameters were gathered at the fp8 operand's 1 byte before).
    w = workload(DENSE)
    for zero in (1, 3):
        p = plan(DENSE, cluster, tp=2, pp=2, dp=4, zero=zero, global_batch=16, dtype="fp8", simulate=0)
        d = p.component("dp_comm").detail
        g = step_graph(p, cluster.G)
        buckets = [t for t in g.tasks if t.kind == "dp_comm" and ".bucket" in t.id and t.id.endswith(".r0")]
        by_stage = [sum(t.nbytes for t in buckets if t.id.startswith(f"p{s}.")) for s in range(2)]
        assert max(by_stage) == pytest.approx(d.nbytes, abs=16)  # the heaviest stage's, integer bytes per task
        assert {t.op for t in buckets} == {"reduce_scatter"}
        if zero == 1:
            gathers = [t.nbytes for t in g.tasks if t.id in ("p0.params.r0", "p1.params.r0")]
            assert max(gathers) == pytest.approx(d.parameter_bytes, abs=1)
            assert gathers == pytest.approx([x / 2 for x in by_stage], abs=16)
        else:
            layer = [t.nbytes for t in g.tasks if ".zg" in t.id]
            assert layer and set(layer) == {int(w.layer_parameters / 2 * 2)}  # over tp2, 2 bytes each


def test_the_moe_step_graphs_buckets_are_the_analytical_bytes(cluster):
    p = plan(MOE, cluster, tp=1, pp=2, ep=8, zero=1, global_batch=32, simulate=0)
    d = p.component("dp_comm").detail
    g = plan_step_graph(p, cluster.G)
    per_stage = []
    for s in range(2):
        sent = sum(t.nbytes for t in g.tasks if t.kind == "dp_comm" and t.id.startswith(f"p{s}.")
                   and "bucket" in t.id and t.id.endswith(".r0"))
        gathered = sum(t.nbytes for t in g.tasks if t.id in (f"p{s}.dparams.r0", f"p{s}.eparams.r0"))
        per_stage.append((sent, gathered))
    # the analytical pass prices the busiest stage's (here the last, with the head)
    assert per_stage[1] == (pytest.approx(d.nbytes, abs=16), pytest.approx(d.parameter_bytes, abs=16))
    assert all(gathered == pytest.approx(sent / 2, abs=16) for sent, gathered in per_stage)


def test_the_optimizer_pass_is_read_from_the_same_table():
    # bf16: gradient 4 read, master and moments 12 read and 12 written, the bf16 weight written 2
    assert optimizer_pass_bytes("bf16") == 4 + 2 * 12 + 2 == 30
    # fp16: gradient 2, its fp32 copy with master and moments 16 read and written, weight 2
    assert optimizer_pass_bytes("fp16") == 2 + 2 * 16 + 2 == 36
    # fp32: gradient 4, moments 8 read and written, the weight itself 4 read and written
    assert optimizer_pass_bytes("fp32") == optimizer_pass_bytes("tf32") == 4 + 2 * 8 + 2 * 4 == 28
    assert optimizer_pass_bytes("fp8") == optimizer_pass_bytes("nvfp4") == optimizer_pass_bytes("bf16")
    for dtype in ("bf16", "fp16", "fp32"):
        weight, grad, optimizer = state_bytes(dtype)
        assert optimizer_pass_bytes(dtype) >= grad + 2 * optimizer + weight  # everything held is touched


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_optimizer_time_is_its_pass_over_hbm(host, dtype):
    p = plan(DENSE, host, tp=2, pp=1, dp=4, zero=1, global_batch=8, dtype=dtype, simulate=0)
    o = p.component("optimizer")
    local = workload(DENSE).parameters / 2 / 4  # over tp, sharded over dp
    assert o.detail.parameters == pytest.approx(local) and o.detail.pass_bytes == optimizer_pass_bytes(dtype)
    c = p.compute
    assert o.time == pytest.approx(local * optimizer_pass_bytes(dtype) / (c.memory_bandwidth * c.memory_efficiency))
    g = step_graph(p, host.G)
    (opt,) = {t.seconds for t in g.tasks if t.kind == "optimizer"}
    assert opt == pytest.approx(o.time)


def test_the_gpu_ranking_reduces_the_gradients_at_their_bytes():
    # 8 GPUs of one board, nothing hidden: the all_reduce moves 2 x 7/8 of the gradients over each
    # GPU's NVLink, 4 bytes a parameter in bf16 and 2 in fp16 (an H100's 450 GB/s each way).
    from models.studies.compute import GENERATIONS
    from models.studies.planner import gpus_ranking
    w = workload(DENSE)
    for dtype, grad in (("bf16", 4), ("fp16", 2)):
        (h100,) = [r for r in gpus_ranking(DENSE, dtype=dtype, overlap=0.0) if r.generation == "H100"]
        assert GENERATIONS["H100"].nvlink_bandwidth == 450e9
        assert h100.communication == pytest.approx(2 * 7 / 8 * w.parameters * grad / 450e9)
