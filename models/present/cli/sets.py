"""``pairs`` and ``subsets``: GPU sets of a fabric ranked by busbw, with the optimal-schedule bound
of each (``--bound``)."""

from __future__ import annotations

from .inputs import calibration_of, fabric_of
from .options import (MAX_SEARCHES, MAX_SETS, Command, at_least, collective_argument, json_option,
                      measurement_options, nccl_option, parse_size, system_option)
from .outputs import print_json, progress_for


def _sets_options(parser) -> None:
    parser.add_argument("--limit", type=at_least(1), default=MAX_SETS, metavar="N",
                        help=f"refuse more than N GPU sets (default {MAX_SETS})")
    parser.add_argument("--max-searches", type=at_least(1), default=MAX_SEARCHES, metavar="N",
                        help=f"refuse sets that need more than N estimates, one per set that differs "
                             f"up to the fabric's symmetry (default {MAX_SEARCHES})")


def _pairs_arguments(parser) -> None:
    collective_argument(parser)
    system_option(parser)
    parser.add_argument("-s", "--size", type=parse_size, required=True, metavar="SIZE",
                        help="message size in bytes (8, 64K, 256M, 1G)")
    nccl_option(parser)
    measurement_options(parser)
    _bound_column_option(parser)
    json_option(parser)
    _sets_options(parser)


def _bound_column_option(parser) -> None:
    parser.add_argument("--bound", action="store_true",
                        help="also the optimal-schedule bound of each set and NCCL's share of it "
                             "('NCCL gets X of the Y this fabric allows'; relays through switches, "
                             "as 'dgxtopo bound' by default)")


def _ranked(args, k: int, function):
    """``(graph, prepared fabric, result)``: one prepared fabric for the ranking and its bounds."""
    from ...engine.fabric import PreparedFabric

    calibration = calibration_of(args)  # a bad file fails before any work
    G = fabric_of(args, args.system)
    fabric = PreparedFabric(G, nccl=args.nccl)  # the command's own graph: frozen while it runs
    with progress_for(args, f"{args.coll} on sets of {k} GPUs", "search") as progress:
        return G, fabric, function(fabric, collective=args.coll, nbytes=args.size, gpus_per_thread=args.g,
                                   calibration=calibration, max_sets=args.limit, max_searches=args.max_searches,
                                   progress=progress)


def _pairs(args) -> None:
    from ...predict.collectives import pairwise
    from ..json_shapes import pairs_json
    from ..text import pairs_table

    G, fabric, matrix = _ranked(args, 2, pairwise)
    bounds = None
    if args.bound:
        from ...studies.bounds import pairwise_bounds
        bounds = pairwise_bounds(fabric, args.coll)
    if args.json:
        print_json(pairs_json(G, args.coll, args.size, matrix, bounds))
    else:
        print(pairs_table(G, args.coll, args.size, matrix, bounds))


def _set_bounds(fabric, collective: str, results) -> dict:
    """GPU ids -> bound busbw [B/s] of each set shown, one bound per class of the whole graph's
    symmetry (the bounds' key, models.engine.symmetry; not the estimates' key, which ignores
    links NCCL's paths do not use and a bound may), as :func:`models.subset_bounds` does."""
    from ...studies.bounds import bound

    key = fabric.symmetry.graph().key
    nodes = list(fabric.ids)
    found: dict = {}
    values = {}
    for r in results:
        if len(r.gpus) < 2:
            values[tuple(r.gpus)] = 0.0
            continue
        k = key([nodes[i] for i in r.gpus])
        if k not in found:
            found[k] = bound(fabric, collective, 2**30, list(r.gpus), nccl=False).bound_busbw
        values[tuple(r.gpus)] = found[k]
    return values


# subsets
def _subsets_arguments(parser) -> None:
    collective_argument(parser)
    system_option(parser)
    parser.add_argument("-k", type=at_least(1), required=True, help="GPUs per set")
    parser.add_argument("-s", "--size", type=parse_size, required=True, metavar="SIZE",
                        help="message size in bytes (8, 64K, 256M, 1G)")
    parser.add_argument("--top", type=at_least(1), metavar="N", help="show only the best N")
    nccl_option(parser)
    measurement_options(parser)
    _bound_column_option(parser)
    json_option(parser)
    _sets_options(parser)


def _subsets(args) -> None:
    from ...predict.collectives import subsets
    from ..json_shapes import subsets_json
    from ..text import subsets_table

    G, fabric, ranking = _ranked(args, args.k, lambda G, **kw: subsets(G, k=args.k, **kw))
    shown = ranking if args.top is None else ranking[:args.top]
    bounds = _set_bounds(fabric, args.coll, shown) if args.bound else None
    if args.json:
        print_json(subsets_json(G, args.coll, args.k, args.size, ranking, shown, bounds))
    else:
        print(subsets_table(G, args.coll, args.k, args.size, ranking, shown, bounds))


PAIRS = Command("pairs", "busbw of every 2-GPU communicator", _pairs_arguments, _pairs)
SUBSETS = Command("subsets", "every k-GPU set ranked by busbw", _subsets_arguments, _subsets)
