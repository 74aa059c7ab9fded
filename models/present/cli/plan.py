"""``plan`` (a training step of a workload on a fabric: layout, placement, where time goes) and
``gpus`` (GPU generations ranked for a workload); the workload and layout options ``simulate``
shares."""

from __future__ import annotations

import argparse
import math
import sys

import topo
from topo.errors import DgxTopoError

from .inputs import fabric_of
from .options import (MAX_PLAN_GPUS, Command, UsageError, at_least, json_option, nccl_option, parse_size,
                      system_option, too_much)
from .outputs import print_json, write_figures


def _workload_argument(parser) -> None:
    from ...studies.workload import PRESETS

    parser.add_argument("workload", metavar="WORKLOAD",
                        help=f"a preset ({', '.join(PRESETS)}), a mixture-of-experts preset or a "
                             "transformer or moe: spec (see below)")


def _dtype_option(parser, default=None) -> None:
    from ...studies.workload import DTYPES

    parser.add_argument("--dtype", choices=DTYPES, default=default,
                        help="training data type" + (f" (default {default})" if default else
                                                     " (default bf16 where the GPU has it, else fp16)"))


def _plan_number(name: str, *, low: float, high: float, low_open: bool = True):
    """An argparse type for the plan's fractions and scales: a plain finite number in range."""
    shown = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 and text.strip().lower() not in ("nan", "inf") else math.nan
        except ValueError:
            value = math.nan
        if not (low < value <= high if low_open else low <= value <= high):
            raise argparse.ArgumentTypeError(f"{name} must be a number in {shown}, received {text[:40]!r}")
        return value
    return parse


def layout_options(parser):
    """The layout options of ``plan`` (and ``simulate``, which plans first); returns their group."""
    from ...studies.planner.records import RECOMPUTE

    layout = parser.add_argument_group("layout (degrees not given are searched)")
    for option, what in (("--tp", "tensor"), ("--pp", "pipeline"), ("--dp", "data")):
        layout.add_argument(option, type=at_least(1), metavar="N", help=f"{what}-parallel degree")
    layout.add_argument("--zero", type=int, choices=(0, 1, 2, 3), metavar="K",
                        help="ZeRO stage 0-3 (3 is FSDP; default: searched)")
    layout.add_argument("--micro-batch", type=at_least(1), default=1, metavar="B",
                        help="micro-batch per GPU [samples] (default 1)")
    layout.add_argument("--global-batch", type=at_least(1), metavar="B",
                        help="global batch [samples] (default: the workload's published one)")
    layout.add_argument("--seq-length", type=at_least(1), metavar="N",
                        help="train at this sequence length [tokens] (default: the workload's own)")
    _dtype_option(layout)
    layout.add_argument("--recompute", choices=RECOMPUTE, metavar="MODE",
                        help=f"activation recomputation, {', '.join(RECOMPUTE)} (deepseek: DeepSeek-V3's norms, "
                             f"MLA up-projections and expert activations again, activations cached in the "
                             f"low-precision dtype; MoE only) (default: none and full searched, and deepseek "
                             f"for a MoE workload)")
    layout.add_argument("--sequence-parallel", choices=("on", "off"),
                        help="sequence parallelism with tensor parallelism (default on)")
    layout.add_argument("--virtual-stages", type=at_least(1), default=1, metavar="V",
                        help="model chunks per GPU, interleaved 1F1B (default 1: plain 1F1B)")
    return layout


def parallel_options(parser) -> None:
    """``plan``'s (and ``simulate``'s) context, expert and pipeline-split options."""
    from ...studies.planner.cp_exchange import CP_COMM
    from ...studies.planner.dispatcher import DISPATCHER
    from ...studies.planner.ep_overlap import EP_OVERLAP
    from ...studies.workload import DTYPES

    group = parser.add_argument_group("context, expert and uneven pipeline parallelism")
    group.add_argument("--cp", type=at_least(1), metavar="N",
                       help="context-parallel degree (default: searched from 16K tokens on, else 1)")
    group.add_argument("--cp-comm", choices=CP_COMM, default="p2p",
                       help="context-parallel attention: p2p ring (default), a2a (all-to-all) or a2a+p2p "
                            "(hierarchical: all-to-all in groups, a ring across them)")
    group.add_argument("--hierarchical-context-parallel-sizes", type=at_least(1), nargs=2, metavar=("A", "P"),
                       help="a2a+p2p's all-to-all group and ring sizes, A x P = cp, both >= 2 (Megatron-Core's "
                            "hierarchical_context_parallel_sizes; default: searched)")
    group.add_argument("--ep", type=at_least(1), metavar="N",
                       help="expert-parallel degree of a MoE workload, carved out of tp x cp x dp (default: searched)")
    group.add_argument("--etp", type=at_least(1), metavar="N",
                       help="expert tensor-parallel degree (default: searched over 1 and tp)")
    group.add_argument("--ep-overlap", type=_overlap_names, default="none", metavar="NAME[,NAME...]",
                       help=f"how expert all-to-alls overlap compute: none (default), batch (Megatron's "
                            f"batch-level overlap) or dualpipe (DeepSeek-V3's DualPipe); several, comma-separated, "
                            f"or 'all' ({','.join(EP_OVERLAP)}): the search covers each")
    group.add_argument("--expert-balance", type=_plan_number("--expert-balance", low=1, high=1000, low_open=False),
                       default=1.0, metavar="F",
                       help="the busiest rank's routed tokens over the balanced share (default 1: force-balanced)")
    group.add_argument("--dispatcher", choices=DISPATCHER,
                       help="how the expert layers send their tokens: flat (Megatron-Core's all-to-all) or "
                            "hierarchical (DeepSeek-V3's: once per node over the network, then NVLink) "
                            "(default: the workload's published software's: hierarchical for group-limited "
                            "routing, deepseek-v3; else flat)")
    group.add_argument("--dispatch-dtype", choices=DTYPES, metavar="DTYPE",
                       help="dtype of the dispatch all-to-all (default: fp8's quantised copy when training in "
                            "fp8, mxfp8 or nvfp4, else 16-bit)")
    group.add_argument("--first-stage-layers", type=at_least(1), metavar="N",
                       help="layers of the first pipeline stage (the rest split evenly)")
    group.add_argument("--last-stage-layers", type=at_least(1), metavar="N",
                       help="layers of the last pipeline stage (the rest split evenly)")
    group.add_argument("--account-for-embedding-in-pipeline-split", action="store_true",
                       help="count the embedding as one layer of the first stage")
    group.add_argument("--account-for-loss-in-pipeline-split", action="store_true",
                       help="count the output layer and loss as one layer of the last stage")


def _overlap_names(text: str) -> tuple:
    """An argparse type: expert overlaps by name, comma-separated, or ``all``; read once as their
    strategy objects (:mod:`models.studies.planner.ep_overlap`), in the order given."""
    from ...studies.planner.ep_overlap import EP_OVERLAP, EP_OVERLAPS, ep_overlap_named

    names = list(EP_OVERLAP) if text == "all" else text.split(",")
    unknown = [n for n in names if n not in EP_OVERLAP]
    if unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"expected distinct names of {', '.join(EP_OVERLAP)} (comma-separated) or "
                                         f"all, received {text!r}")
    return EP_OVERLAPS if text == "all" else tuple(ep_overlap_named(n) for n in names)


def _overlap_choice(overlaps: tuple):
    """``--ep-overlap``'s overlaps as :func:`models.studies.planner.search` takes them: one
    overlap, or the tuple of several for the search to cover."""
    return overlaps[0] if len(overlaps) == 1 else overlaps


def parallel_values(args) -> dict:
    """The options of :func:`parallel_options` as :func:`models.studies.planner.search` takes them:
    ``--cp-comm`` and ``--ep-overlap`` chosen here, once, as their strategy objects."""
    from ...studies.planner.cp_exchange import HierarchicalExchange, cp_exchange_named

    exchange = cp_exchange_named(args.cp_comm)
    sizes = args.hierarchical_context_parallel_sizes
    if sizes is not None:
        if not isinstance(exchange, HierarchicalExchange):
            raise UsageError(f"--hierarchical-context-parallel-sizes needs --cp-comm a2a+p2p, received --cp-comm "
                             f"{args.cp_comm}")
        exchange = HierarchicalExchange(sizes=tuple(sizes))
    return dict(cp=args.cp, cp_comm=exchange, ep=args.ep, etp=args.etp,
                ep_overlap=_overlap_choice(args.ep_overlap),
                expert_balance=args.expert_balance, dispatch_dtype=args.dispatch_dtype, dispatcher=args.dispatcher,
                first_stage_layers=args.first_stage_layers or 0, last_stage_layers=args.last_stage_layers or 0,
                embedding_in_split=args.account_for_embedding_in_pipeline_split,
                loss_in_split=args.account_for_loss_in_pipeline_split)


def _plan_arguments(parser) -> None:
    from ...studies.planner.calibrate import MEASURED_GRAMMAR
    from ...studies.workload import SOFTWARE

    _workload_argument(parser)
    system_option(parser)
    nccl_option(parser)
    layout_options(parser)
    parallel_options(parser)
    model = parser.add_argument_group("compute and overlap model")
    model.add_argument("--software", choices=SOFTWARE, metavar="STACK",
                       help="which kernels are fused: " + "; ".join(f"{k}: {v.description}" for k, v in
                                                                     SOFTWARE.items())
                            + " (default flash for models trained with it on Ampere or newer, else fused)")
    model.add_argument("--efficiency", type=_plan_number("--efficiency", low=0, high=1), metavar="F",
                       help="fraction of the dense peak a full wave of a matrix multiply reaches "
                            "(default per GPU generation and dtype)")
    model.add_argument("--attention-efficiency", type=_plan_number("--attention-efficiency", low=0, high=1),
                       metavar="F", help="fraction of the dense peak of flash attention (default 0.6)")
    model.add_argument("--memory-efficiency", type=_plan_number("--memory-efficiency", low=0, high=1),
                       metavar="F", help="fraction of the HBM bandwidth of a streaming kernel (default 0.8)")
    model.add_argument("--overlap", type=_plan_number("--overlap", low=0, high=1, low_open=False),
                       metavar="F", help="analytical first pass: fraction of the backward that hides data-parallel "
                                         "communication (default 1; 0: gradients reduced after it); a simulated "
                                         "step overlaps as its schedule allows")
    model.add_argument("--bucket", type=parse_size, metavar="SIZE",
                       help="gradient bucket (default 25M, PyTorch DDP's)")
    from ...studies.compute import MAX_SCALE
    model.add_argument("--compute-scale", type=_plan_number("--compute-scale", low=0, high=MAX_SCALE), metavar="K",
                       help="multiply every kernel's time by K (a --calibrate result)")
    model.add_argument("--calibrate", metavar="MEASURED",
                       help=f"fit the compute model to one measured step of this layout: {MEASURED_GRAMMAR}")
    parser.add_argument("--search", action="store_true", help="rank every layout instead of printing the best")
    from ...studies.planner.layouts import DEFAULT_SIMULATED, PLAN_MAX_EVENTS
    parser.add_argument("--simulate", type=at_least(0), default=DEFAULT_SIMULATED, metavar="N",
                        help=f"simulate the N best layouts of the analytical first pass and rank them by "
                             f"their simulated step (default {DEFAULT_SIMULATED}; 0: analytical only)")
    parser.add_argument("--max-events", type=at_least(1), default=PLAN_MAX_EVENTS, metavar="N",
                        help=f"the simulations' budget in events, three per task built (a folded data-parallel "
                             f"replica adds none; default {PLAN_MAX_EVENTS}); layouts beyond it keep their "
                             f"analytical step")
    parser.add_argument("--top", type=at_least(1), metavar="N",
                        help="with --search: layouts shown (default: 10 in text, all in JSON)")
    json_option(parser, "text")
    parser.add_argument("--out", metavar="FILE.html",
                        help="also write the step-time breakdown per layout and memory per GPU "
                             "(replaced atomically)")
    parser.add_argument("--limit", type=at_least(1), default=MAX_PLAN_GPUS, metavar="N",
                        help=f"refuse jobs of more than N GPUs (default {MAX_PLAN_GPUS}; the search "
                             f"grows with the GPUs)")


def planner_words(command):
    """The command, its planner errors that carry numbers raised again in words
    (:func:`models.present.plan_text.plan_error_text`)."""
    def run(args):
        from ...studies.planner.records import DoesNotFitError, NoLayoutError
        from ...studies.stepgraph import PlanDoesNotFitError
        try:
            return command(args)
        except (NoLayoutError, DoesNotFitError, PlanDoesNotFitError) as error:
            from ..plan_text import plan_error_text
            raise DgxTopoError(plan_error_text(error)) from None
    return run


@planner_words
def _plan(args) -> int:
    from ...studies.planner.calibrate import calibrate_plan
    from ...studies.planner.layouts import plan, search
    from ...studies.workload import DEFAULT_BUCKET
    from ..json_shapes import plan_calibration_json, plan_json, search_json
    from ..plan_text import format_plan, format_search

    if args.top is not None and not args.search:
        raise UsageError("--top ranks layouts: expected it with --search")
    if args.calibrate is not None and args.compute_scale is not None:
        raise UsageError("--calibrate fits the compute scale: expected --calibrate or --compute-scale, not both")
    w = planned_workload(args, moe=True)  # a bad workload fails before the fabric is built
    G = fabric_of(args, args.system)
    check_plan_gpus(args, G)
    options = dict(tp=args.tp, pp=args.pp, dp=args.dp, zero=args.zero, micro_batch=args.micro_batch,
                   global_batch=args.global_batch, dtype=args.dtype, recompute=args.recompute,
                   profile=args.nccl,
                   sequence_parallel=None if args.sequence_parallel is None else args.sequence_parallel == "on",
                   virtual_stages=args.virtual_stages, software=args.software, efficiency=args.efficiency,
                   attention_efficiency=args.attention_efficiency, memory_efficiency=args.memory_efficiency,
                   bucket=DEFAULT_BUCKET if args.bucket is None else args.bucket,
                   simulate=args.simulate, max_events=args.max_events, **parallel_values(args))
    if args.overlap is not None:
        options["overlap"] = args.overlap
    top = 10 if args.top is None else args.top
    if args.calibrate is not None:
        best = calibrate_plan(w, G, args.calibrate, **options)
        options["compute_scale"] = best.calibration.scale
    elif args.compute_scale is not None:
        options["compute_scale"] = args.compute_scale
    if args.search or args.out is not None:
        result = search(w, G, **options)
        if args.calibrate is None:
            best = result.best if result.best.fits else plan(w, G, **options)
    elif args.calibrate is None:
        result, best = None, plan(w, G, **options)
    if args.out is not None:
        from ..plan_plot import memory_figure, step_time_figure

        write_figures(args.out, f"dgx-topo: {best.workload} on {best.fabric}",
                       [step_time_figure(result), memory_figure(result)],
                       [format_plan(best, verbose=True)])
    fits = best.fits if not args.search else bool(result.fitting())
    if args.json:
        if args.search:
            data = search_json(result, args.top)  # every layout unless --top says how many
            if args.calibrate is not None:
                data["calibration"] = plan_calibration_json(best.calibration)
            print_json(data)
        else:
            print_json(plan_json(best))
        return 0 if fits else _does_not_fit(best, result if args.search else None)
    if args.search:
        print(format_search(result, top=top))
        if args.calibrate is not None:
            print(format_plan(best, verbose=True))
    else:
        print(format_plan(best, verbose=True))
    if args.out is not None:
        print(f"wrote {args.out}")
    return 0 if fits else _does_not_fit(best, result if args.search else None)


def _does_not_fit(best, result) -> int:
    """A job that fits nowhere is a request the fabric cannot meet: the verdict and its numbers are
    printed on standard output, and one line on standard error says why, with exit status 2."""
    if result is not None:  # --search: the layout closest to fitting says what is missing
        best = min(result.plans, key=lambda p: p.memory.total)
        what = f"no layout of {best.workload} fits on {best.fabric}; the closest,"
    else:
        what = f"{best.workload} does not fit on {best.fabric}:"
    from ..plan_text import fit_note

    print(f"dgxtopo: error: {what} {best.layout.label()}: {fit_note(best)}", file=sys.stderr)
    return 2


def _gpus_arguments(parser) -> None:
    _workload_argument(parser)
    _dtype_option(parser, default="fp16")
    parser.add_argument("--micro-batch", type=at_least(1), default=1, metavar="B",
                        help="micro-batch per GPU [samples] (default 1)")
    json_option(parser)


def _gpus(args) -> None:
    from ...studies.planner.ranking import gpus_ranking
    from ..json_shapes import gpus_ranking_json
    from ..plan_text import format_gpus_ranking, format_workload

    w = dense_workload(args.workload)
    ranks = gpus_ranking(w, dtype=args.dtype, micro_batch=args.micro_batch)
    if args.json:
        print_json(gpus_ranking_json(w.name, args.dtype, ranks))
        return
    print(f"{format_workload(w)}\nGPU generations ranked by the time of one training sample ({args.dtype}, "
          f"micro-batch {args.micro_batch}, data parallel over 8 GPUs of one board)")
    print(format_gpus_ranking(ranks))


def workload_grammar() -> str:
    from ...studies.moe import MOE_GRAMMAR, MOE_PRESETS
    from ...studies.workload import WORKLOAD_GRAMMAR

    return (WORKLOAD_GRAMMAR + ". The mixture-of-experts presets (" + ", ".join(MOE_PRESETS) + ") and moe: specs "
            "(" + MOE_GRAMMAR + ") are planned by plan and simulate, not yet by gpus")


def planned_workload(args, moe: bool = False):
    """The workload of ``plan`` and ``simulate`` (a MoE one too when ``moe``), at
    ``--seq-length`` when given."""
    from ...studies.moe import is_moe_spec, moe_workload
    from ...studies.workload import with_seq_length

    w = moe_workload(args.workload) if moe and is_moe_spec(args.workload) else dense_workload(args.workload)
    return w if args.seq_length is None else with_seq_length(w, args.seq_length)


def check_plan_gpus(args, G) -> None:
    """Refuse a layout (or the whole fabric, for the degrees left to choose) of more GPUs than ``--limit``."""
    degrees = (args.tp, args.pp, args.dp, getattr(args, "cp", None) or 1)
    ngpus = math.prod(degrees) if None not in degrees else len(topo.gpus(G))
    if ngpus > args.limit:
        raise too_much(f"a plan of {ngpus} GPUs", ngpus, args.limit, "--limit")


def dense_workload(text):
    """The dense workload a command's WORKLOAD names; a MoE preset or ``moe:`` spec is read (a bad
    one refused in its own words) and then refused, naming what it is."""
    from ...studies.moe import is_moe_spec, moe_workload
    from ...studies.workload import MoeNotPlannedError, parse_workload

    if is_moe_spec(text):
        w = moe_workload(text)
        raise MoeNotPlannedError(f"{w.name} is a mixture-of-experts workload ({w.parameters / 1e9:.1f} B parameters, "
                                 f"{w.active_parameters / 1e9:.1f} B active): expected a dense transformer or a CNN "
                                 "(plan and simulate take it; gpus models dense workloads only yet)")
    return parse_workload(text)


PLAN = Command("plan", "a training step on a fabric: the best layout and where the time goes",
               _plan_arguments, _plan, epilog=lambda: "Workloads (WORKLOAD): " + workload_grammar() + ". Exit "
               "status: 0 when the layout fits (with --search: when one does); 2 when none fits (the "
               "verdict and its numbers are printed, and one line on standard error says why) and for bad input.")
GPUS = Command("gpus", "GPU generations ranked for a workload", _gpus_arguments, _gpus,
               epilog=lambda: "Workloads (WORKLOAD): " + workload_grammar() + ".")
