"""The simulated step as a Chrome trace (checked against the Trace Event Format's rules) and figures."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

import topo
from models.predict.simulate import simulate, task_graph
from models.present.simulate_plot import chrome_trace, gantt_figure, link_heatmap_figure

MiB = 2**20


@pytest.fixture(scope="module")
def result():
    G = topo.build("2xdgxh100")
    return simulate(G, task_graph({"tasks": [
        {"id": "ar", "op": "all_reduce", "gpus": list(range(16)), "bytes": 256 * MiB, "kind": "dp_comm"},
        {"id": "tp", "op": "all_gather", "gpus": [0, 1, 2, 3], "bytes": 64 * MiB, "kind": "tp_comm"},
        {"id": "mm", "op": "compute", "gpus": [0, 1, 2, 3], "seconds": 2e-3, "after": ["tp"]},
        {"id": "s", "op": "send", "src": 3, "dst": 11, "bytes": 8 * MiB, "after": ["mm"], "kind": "pp_comm"}]}))


def test_the_trace_follows_the_trace_event_format(result):
    trace = json.loads(json.dumps(chrome_trace(result)))  # plain JSON
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    named = {}  # (pid, tid) of every thread with a name
    for e in events:
        assert e["ph"] in ("X", "M", "C")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["name"], str) and e["name"]
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index")
            assert isinstance(e["args"], dict) and e["args"]
            if e["name"] == "thread_name":
                named[e["pid"], e["tid"]] = e["args"]["name"]
        elif e["ph"] == "X":  # complete events: start and duration in microseconds
            assert e["ts"] >= 0 and e["dur"] >= 0
        else:  # counters: numeric series
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    complete = [e for e in events if e["ph"] == "X"]
    assert all((e["pid"], e["tid"]) in named for e in complete)  # every track is named
    # One event per task and GPU, at the simulated times (s -> us).
    assert len(complete) == sum(len(t.gpus) for t in result.tasks)
    ar = next(e for e in complete if e["name"] == "all_reduce ar" and e["pid"] == 0)
    assert ar["ts"] == pytest.approx(0.0) and ar["dur"] == pytest.approx(result.task("ar").duration * 1e6, abs=1e-3)
    assert {e["name"] for e in events if e["ph"] == "C"}  # the busiest links as counters


def test_figures_are_figures(result):
    gantt = gantt_figure(result)
    assert isinstance(gantt, go.Figure)
    assert {trace.name for trace in gantt.data} == {"dp_comm", "tp_comm", "compute", "pp_comm"}
    heat = link_heatmap_figure(result, top=4, bins=20)
    assert isinstance(heat, go.Figure) and heat.data[0].z.shape == (4, 20)
    assert float(heat.data[0].z.max()) <= 1 + 1e-9
