"""DGX systems built on NVSwitch gen2-gen4: DGX A100, DGX H100/H200, DGX B200 and GB200 NVL72.

Each builder returns a fresh, valid :class:`networkx.DiGraph` (schema in
:mod:`topo.schema`; valid by construction and sealed, as :mod:`topo.dgx`'s) in the real GPU
numbering, with the NVSwitch chips, the PCIe tree with the compute and storage NICs, the CPU
(NUMA) nodes and their interconnect. Link latencies are the
catalogue's stated assumptions (:mod:`topo.specs`). Facts the sources leave uncertain are
marked "[U]" here and listed in each builder's :data:`UNCERTAIN` text.

Sources (keys as in the catalogue :mod:`topo.specs`):
    [S12] [S13] A100 and H100 whitepapers: 12 x NVLink 3.0 and 18 x NVLink 4.0 links of 25 GB/s.
    [S17] NVIDIA Fabric Manager User Guide, "GPU Baseboard Topologies": HGX A100 2 links from
          every GPU to each of 6 NVSwitches; HGX H100 "four NVLinks that connect to two of the
          NVSwitches, and five NVLinks that connect to the remaining two"; HGX B200 9 + 9.
    [S37] NVIDIA/nccl issue 1505: DGX A100 nvidia-smi topo -m and NCCL XML (NV12, NUMA 3/1/7,
          mlx5_0..9, PXB GPU to NIC, SYS across NPS4 quadrants, storage mlx5_4/5 on NUMA 0).
    [S38] DGX A100 datasheet: 2x EPYC 7742, 8x ConnectX-6 HDR, 1 dual-port ConnectX-6 (2 on the
          640 GB model).
    [S39] "How to Scale Your Model", GPU chapter: H100 5 + 4 + 4 + 5 link pattern (secondary).
    [S42] vllm-project/vllm issue 13855: DGX H100 nvidia-smi topo -m (NV18, PXB 1:1 NIC).
    [S43] NVIDIA DGX BasePOD RA, "Core Components": DGX H100/H200/B200, 8 single-port CX-7 400G
          and 2 dual-port storage cards.
    [S44] NVIDIA DGX GB200 User Guide, "Hardware": 18 compute trays of 2 Grace + 4 B200, 9
          switch trays, 4 CX-7 and 2 BlueField-3 per compute tray.
    [S60] NVIDIA DGX H100 User Guide, "Network Modules", Table 6: GPU to ConnectX to mlx5 name.
    [S63] NVIDIA DGX B200 User Guide: 2x Xeon 8570, 2 NVLink 5 switches, 8 CX-7, 2 BlueField-3.
    [S64] NVIDIA "NVLink and NVLink Switch" page: 18 links of 100 GB/s (both ways) per B200,
          144 ports per switch tray, 130 TB/s per NVL72.
    [S65] NVIDIA Mission Control, north-south network GB200 guide: compute-tray ports mlx5_0/1/4/5
          (OSFP), mlx5_2/3/6/7 (BlueField-3).
    [S67] NVIDIA/nccl issue 1769: GB200 GPU PCI ids 0008/0009/0018/0019:01:00.0 in one tray.
    [S68] NVIDIA/nccl issue 1182: HGX H100 nvidia-smi nvlink -R, GPU0 5/5/4/4 over 4 switches.
    [S71] vllm-project/vllm issue 16336: 8x B200 nvidia-smi topo -m (PXB 1:1 NIC, 12 NICs).
    [S74] MLCommons inference v6.1 GB200-NVL72 system description: NV18 within a 4-GPU tray.
    [S49] DGX SuperPOD reference architectures: DGX B300 with 8x XDR 800G compute NICs per node.
    [S114] HGX / DGX B300 datasheets: 8x Blackwell Ultra, NVLink 5 at 1.8 TB/s per GPU.
    [S115] GB300 NVL72 datasheet and reference architecture components: 18 compute trays of 2 Grace
          + 4 Blackwell Ultra, 9 NVLink switch trays, one ConnectX-8 800G per GPU.
    [S116] H800 SXM5: H100 with NVLink cut to 400 GB/s bidirectional (8 links); DeepSeek-V3's
          cluster of 8-GPU H800 nodes on NVLink/NVSwitch with InfiniBand between them.

Examples
--------
>>> from topo.dgx_nvswitch import SYSTEMS, dgxh100
>>> sorted(SYSTEMS)
['dgxa100', 'dgxb200', 'dgxb300', 'dgxh100', 'dgxh200', 'dgxh800', 'gb200nvl72', 'gb300nvl72']
>>> G = dgxh100()
>>> [G.edges["gpu0", f"nvswitch{s}"]["links"] for s in range(4)]
[5, 4, 4, 5]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import networkx as nx

from .errors import TopologyError
from .parts import add_cpu, add_gpu, add_link, add_nic, add_nvswitch, add_pcie_switch
from .specs import CPUS, NVSWITCHES
from .unedited import sealed

__all__ = ["dgxa100", "dgxh100", "dgxh200", "dgxh800", "dgxb200", "dgxb300", "gb200nvl72", "gb300nvl72",
           "SYSTEMS", "UNCERTAIN"]


# -- shared pieces ------------------------------------------------------------------------------
def _nvswitch_baseboard(G, gpu_count: int, switch: str, links_per_switch) -> None:
    """One baseboard: ``links_per_switch[s]`` NVLinks from every GPU to switch chip s."""
    spec = NVSWITCHES[switch]
    for s, links in enumerate(links_per_switch):
        add_nvswitch(G, f"nvswitch{s}", index=s, ports=spec.ports, baseboard=0, model=spec.model)
        for g in range(gpu_count):
            add_link(G, f"gpu{g}", f"nvswitch{s}", spec.link, links)


def _two_sockets(G, cpu: str) -> None:
    spec = CPUS[cpu]
    for socket in range(2):
        add_cpu(G, f"cpu{socket}", cpu, index=socket)
    add_link(G, "cpu0", "cpu1", spec.socket_link, spec.socket_links)


def _gpu_nic_complex(G, k: int, *, cpu, socket: int, host_bridge: int, gpus, nics, gpu: str,
                     pcie: str, nic_model: str, nic_port: str, device_pcie: str | None = None) -> None:
    """A two-level PCIe switch complex on one CPU root port.

    The upper switch holds the NICs and a lower switch that holds the GPUs, so that a GPU and
    a NIC of the complex are two switches apart (nvidia-smi PXB) and NCCL's flattening of the
    two Broadcom levels (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ncclTopoFlattenBcmSwitches)
    would make them one. [U] which level holds which device; only GPU-to-NIC PXB is verified.
    ``device_pcie`` (default ``pcie``) is the technology below the root port: the links between
    the levels and to the GPUs and NICs, where those run a later generation than the CPU.
    """
    device_pcie = device_pcie or pcie
    upper, lower = f"pcie{2 * k}", f"pcie{2 * k + 1}"
    model = f"PCIe {device_pcie[4]}.0 switch"
    add_pcie_switch(G, upper, index=2 * k, socket=socket, model=model)
    add_pcie_switch(G, lower, index=2 * k + 1, socket=socket, model=model)
    add_link(G, cpu, upper, pcie, host_bridge=host_bridge)  # [U] x16 upstream
    add_link(G, upper, lower, device_pcie)                   # [U] x16 between the levels
    for g in gpus:
        add_gpu(G, f"gpu{g}", gpu, index=g, socket=socket)
        add_link(G, lower, f"gpu{g}", device_pcie)
    for n in nics:
        add_nic(G, f"mlx5_{n}", index=n, socket=socket, model=nic_model, port=nic_port)
        add_link(G, upper, f"mlx5_{n}", device_pcie)


def _storage_card(G, cpu, *, socket: int, host_bridge: int, ports, pcie: str, model: str) -> None:
    """A dual-port storage / in-band card on its own root port; its ports carry no compute role.

    [U] nvidia-smi prints PIX between the two ports (functions) of one card; with one NIC node
    per port on the root port they come out PHB (the schema has no multi-function device).
    """
    for n in ports:
        add_nic(G, f"mlx5_{n}", index=n, socket=socket, model=model, port=None)
        add_link(G, cpu, f"mlx5_{n}", pcie, host_bridge=host_bridge)


# -- DGX A100 -----------------------------------------------------------------------------------
# [S37] NUMA node (NPS4) of each complex: GPUs 0/1 -> 3, 2/3 -> 1, 4/5 -> 7, 6/7 -> 5 [U for 5];
# its two ConnectX-6 HDR NICs, both PXB to both GPUs.
_A100_COMPLEXES = ((3, (0, 1), (0, 1)), (1, (2, 3), (2, 3)), (7, (4, 5), (6, 7)), (5, (6, 7), (8, 9)))
_A100_STORAGE = ((0, (4, 5)), (4, (10, 11)))  # (NUMA node, mlx5 ports); the second [U] 640GB only
_A100_VARIANTS = MappingProxyType({"320GB": ("A100-SXM4-40GB", 1), "640GB": ("A100-SXM4-80GB", 2)})


def dgxa100(variant: str = "320GB") -> nx.DiGraph:
    """DGX A100: 8x A100-SXM4 on 6 NVSwitch gen2 chips, 2x EPYC 7742 in NPS4 mode.

    NVLink layer [S17] [S37]: every GPU has 2 NVLink 3.0 links to each of the 6 switches
    (12 links, 300 GB/s per direction per GPU); nvidia-smi shows NV12 for every pair.

    Host [S37] [S38]: the two EPYC 7742 run in NPS4 mode, so the host has 8 NUMA nodes of 16
    cores, one ``cpu`` node each (index = NUMA node; 0-3 socket 0, 4-7 socket 1), as NCCL and
    nvidia-smi see it: a GPU and a NIC of another quadrant of the same socket are SYS. The
    quadrants of a socket are joined by the I/O die's Infinity Fabric, quadrant q of both
    sockets by one xGMI link [U mapping of the xGMI links to quadrants].

    PCIe [S37]: four two-level Gen4 switch complexes, each on one NUMA node with a GPU pair and
    its two ConnectX-6 HDR NICs: GPUs 0/1 with mlx5_0/1 on NUMA 3, 2/3 with mlx5_2/3 on NUMA 1,
    4/5 with mlx5_6/7 on NUMA 7, 6/7 with mlx5_8/9 on NUMA 5 [U]. The dual-port ConnectX-6
    storage card is mlx5_4/5 on NUMA 0; the 640 GB model has a second one, mlx5_10/11, taken
    to be on NUMA 4 [U]. NVMe drives on the complexes are not modelled.

    Parameters
    ----------
    variant : {"320GB", "640GB"}
        A100-SXM4-40GB with one storage card, or A100-SXM4-80GB with two [S38].

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = dgxa100()
    >>> G.edges["gpu0", "nvswitch5"]["links"], G.nodes["gpu0"]["socket"], G.nodes["mlx5_4"]["socket"]
    (2, 3, 0)
    """
    if variant not in _A100_VARIANTS:
        raise TopologyError(f"unknown DGX A100 variant {variant!r}: expected one of "
                            f"{', '.join(_A100_VARIANTS)}")
    gpu, storage_cards = _A100_VARIANTS[variant]
    G = nx.DiGraph(name="DGX A100", system="dgxa100",
                   description=f"DGX A100 {variant}, 8x A100 SXM4, 6 NVSwitch gen2, NV12")
    cpu = "EPYC7742"
    spec = CPUS[cpu]
    quadrants = spec.numa_nodes
    for numa in range(2 * quadrants):
        add_cpu(G, f"cpu{numa}", cpu, index=numa)
        G.nodes[f"cpu{numa}"]["cores"] = spec.cores // quadrants  # one NUMA node's share
    for socket in range(2):
        members = range(socket * quadrants, (socket + 1) * quadrants)
        for a in members:
            for b in members:
                if a < b:
                    add_link(G, f"cpu{a}", f"cpu{b}", "infinity_fabric")
    for q in range(quadrants):  # [U] xGMI link q joins quadrant q of both sockets
        add_link(G, f"cpu{q}", f"cpu{quadrants + q}", spec.socket_link)
    for k, (numa, gpus, nics) in enumerate(_A100_COMPLEXES):
        _gpu_nic_complex(G, k, cpu=f"cpu{numa}", socket=numa, host_bridge=0, gpus=gpus, nics=nics,
                         gpu=gpu, pcie="pcie4_x16", nic_model="ConnectX-6 (HDR InfiniBand)",
                         nic_port="ib_hdr")
    for numa, ports in _A100_STORAGE[:storage_cards]:
        _storage_card(G, f"cpu{numa}", socket=numa, host_bridge=1, ports=ports, pcie="pcie4_x16",
                      model="ConnectX-6 dual-port (storage)")
    _nvswitch_baseboard(G, 8, "nvswitch2", (2,) * 6)
    return sealed(G)  # valid by construction: tests/topo/test_builders.py validates it


# -- DGX H100 / H200 / B200 ---------------------------------------------------------------------
# [S60] Table 6: the mlx5 device of GPU g's own ConnectX-7 (one per GPU, PXB [S42]).
_HOPPER_COMPUTE_NICS = (0, 3, 4, 5, 6, 9, 10, 11)
# Storage / in-band card ports per socket: mlx5_1/2 NODE to GPUs 0-3, mlx5_7/8 to GPUs 4-7 [S72].
_HOPPER_STORAGE_PORTS = ((1, 2), (7, 8))
# [S17] [S39] links from every GPU to NVSwitch gen3 chips 0-3. [U] which chips get five: the
# DGX chip numbering is not published (HGX H100 in PCI bus order is 4/5/5/4 [S68]).
_H100_LINKS_PER_SWITCH = (5, 4, 4, 5)
# [S17] DGX B200: 9 NVLink 5 links from every GPU to each of the 2 switch chips.
_B200_LINKS_PER_SWITCH = (9, 9)
# [S116] H800: 8 NVLink 4.0 links per GPU; [U] spread 2 to each of the 4 NVSwitch gen3 chips of
# the HGX H100 board (the HGX H800 wiring is not published).
_H800_LINKS_PER_SWITCH = (2, 2, 2, 2)
_NDR_NIC = ("ConnectX-7 (NDR InfiniBand)", "ib_ndr")
_XDR_NIC = ("ConnectX-8 (XDR InfiniBand)", "ib_xdr")


def _dgx_8gpu_xeon(name: str, system: str, description: str, gpu: str, cpu: str, switch: str,
                   links_per_switch, storage_model: str, nic=_NDR_NIC,
                   device_pcie: str = "pcie5_x16") -> nx.DiGraph:
    """The DGX H100 chassis (also DGX H200, and DGX B200's arrangement [S43] [S71]).

    Per GPU a PCIe Gen5 complex on its own root port (own host bridge) with the GPU's
    ConnectX-7 NDR NIC, PXB to it [S42] [S60]; GPUs 0-3 on socket 0, 4-7 on socket 1; the
    other NICs of a socket are NODE, the other socket's SYS. One dual-port storage card per
    socket on a further root port [S43] [S72].
    """
    G = nx.DiGraph(name=name, system=system, description=description)
    _two_sockets(G, cpu)
    for g in range(8):
        socket = g // 4
        _gpu_nic_complex(G, g, cpu=f"cpu{socket}", socket=socket, host_bridge=g % 4, gpus=(g,),
                         nics=(_HOPPER_COMPUTE_NICS[g],), gpu=gpu, pcie="pcie5_x16",
                         nic_model=nic[0], nic_port=nic[1], device_pcie=device_pcie)
    for socket, ports in enumerate(_HOPPER_STORAGE_PORTS):
        _storage_card(G, f"cpu{socket}", socket=socket, host_bridge=4, ports=ports,
                      pcie="pcie5_x16", model=storage_model)
    _nvswitch_baseboard(G, 8, switch, links_per_switch)
    return sealed(G)  # valid by construction: tests/topo/test_builders.py validates it


def dgxh100() -> nx.DiGraph:
    """DGX H100: 8x H100-SXM5 80GB on 4 NVSwitch gen3 chips, 2x Xeon Platinum 8480C.

    NVLink layer [S17] [S39]: 18 NVLink 4.0 links per GPU, 5, 4, 4 and 5 to switch chips 0-3
    (125 or 100 GB/s per bundle, 450 GB/s per GPU per direction); NV18 for every pair [S42].
    [U] which two chips carry five links.

    PCIe layer [S42] [S60]: every GPU shares a two-level PCIe Gen5 switch complex (in the
    ConnectX-7 of a Cedar module [U]) with its own ConnectX-7 NDR NIC: GPU0 mlx5_0, GPU1
    mlx5_3, GPU2 mlx5_4, GPU3 mlx5_5, GPU4 mlx5_6, GPU5 mlx5_9, GPU6 mlx5_10, GPU7 mlx5_11.
    Each complex is on its own root port and host bridge [U] (the NICs of a socket are NODE).
    The dual-port storage ConnectX-7 of each socket is mlx5_1/2 and mlx5_7/8 [S72] [U].
    Sockets joined by 4 UPI links [U].

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = dgxh100()
    >>> sum(d["bandwidth"] for _, _, d in G.out_edges("gpu0", data=True) if d["kind"] == "nvlink") / 1e9
    450.0
    """
    return _dgx_8gpu_xeon("DGX H100", "dgxh100", "DGX H100, 8x H100 SXM5, 4 NVSwitch gen3, NV18",
                          "H100-SXM5-80GB", "Platinum8480C", "nvswitch3", _H100_LINKS_PER_SWITCH,
                          "ConnectX-7 dual-port (storage)")


def dgxh200() -> nx.DiGraph:
    """DGX H200: the DGX H100 board and fabric with 8x H200 141GB [S43]; see :func:`dgxh100`.

    Examples
    --------
    >>> dgxh200().nodes["gpu7"]["model"]
    'NVIDIA H200'
    """
    return _dgx_8gpu_xeon("DGX H200", "dgxh200", "DGX H200, 8x H200, 4 NVSwitch gen3, NV18",
                          "H200", "Platinum8480C", "nvswitch3", _H100_LINKS_PER_SWITCH,
                          "ConnectX-7 dual-port (storage)")


def dgxh800() -> nx.DiGraph:
    """DGX H800: the DGX H100 chassis with 8x H800, whose NVLink is cut to 8 links [S116].

    NVLink layer [S116]: 8 NVLink 4.0 links of 25 GB/s per GPU, 200 GB/s per direction (400 GB/s
    bidirectional), taken as 2 to each of the 4 NVSwitch gen3 chips [U]; NV8 for every pair.
    Everything else as :func:`dgxh100` [U]: one ConnectX-7 NDR (400 Gb/s, DeepSeek-V3's "50 GB/s"
    of InfiniBand per GPU [S116]) per GPU, 2x Xeon 8480C.

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = dgxh800()
    >>> sum(d["bandwidth"] for _, _, d in G.out_edges("gpu0", data=True) if d["kind"] == "nvlink") / 1e9
    200.0
    """
    return _dgx_8gpu_xeon("DGX H800", "dgxh800", "DGX H800, 8x H800 SXM5, 4 NVSwitch gen3, NV8",
                          "H800", "Platinum8480C", "nvswitch3", _H800_LINKS_PER_SWITCH,
                          "ConnectX-7 dual-port (storage)")


def dgxb200() -> nx.DiGraph:
    """DGX B200: 8x B200 on 2 NVLink 5 switch chips, 2x Xeon Platinum 8570.

    NVLink layer [S17] [S63] [S64]: 18 NVLink 5 links of 50 GB/s per GPU, 9 to each chip
    (450 GB/s per bundle, 900 GB/s per GPU per direction; the two chips' 144 ports at both
    directions are the user guide's 14.4 TB/s); NV18 for every pair [S71].

    PCIe layer [S63] [S71]: 8 single-port ConnectX-7 NDR, each PXB to one GPU, NODE to the
    other NICs of its socket; 2 dual-port BlueField-3 for storage and in-band management.
    [U] The arrangement, mlx5 names and storage placement are taken from DGX H100 (one
    8x B200 nvidia-smi shows the same classes [S71]); PCIe Gen5 throughout [U].

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = dgxb200()
    >>> G.edges["gpu3", "nvswitch1"]["links"], G.edges["gpu3", "nvswitch1"]["bandwidth"] / 1e9
    (9, 450.0)
    """
    return _dgx_8gpu_xeon("DGX B200", "dgxb200", "DGX B200, 8x B200, 2 NVLink 5 switch chips, NV18",
                          "B200", "Platinum8570", "nvswitch4", _B200_LINKS_PER_SWITCH,
                          "BlueField-3 dual-port (storage)")


def dgxb300() -> nx.DiGraph:
    """DGX B300: 8x B300 (Blackwell Ultra) on 2 NVLink 5 switch chips, one ConnectX-8 per GPU.

    NVLink layer [S114]: 18 NVLink 5 links per GPU (1.8 TB/s bidirectional), taken as DGX B200's
    9 to each of 2 chips [U]. Network [S49]: 8 compute ports of 800 Gb/s XDR per node, one
    ConnectX-8 per GPU, on the GPU board (hardware reference §4.4: HGX B300 carries ConnectX-8)
    with its GPU on PCIe Gen6 x16 [U] (ConnectX-8 SuperNIC's Gen6 host interface and B300's Gen6,
    recalled from NVIDIA's product pages; NCCL reads 64 GT/s x16 as 96 GB/s). On Gen5, as DGX
    B200, an 800 Gb/s port (100 GB/s) would be held to NCCL's 48 GB/s and a B300 cluster's
    network would equal a B200 one's. The root port to the CPU stays Gen5 (Xeon). Everything else
    as :func:`dgxb200` [U]: the switch levels, the host (DGX B300 ships Intel Xeon 6776P; taken as
    DGX B200's Xeon 8570), the storage cards.

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = dgxb300()
    >>> G.nodes["gpu0"]["model"], G.nodes["mlx5_0"]["model"]
    ('NVIDIA B300', 'ConnectX-8 (XDR InfiniBand)')
    """
    return _dgx_8gpu_xeon("DGX B300", "dgxb300", "DGX B300, 8x B300, 2 NVLink 5 switch chips, NV18, ConnectX-8",
                          "B300", "Platinum8570", "nvswitch4", _B200_LINKS_PER_SWITCH,
                          "BlueField-3 dual-port (storage)", nic=_XDR_NIC, device_pcie="pcie6_x16")


# -- GB200 NVL72 --------------------------------------------------------------------------------
_NVL72_TRAYS = 18              # compute trays (hosts) [S44]
_NVL72_GPUS_PER_TRAY = 4       # two GB200 superchips of 1 Grace + 2 B200 [S44]
_NVL72_SWITCH_TRAYS = 9        # [S44]
_NVL72_CHIPS_PER_SWITCH_TRAY = 2  # [S64] secondary [U]
# [S65] per compute tray: the OSFP ConnectX-7 of each GPU and the BlueField-3 ports, by Grace.
# [U] GPU-to-NIC pairing by PCI domain order (GPUs 0008/0009 and NICs 0000/0002 on Grace 0 [S67]).
_NVL72_COMPUTE_NICS = (0, 1, 4, 5)
_NVL72_STORAGE_PORTS = ((2, 3), (6, 7))  # mlx5_7 [U]: its row is cut off in the copy


def gb200nvl72() -> nx.DiGraph:
    """GB200 NVL72: 72 B200 in one NVLink domain over 18 NVLink 5 switch chips.

    Hosts [S44]: 18 compute trays, each its own host (``host`` 0-17, one OS, nvidia-smi shows
    its 4 GPUs, CUDA indices 0-3) with 2 Grace CPUs (sockets 0 and 1) and 4 B200: GPUs 0/1 on
    Grace 0, 2/3 on Grace 1 (a GB200 superchip is 1 Grace + 2 B200), each joined to its Grace
    by NVLink-C2C [U bandwidth]. The two Graces of a tray are joined by a link of unknown
    technology [U]. GPU ids over the rack (``topo.gpus`` order) are ``4 x tray + index``.

    NVLink layer [S44] [S64]: 9 switch trays of 2 chips of 72 NVLink 5 ports; every GPU has
    one link to each of the 18 chips [D/U: 18 x 72 ports = 72 GPUs x 18 links, and NVIDIA
    states there is no multi-level NVSwitch product [S66]]: 900 GB/s per GPU per direction,
    NV18 between the GPUs of a tray [S74], 130 TB/s (both directions) over the rack. The
    switch chips belong to no compute tray (``host`` -1, the fabric between the hosts) and
    carry their switch tray as ``baseboard`` [U schema: a ``tray`` attribute is wanted].

    NICs [S44] [S65]: per tray one ConnectX-7 400G (NDR) per GPU, mlx5_0/1 on Grace 0 and
    mlx5_4/5 on Grace 1, and 2 dual-port BlueField-3 (mlx5_2/3, mlx5_6/7 [U]). Each NIC is on
    its own Grace root port (PCI domain) [U]; the GPUs' C2C ports are on another, so a
    GPU is NODE to the NICs of its Grace and SYS to the other Grace's [U: no published
    nvidia-smi of a tray's NIC rows]. NVLink-C2C is an edge of kind ``pcie`` with link
    ``nvlink_c2c`` until the schema has a C2C kind.

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = gb200nvl72()
    >>> len([n for n, k in G.nodes(data="kind") if k == "gpu"]), G.nodes["t17.gpu3"]["host"]
    (72, 17)
    """
    return _nvl72("GB200 NVL72", "gb200nvl72",
                  "GB200 NVL72 rack: 18 trays of 2 Grace + 4 B200, 18 NVLink 5 switch chips", "GB200", _NDR_NIC)


def gb300nvl72() -> nx.DiGraph:
    """GB300 NVL72: 72 Blackwell Ultra GPUs in one NVLink domain, built as :func:`gb200nvl72`.

    [S115]: 18 compute trays of 2 Grace + 4 GB300 GPUs, 9 NVLink switch trays (130 TB/s, 1.8 TB/s
    per GPU), and one ConnectX-8 SuperNIC of 800 Gb/s per GPU (4 per tray on 2 mezzanine boards).

    NIC path [U: not in the sources; ConnectX-8's integrated PCIe Gen6 switch and Blackwell
    Ultra's Gen6 host interface recalled from NVIDIA's product pages, as for :func:`dgxb300`]:
    each GPU's ConnectX-8 holds a PCIe switch (``pcie{g}`` of the tray, ``PCIe 6.0 switch
    (ConnectX-8)``) with the GPU and the NIC below it on PCIe Gen6 x16 (NCCL reads 64 GT/s x16 as
    96 GB/s), and its upstream port on a Grace root port at Gen5 x16 (Grace's PCIe is Gen5), the
    root port GB200's NIC has. The GPU keeps NVLink-C2C to its Grace, so it has two neighbours on
    the host side: C2C to Grace, and PCIe to its NIC's switch. GPU to own NIC is PIX (one switch:
    GPUDirect RDMA at NCCL's default ``NCCL_NET_GDR_LEVEL`` PXB), to the other NICs of its Grace
    NODE and of the other Grace SYS, as on GB200. On Grace's Gen5 as GB200's, the 800 Gb/s port
    (100 GB/s) would be held to NCCL's 48 GB/s and a GB300 cluster's network would equal a
    GB200 one's. Taken from GB200 NVL72 [U]: the switch chips and wiring, the mlx5 names and root
    ports, the BlueField-3 storage ports, NVLink-C2C and the Grace-to-Grace link.

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = gb300nvl72()
    >>> G.nodes["t0.gpu0"]["model"], G.nodes["t0.mlx5_0"]["model"]
    ('NVIDIA GB300', 'ConnectX-8 (XDR InfiniBand)')
    >>> [G.edges[u, v]["link"] for u, v in (("t0.gpu0", "t0.cpu0"), ("t0.gpu0", "t0.pcie0"),
    ...                                      ("t0.pcie0", "t0.mlx5_0"), ("t0.pcie0", "t0.cpu0"))]
    ['nvlink_c2c', 'pcie6_x16', 'pcie6_x16', 'pcie5_x16']
    """
    return _nvl72("GB300 NVL72", "gb300nvl72",
                  "GB300 NVL72 rack: 18 trays of 2 Grace + 4 Blackwell Ultra, 18 NVLink 5 switch chips, ConnectX-8",
                  "GB300", _XDR_NIC, nic_switch="pcie6_x16")


def _nvl72(name: str, system: str, description: str, gpu: str, nic, nic_switch: str | None = None) -> nx.DiGraph:
    """An NVL72 rack (:func:`gb200nvl72`) with the given GPU part and compute NIC: on a Grace root
    port, or with ``nic_switch`` (a PCIe link technology) in a PCIe switch of its own with its GPU
    below it on that technology and the switch on the Grace root port (:func:`gb300nvl72`)."""
    G = nx.DiGraph(name=name, system=system, description=description)
    switch = NVSWITCHES["nvswitch4"]
    cpu = "Grace"
    chips = _NVL72_SWITCH_TRAYS * _NVL72_CHIPS_PER_SWITCH_TRAY
    for c in range(chips):
        add_nvswitch(G, f"nvswitch{c}", index=c, ports=switch.ports,
                     baseboard=c // _NVL72_CHIPS_PER_SWITCH_TRAY, model=switch.model, host=-1)
    per_grace = _NVL72_GPUS_PER_TRAY // 2
    for t in range(_NVL72_TRAYS):
        p = f"t{t}."
        for socket in range(2):
            add_cpu(G, f"{p}cpu{socket}", cpu, index=socket, host=t)
        add_link(G, f"{p}cpu0", f"{p}cpu1", CPUS[cpu].socket_link, CPUS[cpu].socket_links)
        for g in range(_NVL72_GPUS_PER_TRAY):
            socket = g // per_grace
            node = f"{p}gpu{g}"
            add_gpu(G, node, gpu, index=g, socket=socket, host=t)
            # Host bridge numbers stand for the PCI domains: each NIC sits in its own [S65].
            # [U] The two GPUs of a superchip share bridge 0 (their classes to each other are
            # NV18 anyway), which keeps them interchangeable for the symmetry reductions.
            add_link(G, f"{p}cpu{socket}", node, "nvlink_c2c", host_bridge=0)
            for c in range(chips):
                add_link(G, node, f"nvswitch{c}", switch.link)
            n = _NVL72_COMPUTE_NICS[g]
            add_nic(G, f"{p}mlx5_{n}", index=n, socket=socket, model=nic[0], port=nic[1], host=t)
            G.nodes[f"{p}mlx5_{n}"]["name"] = f"mlx5_{n}"
            if nic_switch is None:
                add_link(G, f"{p}cpu{socket}", f"{p}mlx5_{n}", "pcie5_x16", host_bridge=1 + g % per_grace)
            else:  # the NIC's own PCIe switch on that root port, the GPU and the NIC below it [U]
                add_pcie_switch(G, f"{p}pcie{g}", index=g, socket=socket, host=t,
                                model=f"PCIe {nic_switch[4]}.0 switch ({nic[0].split(' (')[0]})")
                add_link(G, f"{p}cpu{socket}", f"{p}pcie{g}", "pcie5_x16", host_bridge=1 + g % per_grace)
                add_link(G, f"{p}pcie{g}", node, nic_switch)
                add_link(G, f"{p}pcie{g}", f"{p}mlx5_{n}", nic_switch)
        for socket, ports in enumerate(_NVL72_STORAGE_PORTS):
            for n in ports:
                add_nic(G, f"{p}mlx5_{n}", index=n, socket=socket, model="BlueField-3 dual-port",
                        port=None, host=t)
                G.nodes[f"{p}mlx5_{n}"]["name"] = f"mlx5_{n}"
                add_link(G, f"{p}cpu{socket}", f"{p}mlx5_{n}", "pcie5_x16", host_bridge=3)
    return sealed(G)  # valid by construction: tests/topo/test_builders.py validates it


#: Builders of this module by registry name -> (builder, one-line description). The lead
#: registers them in the system registry.
SYSTEMS: Mapping[str, tuple[Callable[[], nx.DiGraph], str]] = MappingProxyType({
    "dgxa100": (dgxa100, "DGX A100, 8x A100 SXM4 on 6 NVSwitch gen2 (NV12), 2x EPYC 7742 NPS4"),
    "dgxh100": (dgxh100, "DGX H100, 8x H100 SXM5 on 4 NVSwitch gen3 (NV18), 2x Xeon 8480C"),
    "dgxh200": (dgxh200, "DGX H200, 8x H200 on the DGX H100 fabric (NV18), 2x Xeon 8480C"),
    "dgxb200": (dgxb200, "DGX B200, 8x B200 on 2 NVLink 5 switch chips (NV18), 2x Xeon 8570"),
    "gb200nvl72": (gb200nvl72, "GB200 NVL72, 72 B200 in 18 trays on 18 NVLink 5 switch chips"),
    "dgxh800": (dgxh800, "DGX H800, 8x H800 SXM5 on 4 NVSwitch gen3 (NV8: 400 GB/s NVLink), 2x Xeon 8480C"),
    "dgxb300": (dgxb300, "DGX B300, 8x B300 on 2 NVLink 5 switch chips (NV18), ConnectX-8 800G"),
    "gb300nvl72": (gb300nvl72, "GB300 NVL72, 72 Blackwell Ultra in 18 trays on 18 NVLink 5 switch chips, "
                   "ConnectX-8 800G"),
})


def _uncertain() -> dict[str, str]:
    """What each builder takes on trust; a system built from another adds what it changes."""
    facts = {
        "dgxa100": (
            "NVSwitch gen2 port count 36 (secondary); NUMA node 5 of GPUs 6/7 and mlx5_8/9; which PCIe "
            "switch level holds GPUs and NICs (only GPU-NIC PXB is published) and the x16 widths "
            "between levels; the xGMI link count, rate and their mapping to NPS4 quadrants; the "
            "Infinity Fabric bandwidth between quadrants; the second storage card (640GB model) on "
            "NUMA 4; PIX between the two ports of a storage card comes out PHB; link latencies are "
            "assumptions"),
        "dgxh100": (
            "which two NVSwitch chips carry five links (DGX chip numbering unpublished); NVSwitch gen3 "
            "port count 64 (secondary); the PCIe switch inside each ConnectX-7 and the two-level "
            "complex; one host bridge per GPU complex; the storage card ports mlx5_1/2 and mlx5_7/8 "
            "(from one DGX H100-class output) and PIX between them coming out PHB; 4 UPI links at "
            "16 GT/s; link latencies are assumptions"),
        "dgxb200": (
            "the PCIe/NIC arrangement and mlx5 names copied from DGX H100 (one 8x B200 nvidia-smi "
            "agrees on the classes); BlueField-3 placement; PCIe Gen5 links; NVLink 5 lane rate; 4 UPI "
            "links at 20 GT/s and NCCL's ERP figure for the 8570; link latencies are assumptions"),
        "gb200nvl72": (
            "one NVLink from every GPU to each of the 18 switch chips (derived from port counts); 2 "
            "chips per switch tray (secondary); NVLink-C2C bandwidth per GPU (900 GB/s bidirectional "
            "per GPU or per superchip); the Grace-to-Grace link; GPU-to-NIC pairing and NIC root "
            "ports (PCI domains); nvidia-smi classes of the NIC rows; mlx5_7; C2C modelled as a "
            "'pcie' edge; link latencies are assumptions"),
    }
    facts["dgxh200"] = facts["dgxh100"]
    facts["dgxh800"] = ("8 NVLink links per H800 spread 2 to each of the 4 NVSwitch gen3 chips (HGX H800 wiring "
                        "unpublished); the chassis, NICs and host taken from DGX H100; " + facts["dgxh100"])
    facts["dgxb300"] = ("the NVLink wiring (9 + 9) and the PCIe/NIC arrangement taken from DGX B200; PCIe Gen6 "
                        "x16 from each GPU and ConnectX-8 to their switch (Gen5 to the CPU); the host taken as DGX B200's Xeon 8570 "
                        "(DGX B300 ships Xeon 6776P); " + facts["dgxb200"])
    facts["gb300nvl72"] = ("each ConnectX-8 as a PCIe switch with its GPU and NIC on PCIe Gen6 x16 and its upstream "
                           "port on the Grace root port GB200's NIC has, at Gen5 x16; everything else but the GPUs and "
                           "the ConnectX-8 800G compute NICs taken from GB200 NVL72; " + facts["gb200nvl72"])
    return facts


#: What each builder takes on trust: the facts marked [U] above, per system.
UNCERTAIN: Mapping[str, str] = MappingProxyType(_uncertain())
