"""Planner layouts as step graphs: Megatron's schedule, data-parallel buckets, folded replicas."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import topo
from models.engine.fabric import PreparedFabric
from models.predict.simulate import simulate, task_graph
from models.studies.planner import plan
from models.studies.stepgraph import StepGraphError, compute_time, simulate_many, simulate_plan, step_graph

MiB = 2**20


@pytest.fixture(scope="module")
def cluster():
    return topo.build("4xdgxh100")


@pytest.fixture(scope="module")
def prepared():
    """The same cluster prepared once for the planner's calls of this module (a plan's channel
    searches are the fabric's: the layouts of llama3-8b ask for the same GPU sets); its own
    graph, frozen, so that the tests simulate and edit ``cluster`` as a user's graph."""
    return PreparedFabric(topo.build("4xdgxh100"))


@pytest.fixture(scope="module")
def pipelined(prepared):
    return plan("llama3-8b", prepared, tp=8, pp=2, dp=2, zero=0, global_batch=8, recompute="full")


@pytest.fixture(scope="module")
def simulated(cluster, pipelined):
    """The pipelined step simulated on the user's graph, once for the tests that compare with it."""
    return simulate(cluster, step_graph(pipelined, cluster))


def _compute_order(graph, stage_prefix):
    """F/B micro-batch order of a stage, from its first layer-half compute tasks."""
    out = []
    for t in graph.tasks:
        if t.id.startswith(stage_prefix) and t.id.endswith(".c0"):
            what = t.id.split(".")[2]
            if not out or out[-1] != what:
                out.append(what)
    return out


def test_stages_run_one_f_one_b(cluster, pipelined):
    graph = step_graph(pipelined, cluster)
    assert pipelined.layout.micro_batches == 4
    assert _compute_order(graph, "d0.p0.") == ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"]
    assert _compute_order(graph, "d0.p1.") == ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"]


def test_layers_collectives_sends_and_buckets(cluster, pipelined):
    w_layers = 32  # llama3-8b
    graph = step_graph(pipelined, cluster, bucket=25 * MiB)
    kinds = {}
    for t in graph.tasks:
        kinds.setdefault(t.kind, []).append(t)
    m, tp = 4, 8
    # per layer and micro-batch: forward 2 halves, backward 2 halves, each followed by its
    # tensor-parallel collective(s) (one more per half in the backward with full recomputation)
    assert len(kinds["compute"]) == w_layers * m * 4
    per_half = 2 if pipelined.layout.sequence_parallel else 1
    assert len(kinds["tp_comm"]) == w_layers * m * (2 + 4) * per_half
    assert len(kinds["pp_comm"]) == 2 * m * tp  # one boundary, forward and backward, each tp rank
    buckets = [t for t in kinds["dp_comm"]]
    assert buckets and all(t.op == "all_reduce" and len(t.gpus) == 2 for t in buckets)
    # replica 1's copy of each send, folded: the same GPU positions in its own hosts
    assert all(len(t.images) == 1 and len(t.images[0]) == 2 for t in kinds["pp_comm"])


def test_folded_replicas_simulate_exactly_as_every_replica(cluster, pipelined, simulated):
    folded = step_graph(pipelined, cluster)
    unfolded = step_graph(pipelined, cluster, fold=False)
    assert len(unfolded) > len(folded)
    a, b = simulated, simulate(cluster, unfolded)
    assert a.step_time == pytest.approx(b.step_time, rel=1e-12)
    assert dict(a.exposed) == pytest.approx(dict(b.exposed), rel=1e-12)


def test_replicas_on_a_changed_host_are_not_folded(cluster, pipelined, simulated):
    """A what-if that halves an NVLink bundle of host 3 (replica 1's last stage): replica 1 is no
    longer an image of replica 0, so the step is built unfolded, and it is the unfolded step."""
    G = cluster.copy()
    for u, v in (("h3.gpu0", "h3.nvswitch0"), ("h3.nvswitch0", "h3.gpu0")):
        G.edges[u, v]["bandwidth"] /= 2
    assert pipelined.groups["tp"][3] == tuple(range(24, 32))  # stage 1 of replica 1: host 3
    folded = step_graph(pipelined, G)
    assert folded == step_graph(pipelined, G, fold=False)
    assert any(t.id.startswith("d1.") for t in folded.tasks)
    assert simulate(G, folded).step_time > simulated.step_time


def test_zero_stages_change_the_data_parallel_collectives(cluster, prepared):
    p = plan("llama3-8b", prepared, tp=8, pp=1, dp=4, zero=1, global_batch=8)
    ops = {t.op for t in step_graph(p, cluster).tasks if t.kind == "dp_comm"}
    assert ops == {"reduce_scatter", "all_gather"}
    p3 = plan("llama3-8b", prepared, tp=8, pp=1, dp=4, zero=3, global_batch=8)
    gathers = [t for t in step_graph(p3, cluster).tasks if t.kind == "dp_comm" and t.op == "all_gather"]
    # every layer, forward and backward of every micro-batch, every tensor-parallel rank; no
    # gather of the updated parameters (ZeRO 3 keeps them sharded)
    assert len(gathers) == 32 * 2 * p3.layout.micro_batches * 8
    assert all(len(t.gpus) == 4 for t in gathers)


def test_zero3_prefetches_one_layer_ahead(cluster, prepared):
    """A layer's parameter gather is issued when the layer before it starts: layers 0 and 1 at the
    start of the micro-batch, layer 2 when layer 0 ends; so layer 1's gather runs beside layer 0."""
    p3 = plan("llama3-8b", prepared, tp=8, pp=1, dp=4, zero=3, global_batch=8)
    graph = step_graph(p3, cluster)
    task = {t.id: t for t in graph.tasks}
    layer0_end = task["d0.p0.F0.l1.c0"].after[0]  # the first layer-1 compute waits for layer 0
    assert layer0_end.startswith("d0.p0.F0.l0.")
    assert task["d0.p0.F0.l1.zg0"].after == task["d0.p0.F0.l0.zg0"].after
    assert task["d0.p0.F0.l2.zg0"].after == (layer0_end,)
    r = simulate(cluster, graph)
    assert r.task("d0.p0.F0.l1.zg0").end <= r.task("d0.p0.F0.l1.c0").start
    assert r.task("d0.p0.F0.l1.zg0").start < r.task("d0.p0.F0.l0.c1").end


def test_the_simulated_step_beside_the_planners(cluster, pipelined):
    r = simulate_plan(pipelined, cluster)
    assert r.step_time > 0 and r.exposed_comm > 0
    # The same compute and the same collectives: the two agree to a few percent on this layout.
    assert r.step_time == pytest.approx(pipelined.step_time, rel=0.1)
    assert set(r.critical_by_kind()) <= {"compute", "tp_comm", "pp_comm", "dp_comm", "optimizer"}


def test_many_simulations_on_an_executor_give_the_same_results(cluster, pipelined, simulated):
    G2 = cluster.copy()
    items = [(cluster, step_graph(pipelined, cluster)), (G2, task_graph(
        {"tasks": [{"id": "a", "op": "all_reduce", "gpus": list(range(16)), "bytes": 64 * MiB}]}))]
    # In process, one after the other: the first is the module's simulation of the step.
    here = [simulated] + simulate_many(items[1:])
    with ThreadPoolExecutor(2) as pool:
        there = simulate_many(items, executor=pool)
    assert [r.to_records() for r in here] == [r.to_records() for r in there]


def test_many_simulations_on_a_dask_cluster_give_the_same_results(cluster, tmp_path):
    """The work travels to a Dask worker over loopback TCP (so it is serialised) and comes back equal."""
    distributed = pytest.importorskip("distributed")
    dask_config = pytest.importorskip("dask.config")
    items = [(cluster, task_graph({"tasks": [
        {"id": "grad", "op": "all_reduce", "gpus": list(range(16)), "bytes": 64 * MiB},
        {"id": "fwd", "op": "compute", "gpu": 0, "seconds": 1e-3},
        {"id": "p2p", "op": "send", "src": 0, "dst": 9, "bytes": MiB, "after": ["fwd"]}]}))]
    # Dask's workers keep a scratch space (lock files) in its temporary directory: the test's own.
    with dask_config.set({"temporary-directory": str(tmp_path)}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0") as dask_cluster:
        with distributed.Client(dask_cluster) as client:
            there = simulate_many(items, executor=client.get_executor())
    assert [r.to_records() for r in there] == [r.to_records() for r in simulate_many(items)]


def test_errors(cluster, prepared):
    cnn = plan("resnet50", topo.build("dgxh100"), tp=1, pp=1, dp=8, zero=0)
    with pytest.raises(StepGraphError, match="CNN"):
        step_graph(cnn, topo.build("dgxh100"))
    p = plan("llama3-8b", prepared, tp=8, pp=1, dp=4, zero=0, global_batch=8)
    with pytest.raises(StepGraphError, match="bucket"):
        step_graph(p, cluster, bucket=0)
    big = plan("llama3-70b", topo.build("dgxh100"), tp=1, pp=1, dp=8, zero=0)
    assert not big.fits
    with pytest.raises(StepGraphError, match="does not fit"):
        step_graph(big, topo.build("dgxh100"))


def test_compute_time_of_flops():
    # A100 bf16: 312 TFLOP/s dense (NVIDIA A100 Tensor Core GPU datasheet); a full wave of
    # matrix multiplies reaches the compute model's fraction of it (GEMM_EFFICIENCY, 0.87).
    from models.studies.compute import GEMM_EFFICIENCY

    assert compute_time(topo.build("dgxa100"), efficiency=0.75)(312e12 * 0.75, "bf16", (0, 1)) == pytest.approx(1.0)
    fraction = GEMM_EFFICIENCY["A100"]["bf16"]
    assert compute_time(topo.build("dgxa100"))(312e12 * fraction, "bf16", (0, 1)) == pytest.approx(1.0)
