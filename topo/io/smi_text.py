"""Import the text ``nvidia-smi topo -m`` prints: rebuild the machine's fabric.

:func:`from_nvidia_smi` reads the printout of any machine and returns a validated fabric
(schema in :mod:`topo.schema`) in the machine's own GPU numbering; it raises
:class:`~topo.io.common.TopologyImportError` naming the line for text it does not understand
or that contradicts itself.

What ``nvidia-smi topo -m`` cannot say comes from options, else from the known system of the
GPU model (:mod:`topo.io.known`: the built-in DGX of that GPU, as far as it agrees with the
text; ``like=`` names another or none), else from defaults by NVLink generation:

=====================  ==================================================================
GPU model              ``gpu=`` (required), a :data:`topo.specs.GPUS` key or the name
                       nvidia-smi prints (:func:`~topo.io.common.gpu_model`); gives the
                       NVLink generation and the known system
NVSwitches             ``nvswitch=``; by default present exactly when every GPU pair shows
                       the same ``NV#`` and direct links would need more NVLink ports than
                       the GPU has (DGX-2 ``NV6`` on 16 GPUs, DGX A100 ``NV12`` on 8)
their wiring           ``nvswitches=``, ``nvswitch_links=``; the known system's chips,
                       generation and links per chip (DGX H100: 5/4/4/5), else one chip
                       per link of the catalogue's generation
CPU (NUMA) nodes       ``cpu=`` (a :data:`topo.specs.CPUS` key); the known system's nodes
                       and links when the affinities agree; else cores and threads read off
                       the CPU affinity lists and ``socket_link=`` (default ``"qpi_bdw"``)
PCIe links             ``pcie=``; the known system's; else :data:`~topo.io.common.DEFAULT_PCIE`
NIC ports              ``nic_link=``; the known system's NICs by name (storage ports have
                       none); else :data:`~topo.io.common.DEFAULT_NIC_LINK`
hosts                  ``hosts=``; the hosts of the known system's NVLink domain (a GB200
                       NVL72 rack: the printed tray copied 18 times)
=====================  ==================================================================

The PCIe tree is rebuilt from the classes: devices that are PIX share a PCIe switch, PXB
share an upper switch, PHB a host bridge, NODE a socket (NUMA node) through different host
bridges, SYS are on different sockets. The result reproduces the imported matrix cell for
cell (:func:`topo.connection_matrix`); the importer checks that it does, so a matrix that no
PCIe tree can produce is an error. ``NV#`` hides the PCIe class of a GPU pair: such pairs take
the known system's class when it fits the rest of the matrix, else they are placed by their
relations to the NICs, or, when nothing relates them, on separate root ports.

Examples
--------
>>> import topo
>>> text = topo.format_connection_matrix(topo.connection_matrix(topo.dgx1v()))
>>> G = from_nvidia_smi(text, gpu="Tesla V100-SXM2-16GB")
>>> G.edges["gpu0", "gpu3"]["links"], G.nodes["mlx5_2"]["socket"]
(2, 1)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import MappingProxyType

import networkx as nx

from ..errors import TopologyError
from ..nvidia_smi import connection_matrix
from ..parts import add_cpu, add_link, add_nic, add_nvswitch, add_pcie_switch
from ..schema import gpus, nodes_of_kind, validate
from ..specs import CPUS, GPUS, LINKS, NVSWITCHES
from .common import (DEFAULT_NIC_LINK, DEFAULT_PCIE, NIC_NAME, RESERVED_ID, TopologyImportError,
                     check_link, gpu_model)
from .known import reference_system, upstream_link, wiring

__all__ = ["from_nvidia_smi", "MAX_DEVICES"]

_DEFAULT_SOCKET_LINK = "qpi_bdw"
#: Device columns (GPUs and NICs) a printout may have unless ``max_devices=`` raises it. The
#: largest hosts print 8 to 16 GPUs and up to 20 NICs; every one of the n x n cells is checked
#: against the rebuilt PCIe tree, which takes about a second at 128 and minutes at 1,000.
MAX_DEVICES = 128
# Device columns at most, whatever max_devices= says: CUDA numbers 1,024 GPUs per host
# (topo.schema.MAX_GPUS_PER_HOST).
_LARGEST = 1024
# Most NVLinks of one GPU, and so of NVSwitch chips a GPU reaches: 18 on Hopper and Blackwell
# (topo.specs.GPUS); 64 leaves room for generations to come.
_MAX_NVLINKS = 64

# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m: parsing
# --------------------------------------------------------------------------------------------

_TITLES = MappingProxyType({"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity",
           "GPU NUMA ID": "gpu_numa_id"})
_TITLE_RE = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID")
_GPU_LABEL = re.compile(r"GPU(\d{1,6})$")
_NV = re.compile(r"NV(\d{1,4})$")
# PCIe classes, nearest first. SOC is the old drivers' name of SYS.
_LEVEL = MappingProxyType({"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5})
_CPU_LIST = re.compile(r"\d{1,6}(-\d{1,6})?(,\d{1,6}(-\d{1,6})?)*$")
_NUMBER = re.compile(r"\d{1,6}$")
_LEGEND_LINE = re.compile(r"\s*\S+\s*=.*$")
_NIC_LEGEND_LINE = re.compile(r"\s*(NIC\d{1,6})\s*:\s*(\S+)\s*$")


class _Row:
    __slots__ = ("line", "cells", "fields")

    def __init__(self, line, cells, fields):
        self.line, self.cells, self.fields = line, cells, fields


def _err(line: int, message: str) -> TopologyImportError:
    return TopologyImportError(f"nvidia-smi topo -m, line {line}: {message}")


def _parse_header(number: int, line: str, max_devices: int):
    tokens = _TITLE_RE.sub(lambda m: "\0" + "_".join(m.group(0).split()), line).split()
    devices, titles = [], []
    for token in tokens:
        if token.startswith("\0"):
            title = token[1:].replace("_", " ")
            if title in titles:
                raise _err(number, f"column {title!r} appears twice in the header")
            titles.append(title)
        elif titles:
            raise _err(number, f"device column {token!r} after the affinity columns: expected "
                               f"the devices first, then {', '.join(_TITLES)}")
        else:
            devices.append(token)
    if not devices or not _GPU_LABEL.match(devices[0]):
        raise _err(number, f"expected the header row of nvidia-smi topo -m (GPU0 GPU1 ... "
                           f"CPU Affinity), received {line.strip()[:80]!r}")
    if len(devices) > max_devices:
        raise _err(number, f"{len(devices)} device columns, more than max_devices={max_devices} "
                           f"(--max-devices N on the command line; the check of every cell grows with its square)")
    seen = set()
    for token in devices:
        if token in seen:
            raise _err(number, f"device {token!r} appears twice in the header")
        seen.add(token)
        if not (_GPU_LABEL.match(token) or NIC_NAME.match(token)) or token in _LEVEL or token == "X":
            raise _err(number, f"header column {token!r} is not a device label (GPU<n>, NIC<n> "
                               f"or a NIC name such as mlx5_0)")
    return devices, [_TITLES[t] for t in titles]


def _parse_text(text: str, max_devices: int = MAX_DEVICES):
    """Header, rows by label and the NIC legend of an nvidia-smi topo -m printout."""
    if not isinstance(text, str):
        raise TopologyImportError(f"expected the text of nvidia-smi topo -m, received {type(text).__name__}")
    text = text.removeprefix("\ufeff")  # a byte order mark, as an editor saving UTF-8 may write
    devices = titles = None
    rows: dict[str, _Row] = {}
    nic_legend: dict[str, tuple[str, int]] = {}
    section = "rows"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if devices is None:
            devices, titles = _parse_header(number, line, max_devices)
            continue
        if stripped == "Legend:":
            section = "legend"
            continue
        if stripped == "NIC Legend:":
            section = "nic_legend"
            continue
        if section == "legend":
            if not _LEGEND_LINE.match(line):
                raise _err(number, f"expected a legend entry such as 'X = Self' or 'NIC Legend:', "
                                   f"received {stripped[:80]!r}")
            continue
        if section == "nic_legend":
            match = _NIC_LEGEND_LINE.match(line)
            if not match:
                raise _err(number, f"expected a NIC legend entry such as 'NIC0: mlx5_0', received "
                                   f"{stripped[:80]!r}")
            label, name = match.groups()
            if label in nic_legend:
                raise _err(number, f"{label} appears twice in the NIC legend")
            nic_legend[label] = (name, number)
            continue
        tokens = line.split()
        label = tokens[0]
        if label not in devices:
            raise _err(number, f"expected a row of one of the header's devices ({', '.join(devices[:4])}"
                               f"{', ...' if len(devices) > 4 else ''}) or 'Legend:', received "
                               f"{stripped[:80]!r}")
        if label in rows:
            raise _err(number, f"second row for {label} (first on line {rows[label].line})")
        cells = tokens[1:1 + len(devices)]
        fields = tokens[1 + len(devices):]
        if len(cells) < len(devices):
            raise _err(number, f"row {label} has {len(cells)} cells, expected {len(devices)} (one "
                               f"per device column)")
        if len(fields) > len(titles):
            raise _err(number, f"row {label} has {len(fields)} fields after its {len(devices)} "
                               f"cells, expected at most {len(titles)} ("
                               f"{', '.join(t.replace('_', ' ') for t in titles) or 'no affinity columns in the header'}): "
                               f"{' '.join(fields)[:80]!r}")
        for title, value in zip(titles, fields):
            pattern = _CPU_LIST if title == "cpu_affinity" else _NUMBER
            if value != "N/A" and not pattern.match(value):
                raise _err(number, f"row {label}: {title.replace('_', ' ')} {value!r} is not "
                                   f"{'a CPU list such as 0-19,40-59' if title == 'cpu_affinity' else 'a number'} or N/A")
        rows[label] = _Row(number, cells, dict(zip(titles, fields)))
    if devices is None:
        raise TopologyImportError("nvidia-smi topo -m: no header row (GPU0 GPU1 ...) in the text")
    missing = [d for d in devices if d not in rows]
    if missing:
        raise TopologyImportError(
            f"nvidia-smi topo -m: partial matrix, no row for {', '.join(missing)}: expected a row "
            f"for every column of the header (the whole printout)")
    return devices, rows, nic_legend


def _classify(devices, rows, labels):
    """Cell checks: X on the diagonal only, known classes, NV# only between GPUs, symmetry."""
    n = len(devices)
    gpu = [bool(_GPU_LABEL.match(d)) for d in devices]
    cells = [[None] * n for _ in range(n)]
    for i, a in enumerate(devices):
        row = rows[a]
        for j, value in enumerate(row.cells):
            where = f"row {labels[i]}, column {labels[j]}"
            if i == j:
                if value != "X":
                    raise _err(row.line, f"{where}: expected X (the device itself), received {value!r}")
                cells[i][j] = "X"
                continue
            nv = _NV.match(value)
            if nv:
                if not (gpu[i] and gpu[j]):
                    raise _err(row.line, f"{where}: {value} between a GPU and a NIC; NVLink joins GPUs only")
                if int(nv.group(1)) < 1:
                    raise _err(row.line, f"{where}: {value}, expected at least NV1")
                cells[i][j] = f"NV{int(nv.group(1))}"
            elif value in _LEVEL:
                cells[i][j] = "SYS" if value == "SOC" else value
            else:
                raise _err(row.line, f"{where}: unknown class {value!r}, expected X, NV#, PIX, PXB, "
                                     f"PHB, NODE, SYS or SOC")
    for i in range(n):
        for j in range(i):
            if cells[i][j] != cells[j][i]:
                raise _err(rows[devices[i]].line,
                           f"{labels[i]} -> {labels[j]} is {cells[i][j]} but {labels[j]} -> "
                           f"{labels[i]} is {cells[j][i]} (line {rows[devices[j]].line}): expected "
                           f"a symmetric matrix")
    return cells


def _nic_names(devices, nic_legend):
    labels = []
    for d in devices:
        if _GPU_LABEL.match(d):
            labels.append(d)
        elif d in nic_legend:
            labels.append(nic_legend[d][0])
        else:
            labels.append(d)
    for label, (name, line) in nic_legend.items():
        if label not in devices:
            raise _err(line, f"the NIC legend names {label}, which is not a column of the header")
        if not NIC_NAME.match(name):
            raise _err(line, f"NIC name {name!r} is not a device name such as mlx5_0")
    seen = {}
    for d, label in zip(devices, labels):
        if _GPU_LABEL.match(d):
            continue
        if label in seen or label in devices and label != d:
            raise TopologyImportError(f"nvidia-smi topo -m: two NIC columns are named {label!r}")
        if RESERVED_ID.match(label) or _GPU_LABEL.match(label):
            raise TopologyImportError(f"nvidia-smi topo -m: NIC name {label!r} looks like a "
                                      f"{re.match(r'[a-zA-Z]+', label).group(0)} node, expected a NIC "
                                      f"device name such as mlx5_0")
        seen[label] = d
    return labels


# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m: reconstruction
# --------------------------------------------------------------------------------------------

class _Partition:
    """Union-find over device positions."""

    def __init__(self, n):
        self.parent = list(range(n))

    def find(self, i):
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i, j):
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def groups(self, members):
        found: dict[int, list] = {}
        for i in members:
            found.setdefault(self.find(i), []).append(i)
        return list(found.values())


def _partition(cells, members, level, extra=()):
    """Groups of ``members`` joined by a known PCIe class at most ``level``."""
    p = _Partition(len(cells))
    for i in members:
        for j in members:
            if j > i and _LEVEL.get(cells[i][j], 99) <= level:
                p.union(i, j)
    for i, j in extra:
        p.union(i, j)
    return p.groups(members)


def _cpu_shape(lists, sockets):
    """(cores, threads per core) if every socket's CPU list follows Linux numbering, else None.

    ``lists`` maps socket -> CPU list; :func:`topo.connection_matrix` prints socket k's list
    as ``(t x sockets + k) x cores ...`` for each hardware thread t.
    """
    shape = None
    for socket, text in lists.items():
        ranges = [tuple(int(x) for x in part.split("-")) for part in text.split(",")]
        if any(len(r) != 2 or r[1] < r[0] for r in ranges):
            return None
        cores = ranges[0][1] - ranges[0][0] + 1
        expected = [((t * sockets + socket) * cores, (t * sockets + socket) * cores + cores - 1)
                    for t in range(len(ranges))]
        if ranges != expected or shape not in (None, (cores, len(ranges))):
            return None
        shape = (cores, len(ranges))
    return shape


class _Printout:
    """The parsed printout: devices in column order, their rows, labels and classes."""

    __slots__ = ("devices", "rows", "labels", "cells", "is_gpu", "gpu_index")

    def __init__(self, devices, rows, labels, cells):
        self.devices, self.rows, self.labels, self.cells = devices, rows, labels, cells
        self.is_gpu = [bool(_GPU_LABEL.match(d)) for d in devices]
        self.gpu_index = {i: int(_GPU_LABEL.match(d).group(1)) for i, d in enumerate(devices) if self.is_gpu[i]}
        if len(set(self.gpu_index.values())) != len(self.gpu_index):
            raise TopologyImportError("nvidia-smi topo -m: two GPU columns have the same number")

    def field(self, i, name):
        """Affinity field ``name`` of device ``i``, None when absent or N/A."""
        value = self.rows[self.devices[i]].fields.get(name)
        return None if value in (None, "N/A") else value

    def line(self, i) -> int:
        return self.rows[self.devices[i]].line


def _hidden_classes(m: _Printout, ref) -> dict:
    """{(i, j): class} for the GPU pairs whose PCIe class ``NV#`` hides, from the reference."""
    found = {}
    gpu_pos = list(m.gpu_index)
    for a, i in enumerate(gpu_pos):
        for j in gpu_pos[a + 1:]:
            if m.cells[i][j].startswith("NV"):
                cls = ref.hidden_class(0, m.gpu_index[i], m.gpu_index[j])
                if cls is not None:
                    found[i, j] = found[j, i] = cls
    return found


def _sockets(m: _Printout, cells, ref) -> tuple:
    """Groups of devices per socket (joined by anything nearer than SYS, and GPUs of one NUMA
    node) and each group's socket: the NUMA node of its GPUs, else the reference's socket of
    its NICs, else the lowest number left."""
    n = len(m.devices)
    numa = {i: int(v) for i in m.gpu_index for v in [m.field(i, "numa_affinity")] if v is not None}
    by_numa: dict[int, int] = {}
    same_numa = []
    for i, v in numa.items():
        if v in by_numa:
            same_numa.append((by_numa[v], i))
        by_numa.setdefault(v, i)
    groups = _partition(cells, range(n), _LEVEL["NODE"], same_numa)
    socket_of_group = []
    used = set()
    for members in groups:
        values = {numa[i] for i in members if i in numa}
        if len(values) > 1:
            raise _err(m.line(members[0]),
                       f"GPUs of NUMA nodes {sorted(values)} are joined by PCIe classes nearer than "
                       f"SYS: expected SYS between devices of different NUMA nodes")
        socket_of_group.append(values.pop() if values and not (values & used) else None)
        used |= {s for s in socket_of_group if s is not None}
    for k, members in enumerate(groups):
        if socket_of_group[k] is None and ref is not None:
            nics = [ref.nic(0, m.labels[i]) for i in members]
            known = {ref.graph.nodes[x]["socket"] for x in nics if x is not None}
            if len(known) == 1 and None not in nics and not known & used:
                socket_of_group[k] = known.pop()
                used.add(socket_of_group[k])
    free = (s for s in range(len(groups) + len(used) + 1) if s not in used)
    return groups, [s if s is not None else next(free) for s in socket_of_group]


def _ref_cpus_agree(m: _Printout, ref, socket_of) -> bool:
    """The reference's CPU (NUMA) nodes are the printout's: same affinity lists and NUMA node of
    every GPU both show, and every socket of the import is one of the reference's."""
    cm = ref.matrix(0)
    row = {label: k for k, label in enumerate(cm.devices)}
    indices = {ref.graph.nodes[c]["index"] for c in ref.cpus(0)}
    if not set(socket_of.values()) <= indices:
        return False
    for i in m.gpu_index:
        k = row.get(m.labels[i])
        if k is None:
            return False
        for name, column in (("cpu_affinity", cm.cpu_affinity), ("numa_affinity", cm.numa_affinity)):
            value = m.field(i, name)
            if value is not None and value != column[k]:
                return False
        if str(socket_of[i]) != cm.numa_affinity[k]:
            return False
    return True


def _most_common_pcie(ref):
    """The PCIe link most edges of the reference's host 0 are (its switch-to-switch links)."""
    counts: dict = {}
    for u, _, d in ref.graph.edges(data=True):
        if d["kind"] == "pcie" and ref.graph.nodes[u].get("host") == 0:
            counts[d["link"]] = counts.get(d["link"], 0) + 1
    return max(counts, key=counts.get) if counts else None


def _host_layer(m: _Printout, cells, spec, ref, options, notes) -> nx.DiGraph:
    """One host: CPU (NUMA) nodes and their links, GPUs, NICs and the PCIe tree."""
    cpu, pcie, nic_link, socket_link = options["cpu"], options["pcie"], options["nic_link"], options["socket_link"]
    groups, socket_of_group = _sockets(m, cells, ref)
    socket_of = {i: s for members, s in zip(groups, socket_of_group) for i in members}
    G = nx.DiGraph()
    n = len(m.devices)
    if cpu is None and socket_link is None and ref is not None and _ref_cpus_agree(m, ref, socket_of):
        # The reference's CPU layer, NUMA nodes without devices (DGX A100's NPS4) included.
        ref_cpus = ref.cpus(0)
        ours = {c: f"cpu{ref.graph.nodes[c]['index']}" for c in ref_cpus}
        for c in ref_cpus:
            G.add_node(ours[c], **ref.graph.nodes[c])
        for u, v, d in ref.graph.edges(data=True):
            if u in ours and v in ours:
                G.add_edge(ours[u], ours[v], **d)
        models = sorted({str(ref.graph.nodes[c].get("model", "CPU")) for c in ref_cpus})
        notes.append(f"{len(ref_cpus)} CPU (NUMA) nodes ({', '.join(models)}) and their links")
    else:
        affinity = {}
        for members, socket in zip(groups, socket_of_group):
            for i in members:
                value = m.field(i, "cpu_affinity")
                if m.is_gpu[i] and value is not None:
                    affinity.setdefault(socket, value)
        shape = _cpu_shape(affinity, len(groups)) if len(affinity) == len(groups) else None
        for socket in sorted(socket_of_group):
            if cpu is not None:
                add_cpu(G, f"cpu{socket}", cpu, index=socket)
            else:
                cores, threads = shape or (max(1, _count_cpus(affinity.get(socket, "0"))), 1)
                G.add_node(f"cpu{socket}", kind="cpu", host=0, index=socket, cores=cores,
                           threads_per_core=threads)
        cpu_nodes = sorted(socket_of_group)
        link, links = ((CPUS[cpu].socket_link, CPUS[cpu].socket_links) if cpu
                       else (socket_link or _DEFAULT_SOCKET_LINK, 1))
        for k, a in enumerate(cpu_nodes):
            for b in cpu_nodes[k + 1:]:
                add_link(G, f"cpu{a}", f"cpu{b}", link, links)

    default_pcie = pcie or (ref and _most_common_pcie(ref)) or DEFAULT_PCIE.get(spec.nvlink, "pcie3_x16")
    node_of = {i: f"gpu{m.gpu_index[i]}" if m.is_gpu[i] else m.labels[i] for i in range(n)}
    ref_node = {}
    if ref is not None:
        for i in range(n):
            found = ref.gpu(0, m.gpu_index[i]) if m.is_gpu[i] else ref.nic(0, m.labels[i])
            if found is not None:
                ref_node[i] = found
    device_link = {i: pcie or (upstream_link(ref.graph, ref_node[i]) if i in ref_node else None) or default_pcie
                   for i in range(n)}
    nic_positions = [i for i in range(n) if not m.is_gpu[i]]
    ref_nic_index = [ref.graph.nodes[ref_node[i]]["index"] for i in nic_positions if i in ref_node]
    use_ref_nics = nic_link == "default" and ref is not None and len(ref_nic_index) == len(nic_positions) \
        and len(set(ref_nic_index)) == len(ref_nic_index)
    nic_count = 0
    for i in range(n):
        if m.is_gpu[i]:
            G.add_node(node_of[i], kind="gpu", host=0, index=m.gpu_index[i], socket=socket_of[i],
                       model=spec.model, compute_capability=spec.compute_capability,
                       memory_bandwidth=spec.memory_bandwidth)
        elif use_ref_nics:
            data = ref.graph.nodes[ref_node[i]]
            add_nic(G, node_of[i], index=data["index"], socket=socket_of[i], model=data["model"],
                    port=data.get("port_link"))
        else:
            port = DEFAULT_NIC_LINK.get(spec.nvlink) if nic_link == "default" else nic_link
            add_nic(G, node_of[i], index=nic_count, socket=socket_of[i],
                    model="NIC (imported from nvidia-smi topo -m)", port=port)
            nic_count += 1
    if use_ref_nics and nic_positions:
        by_port: dict = {}
        for i in nic_positions:
            by_port.setdefault(G.nodes[node_of[i]].get("port_link") or "no network port", []).append(m.labels[i])
        notes.append("NIC ports (" + "; ".join(
            f"{port} on {', '.join(names) if len(names) <= 16 else f'{len(names)} NICs'}"
            for port, names in by_port.items()) + ")")

    switches = 0

    def switch(socket):
        nonlocal switches
        node = f"pcie{switches}"
        add_pcie_switch(G, node, index=switches, socket=socket, model="PCIe switch (imported)")
        switches += 1
        return node

    for members, socket in zip(groups, socket_of_group):
        cpu_node = f"cpu{socket}"
        for bridge, bridge_members in enumerate(_partition(cells, members, _LEVEL["PHB"])):
            for tree in _partition(cells, bridge_members, _LEVEL["PXB"]):
                leaves = _partition(cells, tree, _LEVEL["PIX"])
                if len(leaves) == 1 and len(tree) == 1:
                    add_link(G, cpu_node, node_of[tree[0]], device_link[tree[0]], host_bridge=bridge)
                    continue
                top = switch(socket)
                add_link(G, cpu_node, top, default_pcie, host_bridge=bridge)
                for leaf in leaves:
                    parent = top if len(leaves) == 1 else switch(socket)
                    if parent != top:
                        add_link(G, top, parent, default_pcie)
                    for i in leaf:
                        add_link(G, parent, node_of[i], device_link[i])
    if pcie is None and ref is not None:
        links = sorted({device_link[i] for i in range(n)} | ({default_pcie} if switches else set()))
        notes.append(f"PCIe links ({', '.join(links)})")
    return G


def _switch_model(spec, ref):
    """(model, ports) of an imported NVSwitch chip: the reference's, else the catalogue's
    generation of the GPU's NVLink, else a name that says what is not known."""
    if ref is not None:
        chips = nodes_of_kind(ref.graph, "nvswitch")
        if chips:
            data = ref.graph.nodes[chips[0]]
            return data["model"], data["ports"]
    chip = next((s for s in NVSWITCHES.values() if s.link == spec.nvlink), None)
    if chip is None:
        return f"NVSwitch for {LINKS[spec.nvlink].label} [U]", 0
    return chip.model, chip.ports


def _split(links: int, planes: int) -> tuple:
    """``links`` spread over ``planes`` chips, the larger shares first: 18 over 4 is 5, 5, 4, 4."""
    base, extra = divmod(links, planes)
    return (base + 1,) * extra + (base,) * (planes - extra)


def _nvlink_layer(G, m: _Printout, spec, ref, options, gpu_node, notes) -> None:
    """NVLinks: direct bundles as the matrix shows them, or NVSwitch chips wired as the
    options, the reference system or (without either) one chip per link say.

    ``gpu_node[(host, index)]`` is the node of each imported GPU, on every host.
    """
    nvswitch, nvswitches, nvswitch_links = options["nvswitch"], options["nvswitches"], options["nvswitch_links"]
    gpu_pos = list(m.gpu_index)
    pairs = {(i, j): int(m.cells[i][j][2:]) for a, i in enumerate(gpu_pos) for j in gpu_pos[a + 1:]
             if m.cells[i][j].startswith("NV")}
    counts = set(pairs.values())
    complete = len(pairs) == len(gpu_pos) * (len(gpu_pos) - 1) // 2 and len(gpu_pos) > 1
    uniform = complete and len(counts) == 1
    if nvswitch is None:
        nvswitch = uniform and next(iter(counts)) * (len(gpu_pos) - 1) > spec.nvlink_ports
    hosts = sorted({h for h, _ in gpu_node})
    if not nvswitch:
        if nvswitches is not None or nvswitch_links is not None:
            raise TopologyImportError(f"nvswitches={nvswitches!r}, nvswitch_links={nvswitch_links!r} given "
                                      f"for a fabric without NVSwitches")
        for i in gpu_pos:
            total = sum(links for pair, links in pairs.items() if i in pair)
            if total > spec.nvlink_ports:
                raise _err(m.line(i),
                           f"{m.labels[i]} has {total} NVLinks to its peers, but a {spec.model} has "
                           f"{spec.nvlink_ports} NVLink ports: expected NVSwitches (nvswitch=True) or "
                           f"another gpu=")
        for host in hosts:
            for (i, j), links in pairs.items():
                add_link(G, gpu_node[host, m.gpu_index[i]], gpu_node[host, m.gpu_index[j]], spec.nvlink, links)
        return
    if not uniform:
        raise TopologyImportError(
            f"nvidia-smi topo -m: nvswitch=True needs every GPU pair to show the same NV#, received "
            f"{', '.join(sorted(f'NV{c}' for c in counts)) or 'no NVLink'} on "
            f"{len(pairs)} of {len(gpu_pos) * (len(gpu_pos) - 1) // 2} pairs")
    links = next(iter(counts))
    if links > spec.nvlink_ports:
        raise TopologyImportError(f"nvidia-smi topo -m: NV{links} through NVSwitches, but a {spec.model} "
                                  f"has {spec.nvlink_ports} NVLink ports")
    if nvswitch_links is not None:
        if sum(nvswitch_links) != links or (nvswitches is not None and nvswitches != len(nvswitch_links)):
            raise TopologyImportError(
                f"nvswitch_links={'/'.join(map(str, nvswitch_links))}: expected links per NVSwitch chip "
                f"that add up to the NV{links} of each GPU"
                + (f", one per chip of nvswitches={nvswitches}" if nvswitches is not None else ""))
        _wire(G, gpu_node, tuple(nvswitch_links), spec, ref)
        notes.append(f"NVSwitch wiring {'/'.join(map(str, nvswitch_links))} (as given)")
        return
    if nvswitches is not None and (nvswitches > links):
        raise TopologyImportError(f"nvswitches={nvswitches}: expected at most {links} NVSwitch chips, one "
                                  f"NVLink at least from every GPU of NV{links} to each")
    pattern = None
    if ref is not None and nvswitches is None and _copy_ref_nvlinks(G, m, ref, gpu_node):
        first = ref.gpu(0, m.gpu_index[gpu_pos[0]])
        per_chip = [k for _, k in wiring(ref.graph, first)]
        shown = (f"{per_chip[0]} link{'s' * (per_chip[0] > 1)} from each GPU to each of {len(per_chip)}"
                 if len(set(per_chip)) == 1 else f"{'/'.join(map(str, per_chip))} links from each GPU")
        notes.append(f"NVSwitch wiring ({len(nodes_of_kind(G, 'nvswitch'))} x {_switch_model(spec, ref)[0]}, "
                     f"{shown}{', trunks between them' if _trunked(G) else ''})")
        return
    if ref is not None:
        chips = nodes_of_kind(ref.graph, "nvswitch")
        first = gpus(ref.graph)[0] if chips else None
        found = tuple(k for _, k in wiring(ref.graph, first)) if first is not None else ()
        if sum(found) == links and (nvswitches is None or nvswitches == len(found)):
            pattern = found
    if pattern is not None:
        notes.append(f"NVSwitch wiring {'/'.join(map(str, pattern))} per GPU")
    else:
        pattern = _split(links, nvswitches if nvswitches is not None else links)
        if nvswitches is not None and links % nvswitches:
            notes.append(f"NVSwitch wiring {'/'.join(map(str, pattern))} per GPU (nvswitches={nvswitches}: "
                         f"links spread evenly, the larger shares first [U])")
    _wire(G, gpu_node, pattern, spec, ref)


def _wire(G, gpu_node, pattern, spec, ref) -> None:
    """One NVSwitch chip per entry of ``pattern``, ``pattern[s]`` links from every GPU to chip s."""
    model, ports = _switch_model(spec, ref)
    for s, per_gpu in enumerate(pattern):
        used = per_gpu * len(gpu_node)
        add_nvswitch(G, f"nvswitch{s}", index=s, baseboard=0, ports=max(ports, used), model=model)
        for node in gpu_node.values():
            add_link(G, node, f"nvswitch{s}", spec.nvlink, per_gpu)


def _trunked(G) -> bool:
    return any(G.nodes[u]["kind"] == "nvswitch" and G.nodes[v]["kind"] == "nvswitch" for u, v in G.edges)


def _copy_ref_nvlinks(G, m: _Printout, ref, gpu_node) -> bool:
    """Copy the reference's NVSwitch layer (chips, their GPU bundles and trunks) when its GPUs
    are the imported ones with the same ``NV#``; False (nothing added) otherwise."""
    chips = nodes_of_kind(ref.graph, "nvswitch")
    if not chips:
        return False
    cm = ref.matrix(0)
    ref_gpus = {int(label[3:]) for label in cm.devices if label.startswith("GPU")}
    if ref_gpus != set(m.gpu_index.values()):
        return False
    row = {label: k for k, label in enumerate(cm.devices)}
    for i in m.gpu_index:
        for j in m.gpu_index:
            if cm.cells[row[m.labels[i]]][row[m.labels[j]]] != m.cells[i][j]:
                return False
    ref_of = {}
    for host, index in gpu_node:
        node = ref.gpu(host, index)
        if node is None:
            return False
        ref_of[node] = gpu_node[host, index]
    chips = set(chips)
    for c in nodes_of_kind(ref.graph, "nvswitch"):
        G.add_node(c, **ref.graph.nodes[c])
    for node, ours in ref_of.items():
        if "baseboard" in ref.graph.nodes[node]:
            G.nodes[ours]["baseboard"] = ref.graph.nodes[node]["baseboard"]
    for u, v, d in ref.graph.edges(data=True):
        a = ref_of.get(u, u if u in chips else None)
        b = ref_of.get(v, v if v in chips else None)
        if a is not None and b is not None and d["kind"] == "nvlink":
            G.add_edge(a, b, **d)
    return True


def _copies(host: nx.DiGraph, hosts: int) -> nx.DiGraph:
    """``hosts`` copies of one host's fabric, host t's node ids prefixed ``t<t>.`` (none for one)."""
    if hosts == 1:
        return host
    G = nx.DiGraph()
    for t in range(hosts):
        prefix = f"t{t}."
        for n, d in host.nodes(data=True):
            G.add_node(prefix + n, **{**d, "host": t})
        for u, v, d in host.edges(data=True):
            G.add_edge(prefix + u, prefix + v, **d)
    return G


def from_nvidia_smi(text: str, *, gpu: str, cpu: str | None = None, pcie: str | None = None,
                    nic_link: str | None = "default", nvswitch: bool | None = None,
                    nvswitches: int | None = None, nvswitch_links: Sequence[int] | None = None,
                    socket_link: str | None = None, like: str | None = "auto", hosts: int | None = None,
                    max_devices: int = MAX_DEVICES, name: str = "imported") -> nx.DiGraph:
    """Rebuild a fabric from the text ``nvidia-smi topo -m`` prints.

    Reads GPU and NIC rows, ``NV#`` counts, PIX/PXB/PHB/NODE/SYS (and the old drivers' SOC),
    the CPU Affinity, NUMA Affinity and GPU NUMA ID columns, the legend and the "NIC Legend"
    block (``NIC0: mlx5_0``), with spaces or tabs. Lines starting with ``#`` are skipped.
    GPU ``GPU<n>`` becomes node ``gpu<n>`` with index n (the machine's own numbering); a NIC
    becomes a node named as the NIC (``mlx5_0``).

    What the text cannot say comes from the options, else from the known system of the GPU
    model (``like``, :func:`topo.io.known.reference_system`: the built-in DGX of that GPU),
    as far as it agrees with the text, else from defaults by NVLink generation:

    - the NVSwitch chips, their generation and wiring: the reference's, when its GPUs show the
      same ``NV#`` (DGX H100's 5/4/4/5 links to 4 chips, DGX-2's two baseboards and trunks);
      else its per-GPU wiring when that adds up to ``NV#``; else one chip per link;
    - the CPU (NUMA) nodes and their links, when the reference's GPUs have the same CPU and
      NUMA affinity (DGX A100's 8 NPS4 nodes, 3 of them without devices);
    - each NIC's network port and model, when the reference has every NIC by name
      (storage ports have none);
    - each device's PCIe link, and the PCIe class of a GPU pair that ``NV#`` hides;
    - the hosts of an NVLink domain that spans several (a GB200 NVL72 rack's 18 compute
      trays: the printout of one tray is copied to each, ``hosts=`` sets how many).

    ``G.graph["inferred"]`` says what came from the reference or was assumed (absent: nothing).

    Parameters
    ----------
    text : str
        The whole printout (every row: a cut matrix is an error).
    gpu : str
        GPU model, resolved by :func:`~topo.io.common.gpu_model` (``"Tesla V100-SXM2-16GB"``,
        ``"NVIDIA A100-SXM4-80GB"``, ``"v100-sxm2"``).
    cpu : str, optional
        Key of :data:`topo.specs.CPUS`: model, cores and socket link of every socket. By
        default the reference's CPU nodes; without one, cores and threads per core are read off
        the CPU affinity lists (1 x the listed CPUs when they do not follow Linux numbering)
        and the model is left out.
    pcie : str, optional
        PCIe link key of every PCIe edge (``"pcie3_x16"``); default the reference's links,
        else :data:`~topo.io.common.DEFAULT_PCIE` of the GPU's NVLink.
    nic_link : str or None
        Network link key of every NIC's port (``"ib_hdr"``); ``"default"`` takes the
        reference's NICs, else :data:`~topo.io.common.DEFAULT_NIC_LINK`; None makes NICs
        without a network port.
    nvswitch : bool, optional
        Whether the GPUs talk through NVSwitches; by default when every GPU pair shows the same
        ``NV#`` and direct links would need more NVLink ports than the GPU has.
    nvswitches : int, optional
        NVSwitch chips to build, at most ``NV#``: the reference's wiring if it has that many
        chips, else the links spread evenly (18 over 4: 5/5/4/4) [U].
    nvswitch_links : sequence of int, optional
        Links from every GPU to each chip (``(5, 4, 4, 5)``), adding up to ``NV#``.
    socket_link : str, optional
        Socket-to-socket link key when ``cpu`` is not given (default ``"qpi_bdw"``); given,
        the reference's CPU layer is not used.
    like : str or None
        ``"auto"`` (default): the reference is the known system of the GPU model; a key of
        :data:`topo.registry.SYSTEMS`: that system; None: no reference.
    hosts : int, optional
        Hosts of an NVLink domain that spans several (default the reference's: 18 for a GB200
        NVL72 tray); 1 imports the printed host alone.
    max_devices : int
        Most device columns (GPUs and NICs) to read, at most 1,024 (default :data:`MAX_DEVICES`,
        128): a larger printout is refused before anything is built.
    name : str
        ``G.graph["name"]``; ``G.graph["system"]`` is it in lower case.

    Returns
    -------
    networkx.DiGraph
        A validated fabric whose :func:`topo.connection_matrix` (of host 0) is the imported
        matrix.

    Raises
    ------
    TopologyImportError
        For text that is not such a printout, a partial matrix (naming the missing rows), an
        unknown class, an asymmetric matrix, ``NV#`` off a GPU pair, more NVLinks than the
        GPU has, unknown options, or classes that no PCIe tree produces (naming the cell).

    Examples
    --------
    >>> text = '''        GPU0  GPU1  mlx5_0  CPU Affinity  NUMA Affinity
    ... GPU0     X    NV4   PIX     0-15          0
    ... GPU1    NV4    X    PHB     0-15          0
    ... mlx5_0  PIX   PHB    X'''
    >>> G = from_nvidia_smi(text, gpu="v100-sxm2", nic_link=None)
    >>> G.edges["gpu0", "gpu1"]["links"], sorted(G.successors("mlx5_0"))
    (4, ['pcie0'])
    >>> import topo
    >>> H = from_nvidia_smi(topo.format_connection_matrix(topo.connection_matrix(topo.build("dgxh100"))),
    ...                     gpu="NVIDIA H100 80GB HBM3")
    >>> [H.edges["gpu0", f"nvswitch{s}"]["links"] for s in range(4)], H.nodes["nvswitch0"]["model"]
    ([5, 4, 4, 5], 'NVSwitch (third generation)')
    """
    key = gpu_model(gpu)
    spec = GPUS[key]
    if cpu is not None and cpu not in CPUS:
        raise TopologyImportError(f"unknown CPU {cpu!r}: expected one of {', '.join(CPUS)}")
    check_link(pcie, "pcie", "pcie")
    if nic_link != "default":
        check_link(nic_link, "network", "nic_link")
    check_link(socket_link, "cpu-to-cpu", "socket_link")
    if nvswitch not in (None, True, False):
        raise TopologyImportError(f"nvswitch={nvswitch!r}: expected True, False or None (decide from the matrix)")
    if nvswitches is not None and (isinstance(nvswitches, bool) or not isinstance(nvswitches, int)
                                   or not 1 <= nvswitches <= _MAX_NVLINKS):
        raise TopologyImportError(f"nvswitches={nvswitches!r}: expected a number of NVSwitch chips from 1 "
                                  f"to {_MAX_NVLINKS}")
    if nvswitch_links is not None:
        values = tuple(nvswitch_links) if isinstance(nvswitch_links, (list, tuple)) else None
        if not values or len(values) > _MAX_NVLINKS or any(
                isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_NVLINKS for k in values):
            raise TopologyImportError(f"nvswitch_links={nvswitch_links!r}: expected links per NVSwitch chip, "
                                      f"whole numbers from 1 to {_MAX_NVLINKS} such as (5, 4, 4, 5)")
        nvswitch_links = values
    if isinstance(max_devices, bool) or not isinstance(max_devices, int) or not 1 <= max_devices <= _LARGEST:
        raise TopologyImportError(f"max_devices={max_devices!r}: expected a whole number from 1 to {_LARGEST}")
    if hosts is not None and (isinstance(hosts, bool) or not isinstance(hosts, int) or hosts < 1):
        raise TopologyImportError(f"hosts={hosts!r}: expected a whole number >= 1")
    if not isinstance(name, str) or not name:
        raise TopologyImportError(f"name={name!r}: expected a non-empty string")
    options = {"cpu": cpu, "pcie": pcie, "nic_link": nic_link, "socket_link": socket_link,
               "nvswitch": nvswitch, "nvswitches": nvswitches, "nvswitch_links": nvswitch_links}

    devices, rows, nic_legend = _parse_text(text, max_devices)
    labels = _nic_names(devices, nic_legend)
    m = _Printout(devices, rows, labels, _classify(devices, rows, labels))
    ref = reference_system(key, like)  # built once the text is known to be a printout
    domain = len(ref.hosts()) if ref is not None and _domain_spans_hosts(ref) else 1
    if hosts is not None and hosts > 1 and domain == 1:
        raise TopologyImportError(f"hosts={hosts}: the GPUs' NVLink domain is one host"
                                  + (f" in {ref.name}" if ref is not None else " (no reference system)"))
    count = hosts or domain
    if count > domain:
        raise TopologyImportError(f"hosts={hosts}: {ref.name}'s NVLink domain has {domain} hosts, expected "
                                  f"1 to {domain}")
    hidden = _hidden_classes(m, ref) if ref is not None else {}
    for attempt in ((hidden, {}) if hidden else ({},)):
        try:
            return _rebuild(m, spec, ref, options, attempt, count, name)
        except TopologyImportError:
            if not attempt:
                raise
            # The reference's hidden classes do not fit this printout: rebuild without them.
    raise AssertionError("unreachable")  # pragma: no cover


def _rebuild(m: _Printout, spec, ref, options, hidden: dict, count: int, name: str) -> nx.DiGraph:
    """The fabric of the printout, ``hidden`` classes standing for the ones ``NV#`` hides."""
    cells = [[hidden.get((i, j), c) for j, c in enumerate(row)] for i, row in enumerate(m.cells)]
    notes: list = []
    G = _copies(_host_layer(m, cells, spec, ref, options, notes), count)
    gpu_node = {(G.nodes[g]["host"], G.nodes[g]["index"]): g for g in G if G.nodes[g]["kind"] == "gpu"}
    _nvlink_layer(G, m, spec, ref, options, gpu_node, notes)
    if hidden:
        notes.append("the PCIe class of GPU pairs behind NV#")
    if count > 1:
        notes.append(f"{count} hosts in one NVLink domain, the printed host copied to each")
    G.graph.update(name=name, system=re.sub(r"\s+", "", name.lower()),
                   description=f"imported from nvidia-smi topo -m: {len(m.gpu_index)} x {spec.model}, "
                               f"{len(m.devices) - len(m.gpu_index)} NICs"
                               + (f" per host, {count} hosts" if count > 1 else ""))
    if notes:
        G.graph["inferred"] = (f"From {ref.name}, what the text does not say: " if ref is not None
                               else "Assumed, what the text does not say: ") + "; ".join(notes)
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"nvidia-smi topo -m: the rebuilt fabric is not valid: {error}") from error
    _check_reproduces(G, m)
    return G


def _domain_spans_hosts(ref) -> bool:
    """The reference's NVSwitch chips join GPUs of several hosts (a GB200 NVL72 rack)."""
    hosts = set()
    for c in nodes_of_kind(ref.graph, "nvswitch"):
        hosts |= {ref.graph.nodes[g]["host"] for g in ref.graph.adj[c] if ref.graph.nodes[g]["kind"] == "gpu"}
    return len(hosts) > 1


def _count_cpus(text: str) -> int:
    total = 0
    for part in text.split(","):
        bounds = [int(x) for x in part.split("-")]
        total += bounds[-1] - bounds[0] + 1 if bounds[-1] >= bounds[0] else 0
    return total


def _check_reproduces(G, m: _Printout):
    """The rebuilt fabric must print the imported matrix; name the first cell it does not."""
    devices, labels, cells = m.devices, m.labels, m.cells
    try:
        cm = connection_matrix(G)
    except TopologyError as error:
        raise TopologyImportError(f"nvidia-smi topo -m: the rebuilt fabric has no matrix: {error}") from error
    position = {label: k for k, label in enumerate(cm.devices)}
    for i in range(len(devices)):
        for j in range(len(devices)):
            got = cm.cells[position[labels[i]]][position[labels[j]]]
            if got != cells[i][j]:
                raise _err(m.line(i),
                           f"{labels[i]} -> {labels[j]} is {cells[i][j]}, but the other cells place "
                           f"these devices where they would be {got}: no PCIe tree gives this matrix")

