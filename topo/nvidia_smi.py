"""The ``nvidia-smi topo -m`` view of a fabric: how every GPU and NIC pair is connected.

nvidia-smi names the best connection between two devices:

======  =====================================================================================
X       the device itself
NV#     a bonded set of # NVLinks (direct, or into an NVSwitch fabric both GPUs are on)
PIX     PCIe through at most one PCIe switch
PXB     PCIe through several PCIe switches, not through a host bridge
PHB     PCIe through a host bridge (the CPU's root complex)
NODE    PCIe through two host bridges of one CPU socket (NUMA node)
SYS     PCIe and the socket-to-socket link (QPI / UPI)
======  =====================================================================================

The classes are read off the graph by :func:`topo.pcie.connection_class`: NVLink edges give
NV#; otherwise the PCIe route between the two devices (over PCIe and socket-to-socket edges
only) is classified by what it crosses (:func:`topo.pcie.pcie_class`).

Examples
--------
>>> from topo import dgx1v
>>> cm = connection_matrix(dgx1v())
>>> cm.cell("GPU0", "GPU3"), cm.cell("GPU0", "mlx5_1"), cm.cell("GPU0", "GPU5")
('NV2', 'PHB', 'SYS')
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from .errors import TopologyError
from .pcie import connection_class, nvswitch_domain, pcie_paths
from .schema import gpus, nodes_of_kind, validate

__all__ = ["ConnectionMatrix", "connection_matrix", "format_connection_matrix", "LEGEND"]

#: The legend printed under the matrix, one line per class.
LEGEND = (
    ("X", "the device itself"),
    ("SYS", "PCIe plus the interconnect between CPU sockets (QPI/UPI)"),
    ("NODE", "PCIe plus the interconnect between PCIe host bridges of one CPU socket"),
    ("PHB", "PCIe through a PCIe host bridge (the CPU)"),
    ("PXB", "PCIe through several PCIe switches, without a host bridge"),
    ("PIX", "PCIe through at most one PCIe switch"),
    ("NV#", "a bonded set of # NVLinks"),
)


@dataclass(frozen=True, slots=True)
class ConnectionMatrix:
    """nvidia-smi's connection matrix of one host.

    Attributes
    ----------
    devices : tuple of str
        Row and column labels: ``GPU<index>`` for GPUs, the NIC name for NICs.
    nodes : tuple
        Graph node of each label.
    cells : tuple of tuple of str
        ``cells[i][j]`` is the class of the connection from device i to device j.
    cpu_affinity : tuple of str
        Per device, the Linux CPU list of its socket ("" for NICs, as nvidia-smi prints).
    numa_affinity : tuple of str
        Per device, its NUMA node ("" for NICs).
    """

    devices: tuple
    nodes: tuple
    cells: tuple
    cpu_affinity: tuple
    numa_affinity: tuple

    def cell(self, a: str, b: str) -> str:
        """The class between devices labelled ``a`` and ``b`` (``"GPU0"``, ``"mlx5_1"``)."""
        return self.cells[self.devices.index(a)][self.devices.index(b)]

    def to_dict(self) -> dict:
        """The JSON form printed by ``dgxtopo topo --json`` (see docs/json.md)."""
        return {
            "devices": list(self.devices),
            "matrix": [list(row) for row in self.cells],
            "cpu_affinity": list(self.cpu_affinity),
            "numa_affinity": list(self.numa_affinity),
        }


def _cpu_list(G, cpu) -> str:
    """Linux CPU numbering: socket k's cores first, then their hyper-thread siblings."""
    data = G.nodes[cpu]
    sockets = sum(1 for n in nodes_of_kind(G, "cpu") if G.nodes[n]["host"] == data["host"])
    cores = data["cores"]
    ranges = []
    for thread in range(data["threads_per_core"]):
        start = (thread * sockets + data["index"]) * cores
        ranges.append(f"{start}-{start + cores - 1}")
    return ",".join(ranges)


def connection_matrix(G: nx.DiGraph, *, host: int = 0) -> ConnectionMatrix:
    """Classify every GPU/NIC pair of one host as ``nvidia-smi topo -m`` does.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here).
    host : int
        Which host of a cluster to show (0 for a single system).

    Returns
    -------
    ConnectionMatrix
        GPUs in index order, then NICs in index order.

    Raises
    ------
    TopologyError
        If ``G`` is not a valid fabric, has no GPU on ``host``, or two devices of the host
        have no PCIe route and no NVLink between them.
    """
    validate(G)
    gpu_nodes = [n for n in gpus(G) if G.nodes[n]["host"] == host]
    if not gpu_nodes:
        hosts = sorted({G.nodes[n]["host"] for n in gpus(G)})
        raise TopologyError(f"no GPU on host {host}: expected one of hosts {hosts}")
    nic_nodes = [n for n in nodes_of_kind(G, "nic") if G.nodes[n]["host"] == host]
    nodes = gpu_nodes + nic_nodes
    labels = [f"GPU{G.nodes[n]['index']}" for n in gpu_nodes] + [G.nodes[n]["name"] for n in nic_nodes]

    domain = nvswitch_domain(G)
    switch_links: dict = {}
    cells = []
    for a in nodes:
        paths = pcie_paths(G, a)
        cells.append(tuple(connection_class(G, a, b, domain=domain, paths=paths, switch_links=switch_links)
                           for b in nodes))

    cpu_of_socket = {G.nodes[c]["index"]: c for c in nodes_of_kind(G, "cpu") if G.nodes[c]["host"] == host}
    cpu_affinity, numa_affinity = [], []
    for n in nodes:
        socket = G.nodes[n]["socket"]
        gpu = G.nodes[n]["kind"] == "gpu"
        cpu_affinity.append(_cpu_list(G, cpu_of_socket[socket]) if gpu and socket in cpu_of_socket else "")
        numa_affinity.append(str(socket) if gpu else "")
    return ConnectionMatrix(tuple(labels), tuple(nodes), tuple(cells), tuple(cpu_affinity),
                            tuple(numa_affinity))


def format_connection_matrix(cm: ConnectionMatrix, *, legend: bool = True) -> str:
    """Lay out a connection matrix as ``nvidia-smi topo -m`` prints it.

    Every column is as wide as its header plus two spaces (the CPU affinity column as its
    longest entry if that is longer); GPU rows end with the CPU and
    NUMA affinity columns; trailing spaces are dropped.

    Parameters
    ----------
    cm : ConnectionMatrix
    legend : bool
        Append the legend of the classes.

    Returns
    -------
    str
    """
    headers = list(cm.devices) + ["CPU Affinity", "NUMA Affinity"]
    widths = [len(h) + 2 for h in headers]
    # An affinity list longer than its header (112-127,240-255) still needs a gap after it.
    widths[-2] = max(widths[-2], max(len(c) for c in cm.cpu_affinity) + 2)
    label_width = max(8, max(len(d) for d in cm.devices) + 2)

    def line(label, cells):
        text = label.ljust(label_width) + "".join(c.ljust(w) for c, w in zip(cells, widths))
        return text.rstrip()

    lines = [line("", headers)]
    for device, row, cpus, numa in zip(cm.devices, cm.cells, cm.cpu_affinity, cm.numa_affinity):
        lines.append(line(device, list(row) + [cpus, numa]))
    if legend:
        lines += ["", "Legend:", ""]
        lines += [f"  {key:<4} = {text}" for key, text in LEGEND]
    return "\n".join(lines)
