"""What the importers share: their error, GPU and link names, device names, safe XML parsing.

:func:`gpu_model` resolves the name of a GPU as nvidia-smi prints it, or a short form, to its
key in :data:`topo.specs.GPUS`; :func:`check_link` a link option to its key in
:data:`topo.specs.LINKS`; :func:`check_name` refuses names a terminal would act on.
:func:`parse_xml` reads XML without DTDs or entities (defusedxml), for NCCL's topology XML and
GraphML alike.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from ..errors import DgxTopoError
from ..specs import GPUS, LINKS

__all__ = ["TopologyImportError", "gpu_model", "check_link", "parse_xml",
           "DEFAULT_PCIE", "DEFAULT_NIC_LINK", "NIC_NAME", "RESERVED_ID"]


class TopologyImportError(DgxTopoError):
    """Input of an importer that is malformed, unknown or contradicts itself.

    The message names the line (nvidia-smi text) or the element (XML, JSON) and says what was
    expected and what was received.
    """


#: PCIe link of an imported machine by its GPUs' NVLink generation, when ``pcie=`` is not
#: given: P100/V100 systems are PCIe gen3, A100 gen4, H100 and later gen5 (the GPUs' PCIe
#: interfaces per the A100 [S12] and H100 [S13] whitepapers). [U] for any given machine.
DEFAULT_PCIE = MappingProxyType({"nvlink1": "pcie3_x16", "nvlink2": "pcie3_x16", "nvlink3": "pcie4_x16",
                "nvlink4": "pcie5_x16", "nvlink5": "pcie5_x16"})

#: Network port of each NIC by the GPUs' NVLink generation, when ``nic_link=`` is not given:
#: EDR with DGX-1/DGX-2, HDR with DGX A100, NDR with DGX H100 (the InfiniBand generation of
#: the DGX of that GPU generation). [U] for any given machine.
DEFAULT_NIC_LINK = MappingProxyType({"nvlink1": "ib_edr", "nvlink2": "ib_edr", "nvlink3": "ib_hdr",
                    "nvlink4": "ib_ndr", "nvlink5": "ib_ndr"})

#: A NIC's device name as nvidia-smi and NCCL print it (``mlx5_0``, ``ib0``, ``NIC3``).
NIC_NAME = re.compile(r"[A-Za-z][\w.:-]{0,63}$")
#: Node ids the builders give other parts; a NIC may not be named like them.
RESERVED_ID = re.compile(r"(gpu|cpu|pcie|nvswitch)\d+$")


# --------------------------------------------------------------------------------------------
# GPU names
# --------------------------------------------------------------------------------------------

_VENDOR = re.compile(r"^(nvidia\s+)?(tesla\s+)?")
# A memory size as a word of the name: "-40GB", " 80GB", "_32gb".
_MEMORY = re.compile(r"(?:^|(?<=[-_\s]))(\d{1,4})\s*gb(?=$|[-_\s])")


def _plain(text: str) -> str:
    """Lower case without vendor prefixes and separators: 'a100sxm440gb'."""
    return re.sub(r"[-_\s]", "", _VENDOR.sub("", text.lower().strip()))


def _bare(text: str) -> tuple[str, int | None]:
    """(the name without its memory size, that size in GB or None): ('a100sxm4', 40)."""
    text = _VENDOR.sub("", text.lower().strip())
    sizes = [int(m.group(1)) for m in _MEMORY.finditer(text)]
    return re.sub(r"[-_\s]", "", _MEMORY.sub("", text)), (sizes[0] if len(sizes) == 1 else None)


def _memory_names(key: str) -> set:
    """Memory sizes [GB] a GPU of :data:`topo.specs.GPUS` answers to: the size its key or model
    names, else its ``memory`` in GiB and in GB (16 GiB is sold as "16GB", 141 GB as "141GB")."""
    spec = GPUS[key]
    named = {size for text in (key, spec.model) for size in [_bare(text)[1]] if size is not None}
    return named or {round(spec.memory / 2**30), round(spec.memory / 1e9)}


def _narrow(keys: list, memory: int | None) -> list:
    """``keys`` whose memory size is ``memory`` when that leaves some; else ``keys``."""
    if memory is None:
        return keys
    sized = [key for key in keys if memory in _memory_names(key)]
    return sized or keys


def gpu_model(name: str) -> str:
    """Resolve a GPU name to its key in :data:`topo.specs.GPUS`.

    Accepts the catalogue key (``"A100-SXM4-80GB"``), the name nvidia-smi prints (``"Tesla
    V100-SXM2-16GB"``, ``"NVIDIA A100-SXM4-40GB"``) and short forms (``"v100-sxm2"``,
    ``"h100"``), without regard to case, ``-``, ``_`` or spaces. The lookup reads the
    catalogue only, so a model added to it resolves without further code:

    1. the whole name equals a key or a model (memory size included);
    2. else the name without its memory size equals one without theirs (``"a100-sxm4-80gb"``
       and ``"NVIDIA A100-SXM4-80GB"`` are the 80 GB part; ``"Tesla V100-SXM2-32GB"`` is the
       one V100-SXM2 of the catalogue); among several, the memory size decides;
    3. else the name begins one key or model (``"h100"``).

    Parameters
    ----------
    name : str

    Returns
    -------
    str
        A key of :data:`topo.specs.GPUS`.

    Raises
    ------
    TopologyImportError
        For a name that matches no model, or several that its memory size does not tell
        apart (``"v100"``, ``"A100"``); the message lists the keys that resolve.

    Examples
    --------
    >>> gpu_model("Tesla V100-SXM2-16GB"), gpu_model("v100-sxm3"), gpu_model("P100")
    ('V100-SXM2', 'V100-SXM3', 'P100')
    >>> gpu_model("NVIDIA A100-SXM4-80GB"), gpu_model("a100 sxm4 40gb"), gpu_model("H100")
    ('A100-SXM4-80GB', 'A100-SXM4-40GB', 'H100-SXM5-80GB')
    """
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or not name.isprintable():
        raise TopologyImportError(f"expected a GPU model name such as 'V100-SXM2' or 'Tesla "
                                  f"V100-SXM2-16GB', received {name!r:.80}")
    whole = _plain(name)
    exact = [key for key, spec in GPUS.items() if whole in (_plain(key), _plain(spec.model))]
    if len(exact) == 1:
        return exact[0]
    bare, memory = _bare(name)
    same = _narrow([key for key, spec in GPUS.items() if bare in (_bare(key)[0], _bare(spec.model)[0])],
                   memory)
    if len(same) == 1:
        return same[0]
    begun = same or _narrow([key for key, spec in GPUS.items() if bare and (
        _bare(key)[0].startswith(bare) or _bare(spec.model)[0].startswith(bare))], memory)
    if len(begun) == 1:
        return begun[0]
    known = ", ".join(f"{key} ({spec.model})" for key, spec in GPUS.items())
    if begun:
        raise TopologyImportError(f"GPU model {name!r} is ambiguous: it matches {', '.join(begun)}; "
                                  f"expected one of {known}")
    raise TopologyImportError(f"unknown GPU model {name!r}: expected one of {known}")


def check_link(link, kind: str, option: str):
    """``link`` if it is None or a :data:`topo.specs.LINKS` key of edge kind ``kind``, else an
    error naming ``option`` and the choices."""
    if link is not None and (not isinstance(link, str) or link not in LINKS or LINKS[link].kind != kind):
        choices = ", ".join(k for k, s in LINKS.items() if s.kind == kind)
        raise TopologyImportError(f"{option}={link!r} is not a {kind} link: expected one of {choices}")
    return link


def parse_xml(text, what: str = "NCCL topology XML"):
    """The root element of XML text, read by defusedxml with DTDs and entities refused.

    Parameters
    ----------
    text : str or bytes
    what : str
        The format as messages name it (``"NCCL topology XML"``, ``"GraphML"``).

    Raises
    ------
    TopologyImportError
        For text that is not well-formed, has a DTD or entities, or cannot be decoded.
    """
    try:
        from defusedxml import ElementTree as SafeET
        from defusedxml.common import DefusedXmlException
    except ImportError as error:  # pragma: no cover - a declared dependency
        raise TopologyImportError(f"reading {what} needs the package defusedxml") from error
    from xml.etree.ElementTree import ParseError

    if not isinstance(text, (str, bytes)):
        raise TopologyImportError(f"expected the text of an {what}, received {type(text).__name__}"
                                  if what.startswith("NCCL") else
                                  f"expected the text of a {what} file, received {type(text).__name__}")
    try:
        return SafeET.fromstring(text, forbid_dtd=True)
    except ParseError as error:
        raise TopologyImportError(f"{what} is not well-formed: {error}") from None
    except DefusedXmlException as error:
        raise TopologyImportError(f"{what} refused (DTDs and entities are not allowed): "
                                  f"{error!r}") from None
    except (ValueError, UnicodeError) as error:
        raise TopologyImportError(f"{what} cannot be decoded: {error}") from None
