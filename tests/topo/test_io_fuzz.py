"""Fuzzing the three importers with malformed and hostile input (issue 24).

nvidia-smi text (:func:`topo.from_nvidia_smi`), NCCL topology XML (:func:`topo.from_nccl_xml`)
and fabric files (:func:`topo.from_json`, :func:`topo.from_graphml`): every input ends in a
typed error (:class:`topo.DgxTopoError`) or a valid fabric, never another exception, never a
hang (the watchdog of tests/conftest.py turns one into a failure). A fabric that comes back
is checked: it validates, its names print safely and its GPU numbers are CUDA's (0 and up).

Examples per run (hypothesis ``max_examples``, kept small for the suite's time): nvidia-smi 150
random texts + 40 mutated printouts; NCCL XML 150 token soups + 40 mutated dumps + 15 hostile
structures; fabric JSON 80 mutated files; GraphML 40 mutated files. ``FUZZ_SCALE=N`` in the
environment multiplies them for a longer hunt.
"""

from __future__ import annotations

import json
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topo
from tests.conftest import read_data, watchdog

SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1") or 1))
QUICK = settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=15 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WAIT = 30  # seconds: a hang, not a slow example

# Values a hostile file puts where a number or a name belongs.
HOSTILE_TEXT = ["", " ", "-7", "-1", "0", "1e30", "1e-300", "nan", "inf", "9" * 400, "0x10", "\x1b[2J",
                "a\nb", "\x00", "mlx5_0", "gpu0", "Ω", "x" * 2000]
HOSTILE_VALUES = [-7, -1, 0, 1, 10**400, 2**63, 1e30, 1e-300, -0.0, True, None, "", "\x1b[2Jx", "gpu0",
                  [1], {"a": 1}, 3.5, 1024, 70, 90]


def _checked(G) -> None:
    """What an importer gives back is a fabric fit to print and to compute on."""
    topo.validate(G)
    for node in G:
        assert not isinstance(node, str) or node.isprintable()
    for key, value in G.graph.items():
        assert not isinstance(value, str) or value.isprintable()
    assert all(G.nodes[g]["index"] >= 0 for g in topo.gpus(G))


def _imports(read, *args, **kwargs) -> None:
    with watchdog(WAIT):
        try:
            G = read(*args, **kwargs)
        except topo.DgxTopoError:
            return
    _checked(G)


# -- nvidia-smi topo -m -------------------------------------------------------------------------
SMI_ALPHABET = list("GPUNICmlx5_0123456789 \t\nXVSYOHBDE-,:#=/A\x1b\x00") + ["NV18", "PXB", "NODE", "SYS",
                                                                                  "CPU Affinity", "Legend:"]


@QUICK
@given(st.lists(st.sampled_from(SMI_ALPHABET), max_size=200).map("".join),
       st.sampled_from(["v100-sxm2", "NVIDIA H100 80GB HBM3", "a100-sxm4-80gb", "gb200", "P100"]))
def test_fuzz_nvidia_smi_text(text, gpu):
    _imports(topo.from_nvidia_smi, text, gpu=gpu)


PRINTOUTS = {system: topo.format_connection_matrix(topo.connection_matrix(topo.build(system)))
             for system in ("dgx1v", "dgxh100", "dgxa100")}
GPUS_OF = {"dgx1v": "v100-sxm2", "dgxh100": "h100", "dgxa100": "NVIDIA A100-SXM4-40GB"}
CELLS = ["X", "NV1", "NV2", "NV12", "NV18", "NV99999", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "N/A",
         "0-3", "0-999999", "-1", "GPU0", "mlx5_0", "\x1b[2J", "NIC0"]


@SOME
@given(st.data())
def test_fuzz_nvidia_smi_mutated_printouts(data):
    """A built-in system's printout with cells, labels or affinities replaced."""
    system = data.draw(st.sampled_from(sorted(PRINTOUTS)))
    lines = PRINTOUTS[system].splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        k = data.draw(st.integers(0, len(lines) - 1))
        tokens = lines[k].split()
        if tokens:
            tokens[data.draw(st.integers(0, len(tokens) - 1))] = data.draw(st.sampled_from(CELLS))
            lines[k] = "  ".join(tokens)
    options = data.draw(st.sampled_from([{}, {"like": None}, {"nvswitches": 4}, {"nvswitch_links": (9, 9)},
                                         {"hosts": 1}, {"cpu": "EPYC7742"}, {"nvswitch": True}]))
    _imports(topo.from_nvidia_smi, "\n".join(lines), gpu=GPUS_OF[system], **options)


# -- NCCL topology XML ----------------------------------------------------------------------------
XML_TOKENS = ['<system version="1">', "</system>", '<cpu numaid="0" affinity="ff" vendor="GenuineIntel" '
              'modelid="85">', '<cpu numaid="1" affinity="ff00" vendor="GenuineIntel" modelid="85">', "</cpu>",
              '<pci busid="0000:01:00.0" class="0x030200" link_speed="16 GT/s" link_width="16">',
              '<pci busid="0000:02:00.0" class="0x060400">', '<pci busid="0000:03:00.0" class="0x020000">',
              '<pci busid="0000:f0:00.0" class="0x068000"/>', "</pci>", '<gpu dev="0" sm="70">',
              '<gpu dev="1" sm="90">', '<gpu dev="-7" sm="80">', "</gpu>",
              '<nvlink target="0000:02:00.0" count="2" tclass="0x030200"/>',
              '<nvlink target="0000:f0:00.0" count="18" tclass="0x068000"/>',
              '<nvlink target="0000:01:00.0" count="0" tclass="0x030200"/>', "<nic>", "</nic>",
              '<net name="mlx5_0" dev="0" speed="400000"/>', '<net name="\x1b[2J" dev="1" speed="-5"/>',
              '<pcilink target="x"/>', "&amp;", "<", '<!DOCTYPE x [<!ENTITY a "b">]>']


@QUICK
@given(st.lists(st.sampled_from(XML_TOKENS), max_size=40))
def test_fuzz_nccl_xml_token_soup(tokens):
    _imports(topo.from_nccl_xml, "".join(tokens))


DUMPS = {name: read_data(name) for name in ("dgx1v_nccl_topo_synthetic.xml", "dgxa100_nccl_topo_synthetic.xml")}


@SOME
@given(st.data())
def test_fuzz_nccl_xml_mutated_attributes(data):
    """The synthetic dumps of tests/data with attribute values replaced by hostile ones."""
    name = data.draw(st.sampled_from(sorted(DUMPS)))
    text = DUMPS[name]
    for _ in range(data.draw(st.integers(1, 4))):
        values = list(re.finditer(r'="([^"]*)"', text))
        match = data.draw(st.sampled_from(values))
        new = data.draw(st.sampled_from(HOSTILE_TEXT + ["0x068000", "0x030200", "2.5 GT/s", "32", "12"]))
        text = text[:match.start(1)] + new.replace('"', "") + text[match.end(1):]
    _imports(topo.from_nccl_xml, text, socket_link="xgmi")


@FEW
@given(st.sampled_from(["cpus", "nesting", "gpus", "nics", "links"]), st.integers(1, 5000))
def test_fuzz_nccl_xml_hostile_structure(shape, n):
    """Many CPUs, deep PCIe nesting, many GPUs, NICs or NVLinks: refused or read, in bounded time."""
    cpu = '<cpu numaid="{}" affinity="ff" vendor="GenuineIntel" modelid="85">{}</cpu>'
    gpu = ('<pci busid="0000:{:02x}:{:02x}.0" class="0x030200"><gpu dev="{}" sm="90">{}</gpu></pci>')
    if shape == "cpus":
        body = "".join(cpu.format(k, gpu.format(0, k % 256, k, "") if k == 0 else "") for k in range(n))
    elif shape == "nesting":
        inner = gpu.format(0xff, 0, 0, "")
        for k in range(min(n, 3000)):
            inner = f'<pci busid="{k // 256:04x}:{k % 256:02x}:00.0" class="0x060400">{inner}</pci>'
        body = cpu.format(0, inner)
    elif shape == "gpus":
        body = cpu.format(0, "".join(gpu.format(k // 256, k % 256, k, "") for k in range(min(n, 1500))))
    elif shape == "nics":
        nics = "".join(f'<nic><net name="ib{k}" dev="{k}" speed="400000"/></nic>' for k in range(n))
        body = cpu.format(0, gpu.format(0, 0, 0, "") + nics)
    else:
        links = "".join(f'<nvlink target="0000:f{k % 10}:00.0" count="{k % 70}" tclass="0x068000"/>'
                        for k in range(min(n, 2000)))
        body = cpu.format(0, gpu.format(0, 0, 0, links))
    _imports(topo.from_nccl_xml, f'<system version="1">{body}</system>')


# -- fabric files ---------------------------------------------------------------------------------
EXPORTED = json.loads(topo.to_json(topo.build("dgx1v")))


@st.composite
def mutated_fabric(draw) -> dict:
    """The exported DGX-1V with values replaced, items repeated or removed."""
    data = json.loads(json.dumps(EXPORTED))
    body = data["graph"]
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["node", "edge", "graph", "repeat node", "repeat edge", "drop"]))
        if where in ("node", "edge", "graph"):
            item = (body["graph"] if where == "graph" else
                    draw(st.sampled_from(body["nodes" if where == "node" else "edges"])))
            key = draw(st.sampled_from(sorted(item) + ["id", "index", "links", "bandwidth", "name"]))
            item[key] = draw(st.sampled_from(HOSTILE_VALUES + HOSTILE_TEXT))
        elif where == "repeat node":
            body["nodes"].append(dict(draw(st.sampled_from(body["nodes"]))))
        elif where == "repeat edge":
            body["edges"].append(dict(draw(st.sampled_from(body["edges"]))))
        else:
            items = body[draw(st.sampled_from(["nodes", "edges"]))]
            if items:
                items.pop(draw(st.integers(0, len(items) - 1)))
    return data


@settings(max_examples=80 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fabric())
def test_fuzz_fabric_json(data):
    _imports(topo.from_json, json.dumps(data))


GRAPHML = topo.to_graphml(topo.build("dgx1v"))


@SOME
@given(st.data())
def test_fuzz_fabric_graphml(data):
    """The exported DGX-1V as GraphML with values, ids or elements replaced."""
    text = GRAPHML
    for _ in range(data.draw(st.integers(1, 4))):
        spots = list(re.finditer(r'>([^<>]*)</data>|id="([^"]*)"', text))
        match = data.draw(st.sampled_from(spots))
        group = 1 if match.group(1) is not None else 2
        new = data.draw(st.sampled_from(HOSTILE_TEXT)).replace('"', "").replace("<", "").replace("&", "")
        text = text[:match.start(group)] + new + text[match.end(group):]
    _imports(topo.from_graphml, text)
