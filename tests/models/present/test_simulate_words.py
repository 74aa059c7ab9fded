"""A simulated step in words and JSON (models.present: text, json_shapes, explain)."""

from __future__ import annotations

import json

import pytest

import topo
from models.predict.decompose import Decomposer
from models.predict.simulate import simulate, task_graph
from models.present.explain import explain, explain_steps
from models.present.json_shapes import simulation_json
from models.present.text import simulation_table

MiB = 2**20


@pytest.fixture(scope="module")
def result():
    return simulate(topo.build("dgxh100"), task_graph({"name": "step", "tasks": [
        {"id": "a", "op": "reduce", "gpus": [0, 1, 2], "bytes": MiB, "root": 2, "kind": "dp_comm"},
        {"id": "b", "op": "compute", "gpu": 0, "seconds": 1e-3, "after": ["a"]},
        {"id": "c", "op": "all_gather", "gpus": [4, 5], "bytes": 64 * MiB, "kind": "tp_comm"}]}))


def test_json_holds_the_step_the_exposed_communication_and_every_task(result):
    data = json.loads(json.dumps(simulation_json(result, top_links=2)))
    a, b, c = result.tasks
    assert data["step_time_s"] == pytest.approx(b.end)
    assert data["critical_path"] == ["a", "b"]
    assert data["exposed_s"] == {"dp_comm": pytest.approx(a.end)}  # c runs beside the path
    assert data["exposed_comm_s"] == pytest.approx(a.end)
    assert data["critical_s"] == {"dp_comm": pytest.approx(a.end), "compute": pytest.approx(1e-3)}
    assert [t["id"] for t in data["tasks"]] == ["a", "b", "c"]
    assert len(data["links"]) == 2
    assert data["links"][0]["mean_utilisation"] >= data["links"][1]["mean_utilisation"]


def test_table_names_the_step_each_kind_and_the_busiest_links(result):
    lines = simulation_table(result, top_links=1).splitlines()
    assert lines[0].startswith(f"step on DGX H100: step {result.step_time * 1e3:.3f} ms (3 tasks")
    # kinds by time on the critical path, longest first; tp_comm is off the path
    assert [line.split()[0] for line in lines[2:5]] == ["compute", "dp_comm", "tp_comm"]
    assert lines[4].split()[-1] == "0.000"
    assert lines[-2].endswith("busiest links (mean / peak share of capacity):")
    assert len(lines) == 8


def test_steps_in_words_name_the_latency_terms_that_make_the_start_up():
    steps = Decomposer(topo.build("dgxh100")).collective("all_gather", 2**30, range(8))
    text = explain_steps(steps)
    assert explain(steps) == text
    terms = steps.latency
    assert f"base {terms.base * 1e6:.2f} us" in text
    assert steps.startup == pytest.approx(terms.value)  # NCCL's latency outweighs the launch here
    send = Decomposer(topo.build("dgxh100")).send(0, 1, MiB)
    assert send.latency is None and "NCCL latency" not in explain_steps(send)
