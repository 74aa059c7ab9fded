"""The simulation budget counted on the plan before the step graph is built (issue 38).

``simulate llama3-405b --system 16xdgxh100 --tp 8 --pp 16 --dp 1 --global-batch 100000`` ran 261 s
and reached 10.9 GB building 225,600,016 tasks before the simulator refused them. The count is a
closed form of the plan (models.studies.stepgraph.step_graph_size walks one micro-batch per
stage shape), checked before anything is built; it equals the built graph's simulation size.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topo
import models.studies.stepgraph as stepgraph
from models.predict.simulate import simulation_size
from models.present.cli import main
from models.studies.planner import plan
from models.studies.stepgraph import check_step_events, simulate_plan, step_graph, step_graph_size
from topo.errors import LimitError


@pytest.fixture
def no_building(monkeypatch):
    """Fail the test if a step graph is built (the budget must refuse before)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the step graph was built before its budget was checked")
    monkeypatch.setattr(stepgraph, "GraphBuilder", refuse)


def test_the_cli_refuses_a_huge_step_before_building_it(capsys, no_building):
    status = main(["simulate", "llama3-405b", "--system", "16xdgxh100", "--tp", "8", "--pp", "16", "--dp", "1",
                   "--global-batch", "100000"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1
    # 100,000 micro-batches x 16 stages x (forward + backward + 2 sends) of 141 tasks per stage's
    # layers ... counted: 225,600,016 tasks, three events each.
    assert "225,600,016 tasks (676,800,048 events" in err
    assert "more than the limit of 3000000: raise it with --max-events N" in err


def test_the_library_refuses_before_building(cluster, no_building):
    p = plan("llama3-8b", cluster, tp=8, pp=2, dp=1, zero=0, global_batch=64, simulate=0)
    events = 3 * step_graph_size(p)
    with pytest.raises(LimitError) as refused:
        step_graph(p, cluster.G, max_events=events - 1)
    assert (refused.value.keyword, refused.value.size, refused.value.limit) == ("max_events", events, events - 1)
    with pytest.raises(LimitError):
        simulate_plan(p, cluster.G, max_events=events - 1)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from([(8, 1, 2), (4, 2, 2), (2, 2, 4), (8, 2, 1), (1, 4, 4), (2, 8, 1)]),
       batches=st.integers(1, 4), micro_batch=st.sampled_from([1, 2]), zero=st.sampled_from([0, 1]),
       recompute=st.sampled_from(["none", "full"]))
def test_the_count_is_the_built_graphs_size(cluster, layout, batches, micro_batch, zero, recompute):
    tp, pp, dp = layout
    p = plan("llama3-8b", cluster, tp=tp, pp=pp, dp=dp, zero=zero, micro_batch=micro_batch,
             global_batch=dp * micro_batch * batches * pp, recompute=recompute, simulate=0)
    if not p.fits:
        return
    size = simulation_size(step_graph(p, cluster.G))
    assert check_step_events(p, size) == size == 3 * step_graph_size(p) == 3 * len(step_graph(p, cluster.G))
    with pytest.raises(LimitError):
        check_step_events(p, size - 1)


def test_an_unfolded_graph_is_sized_unfolded(no_building):
    """step_graph builds every replica with fold=False (or on hosts that are not copies of each
    other): the budget counts that graph, not the folded one (dgxh100 tp2 dp4: 837 tasks folded,
    3,144 unfolded; a budget between the two used to let the whole graph be built)."""
    G = topo.build("dgxh100")
    p = plan("llama3-8b", G, tp=2, pp=1, dp=4, zero=1, global_batch=8, simulate=0)
    folded, unfolded = step_graph_size(p), step_graph_size(p, fold=False)
    assert folded < unfolded
    with pytest.raises(LimitError) as refused:
        step_graph(p, G, fold=False, max_events=3 * folded)
    assert refused.value.size == 3 * unfolded


def test_the_planner_sizes_a_dense_plan_as_it_is_built_on_its_fabric():
    """On a fabric whose replicas' hosts differ (a what-if slowing one link of host 1), step_graph
    builds every replica: the planner's sizing (plan_step_graph_size with the fabric) counts them."""
    from models.studies.planner.parallel_graph import plan_step_graph_size
    from topo import transform

    G = topo.build("2xdgxh100")
    odd = transform.scale_links(G, "h1.gpu0", "h1.nvswitch0", 0.5)
    p = plan("llama3-8b", G, tp=8, pp=1, dp=2, zero=0, global_batch=16, simulate=0)
    assert plan_step_graph_size(p, G=G) == step_graph_size(p) < step_graph_size(p, fold=False)
    assert plan_step_graph_size(p, G=odd) == step_graph_size(p, fold=False) == len(step_graph(p, odd).tasks)
