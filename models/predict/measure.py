"""What nccl-tests measures, beside what NCCL's tuner believes.

:func:`models.estimate` returns NCCL's *internal* tuning estimate: what NCCL uses to choose an
algorithm, a protocol and a number of channels. A benchmark measures something else. This
module adds, on top of an estimate, the mechanisms that separate the two, each a named constant
of :class:`MeasurementModel` with its source or fit:

*Host issue cost.* nccl-tests with ``-g N`` runs one thread that launches every collective on
its N GPUs one after the other (``ncclGroupStart``; one ``ncclAllReduce`` ... per GPU;
``ncclGroupEnd``), so no GPU can finish before the last one was launched. The host needs
``floor + gpus_per_thread x launch_per_gpu`` per operation (a point-to-point group adds its
further tasks per GPU, :func:`host_enqueue`); NCCL's latency term (the pipeline
fill) runs on the GPUs already launched while the thread launches the others, so the two
overlap and only the larger counts::

    time = max(floor + g x launch_per_gpu, nccl_latency) + nbytes / (nccl_bandwidth x ratio)

*Achieved vs nominal bandwidth.* NCCL's per-link figures (those of the NCCL profile)
are what its tuner assumes, not what moves. The achieved rate of a link class is
``data_rate x packet_efficiency x transfer_efficiency``: the line rate after line coding and
FEC, the share of each packet that is payload (headers, CRCs, framing, link control: the
wire of each generation's specification, :data:`topo.specs.WIRES`), and the share of that
NCCL's kernels sustain (fitted once, on NVSwitch, and assumed for every class they drive
[U]). On one host ``ratio`` is the achieved rate of the slowest link class the collective's
bottleneck crosses over NCCL's figure for it.

*Across hosts*, NCCL's kernels do not move the network's data: each NIC reads and writes it
by DMA, over its PCIe path to the GPU it serves (GPUDirect RDMA when they share a PCIe
switch) or through host memory. Each NIC the channels use counts by its path
(:mod:`models.predict.nicpath`): the port's payload rate or the PCIe path's DMA payload rate,
whichever binds, over NCCL's figure for the same path (its PCIe figure where that is below the
port's). Each link counts by its own generation: PCIe 3.0 by what its DMA was measured to move
both ways (9.56 GB/s on x16, the DGX-1V row; it binds the EDR NICs of DGX-1V and DGX-2
clusters, 0.797 of NCCL's 12), later generations and the ports by their specifications (the
port binds: HDR and NDR at 1.035 of NCCL's PCIe figure). The NVLink the channels also cross
counts by its headroom, achieved over what the channels reserve on it. ``ratio`` is the lowest
of these.

*Each size by its own algorithm.* NCCL's tuner chooses an algorithm for each call and the call
runs that algorithm's channels alone (src/enqueue.cc ``topoGetAlgoInfo``), so the binding link
class, its ratio, the NICs' paths and the host's point-to-point tasks are those of the
algorithm and schedule that run at the size: a Tree LL128 all_reduce of 256 KiB on two DGX H100
binds at the NICs' DMA (NDR, 1.035 of NCCL's figure) whether or not a 64 MiB NVLSTree (NVLink 4,
0.960) is in the same sweep. The sizes are grouped by algorithm (``Measured.ratios``,
``links``, ``hosts``); ``ratio``, ``link`` and ``host_time`` are the largest size's, shown.

What was fitted, to what
------------------------
Only nccl-tests on 12 GPUs of a DGX-2 (``-g 12``; wohlbier/nccl-tests README, "Results on
dgx-2" (2020); tests/data/dgx2_12gpu_nccl_tests.json):

- ``launch_per_gpu``: the mean of the 8 B - 64 KiB rows (out-of-place and in-place, all five
  collectives; the times are flat there, 56.6-65.1 us) divided by 12, ``floor`` held at 0.
- ``transfer_efficiency``: least squares on the relative time error of the out-of-place rows of
  all_reduce, broadcast and reduce from 64 MiB to 8 GiB (ring, Simple protocol, bandwidth-bound)
  with ``launch_per_gpu`` fixed. all_gather (validation errors >= 4 GB and a 35 % gap between
  out-of-place and in-place) and reduce_scatter (busbw alternating 48/62 GB/s above 64 MB)
  measure NCCL's misaligned path (below) and are not used.

The all_gather and reduce_scatter rows are not wrong measurements but measurements of another
code path: that nccl-tests revision gave each of the 12 ranks ``size / 48`` floats, so the
ranks' blocks start 4 or 8 bytes off a 16-byte boundary, and NCCL 2.5's copy/reduce loop
leaves its 128-bit vector path for such pointers (NVIDIA/nccl v2.5.7-1
src/collectives/device/common_kernel.h, ``ReduceOrCopyMulti``); the model predicts the aligned
path every current nccl-tests run takes (``test_all_gather_and_reduce_scatter_rows_are_misaligned_per_rank``).

``tests/models/predict/test_measure.py`` re-derives both from the data and prints the residuals.
Everything else (other link classes, generations, the network) is predicted from hardware facts:
nothing is fitted to a network (``nic_efficiency`` is 1 [U]); the one PCIe DMA figure across
hosts, PCIe 3.0's (``dma:pcie3_x16``), was fitted to the DGX-1V p2pBandwidthLatencyTest row
(:data:`models.predict.p2p_constants.EFFICIENCIES`) and is used for PCIe 3.0 alone.

The kernels' pipeline
---------------------
What NCCL's tuner chose (algorithm, protocol) is timed by its kernels' pipeline
(:mod:`models.predict.pipeline`, ``measured(pipeline=True)``, the default) for rings, chains,
trees, NVLS, NVLSTree and PAT: the channels and threads NCCL launches at the size (NVLS:
``comm->nvlsChannels`` at every size), the steps and their hops (NCCL's
latency stays a floor of the part that overlaps the host), the LL line's data share, and the
kernel's per-step work (fitted on the same DGX-2 runs, 1 KiB - 64 MiB). Large messages keep
the bandwidth term above: every step's sync hides behind data in flight. The store-and-forward
fill of a release's slices, below, is still not added.

Each release's pipeline adds no fill
------------------------------------
The runs were taken with a 2.5-era release, whose pipeline constants every later profile
shares (:mod:`models.engine.nccl.pipelining`), so whatever fill those runs show is already in
the fitted constants, and another release could only add the difference of its fill from
that release's. That difference is not added, for two reasons from the sources and the data:

- it is zero for every release but v2.3, and for v2.3's ring collectives (same 2 MiB chunks
  posted 1 MiB at a time, and a ring has no fill); v2.3's chains (broadcast, reduce) post
  256 KiB sub-steps, not 512 KiB slices, so their difference is negative, never positive;
- the fitted constants do not hold the reference's fill: the runs leave at most a fifth of the
  store-and-forward fill the reference's slices give (:data:`FILL_NOTE`), so subtracting it
  removes time the model never had. For a 4 MiB broadcast with NCCL 2.3.7 on 8 P100s (8
  channels, 512 KiB each) the difference is 6 x (256 - 512) KiB x 8 channels = -12 MiB of
  transfer, -199 us, against a whole predicted time of 120 us.

The fill is therefore shown (:func:`pipeline_fill`), not added; the simulator's decomposition
(:mod:`models.predict.decompose`) takes the same time, so a lone collective still equals its
estimate.

Residuals on machines without data here
---------------------------------------
*DGX H200, NVLS and ring at 8-16 GiB.* The model predicts a DGX H200 exactly as a DGX H100
(447.7 GB/s busbw NVLS, 345.2 ring, all_reduce 8 GiB on 8 GPUs): NCCL does (both are compute
capability 9.0, and NCCL keys its NVLink figure, 20.6 GB/s per link, ``ncclTopoNVLinkBw``,
NVIDIA/nccl v2.27.7-1 src/graph/topo.h, and its NVLS channel count on it alone), and so does the
hardware the collectives use: 18 NVLink 4 links to the same NVSwitch gen3 chips, 132 SMs
(:data:`topo.specs.GPUS` ``"H200"``, [S43]). What differs is HBM3e, 4.8 TB/s against HBM3's
3.35 ([S105], [S106]), and it cannot move these figures: a ring all_reduce (Simple) reads
and writes about ``6 (n - 1) / n`` = 5.25 bytes of a GPU's memory per byte of algbw (per step
of either half: the chunk arriving into its FIFO, the FIFO read, the input read or the output
write), 1.04 TB/s at the predicted 197 GB/s, under a third of H100's; NVLS, with the reduction
and the multicast in the switch, about 2 bytes (each GPU's data read by the switch once, the
result written back once), 0.51 TB/s. Memory binds neither, on either GPU. Which way the H200 runs are off is not in the sources here; the one factor NVLS and ring
share is the NVLink 4 ratio, 0.960 of NCCL's figure (25 GB/s x the 16/17 packet framing of
NVLink 1/2 x the 0.8405 kernel efficiency fitted on NVLink 2, both [U] on NVLink 4): a model
5-7 % below the measurement means NVLink 4 kernels (and NVLS's switch-side reduce and
multicast, which are not SM copies at all) reach NCCL's own 20.6 per link or more; 5-7 % above,
that they fall further short. Not fixed: no measurement of NVLink 4 is in the data, and the
residual is not an H200 fact unless the H100 runs lack it.

*An 8x V100 cube-mesh server, 8 B - 128 MB, with a 2019 release (NCCL 2.4.8 here).* Most of that
range is the plateau ``max(host term, NCCL's latency)``, and neither half of it is a fact of that
machine or release. NCCL before 2.5 has no tuning model: the profile prices 2.4's rings with
v2.5.7's latency tables [U] (:mod:`models.engine.nccl.profiles`; ring LL 3.6 + 14 x 0.4 = 9.2
us on 8 ranks), while 2.4 itself picks LL or Simple by its size threshold alone; the host term,
4.99 us per GPU a thread launches (39.9 us at ``-g 8``), was fitted on a DGX-2's host (Xeon
8168, 2020) and is assumed for a DGX-1V's (Xeon E5-2698 v4) [U]. Mid sizes follow 2.4's LL to
Simple switch (no LL128 before 2.5.6), with no pipeline difference from the reference (above);
32-128 MB run at the NVLink 2 ratio, 0.971 of the 21 GB/s per link the profile counts. An error
near 15 % over the whole curve, in time, sits in that plateau: what a 2019 release spends per
step and per launch on that host, which no source here measures. Not fixed: it can only be
fitted to a run of that machine and release, and none is in the data. (A late-2019 run of
2.5.6 would be priced by the 2.5.7 profile, whose tables are NCCL's own.)

*NCCL 2.3 on a P100 DGX-1: the 5-GPU all_reduce.* On GPUs 0-4 NCCL 2.3 finds no NVLink ring
(GPU 4's only NVLink in the set goes to GPU 0) and falls back to one ring in rank order, 0 1 2
3 4 ([U] NVIDIA/nccl v2.3.7-1 src/misc/rings.cu; :mod:`models.engine.nccl.legacy_rings`); its
hops 0->1, 1->2, 2->3 and 4->0 are NVLink and 3->4 goes through shared memory (the pair has no
NVLink and is SOC, so ``selectTransport`` passes P2P for SHM: ``LegacyRings.shm_hops``). The
ring runs at the 8 GB/s the tuner tables give the inter-socket link (v2.5.7's ``QPI_BW``: 2.3
has no bandwidth figures, and the pre-2.5 profiles take v2.5's [U]), and no link class of the
measurement model binds, because the socket link has none: 7.97 GB/s busbw at 64 MiB. The SHM
hop moves data as a copy staged through host memory does (the sender's stores go up its PCIe
path as posted writes into the receiver's buffer in host memory; the receiver reads it back,
read requests up and completions down its own PCIe path; the socket link is crossed once,
whichever socket holds the pages [U]), so the staged-copy facts of
:data:`models.predict.p2p_constants.EFFICIENCIES` price it: one way, ``staged`` 0.6068 x 15.754 GB/s (PCIe
3.0 x16) = 9.56 GB/s for copy engines, x the kernels' 0.8405 = 8.03 GB/s for NCCL's kernels;
both at or above the 8 GB/s the ring already runs at, so the facts here cannot lower this
prediction. What differs from a staged copy is the engine: one ring is one block (``nThreads +
1`` = 129 threads on Pascal, v2.3.7-1 src/include/common_coll.h), and the receiving block *loads* host memory, at most its bytes in flight per round
trip; neither is in the sources here (the copy loop's unroll at v2.3.7-1 was not re-read; the
data's staged latencies, 16-19 us, are whole ``cudaMemcpy`` calls, not a read's round trip), and
the graph's own hop latencies (150 ns per PCIe hop, 100 ns across the sockets, both assumed)
give a round trip of 0.6-0.8 us, at which even 8 KiB in flight moves 10-14 GB/s. Not fixed: no
source-backed quantity puts the hop below the 8 GB/s predicted. The same holds for every set
whose ring falls back on either DGX-1 (2.0-2.4: the sets with no NVLink Hamiltonian cycle: 12
pairs, 48 triples, 62 quadruples, 32 quintuples, no set of 6-8), each with one or two SHM hops,
all at 8 GB/s. Where two SHM hops meet at one GPU ({0, 5}; {0, 1, 2, 3, 5}: 3->5 and 5->0) its
own PCIe link moves host-memory data both ways, the ``staged_duplex`` case: 0.4578 x 15.754 =
7.21 GB/s each way, 6.06 with the kernels' share, 24 % below 8. Not applied: those rings are
not the ones with a residual, the same rings run under 2.4, and the kernels' share over a
copy-engine fit is the interpretation [U] the 5-GPU run would have had to test.

*NCCL 2.3 on a P100 DGX-1: broadcast and all_gather at 1-64 MB.* Predicted busbw on 8 GPUs
(the same for every 2018 profile, 2.0-2.2 (the 2.3.5 profile), 2.3.5, 2.3.7 and 2.4.8):
broadcast 14.86 / 34.87 / 52.58 / 60.22 / 63.08 GB/s at 1 MiB / 4 MiB / 16 MiB / 64 MiB / 1 GiB,
all_gather 14.61 / 34.53 / 52.38 / 60.15 / 63.08. What a source gives for these releases, and why
none of it moves the mid sizes while leaving 1 GiB where it matches:

- protocol: LL only up to ``nRanks x nRings x min(256, nThreads) x threadThreshold`` = 8 x 8 x
  128 x 32 = 256 KiB (NVIDIA/nccl v2.3.7-1 src/include/common_coll.h; 32 on Pascal in v2.3.5
  too; 512 KiB under 2.4.8, which keeps 256 threads), so 1-64 MB run Simple, as 1 GiB does;
- rings and threads: a Simple call takes all 8 rings and ``nThreads + 1`` threads (128 on
  Pascal NVLink rings in 2.3, 256 in 2.4) at every size; a per-ring rate would move 1 GiB as
  much;
- in-place or out-of-place all_gather: the same ring steps (out-of-place copies its own block
  within the first step's copy-and-send, src/collectives/device/all_gather.h [U] not re-read at
  v2.3.7-1);
- pipeline: v2.3's ring chunks equal v2.5's (:mod:`models.engine.nccl.pipelining`: no
  difference); the broadcast chain's store-and-forward fill of 6 sub-steps of 256 KiB per ring
  is the one term of the right shape (constant once each ring holds a full chunk: 198.8 us,
  16 MiB 52.58 -> 32.39 GB/s, 1 GiB 63.08 -> 62.36), but all_gather, a ring, has no fill and the
  same residual, and the 2.5-era chain runs show none (:data:`FILL_NOTE`) while no difference
  between v2.3's and v2.5's forwarding is in the sources read, so adding it for v2.3 alone would
  be fitted to the residual's shape;
- flag handshakes: a v2.3 loop runs all ``SUBSTEPS`` handshakes of its half-buffer, empty ones
  included [U]. A full sub-step's handshake overlaps the next sub-step's data (it must: 1 GiB,
  64 loops per ring, matches), so only empty ones add time, each one hop latency on its way down
  the chain or round the ring: at 1 MiB and 4 MiB a broadcast loop has 7 and 6 empty sub-steps
  of 8, and a ring step at most 1 of 2, 3-3.5 us per call at the graph's 500 ns per NVLink hop (an
  assumption): about 5 % at 1 MiB (3.5 of 70.6 us), 3 % at 4 MiB, under 1 % from 16 MiB; and
  no source here gives a handshake's cost.

Not fixed: the residual is not in any quantity these releases' sources or the graph give; it
needs a run of that machine and release (``calibrate`` fits the measurement constants to one).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from operator import itemgetter
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias

import networkx as nx
import numpy as np

import topo
from topo.cluster import network_nics
from topo.errors import DgxTopoError
from topo.pcie import pcie_paths
from topo.specs import WIRES
from topo.units import is_int, us

from ..engine.fabric import PreparedFabric
from ..engine.nccl.algorithms.catalog import ALGORITHMS, algorithm_named
from ..engine.nccl.pipelining import PIPELINE_COLLECTIVES, Pipelining, pipelining
from ..engine.nccl.nvls import nvlink_cliques
from ..engine.nccl.profiles import NcclProfile, nccl_profile
from ..engine.nccl.system import NcclSystem
from ..engine.nccltests import algbw, busbw
from ..engine.results import tidy_records
from .nicpath import MEASURED_DMA, dma_share, nic_path
from .pipeline import DEFAULT_STEP_COSTS, StepCosts, channel_hops, ll_share, pipeline_time, shape_of
from .p2p_constants import EFFICIENCIES as P2P_EFFICIENCIES

__all__ = [
    "MeasurementError", "Parameter", "LinkClass", "LINK_CLASSES", "MeasurementModel", "DEFAULT",
    "Measured", "measured", "measurement_model", "link_classes", "PipelineFill", "pipeline_fill", "host_enqueue",
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


# The wire of every link class is a fact of its specification (topo.specs.WIRES: lanes, bit
# rate, line code, FEC, packet framing per generation); nothing is carried from one generation
# to another. NVLink-C2C carries no channel between two GPUs (only a GPU's traffic to its CPU
# and the NICs beyond, models.predict.nicpath), so it is no class of its own here.
def _link_class(wire) -> "LinkClass":
    return LinkClass(wire.link, wire.data_rate, wire.packet_efficiency, wire.source, wire.uncertain)


#: The link classes the measurement model knows, keyed like :data:`topo.LINKS`.
LINK_CLASSES: Mapping[str, LinkClass] = MappingProxyType({
    link: _link_class(wire) for link, wire in WIRES.items() if link != "nvlink_c2c"})

#: Share of a NIC port's payload rate its DMA sustains (every InfiniBand generation). [U]
NIC_EFFICIENCY = 1.0
_NIC_SOURCE = ("a NIC moves NCCL's network data by DMA (RDMA writes), not by NCCL's kernels: the "
               "kernels' transfer efficiency, fitted on NVLink, does not apply to it")
_NIC_UNCERTAIN = ("the NIC is assumed to sustain its port's payload rate (ConnectX adapters are "
                  "specified at full wire speed); not measured here")

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
        """Transfer efficiency of a link class: its override, else :data:`NIC_EFFICIENCY` for a
        network port (a NIC's DMA moves that data) and the common one for every other class."""
        default = NIC_EFFICIENCY if topo.LINKS[link].kind == "network" else self.transfer_efficiency
        return dict(self.efficiency_overrides).get(link, default)

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

    def ratio(self, link: str, profile: str | NcclProfile | None = None, compute_capability: int | None = None) -> float:
        """Achieved rate over NCCL's figure for one link of a class, under an NCCL profile.

        NCCL's figure is the profile's (``ncclTopoNVLinkBw`` of the compute capability for
        NVLink, ``width x speed / 80`` for PCIe, ``speed / 8000`` for a NIC port).
        """
        return self.achieved(link) / nccl_link_figure(link, profile, compute_capability)

    def with_values(self, **values: float) -> "MeasurementModel":
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
        out.append(Parameter("nic_efficiency", NIC_EFFICIENCY, "1", _NIC_SOURCE, "", _NIC_UNCERTAIN))
        for link, key in MEASURED_DMA.items():
            c = P2P_EFFICIENCIES[key]
            # fitted to the DGX-1V row, not to this model's runs: the fit is models.predict.p2p's
            out.append(Parameter(
                f"dma:{link}", dma_share(link)[0], "1",
                f"share of the line rate a NIC's GPUDirect RDMA (writes one way, read completions "
                f"the other) moves each way over a {topo.LINKS[link].label} link: "
                f"models.predict.p2p_constants.EFFICIENCIES[{key!r}], fitted to the {c.fitted_to} ({c.source})",
                "", "a copy staged through host memory (the root complex completes its reads) "
                "taken for a NIC's GPUDirect RDMA (the GPU completes them); " + c.uncertain))
        for link, value in self.efficiency_overrides:
            out.append(Parameter(f"efficiency:{link}", value, "1",
                                 source(f"efficiency:{link}", "calibration")))
        for cls in self.links.values():
            out.append(Parameter(f"packet_efficiency:{cls.link}", cls.packet_efficiency, "1",
                                 cls.source, "", cls.uncertain))
        return tuple(out)


#: The measurement model with the constants fitted to the DGX-2 runs.
DEFAULT = MeasurementModel()


class Fitted(Protocol):
    """What a ``calibration`` argument offers besides a :class:`MeasurementModel`: its fitted model
    (:class:`models.studies.calibration.Calibration` does)."""

    @property
    def model(self) -> MeasurementModel: ...


#: A ``calibration`` argument, for annotations: a fit, a measurement model, or None (:data:`DEFAULT`).
CalibrationLike: TypeAlias = "Fitted | MeasurementModel | None"


def measurement_model(calibration: CalibrationLike = None) -> MeasurementModel:
    """The measurement model of a calibration (a :class:`models.studies.calibration.Calibration`, a
    :class:`~models.predict.measure.MeasurementModel`, or None for the default fitted one)."""
    if calibration is None:
        return DEFAULT
    if isinstance(calibration, MeasurementModel):
        return calibration
    model = getattr(calibration, "model", None)
    if isinstance(model, MeasurementModel):
        return model
    raise MeasurementError(f"calibration must be a models.studies.calibration.Calibration or a MeasurementModel, received "
                       f"{type(calibration).__name__}")


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


def link_classes(e: Any, G: nx.DiGraph) -> tuple:
    """Link classes that bind an estimate's bandwidth at its largest size: that size's bottleneck
    (``e.bottleneck``), and across hosts the network's (NCCL's per-NIC figure is not what the NIC
    sustains). Each size's own binding class is :attr:`Measured.links`.

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
    classes = set(_bottleneck_classes(e, G))
    if _nnodes(e) > 1:
        classes.update(_network_classes(G))
    return tuple(sorted(classes))


def _bottleneck_classes(e, G, name=None) -> set:
    """The catalogued link classes of an estimate's bottleneck edges: those of the algorithm
    ``name`` where the estimate has them per algorithm (:attr:`CollectiveEstimate.bottlenecks`),
    else its bottleneck at the largest size."""
    own = dict(getattr(e, "bottlenecks", ()) or ())
    classes = set()
    for edge in own.get(name, e.bottleneck):
        if G.has_edge(*edge[:2]):
            link = G.edges[edge[0], edge[1]].get("link")
            if link in LINK_CLASSES:
                classes.add(link)
    return classes


def _nnodes(e) -> int:
    return max((s.nnodes for s in (e.ring, e.tree) if s is not None), default=1)


def _network_classes(G) -> tuple:
    """The catalogued link classes of the fabric's network edges."""
    # The distinct (kind, link) of the edges, read in C loops over the adjacency's dicts
    # (G.adjacency() yields them as they are): a 1,024-host cluster has 338,000 edges and a
    # handful of pairs.
    rows = chain.from_iterable(neighbours.values() for _, neighbours in G.adjacency())
    try:
        pairs = set(map(itemgetter("kind", "link"), rows))
    except KeyError:  # an edge without both (an unvalidated graph): as before, by name
        pairs = {(d.get("kind"), d.get("link")) for _, _, d in G.edges(data=True)}
    return tuple(sorted(link for kind, link in pairs if kind == "network" and link in LINK_CLASSES))


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
        ``floor + gpus_per_thread x (launch_per_gpu + enqueue)``; ``enqueue`` a point-to-point
        group's further tasks (:func:`host_enqueue`), 0 for a collective; the largest size's
        (``hosts`` has every size's). [s]
    startup : float or numpy.ndarray
        ``max(host_time, nccl_latency)``. [s]
    nccl_bandwidth : float or numpy.ndarray
        NCCL's algorithm bandwidth. [B/s]
    ratio : float
        Achieved / NCCL-nominal bandwidth of the binding link class, at the largest size (shown;
        ``ratios`` has every size's).
    link : str
        The binding link class at the largest size (``""`` if none; ``links`` has every size's).
    gpus_per_thread : int
    model : MeasurementModel
    network_factor : float or numpy.ndarray
        Per size, what the network gives of the bandwidth NCCL assumed at the NICs, for the
        algorithm that runs (:mod:`models.predict.network`; 1 on one host or a non-blocking network).
    network : tuple of models.predict.network.NetworkLoad
        The network loads behind it.
    release : str
        The NCCL release the estimate ran: its profile's version (``"2.27.7"``;
        :func:`models.engine.nccl.profiles.nccl_profile` gives its constants and behaviours).
    pipeline : PipelineFill or None
        The release's pipeline for the largest size (:func:`pipeline_fill`).
    nic_paths : tuple of models.predict.nicpath.NicPath
        Across hosts, the path of each NIC the channels use (port or PCIe, whichever binds).
    pipelines : tuple of models.predict.pipeline.PipelineTime or None
        Per size (flattened), the kernels' pipeline that timed it (None where NCCL's table did:
        CollNet, a caller's own algorithm, point-to-point); empty when no size was pipelined.
    ratios : float or numpy.ndarray
        Per size, ``ratio`` of the algorithm that runs at that size: its own bottleneck's link
        classes (across hosts its own NICs' paths), never another size's. Default: ``ratio``.
    links : str or numpy.ndarray
        Per size, the link class behind ``ratios``. Default: ``link``.
    hosts : float or numpy.ndarray
        Per size, the host term with that size's own point-to-point tasks. Default: ``host_time``.
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
    nic_paths: tuple = ()
    pipelines: tuple = ()
    ratios: object = None
    links: object = None
    hosts: object = None

    def __post_init__(self) -> None:
        for name, summary in (("ratios", self.ratio), ("links", self.link), ("hosts", self.host_time)):
            if getattr(self, name) is None:
                object.__setattr__(self, name, summary)

    @property
    def nranks(self) -> int:
        """Number of ranks."""
        return len(self.gpus)

    @property
    def algbw(self) -> float | np.ndarray:
        """Predicted nccl-tests algbw, ``nbytes / time`` (:func:`models.engine.nccltests.algbw`). [B/s]"""
        return algbw(self.nbytes, self.time)

    @property
    def busbw(self) -> float | np.ndarray:
        """Predicted nccl-tests busbw (:func:`models.engine.nccltests.busbw`). [B/s]"""
        return busbw(self.collective, self.nbytes, self.time, self.nranks)

    def to_records(self) -> list:
        """Tidy rows, one per size: the measured time and its terms (:mod:`models.engine.results`)."""
        sizes = np.atleast_1d(self.nbytes)

        def each(x):
            return np.broadcast_to(np.atleast_1d(x), sizes.shape)
        return tidy_records({
            "collective": self.collective, "nranks": self.nranks, "nbytes": sizes,
            "time_s": each(self.time), "algbw_Bps": each(self.algbw), "busbw_Bps": each(self.busbw),
            "nccl_time_s": each(self.nccl_time), "nccl_latency_s": each(self.nccl_latency),
            "host_time_s": each(self.hosts), "startup_s": each(self.startup),
            "nccl_bandwidth_Bps": each(self.nccl_bandwidth), "ratio": each(self.ratios), "link": each(self.links),
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


# ``e`` is a CollectiveEstimate, left Any: models.predict.collectives imports this module.
def measured(e: Any, G: nx.DiGraph | PreparedFabric | NcclSystem, *, gpus_per_thread: int = 1,
             model: MeasurementModel = DEFAULT, profile: str | NcclProfile | None = None,
             pipeline: bool = True, step_costs: StepCosts = DEFAULT_STEP_COSTS) -> Measured:
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
    pipeline : bool
        Time what NCCL chose by its kernels' pipeline (:mod:`models.predict.pipeline`; rings,
        chains, trees, NVLS, NVLSTree and PAT): ``max(host, NCCL's latency, fill + steps x handshake) + data_time +
        steps x exposed work`` (:mod:`models.predict.pipeline`); False keeps NCCL's table,
        ``max(host, latency) + nbytes / bandwidth``.
    step_costs : models.predict.pipeline.StepCosts
        The kernel's per-step work (fitted to the DGX-2 runs).

    Returns
    -------
    Measured

    Raises
    ------
    MeasurementError
        If ``gpus_per_thread`` is not a whole number from 1 to the number of ranks.
    """
    view = G.nccl if isinstance(G, PreparedFabric) else G
    router = view.router if isinstance(view, NcclSystem) else None
    profile, G = _release_and_graph(G, profile)
    if not is_int(gpus_per_thread) \
            or not 1 <= gpus_per_thread <= max(1, e.nranks):
        raise MeasurementError(f"gpus_per_thread must be an integer from 1 to {max(1, e.nranks)} "
                               f"(the ranks), received {gpus_per_thread!r}")
    nbytes = e.nbytes
    shape = np.shape(nbytes)
    # Each size's binding is its own algorithm's: the sizes are grouped by the algorithm that
    # runs them (a handful), never read off another size of the sweep.
    ran = np.broadcast_to(np.asarray(getattr(e, "algorithm", ""), dtype=str), shape)
    found = {name: _binding(e, G, model, profile, view if isinstance(view, NcclSystem) else None, name)
             for name in sorted(set(ran.reshape(-1).tolist()))}
    link, ratio, paths = found[str(ran.reshape(-1)[-1])]  # the largest size's: shown
    links = np.full(shape, link, dtype=np.asarray([b[0] for b in found.values()], dtype=str).dtype)
    ratios = np.full(shape, ratio, dtype=float)
    dma = np.zeros(shape, dtype=bool)
    for name, (bound, value, through) in found.items():
        where = ran == name
        links[where], ratios[where] = bound, value
        dma[where] = bool(through) and bool(bound) and topo.LINKS[bound].kind != "nvlink"
    host = model.floor + int(gpus_per_thread) * (model.launch_per_gpu + host_enqueue(e))
    startup = np.maximum(host, e.latency)
    bandwidth = e.bandwidth
    network = tuple(getattr(e, "network", ()) or ())
    factors = {n.algorithm or n.pattern: n.factor for n in network}
    algorithms = np.asarray(getattr(e, "algorithm", ""), dtype=str)
    network_factor = np.vectorize(lambda a: factors.get(a, 1.0), otypes=[float])(
        algorithms) if factors else np.ones(np.shape(algorithms))
    with np.errstate(divide="ignore", invalid="ignore"):
        transfer = np.where(np.asarray(nbytes) > 0, np.asarray(nbytes, dtype=float)
                            / (np.asarray(bandwidth, dtype=float) * ratios * network_factor), 0.0)
    pipes = _pipelines(e, G, profile, ratios * np.asarray(network_factor, dtype=float), step_costs, router,
                       dma) if pipeline else ()
    if any(p is not None for p in pipes):  # the kernels' pipeline times what the tuner chose
        flat = [(max(float(h), float(lat), p.latency), p.work_time) if p is not None else (s, t)
                for p, s, t, lat, h in zip(
                    pipes, np.broadcast_to(startup, shape).reshape(-1), np.broadcast_to(transfer, shape).reshape(-1),
                    np.broadcast_to(e.latency, shape).reshape(-1), np.broadcast_to(host, shape).reshape(-1))]
        startup = np.array([f for f, _ in flat]).reshape(shape)
        transfer = np.array([t for _, t in flat]).reshape(shape)
    time = startup + transfer
    hosts = host
    if np.ndim(nbytes) == 0:
        time, startup = float(time), float(startup)
        network_factor = float(np.asarray(network_factor).reshape(-1)[-1])
        ratios, links, hosts = float(ratios), str(links), float(host)
    return Measured(e.collective, tuple(e.gpus), nbytes, time, e.time, e.latency,
                    float(np.asarray(host).reshape(-1)[-1]), startup, bandwidth, float(ratio), link,
                    int(gpus_per_thread), model, network_factor, network, profile.version,
                    pipeline_fill(e, profile, ratios * network_factor), paths, tuple(pipes), ratios, links, hosts)


def host_enqueue(e: Any) -> float | np.ndarray:
    """The host's work per GPU beyond one operation's launch: a point-to-point group's further
    tasks (:attr:`models.predict.alltoall.P2pSchedule.enqueue`), each size its own schedule's
    (an array of the sizes' shape where the estimate has a schedule per size); 0 for a
    collective. [s]"""
    schedules = getattr(e, "schedules", ()) or ()
    if schedules and len(schedules) == np.size(e.nbytes):
        return np.array([float(s.enqueue or 0.0) for s in schedules]).reshape(np.shape(e.nbytes))
    return float(getattr(getattr(e, "schedule", None), "enqueue", 0.0) or 0.0)


def _line_rate(cell) -> float:
    """An LL cell's algorithm bandwidth with the LL line's data share (8 of 16 bytes) in place of
    the tuner's LL factor (1/4 or 1/3 before v2.21, 1/2 since), its caps kept: what the line
    carries at the link's rate, not what a release's tuner assumed. [B/s]"""
    bus = cell.bus
    if bus is None or not bus.value > 0:
        return cell.bandwidth
    value = bus.raw
    for step in bus.steps:
        factor = max(step.factor, ll_share()) if step.name.endswith(" LL") else step.factor
        value = value * factor if step.cap is None else min(value * factor, step.cap)
    return value * cell.ratio


def _pipelines(e, G, profile, achieved, costs, router, dma_bound) -> tuple:
    """Per size (flattened), the pipeline of what NCCL chose (:func:`models.predict.pipeline.pipeline_time`),
    None where no pipeline is modelled (:func:`models.predict.pipeline.shape_of`); ``()`` when nothing of the estimate is pipelined.
    ``achieved`` and ``dma_bound`` (a NIC's DMA binds) are per size, each its own algorithm's."""
    selection = getattr(e, "selection", None)
    if selection is None or e.collective not in PIPELINE_COLLECTIVES or e.nranks < 2:
        return ()
    sizes = np.atleast_1d(e.nbytes).reshape(-1)
    names = np.broadcast_to(np.asarray(e.algorithm, dtype=str), np.shape(e.nbytes)).reshape(-1)
    protocols = np.broadcast_to(np.asarray(e.protocol, dtype=str), np.shape(e.nbytes)).reshape(-1)
    factors = np.broadcast_to(np.asarray(achieved, dtype=float), np.shape(e.nbytes)).reshape(-1)
    channels = np.broadcast_to(np.asarray(e.nchannels), np.shape(e.nbytes)).reshape(-1)
    dma = np.broadcast_to(np.asarray(dma_bound, dtype=bool), np.shape(e.nbytes)).reshape(-1)
    cells = {(c.tuning.algorithm, c.tuning.protocol): c.tuning for c in selection.candidates}
    cc = min(G.nodes[n]["compute_capability"] for n in e.nodes)
    nnodes = e.ring.nnodes if e.ring is not None else 1  # NCCL's nodes (an MNNVL domain is one)
    hops: dict = {}
    out = []
    for i, size in enumerate(sizes):
        ran = _algorithm(e, i)
        name, protocol = str(names[i]), str(protocols[i])
        if ran is None or shape_of(e.collective, name) is None or int(channels[i]) < 1:
            out.append(None)
            continue
        search = ran.searched(e)
        if search is None:
            out.append(None)
            continue
        if name not in hops:
            order = tuple(search.channels[0]) if search.channels else ()
            hops[name] = channel_hops(G, order, tuple(e.nodes), router=router, node_of=_nccl_nodes(G, e.nodes, nnodes))
        cell = cells.get((name, protocol))
        if cell is None:
            out.append(None)
            continue
        bw = _line_rate(cell) if protocol == "LL" else cell.bandwidth
        graph_channels, heads = int(channels[i]), 0
        if ran.multimem:  # NVLS runs comm->nvlsChannels, decorrelated from the graph's heads
            heads = graph_channels
            graph_channels = ran.blocks(graph_channels, profile, cc, nnodes)
        out.append(pipeline_time(e.collective, name, protocol, int(size), nranks=e.nranks,
                                 graph_channels=graph_channels, rate=bw * float(factors[i]),
                                 hops=hops[name], profile=profile, dma_bound=bool(dma[i]),
                                 ring_bandwidth=e.ring.bandwidth if e.ring is not None else float("inf"), costs=costs,
                                 nnodes=nnodes, heads=heads, block_rate=_block_rate(cell, bw) * float(factors[i])))
    return tuple(out)


def _nccl_nodes(G, gpus, nnodes: int) -> dict | None:
    """GPU -> NCCL node where NCCL counts fewer nodes than hosts (an MNNVL domain's hosts are one
    node: src/graph/topo.cc; :func:`models.engine.nccl.channels.nccl_view`), the GPU's NVLink
    domain (:func:`models.engine.nccl.nvls.nvlink_cliques`); None (hosts) otherwise."""
    if nnodes >= len({G.nodes[n].get("host") for n in gpus}):
        return None
    return {g: i for i, clique in enumerate(nvlink_cliques(G, list(gpus))) for g in clique}


def _block_rate(cell, bandwidth: float) -> float:
    """What the cell's blocks could move were no link to bind: ``bandwidth`` (the cell's rate)
    scaled from the tuner's figure to its per-channel cap (NCCL's own figure of what a block
    moves, e.g. ``perChMaxRingLL128Bw``, src/graph/tuning.cc); ``bandwidth`` itself where the
    cap binds or there is none. [B/s]"""
    bus = cell.bus
    caps = [step.cap for step in (bus.steps if bus is not None else ()) if step.cap is not None]
    if not caps or not bus.value > 0:
        return bandwidth
    return bandwidth * max(1.0, min(caps) / bus.value)


def _algorithm(e, index):
    """The algorithm object an estimate ran at one size (of the ones it chose among; NCCL's for
    an estimate that does not say), None for point-to-point sends and one-GPU copies."""
    names = np.atleast_1d(np.asarray(getattr(e, "algorithm", ""), dtype=str))
    if not names.size:
        return None
    return _algorithm_called(e, str(names[index]))


def _algorithm_called(e, name: str):
    """The algorithm object ``name`` of those an estimate chose among (NCCL's for an estimate
    that does not say), None for none."""
    return algorithm_named(name, getattr(e, "algorithms", ()) or ALGORITHMS)


def _binding(e, G, model, profile, view=None, name=None) -> tuple:
    """The link class that binds an estimate's bandwidth where the algorithm ``name`` runs (of
    ``e.algorithm``; the largest size's by default), the ratio of achieved to NCCL's bandwidth
    it gives, and across hosts the NICs' paths.

    Each algorithm binds by its own channels: a tree at 256 KiB runs the tree's edges and NICs,
    whatever the ring or NVLSTree of a larger size of the same sweep crosses (NCCL launches
    the one algorithm its tuner chose for each call, src/enqueue.cc ``topoGetAlgoInfo``), so the
    bottleneck read is the algorithm's own (:attr:`CollectiveEstimate.bottlenecks`).

    On one host: the lowest :meth:`MeasurementModel.ratio` over the classes of the bottleneck
    (NCCL's kernels drive every link). Across hosts the PCIe links and the ports carry the NICs'
    DMA: each NIC of the channels counts by its path (:func:`models.predict.nicpath.nic_path`,
    the port or the PCIe path, whichever binds, over NCCL's figure for the path); NVLink counts
    by the headroom of every NVLink edge the channels load (achieved / reserved), since a path
    faster than NCCL assumed runs the channels faster across NVLink too; NVLS runs at its NVLink
    class's ratio.

    ``view``, the NCCL view of ``G`` when the caller has one, keeps what this reads of the whole
    fabric (the network's link classes, the first host's NICs, each NIC's path) for its next
    estimates (:attr:`NcclSystem.measure_facts`): the same values, found once.
    """
    facts = view.measure_facts if view is not None else {}

    def fact(key, make):
        found = facts.get(key)
        if found is None:
            found = make()
            if view is not None:
                facts[key] = found
        return found

    if name is None:
        name = str(np.atleast_1d(np.asarray(getattr(e, "algorithm", ""), dtype=str))[-1])
    classes = _bottleneck_classes(e, G, name)
    if _nnodes(e) > 1:
        classes.update(fact(("network classes",), lambda: _network_classes(G)))
    classes = tuple(sorted(classes))
    if len({G.nodes[n].get("host") for n in e.nodes}) < 2:
        if not classes:
            return "", 1.0, ()
        cc = min(G.nodes[n]["compute_capability"] for n in e.nodes)
        ratios = {c: model.ratio(c, profile, cc) for c in classes}
        link = min(ratios, key=ratios.get)
        return link, ratios[link], ()
    ran = _algorithm_called(e, name)
    search = ran.searched(e) if ran is not None else e.ring
    multimem = ran is not None and ran.multimem
    if search is not None and search.nets:
        nics = sorted({nic for pair in search.nets for nic in pair}, key=str)
    else:  # point-to-point flows (alltoall, sendrecv): every network NIC of the first host
        host = G.nodes[e.nodes[0]].get("host")
        nics = fact(("p2p nics", host), lambda: tuple(
            n for n in network_nics(G) if G.nodes[n].get("host") == host
            and any(G.nodes[m].get("kind") == "gpu" for m in pcie_paths(G, n))))
    overrides = dict(model.efficiency_overrides)
    shape = (tuple(sorted(overrides.items())), model.transfer_efficiency)
    paths = tuple(fact(("nic path", nic, shape), lambda nic=nic: nic_path(
        G, nic, efficiency=lambda link: overrides.get(link, NIC_EFFICIENCY),
        sm_efficiency=model.transfer_efficiency, profile=profile)) for nic in nics)
    ratios: dict = {}

    def bind(link, value):
        ratios[link] = min(ratios.get(link, value), value)

    for p in paths:
        bind(p.binding, p.ratio)
    cc = min(G.nodes[n]["compute_capability"] for n in e.nodes)
    kernels = {c for c in classes if topo.LINKS[c].kind == "nvlink"}  # NCCL's kernels drive them
    if multimem:
        kernels |= {d["link"] for n in e.nodes for _, _, d in G.out_edges(n, data=True)
                    if d["kind"] == "nvlink" and d.get("link") in LINK_CLASSES}
    for c in kernels:
        bind(c, model.ratio(c, profile, cc))
    if not multimem and search is not None:
        for load in search.loads:
            d = G.adj[load.edge[0]][load.edge[1]]
            if d["kind"] == "nvlink" and d.get("link") in LINK_CLASSES and load.reserved > 0:
                achieved = float(d["bandwidth"]) / topo.LINKS[d["link"]].bandwidth * model.achieved(d["link"])
                bind(d["link"], achieved / load.reserved)
    if not ratios:
        return "", 1.0, paths
    link = min(ratios, key=ratios.get)
    return link, ratios[link], paths


# ------------------------------------------------------------------------ the release's pipeline
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

    def to_records(self) -> list:
        """One row: the pipeline (:meth:`Pipelining.to_records`) and the size, channels, ranks,
        loops and fill described."""
        return [{**self.pipelining.to_records()[0], **tidy_records({
            "nbytes": self.nbytes, "nchannels": self.nchannels, "nranks": self.nranks, "loops": self.loops,
            "fill_slices": self.fill_slices, "fill_bytes": self.fill_bytes, "fill_time_s": self.fill_time})[0]}]


#: Why the chain fill is described but not added to the predicted time.
FILL_NOTE = ("the 2.5-era DGX-2 broadcast and reduce runs, 12 ranks, leave 5-25 us beside the host "
             "term for it at 1-8 GiB, where 10 slices of 512 KiB would take ~257 us: NCCL's "
             "kernels forward finer than a posted slice [U]; tests/data/dgx2_12gpu_nccl_tests.json; "
             "no release's pipeline differs from that release's but v2.3's chains, which post "
             "smaller slices")


def pipeline_fill(e: Any, profile: NcclProfile, achieved_ratio: float | np.ndarray = 1.0) -> PipelineFill | None:
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
    ran = _algorithm(e, -1) if protocols.size else None
    if e.collective not in PIPELINE_COLLECTIVES or e.nranks < 2 or ran is None or not ran.pipelined:
        return None
    pipe = pipelining(profile, e.collective, str(protocols[-1]))
    nbytes = int(np.atleast_1d(e.nbytes)[-1])
    nchannels = max(1, int(np.atleast_1d(e.nchannels)[-1]))
    fill = float(pipe.fill_bytes(nbytes, nchannels, e.nranks))
    bandwidth = float(np.atleast_1d(e.bandwidth)[-1]) * float(np.atleast_1d(achieved_ratio)[-1])
    return PipelineFill(pipe, nbytes, nchannels, e.nranks, pipe.loops(nbytes, nchannels, e.nranks),
                        pipe.fill_slices(e.nranks), fill, fill / bandwidth if bandwidth > 0 else 0.0)
