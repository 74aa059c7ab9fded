"""What the importers share: their error, GPU and link names, device names, safe XML parsing.

:func:`gpu_model` resolves the name of a GPU as nvidia-smi prints it, or a short form, to its
key in :data:`topo.specs.GPUS`; :func:`check_link` a link option to its key in
:data:`topo.specs.LINKS`; :func:`check_name` refuses names a terminal would act on.
:func:`parse_xml` reads XML without DTDs or entities (defusedxml), for NCCL's topology XML and
GraphML alike.
"""

from __future__ import annotations

import re

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
DEFAULT_PCIE = {"nvlink1": "pcie3_x16", "nvlink2": "pcie3_x16", "nvlink3": "pcie4_x16",
                "nvlink4": "pcie5_x16", "nvlink5": "pcie5_x16"}

#: Network port of each NIC by the GPUs' NVLink generation, when ``nic_link=`` is not given:
#: EDR with DGX-1/DGX-2, HDR with DGX A100, NDR with DGX H100 (the InfiniBand generation of
#: the DGX of that GPU generation). [U] for any given machine.
DEFAULT_NIC_LINK = {"nvlink1": "ib_edr", "nvlink2": "ib_edr", "nvlink3": "ib_hdr",
                    "nvlink4": "ib_ndr", "nvlink5": "ib_ndr"}

#: A NIC's device name as nvidia-smi and NCCL print it (``mlx5_0``, ``ib0``, ``NIC3``).
NIC_NAME = re.compile(r"[A-Za-z][\w.:-]{0,63}$")
#: Node ids the builders give other parts; a NIC may not be named like them.
RESERVED_ID = re.compile(r"(gpu|cpu|pcie|nvswitch)\d+$")


# --------------------------------------------------------------------------------------------
# GPU names
# --------------------------------------------------------------------------------------------

def _gpu_key(name: str) -> str:
    """Lower case without vendor prefixes, memory suffix and separators: 'v100sxm2'."""
    text = name.lower().strip()
    text = re.sub(r"^(nvidia\s+)?(tesla\s+)?", "", text)
    text = re.sub(r"[-_ ]?\d+\s*gb$", "", text)
    return re.sub(r"[-_\s]", "", text)


def gpu_model(name: str) -> str:
    """Resolve a GPU name to its key in :data:`topo.specs.GPUS`.

    Accepts the catalogue key (``"V100-SXM2"``), the name nvidia-smi prints (``"Tesla
    V100-SXM2-16GB"``, any memory size) and short forms (``"v100-sxm2"``, ``"v100sxm2"``),
    without regard to case, ``-``, ``_`` or spaces.

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
        For a name that matches no model, or several (``"v100"``).

    Examples
    --------
    >>> gpu_model("Tesla V100-SXM2-32GB"), gpu_model("v100-sxm3"), gpu_model("P100")
    ('V100-SXM2', 'V100-SXM3', 'P100')
    """
    if not isinstance(name, str) or not name.strip():
        raise TopologyImportError(f"expected a GPU model name such as 'V100-SXM2' or 'Tesla "
                                  f"V100-SXM2-16GB', received {name!r}")
    wanted = _gpu_key(name)
    exact = [key for key, spec in GPUS.items() if wanted in (_gpu_key(key), _gpu_key(spec.model))]
    if len(exact) == 1:
        return exact[0]
    partial = [key for key, spec in GPUS.items()
               if _gpu_key(key).startswith(wanted) or _gpu_key(spec.model).startswith(wanted)]
    if len(partial) == 1 and wanted:
        return partial[0]
    known = ", ".join(f"{key} ({spec.model})" for key, spec in GPUS.items())
    if len(partial) > 1:
        raise TopologyImportError(f"GPU model {name!r} is ambiguous: it matches {', '.join(partial)}; "
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
