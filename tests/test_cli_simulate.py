"""``dgxtopo simulate``: a workload's step or a task graph, JSON, trace, figures and every input error."""

from __future__ import annotations

import json

import pytest

from tests.test_cli_commands import one_line_error, run

GRAPH = {"tasks": [
    {"id": "grad", "op": "all_reduce", "gpus": [0, 1, 2, 3, 4, 5, 6, 7], "bytes": 1073741824},
    {"id": "p2p", "op": "send", "src": 0, "dst": 5, "bytes": 65536, "after": ["grad"]},
    {"id": "fwd0", "op": "compute", "gpu": 0, "seconds": 0.001, "after": []},
    {"id": "fwd1", "op": "compute", "gpu": 1, "flops": 1e12, "dtype": "bf16"}]}


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(GRAPH))
    return path


def test_a_task_graph_as_json(capsys, graph_file):
    status, out, _ = run(capsys, "simulate", "--graph", graph_file, "--system", "dgxh100", "--json")
    assert status == 0
    data = json.loads(out)
    assert {"step_time_s", "exposed_comm_s", "tasks"} <= set(data)
    tasks = {t["id"]: t for t in data["tasks"]}
    assert set(tasks) == {"grad", "p2p", "fwd0", "fwd1"}
    assert tasks["p2p"]["start_s"] == pytest.approx(tasks["grad"]["end_s"])
    assert data["step_time_s"] == pytest.approx(max(t["end_s"] for t in tasks.values()))


def test_the_nccl_release_reaches_the_simulation(capsys, tmp_path):
    """--nccl 2.7: no GPU relay before v2.8, so GPUs 0, 1 and 5 of a DGX-1V (0 and 5 share no
    NVLink) ring over the CPUs, slower than over NVLink through GPU 1 with today's release."""
    path = tmp_path / "ring.json"
    path.write_text(json.dumps({"tasks": [{"id": "ar", "op": "all_reduce", "gpus": [0, 1, 5], "bytes": 2**28}]}))
    steps = {}
    for release in ("2.7", "2.27"):
        status, out, _ = run(capsys, "simulate", "--graph", path, "--system", "dgx1v", "--json", "--nccl", release)
        assert status == 0
        steps[release] = json.loads(out)["step_time_s"]
    assert steps["2.7"] > 1.5 * steps["2.27"]


def test_a_workload_step_with_trace_and_figures(capsys, tmp_path):
    trace, page = tmp_path / "t.json", tmp_path / "s.html"
    status, out, _ = run(capsys, "simulate", "llama3-8b", "--system", "dgxh100", "--tp", 8, "--pp", 1, "--dp", 1,
                         "--global-batch", 2, "--trace", trace, "--out", page)
    assert status == 0 and "step" in out and "planner's analytical estimate" in out
    assert json.loads(trace.read_text())["traceEvents"]
    assert "plotly" in page.read_text()


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--system", "dgxh100"], "either WORKLOAD or --graph"),
    (["simulate", "llama3-8b", "--graph", "{graph}", "--system", "dgxh100"], "received both"),
    (["simulate", "--graph", "{graph}"], "--system SPEC"),
    (["simulate", "--graph", "{missing}", "--system", "dgxh100"], "cannot read"),
    (["simulate", "--graph", "{graph}", "--system", "dgxh100", "--max-events", "5"], "--max-events"),
    (["simulate", "--graph", "{graph}", "--system", "dgx1v"],
     "task 'fwd1', field 'dtype': V100-SXM2 (V100 generation) has no bf16"),
    (["simulate", "--graph", "{bad}", "--system", "dgxh100"], "task 'x', field 'op'"),
    (["simulate", "--graph", "{graph}", "--system", "dgx2", "--max-gpus", "4"], "--max-gpus"),
    (["simulate", "nosuchmodel", "--system", "dgxh100"], "nosuchmodel"),
    (["simulate", "--graph", "{graph}", "--system", "dgxh100", "--tp", "2", "--bucket", "1M"],
     "--tp, --bucket shape(s) a WORKLOAD's step: expected none with --graph"),
    (["simulate", "--graph", "{graph}", "--system", "dgxh100", "--ep-overlap", "all", "--max-events", "5"],
     "--ep-overlap shape(s) a WORKLOAD's step: expected none with --graph"),
    (["simulate", "--graph", "{graph}", "--system", "dgxh100", "--ep-overlap", "none", "--max-events", "5"],
     "more than the limit of 5"),  # the default overlap named: not a layout option given
    (["simulate", "llama3-8b", "--system", "dgxh100", "--tp", "8", "--pp", "1", "--dp", "1", "--bucket", "0"],
     "bucket must be a size >= 1 byte, received 0"),
    (["simulate", "--graph", "{graph}", "--system", "dgxh100", "--nccl", "2.99"], "2.99"),
    (["simulate", "--graph", "{images}", "--system", "dgx2", "--max-events", "2"],  # its images add no event
     "a simulation of 1 tasks (3 events), more than the limit of 2: raise it with --max-events"),
])
def test_errors_are_one_line(capsys, tmp_path, graph_file, argv, message):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tasks": [{"id": "x", "op": "teleport"}]}))
    images = tmp_path / "images.json"  # one task standing for three: sized as three
    images.write_text(json.dumps({"tasks": [{"id": "x", "op": "all_reduce", "gpus": [0, 1], "bytes": 8,
                                             "images": [[2, 3], [4, 5]]}]}))
    paths = {"{graph}": str(graph_file), "{missing}": str(tmp_path / "none.json"), "{bad}": str(bad),
             "{images}": str(images)}
    assert message in one_line_error(capsys, *[paths.get(a, a) for a in argv])
