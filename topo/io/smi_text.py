"""Import the text ``nvidia-smi topo -m`` prints: rebuild the machine's fabric.

:func:`from_nvidia_smi` reads the printout of any machine and returns a validated fabric
(schema in :mod:`topo.schema`) in the machine's own GPU numbering; it raises
:class:`~topo.io.common.TopologyImportError` naming the line for text it does not understand
or that contradicts itself.

What ``nvidia-smi topo -m`` cannot say comes from options, with documented defaults:

=====================  ==================================================================
GPU model              ``gpu=`` (required), a :data:`topo.specs.GPUS` key or the name
                       nvidia-smi prints (:func:`~topo.io.common.gpu_model`); gives the
                       NVLink generation
PCIe generation        ``pcie=``; default by NVLink generation (:data:`DEFAULT_PCIE`)
NIC port rate          ``nic_link=``; default by NVLink generation (:data:`DEFAULT_NIC_LINK`)
NVSwitches             ``nvswitch=``; by default present exactly when every GPU pair shows
                       the same ``NV#`` and direct links would need more NVLink ports than
                       the GPU has (DGX-2 ``NV6`` on 16 GPUs, DGX A100 ``NV12`` on 8)
CPU                    ``cpu=`` (a :data:`topo.specs.CPUS` key); otherwise cores and threads
                       are read off the CPU affinity lists and the socket link is
                       ``socket_link=`` (default ``"qpi_bdw"``, NCCL's lowest figure)
=====================  ==================================================================

The PCIe tree is rebuilt from the classes: devices that are PIX share a PCIe switch, PXB
share an upper switch, PHB a host bridge, NODE a socket (NUMA node) through different host
bridges, SYS are on different sockets. The result reproduces the imported matrix cell for
cell (:func:`topo.connection_matrix`); the importer checks that it does, so a matrix that no
PCIe tree can produce is an error. ``NV#`` hides the PCIe class of a GPU pair: such pairs are
placed by their relations to the NICs, or, when nothing relates them, on separate root ports.

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

import networkx as nx

from ..errors import TopologyError
from ..nvidia_smi import connection_matrix
from ..parts import add_cpu, add_link, add_nic, add_nvswitch, add_pcie_switch
from ..schema import validate
from ..specs import CPUS, GPUS, LINKS, NVSWITCHES
from .common import (DEFAULT_NIC_LINK, DEFAULT_PCIE, NIC_NAME, RESERVED_ID, TopologyImportError,
                     check_link, gpu_model)

__all__ = ["from_nvidia_smi"]

_DEFAULT_SOCKET_LINK = "qpi_bdw"
_MAX_DEVICES = 1024

# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m: parsing
# --------------------------------------------------------------------------------------------

_TITLES = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity",
           "GPU NUMA ID": "gpu_numa_id"}
_TITLE_RE = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID")
_GPU_LABEL = re.compile(r"GPU(\d{1,6})$")
_NV = re.compile(r"NV(\d{1,4})$")
# PCIe classes, nearest first. SOC is the old drivers' name of SYS.
_LEVEL = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}
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


def _parse_header(number: int, line: str):
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
    if len(devices) > _MAX_DEVICES:
        raise _err(number, f"{len(devices)} device columns, more than {_MAX_DEVICES}")
    seen = set()
    for token in devices:
        if token in seen:
            raise _err(number, f"device {token!r} appears twice in the header")
        seen.add(token)
        if not (_GPU_LABEL.match(token) or NIC_NAME.match(token)) or token in _LEVEL or token == "X":
            raise _err(number, f"header column {token!r} is not a device label (GPU<n>, NIC<n> "
                               f"or a NIC name such as mlx5_0)")
    return devices, [_TITLES[t] for t in titles]


def _parse_text(text: str):
    """Header, rows by label and the NIC legend of an nvidia-smi topo -m printout."""
    if not isinstance(text, str):
        raise TopologyImportError(f"expected the text of nvidia-smi topo -m, received {type(text).__name__}")
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
            devices, titles = _parse_header(number, line)
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


def _nvlink_layer(G, devices, cells, rows, labels, spec, nvswitch, nvswitches):
    gpu_pos = [i for i, d in enumerate(devices) if _GPU_LABEL.match(d)]
    node = {i: f"gpu{int(_GPU_LABEL.match(devices[i]).group(1))}" for i in gpu_pos}
    pairs = {(i, j): int(cells[i][j][2:]) for i in gpu_pos for j in gpu_pos
             if j > i and cells[i][j].startswith("NV")}
    counts = set(pairs.values())
    complete = len(pairs) == len(gpu_pos) * (len(gpu_pos) - 1) // 2 and len(gpu_pos) > 1
    uniform = complete and len(counts) == 1
    if nvswitch is None:
        nvswitch = uniform and next(iter(counts)) * (len(gpu_pos) - 1) > spec.nvlink_ports
    if not nvswitch:
        if nvswitches is not None:
            raise TopologyImportError(f"nvswitches={nvswitches!r} given for a fabric without NVSwitches")
        for (i, j), links in pairs.items():
            add_link(G, node[i], node[j], spec.nvlink, links)
        for i in gpu_pos:
            total = sum(links for pair, links in pairs.items() if i in pair)
            if total > spec.nvlink_ports:
                raise _err(rows[devices[i]].line,
                           f"{labels[i]} has {total} NVLinks to its peers, but a {spec.model} has "
                           f"{spec.nvlink_ports} NVLink ports: expected NVSwitches (nvswitch=True) or "
                           f"another gpu=")
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
    planes = links if nvswitches is None else nvswitches
    if isinstance(planes, bool) or not isinstance(planes, int) or planes < 1 or links % planes:
        raise TopologyImportError(f"nvswitches={nvswitches!r}: expected a number of NVSwitch chips that "
                                  f"divides the NV{links} links of each GPU")
    per_switch = links // planes
    switch_spec = next((s for s in NVSWITCHES.values() if s.link == spec.nvlink), None)
    used = per_switch * len(gpu_pos)
    for s in range(planes):
        add_nvswitch(G, f"nvswitch{s}", index=s, baseboard=0,
                     ports=switch_spec.ports if switch_spec and switch_spec.ports >= used else used,
                     model=(switch_spec.model if switch_spec else f"NVSwitch for {LINKS[spec.nvlink].label}")
                     + " (imported, one chip per plane [U])")
        for i in gpu_pos:
            add_link(G, node[i], f"nvswitch{s}", spec.nvlink, per_switch)


def from_nvidia_smi(text: str, *, gpu: str, cpu: str | None = None, pcie: str | None = None,
                    nic_link: str | None = "default", nvswitch: bool | None = None,
                    nvswitches: int | None = None, socket_link: str | None = None,
                    name: str = "imported") -> nx.DiGraph:
    """Rebuild a fabric from the text ``nvidia-smi topo -m`` prints.

    Reads GPU and NIC rows, ``NV#`` counts, PIX/PXB/PHB/NODE/SYS (and the old drivers' SOC),
    the CPU Affinity, NUMA Affinity and GPU NUMA ID columns, the legend and the "NIC Legend"
    block (``NIC0: mlx5_0``), with spaces or tabs. Lines starting with ``#`` are skipped.
    GPU ``GPU<n>`` becomes node ``gpu<n>`` with index n (the machine's own numbering); a NIC
    becomes a node named as the NIC (``mlx5_0``), indexed in column order.

    Parameters
    ----------
    text : str
        The whole printout (every row: a cut matrix is an error).
    gpu : str
        GPU model, resolved by :func:`gpu_model` (``"Tesla V100-SXM2-16GB"``, ``"v100-sxm2"``).
    cpu : str, optional
        Key of :data:`topo.specs.CPUS`: model, cores and socket link of every socket. By
        default cores and threads per core are read off the CPU affinity lists (1 x the
        listed CPUs when they do not follow Linux numbering) and the model is left out.
    pcie : str, optional
        PCIe link key (``"pcie3_x16"``); default :data:`DEFAULT_PCIE` of the GPU's NVLink.
    nic_link : str or None
        Network link key of every NIC's port (``"ib_hdr"``); ``"default"`` takes
        :data:`DEFAULT_NIC_LINK`; None makes NICs without a network port.
    nvswitch : bool, optional
        Whether the GPUs talk through NVSwitches; default as in the module docstring.
    nvswitches : int, optional
        NVSwitch chips to build (must divide the per-GPU link count); default one per link.
        Every GPU has ``NV# / nvswitches`` links to each chip.
    socket_link : str, optional
        Socket-to-socket link key when ``cpu`` is not given (default ``"qpi_bdw"``).
    name : str
        ``G.graph["name"]``; ``G.graph["system"]`` is it in lower case.

    Returns
    -------
    networkx.DiGraph
        A validated fabric whose :func:`topo.connection_matrix` is the imported matrix.

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
    """
    spec = GPUS[gpu_model(gpu)]
    if cpu is not None and cpu not in CPUS:
        raise TopologyImportError(f"unknown CPU {cpu!r}: expected one of {', '.join(CPUS)}")
    pcie = check_link(pcie, "pcie", "pcie") or DEFAULT_PCIE.get(spec.nvlink, "pcie3_x16")
    nic_link = check_link(DEFAULT_NIC_LINK.get(spec.nvlink) if nic_link == "default" else nic_link,
                           "network", "nic_link")
    socket_link = check_link(socket_link, "cpu-to-cpu", "socket_link") or _DEFAULT_SOCKET_LINK
    if nvswitch not in (None, True, False):
        raise TopologyImportError(f"nvswitch={nvswitch!r}: expected True, False or None (decide from the matrix)")
    if not isinstance(name, str) or not name:
        raise TopologyImportError(f"name={name!r}: expected a non-empty string")

    devices, rows, nic_legend = _parse_text(text)
    labels = _nic_names(devices, nic_legend)
    cells = _classify(devices, rows, labels)
    n = len(devices)
    is_gpu = [bool(_GPU_LABEL.match(d)) for d in devices]
    gpu_index = {i: int(_GPU_LABEL.match(d).group(1)) for i, d in enumerate(devices) if is_gpu[i]}
    if len(set(gpu_index.values())) != len(gpu_index):
        raise TopologyImportError("nvidia-smi topo -m: two GPU columns have the same number")

    # Sockets: devices joined by anything nearer than SYS, and GPUs with the same NUMA node.
    numa = {i: rows[devices[i]].fields.get("numa_affinity") for i in range(n) if is_gpu[i]}
    numa = {i: int(v) for i, v in numa.items() if v not in (None, "N/A")}
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
            raise _err(rows[devices[members[0]]].line,
                       f"GPUs of NUMA nodes {sorted(values)} are joined by PCIe classes nearer than "
                       f"SYS: expected SYS between devices of different NUMA nodes")
        socket_of_group.append(values.pop() if values and not (values & used) else None)
        used |= {s for s in socket_of_group if s is not None}
    free = (s for s in range(len(groups) + len(used) + 1) if s not in used)
    socket_of_group = [s if s is not None else next(free) for s in socket_of_group]

    G = nx.DiGraph(name=name, system=re.sub(r"\s+", "", name.lower()),
                   description=f"imported from nvidia-smi topo -m: {sum(is_gpu)} x {spec.model}, "
                               f"{n - sum(is_gpu)} NICs")
    affinity = {}
    for members, socket in zip(groups, socket_of_group):
        for i in members:
            value = rows[devices[i]].fields.get("cpu_affinity")
            if is_gpu[i] and value not in (None, "N/A"):
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
    link, links = (CPUS[cpu].socket_link, CPUS[cpu].socket_links) if cpu else (socket_link, 1)
    for k, a in enumerate(cpu_nodes):
        for b in cpu_nodes[k + 1:]:
            add_link(G, f"cpu{a}", f"cpu{b}", link, links)

    node_of = {}
    for i, d in enumerate(devices):
        node_of[i] = f"gpu{gpu_index[i]}" if is_gpu[i] else labels[i]
    socket_of = {i: s for members, s in zip(groups, socket_of_group) for i in members}
    nic_count = 0
    for i in range(n):
        if is_gpu[i]:
            G.add_node(node_of[i], kind="gpu", host=0, index=gpu_index[i], socket=socket_of[i],
                       model=spec.model, compute_capability=spec.compute_capability,
                       memory_bandwidth=spec.memory_bandwidth)
        else:
            add_nic(G, node_of[i], index=nic_count, socket=socket_of[i],
                    model="NIC (imported from nvidia-smi topo -m)", port=nic_link)
            nic_count += 1

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
                    add_link(G, cpu_node, node_of[tree[0]], pcie, host_bridge=bridge)
                    continue
                top = switch(socket)
                add_link(G, cpu_node, top, pcie, host_bridge=bridge)
                for leaf in leaves:
                    parent = top if len(leaves) == 1 else switch(socket)
                    if parent != top:
                        add_link(G, top, parent, pcie)
                    for i in leaf:
                        add_link(G, parent, node_of[i], pcie)

    _nvlink_layer(G, devices, cells, rows, labels, spec, nvswitch, nvswitches)
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"nvidia-smi topo -m: the rebuilt fabric is not valid: {error}") from error
    _check_reproduces(G, devices, labels, cells, rows)
    return G


def _count_cpus(text: str) -> int:
    total = 0
    for part in text.split(","):
        bounds = [int(x) for x in part.split("-")]
        total += bounds[-1] - bounds[0] + 1 if bounds[-1] >= bounds[0] else 0
    return total


def _check_reproduces(G, devices, labels, cells, rows):
    """The rebuilt fabric must print the imported matrix; name the first cell it does not."""
    try:
        cm = connection_matrix(G)
    except TopologyError as error:
        raise TopologyImportError(f"nvidia-smi topo -m: the rebuilt fabric has no matrix: {error}") from error
    position = {label: k for k, label in enumerate(cm.devices)}
    for i in range(len(devices)):
        for j in range(len(devices)):
            got = cm.cells[position[labels[i]]][position[labels[j]]]
            if got != cells[i][j]:
                raise _err(rows[devices[i]].line,
                           f"{labels[i]} -> {labels[j]} is {cells[i][j]}, but the other cells place "
                           f"these devices where they would be {got}: no PCIe tree gives this matrix")

