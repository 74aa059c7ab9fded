"""What nccl-tests measures, beside what NCCL's tuner believes.

:func:`models.estimate` returns NCCL's *internal* tuning estimate: what NCCL uses to choose an
algorithm, a protocol and a number of channels. A benchmark measures something else. This
module adds, on top of an estimate, the mechanisms that separate the two, each a named constant
of :class:`MeasurementModel` with its source or fit:

*Host issue cost.* nccl-tests with ``-g N`` runs one thread that launches every collective on
its N GPUs one after the other (``ncclGroupStart``; one ``ncclAllReduce`` ... per GPU;
``ncclGroupEnd``), so no GPU can finish before the last one was launched. The host needs
``floor + gpus_per_thread x launch_per_gpu`` per operation; NCCL's latency term (the pipeline
fill) runs on the GPUs already launched while the thread launches the others, so the two
overlap and only the larger counts::

    time = max(floor + g x launch_per_gpu, nccl_latency) + nbytes / (nccl_bandwidth x ratio)

*Achieved vs nominal bandwidth.* NCCL's per-link figures (those of the NCCL profile)
are what its tuner assumes, not what moves. The achieved rate of a link class is
``data_rate x packet_efficiency x transfer_efficiency``: the line rate after line coding, the
share of each packet that is payload (headers, CRC: hardware facts), and the share of that
NCCL's kernels sustain (fitted once, on NVSwitch, and assumed for every class [U]). ``ratio`` is
the achieved rate of the slowest link class the collective's bottleneck crosses (and, across
hosts, of the network) over NCCL's figure for it.

What was fitted, to what
------------------------
Only nccl-tests on 12 GPUs of a DGX-2 (``-g 12``; wohlbier/nccl-tests README, "Results on
dgx-2" (2020); tests/data/dgx2_12gpu_nccl_tests.json):

- ``launch_per_gpu``: the mean of the 8 B - 64 KiB rows (out-of-place and in-place, all five
  collectives; the times are flat there, 56.6-65.1 us) divided by 12, ``floor`` held at 0.
- ``transfer_efficiency``: least squares on the relative time error of the out-of-place rows of
  all_reduce, broadcast and reduce from 64 MiB to 8 GiB (ring, Simple protocol, bandwidth-bound)
  with ``launch_per_gpu`` fixed. all_gather (validation errors >= 4 GB and a 35 % gap between
  out-of-place and in-place) and reduce_scatter (busbw alternating 48/62 GB/s above 64 MB) are
  suspect in the published output and not used.

``tests/models/predict/test_measure.py`` re-derives both from the data and prints the residuals.
Everything else (other link classes, generations, the network) is predicted from hardware facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import us

from ..engine.fabric import PreparedFabric
from ..engine.nccl.pipelining import PIPELINE_COLLECTIVES, Pipelining, pipelining
from ..engine.nccl.profiles import nccl_profile
from ..engine.nccl.system import NcclSystem
from ..engine.nccltests import algbw, busbw
from ..engine.results import Moved, tidy_records

__all__ = [
    "MeasurementError", "Parameter", "LinkClass", "LINK_CLASSES", "MeasurementModel", "DEFAULT",
    "Measured", "measured", "link_classes", "PipelineFill", "pipeline_fill",
]


class MeasurementError(DgxTopoError):
    """A measurement-model request that cannot be answered (bad -g, unknown link class...)."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One constant of the measurement model with its provenance.

    Attributes
    ----------
    name : str
    value : float
        In SI units ([s] for times; dimensionless for efficiencies).
    unit : str
        ``"s"`` or ``"1"``.
    source : str
        Where the value comes from (a document, an NCCL source file and tag, or a data set).
    fitted_to : str
        The measurements it was fitted to and how; empty if it was not fitted.
    uncertain : str
        What about it is not verified; empty if nothing.
    """

    name: str
    value: float
    unit: str
    source: str
    fitted_to: str = ""
    uncertain: str = ""

    describe = Moved("models.present.explain.describe_parameter(parameter)")


@dataclass(frozen=True, slots=True)
class LinkClass:
    """What one link technology carries, from hardware facts.

    Attributes
    ----------
    link : str
        Key of :data:`topo.LINKS` (the edges' ``link`` attribute).
    data_rate : float
        Line rate per direction after line coding, before packet overheads. [B/s]
    packet_efficiency : float
        Payload / (payload + per-packet overhead) at the largest payload.
    source : str
    uncertain : str
    """

    link: str
    data_rate: float
    packet_efficiency: float
    source: str
    uncertain: str = ""

    @property
    def payload_rate(self) -> float:
        """Payload the wire can carry per direction. [B/s]"""
        return self.data_rate * self.packet_efficiency


# NVLink 1.0/2.0 packets: one 16-byte header flit per up to 16 data flits (256 B) ->
# 256 / 272 (Foley & Danskin, "Ultra-Performance Pascal GPU and NVLink Interconnect",
# IEEE Micro 37(2), 2017). The same framing is assumed for NVLink 3-5 [U].
_NVLINK_PACKET = 256 / 272
# PCIe 3.0-5.0 (128b/130b coding already in topo's line rate): a 256-byte max-payload TLP
# carries 4 B framing + 2 B sequence + 16 B header (4DW, 64-bit address) + 4 B LCRC ->
# 256 / 282 (PCI Express Base Specification 3.0, 2.1 and 4.2). Max payload 256 B on these
# hosts and no ACK/flow-control DLLP share are assumptions [U].
_PCIE_PACKET = 256 / 282
# InfiniBand (64b/66b coding already in topo's line rate): a 4096-byte MTU packet carries
# LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B (InfiniBand Architecture Specification vol. 1,
# rel. 1.3, ch. 5 and 9); RDMA-write RETH (16 B) only on a message's first packet.
_IB_PACKET = 4096 / (4096 + 26)

#: The link classes the measurement model knows, keyed like :data:`topo.LINKS`.
LINK_CLASSES: dict[str, LinkClass] = MappingProxyType({
    "nvlink1": LinkClass("nvlink1", topo.LINKS["nvlink1"].bandwidth, _NVLINK_PACKET,
                         "8 lanes x 20 Gb/s (Tesla P100 whitepaper, NVIDIA 2016); NVLink packet "
                         "framing (Foley & Danskin, IEEE Micro 2017)"),
    # NVLink 2.0 signals at 25.78125 Gb/s per lane (the "25 GB/s" per link is rounded down):
    # 8 lanes -> 25.78 GB/s. 25.78 x 256/272 = 24.26 GB/s, 0.970 of 25: what the DGX-1V
    # p2pBandwidthLatencyTest row shows on its NVLink pairs (0.969), not fitted here.
    "nvlink2": LinkClass("nvlink2", 8 * 25.78125e9 / 8, _NVLINK_PACKET,  # 8 lanes x 25.78125 Gb/s
                         "8 lanes x 25.78125 Gb/s (NVIDIA Tesla V100 GPU architecture whitepaper, "
                         "2017); NVLink packet framing (Foley & Danskin, IEEE Micro 2017)"),
    "nvlink3": LinkClass("nvlink3", topo.LINKS["nvlink3"].bandwidth, _NVLINK_PACKET,
                         "4 lanes x 50 Gb/s (NVIDIA A100 Tensor Core GPU architecture whitepaper, "
                         "2020)", "packet framing assumed as NVLink 1/2"),
    "nvlink4": LinkClass("nvlink4", topo.LINKS["nvlink4"].bandwidth, _NVLINK_PACKET,
                         "2 lanes x 100 Gb/s PAM4 (NVIDIA H100 Tensor Core GPU architecture "
                         "whitepaper, 2022)", "packet framing assumed as NVLink 1/2"),
    "nvlink5": LinkClass("nvlink5", topo.LINKS["nvlink5"].bandwidth, _NVLINK_PACKET,
                         "1.8 TB/s both ways over 18 links (NVIDIA Blackwell architecture "
                         "technical brief, 2024)", "lanes, signalling and packet framing assumed"),
    "pcie3_x16": LinkClass("pcie3_x16", topo.LINKS["pcie3_x16"].bandwidth, _PCIE_PACKET,
                           "8 GT/s x16, 128b/130b; TLP overheads (PCI Express Base Specification "
                           "3.0)", "max payload 256 B, DLLP traffic ignored"),
    "pcie4_x16": LinkClass("pcie4_x16", topo.LINKS["pcie4_x16"].bandwidth, _PCIE_PACKET,
                           "16 GT/s x16, 128b/130b; TLP overheads (PCI Express Base Specification "
                           "4.0)", "max payload 256 B, DLLP traffic ignored"),
    "pcie5_x16": LinkClass("pcie5_x16", topo.LINKS["pcie5_x16"].bandwidth, _PCIE_PACKET,
                           "32 GT/s x16, 128b/130b; TLP overheads (PCI Express Base Specification "
                           "5.0)", "max payload 256 B, DLLP traffic ignored"),
    "ib_edr": LinkClass("ib_edr", topo.LINKS["ib_edr"].bandwidth, _IB_PACKET,
                        "4 x 25.78125 Gb/s, 64b/66b; 4096 B MTU packet headers (InfiniBand "
                        "Architecture Specification vol. 1 rel. 1.3)"),
    "ib_hdr": LinkClass("ib_hdr", topo.LINKS["ib_hdr"].bandwidth, _IB_PACKET,
                        "4 x 53.125 Gb/s PAM4, 64b/66b; 4096 B MTU packet headers (InfiniBand "
                        "Architecture Specification vol. 1 rel. 1.4)",
                        "HDR's FEC overhead not counted"),
    "ib_ndr": LinkClass("ib_ndr", topo.LINKS["ib_ndr"].bandwidth, _IB_PACKET,
                        "4 x 106.25 Gb/s PAM4; 4096 B MTU packet headers (InfiniBand Architecture "
                        "Specification vol. 1 rel. 1.5)", "NDR's FEC overhead not counted"),
})

_DGX2 = ("nccl-tests -g 12 on 12 GPUs of a DGX-2, wohlbier/nccl-tests README \"Results on dgx-2\" "
         "(2020)")

# Fitted (see the module docstring): mean of the 128 rows of 8 B - 64 KiB = 59.82 us, / 12.
_LAUNCH_PER_GPU = 4.985 * us
# Fitted: least squares over the 24 out-of-place rows >= 64 MiB of all_reduce, broadcast and
# reduce; achieved NVLink 2.0 payload through NVSwitch = 20.56 GB/s per link per direction.
_TRANSFER_EFFICIENCY = 0.8405


@dataclass(frozen=True, slots=True)
class MeasurementModel:
    """The measurement model's constants (SI units).

    Attributes
    ----------
    launch_per_gpu : float
        Host time to launch one operation on one more GPU from the same thread. [s]
    floor : float
        Host time per operation independent of the GPU count. [s]
    transfer_efficiency : float
        Share of a link's payload rate NCCL's kernels sustain (every link class).
    efficiency_overrides : tuple of (str, float)
        Per link class, a transfer efficiency replacing ``transfer_efficiency`` (what
        :func:`models.calibrate` fits for the classes a user's runs exercise).
    links : dict
        Link classes by ``topo.LINKS`` key.
    provenance : tuple of (str, str)
        Per parameter name, a replacement for the default source (set by a calibration).
    """

    launch_per_gpu: float = _LAUNCH_PER_GPU
    floor: float = 0.0
    transfer_efficiency: float = _TRANSFER_EFFICIENCY
    efficiency_overrides: tuple = ()
    links: dict = field(default_factory=lambda: dict(LINK_CLASSES), compare=False)
    provenance: tuple = ()

    def efficiency(self, link: str) -> float:
        """Transfer efficiency of a link class (its override, or the common one)."""
        return dict(self.efficiency_overrides).get(link, self.transfer_efficiency)

    def achieved(self, link: str) -> float:
        """Achieved rate of one link of a class, per direction. [B/s]

        Raises
        ------
        MeasurementError
            For a link class the model does not know.
        """
        if link not in self.links:
            raise MeasurementError(f"unknown link class {link!r}: expected one of "
                                   f"{', '.join(sorted(self.links))}")
        return self.links[link].payload_rate * self.efficiency(link)

    def ratio(self, link: str, profile=None, compute_capability: int | None = None) -> float:
        """Achieved rate over NCCL's figure for one link of a class, under an NCCL profile.

        NCCL's figure is the profile's (``ncclTopoNVLinkBw`` of the compute capability for
        NVLink, ``width x speed / 80`` for PCIe, ``speed / 8000`` for a NIC port).
        """
        return self.achieved(link) / nccl_link_figure(link, profile, compute_capability)

    def with_values(self, **values) -> "MeasurementModel":
        """A copy with some constants replaced (``"efficiency:LINK"`` sets an override)."""
        overrides = dict(self.efficiency_overrides)
        plain = {}
        for name, value in values.items():
            if name.startswith("efficiency:"):
                overrides[name.split(":", 1)[1]] = float(value)
            elif name in ("launch_per_gpu", "floor", "transfer_efficiency"):
                plain[name] = float(value)
            else:
                raise MeasurementError(f"unknown parameter {name!r}: expected launch_per_gpu, "
                                       f"floor, transfer_efficiency or efficiency:LINK")
        return replace(self, efficiency_overrides=tuple(sorted(overrides.items())), **plain)

    def parameters(self) -> tuple:
        """Every constant with its source or fit, as :class:`Parameter` records."""
        given = dict(self.provenance)

        def source(name, default):
            return given.get(name, default)

        fitted = "" if "launch_per_gpu" in given else (
            "the 8 B - 64 KiB rows of all five collectives (mean 59.82 us) / 12 GPUs")
        out = [
            Parameter("launch_per_gpu", self.launch_per_gpu, "s", source("launch_per_gpu", _DGX2),
                      fitted, "one host, CPU and NCCL (2020) only; assumed the same elsewhere"),
            Parameter("floor", self.floor, "s", source("floor", "not identifiable from one -g "
                      "value: the whole small-message plateau is attributed to launch_per_gpu"),
                      "", "a per-operation cost independent of -g would need runs with several -g"),
            Parameter("transfer_efficiency", self.transfer_efficiency, "1",
                      source("transfer_efficiency", _DGX2),
                      "" if "transfer_efficiency" in given else
                      "out-of-place rows >= 64 MiB of all_reduce, broadcast, reduce",
                      "fitted on NVLink 2.0 through NVSwitch, assumed for every link class"),
        ]
        for link, value in self.efficiency_overrides:
            out.append(Parameter(f"efficiency:{link}", value, "1",
                                 source(f"efficiency:{link}", "calibration")))
        for cls in self.links.values():
            out.append(Parameter(f"packet_efficiency:{cls.link}", cls.packet_efficiency, "1",
                                 cls.source, "", cls.uncertain))
        return tuple(out)


#: The measurement model with the constants fitted to the DGX-2 runs.
DEFAULT = MeasurementModel()


def nccl_link_figure(link: str, profile=None, compute_capability: int | None = None) -> float:
    """NCCL's bandwidth for one physical link of a technology under a profile. [B/s]

    For NVLink the figure depends on the GPU (``ncclTopoNVLinkBw``); without a compute
    capability, the lowest one of the catalogue's GPUs with that NVLink generation is used.
    """
    profile = nccl_profile(profile)
    if topo.LINKS[link].kind == "nvlink":
        if compute_capability is None:
            compute_capability = min((g.compute_capability for g in topo.GPUS.values() if g.nvlink == link),
                                     default=70)
        return profile.nvlink_bandwidth(compute_capability)
    return profile.link_bandwidth(link)


def link_classes(e, G) -> tuple:
    """Link classes that bind an estimate's bandwidth: the bottleneck's, and across hosts the
    network's (NCCL's per-NIC figure is not what the NIC sustains).

    Parameters
    ----------
    e : CollectiveEstimate
    G : networkx.DiGraph
        The fabric ``e`` was estimated on.

    Returns
    -------
    tuple of str
        Sorted ``topo.LINKS`` keys (empty if nothing binds, e.g. one GPU).
    """
    classes = set()
    for edge in e.bottleneck:
        if G.has_edge(*edge[:2]):
            link = G.edges[edge[0], edge[1]].get("link")
            if link in LINK_CLASSES:
                classes.add(link)
    nnodes = max((s.nnodes for s in (e.ring, e.tree) if s is not None), default=1)
    if nnodes > 1:
        classes.update(d["link"] for _, _, d in G.edges(data=True)
                       if d.get("kind") == "network" and d.get("link") in LINK_CLASSES)
    return tuple(sorted(classes))


@dataclass(frozen=True, slots=True)
class Measured:
    """A predicted measurement: NCCL's estimate plus the measurement terms.

    Size-dependent fields are arrays when the estimate's sizes were an array.

    Attributes
    ----------
    collective : str
    gpus : tuple of int
    nbytes : int or numpy.ndarray
        nccl-tests' size. [bytes]
    time : float or numpy.ndarray
        Predicted measured time of one operation. [s]
    nccl_time : float or numpy.ndarray
        NCCL's tuning estimate. [s]
    nccl_latency : float or numpy.ndarray
        Its latency term. [s]
    host_time : float
        ``floor + gpus_per_thread x launch_per_gpu``. [s]
    startup : float or numpy.ndarray
        ``max(host_time, nccl_latency)``. [s]
    nccl_bandwidth : float or numpy.ndarray
        NCCL's algorithm bandwidth. [B/s]
    ratio : float
        Achieved / NCCL-nominal bandwidth of the binding link class.
    link : str
        The binding link class (``""`` if none).
    gpus_per_thread : int
    model : MeasurementModel
    network_factor : float or numpy.ndarray
        Per size, what the network gives of the bandwidth NCCL assumed at the NICs, for the
        algorithm that runs (:mod:`models.predict.network`; 1 on one host or a non-blocking network).
    network : tuple of models.predict.network.NetworkLoad
        The network loads behind it.
    release : str
        The NCCL release the estimate ran and its behaviours, in words.
    pipeline : PipelineFill or None
        The release's pipeline for the largest size (:func:`pipeline_fill`).
    """

    collective: str
    gpus: tuple
    nbytes: object
    time: object
    nccl_time: object
    nccl_latency: object
    host_time: float
    startup: object
    nccl_bandwidth: object
    ratio: float
    link: str
    gpus_per_thread: int
    model: MeasurementModel = field(repr=False)
    network_factor: object = 1.0
    network: tuple = ()
    release: str = ""
    pipeline: "PipelineFill | None" = None

    @property
    def nranks(self) -> int:
        """Number of ranks."""
        return len(self.gpus)

    @property
    def algbw(self):
        """Predicted nccl-tests algbw, ``nbytes / time`` (:func:`models.engine.nccltests.algbw`). [B/s]"""
        return algbw(self.nbytes, self.time)

    @property
    def busbw(self):
        """Predicted nccl-tests busbw (:func:`models.engine.nccltests.busbw`). [B/s]"""
        return busbw(self.collective, self.nbytes, self.time, self.nranks)

    explain = Moved("models.present.explain.explain(measured)")

    def to_records(self) -> list:
        """Tidy rows, one per size: the measured time and its terms (:mod:`models.engine.results`)."""
        sizes = np.atleast_1d(self.nbytes)

        def each(x):
            return np.broadcast_to(np.atleast_1d(x), sizes.shape)
        return tidy_records({
            "collective": self.collective, "nranks": self.nranks, "nbytes": sizes,
            "time_s": each(self.time), "algbw_Bps": each(self.algbw), "busbw_Bps": each(self.busbw),
            "nccl_time_s": each(self.nccl_time), "nccl_latency_s": each(self.nccl_latency),
            "host_time_s": self.host_time, "startup_s": each(self.startup),
            "nccl_bandwidth_Bps": each(self.nccl_bandwidth), "ratio": self.ratio, "link": self.link,
            "gpus_per_thread": self.gpus_per_thread, "network_factor": each(self.network_factor)})


def _release_and_graph(fabric, profile) -> tuple:
    """``(NcclProfile, graph)`` of an NCCL view or a prepared fabric (its own release), or of a
    graph and ``profile``."""
    if isinstance(fabric, PreparedFabric):
        fabric = fabric.nccl
    if isinstance(fabric, NcclSystem):
        if profile is not None and nccl_profile(profile) is not fabric.profile:
            raise MeasurementError(f"the fabric's NCCL view runs {fabric.profile.version}, received "
                                   f"profile={profile!r}: expected no profile with an NCCL view")
        return fabric.profile, fabric.G
    return nccl_profile(profile), fabric


def measured(e, G, *, gpus_per_thread: int = 1, model: MeasurementModel = DEFAULT,
             profile=None) -> Measured:
    """Predict what nccl-tests measures for an estimate.

    Parameters
    ----------
    e : CollectiveEstimate
        From :func:`models.estimate` on ``G``.
    G : models.engine.nccl.system.NcclSystem or networkx.DiGraph
        The fabric ``e`` was estimated on (read for the link class of the bottleneck edges): NCCL's
        view of it, which carries the NCCL release, or the graph alone.
    gpus_per_thread : int
        GPUs one host thread launches on (nccl-tests ``-g``; 1 for one process per GPU).
    model : MeasurementModel
    profile : str or NcclProfile, optional
        With a graph ``G`` only: the NCCL release ``e`` was estimated with (its per-link figures
        are what ``ratio`` divides by; default the reference release). An NCCL view carries its own.

    Returns
    -------
    Measured

    Raises
    ------
    MeasurementError
        If ``gpus_per_thread`` is not a whole number from 1 to the number of ranks.
    """
    profile, G = _release_and_graph(G, profile)
    if isinstance(gpus_per_thread, bool) or not isinstance(gpus_per_thread, (int, np.integer)) \
            or not 1 <= gpus_per_thread <= max(1, e.nranks):
        raise MeasurementError(f"gpus_per_thread must be an integer from 1 to {max(1, e.nranks)} "
                               f"(the ranks), received {gpus_per_thread!r}")
    classes = link_classes(e, G)
    if classes:
        cc = min(G.nodes[n]["compute_capability"] for n in e.nodes)
        ratios = {c: model.ratio(c, profile, cc) for c in classes}
        link = min(ratios, key=ratios.get)
        ratio = ratios[link]
    else:
        link, ratio = "", 1.0
    host = model.floor + int(gpus_per_thread) * model.launch_per_gpu
    nbytes = e.nbytes
    startup = np.maximum(host, e.latency)
    bandwidth = e.bandwidth
    network = tuple(getattr(e, "network", ()) or ())
    factors = {n.algorithm or n.pattern: n.factor for n in network}
    algorithms = np.asarray(getattr(e, "algorithm", ""), dtype=str)
    network_factor = np.vectorize(lambda a: factors.get(a, 1.0), otypes=[float])(
        algorithms) if factors else np.ones(np.shape(algorithms))
    with np.errstate(divide="ignore", invalid="ignore"):
        transfer = np.where(np.asarray(nbytes) > 0, np.asarray(nbytes, dtype=float)
                            / (np.asarray(bandwidth, dtype=float) * ratio * network_factor), 0.0)
    time = startup + transfer
    if np.ndim(nbytes) == 0:
        time, startup = float(time), float(startup)
        network_factor = float(np.asarray(network_factor).reshape(-1)[-1])
    return Measured(e.collective, tuple(e.gpus), nbytes, time, e.time, e.latency, host, startup,
                    bandwidth, float(ratio), link, int(gpus_per_thread), model, network_factor, network,
                    _release_words(profile), pipeline_fill(e, profile, ratio * network_factor))


# ------------------------------------------------------------------------ the release's pipeline
def _release_words(profile) -> str:
    """``"2.27.7 (v2.27.7-1): topology search, trees, ..."``: the release and its behaviours."""
    b = profile.behaviour
    if b is None:
        return f"{profile.version} ({profile.tag})"
    return (f"{profile.version} ({profile.tag}): " + ", ".join(
        cell.label for cell in (b.ring_builder, b.tree, b.selection, b.ll128, b.nvb, b.pxn, b.nvls)))


@dataclass(frozen=True, slots=True)
class PipelineFill:
    """The pipeline of an estimate's largest size in its NCCL release, and its fill.

    Attributes
    ----------
    pipelining : models.engine.nccl.pipelining.Pipelining
        Chunk, slice and step sizes of the (release, collective, protocol) that runs.
    nbytes : int
        The size described. [bytes]
    nchannels, nranks : int
    loops : int
        Loop iterations per channel (:meth:`Pipelining.loops`).
    fill_slices : int
        Slices the last rank of a chain waits after the first hop (0 on a ring, LL and LL128).
    fill_bytes : float
        What the channels could have moved meanwhile, ``fill_slices x slice x nchannels``. [bytes]
    fill_time : float
        ``fill_bytes`` at the achieved bandwidth of the estimate: shown, not part of the predicted
        time (:data:`FILL_NOTE`). [s]
    """

    pipelining: Pipelining
    nbytes: int
    nchannels: int
    nranks: int
    loops: int
    fill_slices: int
    fill_bytes: float
    fill_time: float

    describe = Moved("models.present.explain.describe_pipeline_fill(fill)")


#: Why the chain fill is described but not added to the predicted time.
FILL_NOTE = ("the 2.5-era DGX-2 broadcast and reduce runs, 12 ranks, leave 5-25 us beside the host "
             "term for it at 1-8 GiB, where 10 slices of 512 KiB would take ~257 us: NCCL's "
             "kernels forward finer than a posted slice [U]; tests/data/dgx2_12gpu_nccl_tests.json")


def pipeline_fill(e, profile, achieved_ratio=1.0) -> PipelineFill | None:
    """The pipeline of an estimate's largest size in its release (:mod:`models.engine.nccl.pipelining`).

    Parameters
    ----------
    e : CollectiveEstimate
    profile : NcclProfile
        The release ``e`` ran.
    achieved_ratio : float or numpy.ndarray
        Achieved over NCCL's bandwidth (the measurement's ``ratio x network_factor``).

    Returns
    -------
    PipelineFill or None
        None for a collective NCCL does not pipeline (sendrecv, alltoall), NVLS, PAT and one rank.
    """
    protocols = np.atleast_1d(np.asarray(getattr(e, "protocol", ""), dtype=str))
    algorithms = np.atleast_1d(np.asarray(getattr(e, "algorithm", ""), dtype=str))
    if e.collective not in PIPELINE_COLLECTIVES or e.nranks < 2 or not protocols.size \
            or algorithms[-1] not in ("ring", "tree"):
        return None
    pipe = pipelining(profile, e.collective, str(protocols[-1]))
    nbytes = int(np.atleast_1d(e.nbytes)[-1])
    nchannels = max(1, int(np.atleast_1d(e.nchannels)[-1]))
    fill = float(pipe.fill_bytes(nbytes, nchannels, e.nranks))
    bandwidth = float(np.atleast_1d(e.bandwidth)[-1]) * float(np.atleast_1d(achieved_ratio)[-1])
    return PipelineFill(pipe, nbytes, nchannels, e.nranks, pipe.loops(nbytes, nchannels, e.nranks),
                        pipe.fill_slices(e.nranks), fill, fill / bandwidth if bandwidth > 0 else 0.0)
