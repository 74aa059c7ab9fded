"""``alltoallv``: an all-to-allv of a send-count matrix read from a file (``--matrix FILE``), as NCCL
runs it (grouped sends and receives, its per-peer schedule: :func:`models.predict.alltoall.alltoallv`),
printed in nccl-tests' columns as ``grouped`` prints gather and scatter."""

from __future__ import annotations

import topo

from .inputs import calibration_of, fabric_of, read_text
from .options import (MAX_PAIRS, Command, UsageError, at_least, json_option, measurement_options, nccl_option,
                      system_option, too_much)
from .outputs import print_json

_MATRIX_HELP = (
    "Matrices (--matrix FILE): one row per sending rank and one column per receiving rank, in the "
    "order of --gpus, entries separated by commas or spaces, each bytes as -b/-e take them (4096, "
    "64K, 1M); lines starting with # are skipped; the diagonal (a rank's copy to itself) is not "
    "timed. The size printed is the most a rank sends to its peers times n/(n-1), nccl-tests' alltoall "
    "size for equal counts (n x count); busbw is algbw x (n-1)/n, alltoall's factor.")


def _alltoallv_arguments(parser) -> None:
    parser.add_argument("--matrix", metavar="FILE", required=True,
                        help="the bytes each rank sends each rank, n x n (CSV or white space; - reads standard input)")
    system_option(parser)
    parser.add_argument("--gpus", metavar="IDS", help="GPU ids such as 0-3 or 0,3,5-7, the ranks in order "
                                                      "(default: all)")
    nccl_option(parser)
    measurement_options(parser)
    parser.add_argument("--explain", action="store_true", help="show NCCL's per-peer schedule (a field with --json)")
    json_option(parser)
    parser.add_argument("--limit", type=at_least(1), default=MAX_PAIRS, metavar="N",
                        help=f"refuse routing more than N GPU pairs (n x (n-1); default {MAX_PAIRS})")


def read_matrix(args, n: int):
    """The ``--matrix`` file as an ``n x n`` int64 array: read as every input is (regular files or -,
    sized first), told apart from the other kinds of file, then parsed
    (:func:`models.present.send_matrix.parse_matrix`)."""
    from ..file_kinds import FileKind, file_kind, misplaced
    from ..send_matrix import MATRIX_INPUT, parse_matrix

    text = read_text(args.matrix, MATRIX_INPUT, args)
    kind = file_kind(text)
    if kind not in (FileKind.TEXT, FileKind.EMPTY):
        raise UsageError(misplaced(args.matrix, kind, f"a {n} x {n} send-count matrix (bytes, CSV or white space)"))
    return parse_matrix(text, n, source="standard input" if args.matrix == "-" else args.matrix)


def alltoallv_size(matrix) -> int:
    """The size an all-to-allv is reported at: the largest rank's sends to its peers scaled to
    nccl-tests' alltoall size, ``max_i sum_{j != i} m[i, j] x n / (n - 1)`` (``n x count`` for equal
    counts, so busbw is ``collective alltoall``'s). The diagonal, a rank's copy to itself, is not
    timed, so it does not count either. [bytes]

    >>> import numpy as np
    >>> alltoallv_size(np.full((8, 8), 2**20)), alltoallv_size(np.full((8, 8), 2**20) + np.diag([2**30] * 8))
    (8388608, 8388608)
    """
    n = len(matrix)
    if n < 2:
        return 0
    off = matrix.sum(axis=1) - matrix.diagonal()
    return int(round(int(off.max()) * n / (n - 1)))


def _alltoallv(args) -> None:
    from ...engine.fabric import prepare
    from ...engine.nccltests import algbw, algbw_to_busbw
    from ...predict.alltoall import alltoallv

    calibration = calibration_of(args)
    G = prepare(fabric_of(args, args.system), nccl=args.nccl)
    n = len(topo.select_gpus(G.G, args.gpus))
    if n * (n - 1) > args.limit:
        raise too_much(f"an all-to-allv of {n} ranks routes {n * (n - 1)} GPU pairs", n * (n - 1), args.limit,
                       "--limit")
    matrix = read_matrix(args, n)
    e = alltoallv(G, matrix, args.gpus, gpus_per_thread=args.g, calibration=calibration)
    size = alltoallv_size(matrix)
    bw = float(algbw(size, e.time))
    busbw = float(algbw_to_busbw("alltoall", bw, n))  # nccl-tests' alltoall factor, (n - 1) / n
    from ..alltoall_text import alltoallv_table, explain_p2p_estimate

    if args.json:
        data = {"operation": "alltoallv", "gpus": list(e.gpus),
                "rows": [{"size_bytes": size, "time_us": e.time * 1e6, "algbw_gbps": bw / 1e9,
                          "busbw_gbps": busbw / 1e9}],
                "schedule": e.to_records()[0]}
        if args.explain:
            data["explanation"] = explain_p2p_estimate(e)
        print_json(data)
        return
    print(alltoallv_table(e, args.matrix, size, bw, busbw, args.g))
    if args.explain:
        print()
        print(explain_p2p_estimate(e))


ALLTOALLV = Command("alltoallv", "predicted all-to-allv of a send-count matrix: NCCL's grouped sends and receives",
                    _alltoallv_arguments, _alltoallv, epilog=_MATRIX_HELP)
