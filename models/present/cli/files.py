"""``import`` (nvidia-smi topo -m text or NCCL's topology XML into a fabric file) and ``export``
(a system as JSON, GraphML or NCCL's XML): fabrics in and out of files."""

from __future__ import annotations

import argparse

import topo
from topo.errors import DgxTopoError

from .inputs import fabric_of, read_text
from .options import Command, UsageError, at_least, json_option, max_input_option, system_option
from .outputs import print_json


IMPORT_FORMATS = ("auto", "nvidia-smi", "nccl-xml")
EXPORT_FORMATS = ("json", "graphml", "nccl-xml")


def _import_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="nvidia-smi topo -m output, or NCCL's topology XML "
                        "(NCCL_TOPO_DUMP_FILE)")
    parser.add_argument("--format", choices=IMPORT_FORMATS, default="auto",
                        help="the file's format (default auto: XML if it starts with '<', else nvidia-smi)")
    parser.add_argument("--gpu", metavar="MODEL",
                        help="GPU model as nvidia-smi names it ('Tesla V100-SXM2-16GB') or a short form "
                             "('v100-sxm2'); required for nvidia-smi text, which does not say")
    parser.add_argument("--out", metavar="FILE",
                        help="fabric JSON to write, replaced atomically (default: write nothing, "
                             "print the summary only)")
    parser.add_argument("--name", help="the fabric's name in every output (default: imported)")
    json_option(parser, "the summary: what was read and written")
    parser.add_argument("--pcie", metavar="LINK",
                        help="PCIe link of every device, e.g. pcie3_x16 (default: by GPU generation)")
    parser.add_argument("--socket-link", metavar="LINK",
                        help="CPU-to-CPU link, e.g. upi (default: qpi_bdw; ignored with --cpu)")
    max_input_option(parser)
    smi = parser.add_argument_group("nvidia-smi text only")
    smi.add_argument("--cpu", metavar="CPU", help="CPU model of every socket, a key of topo.CPUS "
                     "(default: cores and threads read off the CPU affinity)")
    smi.add_argument("--nvswitch", action=argparse.BooleanOptionalAction, default=None,
                     help="whether the GPUs talk through NVSwitches (default: inferred from the NV# counts)")
    smi.add_argument("--nvswitches", type=at_least(1), metavar="N",
                     help="NVSwitch chips to build (default: the known system's, else one per NVLink of a GPU)")
    smi.add_argument("--nvswitch-links", metavar="LIST",
                     help="NVLinks from every GPU to each NVSwitch chip, such as 5,4,4,5 (default: the known system's)")
    smi.add_argument("--like", metavar="SYSTEM",
                     help="built-in system to take what the text cannot say from (NVSwitch wiring, CPUs, NIC ports, "
                          "PCIe links), or 'none' (default: the known system of the GPU model)")
    smi.add_argument("--max-devices", type=at_least(1), default=None, metavar="N",
                     help="refuse printouts of more than N GPUs and NICs (default 128, at most 1024)")
    smi.add_argument("--hosts", type=at_least(1), metavar="N",
                     help="hosts of an NVLink domain that spans several, the printed one copied to each "
                          "(default: the known system's, 18 for a GB200 NVL72 tray)")
    smi.add_argument("--nic-link", metavar="LINK",
                     help="network port of every NIC, e.g. ib_hdr, or 'none' (default: by GPU generation)")


def _import_format(args, text: str) -> str:
    if args.format != "auto":
        return args.format
    return "nccl-xml" if text.lstrip("\ufeff \t\r\n").startswith("<") else "nvidia-smi"


def _links_list(text):
    """``--nvswitch-links 5,4,4,5`` as a tuple of whole numbers (the importer checks the values)."""
    if text is None:
        return None
    parts = text.split(",")
    if not all(part.strip().isdigit() and len(part.strip()) <= 4 for part in parts):
        raise UsageError(f"--nvswitch-links {text!r}: expected whole numbers separated by commas, such as 5,4,4,5")
    return tuple(int(part) for part in parts)


def _import(args) -> None:
    from ..json_shapes import import_json
    from ..text import import_summary

    from ..file_kinds import FileKind, file_kind, misplaced

    text = read_text(args.file, "import", args)
    found = file_kind(text)
    if found not in (FileKind.NVIDIA_SMI, FileKind.NCCL_XML, FileKind.XML, FileKind.TEXT) or \
            (found is FileKind.TEXT and args.format == "auto"):
        raise UsageError(misplaced(args.file, found, "nvidia-smi topo -m output (a GPU0 column) or an NCCL "
                                                      "topology XML (a <system> element)"))
    kind = _import_format(args, text)
    name = {} if args.name is None else {"name": args.name}
    if kind == "nvidia-smi":
        if args.gpu is None:
            raise UsageError(f"{args.file}: nvidia-smi topo -m does not name the GPU model: expected "
                              f"--gpu MODEL such as 'Tesla V100-SXM2-16GB' or v100-sxm2")
        nic = {} if args.nic_link is None else {"nic_link": None if args.nic_link.lower() == "none" else args.nic_link}
        like = "auto" if args.like is None else None if args.like.lower() == "none" else args.like
        try:
            G = topo.from_nvidia_smi(text, gpu=args.gpu, cpu=args.cpu, pcie=args.pcie, nvswitch=args.nvswitch,
                                     nvswitches=args.nvswitches, nvswitch_links=_links_list(args.nvswitch_links),
                                     socket_link=args.socket_link, like=like, hosts=args.hosts, **nic, **name,
                                     **({} if args.max_devices is None else {"max_devices": args.max_devices}))
        except DgxTopoError as error:
            raise type(error)(f"{args.file}: {error}") from None
        what = "nvidia-smi topo -m"
        nvswitch_origin = ("inferred from the NV# counts" if args.nvswitch is None
                           else "--nvswitch" if args.nvswitch else "--no-nvswitch")
        pcie_origin = "rebuilt from the PIX/PXB/PHB classes"
    else:
        given = [option for option, value in (("--cpu", args.cpu), ("--nvswitch/--no-nvswitch", args.nvswitch),
                                              ("--nvswitches", args.nvswitches), ("--nic-link", args.nic_link),
                                              ("--nvswitch-links", args.nvswitch_links), ("--like", args.like),
                                              ("--hosts", args.hosts), ("--max-devices", args.max_devices))
                 if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to nvidia-smi text: "
                              f"an NCCL topology XML says it itself")
        try:
            G = topo.from_nccl_xml(text, gpu=args.gpu, pcie=args.pcie, socket_link=args.socket_link, **name)
        except DgxTopoError as error:
            raise type(error)(f"{args.file}: {error}") from None
        what = "NCCL topology XML"
        nvswitch_origin = "from the XML's NVLink targets"
        pcie_origin = "from the XML's PCI bridges"
    nbytes = None
    if args.out is not None:
        from ..output import write_text_atomic
        nbytes = write_text_atomic(args.out, topo.to_json(G)).stat().st_size
    if args.json:
        print_json(import_json(G, source=args.file, what=what, nvswitch_origin=nvswitch_origin,
                                pcie_origin=pcie_origin, path=args.out, nbytes=nbytes))
        return
    print(import_summary(G, source=args.file, what=what, nvswitch_origin=nvswitch_origin,
                         pcie_origin=pcie_origin, out=args.out))


def _export_arguments(parser) -> None:
    system_option(parser)
    parser.add_argument("--format", choices=EXPORT_FORMATS, default="json",
                        help="json (networkx node-link data with a format version; default), graphml, or "
                             "nccl-xml (NCCL's topology XML of host 0, what NCCL_TOPO_DUMP_FILE holds)")
    parser.add_argument("--out", required=True, metavar="FILE", help="file to write, replaced atomically")
    json_option(parser, "a line: what was written, with its summary")


def _export(args) -> None:
    from ..json_shapes import export_json

    from ..output import write_text_atomic

    G = fabric_of(args, args.system)
    write = {"json": topo.to_json, "graphml": topo.to_graphml, "nccl-xml": topo.to_nccl_xml}[args.format]
    path = write_text_atomic(args.out, write(G))
    # NCCL's XML is one host's (host 0): say what it holds, not the whole cluster's summary.
    host = {"host": 0, "host_gpus": sum(G.nodes[g]["host"] == 0 for g in topo.gpus(G))} \
        if args.format == "nccl-xml" else {}
    if args.json:
        print_json({**export_json(G, args.out, args.format, path.stat().st_size), **host})
        return
    hosts = len({h for _, h in G.nodes(data="host")} - {-1})
    what = (f"host 0 of {hosts}, {host['host_gpus']} GPUs" if host and hosts > 1 else
            f"{len(topo.gpus(G))} GPUs, {G.number_of_nodes()} nodes, {G.number_of_edges()} edges")
    print(f"wrote {args.out} ({args.format}: {G.graph.get('name', '?')}, {what})")


IMPORT = Command("import", "read nvidia-smi topo -m text or an NCCL topology XML into a fabric file",
                 _import_arguments, _import)
EXPORT = Command("export", "write a system or cluster as JSON or GraphML", _export_arguments, _export)
