"""``dispatch``: one MoE token dispatch (or combine), NCCL's flat all-to-all against the
hierarchical dispatch (NVLink forwarding inside a node, the network once per node)."""

from __future__ import annotations

from .inputs import fabric_of
from .options import Command, at_least, json_option, nccl_option, system_option
from .outputs import print_json


def _dispatch_arguments(parser) -> None:
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="the expert-parallel group, GPU ids such as 0-15 "
                                                      "(default: all)")
    parser.add_argument("--tokens", type=at_least(1), required=True, metavar="N", help="tokens per GPU")
    parser.add_argument("--hidden", type=at_least(1), required=True, metavar="N", help="hidden size (values per token)")
    parser.add_argument("--top-k", type=at_least(1), required=True, metavar="K", help="experts per token")
    parser.add_argument("--experts", type=at_least(1), required=True, metavar="E",
                        help="routed experts, a whole number per GPU of the group")
    parser.add_argument("--dtype-bytes", type=at_least(1), default=2, metavar="B",
                        help="bytes per value (default 2, bf16; 1 for fp8)")
    parser.add_argument("--node-limit", type=at_least(1), metavar="M",
                        help="nodes a token may reach (node-limited routing; default every node)")
    nccl_option(parser)
    parser.add_argument("--explain", action="store_true", help="show each schedule's working")
    json_option(parser, "one row per schedule (flat, hierarchical)")


def _dispatch(args) -> None:
    from ...predict.dispatch import moe_dispatch

    G = fabric_of(args, args.system)
    d = moe_dispatch(G, args.tokens, args.hidden, args.top_k, args.experts, args.gpus,
                     dtype_bytes=args.dtype_bytes, node_limit=args.node_limit, profile=args.nccl)
    if args.json:
        print_json({"faster": d.faster, "schedules": d.to_records()})
        return
    from ..alltoall_text import dispatch_table, explain_dispatch

    print(explain_dispatch(d) if args.explain else dispatch_table(d))


DISPATCH = Command("dispatch", "one MoE token dispatch, flat all-to-all against hierarchical (predicted)",
                   _dispatch_arguments, _dispatch)
