"""Import the topology NCCL dumps (``NCCL_TOPO_DUMP_FILE``) as a fabric.

:func:`from_nccl_xml` reads the elements NCCL reads and returns a validated fabric (schema in
:mod:`topo.schema`); it raises :class:`~topo.io.common.TopologyImportError` naming the XML
element for input it does not understand or that contradicts itself.
"""

from __future__ import annotations

import math
import re
from types import MappingProxyType

import networkx as nx

from ..errors import TopologyError
from ..parts import add_link, add_nic, add_pcie_switch
from ..schema import MAX_BANDWIDTH, MAX_NUMA_NODES, gpus, nodes_of_kind, validate
from ..specs import GPUS, LINKS, NVSWITCHES
from .common import (DEFAULT_PCIE, NIC_NAME, RESERVED_ID, TopologyImportError, check_link, gpu_model,
                     parse_xml)

__all__ = ["from_nccl_xml", "to_nccl_xml", "NVLINK_BY_SM", "MAX_CPU_ELEMENTS", "MAX_PCI_DEPTH", "PCIE_WIDTHS"]

#: NVLink generation by the major digit(s) of the SM version NCCL writes (``sm="80"``):
#: Pascal NVLink 1.0, Volta 2.0, Ampere 3.0, Hopper 4.0, Blackwell 5.0 (whitepapers [S10]
#: [S3] [S12] [S13] [S15]).
NVLINK_BY_SM = MappingProxyType({6: "nvlink1", 7: "nvlink2", 8: "nvlink3", 9: "nvlink4", 10: "nvlink5"})

# PCI classes NCCL tells apart (NVIDIA/nccl v2.27.7-1 src/graph/xml.h, topo.cc: kvDictPciClass).
_CLASS_BRIDGE = "0x0604"
_CLASS_GPU = "0x03"
_CLASS_NIC = "0x02"
_CLASS_NVSWITCH = "0x068000"
_CLASS_CPU_NVLINK = "0x068001"

# PCI device ids of NVIDIA GPUs (PCI ID Repository, vendor 10de) -> GPUS key or model name.
_GPU_DEVICES = MappingProxyType({
    0x15F8: "P100", 0x15F9: "P100",
    0x1DB1: "V100-SXM2", 0x1DB5: "V100-SXM2", 0x1DB8: "V100-SXM3",
    0x20B0: "NVIDIA A100-SXM4-40GB", 0x20B2: "NVIDIA A100-SXM4-80GB",
    0x2330: "NVIDIA H100 80GB HBM3",
})

# PCIe transfer rate [GT/s] -> (catalogue link of the generation, encoding efficiency; None for
# the catalogue link's own figure). Gen1 and gen2 (8b/10b) are charged as a fraction of the gen3
# link. (PCI-SIG base specifications; NCCL v2.27.7-1 src/graph/xml.cc reads the same link_speed
# strings, "64.0 GT/s PCIe" included.)
_PCIE_GENERATIONS = MappingProxyType({2.5: ("pcie3_x16", 0.8), 5.0: ("pcie3_x16", 0.8), 8.0: ("pcie3_x16", None),
                     16.0: ("pcie4_x16", None), 32.0: ("pcie5_x16", None), 64.0: ("pcie6_x16", None)})

_BUSID = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]")

_KNOWN_ELEMENTS = frozenset({"system", "cpu", "pci", "gpu", "nvlink", "c2c", "pcilink", "nic", "net"})

#: ``<cpu>`` elements (NUMA nodes) one XML may hold: a host's CPU nodes are joined pair by pair,
#: so the work grows with their square. The largest hosts have 32 NUMA nodes (8 sockets of 4
#: sub-NUMA clusters; a DGX A100 has 8) [U]; 64 leaves headroom.
MAX_CPU_ELEMENTS = 64
#: ``<pci>`` elements nested in one another, at most: a PCIe tree is a few switch levels deep
#: (DGX-2: root port, 2 switch levels, device); 32 bounds the recursion over the tree.
MAX_PCI_DEPTH = 32
#: PCIe link widths (lanes) NCCL reads from ``link_width`` (PCI Express base specification:
#: x1, x2, x4, x8, x12, x16, x32).
PCIE_WIDTHS = (1, 2, 4, 8, 12, 16, 32)


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


def _states_link(element) -> bool:
    """Whether a ``<pci>`` element states its link (a speed or a width)."""
    return bool((element.get("link_speed") or "").strip() or (element.get("link_width") or "").strip())


def _pcie_edge(element, path, default_link):
    """(link key, bandwidth) of the link between a <pci> element and its parent."""
    speed = (element.get("link_speed") or "").strip()
    # Without link_width NCCL takes x16 (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc); a width it
    # states must be a PCIe width: link_width="0" is no link.
    width = _attr_int(element, path, "link_width", base=10, required=False, default=16)
    if width not in PCIE_WIDTHS:
        raise _xml_err(path, f"link_width={element.get('link_width')!r}, expected a PCIe width of "
                             f"{', '.join(map(str, PCIE_WIDTHS))} lanes")
    if not speed:
        return default_link, LINKS[default_link].bandwidth * width / 16
    match = re.match(r"([\d.]+)\s*GT/s", speed)
    rate = float(match.group(1)) if match and re.fullmatch(r"\d+(\.\d+)?", match.group(1)) else None
    if rate not in _PCIE_GENERATIONS:
        raise _xml_err(path, f"link_speed={speed!r}, expected one of "
                             f"{', '.join(f'{r:g} GT/s' for r in _PCIE_GENERATIONS)}")
    link, efficiency = _PCIE_GENERATIONS[rate]
    if efficiency is None:  # the catalogue's own figure, so that x16 scales by exactly 1
        return link, LINKS[link].bandwidth * width / 16
    return link, width * rate * 1e9 * efficiency / 8


# The socket-to-socket link of the catalogue whose NCCL figure NCCL picks for a CPU, by what
# the XML says of it (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ncclTopoGetInterCpuBw and the
# CPU model it reads in xml.cc): Intel family 6 by model, ERP_QPI_BW from 0xCF (Emerald
# Rapids), SRP_QPI_BW from 0x8F (Sapphire Rapids), SKL_QPI_BW from 0x55 (Skylake), else
# BDW_QPI_BW; AMD_BW for any AMD x86 (v2.19+); ARM_BW for arm64. The identity written for each
# link by :func:`to_nccl_xml` is a real CPU of that kind (Broadwell-EP 0x4F, Skylake-SP 0x55,
# Sapphire Rapids 0x8F, Emerald Rapids 0xCF, EPYC Rome family 23 model 0x31, Grace arm64).
_INTEL_MODELS = ((0xCF, "upi_emr"), (0x8F, "upi_spr"), (0x55, "upi_skl"), (0, "qpi_bdw"))
_CPU_IDENTITY = MappingProxyType({"qpi_bdw": ("x86_64", "GenuineIntel", 6, 0x4F), "upi_skl": ("x86_64", "GenuineIntel", 6, 0x55),
                 "upi_spr": ("x86_64", "GenuineIntel", 6, 0x8F), "upi_emr": ("x86_64", "GenuineIntel", 6, 0xCF),
                 "xgmi": ("x86_64", "AuthenticAMD", 23, 0x31), "infinity_fabric": ("x86_64", "AuthenticAMD", 23, 0x31),
                 "grace_grace": ("arm64", "ARM", 0, 0)})


def _socket_link(cpu, path, option):
    if option is not None:
        return option
    vendor = (cpu.get("vendor") or "").strip()
    arch = (cpu.get("arch") or "").strip()
    if arch == "arm64":
        return "grace_grace"  # the catalogue's one ARM socket link [U for other ARM hosts]
    if vendor == "GenuineIntel":
        model = _attr_int(cpu, path, "modelid", required=False, default=0)
        return next(link for first, link in _INTEL_MODELS if model >= first)
    if vendor == "AuthenticAMD":
        return "xgmi"
    raise _xml_err(path, f"no socket-to-socket link in the catalogue for vendor={vendor!r} "
                         f"arch={cpu.get('arch')!r}: pass socket_link= one of "
                         f"{', '.join(k for k, s in LINKS.items() if s.kind == 'cpu-to-cpu')}")


def from_nccl_xml(text: str | bytes, *, gpu: str | None = None, pcie: str | None = None,
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
      POWER9) is not modelled and raises.
    - ``<c2c bw count>`` of a GPU (NCCL 2.26+, Grace): an ``nvlink_c2c`` edge to the CPU it is
      under of ``count`` links and ``bw x count`` MB/s (NVIDIA/nccl v2.26 src/graph/topo.cc
      ``ncclTopoAddC2c``). A GPU with a ``<c2c>`` whose ``<pci>`` sits directly under its
      ``<cpu>`` stating no link speed or width hangs off it by C2C only (GB200; what
      :func:`to_nccl_xml` writes); otherwise its PCIe link is read as stated, beside the C2C
      (a GPU under a PCIe switch, as GB300's), except a PCIe link stated straight to that CPU,
      which the C2C replaces (one edge joins a pair; the import says so).
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
    pcie = check_link(pcie, "pcie", "pcie")
    socket_link = check_link(socket_link, "cpu-to-cpu", "socket_link")
    root = parse_xml(text)
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
             "nvswitch_busids": set(), "pending": [], "nvlink": {}, "notes": [], "c2c": {}}
    cpus = []
    numa_path: dict = {}
    if len(root) > MAX_CPU_ELEMENTS:
        raise _xml_err("system", f"{len(root)} elements under <system>, expected at most "
                                 f"{MAX_CPU_ELEMENTS} <cpu> elements (the NUMA nodes of one host)")
    for k, cpu in enumerate(root):
        path = f"system/{cpu.tag}[{k}]"
        if cpu.tag != "cpu":
            raise _xml_err(path, f"<{cpu.tag}> directly under <system>, expected <cpu>")
        numa = _attr_int(cpu, path, "numaid", minimum=0)
        if numa >= MAX_NUMA_NODES:
            raise _xml_err(path, f"numaid={numa}, expected a NUMA node below {MAX_NUMA_NODES} (Linux's "
                                 f"MAX_NUMNODES)")
        if numa in numa_path:
            raise _xml_err(path, f"numaid={numa} appears on two <cpu> elements (first {numa_path[numa]})")
        numa_path[numa] = path
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
    for node, (count, bandwidth, _, socket) in state["c2c"].items():
        if G.has_edge(f"cpu{socket}", node):  # a PCIe link stated to the same CPU: one edge joins a pair
            state["notes"].append(f"{node}: its PCIe link to cpu{socket} "
                                  f"({G.edges[f'cpu{socket}', node]['link']}) read as its NVLink-C2C")
        _xml_link(G, f"cpu{socket}", node, "nvlink_c2c", bandwidth, links=count, host_bridge=0)
    _prune_switches(G)
    _xml_nvlinks(G, state)
    cpu_nodes = [f"cpu{numa}" for numa, _, _ in cpus]
    for k, (numa, cpu, path) in enumerate(cpus):
        for other in cpu_nodes[k + 1:]:
            link = _socket_link(cpu, path, socket_link)
            add_link(G, f"cpu{numa}", other, link, 1)
    if state["notes"]:
        G.graph["inferred"] = "As NCCL reads the XML: " + "; ".join(state["notes"])
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"NCCL topology XML: the fabric it describes is not valid: {error}") from error
    return G


def _xml_link(G, u, v, link, bandwidth, links=1, **attributes):
    spec = LINKS[link]
    for a, b in ((u, v), (v, u)):
        G.add_edge(a, b, kind=spec.kind, link=link, links=links, bandwidth=bandwidth, latency=spec.latency,
                   **attributes)


def _xml_pci(G, state, element, path, parent, socket, spec_key, pcie, depth=1):
    if depth > MAX_PCI_DEPTH:
        raise _xml_err(path, f"<pci> elements nested {depth} deep, expected at most MAX_PCI_DEPTH="
                             f"{MAX_PCI_DEPTH} (a PCIe tree is a few switch levels deep)")
    busid = (element.get("busid") or "").strip().lower()
    if not _BUSID.fullmatch(busid):
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
            if node in state["c2c"] and parent == f"cpu{socket}" and not _states_link(element):
                # Reached over NVLink-C2C only (GB200): the <pci> under its <cpu> with no link
                # speed or width is how to_nccl_xml writes such a GPU. [U] whether NVIDIA's
                # driver reports a PCIe link speed for it in a real dump; one that does is read
                # as a PCIe link beside the C2C.
                state["notes"].append(f"{node}: under its CPU with no PCIe link stated and a <c2c>: "
                                      f"reached over NVLink-C2C only")
            else:
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
        _xml_pci(G, state, kid, f"{path}/pci[{k}]", node, socket, spec_key, pcie, depth + 1)


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
    key = spec_key or (gpu_model(_GPU_DEVICES[device]) if device in _GPU_DEVICES else None)
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
            if node in state["c2c"]:
                raise _xml_err(kid_path, f"a second <c2c> on {node} (first {state['c2c'][node][2]})")
            bw = _attr_int(kid, kid_path, "bw", base=10, minimum=1)
            count = _attr_int(kid, kid_path, "count", base=10, minimum=1)
            if count > 64:
                raise _xml_err(kid_path, f"count={count}, expected at most 64 C2C links")
            # NVIDIA/nccl v2.26 src/graph/topo.cc ncclTopoAddC2c: c2cBw = bw * count / 1000 GB/s,
            # bw the per-link figure NVML reports in MB/s; a link to the GPU's local CPU.
            if bw * count * 1e6 > MAX_BANDWIDTH:
                raise _xml_err(kid_path, f"bw={bw} x count={count} MB/s, expected at most "
                                         f"{MAX_BANDWIDTH / 1e6:.0f} MB/s in all (a physical link)")
            state["c2c"][node] = (count, bw * count * 1e6, kid_path, socket)
            continue
        if kid.tag != "nvlink":
            raise _xml_err(kid_path, f"<{kid.tag}> under <gpu>, expected <nvlink> or <c2c>")
        target = (kid.get("target") or "").strip().lower()
        if not _BUSID.fullmatch(target):
            raise _xml_err(kid_path, f"target={kid.get('target')!r}, expected the PCI bus id of the GPU or "
                                     f"NVSwitch at the other end, such as 0000:c4:00.0")
        count = _attr_int(kid, kid_path, "count", base=10, minimum=1)
        if count > 64:
            raise _xml_err(kid_path, f"count={count}, expected at most 64 NVLinks")
        tclass = (kid.get("tclass") or "").strip().lower()
        if tclass == _CLASS_CPU_NVLINK:
            raise _xml_err(kid_path, "NVLink to a CPU (tclass 0x068001, POWER9) is not modelled")
        if not (tclass.startswith(_CLASS_GPU) or tclass == _CLASS_NVSWITCH):
            raise _xml_err(kid_path, f"tclass={kid.get('tclass')!r}, expected the PCI class of the other end: "
                                     f"0x03.... (a GPU) or {_CLASS_NVSWITCH} (an NVSwitch)")
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
        if not NIC_NAME.match(name) or RESERVED_ID.match(name):
            raise _xml_err(net_path, f"name={net.get('name')!r}, expected a device name such as mlx5_0")
        if name in state["nics"] or name in G:
            raise _xml_err(net_path, f"a second NIC named {name!r}")
        dev = _attr_int(net, net_path, "dev", minimum=0)
        if dev in state["nic_index"]:
            raise _xml_err(net_path, f"dev={dev} appears on NICs {state['nic_index'][dev]!r} and {name!r}")
        speed = _attr_int(net, net_path, "speed", base=10, required=False, default=0)
        if speed < 0:
            raise _xml_err(net_path, f"speed={net.get('speed')!r}, expected the port rate in Mb/s "
                                     f"(such as 400000), or 0 or nothing for NCCL's default")
        # NCCL takes a speed of 0 as 10000 Mb/s (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc).
        if speed == 0:
            state["notes"].append(f"{name}: no port speed, NCCL's 10000 Mb/s")
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
        if target in state["busids"] and target not in state["nvswitch_busids"]:
            raise _xml_err(path, f"an NVLink to {target}, which is {state['busids'][target]}: expected a GPU "
                                 f"(with a <gpu> element) or an NVSwitch")
        if to_gpu:
            # A GPU of the machine outside the XML (not in the job): NCCL ignores the link
            # (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ncclTopoAddNvLinks), and so does this.
            state["notes"].append(f"NVLink from {node} to {target} ignored (a GPU not in the XML)")
            continue
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
# Export
# --------------------------------------------------------------------------------------------

# PCIe link technology -> the link_speed NCCL writes for it (src/graph/xml.cc reads sysfs's
# "max_link_speed": "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe").
_LINK_SPEED = MappingProxyType({link: f"{rate:.1f} GT/s PCIe" for rate, (link, efficiency) in _PCIE_GENERATIONS.items()
               if efficiency is None})
# GPU model -> the first PCI device id _GPU_DEVICES gives it.
_DEVICE_OF_MODEL = MappingProxyType({model: device for device, model in reversed(
    [(device, GPUS[gpu_model(name)].model) for device, name in _GPU_DEVICES.items()])})


def _busid(number: int) -> str:
    """A PCI bus id: domain and bus from ``number``, device 0, function 0."""
    return f"{number // 256:04x}:{number % 256:02x}:00.0"


def _pcie_attributes(G, parent, child, where: str) -> dict:
    data = G.edges[parent, child]
    if data["link"] not in _LINK_SPEED:
        raise TopologyError(f"NCCL XML export: {where} ({parent!r} to {child!r}) is {data['link']}, which "
                            f"NCCL's XML cannot state: expected one of {', '.join(_LINK_SPEED)}")
    width = 16 * data["bandwidth"] / LINKS[data["link"]].bandwidth
    if not any(math.isclose(width, w) for w in PCIE_WIDTHS):
        raise TopologyError(f"NCCL XML export: {where} ({parent!r} to {child!r}) carries "
                            f"{data['bandwidth']:.4g} B/s, which is no PCIe width of {data['link']} "
                            f"(x{width:.3g}): NCCL's XML states lanes, not bandwidth")
    return {"link_speed": _LINK_SPEED[data["link"]], "link_width": str(round(width))}


def _tree_edge(data: dict) -> bool:
    """A PCIe edge of the tree the XML nests (NVLink-C2C, an edge of kind ``pcie`` too, is not:
    NCCL writes it as a ``<c2c>`` of the GPU)."""
    return data["kind"] == "pcie" and data["link"] != "nvlink_c2c"


def to_nccl_xml(G: nx.DiGraph, *, host: int = 0) -> str:
    """One host of a fabric as NCCL's topology XML (what ``NCCL_TOPO_DUMP_FILE`` holds).

    Writes what :func:`from_nccl_xml` reads: a ``<cpu>`` per CPU (NUMA) node with its affinity
    mask and a CPU identity of its socket link's kind (:data:`_CPU_IDENTITY`), the PCIe tree
    as nested ``<pci>`` (switches class 0x060400, GPUs 0x030200, NICs 0x020700) with each
    link's speed and width, ``<gpu dev sm>`` with an ``<nvlink>`` per bundle to a GPU or an
    NVSwitch, ``<nic><net name dev speed>`` for each compute NIC. Bus ids are made up in tree
    order (NVSwitches after the devices). NCCL's XML has no room for the rest, which a round
    trip therefore does not keep: NICs without a network port (storage cards), host bridges
    (NCCL has no NODE class), NVSwitch trunks (the importer rejoins two baseboards), thread
    counts and socket link counts (NCCL charges one figure per socket pair). NVLink-C2C is a
    GPU's ``<c2c bw count>`` (per-link MB/s); a GPU with a PCIe link besides, as GB300's beside
    its ConnectX-8, is written below that link, one with C2C only, as GB200's, under its CPU
    stating no PCIe link. Reading it back gives the fabric NCCL builds from it, and so NCCL's
    predictions.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric.
    host : int
        The host to write (NCCL writes one XML per host).

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        For a host without GPUs or CPU nodes, a device that hangs off a CPU by neither PCIe nor
        NVLink-C2C, a C2C to a CPU other than the one above the GPU or not a whole number of
        MB/s a link, the same both ways, a PCIe or NVLink edge whose bandwidth is not the
        catalogue's for its lanes or links (a degraded what-if), or a socket link without a
        CPU identity.

    Examples
    --------
    >>> import topo
    >>> G = from_nccl_xml(to_nccl_xml(topo.dgx1v()))
    >>> G.edges["gpu0", "gpu3"]["links"], G.edges["cpu0", "cpu1"]["link"]
    (2, 'qpi_bdw')
    """
    from xml.etree import ElementTree as ET  # writing only: the parsing above goes through defusedxml

    validate(G)
    kind = G.nodes
    gpu_nodes = [g for g in gpus(G) if kind[g]["host"] == host]
    if not gpu_nodes:
        raise TopologyError(f"NCCL XML export: no GPU on host {host}")
    cpus = [c for c in nodes_of_kind(G, "cpu") if kind[c]["host"] == host]
    if not cpus:
        raise TopologyError(f"NCCL XML export: host {host} has no CPU node: NCCL's XML hangs every "
                            f"device off a <cpu>")
    links = {G.edges[a, b]["link"] for a in cpus for b in G.adj[a] if G.edges[a, b]["kind"] == "cpu-to-cpu"}
    identity = _CPU_IDENTITY.get(min(links) if links else "qpi_bdw")
    if identity is None:
        raise TopologyError(f"NCCL XML export: no CPU identity for the socket link {min(links)!r}")
    # Bus ids: devices and switches in tree order, then the NVSwitches.
    number = iter(range(1, 2**24))
    busid: dict = {}
    root = ET.Element("system", version="1", name=str(G.graph.get("name", "imported")))
    placed: set = set()
    gpu_element: dict = {}
    cpu_element: dict = {}
    tree_parent: dict = {}

    def cpu_above(node):
        while kind[node]["kind"] != "cpu":
            node = tree_parent[node]
        return node

    def device(parent_element, parent, node):
        where = f"the PCIe link of {kind[node]['kind']} {node!r}"
        kid_kind = kind[node]["kind"]
        if kid_kind == "nic" and "port_bandwidth" not in kind[node]:
            return  # a storage / management port: no <net> NCCL uses
        busid[node] = _busid(next(number))
        attributes = {"busid": busid[node]}
        if kid_kind == "gpu":
            model = _DEVICE_OF_MODEL.get(kind[node]["model"])
            attributes.update({"class": "0x030200", "vendor": "0x10de",
                               **({"device": f"0x{model:04x}"} if model is not None else {})})
        elif kid_kind == "nic":
            attributes.update({"class": "0x020700", "vendor": "0x15b3"})
        else:
            attributes.update({"class": "0x060400", "vendor": "0x10b5"})
        if G.edges[parent, node]["link"] != "nvlink_c2c":  # reached over C2C only: no PCIe link to state
            attributes.update(_pcie_attributes(G, parent, node, where))
        element = ET.SubElement(parent_element, "pci", attributes)
        placed.add(node)
        tree_parent[node] = parent
        if kid_kind == "gpu":
            gpu_element[node] = ET.SubElement(element, "gpu", dev=str(kind[node]["index"]),
                                              sm=str(kind[node]["compute_capability"]),
                                              rank=str(kind[node]["index"]), gdr="1")
            cpu = cpu_above(parent)
            for peer, data in G.adj[node].items():
                if data["link"] != "nvlink_c2c":
                    continue
                if peer != cpu:
                    raise TopologyError(f"NCCL XML export: GPU {node!r} has NVLink-C2C to {peer!r} but sits "
                                        f"under {cpu!r}: NCCL's <c2c> links a GPU to the CPU it is under")
                per_link = data["bandwidth"] / data["links"] / 1e6
                if per_link != round(per_link) or data["bandwidth"] != G.edges[peer, node]["bandwidth"]:
                    raise TopologyError(f"NCCL XML export: NVLink-C2C ({node!r}, {peer!r}) carries "
                                        f"{data['bandwidth']:.4g} B/s over {data['links']} link(s): NCCL's "
                                        f"<c2c> states a whole number of MB/s a link, the same both ways")
                ET.SubElement(gpu_element[node], "c2c", bw=str(round(per_link)), count=str(data["links"]))
        elif kid_kind == "nic":
            nic = ET.SubElement(element, "nic")
            ET.SubElement(nic, "net", name=str(kind[node]["name"]), dev=str(kind[node]["index"]),
                          speed=str(round(kind[node]["port_bandwidth"] * 8 / 1e6)), port="1", gdr="1")
        else:
            for kid, data in G.adj[node].items():
                if _tree_edge(data) and kid not in placed and kind[kid]["kind"] in ("pcie_switch", "gpu", "nic"):
                    device(element, node, kid)
            if not len(element):
                parent_element.remove(element)  # a switch with nothing NCCL uses below it

    for c in cpus:
        arch, vendor, family, model = identity
        data = kind[c]
        sockets = len(cpus)
        mask = 0
        for thread in range(data["threads_per_core"]):
            start = (thread * sockets + data["index"]) * data["cores"]
            mask |= ((1 << data["cores"]) - 1) << start
        digits = f"{mask:x}"
        digits = digits.zfill(-(-len(digits) // 8) * 8)
        element = ET.SubElement(root, "cpu", numaid=str(data["index"]),
                                affinity=",".join(digits[k:k + 8] for k in range(0, len(digits), 8)),
                                arch=arch, vendor=vendor, familyid=str(family), modelid=str(model))
        for kid, edge in G.adj[c].items():
            if _tree_edge(edge) and kind[kid]["kind"] in ("pcie_switch", "gpu", "nic") and kid not in placed:
                device(element, c, kid)
        cpu_element[c] = element
    # A GPU reached over NVLink-C2C only (GB200's): a <pci> under its CPU that states no PCIe
    # link, and its <c2c> (how from_nccl_xml reads it back).
    for g in gpu_nodes:
        if g not in placed:
            c2c = [c for c in G.adj[g] if c in cpu_element and G.edges[g, c]["link"] == "nvlink_c2c"]
            if c2c:
                device(cpu_element[c2c[0]], c2c[0], g)
    missing = [g for g in gpu_nodes if g not in placed]
    if missing:
        raise TopologyError(f"NCCL XML export: GPU {missing[0]!r} hangs off no CPU of host {host} by PCIe or "
                            f"NVLink-C2C: NCCL's XML places a GPU under its CPU")
    switches = [n for n in nodes_of_kind(G, "nvswitch")
                if any(u in placed for u in G.adj[n])]
    for s_node in switches:
        busid[s_node] = _busid(next(number))
    for g, target in gpu_element.items():
        for peer, data in G.adj[g].items():
            if data["kind"] != "nvlink":
                continue
            if data["bandwidth"] != data["links"] * LINKS[data["link"]].bandwidth:
                raise TopologyError(f"NCCL XML export: NVLink ({g!r}, {peer!r}) carries {data['bandwidth']:.4g} "
                                    f"B/s, not {data['links']} x {data['link']}: NCCL's XML states link counts")
            if peer not in busid:
                continue  # a GPU of another host
            tclass = "0x030200" if kind[peer]["kind"] == "gpu" else _CLASS_NVSWITCH
            ET.SubElement(target, "nvlink", target=busid[peer], count=str(data["links"]), tclass=tclass)
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode") + "\n"

