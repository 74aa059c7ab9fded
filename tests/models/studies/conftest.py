"""Fabrics the planner's tests share: prepared once per module that asks for them (a module
that means another fabric by the same name defines its own fixture, which wins)."""

from __future__ import annotations

import pytest

import topo
from models.engine.fabric import PreparedFabric


@pytest.fixture(scope="module")
def host():
    """One DGX H100, prepared."""
    return PreparedFabric(topo.build("dgxh100"))


@pytest.fixture(scope="module")
def cluster():
    """Two DGX H100 over InfiniBand, prepared."""
    return PreparedFabric(topo.build("2xdgxh100"))
