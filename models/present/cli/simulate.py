"""``simulate``: a training step (or a task graph) as a timeline: overlap, contention, a trace."""

from __future__ import annotations

import dataclasses
import json

import topo

from .inputs import fabric_of
from .options import (MAX_PLAN_GPUS, Command, UsageError, at_least, json_option, nccl_option, parse_size,
                      system_option)
from .outputs import print_json, progress_for, write_figures
from .plan import (check_plan_gpus, layout_options, parallel_options, parallel_values, planned_workload, planner_words,
                   workload_grammar)


def _simulate_arguments(parser) -> None:
    from ...predict.simulate import MAX_EVENTS

    parser.add_argument("workload", metavar="WORKLOAD", nargs="?",
                        help="a workload (as for plan) whose step is simulated; or --graph FILE.json")
    parser.add_argument("--graph", metavar="FILE.json", help="simulate your own task graph instead (see below)")
    system_option(parser)
    nccl_option(parser)
    layout = layout_options(parser)
    layout.add_argument("--bucket", type=parse_size, default=None, metavar="SIZE",
                        help="data-parallel gradient bucket (default 25M, PyTorch DDP's)")
    parallel_options(parser)
    parser.add_argument("--no-sm-share", action="store_true",
                        help="do not slow compute by the SMs NCCL's kernels hold")
    parser.add_argument("--trace", metavar="OUT.json",
                        help="also write a Chrome trace (Perfetto, chrome://tracing), replaced atomically")
    json_option(parser, "text")
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write a Gantt chart and the links' utilisation (replaced atomically)")
    parser.add_argument("--max-events", type=at_least(1), default=MAX_EVENTS, metavar="N",
                        help=f"refuse simulations of more than N events, three per task built (a folded "
                             f"data-parallel replica adds none; default {MAX_EVENTS})")
    parser.add_argument("--limit", type=at_least(1), default=MAX_PLAN_GPUS, metavar="N",
                        help=f"refuse jobs of more than N GPUs (default {MAX_PLAN_GPUS})")


@planner_words
def _simulate(args) -> None:
    from ...predict.simulate import simulate
    from ...predict.taskgraph import read_task_graph
    from ...studies.planner.ep_overlap import NO_OVERLAP
    from ...studies.planner.layouts import plan
    from ...studies.planner.parallel_graph import plan_step_graph
    from ...studies.stepgraph import compute_time
    from ...studies.workload import DEFAULT_BUCKET
    from ..json_shapes import simulation_json
    from ..text import simulation_table

    if (args.workload is None) == (args.graph is None):
        raise UsageError("expected either WORKLOAD or --graph FILE.json, received "
                          + ("both" if args.workload else "neither"))
    if args.graph is not None:  # the layout options shape a workload's step, not a given graph
        given = [option for option, value in (
            ("--tp", args.tp), ("--pp", args.pp), ("--dp", args.dp), ("--zero", args.zero),
            ("--micro-batch", None if args.micro_batch == 1 else args.micro_batch),
            ("--global-batch", args.global_batch), ("--seq-length", args.seq_length), ("--dtype", args.dtype),
            ("--recompute", args.recompute), ("--sequence-parallel", args.sequence_parallel),
            ("--virtual-stages", None if args.virtual_stages == 1 else args.virtual_stages),
            ("--bucket", args.bucket), ("--cp", args.cp),
            ("--cp-comm", None if args.cp_comm == "p2p" else args.cp_comm),
            ("--hierarchical-context-parallel-sizes", args.hierarchical_context_parallel_sizes),
            ("--ep", args.ep), ("--etp", args.etp), ("--dispatcher", args.dispatcher),
            ("--ep-overlap", None if args.ep_overlap == (NO_OVERLAP,) else args.ep_overlap),
            ("--first-stage-layers", args.first_stage_layers), ("--last-stage-layers", args.last_stage_layers))
            if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} shape(s) a WORKLOAD's step: expected none with --graph")
    w = planned_workload(args, moe=True) if args.workload is not None else None
    G = fabric_of(args, args.system)
    planned = None
    if w is not None:
        check_plan_gpus(args, G)
        if args.virtual_stages != 1:
            raise UsageError("simulate builds plain 1F1B schedules: expected --virtual-stages 1, received "
                              f"{args.virtual_stages} (plan --virtual-stages models the interleaved step)")
        planned = plan(w, G, tp=args.tp, pp=args.pp, dp=args.dp, zero=args.zero, micro_batch=args.micro_batch,
                       global_batch=args.global_batch, dtype=args.dtype, recompute=args.recompute,
                       sequence_parallel=None if args.sequence_parallel is None else args.sequence_parallel == "on",
                       profile=args.nccl, simulate=0, **parallel_values(args))  # the analytical step, compared below
        graph = plan_step_graph(planned, G, workload=w, bucket=DEFAULT_BUCKET if args.bucket is None else args.bucket,
                           max_events=args.max_events)  # counted on the plan before the graph is built
        if len(args.ep_overlap) > 1 and planned.ep_overlap is not None:  # a search of several: say which it chose
            graph = dataclasses.replace(graph, name=f"{graph.name} ep-overlap {planned.ep_overlap.name}")
    else:
        graph = read_task_graph(args.graph, ngpus=len(topo.gpus(G)), compute_time=compute_time(G),
                                limit=args.max_input)
    with progress_for(args, "simulate", "task") as progress:
        result = simulate(G, graph, profile=args.nccl, sm_share=not args.no_sm_share, max_events=args.max_events,
                          progress=progress)
    if args.trace is not None:
        from ..output import write_text_atomic
        from ..simulate_plot import chrome_trace
        write_text_atomic(args.trace, json.dumps(chrome_trace(result)))
    if args.out is not None:
        from ..simulate_plot import gantt_figure, link_heatmap_figure
        write_figures(args.out, f"dgx-topo: {result.name or 'task graph'} on {result.fabric}",
                       [gantt_figure(result), link_heatmap_figure(result)], [simulation_table(result)])
    if args.json:
        data = simulation_json(result)
        if planned is not None:
            data["plan_step_time_s"] = planned.step_time
        print_json(data)
        return
    print(simulation_table(result))
    if planned is not None:
        print(f"  the planner's analytical estimate of the step: {planned.step_time * 1e3:.3f} ms")
    for path in (args.trace, args.out):
        if path is not None:
            print(f"wrote {path}")


_GRAPH_HELP = ('Task graphs (--graph): {"tasks": [{"id": "grad", "op": "all_reduce", "gpus": [0, 1], '
               '"bytes": 1048576}, {"id": "mm", "op": "compute", "gpu": 0, "seconds": 0.001, "after": '
               '["grad"]}]}; op is a collective, send (src, dst, bytes) or compute (seconds, or flops with '
               'dtype); see models.predict.simulate')


SIMULATE = Command("simulate", "a training step or your task graph as a timeline: overlap and shared links",
                   _simulate_arguments, _simulate,
                   epilog=lambda: "Workloads (WORKLOAD): " + workload_grammar() + ". " + _GRAPH_HELP + ".")
