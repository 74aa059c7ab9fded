"""The packing's schedule beside NCCL and the bounds (models.schedules.compare).

Known answers: on DGX-1V GPUs 0,1,4,5 the all_gather chosen for 1 MiB is Simple with 16 chunks a
GPU and for 64 KiB LL with 32 (models.schedules.export.sized_chunks); the record's schedule figures
are the largest size's whatever the order the sizes come in, and its points, chunks and
protocols follow that order."""

from __future__ import annotations

from dataclasses import replace

import pytest

import topo
from models.engine.fabric import prepare
from models.schedules import ScheduleError
from models.schedules.compare import packing_comparison
from models.schedules.export import sized_chunks


@pytest.fixture(scope="module")
def compared():
    fabric = prepare(topo.build("dgx1v"))
    return fabric, packing_comparison(fabric, "all_gather", [0, 1, 4, 5], ["1M", "64K"])


def test_the_largest_size_names_the_schedule_whatever_the_order(compared):
    fabric, c = compared
    largest = sized_chunks(fabric, "all_gather", [0, 1, 4, 5], "1M")[0]
    assert (c.evaluation.name, c.steps, c.threadblocks, c.nchannels) == (
        "packing_all_gather_4x16", largest.nsteps, largest.nthreadblocks, largest.nchannels)
    assert [p.nbytes for p in c.evaluation.points] == [2**20, 2**16]
    assert (c.chunks, c.protocols) == ((16, 32), ("Simple", "LL"))


def test_records_are_one_per_size_with_or_without_chunks(compared):
    _, c = compared
    rows = c.to_records()
    assert [(r["nbytes"], r["chunks_per_gpu"], r["protocol"]) for r in rows] == [(2**20, 16, "Simple"),
                                                                                 (2**16, 32, "LL")]
    bare = replace(c, chunks=(), protocols=())
    assert [(r["nbytes"], r["chunks_per_gpu"], r["protocol"]) for r in bare.to_records()] == [
        (2**20, None, "Simple"), (2**16, None, "Simple")]
    with pytest.raises(ScheduleError, match=r"expected chunks one per size \(2\) or none, received 1"):
        replace(c, chunks=(2,))
    with pytest.raises(ScheduleError, match=r"expected protocols one per size \(2\) or none, received 3"):
        replace(c, protocols=("LL",) * 3)
