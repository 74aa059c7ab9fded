"""What one NIC moves for NCCL's network channels: its port, or the PCIe path to its GPU.

NCCL charges a channel that leaves a node the smaller of the NIC port's figure
(``speed / 8000``, NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ``ncclTopoAddNet``) and its figures
for the PCIe links between the GPU and the NIC (``width x speed / 80``, ``ncclTopoAddPci``).
What the path achieves is decided the same way, from the wire of each link
(:data:`topo.specs.WIRES`), by whichever link binds:

*The port* carries InfiniBand packets: ``data_rate x packet_efficiency`` (4096 of every 4122
bytes are payload at every generation), times the share of it the NIC's DMA sustains.

*The PCIe path.* When the NIC and the GPU it serves share a PCIe switch (path no worse than
PXB, NCCL's default ``NCCL_NET_GDR_LEVEL``; src/graph/paths.cc ``ncclTopoCheckGdr``), the NIC
reads and writes GPU memory directly (GPUDirect RDMA): every PCIe link between them carries
the NIC's DMA both ways, full write TLPs one way plus the read requests for the data going the
other, at :attr:`topo.specs.WireFormat.dma_efficiency` of its data rate. Otherwise NCCL stages
the data in host memory: the GPU's kernels write (and read) it across the GPU's side of the
path, as NCCL's kernels move data over any link (``sm_efficiency`` of the wire's payload rate),
and the NIC DMAs it across the NIC's side.

The path's rate is the smallest of these; its ratio to NCCL's figure for the same path scales
the bandwidth NCCL's tuning model assumed (:func:`models.predict.measure.measured`). A link
whose wire is not catalogued (the socket-to-socket link on a staged path) counts at its line
rate [U].

Examples
--------
>>> import topo
>>> G = topo.build("2xdgxh100")
>>> p = nic_path(G, "h0.mlx5_0")
>>> p.gpu, p.path_class, p.gdr, p.binding
('h0.gpu0', 'PXB', True, 'ib_ndr')
>>> round(p.rate / 1e9, 2), round(p.nccl_rate / 1e9, 1), round(p.ratio, 4)
(49.68, 48.0, 1.0351)
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.errors import DgxTopoError
from topo.pcie import PCIE_CLASSES, pcie_class, pcie_paths
from topo.specs import LINKS, WIRES
from topo.units import to_GBps

from ..engine.nccl.profiles import nccl_profile
from ..engine.nccl.system import nccl_capacity

__all__ = ["NicPath", "nic_path", "GDR_CLASSES"]

#: PCIe classes over which NCCL uses GPUDirect RDMA by default (``NCCL_NET_GDR_LEVEL`` PXB,
#: NVIDIA/nccl v2.27.7-1 src/graph/paths.cc ``ncclTopoCheckGdr``).
GDR_CLASSES = ("PIX", "PXB")


@dataclass(frozen=True, slots=True)
class NicPath:
    """One NIC's path for NCCL's network channels, achieved and as NCCL charges it.

    Attributes
    ----------
    nic : node id
    gpu : node id
        The GPU it serves: the host's GPU nearest to it over PCIe (NCCL's ``localGpu`` of the
        NIC, which also proxies other GPUs' traffic to it over NVLink, PXN).
    path : tuple
        PCIe nodes from ``gpu`` to ``nic`` (through a CPU when the data is staged).
    path_class : str
        ``PIX``, ``PXB``, ``PHB``, ``NODE`` or ``SYS``.
    gdr : bool
        GPUDirect RDMA: the NIC shares a PCIe switch with the GPU (``path_class`` in
        :data:`GDR_CLASSES`); otherwise the data is staged through host memory.
    port : str
        Link class of the NIC port (``topo.LINKS`` key).
    port_rate : float
        Payload the port moves per direction. [B/s]
    pcie_rate : float
        Payload the slowest PCIe link of the path moves per direction (inf without one). [B/s]
    pcie_link : str
        That link's class (``""`` without one).
    nccl_rate : float
        NCCL's figure for the path: its port figure or, if lower, its figure for a PCIe link of
        the path. [B/s]
    """

    nic: object
    gpu: object
    path: tuple
    path_class: str
    gdr: bool
    port: str
    port_rate: float
    pcie_rate: float
    pcie_link: str
    nccl_rate: float

    @property
    def rate(self) -> float:
        """What the path achieves per direction: the port or the PCIe path, the lower. [B/s]"""
        return min(self.port_rate, self.pcie_rate)

    @property
    def binding(self) -> str:
        """Link class of what binds: the port's, or the slowest PCIe link's."""
        return self.port if self.port_rate <= self.pcie_rate else self.pcie_link

    @property
    def ratio(self) -> float:
        """``rate / nccl_rate``."""
        return self.rate / self.nccl_rate

    def describe(self) -> str:
        """One line for ``--explain``."""
        wire = WIRES[self.port]
        pcie = (f"PCIe {self.path_class} {'GPUDirect RDMA' if self.gdr else 'staged in host memory'}"
                + (f", slowest {self.pcie_link} {to_GBps(self.pcie_rate):.2f} GB/s" if self.pcie_link else ""))
        return (f"network path {self.nic} <-> {self.gpu}: port {self.port} data {to_GBps(wire.data_rate):.3f} "
                f"GB/s x packet {wire.packet_efficiency:.4f} = {to_GBps(self.port_rate):.2f} GB/s; {pcie}; "
                f"{self.binding} binds: {to_GBps(self.rate):.2f} GB/s over NCCL's "
                f"{to_GBps(self.nccl_rate):.2f} = {self.ratio:.4f}")


def _served_gpu(G, nic, paths):
    """The host's GPU nearest the NIC over PCIe (best class, then lowest index)."""
    host = G.nodes[nic].get("host")
    best = None
    for node, path in paths.items():
        data = G.nodes[node]
        if data.get("kind") != "gpu" or data.get("host") != host:
            continue
        key = (PCIE_CLASSES.index(pcie_class(G, path[::-1])), data.get("index", 0), str(node))
        if best is None or key < best[0]:
            best = (key, node, path[::-1])
    return best


def _edge_rate(G, u, v, efficiency) -> tuple:
    """Payload rate of the edge (u, v) at a wire efficiency (a function of the WireFormat)."""
    data = G.adj[u][v]
    link = data.get("link", "")
    wire = WIRES.get(link)
    line = float(data["bandwidth"])
    if wire is None:
        return line, link
    # the edge's bandwidth is links x the catalogue's line rate (x a what-if's degradation)
    return line / LINKS[link].bandwidth * wire.data_rate * efficiency(wire), link


def nic_path(G, nic, *, efficiency=None, sm_efficiency: float = 1.0, profile=None) -> NicPath:
    """The path NCCL's network channels take through one NIC, and the link that binds it.

    Parameters
    ----------
    G : networkx.DiGraph
        A cluster fabric (:mod:`topo.cluster`).
    nic : node id
        A NIC with a network port (``port_link`` attribute).
    efficiency : callable, optional
        Link class -> share of its wire's payload rate the NIC's DMA sustains on it (the port,
        and the PCIe links it DMAs across); default 1 for every class.
    sm_efficiency : float
        Share of a wire's payload rate NCCL's kernels sustain (the GPU's side of a staged path).
    profile : str or NcclProfile, optional
        The NCCL release whose figures ``nccl_rate`` takes.

    Returns
    -------
    NicPath

    Raises
    ------
    DgxTopoError
        If ``nic`` is not a NIC with a catalogued port, or no GPU of its host reaches it over
        PCIe.
    """
    data = G.nodes[nic] if nic in G else {}
    port = data.get("port_link")
    if data.get("kind") != "nic" or port not in WIRES:
        raise DgxTopoError(f"{nic!r} is not a NIC with a catalogued network port: expected a NIC "
                           f"node whose port_link is one of "
                           f"{', '.join(k for k in WIRES if LINKS[k].kind == 'network')}")
    served = _served_gpu(G, nic, pcie_paths(G, nic))
    if served is None:
        raise DgxTopoError(f"no GPU of host {data.get('host')!r} reaches {nic!r} over PCIe: expected "
                           f"the NIC in its host's PCIe tree")
    (rank, _, _), gpu, path = served
    path_class = PCIE_CLASSES[rank]
    gdr = path_class in GDR_CLASSES
    profile = nccl_profile(profile)
    wire = WIRES[port]
    scale = float(data.get("port_bandwidth", LINKS[port].bandwidth)) / LINKS[port].bandwidth
    if efficiency is None:
        def efficiency(link):
            return 1.0
    port_rate = wire.data_rate * wire.packet_efficiency * scale * efficiency(port)
    nccl = profile.link_bandwidth(port) * scale
    pcie_rate, pcie_link = float("inf"), ""
    staged = False  # the GPU's side of a staged path ends at the first CPU
    for u, v in zip(path, path[1:]):
        nccl = min(nccl, nccl_capacity(G, u, v, profile))
        if gdr or staged:
            rate, link = _edge_rate(G, u, v, lambda w: w.dma_efficiency * efficiency(w.link))
        else:
            rate, link = _edge_rate(G, u, v, lambda w: w.packet_efficiency * sm_efficiency)
        staged = staged or G.nodes[v].get("kind") == "cpu"
        if rate < pcie_rate:
            pcie_rate, pcie_link = rate, link
    return NicPath(nic, gpu, tuple(path), path_class, gdr, port, port_rate, pcie_rate, pcie_link, nccl)
