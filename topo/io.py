"""Fabrics in and out: import real machines, export graphs.

Import
    :func:`from_nvidia_smi` reads the text ``nvidia-smi topo -m`` prints on any machine and
    :func:`from_nccl_xml` the topology NCCL dumps (``NCCL_TOPO_DUMP_FILE``). Both return a
    validated fabric (schema in :mod:`topo.schema`) in the machine's own GPU numbering, and
    raise :class:`TopologyImportError` naming the line or XML element for input they do not
    understand or that contradicts itself.
Export
    :func:`to_json` / :func:`from_json` (networkx node-link data in an envelope with a format
    version) and :func:`to_graphml` / :func:`from_graphml`. A round trip gives the same nodes,
    edges and attributes in the same order, so every model predicts the same figures.

What ``nvidia-smi topo -m`` cannot say comes from options, with documented defaults:

=====================  ==================================================================
GPU model              ``gpu=`` (required), a :data:`topo.specs.GPUS` key or the name
                       nvidia-smi prints (:func:`gpu_model`); gives the NVLink generation
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
>>> from_json(to_json(G)).edges["gpu0", "gpu3"] == G.edges["gpu0", "gpu3"]
True
"""

from __future__ import annotations

import heapq
import json
import math
import re

import networkx as nx
from networkx.readwrite.graphml import GraphMLWriter

from .errors import DgxTopoError, TopologyError
from .nvidia_smi import connection_matrix
from .parts import add_cpu, add_link, add_nic, add_nvswitch, add_pcie_switch
from .schema import validate
from .specs import CPUS, GPUS, LINKS, NVSWITCHES

__all__ = [
    "TopologyImportError", "gpu_model",
    "from_nvidia_smi", "from_nccl_xml",
    "to_json", "from_json", "to_graphml", "from_graphml",
    "JSON_FORMAT", "JSON_VERSION", "DEFAULT_PCIE", "DEFAULT_NIC_LINK", "NVLINK_BY_SM",
]


class TopologyImportError(DgxTopoError):
    """Input of an importer that is malformed, unknown or contradicts itself.

    The message names the line (nvidia-smi text) or the element (XML, JSON) and says what was
    expected and what was received.
    """


#: Format name and version of :func:`to_json`'s envelope; :func:`from_json` rejects others.
JSON_FORMAT = "dgx-topo fabric"
JSON_VERSION = 1

#: PCIe link of an imported machine by its GPUs' NVLink generation, when ``pcie=`` is not
#: given: P100/V100 systems are PCIe gen3, A100 gen4, H100 and later gen5 (the GPUs' PCIe
#: interfaces per the A100 [S12] and H100 [S13] whitepapers). [U] for any given machine.
DEFAULT_PCIE = {"nvlink1": "pcie3_x16", "nvlink2": "pcie3_x16", "nvlink3": "pcie4_x16",
                "nvlink4": "pcie5_x16", "nvlink5": "pcie5_x16"}

#: Network port of each NIC by the GPUs' NVLink generation, when ``nic_link=`` is not given:
#: EDR with DGX-1/DGX-2, HDR with DGX A100, NDR with DGX H100 (the InfiniBand generation of
#: the DGX of that GPU generation). [U] for any given machine.
DEFAULT_NIC_LINK = {"nvlink1": "ib_edr", "nvlink2": "ib_edr", "nvlink3": "ib_hdr",
                    "nvlink4": "ib_ndr", "nvlink5": "ib_ndr"}

#: NVLink generation by the major digit(s) of the SM version NCCL writes (``sm="80"``):
#: Pascal NVLink 1.0, Volta 2.0, Ampere 3.0, Hopper 4.0, Blackwell 5.0 (whitepapers [S10]
#: [S3] [S12] [S13] [S15]).
NVLINK_BY_SM = {6: "nvlink1", 7: "nvlink2", 8: "nvlink3", 9: "nvlink4", 10: "nvlink5"}

_DEFAULT_SOCKET_LINK = "qpi_bdw"
_MAX_DEVICES = 1024


# --------------------------------------------------------------------------------------------
# GPU names
# --------------------------------------------------------------------------------------------

def _gpu_key(name: str, *, keep_memory: bool = False) -> str:
    """Lower case without vendor prefixes, memory suffix (unless kept) and separators: 'v100sxm2'."""
    text = name.lower().strip()
    text = re.sub(r"^(nvidia\s+)?(tesla\s+)?", "", text)
    if not keep_memory:
        text = re.sub(r"[-_ ]?\d+\s*gb$", "", text)
    return re.sub(r"[-_\s]", "", text)


def gpu_model(name: str) -> str:
    """Resolve a GPU name to its key in :data:`topo.specs.GPUS`.

    Accepts the catalogue key (``"V100-SXM2"``), the name nvidia-smi prints (``"Tesla
    V100-SXM2-16GB"``: the part of that memory size when the catalogue has it, else the model
    of any size) and short forms (``"v100-sxm2"``, ``"v100sxm2"``), without regard to case,
    ``-``, ``_`` or spaces.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
        A key of :data:`topo.specs.GPUS`.

    Raises
    ------
    TopologyImportError
        For a name that matches no model, or several (``"v100"``).

    Examples
    --------
    >>> gpu_model("Tesla V100-SXM2-32GB"), gpu_model("v100-sxm3"), gpu_model("P100")
    ('V100-SXM2-32GB', 'V100-SXM3', 'P100')
    """
    if not isinstance(name, str) or not name.strip():
        raise TopologyImportError(f"expected a GPU model name such as 'V100-SXM2' or 'Tesla "
                                  f"V100-SXM2-16GB', received {name!r}")
    # A name with its memory size names one part exactly ("Tesla V100-SXM2-32GB"); without it,
    # the part whose key or name matches once the size is dropped.
    full = _gpu_key(name, keep_memory=True)
    named = [key for key, spec in GPUS.items()
             if full in (_gpu_key(key, keep_memory=True), _gpu_key(spec.model, keep_memory=True))]
    if len(named) == 1:
        return named[0]
    wanted = _gpu_key(name)
    exact = [key for key, spec in GPUS.items() if wanted in (_gpu_key(key), _gpu_key(spec.model))]
    if len(exact) == 1:
        return exact[0]
    partial = [key for key, spec in GPUS.items()
               if _gpu_key(key).startswith(wanted) or _gpu_key(spec.model).startswith(wanted)]
    if len(partial) == 1 and wanted:
        return partial[0]
    known = ", ".join(f"{key} ({spec.model})" for key, spec in GPUS.items())
    if len(partial) > 1:
        raise TopologyImportError(f"GPU model {name!r} is ambiguous: it matches {', '.join(partial)}; "
                                  f"expected one of {known}")
    raise TopologyImportError(f"unknown GPU model {name!r}: expected one of {known}")


def _check_link(link, kind: str, option: str):
    if link is not None and (not isinstance(link, str) or link not in LINKS or LINKS[link].kind != kind):
        choices = ", ".join(k for k, s in LINKS.items() if s.kind == kind)
        raise TopologyImportError(f"{option}={link!r} is not a {kind} link: expected one of {choices}")
    return link


# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m: parsing
# --------------------------------------------------------------------------------------------

_TITLES = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity",
           "GPU NUMA ID": "gpu_numa_id"}
_TITLE_RE = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID")
_GPU_LABEL = re.compile(r"GPU(\d{1,6})$")
_NIC_LABEL = re.compile(r"[A-Za-z][\w.:-]{0,63}$")
_RESERVED_ID = re.compile(r"(gpu|cpu|pcie|nvswitch)\d+$")
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
        if not (_GPU_LABEL.match(token) or _NIC_LABEL.match(token)) or token in _LEVEL or token == "X":
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
        if not _NIC_LABEL.match(name):
            raise _err(line, f"NIC name {name!r} is not a device name such as mlx5_0")
    seen = {}
    for d, label in zip(devices, labels):
        if _GPU_LABEL.match(d):
            continue
        if label in seen or label in devices and label != d:
            raise TopologyImportError(f"nvidia-smi topo -m: two NIC columns are named {label!r}")
        if _RESERVED_ID.match(label) or _GPU_LABEL.match(label):
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
    pcie = _check_link(pcie, "pcie", "pcie") or DEFAULT_PCIE.get(spec.nvlink, "pcie3_x16")
    nic_link = _check_link(DEFAULT_NIC_LINK.get(spec.nvlink) if nic_link == "default" else nic_link,
                           "network", "nic_link")
    socket_link = _check_link(socket_link, "cpu-to-cpu", "socket_link") or _DEFAULT_SOCKET_LINK
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


# --------------------------------------------------------------------------------------------
# NCCL topology XML
# --------------------------------------------------------------------------------------------

# PCI classes NCCL tells apart (NVIDIA/nccl v2.27.7-1 src/graph/xml.h, topo.cc: kvDictPciClass).
_CLASS_BRIDGE = "0x0604"
_CLASS_GPU = "0x03"
_CLASS_NIC = "0x02"
_CLASS_NVSWITCH = "0x068000"
_CLASS_CPU_NVLINK = "0x068001"

# PCI device ids of NVIDIA GPUs (PCI ID Repository, vendor 10de) -> GPUS key or model name.
_GPU_DEVICES = {
    0x15F8: "P100", 0x15F9: "P100",
    0x1DB1: "V100-SXM2", 0x1DB5: "V100-SXM2", 0x1DB8: "V100-SXM3",
    0x20B0: "NVIDIA A100-SXM4-40GB", 0x20B2: "NVIDIA A100-SXM4-80GB",
    0x2330: "NVIDIA H100 80GB HBM3",
}

# PCIe transfer rate [GT/s] -> (catalogue link of the generation, encoding efficiency). Gen1
# and gen2 (8b/10b) are charged as a fraction of the gen3 link. (PCI-SIG base specifications;
# NCCL v2.27.7-1 src/graph/xml.cc reads the same link_speed strings.)
_PCIE_GENERATIONS = {2.5: ("pcie3_x16", 0.8), 5.0: ("pcie3_x16", 0.8), 8.0: ("pcie3_x16", 128 / 130),
                     16.0: ("pcie4_x16", 128 / 130), 32.0: ("pcie5_x16", 128 / 130)}

_KNOWN_ELEMENTS = {"system", "cpu", "pci", "gpu", "nvlink", "c2c", "pcilink", "nic", "net"}


def _xml_err(path: str, message: str) -> TopologyImportError:
    return TopologyImportError(f"NCCL topology XML, element {path}: {message}")


def _attr_int(element, path, name, *, base=0, required=True, default=None, minimum=None):
    value = element.get(name)
    if value is None or value.strip() == "":
        if required:
            raise _xml_err(path, f"missing attribute {name!r}")
        return default
    try:
        number = int(value.strip(), base)
    except ValueError:
        raise _xml_err(path, f"attribute {name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise _xml_err(path, f"attribute {name}={value!r}, expected at least {minimum}")
    if number > 10**12:
        raise _xml_err(path, f"attribute {name}={value!r} is out of range")
    return number


def _pcie_edge(element, path, default_link):
    """(link key, bandwidth) of the link between a <pci> element and its parent."""
    speed = (element.get("link_speed") or "").strip()
    width = _attr_int(element, path, "link_width", base=10, required=False, default=0, minimum=0)
    width = 16 if width == 0 else width  # NCCL reads width 0 as 16 (src/graph/topo.cc).
    if width > 32:
        raise _xml_err(path, f"link_width={width}, expected a PCIe width of at most 32 lanes")
    if not speed:
        return default_link, LINKS[default_link].bandwidth * width / 16
    match = re.match(r"([\d.]+)\s*GT/s", speed)
    rate = float(match.group(1)) if match and re.fullmatch(r"\d+(\.\d+)?", match.group(1)) else None
    if rate not in _PCIE_GENERATIONS:
        raise _xml_err(path, f"link_speed={speed!r}, expected one of "
                             f"{', '.join(f'{r:g} GT/s' for r in _PCIE_GENERATIONS)}")
    link, efficiency = _PCIE_GENERATIONS[rate]
    if efficiency == 128 / 130:  # the catalogue's own figure, so that x16 scales by exactly 1
        return link, LINKS[link].bandwidth * width / 16
    return link, width * rate * 1e9 * efficiency / 8


def _socket_link(cpu, path, option):
    if option is not None:
        return option
    vendor = (cpu.get("vendor") or "").strip()
    if vendor == "GenuineIntel":
        model = _attr_int(cpu, path, "modelid", required=False, default=0)
        # NCCL charges Skylake and later (model >= 0x55) SKL_QPI_BW, earlier BDW_QPI_BW
        # (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ncclTopoConnectCpus).
        return "upi_skl" if model >= 0x55 else "qpi_bdw"
    raise _xml_err(path, f"no socket-to-socket link in the catalogue for vendor={vendor!r} "
                         f"arch={cpu.get('arch')!r}: pass socket_link= one of "
                         f"{', '.join(k for k, s in LINKS.items() if s.kind == 'cpu-to-cpu')}")


def _parse_xml(text):
    try:
        from defusedxml import ElementTree as SafeET
        from defusedxml.common import DefusedXmlException
    except ImportError as error:  # pragma: no cover - a declared dependency
        raise TopologyImportError("reading NCCL XML needs the package defusedxml") from error
    from xml.etree.ElementTree import ParseError

    if not isinstance(text, (str, bytes)):
        raise TopologyImportError(f"expected the text of an NCCL topology XML, received {type(text).__name__}")
    try:
        return SafeET.fromstring(text, forbid_dtd=True)
    except ParseError as error:
        raise TopologyImportError(f"NCCL topology XML is not well-formed: {error}") from None
    except DefusedXmlException as error:
        raise TopologyImportError(f"NCCL topology XML refused (DTDs and entities are not allowed): "
                                  f"{error!r}") from None
    except (ValueError, UnicodeError) as error:
        raise TopologyImportError(f"NCCL topology XML cannot be decoded: {error}") from None


def from_nccl_xml(text, *, gpu: str | None = None, pcie: str | None = None,
                  socket_link: str | None = None, name: str | None = None) -> nx.DiGraph:
    """Build a fabric from NCCL's topology XML (``NCCL_TOPO_DUMP_FILE``, ``NCCL_TOPO_FILE``).

    Reads the elements NCCL reads (NVIDIA/nccl v2.27.7-1 src/graph/xml.cc, topo.cc):
    ``<system version="1">``; ``<cpu numaid affinity vendor familyid modelid>``; nested
    ``<pci busid class link_speed link_width>`` (class 0x0604 bridge: a PCIe switch; 0x03: a
    GPU; 0x02 or a ``<nic>`` child: a NIC; 0x068000: an NVSwitch's PCIe endpoint, which
    carries no data and is left out); ``<gpu dev sm>`` with ``<nvlink target count tclass>``;
    ``<nic>`` with ``<net name dev speed>``. Other attributes (``gdr``, ``guid``, ``port``,
    ...) are accepted and not kept: the schema has no place for them.

    How the XML maps onto the fabric:

    - A PCIe edge per ``<pci>`` to its parent: the generation from ``link_speed``, the
      bandwidth scaled by ``link_width / 16``; missing speed: ``pcie=`` or the default of the
      GPUs' NVLink generation. Root ports are on one host bridge per CPU (NCCL has no NODE).
    - NVLink to a GPU's busid (tclass 0x03...): a GPU-GPU edge of ``count`` links; the two
      GPUs must agree when both list the link; a target GPU absent from the XML is skipped,
      as NCCL skips it. Any other target is an NVSwitch, one node per target busid with
      ``count`` links. NVSwitch groups that share no GPU (DGX-2's two baseboards) are
      joined switch by switch with as many links as the switch has GPU links (non-blocking
      trunks, as DGX-2 is built [S17]); [U] for other machines. NVLink to a CPU (0x068001,
      POWER9) and ``<c2c>`` are not modelled and raise.
    - NVLink generation from ``sm`` (:data:`NVLINK_BY_SM`); the GPU model from ``gpu=`` or
      the PCI device id, else ``"NVIDIA GPU sm<sm>"``.
    - Each ``<net>`` becomes a NIC named as NCCL names it, indexed by ``dev``, with a port of
      ``speed`` Mb/s (the catalogue InfiniBand link of that speed, or the bare rate); a
      ``<nic>`` directly under a ``<cpu>`` hangs off the CPU by the default PCIe link.
    - CPU sockets by ``numaid``; cores = the CPUs in ``affinity``, one thread each [U]; the
      socket link as NCCL picks its figure (Intel before Skylake: QPI, later: UPI), one link
      per socket pair; other vendors need ``socket_link=``.

    Parameters
    ----------
    text : str or bytes
    gpu : str, optional
        GPU model (:func:`gpu_model`); must agree with ``sm``.
    pcie : str, optional
        PCIe link key for links without ``link_speed``.
    socket_link : str, optional
        Socket-to-socket link key, overriding the choice by CPU vendor and model.
    name : str, optional
        ``G.graph["name"]``; default the system's ``name`` attribute or ``"imported"``.

    Returns
    -------
    networkx.DiGraph
        A validated fabric.

    Raises
    ------
    TopologyImportError
        For XML that is not well-formed, has a DTD or entities, unknown elements, missing or
        malformed attributes, duplicate bus ids, GPU indices or NIC names, NVLink counts the
        two GPUs disagree on, or a fabric that does not validate; naming the element.
    """
    spec_key = gpu_model(gpu) if gpu is not None else None
    pcie = _check_link(pcie, "pcie", "pcie")
    socket_link = _check_link(socket_link, "cpu-to-cpu", "socket_link")
    root = _parse_xml(text)
    if root.tag != "system":
        raise _xml_err(root.tag, "expected <system> as the root element")
    version = _attr_int(root, "system", "version", required=True)
    if version != 1:
        raise _xml_err("system", f"version={version}, expected 1 (NCCL_TOPO_XML_VERSION)")
    graph_name = name if name is not None else (root.get("name") or "imported")
    G = nx.DiGraph(name=graph_name, system=re.sub(r"\s+", "", graph_name.lower()),
                   description="imported from an NCCL topology XML")

    for element in root.iter():
        if element.tag not in _KNOWN_ELEMENTS:
            raise _xml_err(element.tag, f"unknown element <{element.tag}>, expected one of "
                                        f"{', '.join(sorted(_KNOWN_ELEMENTS))}")

    state = {"switches": 0, "busids": {}, "gpus": {}, "nvlinks": [], "nics": {}, "nic_index": {},
             "nvswitch_busids": set(), "pending": [], "nvlink": {}}
    cpus = []
    for k, cpu in enumerate(root):
        path = f"system/{cpu.tag}[{k}]"
        if cpu.tag != "cpu":
            raise _xml_err(path, f"<{cpu.tag}> directly under <system>, expected <cpu>")
        numa = _attr_int(cpu, path, "numaid", minimum=0)
        if any(numa == other for other, _, _ in cpus):
            raise _xml_err(path, f"numaid={numa} appears on two <cpu> elements")
        cpus.append((numa, cpu, path))
    if not cpus:
        raise _xml_err("system", "no <cpu> element")
    for numa, cpu, path in cpus:
        mask = re.sub(r"[,\s]", "", cpu.get("affinity") or "")
        if mask and not re.fullmatch(r"(0x)?[0-9a-fA-F]{1,2048}", mask):
            raise _xml_err(path, f"affinity={cpu.get('affinity')!r} is not a hexadecimal CPU mask")
        cores = bin(int(mask, 16)).count("1") if mask else 0
        vendor = (cpu.get("vendor") or "").strip()
        G.add_node(f"cpu{numa}", kind="cpu", host=0, index=numa, cores=max(cores, 1), threads_per_core=1,
                   model=f"{vendor or 'CPU'} family {cpu.get('familyid', '?')} model {cpu.get('modelid', '?')}")

    for numa, cpu, path in cpus:
        for k, child in enumerate(cpu):
            child_path = f"{path}/{child.tag}[{k}]"
            if child.tag == "pci":
                _xml_pci(G, state, child, child_path, f"cpu{numa}", numa, spec_key, pcie)
            elif child.tag == "nic":
                _xml_nic(G, state, child, child_path, f"cpu{numa}", numa, None)
            else:
                raise _xml_err(child_path, f"<{child.tag}> under <cpu>, expected <pci> or <nic>")
    # NICs under a CPU and PCIe links without a speed take the GPUs' PCIe generation.
    nvlink_gens = set(state["nvlink"].values())
    default_pcie = pcie or DEFAULT_PCIE.get(min(nvlink_gens) if nvlink_gens else "nvlink2", "pcie3_x16")
    for u, v, attributes in state["pending"]:
        link, bandwidth = attributes(default_pcie)
        _xml_link(G, u, v, link, bandwidth, **({"host_bridge": 0} if G.nodes[u]["kind"] == "cpu" else {}))
    _prune_switches(G)
    _xml_nvlinks(G, state)
    cpu_nodes = [f"cpu{numa}" for numa, _, _ in cpus]
    for k, (numa, cpu, path) in enumerate(cpus):
        for other in cpu_nodes[k + 1:]:
            link = _socket_link(cpu, path, socket_link)
            add_link(G, f"cpu{numa}", other, link, 1)
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"NCCL topology XML: the fabric it describes is not valid: {error}") from error
    return G


def _xml_link(G, u, v, link, bandwidth, **attributes):
    spec = LINKS[link]
    for a, b in ((u, v), (v, u)):
        G.add_edge(a, b, kind=spec.kind, link=link, links=1, bandwidth=bandwidth, latency=spec.latency,
                   **attributes)


def _xml_pci(G, state, element, path, parent, socket, spec_key, pcie):
    busid = (element.get("busid") or "").strip().lower()
    if not re.fullmatch(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]", busid):
        raise _xml_err(path, f"busid={element.get('busid')!r}, expected a PCI bus id such as 0000:1a:00.0")
    path = f"{path}[busid={busid}]"
    if busid in state["busids"]:
        raise _xml_err(path, f"busid {busid} appears twice (first at {state['busids'][busid]})")
    state["busids"][busid] = path
    pci_class = (element.get("class") or "").strip().lower()
    if not re.fullmatch(r"0x[0-9a-f]{6}", pci_class):
        raise _xml_err(path, f"class={element.get('class')!r}, expected a PCI class such as 0x060400")
    # Checked now, so that errors name this element; applied once every link is known.
    _pcie_edge(element, path, "pcie3_x16")
    kids = list(element)
    for k, kid in enumerate(kids):
        if kid.tag not in ("pci", "gpu", "nic", "pcilink"):
            raise _xml_err(f"{path}/{kid.tag}[{k}]", f"<{kid.tag}> under <pci>, expected <pci>, <gpu>, "
                                                      f"<nic> or <pcilink>")

    def pending(node):
        state["pending"].append((parent, node, lambda default: _pcie_edge(element, path, default)))

    if pci_class == _CLASS_NVSWITCH:
        state["nvswitch_busids"].add(busid)
        return
    gpus = [kid for kid in kids if kid.tag == "gpu"]
    nics = [kid for kid in kids if kid.tag == "nic"]
    if pci_class.startswith(_CLASS_GPU) or gpus:
        if len(gpus) > 1 or nics or any(kid.tag == "pci" for kid in kids):
            raise _xml_err(path, "a GPU's <pci> holds one <gpu> and nothing else")
        if gpus:  # a GPU without <gpu> is not visible to NCCL (topo.cc skips it) nor here
            node = _xml_gpu(G, state, gpus[0], f"{path}/gpu", busid, socket, spec_key, element)
            pending(node)
        return
    if pci_class.startswith(_CLASS_NIC) or nics:
        if len(nics) != 1 or any(kid.tag in ("pci", "gpu") for kid in kids):
            raise _xml_err(path, "a NIC's <pci> holds one <nic> and no other device")
        _xml_nic(G, state, nics[0], f"{path}/nic", parent, socket,
                 lambda default: _pcie_edge(element, path, default))
        return
    children = [kid for kid in kids if kid.tag == "pci"]
    if not children:
        return  # a PCIe function that is neither GPU, NIC nor bridge: nothing NCCL uses
    node = f"pcie{state['switches']}"
    state["switches"] += 1
    vendor, device = element.get("vendor", "?"), element.get("device", "?")
    add_pcie_switch(G, node, index=state["switches"] - 1, socket=socket,
                    model=f"PCIe switch {vendor}:{device}")
    pending(node)
    for k, kid in enumerate(children):
        _xml_pci(G, state, kid, f"{path}/pci[{k}]", node, socket, spec_key, pcie)


def _xml_gpu(G, state, element, path, busid, socket, spec_key, pci):
    dev = _attr_int(element, path, "dev", minimum=0)
    sm = _attr_int(element, path, "sm", base=10, minimum=1)
    if sm // 10 not in NVLINK_BY_SM:
        raise _xml_err(path, f"sm={sm}: expected the SM version of a GPU with NVLink "
                             f"({', '.join(f'{k}x' for k in NVLINK_BY_SM)})")
    node = f"gpu{dev}"
    if node in G:
        raise _xml_err(path, f"dev={dev} appears on two GPUs")
    device = _attr_int(pci, path, "device", required=False, default=None)
    key = spec_key or _GPU_DEVICES.get(device)
    attributes = {}
    if key in GPUS:
        spec = GPUS[key]
        if spec.compute_capability != sm:
            raise _xml_err(path, f"sm={sm} but a {spec.model} is sm {spec.compute_capability}")
        model = spec.model
        attributes["memory_bandwidth"] = spec.memory_bandwidth
    else:
        model = key or f"NVIDIA GPU sm{sm}"
    G.add_node(node, kind="gpu", host=0, index=dev, socket=socket, model=model, compute_capability=sm,
               **attributes)
    state["nvlink"][node] = NVLINK_BY_SM[sm // 10]
    state["gpus"][busid] = node
    for k, kid in enumerate(element):
        kid_path = f"{path}/{kid.tag}[{k}]"
        if kid.tag == "c2c":
            raise _xml_err(kid_path, "C2C links (Grace) are not modelled")
        if kid.tag != "nvlink":
            raise _xml_err(kid_path, f"<{kid.tag}> under <gpu>, expected <nvlink>")
        target = (kid.get("target") or "").strip().lower()
        if not target:
            raise _xml_err(kid_path, "missing attribute 'target'")
        count = _attr_int(kid, kid_path, "count", base=10, minimum=1)
        if count > 64:
            raise _xml_err(kid_path, f"count={count}, expected at most 64 NVLinks")
        tclass = (kid.get("tclass") or "").strip().lower()
        if tclass == _CLASS_CPU_NVLINK:
            raise _xml_err(kid_path, "NVLink to a CPU (tclass 0x068001, POWER9) is not modelled")
        state["nvlinks"].append((node, target, count, tclass.startswith(_CLASS_GPU), kid_path))
    return node


def _xml_nic(G, state, element, path, parent, socket, edge):
    nets = list(element)
    if not nets:
        raise _xml_err(path, "a <nic> without <net>")
    for k, net in enumerate(nets):
        net_path = f"{path}/{net.tag}[{k}]"
        if net.tag != "net":
            raise _xml_err(net_path, f"<{net.tag}> under <nic>, expected <net>")
        name = (net.get("name") or "").strip()
        if not _NIC_LABEL.match(name) or _RESERVED_ID.match(name):
            raise _xml_err(net_path, f"name={net.get('name')!r}, expected a device name such as mlx5_0")
        if name in state["nics"] or name in G:
            raise _xml_err(net_path, f"a second NIC named {name!r}")
        dev = _attr_int(net, net_path, "dev", minimum=0)
        if dev in state["nic_index"]:
            raise _xml_err(net_path, f"dev={dev} appears on NICs {state['nic_index'][dev]!r} and {name!r}")
        speed = _attr_int(net, net_path, "speed", base=10, required=False, default=0)
        # NCCL takes speed <= 0 as 10000 Mb/s (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc).
        rate = (speed if speed > 0 else 10_000) * 1e6 / 8
        port = next((k for k, s in LINKS.items() if s.kind == "network" and math.isclose(s.bandwidth, rate)), None)
        if port is not None:
            add_nic(G, name, index=dev, socket=socket, model="NIC (imported from NCCL XML)", port=port)
        else:
            G.add_node(name, kind="nic", host=0, index=dev, socket=socket, name=name,
                       model="NIC (imported from NCCL XML)", port_bandwidth=rate)
        state["nics"][name] = net_path
        state["nic_index"][dev] = name
        state["pending"].append((parent, name, edge or (lambda default: (default, LINKS[default].bandwidth))))


def _prune_switches(G):
    """Drop PCIe switches with no device below them (bridges that lead nowhere NCCL looks)."""
    while True:
        dead = [n for n, kind in G.nodes(data="kind") if kind == "pcie_switch" and G.out_degree(n) <= 1]
        if not dead:
            return
        G.remove_nodes_from(dead)


def _xml_nvlinks(G, state):
    gpu_links: dict[tuple, tuple] = {}
    switch_of: dict[str, str] = {}
    for node, target, count, to_gpu, path in state["nvlinks"]:
        if target in state["gpus"]:
            peer = state["gpus"][target]
            if peer == node:
                raise _xml_err(path, "an NVLink from a GPU to itself")
            key = tuple(sorted((node, peer)))
            if key in gpu_links and gpu_links[key][1] == node:
                raise _xml_err(path, f"a second <nvlink> from {node} to {peer}")
            if key in gpu_links and gpu_links[key][0] != count:
                raise _xml_err(path, f"count={count} from {node} to {peer}, but {peer} lists count="
                                     f"{gpu_links[key][0]} ({gpu_links[key][2]}): the two GPUs disagree")
            gpu_links[key] = (count, node, path)
            continue
        if to_gpu:
            continue  # a GPU NCCL does not see: NCCL drops the link too
        if target not in switch_of:
            switch_of[target] = f"nvswitch{len(switch_of)}"
        switch = switch_of[target]
        if G.has_edge(node, switch):
            raise _xml_err(path, f"a second <nvlink> from {node} to NVSwitch {target}")
        if switch not in G:
            G.add_node(switch, kind="nvswitch", host=0, index=len(switch_of) - 1, ports=0,
                       model="NVSwitch (imported from NCCL XML)")
        _add_nvlink(G, state, node, switch, count)
    for (a, b), (count, _, _) in gpu_links.items():
        _add_nvlink(G, state, a, b, count)
    switches = list(switch_of.values())
    if not switches:
        return
    fabric = G.subgraph(switches + list(state["gpus"].values())).to_undirected()
    domains = [[s for s in switches if s in component] for component in nx.connected_components(fabric)]
    domains = sorted((d for d in domains if d), key=lambda d: switches.index(d[0]))
    for d, members in enumerate(domains):
        for s in members:
            G.nodes[s]["baseboard"] = d
    if len(domains) == 2 and len(domains[0]) == len(domains[1]):
        for a, b in zip(*domains):
            trunk = sum(G.edges[g, a]["links"] for g in G.predecessors(a))
            _add_nvlink(G, state, a, b, trunk, nvlink=_switch_nvlink(G, state, a))
    elif len(domains) > 1:
        raise TopologyImportError(
            f"NCCL topology XML: {len(domains)} groups of NVSwitches share no GPU "
            f"({', '.join(str(len(d)) for d in domains)} switches): only two equal groups (DGX-2's "
            f"baseboards) are joined")
    for s in switches:
        G.nodes[s]["ports"] = sum(d["links"] for _, _, d in G.out_edges(s, data=True))
        spec = next((x for x in NVSWITCHES.values() if x.link == _switch_nvlink(G, state, s)), None)
        if spec is not None:
            G.nodes[s]["model"] = spec.model
            G.nodes[s]["ports"] = max(spec.ports, G.nodes[s]["ports"])


def _switch_nvlink(G, state, switch):
    return min(state["nvlink"][g] for g in G.predecessors(switch) if g in state["nvlink"])


def _add_nvlink(G, state, a, b, count, nvlink=None):
    ends = [state["nvlink"][n] for n in (a, b) if n in state["nvlink"]]
    add_link(G, a, b, nvlink or min(ends), count)


# --------------------------------------------------------------------------------------------
# Export: JSON and GraphML
# --------------------------------------------------------------------------------------------

_SCALARS = (str, int, float, bool)


def _check_exportable(G):
    validate(G)
    for n, data in G.nodes(data=True):
        if not isinstance(n, str):
            raise TopologyError(f"node {n!r}: export needs string node ids, received {type(n).__name__}")
        for key, value in data.items():
            if not isinstance(value, _SCALARS):
                raise TopologyError(f"node {n!r}: attribute {key!r} is {type(value).__name__}, "
                                    f"export takes str, int, float or bool")
    for u, v, data in G.edges(data=True):
        for key, value in data.items():
            if not isinstance(value, _SCALARS):
                raise TopologyError(f"edge ({u!r}, {v!r}): attribute {key!r} is {type(value).__name__}, "
                                    f"export takes str, int, float or bool")
    for key, value in G.graph.items():
        if not isinstance(value, _SCALARS):
            raise TopologyError(f"graph attribute {key!r} is {type(value).__name__}, export takes "
                                f"str, int, float or bool")


def _edge_order(G) -> list:
    """The edges in an order that rebuilds both ``G.succ`` and ``G.pred`` as they are.

    Models iterate successors and predecessors, and a channel search visits them in order, so a
    faithful copy keeps both orders. The order ``G.edges`` lists keeps only the successors';
    the edges are sorted topologically under "before in its source's successors" and "before
    in its target's predecessors", which the graph's own insertion order satisfies.
    """
    edges = list(G.edges())
    position = {e: k for k, e in enumerate(edges)}
    after: dict[int, list] = {k: [] for k in range(len(edges))}
    blocked = [0] * len(edges)
    for v in G:
        chain = [position[u, v] for u in G.pred[v]]
        for a, b in zip(chain, chain[1:]):
            after[a].append(b)
            blocked[b] += 1
    for u in G:
        chain = [position[u, v] for v in G.succ[u]]
        for a, b in zip(chain, chain[1:]):
            after[a].append(b)
            blocked[b] += 1
    ready = [k for k in range(len(edges)) if not blocked[k]]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(edges[k])
        for b in after[k]:
            blocked[b] -= 1
            if not blocked[b]:
                heapq.heappush(ready, b)
    return order


class _OrderedGraphMLWriter(GraphMLWriter):
    """networkx's GraphML writer, edges in :func:`_edge_order`."""

    def add_edges(self, G, graph_element):
        for u, v in _edge_order(G):
            data = G.edges[u, v]
            edge_element = self.myElement("edge", source=str(u), target=str(v))
            default = G.graph.get("edge_default", {})
            self.add_attributes("edge", edge_element, data, default)
            graph_element.append(edge_element)


def to_json(G) -> str:
    """A fabric as JSON: networkx node-link data in an envelope with a format version.

    ``{"format": "dgx-topo fabric", "version": 1, "graph": <node-link data, edges under
    "edges">}``. Nodes and edges keep their order, so :func:`from_json` rebuilds the same
    adjacency and every model the same figures.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric with string node ids and scalar attributes.

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        For an invalid fabric or attributes JSON cannot carry.
    """
    _check_exportable(G)
    data = nx.node_link_data(G, edges="edges")
    index = {(item["source"], item["target"]): item for item in data["edges"]}
    data["edges"] = [index[e] for e in _edge_order(G)]
    try:
        return json.dumps({"format": JSON_FORMAT, "version": JSON_VERSION, "graph": data},
                          allow_nan=False, indent=1)
    except ValueError as error:
        raise TopologyError(f"fabric cannot be written as JSON: {error}") from None


def from_json(text) -> nx.DiGraph:
    """Read a fabric written by :func:`to_json`.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    networkx.DiGraph
        The validated fabric.

    Raises
    ------
    TopologyImportError
        For text that is not JSON, another format or version, or a graph that is not a
        valid fabric.
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as error:
        raise TopologyImportError(f"fabric JSON: not JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise TopologyImportError(f"fabric JSON: expected an object with format {JSON_FORMAT!r}, "
                                  f"received {found!r}")
    if data.get("version") != JSON_VERSION or isinstance(data.get("version"), bool):
        raise TopologyImportError(f"fabric JSON: version {data.get('version')!r} is not supported, "
                                  f"expected {JSON_VERSION}")
    body = data.get("graph")
    if not isinstance(body, dict) or body.get("directed") is not True or body.get("multigraph") is not False:
        raise TopologyImportError("fabric JSON: 'graph' must be networkx node-link data of a directed, "
                                  "non-multi graph")
    nodes, edges = body.get("nodes"), body.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list) or not isinstance(body.get("graph", {}), dict):
        raise TopologyImportError("fabric JSON: 'graph' needs lists 'nodes' and 'edges'")
    for k, item in enumerate(nodes):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise TopologyImportError(f"fabric JSON: nodes[{k}] must be an object with a string 'id'")
    ids = {item["id"] for item in nodes}
    for k, item in enumerate(edges):
        if (not isinstance(item, dict) or item.get("source") not in ids or item.get("target") not in ids
                or not isinstance(item.get("source"), str) or not isinstance(item.get("target"), str)):
            raise TopologyImportError(f"fabric JSON: edges[{k}] must be an object whose 'source' and "
                                      f"'target' are node ids")
    for where, items in (("nodes", nodes), ("edges", edges), ("graph", [body.get("graph", {})])):
        for k, item in enumerate(items):
            for key, value in item.items():
                if not isinstance(value, _SCALARS):
                    raise TopologyImportError(f"fabric JSON: {where}[{k}] attribute {key!r} is "
                                              f"{type(value).__name__}, expected str, int, float or bool")
    G = nx.node_link_graph(body, directed=True, multigraph=False, edges="edges")
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"fabric JSON: {error}") from error
    return G


_GRAPHML_VERSION_KEY = "dgx_topo_format_version"


def to_graphml(G) -> str:
    """A fabric as GraphML (networkx's writer; attribute types declared per key).

    The graph attribute ``dgx_topo_format_version`` carries :data:`JSON_VERSION`.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric with string node ids and scalar attributes.

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        For an invalid fabric, attributes GraphML cannot carry, or an attribute holding
        values of different types on different nodes or edges (GraphML types a key once).
    """
    _check_exportable(G)
    for scope, items in (("node", G.nodes(data=True)), ("edge", (d for _, _, d in G.edges(data=True)))):
        types: dict[str, type] = {}
        for data in (items if scope == "edge" else (d for _, d in items)):
            for key, value in data.items():
                if types.setdefault(key, type(value)) is not type(value):
                    raise TopologyError(f"{scope} attribute {key!r} holds both {types[key].__name__} and "
                                        f"{type(value).__name__} values: GraphML types a key once")
    H = nx.DiGraph()  # G.copy() would keep the successors' order only
    H.graph.update(G.graph)
    H.add_nodes_from(G.nodes(data=True))
    H.add_edges_from((u, v, G.edges[u, v]) for u, v in _edge_order(G))
    H.graph[_GRAPHML_VERSION_KEY] = JSON_VERSION
    writer = _OrderedGraphMLWriter(named_key_ids=True)
    writer.add_graph_element(H)
    return str(writer)


def from_graphml(text) -> nx.DiGraph:
    """Read a fabric written by :func:`to_graphml`, with int, float and str types restored.

    The text is first checked with defusedxml (no DTD, no entities), then read by networkx.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    networkx.DiGraph

    Raises
    ------
    TopologyImportError
        For text that is not GraphML of a directed graph, another format version, or a graph
        that is not a valid fabric.
    """
    root = _parse_xml_generic(text, "GraphML")
    try:
        parsed = nx.parse_graphml(text, node_type=str)
    except (nx.NetworkXError, ValueError, TypeError, KeyError, AttributeError, IndexError) as error:
        raise TopologyImportError(f"GraphML: {error}") from None
    except Exception as error:  # xml.etree ParseError and friends, already screened above
        raise TopologyImportError(f"GraphML: {type(error).__name__}: {error}") from None
    if not isinstance(parsed, nx.DiGraph) or parsed.is_multigraph():
        raise TopologyImportError("GraphML: expected a directed graph without parallel edges "
                                  "(edgedefault=\"directed\")")
    # networkx's reader goes through a MultiDiGraph and loses the predecessors' order: add the
    # edges again in the file's order (see _edge_order).
    G = nx.DiGraph()
    G.graph.update(parsed.graph)
    G.add_nodes_from(parsed.nodes(data=True))
    for element in root.iter("{http://graphml.graphdrawing.org/xmlns}edge"):
        u, v = element.get("source"), element.get("target")
        if not G.has_edge(u, v) and parsed.has_edge(u, v):
            G.add_edge(u, v, **parsed.edges[u, v])
    if G.number_of_edges() != parsed.number_of_edges():
        raise TopologyImportError("GraphML: expected the edges as <edge> elements of one <graph>")
    version = G.graph.pop(_GRAPHML_VERSION_KEY, None)
    for key in ("node_default", "edge_default"):  # added by networkx's reader
        if G.graph.get(key) == {}:
            del G.graph[key]
    if version != JSON_VERSION:
        raise TopologyImportError(f"GraphML: graph attribute {_GRAPHML_VERSION_KEY}={version!r}, "
                                  f"expected {JSON_VERSION}")
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"GraphML: {error}") from error
    return G


def _parse_xml_generic(text, what):
    try:
        return _parse_xml(text)
    except TopologyImportError as error:
        raise TopologyImportError(str(error).replace("NCCL topology XML", what)) from None
