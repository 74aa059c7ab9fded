"""``systems`` (the built-in systems) and ``topo`` (a system's connection matrix): what a fabric is."""

from __future__ import annotations

import topo

from ..startup import read_startup_data
from .inputs import fabric_of
from .options import Command, json_option, system_option
from .outputs import print_json


def _systems_arguments(parser) -> None:
    json_option(parser)


def _systems(args) -> None:
    # The same for every user: shipped (models.present.startup), so that it answers at once.
    print(read_startup_data()["systems_json" if args.json else "systems_table"])


# topo
def _topo_arguments(parser) -> None:
    system_option(parser)
    json_option(parser, "the matrix")
    parser.add_argument("--no-legend", action="store_true", help="omit the legend")


def _topo(args) -> None:
    G = fabric_of(args, args.system)
    matrix = topo.connection_matrix(G)
    if args.json:
        print_json({"system": G.graph["system"], **matrix.to_dict()})
        return
    print(topo.format_connection_matrix(matrix, legend=not args.no_legend))


SYSTEMS = Command("systems", "list the built-in systems", _systems_arguments, _systems)
TOPO = Command("topo", "connection matrix as nvidia-smi topo -m prints it", _topo_arguments, _topo)
