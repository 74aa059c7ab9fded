"""A plan's results are numbers and its words are built in models.present: Plan.compute holds the
compute model's facts, each Component.detail the numbers of its kind, versions_table the releases
as tuples and enums; models.present.plan_text and versions_text write from them exactly the lines
dgx-topo printed before (the known answers below are main's output before the words moved)."""

from __future__ import annotations

import dataclasses

import pytest

import topo
from models.engine.fabric import PreparedFabric
from models.engine.nccl.profiles import ANY_PATCH, PROFILES, versions_table
from models.engine.nccl.releases import BEHAVIOURS
from models.present.json_shapes import plan_json
from models.present.plan_text import component_note, compute_note, format_plan
from models.present.versions_text import behaviour_text, format_versions_table, release_text, versions_rows
from models.studies.compute import ComputeFacts, compute_model
from models.studies.planner import (BubbleDetail, Component, ComputeDetail, DataParallelDetail, OptimizerDetail,
                                    PipelineDetail, TensorParallelDetail, plan)
from models.studies.workload import Op, workload
from topo.units import GB, MiB

SMALL = "transformer:layers=4,hidden=512,heads=8,seq=256,vocab=1000"


@pytest.fixture(scope="module")
def dgx1v():
    """Prepared once: the module's plans share its channel searches."""
    return PreparedFabric(topo.build("dgx1v"))


def _components(p) -> list:
    """The component lines of ``format_plan`` (each ends with its words)."""
    return [line for line in format_plan(p).splitlines() if "(exposed" in line]


# ------------------------------------------------------------------ words: main's output
def test_the_component_lines_are_mains(dgx1v):
    p = plan(SMALL, dgx1v, tp=2, pp=2, dp=2, zero=3, recompute="none", dtype="fp16", simulate=0, overlap=0.5)
    assert _components(p) == [
        "  compute         13.01 ms (exposed     13.01 ms)  32 micro-batches x (forward 0.16 + backward 0.25 ms); "
        "products 60% of a layer's forward; tiles, waves and launches +323%",
        "  tp_comm          8.72 ms (exposed      8.72 ms)  10 x reduce_scatter+all_gather of 0.2 MiB per micro-batch",
        "  pp_comm          1.32 ms (exposed      1.32 ms)  2 x 33 sends of 0.1 MiB",  # NCCL's p2p schedule
        "  bubble           0.68 ms (exposed      0.68 ms)  (p-1)/m = 1/32 of the ideal step",
        "  dp_comm         11.63 ms (exposed      5.13 ms)  all_gather of 0.01 GB parameters per forward and "
        "backward + reduce_scatter of 0.01 GB gradients; overlap 50% of the backward",
        "  optimizer        0.09 ms (exposed      0.09 ms)  Adam pass: 0.00 B local parameters x 36 B"]
    assert format_plan(p, verbose=True).splitlines()[11] == (
        "  compute model: V100-SXM2 fp16 (V100, 125.0 TFLOP/s dense, 900 GB/s HBM), fused kernels: GEMM 74% of "
        "peak, HBM 80%")
    data = plan_json(p)
    assert data["compute"] == compute_note(p.compute) and data["compute"].startswith("V100-SXM2 fp16 (V100")
    assert data["components"]["pp_comm"]["detail"] == "2 x 33 sends of 0.1 MiB"


def test_interleaved_without_tensor_parallelism_words_are_mains(dgx1v):
    p = plan(SMALL, dgx1v, tp=1, pp=2, dp=4, zero=2, dtype="fp16", global_batch=64, virtual_stages=2, simulate=0)
    assert [line.split("ms)  ", 1)[1] for line in _components(p)] == [
        "16 micro-batches x (forward 0.19 + backward 0.30 ms); products 69% of a layer's forward; tiles, waves and "
        "launches +216%",
        "no tensor parallelism",
        "2 x 33 sends of 0.2 MiB",
        "(p-1)/(v m) = 1/32 of the ideal step",
        "reduce_scatter of 0.01 GB gradients (overlapped) + all_gather of 0.01 GB parameters (exposed); "
        "overlap 100% of the backward",
        "Adam pass: 0.00 B local parameters x 36 B"]


def test_a_simulated_step_words_its_bubble_and_overlap_as_main(dgx1v):
    p = plan(SMALL, dgx1v, tp=2, pp=2, dp=2, zero=0, dtype="fp16", simulate=1)
    assert p.simulated
    words = {c.name: component_note(c) for c in p.components}
    assert words["bubble"] == "the rest of the critical path: the pipeline's fill and drain, waits for a stream"
    assert words["dp_comm"] == ("all_reduce of 0.01 GB gradients in 25 MiB buckets; overlapped with the backward "
                                "as the schedule allows")
    assert p.component("bubble").detail.simulated and p.component("dp_comm").detail.simulated
    analytical = dataclasses.replace(p.component("dp_comm").detail, simulated=False)
    assert component_note(Component("dp_comm", 0.0, 0.0, analytical)).endswith("; overlap 100% of the backward")


@pytest.mark.parametrize("detail, words", [
    (ComputeDetail(4, 1.5e-3, 3.0e-3, 2e-4, 1.5e-4, 1.5e-4),
     "4 micro-batches x (forward 1.50 + backward 3.00 ms); products 75% of a layer's forward"),
    (ComputeDetail(4, 1.5e-3, 3.0e-3, 2e-4, 1.5e-4, 1.0e-4),
     "4 micro-batches x (forward 1.50 + backward 3.00 ms); products 75% of a layer's forward; tiles, waves and "
     "launches +50%"),
    (TensorParallelDetail(8, ("all_reduce",), 98, 12 * MiB), "98 x all_reduce of 12.0 MiB per micro-batch"),
    (TensorParallelDetail(1, ("all_reduce",), 98, 12 * MiB), "no tensor parallelism"),
    (PipelineDetail(1, 8, 0.0), "no pipeline"),
    (BubbleDetail(4, 1, 8), "(p-1)/m = 3/8 of the ideal step"),
    (DataParallelDetail(2, 0, 1.23e9, 25 * MiB, 0.5, 0.615e9),
     "all_reduce of 1.23 GB gradients in 25 MiB buckets; overlap 50% of the backward"),
    (DataParallelDetail(2, 0, 1.23e9, 25 * MiB, 0.0, 0.615e9),  # gradient_bucket: one buffer without overlap
     "all_reduce of 1.23 GB gradients in one buffer after the backward; overlap 0% of the backward"),
    (DataParallelDetail(2, 1, 1.23e9, 25 * MiB, 0.5, 0.615e9),
     "reduce_scatter of 1.23 GB gradients (overlapped) + all_gather of 0.61 GB parameters (exposed); "
     "overlap 50% of the backward"),
    (DataParallelDetail(2, 3, 1.23e9, 25 * MiB, 0.5, 0.615e9),
     "all_gather of 0.61 GB parameters per forward and backward + reduce_scatter of 1.23 GB gradients; "
     "overlap 50% of the backward"),
    (DataParallelDetail(1, 0, 1.23e9, 25 * MiB, 0.5, 0.615e9), "no data parallelism"),
    (OptimizerDetail(1.25e9, 30), "Adam pass: 1.25 B local parameters x 30 B"),
    (None, ""),
    ("a 0.2 detail in words", "a 0.2 detail in words"),
])
def test_component_words_from_hand_made_numbers(detail, words):
    assert component_note(Component("any", 1.0, 1.0, detail)) == words


def test_compute_note_is_mains():
    # main's compute_note doctest, and a calibrated flash stack.
    assert compute_note(compute_model("H100", "bf16")) == \
        "H100 bf16 (H100, 989.5 TFLOP/s dense, 3,350 GB/s HBM), fused kernels: GEMM 76% of peak, HBM 84%"
    assert compute_note(compute_model("A100", "bf16", stack="flash", scale=1.3).facts) == (
        "A100 bf16 (A100, 312.0 TFLOP/s dense, 2,039 GB/s HBM), flash kernels: GEMM 82% of peak, flash attention "
        "57%, HBM 79%, calibrated time x1.300")
    assert compute_note(None) == ""


def test_the_versions_table_words_are_mains():
    rows = versions_rows()
    assert rows[0] == ("2.0.0-2.3.6", "2.3.5", "v2.3.5-5", "rings from NVLink counts, no trees, no LL128, no GPU "
                       "relay, no PXN, LL/Simple by size threshold")
    assert rows[-1] == ("2.31.0-2.32.x", "2.31.0", "2.31.0a7-1", "topology search, trees, LL128, NVB relay, PXN, "
                        "tuning model")
    assert format_versions_table().splitlines()[3] == \
        "2.4.0-2.4.x    2.4.8    v2.4.8-1    rings from NVLink counts, trees across nodes (threshold), no LL128, " \
        "no GPU relay, no PXN, LL/Simple by size threshold"
    assert release_text((2, 13, ANY_PATCH)) == "2.13.x" and release_text((2, 3, 6)) == "2.3.6"


# ---------------------------------------------------------------- the numbers themselves
def test_the_details_hold_the_steps_numbers(dgx1v):
    w = workload(SMALL)
    p = plan(SMALL, dgx1v, tp=4, pp=1, dp=2, zero=0, recompute="full", dtype="fp16", simulate=0)
    compute, tp, pp, bubble, dp, opt = (p.component(n).detail for n in
                                        ("compute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer"))
    m = p.layout.global_batch // (p.layout.dp * p.layout.micro_batch)
    assert compute.micro_batches == m == 32
    assert p.component("compute").time == m * (compute.forward + compute.backward)
    assert 0 < compute.products < compute.layer_forward and compute.products_ideal < compute.products
    assert compute.products_fraction == compute.products / compute.layer_forward
    assert compute.quantisation == pytest.approx(compute.products / compute.products_ideal - 1)
    # 6 collectives per layer with full recomputation, 2 for the embedding; b s h activations in 16 bits.
    assert tp == TensorParallelDetail(4, ("reduce_scatter", "all_gather"), 6 * w.layers + 2, 1 * w.seq * w.hidden * 2)
    assert pp.stages == 1 and pp.sends == m and pp.nbytes == tp.nbytes / 4
    assert (bubble.stages, bubble.virtual_stages, bubble.micro_batches, bubble.fraction) == (1, 1, m, 0.0)
    # The gradients of one GPU: the parameters over tp, 2 bytes each in fp16 (and the parameters
    # too); one step of 25 MiB buckets.
    assert dp == DataParallelDetail(2, 0, w.parameters / 4 * 2, 25 * MiB, 1.0, w.parameters / 4 * 2)
    # fp16 Adam: the fp16 gradient read (2), its fp32 copy, master and moments read and written
    # (2 x 16), the fp16 weight written (2).
    assert opt == OptimizerDetail(w.parameters / 4, 36)
    assert p.component("optimizer").time == pytest.approx(opt.parameters * 36 / (900 * GB * 0.8))
    assert p.compute == ComputeFacts("V100-SXM2", "V100", "fp16", 125e12, 900 * GB, "fused", False, 0.74, 0.0, 0.8)


def test_the_bubble_fraction_is_p_minus_1_over_v_m(dgx1v):
    p = plan(SMALL, dgx1v, tp=1, pp=2, dp=4, zero=2, dtype="fp16", global_batch=64, virtual_stages=2, simulate=0)
    b = p.component("bubble").detail
    assert (b.stages, b.virtual_stages, b.micro_batches) == (2, 2, 16) and b.fraction == 1 / 32
    assert p.component("pp_comm").detail.sends == 2 * 16 + 2 - 1
    assert BubbleDetail(4, 1, 8).fraction == 3 / 8


# -------------------------------------------------------------------------- records
def test_records_of_the_numbers(dgx1v):
    p = plan(SMALL, dgx1v, tp=2, pp=2, dp=2, zero=3, recompute="none", dtype="fp16", simulate=0, overlap=0.5)
    (row,) = p.compute.to_records()
    assert row == {"gpu": "V100-SXM2", "generation": "V100", "dtype": "fp16", "peak_flop_per_s": 125e12,
                   "memory_bandwidth_Bps": 900e9, "stack": "fused", "flash_attention": False,
                   "gemm_efficiency": 0.74, "attention_efficiency": 0.0, "memory_efficiency": 0.8, "scale": 1.0}
    c = p.component("compute").detail
    (row,) = c.to_records()
    assert (row["micro_batches"], row["forward_s"], row["backward_s"], row["products_fraction"]) == \
        (32, c.forward, c.backward, c.products_fraction)
    assert p.component("tp_comm").detail.to_records() == [
        {"degree": 2, "collectives": "reduce_scatter+all_gather", "count": 10, "nbytes": 256 * 512 * 2.0}]
    assert p.component("pp_comm").detail.to_records() == [{"stages": 2, "sends": 33, "nbytes": 256 * 512.0}]
    assert p.component("bubble").detail.to_records() == [
        {"stages": 2, "virtual_stages": 1, "micro_batches": 32, "fraction": 1 / 32, "simulated": False}]
    dp = p.component("dp_comm").detail
    assert dp.to_records() == [{"degree": 2, "zero": 3, "nbytes": dp.nbytes, "parameter_bytes": dp.nbytes,
                                "bucket_bytes": 25.0 * MiB, "overlap": 0.5, "simulated": False}]
    assert p.component("optimizer").detail.to_records() == [
        {"parameters": p.component("optimizer").detail.parameters, "pass_bytes": 36}]


def test_op_time_records():
    t = compute_model("A100", "bf16").time(Op("mlp", "matmul", 2.0 * 1024 ** 3, 3 * 2.0 * 1024 ** 2, 1024, 1024, 1024))
    assert t.to_records() == [{"name": "mlp", "kind": "matmul", "flops": 2.0 * 1024 ** 3, "nbytes": 6.0 * 1024 ** 2,
                               "forward_s": t.forward, "backward_s": t.backward, "bound": t.bound,
                               "ideal_s": t.ideal}]
    # The ideal forward: the FLOPs at 82.5 % of the A100's 312 TFLOP/s (the fitted fraction).
    assert t.ideal == pytest.approx(2.0 * 1024 ** 3 / (0.825 * 312e12))


def test_versions_table_is_numbers_and_enums():
    rows = versions_table()
    assert [r[1] for r in rows] == list(PROFILES)
    (first, last), version, tag, behaviour = rows[0]
    assert (first, last, version, tag) == ((2, 0, 0), (2, 3, 6), "2.3.5", "v2.3.5-5")
    assert rows[-1][0] == ((2, 31, 0), (2, 32, ANY_PATCH)) and rows[-1][3] is BEHAVIOURS["2.31.0"]
    assert behaviour_text(behaviour) == versions_rows()[0][3]

