"""Writing schedules (models.schedules.export): NCCL's rings and the tree packing as MSCCL XML that
the checker accepts and the evaluator times.

Known answers: NCCL's rings on all 8 GPUs of a DGX-1V are its 6 searched channels, one chunk per
channel and rank (8 steps per threadblock for all_gather and reduce_scatter, 15 for all_reduce:
n - 1 receives, and n - 1 more for all_reduce's all-gather); the packing reaches its bound on GPU
sets of a DGX-1V where the bound beats NCCL's rings (the NVLink bound at the capacities the
evaluator times with: the packing's trees use NVLink, the runtime's connections NCCL's paths)."""

from __future__ import annotations

import pytest

import topo
from models.engine.fabric import prepare
from models.schedules import check_schedule, parse_msccl, to_msccl_xml
from models.schedules.evaluate import achieved_graph, evaluate_schedule
from models.schedules.export import ExportError, export_schedule, nccl_schedule, packing_schedule
from models.studies.bounds import bound


@pytest.fixture(scope="module")
def dgx1v():
    return prepare(topo.build("dgx1v"))


@pytest.mark.parametrize("collective, steps", [("all_gather", 8), ("reduce_scatter", 8), ("all_reduce", 15)])
def test_nccl_rings_are_written_as_searched(dgx1v, collective, steps):
    schedule = nccl_schedule(dgx1v, collective)
    result = check_schedule(schedule)
    assert (schedule.nchannels, result.ngpus, result.threadblocks, result.steps_per_threadblock) == (6, 8, 48, steps)
    assert result.postcondition and schedule.inplace
    again = parse_msccl(to_msccl_xml(schedule))
    assert again == schedule


@pytest.mark.parametrize("gpus", ["0,2,3", "0,3,6,7", "0,1,4,5"])
def test_the_packing_reaches_its_bound(dgx1v, gpus):
    schedule = packing_schedule(dgx1v, "all_gather", gpus)
    assert check_schedule(schedule).postcondition
    point = evaluate_schedule(dgx1v, schedule, "1G", gpus, bound=False).points[0]
    pricing_ratio = evaluate_schedule(dgx1v, schedule, 2**20, gpus, nccl=False, bound=False).pricing.achieved_ratio
    limit = bound(achieved_graph(dgx1v, pricing_ratio), "all_gather", "1G", gpus, edge_kinds=["nvlink"],
                  nccl=False).bound_busbw
    assert limit > 1.01 * point.nccl_busbw  # a set where the bound beats NCCL
    assert point.busbw >= 0.95 * limit


def test_a_chosen_chunk_count_and_the_source(dgx1v):
    schedule = export_schedule(dgx1v, "all_gather", "0,3", chunks=4)
    assert schedule.nchunksperloop == 8 and schedule.name == "packing_all_gather_2x4"
    assert export_schedule(dgx1v, "all_gather", "0,3", source="nccl").name.startswith("nccl_ring_all_gather_2x")


def test_refusals_name_what_is_wrong(dgx1v):
    with pytest.raises(ExportError, match="NCCL's rings are written for all_gather, reduce_scatter, all_reduce, "
                                          "received 'broadcast'"):
        nccl_schedule(dgx1v, "broadcast")
    with pytest.raises(ExportError, match="the packing is written for all_gather, received 'all_reduce'"):
        packing_schedule(dgx1v, "all_reduce")
    with pytest.raises(ExportError, match="at least 2 GPUs, received GPUs \\[3\\]"):
        packing_schedule(dgx1v, "all_gather", "3")
    with pytest.raises(ExportError, match="expected chunks a whole number >= 1 or None, received 0"):
        packing_schedule(dgx1v, "all_gather", chunks=0)
    with pytest.raises(ExportError, match="expected a source of packing, nccl, received 'msccl'"):
        export_schedule(dgx1v, "all_gather", source="msccl")
    with pytest.raises(ExportError, match="more than the runtime's 256"):
        packing_schedule(dgx1v, "all_gather", "0,3", chunks=5000)
