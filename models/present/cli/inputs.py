"""What a command line names as input: the fabric (``--system`` or ``--topo-file``, joined by
``--nodes``, what-ifs applied), sized against its limits before it is built, the files it reads
(through :mod:`topo.inputs`) and the ``--out`` it may write."""

from __future__ import annotations

import collections

import topo
from topo.errors import DgxTopoError

from .options import MAX_GPUS, UsageError, too_much


def size_spec(spec: str, max_gpus: int) -> tuple:
    """``(parsed spec, one host of it built)``: the GPUs of a system spec counted on one host,
    before any cluster is joined; beyond ``max_gpus``, refused."""
    from topo.registry import parse_system_spec

    parsed = parse_system_spec(spec, max_hosts=max_gpus)  # every host has at least one GPU
    host = topo.build(parsed.system)
    gpus = parsed.hosts * len(topo.gpus(host))
    if gpus > max_gpus:
        raise too_much(f"{spec} has {gpus} GPUs", gpus, max_gpus, "--max-gpus")
    return parsed, host


def _build_sized(spec: str, sized: tuple, limit: int) -> object:
    """The system or cluster of a spec :func:`size_spec` sized: a single system is the host it built
    (``topo.build`` of the spec builds the same), a cluster is joined by ``topo.build``."""
    parsed, host = sized
    return topo.build(spec, max_hosts=limit) if parsed.is_cluster else host


def _build_spec(spec: str, args) -> object:
    """Build a system or cluster after checking its size against ``--max-gpus``."""
    limit = getattr(args, "max_gpus", MAX_GPUS)
    return _build_sized(spec, size_spec(spec, limit), limit)


def read_text(path: str, kind, args) -> str:
    """An input file's text through topo.inputs (regular files or -, sized before reading);
    ``kind``: a key of topo.inputs.INPUT_KINDS, or an InputKind of a reader outside topo."""
    from topo.inputs import read_input

    return read_input(path, kind, limit=getattr(args, "max_input", None))


def _input_paths(args) -> list:
    """Every file the command line names as an input (--topo-file, --calibration, --graph, --matrix, FILE...)."""
    paths = []
    for name in ("file", "files", "topo_file", "calibration", "graph", "matrix"):
        value = getattr(args, name, None)
        paths += value if isinstance(value, list) else [] if value is None else [value]
    if paths.count("-") > 1:
        raise UsageError("standard input (-) can be read once: expected at most one input given as -")
    return paths


def _load_topo_file(path: str, args=None) -> object:
    """The fabric of a JSON or GraphML file written by import or export (told apart by content,
    :func:`models.present.file_kinds.file_kind`)."""
    from ..file_kinds import FileKind, file_kind, misplaced

    text = read_text(path, "fabric", args)
    kind = file_kind(text)
    try:
        if kind in (FileKind.FABRIC_JSON, FileKind.JSON):
            return topo.from_json(text.lstrip("\ufeff \t\r\n"))
        if kind in (FileKind.FABRIC_GRAPHML, FileKind.XML):
            return topo.from_graphml(text.lstrip("\ufeff \t\r\n"))
    except DgxTopoError as error:
        raise type(error)(f"{path}: {error}") from None
    raise UsageError(misplaced(path, kind, "a fabric written by 'dgxtopo import' or 'dgxtopo export' "
                                            "(JSON or GraphML)"))


def _from_topo_file(path: str, args) -> object:
    """A fabric from ``--topo-file``, joined into ``--nodes`` copies; sized against --max-gpus."""
    limit = getattr(args, "max_gpus", MAX_GPUS)
    G = _load_topo_file(path, args)
    gpus = len(topo.gpus(G))
    nodes = getattr(args, "nodes", None)
    total = gpus * (nodes or 1)
    if total > limit:
        what = f"{nodes} x {path}" if nodes else path
        raise too_much(f"{what} has {total} GPUs", total, limit, "--max-gpus")
    host_limit = getattr(args, "max_host_gpus", None)  # the commands that search a host's channels
    per_host = collections.Counter(G.nodes[g]["host"] for g in topo.gpus(G))
    if host_limit is not None and per_host and max(per_host.values()) > host_limit:
        most = max(per_host.values())
        host = min(h for h, count in per_host.items() if count == most)
        raise too_much(f"{path} has {most} GPUs in host {host}", most, host_limit, "--max-host-gpus")
    if nodes is None:
        return G
    return topo.cluster(G, nodes, network=getattr(args, "network", None) or "fat_tree", max_hosts=limit)


def check_cluster_options(args) -> None:
    files = getattr(args, "topo_file", None)
    if getattr(args, "nodes", None) is not None and not files:
        raise UsageError("--nodes N joins copies of a --topo-file fabric: expected --topo-file FILE "
                          "(a cluster of a built-in system is written NxNAME, such as 2xdgx1v)")
    if getattr(args, "network", None) is not None and getattr(args, "nodes", None) is None:
        raise UsageError("--network applies to a cluster: expected --nodes N with it")


def _whatif(G, args):
    """``G`` with the command line's --fail and --degrade applied (models.studies.whatif)."""
    fail, degrade = getattr(args, "fail", None) or (), getattr(args, "degrade", None) or ()
    if not fail and not degrade:  # the what-if modules are imported only for a what-if
        return G
    from ...studies.whatif import apply_failures

    return apply_failures(G, fail, degrade).graph


def fabric_of(args, spec: str | None) -> object:
    """The one system a command runs on: a spec or ``--topo-file`` (exactly one), what-ifs applied."""
    path = getattr(args, "topo_file", None)
    check_cluster_options(args)
    if spec is not None and path is not None:
        raise UsageError("expected either --system SPEC or --topo-file FILE, received both")
    if spec is None and path is None:
        raise UsageError("the following arguments are required: --system SPEC (or --topo-file FILE)")
    G = _from_topo_file(path, args) if path is not None else _build_spec(spec, args)
    return _whatif(G, args)


def fabrics_of(args, specs) -> list:
    """Several systems (``compare``, ``report``): the specs, then each ``--topo-file``."""
    check_cluster_options(args)
    limit = getattr(args, "max_gpus", MAX_GPUS)
    sized = [size_spec(spec, limit) for spec in specs]  # every spec sized before a cluster is joined
    fabrics = ([_build_sized(spec, size, limit) for spec, size in zip(specs, sized)]
               + [_from_topo_file(path, args) for path in args.topo_file])
    if not fabrics:
        raise UsageError("expected at least one system: SPEC or --topo-file FILE")
    return [_whatif(G, args) for G in fabrics]


def calibration_of(args):
    """The ``--calibration`` file read as a :class:`models.studies.calibration.Calibration` (None without one)."""
    path = getattr(args, "calibration", None)
    if path is None:
        return None
    from ...studies.calibration import Calibration

    text = read_text(path, "calibration", args)
    return Calibration.from_json(text, source="standard input" if path == "-" else path)


def measurement_note_of(args) -> str:
    from ..text import measurement_note

    return measurement_note(getattr(args, "g", 1) or 1, getattr(args, "calibration", None))


# The options that name an output file, on every command that has them.
_OUTPUTS = ("out", "trace")


def check_files(args) -> None:
    """The one rule of every command's files, checked by :func:`models.present.cli.core.main` before
    any work: inputs read once, and outputs (--out, --trace) writable, none of them an input and no
    two the same file (:func:`models.present.output.check_output_paths`)."""
    inputs = _input_paths(args)
    outputs = {f"--{name}": getattr(args, name) for name in _OUTPUTS if getattr(args, name, None) is not None}
    if outputs:
        from ..output import check_output_paths
        check_output_paths(outputs, inputs=inputs)