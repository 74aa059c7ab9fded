"""The built-in systems by name, the system-spec grammar, and building fabrics from a spec.

A system spec is one of

``NAME``
    A built-in system of :data:`SYSTEMS` (``dgx1``, ``dgx1v``, ``dgx2``). Case, ``-`` and
    ``_`` are ignored: ``"DGX-1V"`` is ``"dgx1v"``.
``NxNAME[:network]``
    A cluster of ``N`` hosts of system ``NAME`` (``N`` plain decimal digits, 1 to the host
    limit) joined by a ``fat_tree`` (default) or ``rail`` network (:mod:`topo.cluster`):
    ``"2xdgx1v"``, ``"16xdgx2:rail"``.

Nothing else is accepted: no sign, no spaces, no decimal point or exponent, no range. The
host limit (:data:`topo.cluster.MAX_HOSTS`, 4,096) is checked on the text, before anything is
built, so ``build("1000000xdgx2")`` fails at once; ``max_hosts=`` raises it.

Examples
--------
>>> sorted(SYSTEMS)
['dgx1', 'dgx1v', 'dgx2']
>>> parse_system_spec("16xDGX-2:rail")
SystemSpec(system='dgx2', hosts=16, network='rail')
>>> str(parse_system_spec("dgx1v")), str(parse_system_spec("2xdgx1v"))
('dgx1v', '2xdgx1v')
>>> parse_system_spec("-1xdgx2")
Traceback (most recent call last):
...
topo.errors.SystemSpecError: malformed system spec '-1xdgx2': the host count '-1' is not a whole number >= 1; expected NAME or NxNAME[:network] such as dgx2, 2xdgx1v or 16xdgx2:rail
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from .cluster import MAX_HOSTS, NETWORKS, check_hosts, join_hosts
from .dgx import dgx1, dgx1v, dgx2
from .errors import DgxTopoError, SystemSpecError, UnknownSystemError

__all__ = ["SYSTEMS", "SystemSpec", "parse_system_spec", "build", "cluster", "SPEC_GRAMMAR"]

#: Built-in systems by name.
SYSTEMS: dict[str, Callable[[], nx.DiGraph]] = {"dgx1": dgx1, "dgx1v": dgx1v, "dgx2": dgx2}

#: The grammar, as help texts and error messages state it.
SPEC_GRAMMAR = "NAME or NxNAME[:network] such as dgx2, 2xdgx1v or 16xdgx2:rail"

# Spellings of the networks (after lower-casing) and the network they mean.
_NETWORK_NAMES = {"fat_tree": "fat_tree", "fattree": "fat_tree", "fat-tree": "fat_tree",
                  "rail": "rail"}
_COUNT = re.compile(r"[0-9]+")
# Longest host count text read as a number; longer digit strings are refused as too large
# without converting them.
_MAX_COUNT_DIGITS = 18


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """A parsed system spec.

    Attributes
    ----------
    system : str
        Key of :data:`SYSTEMS`.
    hosts : int
        Number of hosts (1 for a single system).
    network : str or None
        ``"fat_tree"`` or ``"rail"`` for a cluster (``NxNAME``), None for a single system.
    """

    system: str
    hosts: int = 1
    network: str | None = None

    @property
    def is_cluster(self) -> bool:
        """True for ``NxNAME[:network]`` (even with N = 1), False for ``NAME``."""
        return self.network is not None

    def __str__(self) -> str:
        if not self.is_cluster:
            return self.system
        return f"{self.hosts}x{self.system}" + ("" if self.network == "fat_tree" else f":{self.network}")


def _system_key(text: str) -> str:
    return text.lower().replace("-", "").replace("_", "")


def _show(text: str) -> str:
    """``repr(text)``, cut to a readable length for messages."""
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"


def _malformed(text: str, why: str) -> SystemSpecError:
    return SystemSpecError(f"malformed system spec {_show(text)}: {why}; expected {SPEC_GRAMMAR}")


def _unknown(text: str) -> UnknownSystemError:
    return UnknownSystemError(f"unknown system {_show(text)}: expected one of {', '.join(SYSTEMS)}, or a "
                              f"cluster such as 2xdgx1v or 16xdgx2:rail")


def parse_system_spec(text, *, max_hosts: int = MAX_HOSTS) -> SystemSpec:
    """Parse ``NAME`` or ``NxNAME[:network]`` (see the module docstring), strictly.

    Parameters
    ----------
    text : str
        The spec.
    max_hosts : int
        Largest host count accepted (default :data:`topo.cluster.MAX_HOSTS`).

    Returns
    -------
    SystemSpec

    Raises
    ------
    UnknownSystemError
        For a name that is not in :data:`SYSTEMS` (the message lists them).
    SystemSpecError
        For anything else that is not the grammar: not a string, empty, whitespace, a host
        count that is not plain digits >= 1 (``-1xdgx2``, ``1-6xdgx2``, ``1.5xdgx2``,
        ``0xdgx2``) or above ``max_hosts`` (the message names ``max_hosts=`` and
        ``--max-gpus``), an unknown network, a network without a host count.
    """
    check_hosts(1, max_hosts=max_hosts)  # max_hosts itself: a whole number >= 1
    if isinstance(text, SystemSpec):
        check_hosts(text.hosts, max_hosts=max_hosts, what=f"system {str(text)!r}")
        return text
    if not isinstance(text, str):
        raise SystemSpecError(f"a system spec must be a string, received {type(text).__name__} "
                              f"{reprlib.repr(text)}; expected {SPEC_GRAMMAR}")
    if not text:
        raise SystemSpecError(f"empty system spec: expected {SPEC_GRAMMAR}")
    if any(c.isspace() for c in text) or not text.isprintable():
        raise _malformed(text, "it contains whitespace or unprintable characters")
    head, colon, network_text = text.partition(":")
    if not colon and _system_key(head) in SYSTEMS:
        return SystemSpec(_system_key(head))
    count_text, x, system_text = head.partition("x")
    if not x:
        raise _unknown(text)
    if _system_key(system_text) not in SYSTEMS:
        if _COUNT.fullmatch(count_text) and system_text:
            raise UnknownSystemError(
                f"unknown system {_show(text)}: {_show(system_text)} is not one of {', '.join(SYSTEMS)}; "
                f"expected {SPEC_GRAMMAR}")
        if colon and _system_key(head) in SYSTEMS:
            raise _malformed(text, f"a network (:{network_text}) needs a host count")
        raise _unknown(text)
    system = _system_key(system_text)
    if not _COUNT.fullmatch(count_text) or int(count_text[:_MAX_COUNT_DIGITS] or "0") < 1:
        raise _malformed(text, f"the host count {_show(count_text)} is not a whole number >= 1")
    if len(count_text) > _MAX_COUNT_DIGITS:
        hosts = max_hosts + 1  # too large to be anything but refused below
        shown = f"{count_text[:6]}... ({len(count_text)} digits)"
    else:
        hosts = int(count_text)
        shown = str(hosts)
    network = "fat_tree"
    if colon:
        network = _NETWORK_NAMES.get(network_text.lower())
        if network is None:
            raise SystemSpecError(f"unknown network {_show(network_text)} in {_show(text)}: expected one of "
                                  f"{', '.join(NETWORKS)}")
    if hosts > max_hosts:
        raise SystemSpecError(
            f"system spec {_show(text)} asks for {shown} hosts, beyond the limit of {max_hosts}: "
            f"expected at most {max_hosts} hosts (raise it with max_hosts=, on the command line "
            f"--max-gpus)")
    return SystemSpec(system, hosts, network)


def cluster(node_builder, n: int, *, network: str = "fat_tree",
            max_hosts: int = MAX_HOSTS) -> nx.DiGraph:
    """Join ``n`` copies of a system through their compute NICs (see :mod:`topo.cluster`).

    Parameters
    ----------
    node_builder : callable, str or networkx.DiGraph
        A builder returning one system's fabric (``topo.dgx1v``), a built-in name
        (``"dgx1v"``), or a single-system fabric used as the template (not modified).
    n : int
        Number of hosts, 1 to ``max_hosts``; checked before anything is built.
    network : str
        ``"fat_tree"`` or ``"rail"``.
    max_hosts : int
        Host limit (default :data:`topo.cluster.MAX_HOSTS`).

    Returns
    -------
    networkx.DiGraph
        A validated fabric (see :func:`topo.cluster.join_hosts`).

    Raises
    ------
    DgxTopoError
        For a bad builder, host count, network or template.

    Examples
    --------
    >>> cluster("dgx1", 3).graph["name"]
    '3xDGX-1'
    """
    n = check_hosts(n, max_hosts=max_hosts)
    if network not in NETWORKS:
        raise DgxTopoError(f"unknown network {network!r}: expected one of {', '.join(NETWORKS)}")
    if isinstance(node_builder, str):
        spec = parse_system_spec(node_builder)
        if spec.is_cluster:
            raise DgxTopoError(f"cluster copies a single system: expected a name such as "
                               f"{', '.join(SYSTEMS)}, received the cluster {node_builder!r}")
        template = SYSTEMS[spec.system]()
    elif isinstance(node_builder, nx.DiGraph):
        template = node_builder
    elif callable(node_builder):
        template = node_builder()
    else:
        raise DgxTopoError(f"node_builder must be a builder or a system name such as "
                           f"{', '.join(SYSTEMS)}, received {node_builder!r}")
    return join_hosts(template, n, network=network, max_hosts=max_hosts)


def build(name, *, max_hosts: int = MAX_HOSTS) -> nx.DiGraph:
    """Build a built-in system, or a cluster of them, from a system spec.

    Parameters
    ----------
    name : str or SystemSpec
        ``NAME`` or ``NxNAME[:network]`` (see the module docstring).
    max_hosts : int
        Host limit of a cluster (default :data:`topo.cluster.MAX_HOSTS`), checked on the
        spec before anything is built.

    Returns
    -------
    networkx.DiGraph
        A fresh validated fabric.

    Raises
    ------
    UnknownSystemError
        For a name that is not built in; the message lists the valid names.
    SystemSpecError
        For a malformed spec or one beyond ``max_hosts``.

    Examples
    --------
    >>> build("DGX-2").number_of_nodes()  # 16 GPUs, 12 NVSwitches, 12 PCIe switches, 2 CPUs, 10 NICs
    52
    >>> build("dgx3")
    Traceback (most recent call last):
    ...
    topo.errors.UnknownSystemError: unknown system 'dgx3': expected one of dgx1, dgx1v, dgx2, or a cluster such as 2xdgx1v or 16xdgx2:rail
    >>> build("2xdgx1v").graph["hosts"]
    2
    """
    spec = parse_system_spec(name, max_hosts=max_hosts)
    if not spec.is_cluster:
        return SYSTEMS[spec.system]()
    return join_hosts(SYSTEMS[spec.system](), spec.hosts, network=spec.network, max_hosts=max_hosts)
