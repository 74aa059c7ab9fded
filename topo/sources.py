"""Sources the code cites as ``[S#]``: what each document is and where to find it.

Hardware facts in :mod:`topo.specs` and the builders name their source by a key of
:data:`SOURCES` (``[S3]``, ``[S30]``, ...). NCCL constants name the NVIDIA/nccl file and release
tag they come from (``NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc``), which is checkable without
this table. A test checks that every ``[S#]`` cited in the code resolves here.

Examples
--------
>>> from topo.sources import SOURCES
>>> SOURCES["S27"].locator
'https://github.com/NVIDIA/nccl-tests/issues/78'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Source", "SOURCES"]


@dataclass(frozen=True, slots=True)
class Source:
    """One cited document.

    Attributes
    ----------
    key : str
        ``"S30"``.
    title : str
        What the document is.
    locator : str
        Where to find it (URL or repository), empty when it has none.
    """

    key: str
    title: str
    locator: str = ""


#: Cited sources by key.
SOURCES: Mapping[str, Source] = MappingProxyType({s.key: s for s in (
    Source('S1', 'pytorch/pytorch benchmarks/distributed/ddp/README.md: nvidia-smi topo -m of a DGX-1V with 4x 100 Gb InfiniBand',
           'github.com/pytorch/pytorch'),
    Source('S2', 'OneFlow DLPerf benchmark reports (8x V100-SXM2): nvidia-smi topo -m',
           'github.com/Oneflow-Inc/DLPerf'),
    Source('S3', 'NVIDIA DGX-1 with Tesla V100 System Architecture whitepaper', 'https://www.iitr.ac.in/dgx'),
    Source('S4', 'NVIDIA/nccl issue 671: DGX-1V NCCL topology XML',
           'https://github.com/NVIDIA/nccl/issues/671'),
    Source('S5', 'DGX-1 nvidia-smi topo -m with 4 mlx5 NICs (gist)',
           'https://gist.github.com/ashwin/e139748bdba15f5af63f0146d01ee4c3'),
    Source('S6', 'microsoft/msccl-tools msccl/topologies/nvidia.py (dgx1, dgx_a100)',
           'github.com/microsoft/msccl-tools'),
    Source('S7', 'Leadtek WinFast GS4830NT product page (HGX-1-class PCIe layout)', ''),
    Source('S8', 'University of Sheffield HPC documentation, ShARC DGX-1 page (8x P100, 2x E5-2698 v4)', ''),
    Source('S9', 'DGX-1 with V100 specification tables in university HPC documentation', ''),
    Source('S10', 'DGX-1 hyperscale-class GPU computing article (P100: 20 GB/s each way, 4 links per GPU)',
           'https://www.datascienceassn.org/content/dgx-1-hyperscale-class-gpu-computing'),
    Source('S11', 'NVIDIA NVLink product page (20 to 25 GB/s per direction per link)',
           'https://www.nvidia.com/en-us/data-center/nvlink/'),
    Source('S12', 'NVIDIA A100 Tensor Core GPU Architecture whitepaper', ''),
    Source('S13', 'NVIDIA H100 Tensor Core GPU Architecture whitepaper', ''),
    Source('S14', 'NVIDIA DGX SuperPOD GB200 reference architecture (900 GB/s per GPU per direction)', ''),
    Source('S15', 'NVIDIA HGX B200 descriptions: 18 fifth-generation NVLink ports, 1.8 TB/s', ''),
    Source('S16', 'NVIDIA Mission Control documentation, nvlinkinfo',
           'https://docs.nvidia.com/base-command-manager/product-manuals/nvidia-mission-control/nvlinkinfo'),
    Source('S17', 'NVIDIA Fabric Manager User Guide: NVSwitch-Based Systems, GPU Baseboard Topologies',
           'https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide'),
    Source('S18', 'The Next Platform, Building bigger, faster GPU clusters using NVSwitches (2018)',
           'https://www.nextplatform.com/2018/04/13/building-bigger-faster-gpu-clusters-using-nvswitches/'),
    Source('S19', 'WikiChip, NVIDIA NVSwitch (May 2018 revision)',
           'https://en.wikichip.org/wiki/nvidia/nvswitch'),
    Source('S20', 'AnandTech, Hot Chips 2018 NVSwitch live blog',
           'https://www.anandtech.com/show/13251/hot-chips-2018-going-deep-on-nvswitch-live-blog'),
    Source('S21', 'AWS p3 instance specifications', ''),
    Source('S22', 'vantage-sh/ec2instances.info issue 289: p3.16xlarge nvidia-smi',
           'https://github.com/vantage-sh/ec2instances.info/issues/289'),
    Source('S23', 'BNL, Performance Analysis of Deep Learning Workloads on Leading-Edge Systems (slides)',
           'https://docslib.org/doc/1446904'),
    Source('S24', 'MicrosoftDocs/azure-docs articles/virtual-machines/ndv2-series.md',
           'github.com/MicrosoftDocs/azure-docs'),
    Source('S25', 'BNL slides (as S23), DGX-2 slide', 'https://docslib.org/doc/1446904'),
    Source('S26', 'Li et al., Evaluating Modern GPU Interconnect, arXiv 1903.04611 (summary)',
           'https://github.com/jasperzhong/read-papers-and-code/issues/201'),
    Source('S27', 'NVIDIA/nccl-tests issue 78: DGX-2 nvidia-smi topo -m',
           'https://github.com/NVIDIA/nccl-tests/issues/78'),
    Source('S28', 'NVIDIA developer blog, NVSwitch accelerates NVIDIA DGX-2',
           'https://developer.nvidia.com/blog/nvswitch-accelerates-nvidia-dgx2/'),
    Source('S30', 'NVIDIA/nccl src/graph/topo.h, link bandwidth constants (tag given at the citation)',
           'https://github.com/NVIDIA/nccl'),
    Source('S31', 'NVIDIA/nccl-tests issue 149', 'https://github.com/NVIDIA/nccl-tests/issues/149'),
    Source('S32', 'NVIDIA/nccl issue 1264: HGX H100 p2pBandwidthLatencyTest',
           'https://github.com/NVIDIA/nccl/issues/1264'),
    Source('S33', 'NVIDIA/nccl-tests issue 100: HGX A100 NCCL topology log (PCI[24.0])',
           'https://github.com/NVIDIA/nccl-tests/issues/100'),
    Source('S34', 'NVIDIA/nccl-tests issue 256: H200 log (PCI[48.0], NET[50.0])',
           'https://github.com/NVIDIA/nccl-tests/issues/256'),
    Source('S35', 'astra-sim/astra-sim issue 59: NVLink latency not published',
           'https://github.com/astra-sim/astra-sim/issues/59'),
    Source('S36', 'NVIDIA/nccl issue 1334: hwLat table of src/graph/tuning.cc',
           'https://github.com/NVIDIA/nccl/issues/1334'),
    Source('S37', 'NVIDIA/nccl issue 1505: DGX A100 nvidia-smi topo -m and NCCL XML',
           'https://github.com/NVIDIA/nccl/issues/1505'),
    Source('S38', 'NVIDIA DGX A100 datasheet specification tables', ''),
    Source('S39', 'How to Scale Your Model (JAX scaling book), GPU chapter', ''),
    Source('S40', 'schoenemeyer/gpuserver-architecture README',
           'https://github.com/schoenemeyer/gpuserver-architecture'),
    Source('S41', 'open-mpi/hwloc issue 574', 'https://github.com/open-mpi/hwloc/issues/574'),
    Source('S42', 'vllm-project/vllm issue 13855: DGX H100 nvidia-smi topo -m',
           'https://github.com/vllm-project/vllm/issues/13855'),
    Source('S43', 'NVIDIA DGX BasePOD reference architecture, core components (DGX H100/H200/B200)',
           'https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html'),
    Source('S44', 'NVIDIA DGX GB200 User Guide, hardware',
           'https://docs.nvidia.com/dgx/dgxgb200-user-guide/hardware.html'),
    Source('S45', 'NVIDIA GB200 NVL72 page (130 TB/s NVLink bandwidth)', ''),
    Source('S46', 'NVIDIA enterprise solutions: 144 NVLink ports per switch tray', ''),
    Source('S47', '72-port NVLink switch ASIC description', ''),
    Source('S48', 'Juniper JVD, Rail Optimized Fabric; NVIDIA Enterprise RA network logical architecture',
           'https://www.juniper.net/documentation/us/en/software/jvd/jvd-ai-dc-apstra-nvidia-weka/rail_optimized_fabric.html'),
    Source('S49', 'NVIDIA DGX SuperPOD reference architectures (DGX H100 RA-11333-001; B200; GB200)',
           'https://docs.nvidia.com/dgx-superpod/'),
    Source('S50', 'PCIe per-lane data rates and encodings (PCI-SIG figures, tabulated)',
           'https://hpc-notes.pages.dev/reference/pcie'),
    Source('S51', 'Linux commit 71eeba161d76, IB: Add new InfiniBand link speeds (EDR)', 'git.kernel.org'),
    Source('S51b', 'open-mpi/ompi pull request 4946 (EDR/HDR per-lane speeds)',
           'https://github.com/open-mpi/ompi/pull/4946'),
    Source('S51c', 'Linux commit f946e45f59ef, IB/mlx5: Add support for NDR link speed', 'git.kernel.org'),
    Source('S52', 'Intel Xeon E5 v4 / Scalable generation tables (Intel ARK figures)', ''),
    Source('S53', 'Skylake-SP launch coverage: three UPI links at 10.4 GT/s',
           'https://amcomputers.org/intel-xeon-skylake-sp-ufficiali-fino-a-28-core'),
    Source('S60', 'NVIDIA DGX H100 User Guide, Network Modules, Table 6', ''),
    Source('S61', 'NVIDIA DGX BasePOD Deployment Guide: compute network, networking',
           'https://docs.nvidia.com/dgx-basepod/deployment-guide-dgx-basepod/latest/sriov.html'),
    Source('S62', 'ServeTheHome, NVIDIA Cedar Fever 1.6Tbps modules used in the DGX H100',
           'https://www.servethehome.com/nvidia-cedar-fever-1-6tbps-modules-used-in-the-dgx-h100/'),
    Source('S63', 'NVIDIA DGX B200 User Guide, Introduction to NVIDIA DGX B200 Systems',
           'https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html'),
    Source('S64', 'NVIDIA NVLink and NVLink Switch product page',
           'https://www.nvidia.com/en-au/data-center/nvlink/'),
    Source('S65', 'NVIDIA Mission Control, External North-South Network GB200 deploy guide 2.3.0',
           'https://docs.nvidia.com/mission-control/'),
    Source('S66', 'NVIDIA/nccl issue 1286 (GB200 NVLink topology)',
           'https://github.com/NVIDIA/nccl/issues/1286'),
    Source('S67', 'NVIDIA/nccl issue 1769 (GB200 MNNVL log)', 'https://github.com/NVIDIA/nccl/issues/1769'),
    Source('S68', 'NVIDIA/nccl issue 1182: HGX H100 nvidia-smi nvlink -R',
           'https://github.com/NVIDIA/nccl/issues/1182'),
    Source('S69', 'DGX A100 identifiers (GPU bus ids, IB interface names) in public repositories', ''),
    Source('S70', 'DGX H100 GPU bus ids in public inventories', ''),
    Source('S71', 'vllm-project/vllm issue 16336: 8x B200 nvidia-smi topo -m',
           'https://github.com/vllm-project/vllm/issues/16336'),
    Source('S72', 'sgl-project/sglang pull request 9812: DGX H100-class nvidia-smi topo -m',
           'https://github.com/sgl-project/sglang/pull/9812'),
    Source('S73', 'nvidia-smi topo -m legend blocks in public outputs', ''),
    Source('S74', 'MLCommons inference v6.1, Crusoe GB200-NVL72 system description', ''),
    Source('S75', 'NVIDIA k8s-test-infra Topograph guide',
           'https://nvidia.github.io/k8s-test-infra/guides/topograph/'),
    Source('S76', 'NVIDIA/nccl v2.27.7-1 src/graph/topo.cc (getBcmGen, ncclTopoFlattenBcmSwitches, ncclTopoAddNvLinks)',
           'https://github.com/NVIDIA/nccl'),
    Source('S77', 'NCCL model values in public logs (nccl-tests issue 100; nccl issues 879, 1367, 1189)',
           'https://github.com/NVIDIA/nccl-tests/issues/100'),
    # GPU compute facts (per-GPU peaks, SMs, clocks, HBM) and the compute model's guidance.
    Source('S101', 'NVIDIA Tesla P100 datasheet and "NVIDIA Tesla P100" whitepaper (GP100: 56 SMs, '
           '1,480 MHz, 10.6 TFLOPS FP32, 21.2 TFLOPS FP16, 732 GB/s)', 'https://www.nvidia.com/'),
    Source('S102', 'NVIDIA Tesla V100 GPU Architecture whitepaper and V100 datasheet (80 SMs, 1,530 MHz, '
           '15.7 TFLOPS FP32, 125 TFLOPS tensor, 900 GB/s, 16/32 GB)', 'https://www.nvidia.com/'),
    Source('S103', 'NVIDIA DGX-2 and DGX-2H datasheets (2 and 2.1 petaFLOPS tensor, 16x V100 32 GB; '
           'DGX-2H GPUs at 450 W)', 'https://www.nvidia.com/'),
    Source('S104', 'NVIDIA A100 Tensor Core GPU Architecture whitepaper and A100 datasheet (108 SMs, '
           '1,410 MHz; 19.5 FP32, 156 TF32, 312 FP16/BF16 TFLOPS dense; 1,555 / 2,039 GB/s)',
           'https://www.nvidia.com/'),
    Source('S105', 'NVIDIA H100 Tensor Core GPU datasheet and architecture whitepaper (SXM5: 132 SMs; '
           '67 FP32, 989 TF32, 1,979 FP16/BF16, 3,958 FP8 TFLOPS with sparsity; 3.35 TB/s)',
           'https://www.nvidia.com/'),
    Source('S106', 'NVIDIA H200 Tensor Core GPU datasheet (141 GB HBM3e, 4.8 TB/s, H100 compute)',
           'https://www.nvidia.com/'),
    Source('S107', 'NVIDIA HGX B200 / DGX B200 datasheets (per 8 GPUs: 72 PFLOPS FP8, 36 PFLOPS '
           'FP16/BF16, 18 PFLOPS TF32 with sparsity; 8 TB/s per GPU)', 'https://www.nvidia.com/'),
    Source('S108', 'NVIDIA GB200 NVL72 datasheet (72 GPUs: 720 PFLOPS FP8, 360 PFLOPS FP16/BF16, '
           '180 PFLOPS TF32 with sparsity)', 'https://www.nvidia.com/'),
    Source('S109', 'NVIDIA Deep Learning Performance documentation: "Matrix Multiplication Background '
           'User\'s Guide" (tile and wave quantization, Tensor Core requirements) and "GPU Performance '
           'Background User\'s Guide"', 'https://docs.nvidia.com/deeplearning/performance/'),
    Source('S110', 'S. Bekman, Machine Learning Engineering Open Book, compute/accelerator: "Maximum '
           'Achievable Matmul FLOPS" table (A100 SXM bf16 about 87 %, H100 SXM about 80 % of peak)',
           'https://github.com/stas00/ml-engineering'),
    Source('S111', 'S. Markidis et al. 2018, "NVIDIA Tensor Core Programmability, Performance & '
           'Precision" (cuBLAS mixed precision on V100: 83 TFLOPS)', 'https://arxiv.org/abs/1803.04014'),
    Source('S112', 'T. Dao 2023, "FlashAttention-2: Faster Attention with Better Parallelism and Work '
           'Partitioning" (50-73 % of the A100 peak; Ampere or newer)', 'https://arxiv.org/abs/2307.08691'),
    Source('S113', 'NVIDIA Developer Blog 2019, "Getting Started with CUDA Graphs" (back-to-back short '
           'kernels cost about 3.8 us each when launched one by one)',
           'https://developer.nvidia.com/blog/cuda-graphs/'),
    Source('S114', 'NVIDIA HGX B300 / DGX B300 datasheets (Blackwell Ultra; per 8 GPUs 108 PFLOPS dense '
           'FP4, 72 PFLOPS FP8/FP6 and 36 PFLOPS FP16/BF16 with sparsity; up to 2.3 TB HBM3e; NVLink 5 '
           '1.8 TB/s per GPU) and G. Lockwood\'s B300 notes (HGX B300 about 13 PF dense FP4 per GPU, '
           '288 GB HBM3e, 8 TB/s)', 'https://glennklockwood.com/garden/processors/B300'),
    Source('S115', 'NVIDIA GB300 NVL72 datasheet and enterprise reference architecture components page '
           '(72 Blackwell Ultra GPUs, 18 compute trays of 2 Grace + 4 GPUs, 9 NVLink switch trays, '
           '130 TB/s NVLink; 1,440 / 1,080 PFLOPS FP4 sparse / dense, 720 PFLOPS FP8, 360 PFLOPS '
           'BF16 with sparsity; one ConnectX-8 800 Gb/s per GPU)',
           'https://docs.nvidia.com/enterprise-reference-architectures/nvl72-ai-factory/latest/components.html'),
    Source('S116', 'NVIDIA H800 SXM5 product brief (the export variant of H100 SXM5: H100\'s tensor-core '
           'rates and 80 GB HBM3, NVLink cut to 400 GB/s bidirectional per GPU) and DeepSeek-AI 2024, '
           '"DeepSeek-V3 Technical Report" section 3.1 (2,048 H800 in nodes of 8 on NVLink/NVSwitch, '
           'InfiniBand between nodes)', 'https://arxiv.org/abs/2412.19437'),
    Source('S117', 'NVIDIA Blackwell architecture technical brief and Transformer Engine documentation '
           '(MXFP8 at the FP8 rate and NVFP4 at the FP4 rate on Blackwell tensor cores; MX block '
           'scaling is a Blackwell feature, Hopper has per-tensor FP8 only)',
           'https://docs.nvidia.com/deeplearning/transformer-engine/'),
)})
