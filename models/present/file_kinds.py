"""What an input file is, told from its text: the one reading behind every message that refuses a
file given where another kind was expected (``--topo-file``, ``import``, ``check`` and
``calibrate``), so that each says what the file is instead of what it lacks.

The text is what :func:`topo.inputs.read_input` returns (UTF-8, stray bytes replaced by U+FFFD):
UTF-16 shows as a NUL beside every ASCII character (UTF-32 as three), binary data as NULs, control characters and
replaced bytes. Only the first :data:`HEAD` characters are looked at.

Examples
--------
>>> file_kind('{"format": "dgx-topo fabric", "version": 1}')
<FileKind.FABRIC_JSON: 'a dgx-topo fabric (JSON)'>
>>> file_kind("\\ufffd\\ufffdG\\x00P\\x00U\\x000\\x00").value
'UTF-16 text'
"""

from __future__ import annotations

import enum
import re
from types import MappingProxyType

from topo.inputs import STDIN

__all__ = ["FileKind", "file_kind", "misplaced", "HEAD"]

#: Characters of the text looked at.
HEAD = 65536
# Of the first characters, the share that makes a text binary (NULs aside): control characters
# and bytes that are not UTF-8. A log with a stray byte or two stays text.
_BINARY_SHARE = 0.05
_SAMPLE = 4096
_NVIDIA_SMI = re.compile(r"(?m)^[ \t]*GPU0[ \t]")
_NCCL_TESTS = re.compile(r"(?m)nThread\s+\d+\s+nGpus\s+\d+|_perf\b|^#\s*size\s+count\s+type\b|Avg bus bandwidth")
_P2P = re.compile(r"P2P Connectivity Matrix|P2P=(?:Enabled|Disabled)")


class FileKind(enum.Enum):
    """A kind of file, its value the words a message names it by."""

    EMPTY = "an empty file"
    UTF16 = "UTF-16 text"
    UTF32 = "UTF-32 text"
    BINARY = "binary data, not text"
    FABRIC_JSON = "a dgx-topo fabric (JSON)"
    FABRIC_GRAPHML = "a dgx-topo fabric (GraphML)"
    NCCL_XML = "an NCCL topology XML"
    NVIDIA_SMI = "nvidia-smi topo -m output"
    NCCL_TESTS = "nccl-tests output"
    P2P = "p2pBandwidthLatencyTest output"
    CALIBRATION = "a dgx-topo calibration file"
    TASK_GRAPH = "a task graph (JSON)"
    JSON = "JSON"
    XML = "XML"
    TEXT = "other text"


def _utf16(sample: str) -> bool:
    """A NUL beside (nearly) every other character, all on one side: ASCII read as UTF-16."""
    even, odd = sample[0::2].count("\x00"), sample[1::2].count("\x00")
    half = max(1, len(sample) // 2)
    return max(even, odd) >= 0.3 * half and min(even, odd) <= 0.02 * half


def _utf32(sample: str) -> bool:
    """Three NULs beside (nearly) every fourth character: ASCII read as UTF-32."""
    quarter = max(1, len(sample) // 4)
    zeros = sorted(sample[k::4].count("\x00") for k in range(4))
    return zeros[1] >= 0.3 * quarter and zeros[0] <= 0.02 * quarter


def _binary(sample: str) -> bool:
    odd = sum(1 for c in sample if c == "\ufffd" or (c < " " and c not in "\t\n\r\f\v\x1b"))
    return "\x00" in sample or odd > _BINARY_SHARE * len(sample)


def file_kind(text: str) -> FileKind:
    """The kind of file ``text`` is (:class:`FileKind`), from its first :data:`HEAD` characters."""
    head = text[:HEAD]
    body = head.lstrip("\ufeff \t\r\n")
    if not body:
        return FileKind.EMPTY
    sample = head[:_SAMPLE]
    if "\x00" in sample and _utf32(sample):
        return FileKind.UTF32
    if "\x00" in sample and _utf16(sample):
        return FileKind.UTF16
    if _binary(sample):
        return FileKind.BINARY
    if body.startswith(("{", "[")):
        if '"dgx-topo fabric"' in body:
            return FileKind.FABRIC_JSON
        if '"dgx-topo calibration"' in body:
            return FileKind.CALIBRATION
        if re.match(r'\{\s*"(?:tasks|name)"', body) and '"tasks"' in body:
            return FileKind.TASK_GRAPH
        return FileKind.JSON
    if body.startswith("<"):
        if "<graphml" in body[:_SAMPLE]:
            return FileKind.FABRIC_GRAPHML
        if "<system" in body:
            return FileKind.NCCL_XML
        return FileKind.XML
    if _NVIDIA_SMI.search(body):
        return FileKind.NVIDIA_SMI
    if _P2P.search(body):
        return FileKind.P2P
    if _NCCL_TESTS.search(body):
        return FileKind.NCCL_TESTS
    return FileKind.TEXT


# Where each kind is read, for a file given elsewhere ({path}: the file as the command line named it).
_HOME = MappingProxyType({
    FileKind.UTF16: "save it as UTF-8 first (iconv -f UTF-16 -t UTF-8 {path})",
    FileKind.UTF32: "save it as UTF-8 first (iconv -f UTF-32 -t UTF-8 {path})",
    FileKind.FABRIC_JSON: "a fabric is read by --topo-file {path}",
    FileKind.FABRIC_GRAPHML: "a fabric is read by --topo-file {path}",
    FileKind.NCCL_XML: "import it first with 'dgxtopo import {path} --out FILE.json' and pass that file to --topo-file",
    FileKind.NVIDIA_SMI: "import it first with 'dgxtopo import {path} --gpu MODEL --out FILE.json'",
    FileKind.NCCL_TESTS: "'dgxtopo check' and 'dgxtopo calibrate' read it",
    FileKind.P2P: "'dgxtopo calibrate' reads it",
    FileKind.CALIBRATION: "--calibration {path} reads it",
    FileKind.TASK_GRAPH: "'dgxtopo simulate --graph {path}' reads it",
})


def misplaced(path: str, kind: FileKind, expected: str) -> str:
    """The message refusing file ``path`` (``-``: standard input) of ``kind`` where ``expected``
    (words) was: what it is, what was expected, and where it is read.

    >>> misplaced("x.json", FileKind.FABRIC_JSON, "an NCCL topology XML")
    'x.json is a dgx-topo fabric (JSON): expected an NCCL topology XML; a fabric is read by --topo-file x.json'
    """
    home = _HOME.get(kind)
    shown = "standard input" if path == STDIN else path
    return f"{shown} is {kind.value}: expected {expected}" + ("" if home is None else "; " + home.format(path=path))
