"""The task-graph reader under fuzz: any JSON value, any task fields, as objects and as text.

A graph either reads, or is refused with a :class:`~topo.errors.DgxTopoError` (the reader's
:class:`~models.predict.simulate.TaskGraphError`, or the size guard's ``LimitError``), never
another exception and never a hang (a watchdog guards each case). A graph that reads runs: on a
DGX-1V, every task ends no sooner than its start plus its time alone, after every task it waits for.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import topo
from models.predict.decompose import Decomposer
from models.predict.simulate import COLLECTIVE_OPS, TaskGraph, simulate, task_graph
from models.present.json_shapes import task_graph_json
from models.studies.stepgraph import compute_time
from tests.conftest import watchdog
from topo.errors import DgxTopoError

ANY = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=4)
IDS = st.sampled_from(["a", "b", "c", "d", "", "x" * 201, "a\nb"])
GPU = st.integers(-1, 9)
GPUS = st.lists(GPU, max_size=9)
SIZE = st.one_of(st.integers(-1, 2**64), st.sampled_from([0, 8, 2**20, 2**62, 2**62 + 1, 1.0, 1.5, math.inf]))
FIELDS = {
    "id": IDS | ANY, "op": st.sampled_from(list(COLLECTIVE_OPS) + ["send", "compute", "fly", ""]) | ANY,
    "gpus": GPUS | ANY, "gpu": GPU | ANY, "src": GPU | ANY, "dst": GPU | ANY, "bytes": SIZE | ANY,
    "root": GPU | ANY, "seconds": st.floats(-1, 2e6) | st.sampled_from([math.nan, math.inf]) | ANY,
    "flops": st.floats(-1, 1e25) | ANY, "dtype": st.sampled_from(["fp16", "bf16", "fp32", "fp8", "int4"]) | ANY,
    "after": st.lists(IDS, max_size=3) | ANY, "kind": st.text(max_size=4) | ANY, "stream": IDS | ANY,
    "images": st.lists(GPUS, max_size=3) | ANY, "colour": ANY,
}
TASK = st.fixed_dictionaries({}, optional=FIELDS)
# Mostly well-formed tasks (so that graphs get past the first field), sometimes anything at all.
PLAIN = st.fixed_dictionaries({"id": IDS, "op": st.sampled_from(list(COLLECTIVE_OPS) + ["send", "compute"])},
                              optional={k: v for k, v in FIELDS.items() if k not in ("id", "op", "colour")})


@st.composite
def _graph_that_reads(draw):
    """A well-formed graph of up to 5 tasks on 8 GPUs, one field sometimes replaced by anything."""
    tasks = []
    for k in range(draw(st.integers(0, 5))):
        op = draw(st.sampled_from(list(COLLECTIVE_OPS) + ["send", "compute"]))
        t = {"id": f"t{k}", "op": op}
        after = draw(st.lists(st.sampled_from([f"t{j}" for j in range(k)]), unique=True, max_size=2)) if k else []
        if after:
            t["after"] = after
        if op == "compute":
            t.update(gpus=draw(st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True)),
                     seconds=draw(st.floats(0, 1e-2)))
        elif op == "send":
            src, dst = draw(st.lists(st.integers(0, 7), min_size=2, max_size=2, unique=True))
            t.update(src=src, dst=dst, bytes=draw(st.sampled_from([0, 8, 2**16, 2**26])))
        else:
            t.update(gpus=draw(st.lists(st.integers(0, 7), min_size=1, max_size=8, unique=True)),
                     bytes=draw(st.sampled_from([0, 8, 2**16, 2**26])))
        if draw(st.booleans()):
            t["stream"] = draw(st.sampled_from(["one", "two"]))
        tasks.append(t)
    if tasks and draw(st.integers(0, 3)) == 0:
        k = draw(st.integers(0, len(tasks) - 1))
        name = draw(st.sampled_from(sorted(FIELDS)))
        tasks[k][name] = draw(FIELDS[name])
    return {"tasks": tasks}


GRAPHS = st.one_of(
    _graph_that_reads(),
    st.fixed_dictionaries({"tasks": st.lists(PLAIN | TASK, max_size=4)},
                          optional={"name": st.text(max_size=5) | ANY, "extra": ANY}),
    ANY)


@pytest.fixture(scope="module")
def fabric():
    G = topo.build("dgx1v")
    return G, Decomposer(G), compute_time(G)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(GRAPHS, st.booleans())
def test_a_task_graph_reads_or_is_refused_by_name(fabric, data, as_text):
    G, decomposer, seconds = fabric
    with watchdog(60):
        try:
            given_ = json.dumps(data) if as_text else data
        except (TypeError, ValueError):
            return  # not JSON-able (a float key...): nothing a file could hold
        try:
            graph = task_graph(given_, ngpus=8, compute_time=seconds)
        except DgxTopoError as error:
            assert str(error) and "\n" not in str(error)
            event(type(error).__name__)
            return
        assert isinstance(graph, TaskGraph)
        assert task_graph(task_graph_json(graph), ngpus=8) == graph  # what it reads, it writes back
        r = simulate(G, graph, decomposer=decomposer)
        event("simulated")
    done = {t.id: t for t in r.tasks}
    for t, timing in zip(graph.tasks, r.tasks):
        assert timing.end >= timing.start + timing.alone * (1 - 1e-9) - 1e-15
        assert all(timing.start >= done[a].end - 1e-15 for a in t.after)
    assert r.step_time == (max(t.end for t in r.tasks) if r.tasks else 0.0)
