"""What one NIC moves for NCCL's network channels: its port, or the PCIe path to its GPU.

NCCL charges a channel that leaves a node the smaller of the NIC port's figure
(``speed / 8000``, NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ``ncclTopoAddNet``) and its figures
for the PCIe links between the GPU and the NIC (``width x speed / 80``, ``ncclTopoAddPci``).
What the path achieves is decided the same way, link by link, each by its own generation,
and whichever binds decides:

*The port* carries InfiniBand packets: ``data_rate x packet_efficiency`` (4096 of every 4122
bytes are payload at every generation, :data:`topo.specs.WIRES`), times the share of it the
NIC's DMA sustains.

*The PCIe path.* When the NIC and the GPU it serves share a PCIe switch (path no worse than
PXB, NCCL's default ``NCCL_NET_GDR_LEVEL``; src/graph/paths.cc ``ncclTopoCheckGdr``), the NIC
reads and writes GPU memory directly (GPUDirect RDMA): every PCIe link between them carries
the NIC's DMA both ways, writes one way and read completions the other (the reads are the
sends: ``ncclTopoCheckGdr`` enables them on every GPU here, pre-Ampere ones because they have
NVLink peers). Otherwise NCCL stages the data in host memory: the GPU's kernels write (and
read) it across the GPU's side of the path, as NCCL's kernels move data over any link
(``sm_efficiency`` of the wire's payload rate), and the NIC DMAs it across the NIC's side.

What DMA both ways moves over a PCIe link is taken per generation (:func:`dma_share`):

- *PCIe 3.0* was measured: on a DGX-1V, two GPUs under one PLX switch copying to each other
  through host memory move 9.56 GB/s over the switch's x16 uplink in each direction at once
  (writes up, read completions down: the pattern of a NIC doing GPUDirect RDMA), 0.6068 of the
  line rate (:data:`models.predict.p2p_constants.EFFICIENCIES` ``"staged"``, fitted to
  tests/data/dgx1v_p2p_gpu0_row.json). It is what binds a DGX-1V's or DGX-2's EDR NICs:
  9.56 GB/s, below the port's 12.42 and NCCL's 12.
- *PCIe 4.0, 5.0, 6.0* have no such measurement: the specification's figure
  (:attr:`topo.specs.WireFormat.dma_efficiency`: 256-byte TLPs one way, the read requests for
  the other way's data beside them), 8-10 % above the port of the same era, so the port binds.
  [U] Nothing of the gen 3 shortfall is carried to them.

The path's rate is the smallest of these; its ratio to NCCL's figure for the same path scales
the bandwidth NCCL's tuning model assumed (:func:`models.predict.measure.measured`). A link
whose wire is not catalogued (the socket-to-socket link on a staged path) counts at its line
rate [U].

Why EDR-era clusters stay below NCCL's figure
---------------------------------------------
Their wires do not explain it: an EDR port carries 99.4 % of its data rate as payload, as an
NDR one does, and PCIe 3.0 x16 by its specification moves 13.62 GB/s of DMA both ways (86 % of
its line rate), above the port's 12.42. What was examined, on 16 DGX-2s (NCCL 2.27.7's search:
8 channels of 12 GB/s, one per NIC; ``ncclTopoPostset`` runs them as 16 CTAs, 2 per NIC):

- *NCCL's kernels per channel* (one CTA each): the DGX-2 runs in tests/data reach 123.6 GB/s
  busbw on 6 channels (12 CTAs), at least 20.6 GB/s per channel on a V100; 16 DGX-2s ask 12.
  A per-channel cap cannot bind there (the 2.5-2.7 searches give the same 8 x 12).
- *GPUDirect RDMA reads* (the sends): read completions split at a 64-byte read completion
  boundary (PCI Express Base Specification 3.0, sec. 2.3.1.1) would leave 11.46 GB/s
  (64 / (64 + 20 + 4) of the data rate), 0.955 of NCCL's 12: 16 DGX-2s near 81 GB/s, not near
  the measurement. Nothing says V100s return 64-byte completions [U].
- *NCCL's proxy*: 8 steps of 512 KiB in flight per connection (``NCCL_STEPS``, src/include/device.h;
  the 4 MiB ``NCCL_BUFFSIZE``, src/init.cc; :mod:`models.engine.nccl.pipelining`) is ~700 us of
  data at a connection's 6 GB/s, against a few microseconds a step (network latency, the GDR
  flush of pre-Hopper GPUs): never the limit.
- *PCIe 3.0 DMA as measured*: 9.56 GB/s each way through a PLX switch (above). This binds,
  and gives 16 DGX-2s 68.0 GB/s busbw at 1 GiB (NCCL's estimate 84.7; the model was checked
  within ~4 % of a measurement about 18 % below NCCL's). Why PCIe 3.0 DMA falls that far
  short of its specification (completer and root-complex behaviour, flow-control credits) is
  not established [U]; the figure is a measurement of that generation and is used for it alone.

Two DGX H100s (PCIe 5.0, NDR) are bound by their ports at 49.68 GB/s, 1.035 of NCCL's 48
(the PCIe 5.0 x16 figure, below the port's 50): 383.5 GB/s busbw with the ring forced, NCCL's
estimate 371.0; a PCIe 5.0 path short of its specification as PCIe 3.0 is of its own would give
~300, below what was measured there (more than 10 % above 311.6).

Examples
--------
>>> import topo
>>> G = topo.build("2xdgxh100")
>>> p = nic_path(G, "h0.mlx5_0")
>>> p.gpu, p.path_class, p.gdr, p.binding
('h0.gpu0', 'PXB', True, 'ib_ndr')
>>> round(p.rate / 1e9, 2), round(p.nccl_rate / 1e9, 1), round(p.ratio, 4)
(49.68, 48.0, 1.0351)
>>> q = nic_path(topo.build("2xdgx2"), "h0.mlx5_0")
>>> q.binding, round(q.port_rate / 1e9, 2), round(q.rate / 1e9, 2), round(q.ratio, 4)
('pcie3_x16', 12.42, 9.56, 0.7966)
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from topo.errors import DgxTopoError
from topo.pcie import PCIE_CLASSES, pcie_class, pcie_paths
from topo.specs import LINKS, WIRES

from ..engine.nccl.profiles import nccl_profile
from ..engine.nccl.system import nccl_capacity
from ..engine.results import tidy_records
from .p2p_constants import EFFICIENCIES

__all__ = ["NicPath", "nic_path", "dma_share", "GDR_CLASSES", "MEASURED_DMA"]

#: PCIe classes over which NCCL uses GPUDirect RDMA by default (``NCCL_NET_GDR_LEVEL`` PXB,
#: NVIDIA/nccl v2.27.7-1 src/graph/paths.cc ``ncclTopoCheckGdr``).
GDR_CLASSES = ("PIX", "PXB")

#: PCIe generations whose DMA both ways at once was measured, with the key of the measurement
#: in :data:`models.predict.p2p_constants.EFFICIENCIES` (a share of the line rate, each direction).
MEASURED_DMA = MappingProxyType({"pcie3_x16": "staged"})


def dma_share(link: str) -> tuple:
    """Share of a link's line rate a device DMAing both ways over it moves each way, and its basis.

    Parameters
    ----------
    link : str
        A key of :data:`topo.specs.WIRES`.

    Returns
    -------
    (float, str)
        The share, and ``"measured"`` (that generation's DMA was measured, :data:`MEASURED_DMA`)
        or ``"specification"`` (:attr:`topo.specs.WireFormat.dma_efficiency` of the data rate:
        256-byte TLPs one way, the read requests for the other way's data beside them [U]).

    Examples
    --------
    >>> share, basis = dma_share("pcie3_x16")
    >>> round(share * 15.7538, 2), basis
    (9.56, 'measured')
    >>> share, basis = dma_share("pcie5_x16")
    >>> round(share * 63.0154, 2), basis
    (54.5, 'specification')
    """
    if link in MEASURED_DMA:
        return EFFICIENCIES[MEASURED_DMA[link]].value, "measured"
    wire = WIRES[link]
    return wire.data_rate * wire.dma_efficiency / LINKS[link].bandwidth, "specification"


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
    pcie_basis : str
        Where ``pcie_rate`` comes from: ``"measured"`` (that generation's DMA was measured,
        :data:`MEASURED_DMA`), ``"specification"``, ``"kernels"`` (NCCL's kernels write across
        the GPU's side of a staged path) or ``"line rate"`` (no catalogued wire); ``""``
        without a PCIe link.
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
    pcie_basis: str = ""

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

    def to_records(self) -> list:
        """One tidy row: the NIC, the GPU it serves, its path and what binds it (:mod:`models.engine.results`)."""
        return tidy_records({
            "nic": str(self.nic), "gpu": str(self.gpu), "path_class": self.path_class, "gdr": self.gdr,
            "port": self.port, "port_rate_Bps": self.port_rate, "pcie_link": self.pcie_link,
            "pcie_rate_Bps": self.pcie_rate, "pcie_basis": self.pcie_basis, "nccl_rate_Bps": self.nccl_rate,
            "rate_Bps": self.rate, "binding": self.binding, "ratio": self.ratio})


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


def _edge_rate(G, u, v, share) -> tuple:
    """``(payload rate, link class, basis)`` of the edge (u, v); ``share(link)`` gives
    ``(share of the line rate, basis)`` for a catalogued wire."""
    data = G.adj[u][v]
    link = data.get("link", "")
    line = float(data["bandwidth"])  # links x the catalogue's line rate (x a what-if's degradation)
    if link not in WIRES:
        return line, link, "line rate"
    fraction, basis = share(link)
    return line * fraction, link, basis


def nic_path(G, nic, *, efficiency=None, sm_efficiency: float = 1.0, profile=None) -> NicPath:
    """The path NCCL's network channels take through one NIC, and the link that binds it.

    Parameters
    ----------
    G : networkx.DiGraph
        A cluster fabric (:mod:`topo.cluster`).
    nic : node id
        A NIC with a network port (``port_link`` attribute).
    efficiency : callable, optional
        Link class -> factor on what the NIC's DMA moves over it: the port's payload rate, and
        each PCIe link's DMA share (:func:`dma_share`); default 1 for every class.
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

    def dma(link):  # the NIC's DMA: its generation's share, x the NIC's efficiency on it
        fraction, basis = dma_share(link)
        return fraction * efficiency(link), basis

    def kernels(link):  # NCCL's kernels write the GPU's side of a staged path
        wire = WIRES[link]
        return wire.data_rate * wire.packet_efficiency * sm_efficiency / LINKS[link].bandwidth, "kernels"

    pcie_rate, pcie_link, pcie_basis = float("inf"), "", ""
    staged = False  # the GPU's side of a staged path ends at the first CPU
    for u, v in zip(path, path[1:]):
        nccl = min(nccl, nccl_capacity(G, u, v, profile))
        rate, link, basis = _edge_rate(G, u, v, dma if gdr or staged else kernels)
        staged = staged or G.nodes[v].get("kind") == "cpu"
        if rate < pcie_rate:
            pcie_rate, pcie_link, pcie_basis = rate, link, basis
    return NicPath(nic, gpu, tuple(path), path_class, gdr, port, port_rate, pcie_rate, pcie_link, nccl,
                   pcie_basis)
