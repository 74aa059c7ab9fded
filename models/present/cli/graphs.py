"""``graphs``: NCCL's own rings, trees and NVLS graph (its ``NCCL_GRAPH_DUMP_FILE``) beside the
model's channel search for the same GPUs, channel by channel, differences marked.

Its own command rather than ``import --graph``: ``import`` turns a file into a fabric (and
writes it with --out), while a graph dump is NCCL's search result *over* a fabric, which it
cannot build; it needs a fabric to compare with (--system or --topo-file, --gpus, --nccl), and
none of import's options (--gpu, --pcie, --cpu, ...) applies to it."""

from __future__ import annotations

from .inputs import fabric_of, read_text
from .options import Command, json_option, nccl_option, system_option
from .outputs import print_json


def _graphs_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="NCCL's graph XML (written with NCCL_GRAPH_DUMP_FILE)")
    system_option(parser, whatif=True)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids of the communicator such as 0-3 (default: the "
                        "GPUs the dump names)")
    nccl_option(parser)
    json_option(parser, "both sides' graphs and one record per channel")


def _graphs(args) -> None:
    from ...engine.nccl.graph_dump import GRAPH_DUMP_INPUT, parse_graph_dump
    from ...studies.graph_compare import compare_graph_dump

    dump = parse_graph_dump(read_text(args.file, GRAPH_DUMP_INPUT, args))  # a bad file fails before any work
    G = fabric_of(args, args.system)
    comparison = compare_graph_dump(G, dump, args.gpus, profile=args.nccl)
    system = G.graph.get("system") or G.graph.get("name") or "the fabric"
    if args.json:
        from ..graph_text import graphs_json

        print_json(graphs_json(comparison, system=system, path=args.file))
        return
    from ..graph_text import graphs_text

    print(graphs_text(comparison, system=system, path=args.file))


GRAPHS = Command("graphs", "NCCL's graph dump (NCCL_GRAPH_DUMP_FILE) beside the model's channel search",
                 _graphs_arguments, _graphs)
