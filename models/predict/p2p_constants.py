"""The constants of the GPU-to-GPU copy model (:mod:`models.predict.p2p`), each with its provenance.

Three tables of :class:`Calibrated` values: :data:`EFFICIENCIES` (achieved over line rate, per
link technology and generation, and over HBM bandwidth for the device-local copy),
:data:`HOST_CEILINGS` (what one CPU's memory carries of the copies staged through it) and
:data:`OVERHEADS` (fixed software latencies). Each says what it applies to, what it was fitted
to (empty when derived), its source, and what about it is not verified ([U]).

Calibration
-----------
Fitted to one published p2pBandwidthLatencyTest row, GPU0 of a DGX-1V (bidirectional
bandwidth and latency, P2P enabled and disabled: tests/data/dgx1v_p2p_gpu0_row.json, from
NVIDIA/OpenACC GPU bootcamp material); every fitted constant says what it was fitted to. The
NVLink efficiencies are *derived* from NVLink's signalling rates and packet format, and the
row only checks them; the P100 HBM figure is derived from the V100 fit and NVIDIA's stated
generation ratio. Nothing was fitted to one-way data (the row has none), to P100 or to DGX-2
machines: those are predictions. Residuals: ``tests/models/predict/test_p2p.py`` prints them.

Residuals on machines without data here
---------------------------------------
*DGX A100 peer copies.* The model takes a copy engine's ``cudaMemcpyPeer`` to move the NVLink 3
payload rate of all 12 links through the NVSwitches: 12 x 25 GB/s x 16/17 (256-byte copy-engine
payloads, [S31]) = 282.4 GB/s one way, 564.7 both ways, the packet framing of NVLink 1/2 being
the only loss. The one measured copy over NVSwitch of a later generation in the sources, an HGX
H100's p2pBandwidthLatencyTest ([S32]), moves 371-377 of 450 GB/s one way (82-84 %) and 783 of
900 both ways (87 %), where the same assumption gives 423.5 and 847.1, 12-14 % above one way
and 8 % both ways; so a copy engine over two NVLink hops falls short of the wire by more than
its framing (its read and write requests, the switch's handling and the acknowledgements
coming back are not in the model) [U]. The A100 figure is therefore most likely above what is measured, by the share the
copy engine loses. Not fixed: no A100 copy is in the data, and carrying the H100 shortfall to
NVLink 3 would carry an efficiency across generations.

*Staged copies both ways.* ``"staged"`` (0.6068 of the line rate each way) and
``"staged_duplex"`` (0.4578 each way of a GPU's own link while it stages both ways) were fitted
on PCIe 3.0 and are used for every generation: a DGX A100 (PCIe 4.0) is predicted at 19.1 GB/s
one way and 28.8 both ways, a DGX H100 (PCIe 5.0) at 38.2 and 57.7. By the specification a link
is full duplex and DMA both ways costs only the read requests beside the other direction's
data (:attr:`topo.specs.WireFormat.dma_efficiency`: 0.865 of the line rate each way on PCIe 4.0
and 5.0, what :mod:`models.predict.nicpath` uses for a NIC's path), which would give 27.2 and
54.5 GB/s each way. The HGX H100 staged figure in [S32], 36-38 GB/s, is the fitted PCIe 3.0
share of a PCIe 5.0 link (38.2), not the specification's, so the shortfall is not PCIe 3.0's
alone and the specification cannot replace the fit here [U] (which of the test's matrices that
figure is was not established). How much running both ways costs beyond one way (0.4578 / 0.6068
= 0.75 per direction on PCIe 3.0) has no source but the DGX-1V row, which also rules out the
host's memory, root complex and socket link as its cause there (same-socket pairs measure as
cross-socket ones). An error near 15 % both ways on another machine is in that ratio, a per-GPU
figure of one generation's copy engines and PCIe interface. Not fixed: no both-ways staged run
of PCIe 4.0 or 5.0 is in the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from topo.specs import LINKS, WIRES
from topo.units import GB, us

from ..engine.nccl.profiles import nccl_profile

__all__ = ["Calibrated", "EFFICIENCIES", "HOST_CEILINGS", "OVERHEADS"]


@dataclass(frozen=True, slots=True)
class Calibrated:
    """A model constant with its provenance.

    Attributes
    ----------
    value : float
        The constant (an efficiency is dimensionless, an overhead in [s], a ceiling in [B/s]).
    applies_to : str
        What it multiplies or adds to.
    fitted_to : str
        The measurements it was fitted to, and how; empty if it was not fitted.
    source : str
        Where the value or the measurements come from.
    uncertain : str
        What about it is not verified.
    """

    value: float
    applies_to: str
    fitted_to: str
    source: str
    uncertain: str = ""


_ROW = ("p2pBandwidthLatencyTest on a DGX-1V, GPU0's row (NVIDIA/OpenACC GPU bootcamp "
        "material; tests/data/dgx1v_p2p_gpu0_row.json)")

# NVLink and InfiniBand: the payload rate of the wire (topo.specs.WIRES: lanes x signalling,
# line code, FEC, packet framing, from each generation's specification) over the line rate. For
# NVLink, packets of 16-byte flits, one header flit per 16 data flits: copy engines write
# 256-byte payloads (NCCL maintainer, NVIDIA/nccl-tests issue 149), so 16 of every 17 flits
# carry data; NVLink 2.0 signals 25.78125 Gb/s, a little above the nominal 25 GB/s per link.
def _wire(link: str, applies_to: str, uncertain: str) -> Calibrated:
    w = WIRES[link]
    return Calibrated(
        w.payload_rate / LINKS[link].bandwidth, applies_to, "",
        f"derived: {w.lanes} lanes x {w.lane_rate / 1e9:g} Gb/s = {w.data_rate / GB:.4g} GB/s per "
        f"direction x {w.payload}/{w.payload + w.header + w.control:g} of each packet payload "
        f"(topo.specs.WIRES[{link!r}], from the {LINKS[link].label} specification), / the "
        f"{LINKS[link].bandwidth / GB:g} GB/s line rate",
        uncertain)


def _nvlink(link: str, uncertain: str) -> Calibrated:
    return _wire(link, f"line rate of {LINKS[link].label} edges on a peer route, direct or through "
                 f"NVSwitches, and of those edges in maxflow mode", uncertain)


def _network(link: str) -> Calibrated:
    # An RDMA copy moves at the payload rate of InfiniBand packets (4096 of every 4122 bytes).
    return _wire(link, f"line rate of {LINKS[link].label} edges (NIC ports, switch links) of a "
                 f"copy between hosts (NCCL's NET transport)",
                 "not fitted: no measured GPU-to-GPU copy between hosts in the data; RDMA assumed "
                 "to run at the payload rate [U]")


#: Achieved / line rate (or / HBM bandwidth), per link technology and generation: the one
#: table of efficiencies.
EFFICIENCIES: Mapping[str, Calibrated] = MappingProxyType({
    "nvlink1": _nvlink(
        "nvlink1",
        "[U] 8 lanes per direction and the 16/17 packet efficiency for copy-engine writes are "
        "not verified on a P100; not measured here (a prediction)"),
    "nvlink2": _nvlink(
        "nvlink2",
        "checked, not fitted: the DGX-1V row's 4 NVLink entries are within 0.2 % (48.49, "
        "48.49, 96.85, 96.9 GB/s both ways); NVSwitch hops assumed to keep it [U]"),
    "nvlink3": _nvlink(
        "nvlink3", "[U] no A100 measurement in the data; packet format assumed unchanged from NVLink 2"),
    "nvlink4": _nvlink(
        "nvlink4",
        "[U] signalling ~100 Gb/s is derived; packet format assumed unchanged; NVIDIA/nccl "
        "issue 1264 shows p2pBandwidthLatencyTest at ~83 % of line rate one way on an HGX "
        "H100, below this figure"),
    "nvlink5": _nvlink("nvlink5", "[U] lanes and signalling derived, packet format assumed unchanged"),
    # NCCL's PCI_BW 12.0 GB/s of PCIe 3.0 x16's 15.75 (and Gen4 24 of 31.5): 0.7617.
    "pcie": Calibrated(
        round(nccl_profile().link_bandwidth("pcie3_x16") / LINKS["pcie3_x16"].bandwidth, 4),
        "line rate of PCIe edges on a peer route (PIX, PXB)", "",
        "NVIDIA/nccl v2.27.7-1 src/graph/topo.h PCI_BW 12.0 GB/s for a Gen3 x16 link, / "
        "15.75 GB/s line rate",
        "not fitted: the DGX-1V row has no PCIe peer pair; NCCL's figure is for SM-driven "
        "transfers, not copy engines [U]"),
    # 9.56 / 15.7538 = 0.60684: the GPU0-GPU1 pair shares one PLX switch, and with P2P
    # disabled both copies of the bidirectional test cross its uplink once in each
    # direction, so the pair's total is what one direction of the uplink carries.
    "staged": Calibrated(
        0.6068, "line rate of every directed PCIe (and socket-to-socket) edge a copy staged "
        "through host memory crosses, shared between the staged streams on that edge",
        "bidirectional P2P=Disabled GPU0-GPU1 entry (9.56 GB/s; GPUs under one PCIe switch, "
        "both copies share its uplink both ways) / PCIe 3.0 x16 line rate", _ROW,
        "[U] assumes the uplink carries the same per direction whether one stream or two "
        "cross it: one-way staged copies (not in the row) are predicted at this figure"),
    # mean(14.43, 14.46, 14.47, 14.24, 14.51, 14.43, 14.25, 14.54, 14.49) / (2 x 15.7538)
    # = 14.4244 / 31.5077 = 0.45781
    "staged_duplex": Calibrated(
        0.4578, "line rate of a GPU's own PCIe link, each direction, while it moves staged "
        "copies both ways at once",
        "mean of measured / (2 x PCIe 3.0 x16 line rate) over the 9 bidirectional staged "
        "entries whose GPUs do not share a switch (P2P=Disabled GPU2-7, P2P=Enabled GPU5-7)",
        _ROW,
        "[U] a per-GPU limit, not the host's: pairs on one socket (both bounce buffers and "
        "all four DMA streams on one CPU) measure the same as pairs across sockets, which a "
        "host memory, root complex or socket-link limit would not give; the mechanism "
        "(copy engines or the GPU's PCIe interface under duplex DMA) is an interpretation"),
    # One per InfiniBand generation, from its own wire (none carried from another).
    **{link: _network(link) for link in ("ib_edr", "ib_hdr", "ib_ndr", "ib_xdr")},
    # 784.87 / 900 = 0.87208
    "hbm_sm70": Calibrated(
        0.8721, "HBM bandwidth (memory_bandwidth) of a Volta GPU (compute capability 7.0, and "
        "GPUs of unknown generation) for the device-local copy (diagonal)",
        "measured / HBM bandwidth of the diagonal entry (784.87 GB/s of V100's 900), "
        "P2P=Enabled", _ROW,
        "900 GB/s is NVIDIA's V100 datasheet figure; other generations than Volta and Pascal "
        "fall back to this figure [U]"),
    # 784.87 / 1.5 / 732 = 0.71482
    "hbm_sm60": Calibrated(
        0.7148, "HBM bandwidth (memory_bandwidth) of a Pascal GPU (compute capability 6.0) for "
        "the device-local copy (diagonal)", "",
        "derived: the V100 fit (784.87 GB/s) / 1.5, NVIDIA Tesla V100 GPU Architecture "
        "whitepaper ('1.5x delivered memory bandwidth versus Pascal GP100'), / P100's 732 GB/s",
        "[U] the whitepaper's ratio is for its own workloads, not for a device-local "
        "cudaMemcpy; not measured here (a prediction)"),
})


def _ceiling(channels: int, mts: int, platform: str, source: str, uncertain: str) -> Calibrated:
    memory = channels * mts * 1e6 * 8  # 64-bit channels
    return Calibrated(
        memory / 2, f"sum of the copies staged through one {platform} socket's memory (each "
        f"staged byte is written to and read from it once)", "",
        f"derived: {channels} channels x DDR4-{mts} x 8 B = {memory / GB:.1f} GB/s, / 2 "
        f"({source})", uncertain)


#: The host's ceiling on copies staged through one CPU's memory, per CPU model (the CPU
#: node's ``model`` attribute). A CPU of a model not listed has no ceiling.
HOST_CEILINGS: Mapping[str, Calibrated] = MappingProxyType({
    "Intel Xeon E5-2698 v4": _ceiling(
        4, 2133, "Broadwell-EP (DGX-1, DGX-1V)",
        "Intel Xeon E5-2698 v4 product specifications: 4 channels; NVIDIA DGX-1 datasheet: "
        "DDR4-2133",
        "[U] the theoretical figure, not the achievable; above the staged rates the row "
        "shows, so it never binds on a DGX-1 (consistent with the row: same-socket pairs "
        "measure as cross-socket ones)"),
    "Intel Xeon Platinum 8168": _ceiling(
        6, 2666, "Skylake-SP (DGX-2)",
        "Intel Xeon Platinum 8168 product specifications: 6 channels, DDR4-2666",
        "[U] DGX-2's populated memory speed is not verified; never binds on a DGX-2"),
})

#: Fixed software overheads added to the hops' latencies.
OVERHEADS: Mapping[str, Calibrated] = MappingProxyType({
    "network": Calibrated(
        2.7 * us, "latency of a copy between hosts (GPUDirect RDMA), on top of the hops",
        "", "NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc hwLat[NET][Ring][LL] = 2.7 us, NCCL's "
        "own per-step network latency for its lowest-latency protocol",
        "not fitted: no measured latency between hosts in the data; a staged end adds the "
        "staged overhead [U]"),
    # mean(1.76, 1.62 - 0.5, 1.61 - 0.5, 2.01 - 0.5, 2.02 - 0.5) = 1.404 us
    "p2p": Calibrated(
        1.404 * us, "latency of a peer copy (and of the device-local copy), on top of the hops",
        "mean of measured minus the route's hop latency over the 5 peer entries (diagonal, "
        "GPU1-4), P2P=Enabled writes", _ROW,
        "the hop latencies themselves are assumptions (500 ns per NVLink hop, topo.specs); "
        "the row has NV2 pairs slower than NV1 ones, which no per-hop model reproduces"),
    # mean(18.44, 19.15, 19.34) - (4 x 150 ns PCIe + 100 ns QPI) = 18.277 us
    "staged": Calibrated(
        18.28 * us, "latency of a copy staged through host memory in a P2P=Enabled run, on top "
        "of the hops of both legs",
        "mean of measured minus the hop latency (0.7 us) over the 3 entries without NVLink "
        "(GPU5-7), P2P=Enabled writes", _ROW,
        "[U] what it stands for (two DMA copies through a host bounce buffer and their "
        "synchronisation) is an interpretation; measured on cross-socket pairs only"),
    # mean(17.52, 16.41, 16.43, 17.35, 16.88, 17.34, 16.85)
    #   - mean(0.6, 0.6, 0.6, 0.7, 0.7, 0.7, 0.7) = 16.9686 - 0.6571 = 16.311 us
    "staged_p2p_disabled": Calibrated(
        16.31 * us, "latency of a copy staged through host memory in a P2P=Disabled run, on "
        "top of the hops of both legs",
        "mean of measured minus the hop latency of both legs over the 7 off-diagonal "
        "P2P=Disabled entries (GPU1-7)", _ROW,
        "[U] about 2 us below the P2P=Enabled staged figure on the same pairs, for reasons "
        "the row does not show; the residuals spread +-0.6 us"),
})
