"""The measurement model reads the NCCL release from the NCCL view that carries it."""

from __future__ import annotations

import pytest

import topo
from models.engine.nccl.system import NcclSystem
from models.predict.collectives import Estimator
from models.predict.measure import MeasurementError, measured


def test_measured_takes_the_release_from_the_nccl_view():
    """NCCL 2.12 counts 22 GB/s per V100 NVLink, 2.27 counts 20 (src/graph/topo.h at each tag), so
    the achieved/NCCL ratio differs by 20/22; a second, different profile is refused."""
    G = topo.dgx1v()
    old, new = Estimator(G, profile="2.12.12"), Estimator(G)
    e_old = old.estimate("all_reduce", 2**30)
    e_new = new.estimate("all_reduce", 2**30)
    assert measured(e_old, old.fabric).ratio / measured(e_new, new.fabric).ratio == pytest.approx(20 / 22)
    assert measured(e_old, G, profile="2.12.12").ratio == measured(e_old, old.fabric).ratio
    with pytest.raises(MeasurementError, match="runs 2.12.12"):
        measured(e_old, NcclSystem(G, "2.12.12"), profile="2.27.7")
