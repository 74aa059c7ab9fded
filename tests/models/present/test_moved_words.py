"""Words that moved into models.present in dgx-topo 0.3 (issue 19): the old names still work for
a while, warn with a DeprecationWarning naming the new place, and give what the new place gives."""

from __future__ import annotations

import importlib
import json

import pytest

import topo
from topo.faces import moved_names
from models.engine.fabric import PreparedFabric
from models.engine.results import MovedMethod
from models.predict.measure import DEFAULT
from models.predict.simulate import task_graph
from models.present import json_shapes, plan_text, versions_text
from models.studies.calibration import Calibration
from models.studies.compute import compute_model
from models.studies.planner import Memory, plan
from models.studies.workload import PRESETS
from tests.conftest import deprecations

#: Old module -> the names that moved out of it into models.present.
MOVED = {
    "models.studies.planner": ("format_plan", "format_search", "format_gpus_ranking", "format_calibration",
                               "memory_note", "CROSS_HOST_TP_WARNING"),
    "models.studies.compute": ("format_generations", "compute_note"),
    "models.studies.workload": ("format_workload", "tp_constraint"),
    "models.engine.nccl.profiles": ("format_versions_table",),
    "models.engine.nccl.releases": ("format_behaviour_table",),
}


@pytest.mark.parametrize("module, name", [(m, n) for m, names in MOVED.items() for n in names])
def test_a_moved_function_resolves_from_its_old_module_with_a_warning(module, name):
    old = importlib.import_module(module)
    new_module = "models.present.versions_text" if "engine" in module else "models.present.plan_text"
    value, messages = deprecations(lambda: getattr(old, name))
    assert value is getattr(importlib.import_module(new_module), name)
    assert messages == [f"{module}.{name} moved to {new_module}.{name} in dgx-topo 0.3: import it from there"]
    assert name not in old.__all__ and name not in vars(old)


def test_a_name_that_never_existed_is_still_an_attribute_error():
    import models.studies.planner as planner
    with pytest.raises(AttributeError, match="no_such_name"):
        planner.no_such_name  # noqa: B018
    assert not hasattr(planner, "__path__")  # a module, not a package: no submodule lookup
    with pytest.raises(AttributeError, match="'m' has no attribute 'x'"):
        moved_names("m", {})("x")


def test_the_0_2_module_paths_reach_the_moved_functions():
    value, messages = deprecations(lambda: importlib.import_module("models.planner").format_search)
    assert value is plan_text.format_search
    assert messages[-1].startswith("models.studies.planner.format_search moved to models.present.plan_text")
    value, messages = deprecations(lambda: importlib.import_module("models.engine.nccl").format_versions_table)
    assert value is versions_text.format_versions_table and len(messages) == 1


@pytest.fixture(scope="module")
def small_plans():
    G = PreparedFabric(topo.build("dgx1v"))  # the plan and the search share its channel searches
    options = dict(tp=4, pp=1, dp=2, zero=1, recompute="full", dtype="fp16", simulate=0)
    from models.studies.planner import search
    return plan("transformer:layers=4,hidden=512,heads=8,seq=256,vocab=1000", G, **options), \
        search("transformer:layers=4,hidden=512,heads=8,seq=256,vocab=1000", G, tp=4, pp=1, simulate=0)


def test_result_methods_that_moved_still_answer_with_a_warning(small_plans):
    p, s = small_plans
    cases = [
        (lambda: p.to_dict(), json_shapes.plan_json(p), "Plan.to_dict", "models.present.json_shapes.plan_json"),
        (lambda: p.to_json(), json.dumps(json_shapes.plan_json(p), indent=2), "Plan.to_json",
         "models.present.json_shapes.plan_json"),
        (lambda: p.explain(), plan_text.format_plan(p, verbose=True), "Plan.explain",
         "models.present.plan_text.format_plan"),
        (lambda: s.to_dict(2), json_shapes.search_json(s, 2), "Search.to_dict", "models.present.json_shapes.search_json"),
        (lambda: s.to_json(), json.dumps(json_shapes.search_json(s), indent=2), "Search.to_json",
         "models.present.json_shapes.search_json"),
        (lambda: s.explain(), plan_text.format_search(s), "Search.explain", "models.present.plan_text.format_search"),
        (lambda: p.memory.describe(), plan_text.memory_note(p.memory), "Memory.describe",
         "models.present.plan_text.memory_note"),
    ]
    for call, expected, old, new in cases:
        value, messages = deprecations(call)
        assert value == expected, old
        assert messages == [f"{old} moved to {new} in dgx-topo 0.3: call it from there"], old


def test_the_words_of_other_results_that_moved():
    cm = compute_model("A100", "bf16", scale=1.5)
    graph = task_graph({"name": "g", "tasks": [{"id": "a", "op": "compute", "gpus": [0], "seconds": 1e-3},
                                               {"id": "b", "op": "all_reduce", "gpus": [0, 1], "bytes": 8,
                                                "after": ["a"]}]})
    calibration = Calibration(DEFAULT, (("floor", 1e-6, 0.0, 1e-5),), {"rows": 1}, {"rows": 1}, None, None,
                              system="dgx2", method="least squares")
    cases = [(lambda: cm.describe(), plan_text.compute_note(cm)),
             (lambda: PRESETS["bert-large"].describe(), plan_text.format_workload("bert-large")),
             (lambda: PRESETS["resnet50"].describe(), plan_text.format_workload("resnet50")),
             (lambda: graph.to_dict(), json_shapes.task_graph_json(graph)),
             (lambda: calibration.to_json(), json.dumps(json_shapes.calibration_file_json(calibration), indent=2))]
    for call, expected in cases:
        value, messages = deprecations(call)
        assert value == expected and len(messages) == 1 and "moved to" in messages[0]
    assert "calibrated time x1.500" in plan_text.compute_note(cm)


def test_what_the_words_write_reads_back():
    graph = task_graph({"name": "g", "tasks": [{"id": "s", "op": "send", "src": 0, "dst": 1, "bytes": 64},
                                               {"id": "c", "op": "compute", "gpus": [1], "seconds": 2e-3,
                                                "after": ["s"], "kind": "forward", "stream": "main"}]})
    assert task_graph(json_shapes.task_graph_json(graph)) == graph
    calibration = Calibration(DEFAULT, (("floor", 1e-6, 0.0, 1e-5),), {"rows": 1}, {"rows": 1}, None, None,
                              system="dgx2", sources=("run.txt",), method="least squares")
    again = Calibration.from_json(json.dumps(json_shapes.calibration_file_json(calibration), indent=2))
    assert again.system == "dgx2" and again.fitted == calibration.fitted and again.sources == ("run.txt",)
    assert (again.model.launch_per_gpu, again.model.floor, again.model.transfer_efficiency) == \
        (DEFAULT.launch_per_gpu, DEFAULT.floor, DEFAULT.transfer_efficiency)


def test_memory_note_in_gigabytes():
    m = Memory(parameters=2e9, gradients=2e9, optimizer=12e9, activations=4.05e9, capacity=80e9)
    assert plan_text.memory_note(m) == \
        "20.1 GB of 80.0 GB (weights 2.0, gradients 2.0, optimizer 12.0, activations 4.0)"
    assert isinstance(vars(Memory)["describe"], MovedMethod)
