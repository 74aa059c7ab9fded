"""The hardware catalogue: every link technology, GPU and CPU the builders use, with sources.

One table per kind of part, as frozen dataclasses, in SI units. Builders and models read
these tables; no bandwidth, latency or port count appears as a literal anywhere else.

``bandwidth`` of a link technology is the line rate per direction of one physical link, as
the vendor states it; the graphs carry it (``links`` x ``bandwidth`` on each edge). What NCCL
charges for a link is not a hardware fact and lives with NCCL's other constants, in the NCCL
profiles of :mod:`models.engine.nccl.profiles`.

A fact that is not established by its sources is tagged [U] (uncertain) in the entry's
``uncertain`` text, so nobody mistakes it for a verified figure. Link latencies are not
published for any of these parts ([S35]: NVSwitch/NVLink latency is not public); the values
below are stated assumptions of the right order, which the P2P model calibrates against
measured latency.

Sources (keys resolve in :data:`topo.sources.SOURCES`):
    [S3]  DGX-1 with V100 whitepaper ("six NVLink ... 25 GB/s in each direction").
    [S10] DGX-1 (P100) article: "20GB/sec up 20GB/sec down, with 4 links per GP100".
    [S11] nvidia.com NVLink page: "20 to 25 GB/second in each direction".
    [S12] A100 whitepaper: 12 links, 25 GB/s per direction each.
    [S13] H100 whitepaper: 18 links, 25 GB/s per direction each.
    [S14] [S15] GB200 NVL72 reference architecture: 900 GB/s per GPU per direction / 18 links.
    [S30] NVIDIA/nccl src/graph/topo.h: SM60 18.0, SM70 20.0, SM80 20.0, SM90 20.6, SM100 40.1,
          PCI_BW 12.0, BDW_QPI_BW 6.0, SKL_QPI_BW 10.0 (GB/s).
    [S33] [S34] NCCL logs: PCIe Gen4 x16 as PCI[24.0], Gen5 as PCI[48.0], 400G NIC as NET[50.0].
    [S35] astra-sim issue 59: NVLink latency not public; 500 ns per NVLink hop assumed for DGX-2.
    [S50] PCIe per-lane rates: 8/16/32 GT/s with 128b/130b encoding.
    [S51] IB EDR 4x: 25.78125 Gb/s per lane, 64b/66b, 100 Gb/s of data; [S51b] HDR 200 Gb/s;
          [S51c] NDR 400 Gb/s.
    [S52] [S53] Broadwell-EP QPI 9.6 GT/s; Skylake-SP UPI 10.4 GT/s, three links.
    NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ncclTopoAddNet: NET bw = speed_Mbps / 8000 (100 Gb/s -> 12.5 GB/s).
    [S17] NVIDIA Fabric Manager User Guide, "GPU Baseboard Topologies" (HGX A100/H100/B200 wiring).
    [S37] NVIDIA/nccl issue 1505: DGX A100 nvidia-smi topo -m and NCCL topology XML.
    [S38] DGX A100 datasheet tables: 2x AMD EPYC 7742, 8x ConnectX-6 HDR, 6 NVSwitches.
    [S39] "How to Scale Your Model" (JAX scaling book), GPU chapter: H100 5+4+4+5 links,
          NVSwitch gen3 "up to 64 NVLink ports" (secondary).
    [S42] vllm-project/vllm issue 13855: DGX H100 nvidia-smi topo -m (Xeon 8480C affinities).
    [S43] NVIDIA DGX BasePOD reference architecture, "Core Components" (DGX H100/H200/B200).
    [S44] NVIDIA DGX GB200 User Guide, "Hardware" (18 compute trays of 2 Grace + 4 B200).
    [S63] NVIDIA DGX B200 User Guide, "Introduction to NVIDIA DGX B200 Systems" (Xeon 8570,
          "2 x 5th generation NVLink switches ... 14.4 TB/s aggregate bandwidth").
    [S64] NVIDIA "NVLink and NVLink Switch" product page: 18 x 100 GB/s links = 1.8 TB/s per
          B200, "NVLink Switch features 144 NVLink ports", "130TB/s ... in one NVL72".
    [S71] vllm-project/vllm issue 16336: 8x B200 nvidia-smi topo -m (Xeon 8570 affinities).
    [S101]-[S108] GPU datasheets and architecture whitepapers (SMs, clocks, peaks, HBM).

Examples
--------
>>> from topo.specs import LINKS
>>> from topo.units import GB
>>> LINKS["nvlink2"].bandwidth / GB
25.0
>>> round(LINKS["pcie3_x16"].bandwidth / GB, 2)
15.75
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .units import GB, GiB, ns

__all__ = [
    "LinkSpec", "GpuSpec", "CpuSpec", "SwitchSpec",
    "LINKS", "GPUS", "CPUS", "NVSWITCHES", "NETWORK_SWITCHES", "WireFormat", "WIRES",
]



@dataclass(frozen=True, slots=True)
class LinkSpec:
    """One physical link technology.

    Attributes
    ----------
    name : str
        Catalogue key, also stored on every edge as ``link`` (e.g. ``"nvlink2"``).
    kind : str
        The edge kind it makes (``"nvlink"``, ``"pcie"``, ``"cpu-to-cpu"``, ``"network"``).
    label : str
        Display name (``"NVLink 2.0"``).
    bandwidth : float
        Line rate of one physical link, per direction. [B/s]
    latency : float
        One-way latency of one hop over this link (an assumption where unpublished). [s]
    source : str
        Where ``bandwidth`` comes from.
    uncertain : str
        What in this entry is not verified (empty when everything is).
    """

    name: str
    kind: str
    label: str
    bandwidth: float
    latency: float
    source: str
    uncertain: str = ""


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model.

    Attributes
    ----------
    model : str
        As nvidia-smi names it.
    compute_capability : int
        SM version (60 = Pascal, 70 = Volta); selects NCCL's per-link NVLink figure.
    nvlink : str
        Key into :data:`LINKS` of its NVLink generation.
    nvlink_ports : int
        NVLink ports (links) per GPU.
    memory : int
        Device memory. [bytes]
    memory_bandwidth : float
        HBM bandwidth, the ceiling of a device-local copy. [B/s]
    source : str
    uncertain : str
    generation : str
        The architecture's product generation (``"V100"``), shared by its memory and clock
        variants.
    sm_count : int
        Streaming multiprocessors enabled on the part.
    clock : float
        The boost clock at which the tensor-core peak is quoted. [Hz]
    peak : tuple of (str, float)
        Dense peak per training dtype: tensor cores where the dtype has them (``tf32`` only
        from Ampere), ``fp32`` on the FP32 units (half of NVIDIA's "with sparsity" figures).
        [FLOP/s]
    """

    model: str
    compute_capability: int
    nvlink: str
    nvlink_ports: int
    memory: int
    memory_bandwidth: float
    source: str
    uncertain: str = ""
    generation: str = ""
    sm_count: int = 0
    clock: float = 0.0
    peak: tuple = ()

    @property
    def peaks(self) -> dict:
        """``peak`` as a dict, dtype -> dense FLOP/s."""
        return dict(self.peak)

    @property
    def nvlink_bandwidth(self) -> float:
        """NVLink bandwidth of one GPU, all its links, per direction. [B/s]"""
        return self.nvlink_ports * LINKS[self.nvlink].bandwidth


@dataclass(frozen=True, slots=True)
class CpuSpec:
    """One host CPU model (one socket).

    Attributes
    ----------
    model : str
    cores : int
        Physical cores per socket.
    threads_per_core : int
        Hardware threads per core (2 with Hyper-Threading); sets the CPU affinity lists.
    socket_link : str
        Key into :data:`LINKS` of its socket-to-socket link.
    socket_links : int
        Physical socket-to-socket links between the two sockets of a 2-socket board.
    source : str
    uncertain : str
    numa_nodes : int
        NUMA nodes per socket as the DGX configures it (4 for the NPS4 EPYC of a DGX A100).
        Builders add one ``cpu`` node per NUMA node, as NCCL and nvidia-smi see the host.
    """

    model: str
    cores: int
    threads_per_core: int
    socket_link: str
    socket_links: int
    source: str
    uncertain: str = ""
    numa_nodes: int = 1


@dataclass(frozen=True, slots=True)
class SwitchSpec:
    """One NVSwitch generation.

    Attributes
    ----------
    model : str
    ports : int
        NVLink ports of one switch chip.
    link : str
        Key into :data:`LINKS` of the NVLink generation of its ports.
    source : str
    uncertain : str
    sharp : bool
        The chip reduces in the switch (NVLink SHARP, which NCCL's NVLS algorithms use):
        NVSwitch gen3 and later [S13] [S64].
    """

    model: str
    ports: int
    link: str
    source: str
    uncertain: str = ""
    sharp: bool = False


def _pcie_x16(gigatransfers: float) -> float:
    """Data rate of a PCIe x16 link with 128b/130b encoding, per direction. [B/s]"""
    return 16 * gigatransfers * 1e9 * (128 / 130) / 8


_NVLINK_LATENCY = 500 * ns  # [S35] ASTRA-sim's per-hop assumption; NVIDIA publishes none.
_NVLINK_LATENCY_NOTE = "latency: unpublished, 500 ns per hop is ASTRA-sim's assumption [S35]"
_PCIE_LATENCY = 150 * ns
_PCIE_LATENCY_NOTE = ("latency: unpublished for these switches; 150 ns per hop is an assumption "
                      "of the usual order of PCIe switch cut-through latency")
_SOCKET_LATENCY = 100 * ns
_SOCKET_LATENCY_NOTE = "latency: 100 ns per crossing is an assumption (no source retrieved)"
_IB_LATENCY = 600 * ns
_IB_LATENCY_NOTE = "latency: 600 ns per network hop (NIC to switch port) is an assumption"

#: Link technologies by catalogue key.
LINKS: Mapping[str, LinkSpec] = MappingProxyType({spec.name: spec for spec in (
    LinkSpec("nvlink1", "nvlink", "NVLink 1.0", 20 * GB, _NVLINK_LATENCY,
             "[S10] [S11] 20 GB/s per direction per link (P100); NCCL SM60 18.0 [S30]",
             _NVLINK_LATENCY_NOTE),
    LinkSpec("nvlink2", "nvlink", "NVLink 2.0", 25 * GB, _NVLINK_LATENCY,
             "[S3] [S11] 25 GB/s per direction per link (V100); NCCL SM70 20.0 [S30] "
             "(21 in NCCL 2.5-2.9, 22 in 2.10-2.17)",
             _NVLINK_LATENCY_NOTE),
    LinkSpec("nvlink3", "nvlink", "NVLink 3.0", 25 * GB, _NVLINK_LATENCY,
             "[S12] 25 GB/s per direction per link (A100); NCCL SM80 20.0 [S30]",
             _NVLINK_LATENCY_NOTE),
    LinkSpec("nvlink4", "nvlink", "NVLink 4.0", 25 * GB, _NVLINK_LATENCY,
             "[S13] 25 GB/s per direction per link (H100); NCCL SM90 20.6 [S30]",
             _NVLINK_LATENCY_NOTE),
    LinkSpec("nvlink5", "nvlink", "NVLink 5.0", 50 * GB, _NVLINK_LATENCY,
             "[S14] [S15] 900 GB/s per GPU per direction over 18 links (B200); NCCL SM100 40.1 [S30]",
             "bandwidth derived (900/18), lanes and signalling rate unverified; " + _NVLINK_LATENCY_NOTE),
    LinkSpec("pcie3_x16", "pcie", "PCIe 3.0 x16", _pcie_x16(8), _PCIE_LATENCY,
             "[S50] 8 GT/s x16 128b/130b = 15.75 GB/s per direction; NCCL PCI_BW 12.0 [S30]",
             _PCIE_LATENCY_NOTE),
    LinkSpec("pcie4_x16", "pcie", "PCIe 4.0 x16", _pcie_x16(16), _PCIE_LATENCY,
             "[S50] 16 GT/s x16 = 31.5 GB/s per direction; NCCL logs PCI[24.0] [S33]",
             _PCIE_LATENCY_NOTE),
    LinkSpec("pcie5_x16", "pcie", "PCIe 5.0 x16", _pcie_x16(32), _PCIE_LATENCY,
             "[S50] 32 GT/s x16 = 63.0 GB/s per direction; NCCL logs PCI[48.0] [S34]",
             _PCIE_LATENCY_NOTE),
    LinkSpec("pcie6_x16", "pcie", "PCIe 6.0 x16", 16 * 64e9 / 8, _PCIE_LATENCY,
             "64 GT/s x16 PAM4, no line code (flit mode): 128 GB/s per direction (PCI Express "
             "Base Specification 6.0, ch. 4 'Physical Layer Logical Block')",
             "DGX B300's GPU and ConnectX-8 links are taken as PCIe 6.0 [U]; NCCL's "
             "kvDictPciGen gives 64 GT/s x16 96 GB/s (src/graph/topo.cc v2.27.7-1); "
             + _PCIE_LATENCY_NOTE),
    LinkSpec("qpi_bdw", "cpu-to-cpu", "QPI 9.6 GT/s (Broadwell-EP)", 9.6e9 * 2, _SOCKET_LATENCY,
             "[S52] 9.6 GT/s x 2 bytes = 19.2 GB/s per direction per link; NCCL BDW_QPI_BW 6.0 "
             "for the whole socket-to-socket connection [S30]",
             "per-link rate derived [D]; " + _SOCKET_LATENCY_NOTE),
    LinkSpec("upi_skl", "cpu-to-cpu", "UPI 10.4 GT/s (Skylake-SP)", 10.4e9 * 2, _SOCKET_LATENCY,
             "[S52] [S53] 10.4 GT/s x 2 bytes = 20.8 GB/s per direction per link; NCCL SKL_QPI_BW "
             "10.0 for the whole socket-to-socket connection [S30]",
             "per-link rate derived [D]; " + _SOCKET_LATENCY_NOTE),
    LinkSpec("upi_spr", "cpu-to-cpu", "UPI 16 GT/s (Sapphire Rapids)", 16e9 * 2, _SOCKET_LATENCY,
             "16 GT/s x 2 bytes = 32 GB/s per direction per link (DGX H100/H200, Xeon 8480C); NCCL "
             "SRP_QPI_BW 22.0 for the whole socket-to-socket connection (NVIDIA/nccl v2.27.7-1 "
             "src/graph/topo.h, from v2.26; the Skylake 10.0 before)",
             "[U] 16 GT/s and 4 links per socket are from Intel's product pages, not retrieved; "
             + _SOCKET_LATENCY_NOTE),
    LinkSpec("upi_emr", "cpu-to-cpu", "UPI 20 GT/s (Emerald Rapids)", 20e9 * 2, _SOCKET_LATENCY,
             "20 GT/s x 2 bytes = 40 GB/s per direction per link (DGX B200, Xeon 8570 [S63]); NCCL "
             "ERP_QPI_BW 40.0 for the whole connection (NVIDIA/nccl v2.27.7-1 src/graph/topo.h)",
             "[U] 20 GT/s, 4 links per socket and NCCL classing the 8570 as ERP are not verified; "
             + _SOCKET_LATENCY_NOTE),
    LinkSpec("xgmi", "cpu-to-cpu", "AMD xGMI (Infinity Fabric between EPYC sockets)",
             _pcie_x16(16), _SOCKET_LATENCY,
             "one x16 xGMI link between the sockets of a DGX A100 [S38]; NCCL AMD_BW 16.0 for any "
             "two CPU (NUMA) nodes of an AMD host (NVIDIA/nccl v2.27.7-1 src/graph/topo.h, v2.19+)",
             "[U] raw rate not retrieved: taken as x16 at the PCIe Gen4 signalling rate (16 GT/s); "
             "[U] the number of links populated; " + _SOCKET_LATENCY_NOTE),
    LinkSpec("infinity_fabric", "cpu-to-cpu", "AMD Infinity Fabric between NPS4 quadrants of a socket",
             32 * 1.467e9, _SOCKET_LATENCY,
             "the I/O die joins the four NUMA quadrants of an EPYC 7742 in NPS4 mode (DGX A100: "
             "GPU to a NIC of another quadrant is SYS [S37]); NCCL AMD_BW 16.0 between any two "
             "CPU (NUMA) nodes (NVIDIA/nccl v2.27.7-1 src/graph/topo.h)",
             "[U] bandwidth is an assumption: 32 B per fabric clock at 1.467 GHz; "
             + _SOCKET_LATENCY_NOTE),
    LinkSpec("nvlink_c2c", "pcie", "NVLink-C2C (Grace to Blackwell)", 450 * GB, _NVLINK_LATENCY,
             "GB200 superchip: Grace to B200 NVLink-C2C, 900 GB/s bidirectional (NVIDIA GB200 "
             "NVL72 product page, secondary); NCCL LINK_C2C reads its bandwidth from NVML "
             "(NVIDIA/nccl v2.27.7-1 src/graph/topo.cc)",
             "[U] 900 GB/s bidirectional per GPU or shared by the superchip's two GPUs is not "
             "established; [U] NCCL's figure (NVML c2c bw x count) taken as the line rate; the edge "
             "kind is 'pcie' until the schema has a C2C kind; " + _NVLINK_LATENCY_NOTE),
    LinkSpec("grace_grace", "cpu-to-cpu", "Grace-to-Grace link of a GB200 compute tray [U]",
             450 * GB, _SOCKET_LATENCY,
             "the two Grace CPUs of a GB200 compute tray are two NUMA nodes of one OS [S44]",
             "[U] technology and bandwidth not retrieved: taken as NVLink-C2C (450 GB/s per "
             "direction, as in the Grace CPU Superchip); [U] NCCL's inter-CPU figure for ARM; "
             + _SOCKET_LATENCY_NOTE),
    LinkSpec("ib_edr", "network", "InfiniBand EDR 4x (100 Gb/s)", 100e9 / 8, _IB_LATENCY,
             "[S51] 4 x 25.78125 Gb/s, 64b/66b = 100 Gb/s of data; NCCL net bw = 100000 Mb/s / 8000 "
             "= 12.5 (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc)",
             _IB_LATENCY_NOTE),
    LinkSpec("ib_hdr", "network", "InfiniBand HDR 4x (200 Gb/s)", 200e9 / 8, _IB_LATENCY,
             "[S51b] 200 Gb/s; NCCL net bw 25.0 (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc)", _IB_LATENCY_NOTE),
    LinkSpec("ib_ndr", "network", "InfiniBand NDR 4x (400 Gb/s)", 400e9 / 8, _IB_LATENCY,
             "[S51c] 400 Gb/s; NCCL logs NET[50.0] [S34]", _IB_LATENCY_NOTE),
    LinkSpec("ib_xdr", "network", "InfiniBand XDR 4x (800 Gb/s)", 800e9 / 8, _IB_LATENCY,
             "NVIDIA Quantum-X800 InfiniBand platform: 800 Gb/s per port (ConnectX-8 SuperNIC); "
             "the DGX SuperPOD with DGX B300 uses 8x XDR 800G compute NICs per node [S49]; NCCL "
             "net bw = port speed in Mb/s / 8000 = 100 (NVIDIA/nccl v2.27.7-1 "
             "src/graph/topo.cc ncclTopoAddNet)",
             "[U] no system built here has XDR NICs yet; " + _IB_LATENCY_NOTE),
)})

TF = 1e12  # FLOP/s per TFLOP/s, for the peaks below
MHz = 1e6

# Dense tensor / FP32 peaks of each architecture, shared by its memory and clock variants.
# Sparse figures ("with sparsity") are twice these and are not used.
_P100_PEAK = (("fp32", 10.6 * TF), ("fp16", 21.2 * TF))
_V100_PEAK = (("fp32", 15.7 * TF), ("fp16", 125 * TF))
_A100_PEAK = (("fp32", 19.5 * TF), ("tf32", 156 * TF), ("fp16", 312 * TF), ("bf16", 312 * TF))
_H100_PEAK = (("fp32", 67 * TF), ("tf32", 494.7 * TF), ("fp16", 989.5 * TF), ("bf16", 989.5 * TF),
              ("fp8", 1979 * TF))
# Blackwell adds the block-scaled formats: MXFP8 at the FP8 rate, NVFP4 at the FP4 rate [S117];
# Hopper has per-tensor FP8 only (no MX block scaling) [S117].
_B200_PEAK = (("fp32", 80 * TF), ("tf32", 1125 * TF), ("fp16", 2250 * TF), ("bf16", 2250 * TF),
              ("fp8", 4500 * TF), ("mxfp8", 4500 * TF), ("nvfp4", 9000 * TF))
_GB200_PEAK = (("fp32", 80 * TF), ("tf32", 1250 * TF), ("fp16", 2500 * TF), ("bf16", 2500 * TF),
               ("fp8", 5000 * TF), ("mxfp8", 5000 * TF), ("nvfp4", 10000 * TF))
# Blackwell Ultra: B200's 16-bit and FP8 rates, FP4 raised (HGX B300 108 PFLOPS dense FP4 per
# 8 GPUs [S114]; GB300 NVL72 1,080 PFLOPS dense FP4, 720 FP8 and 360 BF16 with sparsity per 72
# GPUs [S115]); TF32 and FP32 as B200 [U].
_B300_PEAK = (("fp32", 80 * TF), ("tf32", 1125 * TF), ("fp16", 2250 * TF), ("bf16", 2250 * TF),
              ("fp8", 4500 * TF), ("mxfp8", 4500 * TF), ("nvfp4", 13500 * TF))
_GB300_PEAK = (("fp32", 80 * TF), ("tf32", 1250 * TF), ("fp16", 2500 * TF), ("bf16", 2500 * TF),
               ("fp8", 5000 * TF), ("mxfp8", 5000 * TF), ("nvfp4", 15000 * TF))
_HBM_NOTE = "memory_bandwidth is NVIDIA's datasheet figure, not cross-checked by a second source [U]"

#: GPU models by short name. Compute facts: [S101] P100, [S102] V100, [S103] DGX-2H, [S104]
#: A100, [S105] H100, [S106] H200, [S107] B200, [S108] GB200, [S114] B300, [S115] GB300, [S116]
#: H800. Each peak is the product of SMs,
#: tensor (or FP32) operations per SM per clock and the boost clock, which the entries check.
GPUS: Mapping[str, GpuSpec] = MappingProxyType({
    "P100": GpuSpec("Tesla P100-SXM2-16GB", 60, "nvlink1", 4, 16 * GiB, 732 * GB,
                    "4 NVLink 1.0 links [S10] [S11], 16 GB [S8]; [S101] 56 SMs, 1,480 MHz boost, "
                    "10.6 TFLOPS FP32, 21.2 TFLOPS FP16 (no tensor cores), 732 GB/s HBM2",
                    _HBM_NOTE, generation="P100", sm_count=56, clock=1480 * MHz, peak=_P100_PEAK),
    "V100-SXM2": GpuSpec("Tesla V100-SXM2-16GB", 70, "nvlink2", 6, 16 * GiB, 900 * GB,
                         "6 NVLink 2.0 links [S3], 16 GB [S9]; [S102] 80 SMs, 1,530 MHz boost, "
                         "15.7 TFLOPS FP32, 125 TFLOPS tensor (FP16), 900 GB/s HBM2",
                         _HBM_NOTE, generation="V100", sm_count=80, clock=1530 * MHz, peak=_V100_PEAK),
    "V100-SXM2-32GB": GpuSpec("Tesla V100-SXM2-32GB", 70, "nvlink2", 6, 32 * GiB, 900 * GB,
                              "DGX-1 with V100 32GB (16 or 32 GB per GPU [S9]); compute as the "
                              "16 GB part [S102]",
                              _HBM_NOTE, generation="V100", sm_count=80, clock=1530 * MHz,
                              peak=_V100_PEAK),
    "V100-SXM3": GpuSpec("Tesla V100-SXM3-32GB", 70, "nvlink2", 6, 32 * GiB, 900 * GB,
                         "DGX-2 V100 SXM3 32 GB, one link to each of 6 NVSwitches [S17]; compute "
                         "as the SXM2 part [S102] (DGX-2: 2 PFLOPS tensor for 16 GPUs [S103])",
                         _HBM_NOTE, generation="V100", sm_count=80, clock=1530 * MHz, peak=_V100_PEAK),
    "V100-SXM3-32GB-H": GpuSpec(
        "Tesla V100-SXM3-32GB-H", 70, "nvlink2", 6, 32 * GiB, 900 * GB,
        "DGX-2H: 16 V100 SXM3 32 GB at 450 W, 2.1 PFLOPS tensor for the system [S103], so "
        "131.25 TFLOPS per GPU; the clock follows from 80 SMs x 1,024 FLOP per clock [D]",
        "[U] the nvidia-smi name ('-H') is from public benchmark submissions; [U] HBM2 taken as the "
        "900 GB/s of the SXM2/SXM3 parts (the DGX-2H datasheet gives none); FP32 scaled with the "
        "clock [D]",
        generation="V100", sm_count=80, clock=1602 * MHz,
        peak=(("fp32", 16.4 * TF), ("fp16", 131.25 * TF))),
    "A100-SXM4-40GB": GpuSpec("NVIDIA A100-SXM4-40GB", 80, "nvlink3", 12, 40 * GiB, 1555 * GB,
                              "[S12] 12 NVLink 3.0 links, 600 GB/s bidirectional; NCCL XML of a DGX "
                              "A100 320GB: device 0x20b0, sm 80 [S37]; [S104] 108 SMs, 1,410 MHz, "
                              "HBM2 1,555 GB/s",
                              _HBM_NOTE, generation="A100", sm_count=108, clock=1410 * MHz,
                              peak=_A100_PEAK),
    "A100-SXM4-80GB": GpuSpec("NVIDIA A100-SXM4-80GB", 80, "nvlink3", 12, 80 * GiB, 2039 * GB,
                              "[S12] 12 NVLink 3.0 links; DGX A100 640GB [S38]; [S104] compute as "
                              "the 40 GB part, HBM2e 2,039 GB/s",
                              _HBM_NOTE, generation="A100", sm_count=108, clock=1410 * MHz,
                              peak=_A100_PEAK),
    "H100-SXM5-80GB": GpuSpec("NVIDIA H100 80GB HBM3", 90, "nvlink4", 18, 80 * GiB, 3350 * GB,
                              "[S13] 18 NVLink 4.0 links, 900 GB/s bidirectional; DGX H100 [S43]; "
                              "[S105] 132 SMs, 3.35 TB/s HBM3; tensor peak at 1,830 MHz",
                              _HBM_NOTE + "; the nvidia-smi name is from public outputs [U]",
                              generation="H100", sm_count=132, clock=1830 * MHz, peak=_H100_PEAK),
    "H800": GpuSpec("NVIDIA H800 80GB HBM3", 90, "nvlink4", 8, 80 * GiB, 3350 * GB,
                    "[S116] the export variant of H100 SXM5: H100's tensor-core rates and HBM3, "
                    "NVLink cut to 400 GB/s bidirectional = 8 NVLink 4.0 links of 25 GB/s per "
                    "direction [S13]; DeepSeek-V3 was trained on 2,048 of them [S116]",
                    _HBM_NOTE + "; [U] the nvidia-smi name; [U] 8 links (400 GB/s over NVLink 4.0's "
                    "25 GB/s links) rather than fewer, faster ones; [U] 132 SMs as H100",
                    generation="H100", sm_count=132, clock=1830 * MHz, peak=_H100_PEAK),
    "H200": GpuSpec("NVIDIA H200", 90, "nvlink4", 18, 141 * GB, 4800 * GB,
                    "[S43] DGX H200: 8x H200 141 GB on the DGX H100 board and NVLink fabric; "
                    "[S106] H100's compute, 141 GB HBM3e at 4.8 TB/s",
                    _HBM_NOTE, generation="H200", sm_count=132, clock=1830 * MHz, peak=_H100_PEAK),
    "B200": GpuSpec("NVIDIA B200", 100, "nvlink5", 18, 180 * GB, 8000 * GB,
                    "[S63] DGX B200: 8x B200, 1,440 GB in total; [S64] 18 NVLink 5 links, 1.8 TB/s; "
                    "[S107] per GPU 4.5 PFLOPS FP8, 2.25 PFLOPS FP16/BF16, 1.125 PFLOPS TF32 dense, "
                    "8 TB/s",
                    _HBM_NOTE + "; [U] 148 SMs and the clock are not in NVIDIA's datasheets (clock "
                    "left 0, unknown); [U] fp32 80 TFLOPS",
                    generation="B200", sm_count=148, peak=_B200_PEAK),
    "GB200": GpuSpec("NVIDIA GB200", 100, "nvlink5", 18, 186 * GB, 8000 * GB,
                     "[S44] B200 of a GB200 superchip (compute tray of an NVL72); [S64] 18 NVLink 5 "
                     "links, 1.8 TB/s; 186 GB per MLCommons submission names (GB200-186GB); [S108] "
                     "NVL72: 360 PFLOPS FP16/BF16 and 720 PFLOPS FP8 with sparsity for 72 GPUs, "
                     "so 2.5 and 5 PFLOPS dense each [D]",
                     "memory and memory_bandwidth 8 TB/s are NVIDIA's datasheet figures [U]; [U] 148 "
                     "SMs as B200",
                     generation="B200", sm_count=148, peak=_GB200_PEAK),
    "B300": GpuSpec("NVIDIA B300", 103, "nvlink5", 18, 288 * GB, 8000 * GB,
                    "[S114] HGX/DGX B300: 8x Blackwell Ultra, 2.3 TB HBM3e (288 GB each), 8 TB/s, "
                    "18 NVLink 5 links (1.8 TB/s bidirectional) per GPU; per GPU 13.5 PFLOPS "
                    "dense FP4 (108 per 8), 4.5 PFLOPS FP8, 2.25 PFLOPS FP16/BF16 dense",
                    _HBM_NOTE + "; [U] 288 GB (270 GB usable per one secondary source); [U] 160 SMs "
                    "(Blackwell Ultra) and the clock not in NVIDIA's datasheets (clock left 0); [U] "
                    "fp32 and tf32 as B200; [U] compute capability 10.3 (sm_103, Blackwell Ultra: "
                    "CUDA Toolkit 12.9 release notes, recalled; one of the architectures NVIDIA/nccl "
                    "v2.27.7-1 builds for, makefiles/common.mk)",
                    generation="B300", sm_count=160, peak=_B300_PEAK),
    "GB300": GpuSpec("NVIDIA GB300", 103, "nvlink5", 18, 288 * GB, 8000 * GB,
                     "[S115] Blackwell Ultra GPU of a GB300 NVL72 compute tray (2 Grace + 4 GPUs); "
                     "18 NVLink 5 links, 1.8 TB/s; NVL72: 1,080 PFLOPS dense FP4, 720 PFLOPS FP8 and "
                     "360 PFLOPS FP16/BF16 with sparsity for 72 GPUs, so 15, 5 and 2.5 PFLOPS dense "
                     "each [D]; 20 TB HBM3e over 72 GPUs",
                     "memory (279-288 GB) and 8 TB/s are NVIDIA's figures via secondary sources [U]; "
                     "[U] 160 SMs as B300; [U] fp32 and tf32 as GB200; [U] compute capability 10.3 "
                     "as B300",
                     generation="B300", sm_count=160, peak=_GB300_PEAK),
})

#: Host CPU models by short name.
CPUS: Mapping[str, CpuSpec] = MappingProxyType({
    "E5-2698v4": CpuSpec("Intel Xeon E5-2698 v4", 20, 2, "qpi_bdw", 2,
                         "20 cores at 2.2 GHz, DGX-1 and DGX-1V [S8] [S9]; affinity "
                         "0-19,40-59 / 20-39,60-79 [S5]",
                         "socket_links: 2 QPI links per socket is from Intel ARK, not retrieved [U]"),
    "Platinum8168": CpuSpec("Intel Xeon Platinum 8168", 24, 2, "upi_skl", 3,
                            "two 24-core Xeons [S28] [S20]; affinity 0-23,48-71 [S27]; "
                            "three UPI links [S53]",
                            "model 8168 [U]; populated UPI link count [U]"),
    "EPYC7742": CpuSpec("AMD EPYC 7742 64-Core Processor", 64, 2, "xgmi", 4,
                        "DGX A100: 2x EPYC 7742, 64 cores [S38]; NPS4, 8 NUMA nodes of 16 cores, "
                        "affinity of NUMA 3 48-63,176-191 [S37]",
                        "socket_links: 4 xGMI links [U] (3 or 4 on 2-socket Rome boards)",
                        numa_nodes=4),
    "Platinum8480C": CpuSpec("Intel Xeon Platinum 8480C", 56, 2, "upi_spr", 4,
                             "DGX H100/H200: 2x Xeon Platinum 8480C, 56 cores [S43]; affinity "
                             "0-55,112-167 / 56-111,168-223 [S42]",
                             "socket_links: 4 UPI links [U]"),
    "Platinum8570": CpuSpec("Intel Xeon Platinum 8570", 56, 2, "upi_emr", 4,
                            "DGX B200: 2x Xeon 8570, 56 cores [S63]; affinity 0-55,112-167 / "
                            "56-111,168-223 [S71]",
                            "socket_links: 4 UPI links [U]"),
    "Grace": CpuSpec("NVIDIA Grace", 72, 1, "grace_grace", 1,
                     "GB200 compute tray: 2 Grace CPUs [S44]; 72 Arm Neoverse V2 cores, one thread "
                     "each (NVIDIA Grace datasheet)",
                     "cores from NVIDIA's datasheet, not retrieved [U]; the Grace-to-Grace link [U]"),
})

#: NVSwitch generations by short name.
NVSWITCHES: Mapping[str, SwitchSpec] = MappingProxyType({
    "nvswitch1": SwitchSpec("NVSwitch (first generation)", 18, "nvlink2",
                            "18 NVLink 2.0 ports at 25 GB/s per direction, "
                            "non-blocking crossbar [S18] [S19] [S25]"),
    "nvswitch2": SwitchSpec("NVSwitch (second generation)", 36, "nvlink3",
                            "DGX A100: 6 NVSwitch gen2 chips, 2 NVLink 3.0 links from every GPU to "
                            "each [S17] [S37]",
                            "36 ports is from a secondary source [U]; 16 used by the GPUs of one "
                            "baseboard"),
    "nvswitch3": SwitchSpec("NVSwitch (third generation)", 64, "nvlink4",
                            "DGX H100: 4 NVSwitch gen3 chips, 5 or 4 NVLink 4.0 links from every "
                            "GPU to each [S17]; 64 NVLink ports [S39]",
                            "64 ports is from a secondary source [U]; 40 or 32 used by GPUs, the "
                            "rest go to the OSFP NVLink-network ports [U]", sharp=True),
    "nvswitch4": SwitchSpec("NVLink 5 switch chip (fourth generation NVSwitch)", 72, "nvlink5",
                            "DGX B200: 2 chips, 9 NVLink 5 links from every GPU to each [S17], "
                            "14.4 TB/s aggregate = 2 x 72 ports x 50 GB/s x 2 directions [S63]; "
                            "NVL72 switch tray: 144 ports = 2 chips [S64]",
                            "72 ports per chip is derived [D] from the tray's 144 and DGX B200's "
                            "14.4 TB/s; [U] secondary for the 2 chips per tray", sharp=True),
})

#: InfiniBand switches by the link key of their ports. [U] Port counts are the vendors'
#: datasheet figures for the usual switch of each generation (EDR Switch-IB 2: 36 ports;
#: HDR Quantum QM8700: 40; NDR Quantum-2 QM9700: 64; XDR Quantum-X800 Q3400: 144), not
#: retrieved. :mod:`topo.cluster` builds every tier of a cluster's network from them.
NETWORK_SWITCHES: Mapping[str, SwitchSpec] = MappingProxyType({
    "ib_edr": SwitchSpec("36-port EDR InfiniBand switch", 36, "ib_edr",
                         "vendor datasheet (Switch-IB 2 class)", "port count [U]"),
    "ib_hdr": SwitchSpec("40-port HDR InfiniBand switch", 40, "ib_hdr",
                         "vendor datasheet (Quantum QM8700 class)", "port count [U]"),
    "ib_ndr": SwitchSpec("64-port NDR InfiniBand switch", 64, "ib_ndr",
                         "vendor datasheet (Quantum-2 QM9700 class)", "port count [U]"),
    "ib_xdr": SwitchSpec("144-port XDR InfiniBand switch", 144, "ib_xdr",
                         "NVIDIA Quantum-X800 Q3400 switch: 144 ports of 800 Gb/s (product "
                         "announcement, GTC 2024); the DGX B300 SuperPOD reference architecture "
                         "builds its compute fabric from it [S49]",
                         "port count from the announcement, datasheet not retrieved [U]"),
})


# ------------------------------------------------------------------ the wire of each technology
@dataclass(frozen=True, slots=True)
class WireFormat:
    """How one link technology turns its signalling into payload, from its specification.

    The physical layer gives ``data_rate``: lanes x bit rate per lane x line code x forward
    error correction. The link layer wraps every payload in a packet (headers, CRCs, framing
    tokens) and spends some of the wire on control packets (acknowledgements, flow-control
    credits); what is left is the payload rate. Every field is a fact of the technology's
    specification or, where a platform setting decides it (PCIe Max_Payload_Size and
    Max_Read_Request_Size, the InfiniBand MTU), the setting these systems run with, tagged
    [U] in ``uncertain`` when it is not established.

    Attributes
    ----------
    link : str
        Key of :data:`LINKS`.
    lanes : int
        Lanes (differential pairs) per direction.
    lane_rate : float
        Bit rate of one lane on the wire (GT/s for NRZ; twice the symbol rate for PAM4). [bit/s]
    coding : tuple of (int, int)
        Line code as (data bits, coded bits): (128, 130), (64, 66), (256, 257); (1, 1) for none.
    fec : tuple of (int, int)
        Forward error correction as (message, block) in the same unit: (514, 544) for the
        RS(544,514) code, (236, 256) for the TLP bytes of a PCIe 6.0 flit; (1, 1) for none.
    payload : int
        Payload of one packet at the largest size these systems use (InfiniBand MTU, PCIe
        Max_Payload_Size, NVLink data flits). [bytes]
    header : int
        Bytes one packet adds to its payload on the wire: headers, CRCs, framing tokens.
    control : float
        Link-control bytes per packet sent in the same direction (PCIe Ack and UpdateFC DLLPs);
        0 where the format carries them inside its packets or blocks.
    read_request : int
        PCIe: bytes of one memory read request on the wire (it travels against the data it
        asks for); 0 for a technology whose DMA does not read across it.
    read_size : int
        PCIe: Max_Read_Request_Size, the data one read request asks for. [bytes]
    source : str
    uncertain : str

    Examples
    --------
    >>> w = WIRES["ib_ndr"]
    >>> w.data_rate / 1e9, round(w.packet_efficiency, 4)
    (50.0, 0.9937)
    >>> round(WIRES["pcie4_x16"].data_rate / 1e9, 2), round(WIRES["pcie4_x16"].dma_efficiency, 4)
    (31.51, 0.8649)
    """

    link: str
    lanes: int
    lane_rate: float
    coding: tuple
    fec: tuple
    payload: int
    header: int
    control: float = 0.0
    read_request: int = 0
    read_size: int = 0
    source: str = ""
    uncertain: str = ""

    @property
    def data_rate(self) -> float:
        """Bytes per second the physical layer delivers, per direction. [B/s]"""
        return (self.lanes * self.lane_rate * self.coding[0] / self.coding[1]
                * self.fec[0] / self.fec[1] / 8)

    @property
    def packet_efficiency(self) -> float:
        """Share of the data rate that is payload, for a stream of full packets one way."""
        return self.payload / (self.payload + self.header + self.control)

    @property
    def dma_efficiency(self) -> float:
        """Share of the data rate that is payload for a device that DMAs both ways over the
        link (a NIC writing what it receives and reading what it sends): each direction carries
        full write packets and the read requests for the data going the other way."""
        requests = self.read_request * self.payload / self.read_size if self.read_size else 0.0
        return self.payload / (self.payload + self.header + self.control + requests)

    @property
    def payload_rate(self) -> float:
        """``data_rate x packet_efficiency``. [B/s]"""
        return self.data_rate * self.packet_efficiency


# NVLink: packets of 16-byte flits, one header flit per up to 16 data flits (256 B) (Foley and
# Danskin, "Ultra-Performance Pascal GPU and NVLink Interconnect", IEEE Micro 37(2), 2017);
# no line code is counted: the per-link rates NVIDIA states are lanes x signalling / 8.
_NVLINK_FRAMING = "1 header flit per 16 data flits of 16 B (Foley and Danskin, IEEE Micro 37(2), 2017)"
# PCIe 3.0-5.0 (128b/130b): a TLP on the wire is the 4-byte STP framing token (which carries
# the TLP sequence number from 3.0 on), the header (4 DW for a memory request with a 64-bit
# address) and the 4-byte LCRC: 24 B per memory write, 24 B per read request (PCI Express Base
# Specification 3.0/4.0/5.0, sec. 2.2 'Transaction Layer Protocol - Packet Definition', sec. 3.6
# 'Data Integrity' and sec. 4.2.2.3 'Framing Tokens'). Ack and UpdateFC DLLPs are 8 B on the
# wire each (6 B + 2-byte SDP token, sec. 3.5 and 4.2.2.3).
_PCIE_TLP = ("24 B per 4-DW TLP: STP token 4 + header 16 + LCRC 4 (PCI Express Base Specification "
             "{rev}, sec. 2.2, 3.6, 4.2.2.3); Ack + UpdateFC DLLPs 8 B each (sec. 3.5)")
_PCIE_SETTINGS = ("[U] Max_Payload_Size 256 B (what NVIDIA GPUs support, so every path to a GPU "
                  "runs at it) and Max_Read_Request_Size 512 B (the usual default) are settings "
                  "of the host, not verified on these systems; [U] one Ack and one UpdateFC DLLP "
                  "per 4 TLPs (the coalescing the spec's Ack latency timer allows at these "
                  "payloads), not measured")
# InfiniBand: an RDMA-write packet carries LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B around up to
# 4096 B of payload (the RETH, 16 B, only on a message's first packet) (InfiniBand Architecture
# Specification vol. 1, ch. 5 'Data Packet Format' and ch. 9 'Transport Layer').
_IB_PACKET_FORMAT = ("MTU 4096 B, LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per packet (InfiniBand "
                     "Architecture Specification vol. 1, ch. 5 and 9)")
_IB_UNCERTAIN = ("[U] the 4096 B MTU is the largest the spec allows and what NCCL runs with on "
                 "these fabrics; RC acknowledgements (30 B each, coalesced) and flow-control "
                 "packets are not counted")
# HDR/NDR/XDR lanes are PAM4 with the RS(544,514) ('KP4') code over 256b/257b-transcoded data,
# the per-lane format of IEEE Std 802.3bs-2017 clause 119 and 802.3cd-2018 (50/100 Gb/s lanes).
_KP4 = ("256b/257b transcoding and RS(544,514) FEC (IEEE Std 802.3bs-2017, clause 119; the "
        "InfiniBand Architecture Specification vol. 2 physical layer uses the same lane format)")

#: The wire of each link technology, keyed like :data:`LINKS`.
WIRES: Mapping[str, WireFormat] = MappingProxyType({w.link: w for w in (
    WireFormat("nvlink1", 8, 20e9, (1, 1), (1, 1), 256, 16,
               source="8 lanes x 20 Gb/s (Tesla P100 whitepaper, NVIDIA 2016); " + _NVLINK_FRAMING,
               uncertain="[U] 8 lanes per direction"),
    WireFormat("nvlink2", 8, 25.78125e9, (1, 1), (1, 1), 256, 16,
               source="8 lanes x 25.78125 Gb/s (NVIDIA A100 Tensor Core GPU Architecture "
                      "whitepaper, on V100); " + _NVLINK_FRAMING),
    WireFormat("nvlink3", 4, 50e9, (1, 1), (1, 1), 256, 16,
               source="4 lanes x 50 Gb/s (NVIDIA A100 Tensor Core GPU Architecture whitepaper); "
                      + _NVLINK_FRAMING,
               uncertain="[U] packet framing taken from NVLink 1/2"),
    WireFormat("nvlink4", 2, 100e9, (1, 1), (1, 1), 256, 16,
               source="2 PAM4 lanes, 25 GB/s per link per direction (NVIDIA H100 Tensor Core GPU "
                      "Architecture whitepaper); " + _NVLINK_FRAMING,
               uncertain="[U] 100 Gb/s of data per lane derived from the 25 GB/s; packet framing "
                         "taken from NVLink 1/2"),
    WireFormat("nvlink5", 2, 200e9, (1, 1), (1, 1), 256, 16,
               source="18 links, 1.8 TB/s both ways per B200 (NVIDIA NVLink product page [S64]); "
                      + _NVLINK_FRAMING,
               uncertain="[U] lanes and per-lane rate derived from the per-link 50 GB/s; packet "
                         "framing taken from NVLink 1/2"),
    WireFormat("nvlink_c2c", 1, 450e9 * 8, (1, 1), (1, 1), 256, 16,
               source="NVLink-C2C, 450 GB/s per direction (see LINKS['nvlink_c2c']); "
                      + _NVLINK_FRAMING,
               uncertain="[U] lanes and signalling not in the sources used: one 'lane' at the "
                         "aggregate rate; [U] packet framing taken from NVLink"),
    WireFormat("pcie3_x16", 16, 8e9, (128, 130), (1, 1), 256, 24, 4.0, 24, 512,
               source="8 GT/s x16, 128b/130b [S50]; " + _PCIE_TLP.format(rev="3.0"),
               uncertain=_PCIE_SETTINGS),
    WireFormat("pcie4_x16", 16, 16e9, (128, 130), (1, 1), 256, 24, 4.0, 24, 512,
               source="16 GT/s x16, 128b/130b [S50]; " + _PCIE_TLP.format(rev="4.0"),
               uncertain=_PCIE_SETTINGS),
    WireFormat("pcie5_x16", 16, 32e9, (128, 130), (1, 1), 256, 24, 4.0, 24, 512,
               source="32 GT/s x16, 128b/130b [S50]; " + _PCIE_TLP.format(rev="5.0"),
               uncertain=_PCIE_SETTINGS),
    # Flit mode: 256-byte flits of 236 TLP bytes, 6 DLP bytes (where DLLPs and the sequence
    # number travel), 8 CRC and 6 FEC bytes; a TLP has no STP token or LCRC of its own.
    WireFormat("pcie6_x16", 16, 64e9, (1, 1), (236, 256), 256, 16, 0.0, 16, 512,
               source="64 GT/s x16 PAM4; flit mode, 236 TLP bytes per 256-byte flit, TLP header "
                      "16 B with no framing token or LCRC (PCI Express Base Specification 6.0, "
                      "sec. 4.2.3 'Flit Mode' and sec. 2.2)",
               uncertain="[U] the flit-mode header of a 64-bit memory request taken as 4 DW; "
                         + _PCIE_SETTINGS.split("; [U] one Ack")[0]),
    WireFormat("ib_edr", 4, 25.78125e9, (64, 66), (1, 1), 4096, 26,
               source="4 x 25.78125 Gb/s, 64b/66b [S51]; " + _IB_PACKET_FORMAT,
               uncertain="EDR's optional RS(528,514) FEC over 256b/257b gives the same data rate; "
                         + _IB_UNCERTAIN),
    WireFormat("ib_hdr", 4, 53.125e9, (256, 257), (514, 544), 4096, 26,
               source="4 PAM4 lanes x 53.125 Gb/s, " + _KP4 + " [S51b]; " + _IB_PACKET_FORMAT,
               uncertain=_IB_UNCERTAIN),
    WireFormat("ib_ndr", 4, 106.25e9, (256, 257), (514, 544), 4096, 26,
               source="4 PAM4 lanes x 106.25 Gb/s, " + _KP4 + " [S51c]; " + _IB_PACKET_FORMAT,
               uncertain=_IB_UNCERTAIN),
    WireFormat("ib_xdr", 4, 212.5e9, (256, 257), (514, 544), 4096, 26,
               source="4 PAM4 lanes x 212.5 Gb/s, " + _KP4 + "; " + _IB_PACKET_FORMAT,
               uncertain="[U] XDR's lane rate and FEC taken as NDR's doubled (not retrieved); "
                         + _IB_UNCERTAIN),
)})
