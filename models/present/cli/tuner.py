"""``tuner``: the model's choices written as the config file of NCCL's example tuner plugin
(:mod:`models.studies.tuner`), one line per band of sizes where the choice is constant."""

from __future__ import annotations

from .inputs import fabric_of
from .options import Command, json_option, nccl_option, system_option
from .outputs import print_json


def _tuner_arguments(parser) -> None:
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids of the communicator such as 0-3 or 0,3,5-7 "
                        "(default: all); the rows match its nNodes and nRanks")
    nccl_option(parser)
    parser.add_argument("--out", metavar="FILE", required=True,
                        help="the config to write (NCCL reads NCCL_TUNER_CONFIG_FILE, else nccl_tuner.conf)")
    json_option(parser, "the summary")


def _tuner(args) -> None:
    from ...studies.tuner import tuner_config, tuner_rows
    from ..output import write_text_atomic
    from ..tuner_text import tuner_text

    G = fabric_of(args, args.system)
    rows = tuner_rows(G, gpus=args.gpus, profile=args.nccl)
    system = G.graph.get("system") or G.graph.get("name") or "the fabric"
    write_text_atomic(args.out, tuner_config(rows, title=f"dgxtopo tuner: {system}"))
    if args.json:
        print_json({"path": args.out, "system": system, "nccl": rows.nccl, "gpus": list(rows.gpus),
                    "rows": rows.to_records()})
        return
    print(tuner_text(rows, system=system, path=args.out))


TUNER = Command("tuner", "write the model's choices as NCCL's example tuner plugin config (nccl_tuner.conf)",
                _tuner_arguments, _tuner)
