"""Builders of the NVIDIA DGX systems, in the real GPU numbering.

Each builder returns a fresh, valid :class:`networkx.DiGraph` (schema in
:mod:`topo.schema`), with the NVLink layer, the PCIe switches, the CPU sockets and the NICs.
It is valid by construction (``tests/topo/test_builders.py`` validates every one) and sealed
(:mod:`topo.unedited`): validating it again costs nothing until it is edited.
Every fact names its source by a key of :data:`topo.sources.SOURCES` (``[S4]``); a fact no
source confirms is marked "[U]" (uncertain), a verified one "[V]".

The registry of these builders by name (and of clusters of them) is :mod:`topo.registry`.

Examples
--------
>>> G = dgx1v()
>>> G.graph["name"], G.edges["gpu0", "gpu3"]["links"]
('DGX-1V', 2)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import networkx as nx

from .parts import add_cpu, add_gpu, add_link, add_nic, add_nvswitch, add_pcie_switch
from .specs import CPUS, GPUS, NVSWITCHES
from .unedited import sealed

__all__ = ["dgx1", "dgx1v", "dgx2"]

# DGX-1 (P100) hybrid cube-mesh, one NVLink 1.0 link per edge [S10] [S11]: both quads
# {0-3} and {4-7} fully connected plus i <-> i+4 (NVIDIA/go-gpuallocator NewDGX1PascalNode). [U] no pasted P100 nvidia-smi confirms the index order; it is the DGX-1V edge set.
_DGX1_P100_NVLINKS = MappingProxyType({
    (0, 1): 1, (0, 2): 1, (0, 3): 1, (1, 2): 1, (1, 3): 1, (2, 3): 1,
    (4, 5): 1, (4, 6): 1, (4, 7): 1, (5, 6): 1, (5, 7): 1, (6, 7): 1,
    (0, 4): 1, (1, 5): 1, (2, 6): 1, (3, 7): 1,
})

# [V] nvidia-smi topo -m of DGX-1V-class machines [S1] [S2] [S5], the NCCL
# topology dump of a DGX1-V100 [S4]. Every GPU has 6 links; 24 links on 16 GPU pairs.
_DGX1V_NVLINKS = MappingProxyType({
    (0, 3): 2, (0, 4): 2, (1, 2): 2, (1, 5): 2, (2, 3): 2, (4, 7): 2, (5, 6): 2, (6, 7): 2,
    (0, 1): 1, (0, 2): 1, (1, 3): 1, (2, 6): 1, (3, 7): 1, (4, 5): 1, (4, 6): 1, (5, 7): 1,
})


def _dgx1_family(name: str, description: str, gpu: str, nvlinks: Mapping) -> nx.DiGraph:
    """DGX-1 chassis: 8 SXM2 GPUs, 4 PCIe switches, 4 EDR NICs, 2 Broadwell sockets.

    Each PEX8764 PCIe gen3 switch [S4] holds a GPU pair (0/1, 2/3, 4/5, 6/7)
    and one ConnectX-4 EDR NIC mlx5_k [S1] [S5] [S8]; switches 0-1 hang off CPU0, 2-3 off CPU1
    (GPU0 to mlx5_1 is PHB: one host bridge per socket); the sockets are joined by QPI.
    """
    G = nx.DiGraph(name=name, system=name.lower().replace("-", ""), description=description)
    for socket in range(2):
        add_cpu(G, f"cpu{socket}", "E5-2698v4", index=socket)
    add_link(G, "cpu0", "cpu1", CPUS["E5-2698v4"].socket_link, CPUS["E5-2698v4"].socket_links)
    for k in range(4):
        socket = k // 2
        switch = f"pcie{k}"
        add_pcie_switch(G, switch, index=k, socket=socket, model="PLX PEX8764")
        # One host bridge per Broadwell socket: both root ports on bridge 0 (nvidia-smi PHB).
        add_link(G, f"cpu{socket}", switch, "pcie3_x16", host_bridge=0)
        for g in (2 * k, 2 * k + 1):
            add_gpu(G, f"gpu{g}", gpu, index=g, socket=socket)
            add_link(G, switch, f"gpu{g}", "pcie3_x16")
        # [U] the NIC's x16 width (no source gives it).
        add_nic(G, f"mlx5_{k}", index=k, socket=socket, model="ConnectX-4 (EDR InfiniBand)",
                port="ib_edr")
        add_link(G, switch, f"mlx5_{k}", "pcie3_x16")
    nvlink = GPUS[gpu].nvlink
    for (a, b), links in nvlinks.items():
        add_link(G, f"gpu{a}", f"gpu{b}", nvlink, links)
    return sealed(G)  # valid by construction: tests/topo/test_builders.py validates it


def dgx1() -> nx.DiGraph:
    """DGX-1 with 8x Tesla P100-SXM2: NVLink 1.0 hybrid cube-mesh, one link per edge.

    Each GPU has 4 NVLinks at 20 GB/s per direction [S10], to the other three
    GPUs of its quad and to GPU i+4 (mod 8). PCIe, CPU and NIC layer as :func:`dgx1v`.

    Returns
    -------
    networkx.DiGraph
        A fresh valid fabric, sealed (:mod:`topo.unedited`).

    Examples
    --------
    >>> G = dgx1()
    >>> sum(d["links"] for _, _, d in G.out_edges("gpu0", data=True) if d["kind"] == "nvlink")
    4
    """
    return _dgx1_family("DGX-1", "DGX-1, 8x P100 SXM2, NVLink 1.0 hybrid cube-mesh", "P100",
                        _DGX1_P100_NVLINKS)


def dgx1v() -> nx.DiGraph:
    """DGX-1 with 8x Tesla V100-SXM2 (DGX-1V): NVLink 2.0 hybrid cube-mesh with doubled pairs.

    Each GPU has 6 NVLinks at 25 GB/s per direction. Pairs with two links: 0-3, 0-4, 1-2,
    1-5, 2-3, 4-7, 5-6, 6-7; with one: 0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7 ([S1] [S4] [S5],
    nvidia-smi numbering). Four PCIe gen3 switches each hold a GPU pair and an EDR
    InfiniBand NIC; two switches per Xeon E5-2698 v4 socket; sockets joined by QPI.

    Returns
    -------
    networkx.DiGraph
        A fresh valid fabric, sealed (:mod:`topo.unedited`).

    Examples
    --------
    >>> G = dgx1v()
    >>> G.edges["gpu0", "gpu4"]["bandwidth"] / 1e9
    50.0
    """
    return _dgx1_family("DGX-1V", "DGX-1, 8x V100 SXM2, NVLink 2.0 hybrid cube-mesh", "V100-SXM2",
                        _DGX1V_NVLINKS)


# DGX-2 NVSwitch fabric [V]: two baseboards, each 8 GPUs and 6 NVSwitches;
# every GPU has one link to each switch of its board [S17]; each switch has 8 links to its
# peer switch (same position) on the other board [S17] [S26]; 16 of 18 ports used [S19].
_DGX2_BOARDS = 2
_DGX2_GPUS_PER_BOARD = 8
_DGX2_SWITCHES_PER_BOARD = 6
_DGX2_TRUNK_LINKS = 8


def dgx2() -> nx.DiGraph:
    """DGX-2: 16x Tesla V100-SXM3-32GB on two baseboards joined through 12 NVSwitches.

    NVLink layer ([S17] [S23], verified): GPU g has one NVLink 2.0 link to each of the 6
    NVSwitches of its baseboard; switch s of board 0 has 8 links to switch s of board 1
    over the backplane. [U] GPUs 0-7 are on board 0 and 8-15 on board 1 (GPU0-3 have
    socket 0 affinity; the board split by index is an assumption).

    PCIe layer (from nvidia-smi on a DGX-2 [S27]): a leaf switch per GPU pair
    with one InfiniBand NIC (PIX), two leaves under a parent switch (PXB), two parents per
    socket each on its own host bridge (NODE), two Xeon sockets joined by UPI (SYS). Socket 0
    holds GPUs 0-7 and mlx5_0-3; socket 1 GPUs 8-15 and mlx5_6-9. [U] mlx5_4 and mlx5_5
    (socket 1 by the published row of GPU0) are taken as the two ports of a non-compute
    card on a root port of CPU1; their role and port speed are unknown, so they carry no
    ``port_bandwidth``. [U] PCIe widths between switch levels are taken as x16. The
    NVSwitches' management PCIe ports [S20] carry no data and are left out.

    Returns
    -------
    networkx.DiGraph
        A fresh valid fabric, sealed (:mod:`topo.unedited`).

    Examples
    --------
    >>> G = dgx2()
    >>> G.edges["nvswitch0", "nvswitch6"]["links"], G.edges["nvswitch0", "nvswitch6"]["bandwidth"] / 1e9
    (8, 200.0)
    """
    G = nx.DiGraph(name="DGX-2", system="dgx2",
                   description="DGX-2, 16x V100 SXM3 on two baseboards, 12 NVSwitches")
    switch_spec = NVSWITCHES["nvswitch1"]
    gpu = "V100-SXM3"
    cpu = "Platinum8168"
    for socket in range(2):
        add_cpu(G, f"cpu{socket}", cpu, index=socket)
    add_link(G, "cpu0", "cpu1", CPUS[cpu].socket_link, CPUS[cpu].socket_links)

    # PCIe tree: per socket 2 parents, per parent 2 leaves, per leaf 2 GPUs and 1 NIC.
    compute_nics = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    for parent in range(4):
        socket = parent // 2
        add_pcie_switch(G, f"pcie{parent}", index=parent, socket=socket, model="PCIe gen3 switch")
        add_link(G, f"cpu{socket}", f"pcie{parent}", "pcie3_x16", host_bridge=parent % 2)
    for leaf in range(8):
        socket, parent = leaf // 4, leaf // 2
        node = f"pcie{4 + leaf}"
        add_pcie_switch(G, node, index=4 + leaf, socket=socket, model="PCIe gen3 switch")
        add_link(G, f"pcie{parent}", node, "pcie3_x16")
        for g in (2 * leaf, 2 * leaf + 1):
            add_gpu(G, f"gpu{g}", gpu, index=g, socket=socket, baseboard=g // _DGX2_GPUS_PER_BOARD)
            add_link(G, node, f"gpu{g}", "pcie3_x16")
        nic = compute_nics[leaf]
        add_nic(G, nic, index=int(nic.split("_")[1]), socket=socket,
                model="ConnectX (EDR InfiniBand) [U model]", port="ib_edr")
        add_link(G, node, nic, "pcie3_x16")
    for port in (4, 5):
        add_nic(G, f"mlx5_{port}", index=port, socket=1, model="mlx5 port, role unknown [U]",
                port=None)
        add_link(G, "cpu1", f"mlx5_{port}", "pcie3_x16", host_bridge=2)

    for board in range(_DGX2_BOARDS):
        for s in range(_DGX2_SWITCHES_PER_BOARD):
            index = board * _DGX2_SWITCHES_PER_BOARD + s
            add_nvswitch(G, f"nvswitch{index}", index=index, ports=switch_spec.ports,
                         baseboard=board, model=switch_spec.model)
            for g in range(board * _DGX2_GPUS_PER_BOARD, (board + 1) * _DGX2_GPUS_PER_BOARD):
                add_link(G, f"gpu{g}", f"nvswitch{index}", switch_spec.link)
    for s in range(_DGX2_SWITCHES_PER_BOARD):
        add_link(G, f"nvswitch{s}", f"nvswitch{_DGX2_SWITCHES_PER_BOARD + s}", switch_spec.link,
                 _DGX2_TRUNK_LINKS)
    return sealed(G)  # valid by construction: tests/topo/test_builders.py validates it
