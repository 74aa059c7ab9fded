"""Shared fixtures: the built-in systems and the project's own copies of real-hardware data."""

from __future__ import annotations

from pathlib import Path

import pytest

import topo

DATA = Path(__file__).parent / "data"


def read_data(name: str) -> str:
    """A file of tests/data without its '#' comment lines (which name the source)."""
    lines = (DATA / name).read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("#"))


@pytest.fixture(params=sorted(topo.SYSTEMS))
def system(request):
    """Name of each built-in system in turn."""
    return request.param


@pytest.fixture
def fabric(system):
    """A fresh graph of each built-in system in turn."""
    return topo.build(system)
