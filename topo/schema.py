"""The fabric schema: one table of node and edge attributes, and the validation that reads it.

A fabric is an ``nx.DiGraph`` with one edge per direction. Parallel physical links between
the same two nodes are merged into one edge per direction whose ``links`` counts them and
whose ``bandwidth`` is their sum. Node ids are short readable strings (``"gpu0"``,
``"nvswitch3"``, ``"mlx5_0"``); code never parses them, it reads ``kind``, ``index`` and
``host``.

:data:`ATTRIBUTES` is the single description of the schema: :func:`validate` checks graphs
against it and :func:`schema_markdown` renders it for docs/fabric-schema.md, so the two cannot drift.

Examples
--------
>>> import networkx as nx
>>> from topo.schema import validate
>>> G = nx.DiGraph()
>>> G.add_node("gpu0", kind="gpu", host=0, index=0, socket=0, model="X", compute_capability=70)
>>> validate(G)
>>> G.add_node("gpu1", kind="gpu", host=0, index=0, socket=0, model="X", compute_capability=70)
>>> validate(G)
Traceback (most recent call last):
...
topo.errors.TopologyError: GPUs 'gpu0' and 'gpu1' on host 0 share index 0: expected a distinct index (CUDA device number) per GPU of a host
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import networkx as nx

from .errors import TopologyError
from .specs import GPUS, LINKS
from .unedited import unedited

__all__ = [
    "Attribute", "ATTRIBUTES", "NODE_KINDS", "EDGE_KINDS",
    "COMPUTE_CAPABILITIES", "MAX_BANDWIDTH", "MAX_LATENCY", "MAX_MEMORY_BANDWIDTH",
    "MAX_GPUS_PER_HOST", "MAX_NUMA_NODES", "MAX_CPUS", "MAX_THREADS_PER_CORE", "MAX_LINKS",
    "MAX_NUMBER", "MAX_TEXT", "text_ok",
    "validate", "validated_gpus", "check_names", "schema_markdown", "gpus", "nodes_of_kind",
]

#: Node kinds a fabric may hold.
NODE_KINDS = ("gpu", "nvswitch", "pcie_switch", "cpu", "nic", "network_switch")
#: Edge kinds a fabric may hold.
EDGE_KINDS = ("nvlink", "pcie", "cpu-to-cpu", "network")

_ALL = "all"

#: Compute capabilities a GPU node may carry: those of :data:`topo.specs.GPUS` and the SM
#: families NCCL has per-architecture code and figures for (60, 61 Pascal; 70 Volta; 75
#: Turing; 80, 86, 89 Ampere / Ada; 90 Hopper; 100, 103 Blackwell; 120 Blackwell client).
#: [U] The family list is the CUDA architecture list NVIDIA/nccl v2.27.7-1 builds for
#: (makefiles/common.mk, NVCC_GENCODE); an unknown value would select no NCCL figure.
COMPUTE_CAPABILITIES = frozenset({spec.compute_capability for spec in GPUS.values()}
                                 | {60, 61, 70, 75, 80, 86, 89, 90, 100, 103, 120})
#: Upper bound of an edge's ``bandwidth``, per direction: 10 TB/s. [B/s] The widest edge of
#: a fabric here is a bundle of links (a leaf's up-links, an NVSwitch trunk); 18 NVLink 5.0
#: links are 0.9 TB/s, so a figure beyond 1e13 B/s is a unit mistake, not hardware.
MAX_BANDWIDTH = 1e13
#: Upper bound of an edge's ``latency``: 1 s. [s] A hop takes nanoseconds to microseconds.
MAX_LATENCY = 1.0
#: Upper bound of a GPU's ``memory_bandwidth``: 100 TB/s. [B/s] B200's HBM3e is 8 TB/s
#: (:data:`topo.specs.GPUS`); beyond 1e14 B/s a figure is a unit mistake.
MAX_MEMORY_BANDWIDTH = 1e14
#: GPUs one host holds, at most: CUDA device numbers (``index``) are 0 to 1023. nvidia-smi
#: prints at most this many device columns (:mod:`topo.io.smi_text`); the largest hosts have 8
#: to 16 GPUs.
MAX_GPUS_PER_HOST = 1024
#: CPU (NUMA) nodes one host holds, at most: ``socket`` and a CPU's ``index`` are 0 to 1023.
#: Linux numbers NUMA nodes below ``MAX_NUMNODES`` = 2^``NODES_SHIFT``, at most 2^10 on x86-64
#: (the kernel's arch/x86/Kconfig, NODES_SHIFT range 1-10) [U for other architectures].
MAX_NUMA_NODES = 1024
#: Logical CPUs one host holds, at most: Linux's largest ``NR_CPUS`` (8192, CONFIG_MAXSMP on
#: x86-64); a socket's ``cores`` is at most that.
MAX_CPUS = 8192
#: Hardware threads per core, at most: 8 (IBM POWER8/9 SMT8; x86 has 2).
MAX_THREADS_PER_CORE = 8
#: Upper bound of ``links`` on an edge and of a switch's ``ports``: 65,536. The largest switch
#: chip here has 144 ports (:data:`topo.specs.NETWORK_SWITCHES`); an imported NVSwitch stands
#: for a plane of every GPU's links, 1,024 GPUs x 64 links at most.
MAX_LINKS = 65536
#: Upper bound of ``host`` and of every other part number (``index`` of a switch or NIC,
#: ``baseboard``, ``nvlink_domain``, ``rail``, ``host_bridge``): 2^24 - 1. The host limit of a
#: cluster is 4,096 by default (:data:`topo.cluster.MAX_HOSTS`), and its network a few hundred
#: thousand parts; a larger number is not a part of a machine that fits in memory.
MAX_NUMBER = 2**24 - 1
#: Longest text attribute, node id or graph name, in characters (a description or what an
#: import inferred is a paragraph; a name is a few words).
MAX_TEXT = 4096


class _Missing:
    """The type of :data:`_MISSING`, an absent attribute's placeholder."""


_MISSING = _Missing()
# Edge kinds of the host layer (the PCIe tree and the links between CPU sockets).
_HOST_LAYER_EDGES = ("pcie", "cpu-to-cpu")


@dataclass(frozen=True, slots=True)
class Attribute:
    """One row of the schema table.

    Attributes
    ----------
    where : str
        ``"node"`` or ``"edge"``.
    applies_to : str
        ``"all"`` or a comma-separated list of the kinds that carry it.
    name : str
    type : type
        ``int``, ``float`` or ``str`` (an ``int`` is accepted where ``float`` is asked).
    unit : str
        ``"-"`` for dimensionless values.
    required : bool
    meaning : str
    """

    where: str
    applies_to: str
    name: str
    type: type
    unit: str
    required: bool
    meaning: str
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False

    def applies(self, kind: str) -> bool:
        return self.applies_to == _ALL or kind in self.applies_to.split(",")

    def in_range(self, value) -> bool:
        """Whether a number is within the attribute's physical range (inclusive)."""
        return ((self.minimum is None or value >= self.minimum) and (not self.positive or value > 0)
                and (self.maximum is None or value <= self.maximum))

    def range_text(self) -> str:
        """The range as the table prints it (``"0 to 1023"``, ``"> 0"``, ``""``)."""
        if self.minimum is None and self.maximum is None:
            return ""
        if self.positive and self.minimum is None:
            return f"> 0, <= {self.maximum:g}" if self.maximum is not None else "> 0"
        def show(x):
            return f"{x:g}" if isinstance(x, float) else str(x)
        if self.maximum is None:
            return f">= {show(self.minimum)}"
        if self.minimum is None:
            return f"<= {show(self.maximum)}"
        return f"{show(self.minimum)} to {show(self.maximum)}"


#: The schema. Validation and documentation both read this table.
ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("node", _ALL, "kind", str, "-", True, "one of " + ", ".join(NODE_KINDS)),
    Attribute("node", _ALL, "host", int, "-", True,
              "host (system) number, 0 in a single system; -1 for the network between hosts",
              -1, MAX_NUMBER),
    Attribute("node", "gpu", "index", int, "-", True,
              "CUDA / nvidia-smi device number, unique per host", 0, MAX_GPUS_PER_HOST - 1),
    Attribute("node", "nvswitch,pcie_switch,cpu,nic,network_switch", "index", int, "-", True,
              "number of the part among its kind on its host (for a CPU: its socket)", 0, MAX_NUMBER),
    Attribute("node", "gpu,pcie_switch,nic", "socket", int, "-", True,
              "CPU socket / NUMA node the part hangs off", 0, MAX_NUMA_NODES - 1),
    Attribute("node", "gpu", "model", str, "-", True, "GPU model as nvidia-smi names it"),
    Attribute("node", "gpu", "compute_capability", int, "-", True,
              "SM version (60 Pascal, 70 Volta, ...), one of topo.schema.COMPUTE_CAPABILITIES; "
              "selects NCCL's per-link figures"),
    Attribute("node", "gpu", "memory_bandwidth", float, "B/s", False,
              "device memory bandwidth, the ceiling of a device-local copy",
              maximum=MAX_MEMORY_BANDWIDTH, positive=True),
    Attribute("node", "gpu,nvswitch", "baseboard", int, "-", False,
              "GPU baseboard the part sits on (DGX-2 has two)", 0, MAX_NUMBER),
    Attribute("node", "nvswitch,network_switch", "ports", int, "-", True,
              "ports of the switch (NVLink ports of an NVSwitch chip)", 1, MAX_LINKS),
    Attribute("node", "network_switch", "tier", str, "-", True,
              "place in the network: leaf (NICs attach), spine (joins leaves), core (joins the "
              "spines of different blocks), tier4, ... (topo.cluster.TIERS)"),
    Attribute("node", "network_switch", "rail", int, "-", False,
              "rail (position of the NIC in its host) whose NICs the leaf joins, in rail and "
              "rail_only networks; on every switch of a rail_only network", 0, MAX_NUMBER),
    Attribute("node", "gpu,nvswitch", "nvlink_domain", int, "-", False,
              "NVLink domain in a cluster: GPUs that share it reach each other over NVLink, "
              "across hosts in an NVL72 rack; others only over the network (absent: one system)",
              0, MAX_NUMBER),
    Attribute("node", "cpu,pcie_switch,nvswitch,nic,network_switch", "model", str, "-", False,
              "part model"),
    Attribute("node", "cpu", "cores", int, "-", True, "physical cores of the socket", 1, MAX_CPUS),
    Attribute("node", "cpu", "threads_per_core", int, "-", True,
              "hardware threads per core; with cores, gives nvidia-smi's CPU affinity", 1,
              MAX_THREADS_PER_CORE),
    Attribute("node", "nic", "name", str, "-", True, "device name as nvidia-smi shows it (mlx5_0)"),
    Attribute("node", "nic", "port_bandwidth", float, "B/s", False,
              "line rate of the NIC's network port, per direction (absent: not a compute NIC)",
              maximum=MAX_BANDWIDTH, positive=True),
    Attribute("node", "nic", "port_link", str, "-", False,
              "key in topo.specs.LINKS of the NIC's network port (ib_edr, ...)"),
    Attribute("edge", _ALL, "kind", str, "-", True, "one of " + ", ".join(EDGE_KINDS)),
    Attribute("edge", _ALL, "links", int, "-", True,
              "physical links merged into this edge", 1, MAX_LINKS),
    Attribute("edge", _ALL, "bandwidth", float, "B/s", True,
              "capacity in this direction, summed over links; authoritative: models read it and "
              "what-ifs scale it, so it need not be links x the catalogue's line rate (a what-if may "
              "slow a link down to any positive figure; models treat a link too slow to use as NCCL does)",
              maximum=MAX_BANDWIDTH, positive=True),
    Attribute("edge", _ALL, "latency", float, "s", True,
              "one-way latency of the hop", 0, MAX_LATENCY),
    Attribute("edge", _ALL, "link", str, "-", True,
              "key of the link technology in topo.specs.LINKS (nvlink2, pcie3_x16, ...)"),
    Attribute("edge", "pcie", "host_bridge", int, "-", False,
              "on a PCIe edge at a CPU: the CPU's PCIe host bridge of that root port "
              "(two root ports on different bridges make nvidia-smi's NODE, on one bridge PHB)",
              0, MAX_NUMBER),
)

# Attributes whose value must be the same on both directions of a link (``links`` and
# ``bandwidth`` may differ: a what-if may degrade one direction only).
_SYMMETRIC_EDGE_ATTRIBUTES = ("kind", "link", "latency")


def _finite(value) -> bool:
    """A number is finite: every int is (``math.isfinite`` would overflow on a 400-digit one)."""
    return isinstance(value, int) or math.isfinite(value)


def _type_ok(value, expected: type) -> bool:
    if isinstance(value, bool):
        return False
    if expected is float:
        return isinstance(value, (int, float))
    return isinstance(value, expected)


# The rows that apply to each (scope, kind), read once from ATTRIBUTES: validation runs over
# every node and edge of fabrics with hundreds of thousands of them.
_APPLICABLE = MappingProxyType({
    (scope, kind): tuple(a for a in ATTRIBUTES if a.where == scope and a.name != "kind" and a.applies(kind))
    for scope, kinds in (("node", NODE_KINDS), ("edge", EDGE_KINDS)) for kind in kinds
})


def _label(scope: str, item) -> str:
    return f"node {item!r}" if scope == "node" else f"edge ({item[0]!r}, {item[1]!r})"


def _show(value) -> str:
    """``repr(value)``, cut to a readable length (a 400-digit integer, a long text)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def text_ok(text: str) -> bool:
    """Whether a name may be printed: printable characters only (no terminal escape, no control
    character, no line break) and at most :data:`MAX_TEXT` of them."""
    return len(text) <= MAX_TEXT and text.isprintable()


def _check_attributes(item, kind: str, data: dict, scope: str) -> None:
    """Check the attributes of one node or edge (``item``: node id, or ``(u, v)``)."""
    for attribute in _APPLICABLE[scope, kind]:
        if attribute.name not in data:
            if attribute.required:
                raise TopologyError(
                    f"{_label(scope, item)}: a {kind} {scope} needs attribute {attribute.name!r} "
                    f"({attribute.meaning}), received attributes {sorted(data)}")
            continue
        value = data[attribute.name]
        if not _type_ok(value, attribute.type):
            raise TopologyError(
                f"{_label(scope, item)}: attribute {attribute.name!r} must be {attribute.type.__name__} "
                f"({attribute.meaning}), received {_show(value)}")
        if attribute.type is float and not _finite(value):
            raise TopologyError(
                f"{_label(scope, item)}: attribute {attribute.name!r} must be finite, received {value!r}")
        if attribute.type is str and not text_ok(value):
            raise TopologyError(
                f"{_label(scope, item)}: attribute {attribute.name!r} must be printable text of at most "
                f"{MAX_TEXT} characters (no control character or terminal escape), received {_show(value)}")
        if attribute.type is not str and not attribute.in_range(value):
            raise TopologyError(
                f"{_label(scope, item)}: attribute {attribute.name!r} must be {attribute.range_text()}"
                f"{'' if attribute.unit == '-' else ' ' + attribute.unit} ({attribute.meaning}), "
                f"received {_show(value)}")


def _check_edge(u, v, data: dict) -> None:
    """Every per-edge rule, for the first edge of each distinct attribute combination."""
    where = f"edge ({u!r}, {v!r})"
    kind = data.get("kind")
    if kind not in EDGE_KINDS:
        raise TopologyError(
            f"{where}: unknown kind {kind!r}, expected one of {', '.join(EDGE_KINDS)}")
    links, bandwidth, latency = data.get("links"), data.get("bandwidth"), data.get("latency")
    if _type_ok(links, int) and not 1 <= links <= MAX_LINKS:
        raise TopologyError(f"{where}: links must be at least 1 and at most {MAX_LINKS}, received "
                            f"{_show(links)}")
    if _type_ok(bandwidth, float) and _finite(bandwidth) and not 0 < bandwidth <= MAX_BANDWIDTH:
        raise TopologyError(
            f"{where}: bandwidth must be positive and at most {MAX_BANDWIDTH:.0e} B/s per direction "
            f"(a physical edge), received {_show(bandwidth)}")
    if _type_ok(latency, float) and _finite(latency) and not 0 <= latency <= MAX_LATENCY:
        raise TopologyError(f"{where}: latency must be >= 0 s and at most {MAX_LATENCY:g} s, "
                            f"received {_show(latency)}")
    _check_attributes((u, v), kind, data, "edge")
    link = data["link"]
    if link not in LINKS:
        raise TopologyError(
            f"{where}: link {link!r} is not a link technology: expected a key of topo.specs.LINKS "
            f"({', '.join(LINKS)})")
    if LINKS[link].kind != kind:
        raise TopologyError(f"{where}: link {link!r} makes {LINKS[link].kind} edges, expected a link "
                            f"technology of kind {kind!r}")


def _check_edges(G, succ: dict) -> None:
    """Per-edge rules and the reverse edge of every edge, in one pass over the adjacency.

    The attribute rules run once per distinct combination of attribute values (and types):
    a 1,024-host cluster has 306,000 edges but a few dozen combinations.
    """
    checked = set()
    for u, neighbours in succ.items():
        if u in neighbours:
            raise TopologyError(f"edge ({u!r}, {u!r}) is a self loop: expected edges between "
                                f"two different nodes")
        for v, data in neighbours.items():
            get = data.get
            kind = get("kind")
            link = get("link")
            latency = get("latency")
            links = get("links")
            bandwidth = get("bandwidth")
            bridge = get("host_bridge", _MISSING)
            key = (kind, link, latency.__class__, latency, links.__class__, links,
                   bandwidth.__class__, bandwidth, bridge.__class__, bridge)
            if key not in checked:
                _check_edge(u, v, data)
                checked.add(key)
            back = succ[v].get(u)
            if back is None:
                raise TopologyError(
                    f"edge ({u!r}, {v!r}) has no reverse edge ({v!r}, {u!r}): expected one edge "
                    f"per direction")
            if back.get("kind") != kind or back.get("link") != link or back.get("latency") != latency:
                for name in _SYMMETRIC_EDGE_ATTRIBUTES:
                    if data.get(name) != back.get(name):
                        raise TopologyError(
                            f"edge ({u!r}, {v!r}): {name} differs between directions "
                            f"({data.get(name)!r} vs {back.get(name)!r} on ({v!r}, {u!r})): "
                            f"expected a link to be the same both ways")


def _check_nodes(G) -> None:
    """Per-node rules, attribute by attribute over the nodes of each kind.

    A value's type decides whether it passes (and ``math.isfinite`` for floats), so each
    attribute is checked on one value per distinct type; the first offending node is then
    checked on its own for the message.
    """
    groups: dict = {}
    for node, data in G.nodes(data=True):
        kind = data.get("kind")
        members = groups.get(kind)
        if members is None:
            if kind not in NODE_KINDS:
                raise TopologyError(
                    f"node {node!r}: unknown kind {kind!r}, expected one of {', '.join(NODE_KINDS)}")
            members = groups[kind] = []
        members.append((node, data))
    for kind, members in groups.items():
        for attribute in _APPLICABLE["node", kind]:
            name = attribute.name
            values = [data.get(name, _MISSING) for _, data in members]
            classes = set(map(type, values))
            missing = _Missing in classes
            # One value of each type decides for all of that type.
            representatives = [next(v for v in values if type(v) is cls) for cls in classes
                               if cls is not _Missing]
            bad = missing and attribute.required
            bad = bad or any(not _type_ok(value, attribute.type) for value in representatives)
            present = [v for v in values if v is not _MISSING] if missing else values
            if not bad and attribute.type is float:
                bad = not all(map(_finite, present))
            if not bad and attribute.type is str:
                bad = not all(map(text_ok, set(present)))
            if not bad and present and attribute.type is not str and (
                    attribute.minimum is not None or attribute.maximum is not None):
                bad = not (attribute.in_range(min(present)) and attribute.in_range(max(present)))
            if not bad and attribute.name == "compute_capability":
                bad = not set(values) <= COMPUTE_CAPABILITIES
            if bad:
                for node, data in members:
                    _check_attributes(node, kind, data, "node")
                    if kind == "gpu" and data["compute_capability"] not in COMPUTE_CAPABILITIES:
                        raise TopologyError(
                            f"node {node!r}: compute capability {data['compute_capability']!r} is "
                            f"unknown: expected one of "
                            f"{', '.join(map(str, sorted(COMPUTE_CAPABILITIES)))}")


def check_names(G) -> None:
    """Node ids and the graph's text attributes (name, system, ...) are printable: a name with
    a terminal escape would act on the terminal of whoever prints it. Part of :func:`validate`,
    and all of it that :func:`topo.cluster.join_hosts` needs on the copies of a valid template.

    Raises
    ------
    TopologyError
        Naming the node id or graph attribute, what was expected and what was received.
    """
    bad = next((n for n in G if isinstance(n, str) and not text_ok(n)), None)
    if bad is not None:
        raise TopologyError(f"node id {_show(bad)}: expected printable text of at most {MAX_TEXT} "
                            f"characters (no control character or terminal escape)")
    for key, value in G.graph.items():
        if isinstance(value, str) and not text_ok(value):
            raise TopologyError(f"graph attribute {key!r} is {_show(value)}: expected printable text of "
                                f"at most {MAX_TEXT} characters (no control character or terminal escape)")


def _reached(succ: dict, start, allowed=None) -> set:
    """Nodes reachable from ``start``; only through nodes of ``allowed`` when given."""
    seen = {start}
    stack = [start]
    while stack:
        x = stack.pop()
        if allowed is not None and x != start and x not in allowed:
            continue
        for y in succ[x]:
            if y not in seen:
                seen.add(y)
                stack.append(y)
    return seen


def _check_host_layer(G, succ: dict, gpu_nodes: list) -> None:
    """Every GPU of a host with CPUs reaches a CPU over PCIe, all of them the same PCIe tree;
    the GPUs of a host without CPUs are connected within the host."""
    host_of = G.nodes.data("host")
    kind_of = G.nodes.data("kind")
    bridges = {n for n, k in kind_of if k in ("cpu", "pcie_switch")}
    # Components of the host layer: CPUs and PCIe switches over PCIe and socket-to-socket edges.
    component: dict = {}
    for start in bridges:
        if start in component:
            continue
        stack = [start]
        component[start] = start
        while stack:
            x = stack.pop()
            for y, data in succ[x].items():
                if y in bridges and y not in component and data.get("kind") in _HOST_LAYER_EDGES:
                    component[y] = start
                    stack.append(y)
    with_cpu = {component[n] for n in bridges if kind_of[n] == "cpu"}
    hosts_with_cpu = {host_of[n] for n in bridges if kind_of[n] == "cpu"}
    tree_of_host: dict = {}
    loose: dict = {}
    for gpu in gpu_nodes:
        host = host_of[gpu]
        if host not in hosts_with_cpu:
            loose.setdefault(host, []).append(gpu)
            continue
        trees = {component[y] for y, data in succ[gpu].items()
                 if y in bridges and data.get("kind") == "pcie" and component[y] in with_cpu}
        if not trees:
            raise TopologyError(
                f"GPU {gpu!r} reaches no CPU over PCIe: expected a PCIe path (through PCIe "
                f"switches) to a CPU of host {host}, which routes between GPUs without NVLink need")
        tree = tree_of_host.setdefault(host, (min(trees, key=str), gpu))
        if tree[0] not in trees:
            raise TopologyError(
                f"GPUs {tree[1]!r} and {gpu!r} of host {host} hang off CPUs that are not joined "
                f"(no PCIe or socket-to-socket path between them): expected one PCIe tree per host")
    for host, members in loose.items():
        same_host = {n for n, h in host_of if h == host}
        reached = _reached(succ, members[0], same_host)
        for gpu in members:
            if gpu not in reached:
                raise TopologyError(
                    f"GPU {gpu!r} cannot be reached from GPU {members[0]!r} within host {host}: "
                    f"expected the GPUs of one host to be connected")


def validate(G: nx.DiGraph) -> None:
    """Check that ``G`` is a well-formed fabric; raise :class:`TopologyError` if not.

    Checks, in order:

    * ``G`` is an ``nx.DiGraph`` (not a multigraph);
    * node ids and the graph's text attributes are printable (:func:`text_ok`: no control
      character or terminal escape, at most :data:`MAX_TEXT` characters);
    * every node has a known ``kind`` and the attributes :data:`ATTRIBUTES` requires for it,
      with the right types, every number in the physical range the table gives (a GPU's
      ``index`` 0 to 1023, a ``socket`` 0 to 1023, ``cores`` 1 to 8192, ...) and every text
      printable; a GPU's ``compute_capability`` is one of :data:`COMPUTE_CAPABILITIES`;
    * every edge joins two different nodes (no self loop), has a known ``kind``, a ``link``
      that is a key of :data:`topo.specs.LINKS`, ``1 <= links <= MAX_LINKS``,
      ``0 < bandwidth <= MAX_BANDWIDTH`` and ``0 <= latency <= MAX_LATENCY``;
    * every edge has its reverse, with the same kind, link technology and latency (``links``
      and ``bandwidth`` may differ: a what-if may degrade one direction);
    * every GPU has an index that no other GPU of its host has; there is at least one GPU;
    * on a host with CPUs, every GPU reaches a CPU over PCIe through PCIe switches, and all
      GPUs of the host hang off one PCIe tree (CPUs joined by socket-to-socket links), as the
      routers need for GPU pairs without NVLink; on a host without CPUs (an NVLink-only
      abstraction) the GPUs of the host are connected within the host;
    * every GPU reaches every other GPU.

    ``bandwidth`` is authoritative: it is *not* required to equal ``links`` x the catalogue's
    per-link rate, because what-ifs (:mod:`topo.transform`) scale it; every model reads it.

    A graph a built-in builder or :func:`topo.build` made and nobody edited since
    (:func:`topo.unedited.unedited`) is valid by construction, and passes unchecked.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric.

    Raises
    ------
    TopologyError
        With a message naming the node or edge, what was expected and what was received.
    """
    validated_gpus(G)


def validated_gpus(G: nx.DiGraph) -> list:
    """:func:`validate` ``G`` and return :func:`gpus` ``(G)``, which validation lists anyway
    (for a caller that needs both, such as :class:`models.engine.fabric.PreparedFabric`).

    Raises
    ------
    TopologyError
        As :func:`validate`.

    Examples
    --------
    >>> from topo import dgx1v
    >>> validated_gpus(dgx1v())[-2:]
    ['gpu6', 'gpu7']
    """
    if unedited(G):  # built valid and not edited since (topo.unedited)
        return gpus(G)
    if not isinstance(G, nx.DiGraph) or G.is_multigraph():
        raise TopologyError(
            f"a fabric must be a networkx.DiGraph with one edge per direction, "
            f"received {type(G).__name__}")
    check_names(G)
    _check_nodes(G)
    succ = dict(G.adjacency())
    _check_edges(G, succ)
    gpu_nodes = gpus(G)
    if not gpu_nodes:
        raise TopologyError(f"a fabric needs at least one GPU, received {G.number_of_nodes()} nodes and none of kind 'gpu'")
    owner: dict[tuple[int, int], object] = {}
    for node in gpu_nodes:
        key = (G.nodes[node]["host"], G.nodes[node]["index"])
        if key in owner:
            raise TopologyError(
                f"GPUs {owner[key]!r} and {node!r} on host {key[0]} share index {key[1]}: "
                f"expected a distinct index (CUDA device number) per GPU of a host")
        owner[key] = node
    _check_host_layer(G, succ, gpu_nodes)
    reached = _reached(succ, gpu_nodes[0])
    for node in gpu_nodes:
        if node not in reached:
            raise TopologyError(
                f"GPU {node!r} cannot be reached from GPU {gpu_nodes[0]!r}: expected every GPU "
                f"to reach every other GPU over the fabric (disconnected fabric)")
    return gpu_nodes


def nodes_of_kind(G: nx.DiGraph, kind: str) -> list:
    """Nodes of one kind, ordered by (host, index).

    Parameters
    ----------
    G : networkx.DiGraph
    kind : str
        One of :data:`NODE_KINDS`.

    Returns
    -------
    list
        Node ids.
    """
    found = [(data.get("host", 0), data.get("index", 0), str(n), i, n)
             for i, (n, data) in enumerate(G.nodes(data=True)) if data.get("kind") == kind]
    found.sort()  # the node's position i breaks ties as a stable sort would
    return [item[-1] for item in found]


def gpus(G: nx.DiGraph) -> list:
    """GPU nodes ordered by (host, index), the order every matrix of dgx-topo uses.

    >>> from topo import dgx1v
    >>> gpus(dgx1v())[:3]
    ['gpu0', 'gpu1', 'gpu2']
    """
    return nodes_of_kind(G, "gpu")


def schema_markdown() -> str:
    """The schema table as Markdown (docs/fabric-schema.md embeds exactly this text).

    Returns
    -------
    str
    """
    lines = ["| where | applies to | attribute | type | unit | required | range | meaning |",
             "|---|---|---|---|---|---|---|---|"]
    for a in ATTRIBUTES:
        lines.append(f"| {a.where} | {a.applies_to} | `{a.name}` | {a.type.__name__} | {a.unit} | "
                     f"{'yes' if a.required else 'no'} | {a.range_text()} | {a.meaning} |")
    return "\n".join(lines)
