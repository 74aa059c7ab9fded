"""NCCL's graph dump (``NCCL_GRAPH_DUMP_FILE``): the channels its search found, read as NCCL writes them.

NCCL writes its search results with ``ncclTopoGetXmlFromGraphs`` (NVIDIA/nccl v2.27.7-1
src/graph/search.cc; the same file ``NCCL_GRAPH_FILE`` loads back)::

    <graphs version="1">
      <graph id="0" pattern="4" crossnic="0" nchannels="12" speedintra="30" speedinter="30"
             latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="1">
        <channel>
          <net dev="0"/>          (only when the graph uses the network: the NIC it enters by)
          <gpu dev="0"/> ...      (one per GPU of the node, in the channel's order)
          <net dev="1"/>          (and the NIC it leaves by)
        </channel>
        ...

``id``: 0 ring, 1 tree, 2 collnet chain, 3 NVLS, 4 collnet direct; ``pattern`` (src/include/graph.h):
1 balanced tree, 2 split tree, 3 tree, 4 ring, 5 NVLS, 6 collnet direct; ``speedintra`` and
``speedinter`` are ``bwIntra`` and ``bwInter`` in GB/s; ``typeintra``/``typeinter`` path-type names.
A ``dev`` is ``NCCL_TOPO_ID(systemId, localId)``, the system id in the bits above 56
(src/graph/topo.h ``NCCL_TOPO_ID_SYSTEM_ID``, ``NCCL_TOPO_ID_LOCAL_ID``; non-zero only for the
hosts of a multi-node NVLink domain), read in decimal or hexadecimal as NCCL's ``strtol(.., 0)``
does.

:func:`parse_graph_dump` reads the text with defusedxml (no DTDs, no entities) and refuses what
NCCL would not have written with :class:`GraphDumpError` naming the element: an unknown element,
a graph id or pattern NCCL has not, a ``nchannels`` that is not the number of ``<channel>``
elements, a GPU listed twice in a channel, a ``<net>`` between GPUs. :func:`read_graph_dump`
reads a file by the input rules (:mod:`topo.inputs`: regular files or ``-``, sized first,
:data:`GRAPH_DUMP_INPUT`).

Examples
--------
>>> dump = parse_graph_dump('<graphs version="1"><graph id="0" pattern="4" crossnic="0" '
...     'nchannels="1" speedintra="40" speedinter="40" latencyinter="0" typeintra="NVL" '
...     'typeinter="PIX" samechannels="1"><channel><gpu dev="0"/><gpu dev="1"/></channel>'
...     '</graph></graphs>')
>>> g = dump.graphs[0]
>>> g.name, g.pattern, g.nchannels, g.bw_intra / 1e9, [c.devs for c in g.channels]
('ring', 'ring', 1, 40.0, [(0, 1)])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

from topo.errors import DgxTopoError
from topo.inputs import InputKind, read_input
from topo.units import GB, MiB

from ..results import tidy_records
from ..routes import PathType

__all__ = ["GraphDumpError", "DumpChannel", "DumpGraph", "GraphDump", "GRAPH_DUMP_INPUT", "GRAPH_IDS",
           "GRAPH_PATTERNS", "parse_graph_dump", "read_graph_dump"]

#: The input kind of :func:`topo.inputs.read_input`. A dump of 32 channels of 72 GPUs in five
#: graphs is about 300 KB; 16 MiB leaves room and bounds the parse. ``limit=`` (the CLI's
#: ``--max-input``) raises it.
GRAPH_DUMP_INPUT = InputKind("nccl-graph", "NCCL graph XML", 16 * MiB)

#: The graphs NCCL searches, by ``id`` (src/init.cc: ring, tree, collnet chain, NVLS, collnet
#: direct, each searched with its pattern).
GRAPH_IDS = MappingProxyType({0: "ring", 1: "tree", 2: "collnet_chain", 3: "nvls", 4: "collnet_direct"})

#: ``pattern`` codes (NVIDIA/nccl src/include/graph.h ``NCCL_TOPO_PATTERN_*``).
GRAPH_PATTERNS = MappingProxyType({1: "balanced_tree", 2: "split_tree", 3: "tree", 4: "ring", 5: "nvls",
                                   6: "collnet_direct"})

#: NCCL_GRAPH_XML_VERSION (src/graph/search.cc).
GRAPH_XML_VERSION = 1

# Channels in one graph and GPUs in one channel, at most: MAXCHANNELS is 32 to 64 across the
# releases (src/include/device.h) and a node holds at most a few hundred GPUs (an NVL576 domain
# fused into one node); the bounds keep a hostile file's work small.
_MAX_CHANNELS = 256
_MAX_CHANNEL_GPUS = 4096
_SYSTEM_SHIFT = 56  # NCCL_TOPO_ID_SYSTEM_ID(id) = id >> 56 (src/graph/topo.h)
_INT_MAX = 2**63 - 1


class GraphDumpError(DgxTopoError):
    """An NCCL graph dump that cannot be read: malformed XML, or elements and attributes NCCL
    does not write. The message names the element."""


@dataclass(frozen=True, slots=True)
class DumpChannel:
    """One ``<channel>`` of a graph.

    Attributes
    ----------
    gpus : tuple of (int, int)
        ``(system id, local id)`` of each ``<gpu dev>``, in the channel's order.
    net_in, net_out : int or None
        The ``dev`` of the NIC the channel enters the node by and leaves it by (None on one node).
    """

    gpus: tuple
    net_in: int | None = None
    net_out: int | None = None

    @property
    def devs(self) -> tuple:
        """The GPUs' local ids (CUDA device indices on their host), in order."""
        return tuple(local for _, local in self.gpus)


@dataclass(frozen=True, slots=True)
class DumpGraph:
    """One ``<graph>``: NCCL's ``ncclTopoGraph`` as dumped.

    Attributes
    ----------
    id : int
        NCCL's graph id (:data:`GRAPH_IDS`).
    pattern : str
        Of :data:`GRAPH_PATTERNS`.
    crossnic : int
    bw_intra, bw_inter : float
        ``speedintra``, ``speedinter``. [B/s]
    latency_inter : float
        ``latencyinter`` as written (NCCL's microseconds). [us]
    type_intra, type_inter : str
        Path-type names (``NVL``, ``PIX``).
    same_channels : bool
    channels : tuple of DumpChannel
    """

    id: int
    pattern: str
    crossnic: int
    bw_intra: float
    bw_inter: float
    latency_inter: float
    type_intra: str
    type_inter: str
    same_channels: bool
    channels: tuple

    @property
    def name(self) -> str:
        """``ring``, ``tree``, ``collnet_chain``, ``nvls`` or ``collnet_direct``."""
        return GRAPH_IDS[self.id]

    @property
    def nchannels(self) -> int:
        """NCCL's ``graph->nChannels`` (before ``ncclTopoPostset`` doubles ``comm->nChannels``)."""
        return len(self.channels)


@dataclass(frozen=True, slots=True)
class GraphDump:
    """What :func:`parse_graph_dump` returns: the graphs in file order."""

    graphs: tuple

    def graph(self, name: str) -> DumpGraph | None:
        """The graph of that name (``ring``, ``tree``, ``nvls``, ...), or None."""
        return next((g for g in self.graphs if g.name == name), None)

    def to_records(self) -> list:
        """One row per channel: graph, channel, the GPUs' local ids, the NICs."""
        rows = []
        for g in self.graphs:
            for c, channel in enumerate(g.channels):
                rows += tidy_records({"graph": g.name, "pattern": g.pattern, "channel": c,
                                      "gpus": " ".join(map(str, channel.devs)),
                                      "net_in": -1 if channel.net_in is None else channel.net_in,
                                      "net_out": -1 if channel.net_out is None else channel.net_out})
        return rows


def _fail(where: str, message: str) -> GraphDumpError:
    return GraphDumpError(f"NCCL graph XML, {where}: {message}")


def _int(element, where, name, *, minimum=0, required=True):
    value = element.get(name)
    if value is None or not value.strip():
        if required:
            raise _fail(where, f"missing attribute {name!r}")
        return None
    try:
        number = int(value.strip(), 0)  # NCCL reads longs with strtol(.., 0): decimal or 0x hex
    except ValueError:
        raise _fail(where, f"{name}={value!r}, expected a whole number") from None
    if not minimum <= number <= _INT_MAX:
        raise _fail(where, f"{name}={value!r}, expected a whole number from {minimum} to {_INT_MAX}")
    return number


def _float(element, where, name) -> float:
    value = element.get(name)
    if value is None or not value.strip():
        raise _fail(where, f"missing attribute {name!r}")
    try:
        number = float(value.strip())
    except ValueError:
        raise _fail(where, f"{name}={value!r}, expected a number") from None
    if not math.isfinite(number) or number < 0 or number > 1e9:
        raise _fail(where, f"{name}={value!r}, expected a finite number of at least 0")
    return number


def _path_type(element, where, name) -> str:
    value = (element.get(name) or "").strip()
    if value not in PathType.__members__:
        raise _fail(where, f"{name}={value!r}, expected a path type, one of {', '.join(PathType.__members__)}")
    return value


def _channel(element, where) -> DumpChannel:
    if element.attrib:
        raise _fail(where, f"unexpected attribute(s) {', '.join(sorted(element.attrib))}")
    children = list(element)
    gpus: list = []
    nets = []
    for k, child in enumerate(children):
        at = f"{where} <{child.tag}> {k}"
        if child.tag == "gpu":
            dev = _int(child, at, "dev")
            _int(child, at, "rank", required=False)
            gpu = (dev >> _SYSTEM_SHIFT, dev & ((1 << _SYSTEM_SHIFT) - 1))
            if gpu in gpus:
                raise _fail(at, f"dev={child.get('dev')!r} is listed twice in one channel")
            gpus.append(gpu)
            if len(gpus) > _MAX_CHANNEL_GPUS:
                raise _fail(where, f"more than {_MAX_CHANNEL_GPUS} GPUs in one channel")
        elif child.tag == "net":
            if k not in (0, len(children) - 1):
                raise _fail(at, "a <net> stands first (the NIC a channel enters by) or last (the one it "
                                "leaves by), expected no <net> between GPUs")
            nets.append(_int(child, at, "dev"))
        else:
            raise _fail(at, "unknown element, expected <gpu> or <net>")
    if not gpus:
        raise _fail(where, "no <gpu>: expected the channel's GPUs in order")
    if len(nets) == 1:
        raise _fail(where, "one <net>: expected none (one node) or two, the NIC a channel enters by and the "
                           "one it leaves by")
    return DumpChannel(tuple(gpus), *(nets or (None, None)))


def _graph(element, where) -> DumpGraph:
    graph_id = _int(element, where, "id")
    if graph_id not in GRAPH_IDS:
        raise _fail(where, f"id={element.get('id')!r}, expected one of "
                           + ", ".join(f"{k} ({v})" for k, v in GRAPH_IDS.items()))
    where = f"<graph id={graph_id}>"
    pattern = _int(element, where, "pattern")
    if pattern not in GRAPH_PATTERNS:
        raise _fail(where, f"pattern={element.get('pattern')!r}, expected one of "
                           + ", ".join(f"{k} ({v})" for k, v in GRAPH_PATTERNS.items()))
    nchannels = _int(element, where, "nchannels")
    same = _int(element, where, "samechannels")
    if same not in (0, 1):
        raise _fail(where, f"samechannels={element.get('samechannels')!r}, expected 0 or 1")
    channels = []
    for k, child in enumerate(element):
        if child.tag != "channel":
            raise _fail(f"{where} <{child.tag}>", "unknown element, expected <channel>")
        if k >= _MAX_CHANNELS:
            raise _fail(where, f"more than {_MAX_CHANNELS} channels")
        channels.append(_channel(child, f"{where} <channel> {k}"))
    if nchannels != len(channels):
        raise _fail(where, f"nchannels={nchannels} but {len(channels)} <channel> element(s): expected as many")
    return DumpGraph(graph_id, GRAPH_PATTERNS[pattern], _int(element, where, "crossnic"),
                     _float(element, where, "speedintra") * GB, _float(element, where, "speedinter") * GB,
                     _float(element, where, "latencyinter"), _path_type(element, where, "typeintra"),
                     _path_type(element, where, "typeinter"), bool(same), tuple(channels))


def parse_graph_dump(text: str | bytes) -> GraphDump:
    """NCCL's graph XML (``NCCL_GRAPH_DUMP_FILE``) as a :class:`GraphDump`.

    Raises
    ------
    GraphDumpError
        For text that is not well-formed XML or not a graph dump as NCCL writes it; the message
        names the element.
    """
    from topo.io.common import TopologyImportError, parse_xml

    try:
        root = parse_xml(text, what="NCCL graph XML")
    except TopologyImportError as error:
        raise GraphDumpError(str(error)) from None
    if root.tag != "graphs":
        raise _fail(f"<{root.tag}>", "expected the root element <graphs> (NCCL_GRAPH_DUMP_FILE); a <system> "
                                     "is NCCL's topology (dgxtopo import reads it)")
    version = _int(root, "<graphs>", "version", required=False)
    if version not in (None, GRAPH_XML_VERSION):
        raise _fail("<graphs>", f"version={root.get('version')!r}, expected {GRAPH_XML_VERSION}")
    graphs = []
    for child in root:
        if child.tag != "graph":
            raise _fail(f"<{child.tag}>", "unknown element, expected <graph>")
        graphs.append(_graph(child, f"<graph> {len(graphs)}"))
    if not graphs:
        raise _fail("<graphs>", "no <graph>: expected NCCL's searched graphs")
    ids = [g.id for g in graphs]
    if len(set(ids)) != len(ids):
        raise _fail("<graphs>", f"graph ids {ids}: expected each graph once")
    return GraphDump(tuple(graphs))


def read_graph_dump(path: str, *, limit: int | None = None) -> GraphDump:
    """:func:`parse_graph_dump` of a file (or ``-``) read by the input rules
    (:data:`GRAPH_DUMP_INPUT`; ``limit`` raises its size limit)."""
    return parse_graph_dump(read_input(path, GRAPH_DUMP_INPUT, limit=limit))
