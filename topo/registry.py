"""The built-in systems by name, the system-spec grammar, and building fabrics from a spec.

A system spec is one of

``NAME``
    A built-in system of :data:`SYSTEMS` (``dgx1``, ``dgx1v``, ``dgx2``, ``dgxa100``, ...) or a
    variant of one that people own, :data:`VARIANTS` (``dgxa100-80g``, the DGX A100 640GB;
    ``dgx1v-32g``; ``dgx2h``, the DGX-2H). Case, ``-`` and ``_`` are ignored: ``"DGX-1V"`` is
    ``"dgx1v"``.
``NxNAME[:network][:option=value...]``
    A cluster of ``N`` copies of system ``NAME`` (``N`` plain decimal digits, 1 to the host
    limit) joined by a ``fat_tree`` (default), ``rail`` or ``rail_only`` network
    (:mod:`topo.cluster`): ``"2xdgx1v"``, ``"4xdgxh100:rail"``, ``"8xgb200nvl72"`` (eight
    NVL72 racks of 18 hosts). Options, each at most once: ``oversub=K``, the leaves'
    down-link to up-link ratio (a whole number, 1 = non-blocking):
    ``"16xdgx2:fat_tree:oversub=4"``, or without the network ``"16xdgx2:oversub=4"``.

Nothing else is accepted: no sign, no spaces, no decimal point or exponent, no range. The
host limit (:data:`topo.cluster.MAX_HOSTS`, 4,096 hosts; an NVL72 rack is 18) is checked on
the text, before anything is built, so ``build("1000000xdgx2")`` fails at once; ``max_hosts=``
raises it.

Examples
--------
>>> " ".join(sorted(SYSTEMS))
'dgx1 dgx1v dgx2 dgxa100 dgxb200 dgxb300 dgxh100 dgxh200 dgxh800 gb200nvl72 gb300nvl72'
>>> parse_system_spec("16xDGX-2:rail")
SystemSpec(system='dgx2', hosts=16, network='rail', oversub=1)
>>> str(parse_system_spec("16xdgx2:fat_tree:oversub=4"))
'16xdgx2:oversub=4'
>>> str(parse_system_spec("dgx1v")), str(parse_system_spec("2xdgx1v"))
('dgx1v', '2xdgx1v')
>>> str(parse_system_spec("4xDGX-A100-80G"))
'4xdgxa100-80g'
>>> parse_system_spec("-1xdgx2")
Traceback (most recent call last):
...
topo.errors.SystemSpecError: malformed system spec '-1xdgx2': the host count '-1' is not a whole number >= 1; expected NAME or NxNAME[:network][:oversub=K] (network fat_tree, rail or rail_only) such as dgx2, 2xdgx1v, 16xdgx2:rail, 4xdgxh100:rail_only or 16xdgx2:fat_tree:oversub=4
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import networkx as nx

from .cluster import MAX_HOSTS, MAX_OVERSUB, NETWORKS, check_hosts, check_oversub, join_hosts
from .dgx import dgx1, dgx1v, dgx2
from .dgx_nvswitch import dgxa100, dgxb200, dgxb300, dgxh100, dgxh200, dgxh800, gb200nvl72, gb300nvl72
from .errors import DgxTopoError, SystemSpecError, UnknownSystemError
from .parts import gpu_attributes
from .unedited import seal

__all__ = ["SYSTEMS", "VARIANTS", "Variant", "HOSTS_PER_SYSTEM", "OPTIONS", "SystemSpec", "parse_system_spec",
           "build", "cluster", "SPEC_GRAMMAR"]

#: Built-in systems by name. ``gb200nvl72`` is one rack of 18 hosts (compute trays) in one
#: NVLink domain (:data:`HOSTS_PER_SYSTEM`); ``8xgb200nvl72`` joins 8 racks.
SYSTEMS: Mapping[str, Callable[[], nx.DiGraph]] = MappingProxyType({
    "dgx1": dgx1, "dgx1v": dgx1v, "dgx2": dgx2,
    "dgxa100": dgxa100, "dgxh100": dgxh100, "dgxh200": dgxh200, "dgxh800": dgxh800, "dgxb200": dgxb200,
    "dgxb300": dgxb300, "gb200nvl72": gb200nvl72, "gb300nvl72": gb300nvl72,
})



@dataclass(frozen=True, slots=True)
class Variant:
    """A built-in system with the GPUs (and parts) of a model people own.

    Attributes
    ----------
    system : str
        The key of :data:`SYSTEMS` it varies.
    gpu : str
        Key of :data:`topo.specs.GPUS` of its GPUs.
    name : str
        Display name (the graph's ``name``).
    description : str
    builder : callable
        Builds the base fabric (``dgxa100("640GB")`` for the DGX A100 640GB, which also has a
        second storage card); the variant's GPUs then replace the base's.
    """

    system: str
    gpu: str
    name: str
    description: str
    builder: Callable[[], nx.DiGraph]


def _dgxa100_640gb() -> nx.DiGraph:
    return dgxa100("640GB")


#: Variants of the built-in systems by name, usable wherever a system name is (``4xdgxa100-80g``).
#: They are not in :data:`SYSTEMS`, whose entries are the distinct fabrics: a variant has its
#: base's NVLink, PCIe and network layers and differs in the GPUs' memory, HBM and clocks.
VARIANTS: Mapping[str, Variant] = MappingProxyType({
    "dgxa100-80g": Variant("dgxa100", "A100-SXM4-80GB", "DGX A100 640GB",
                           "DGX A100 640GB, 8x A100 SXM4 80GB, 6 NVSwitch gen2, NV12 [S38]", _dgxa100_640gb),
    "dgx1v-32g": Variant("dgx1v", "V100-SXM2-32GB", "DGX-1V 32GB",
                         "DGX-1, 8x V100 SXM2 32GB, NVLink 2.0 hybrid cube-mesh [S9]", dgx1v),
    "dgx2h": Variant("dgx2", "V100-SXM3-32GB-H", "DGX-2H",
                     "DGX-2H, 16x V100 SXM3 32GB at 450 W, 12 NVSwitches [S103]", dgx2),
})


def _variant(key: str) -> nx.DiGraph:
    """The fabric of variant ``key``: its base with the variant's GPUs, sealed again
    (:mod:`topo.unedited`): valid by construction, the base's and the catalogue's GPU being so
    (``tests/topo/test_builders.py`` validates every variant)."""
    variant = VARIANTS[key]
    G = variant.builder()
    for _, data in G.nodes(data=True):
        if data.get("kind") == "gpu":
            data.update(gpu_attributes(variant.gpu))
    G.graph.update(name=variant.name, system=key, description=variant.description)
    seal(G)
    return G


def _builder(key: str) -> Callable[[], nx.DiGraph]:
    """The builder of a key of :data:`SYSTEMS` or :data:`VARIANTS`."""
    if key in SYSTEMS:
        return SYSTEMS[key]
    return lambda: _variant(key)


#: Hosts of one copy of a system where it is more than one (a GB200 NVL72 rack: 18 compute
#: trays [S44]); the host limit of a spec counts them.
HOSTS_PER_SYSTEM: Mapping[str, int] = MappingProxyType({"gb200nvl72": 18, "gb300nvl72": 18})

#: The grammar, as help texts and error messages state it.
SPEC_GRAMMAR = ("NAME or NxNAME[:network][:oversub=K] (network fat_tree, rail or rail_only) such as "
                "dgx2, 2xdgx1v, 16xdgx2:rail, 4xdgxh100:rail_only or 16xdgx2:fat_tree:oversub=4")

# Spellings of the networks (after lower-casing) and the network they mean.
_NETWORK_NAMES = MappingProxyType({"fat_tree": "fat_tree", "fattree": "fat_tree", "fat-tree": "fat_tree",
                  "rail": "rail", "rail_only": "rail_only", "railonly": "rail_only",
                  "rail-only": "rail_only"})
#: Options of a cluster spec.
OPTIONS = ("oversub",)
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
        Key of :data:`SYSTEMS` or :data:`VARIANTS`.
    hosts : int
        Copies of the system (1 for a single system): hosts, or racks of
        :data:`HOSTS_PER_SYSTEM` hosts each for a multi-host system such as ``gb200nvl72``.
    network : str or None
        ``"fat_tree"``, ``"rail"`` or ``"rail_only"`` for a cluster (``NxNAME``), None for a
        single system.
    oversub : int
        Leaf down-link to up-link ratio of the network (1: non-blocking).
    """

    system: str
    hosts: int = 1
    network: str | None = None
    oversub: int = 1

    @property
    def is_cluster(self) -> bool:
        """True for ``NxNAME[:network]`` (even with N = 1), False for ``NAME``."""
        return self.network is not None

    def __str__(self) -> str:
        if not self.is_cluster:
            return self.system
        return (f"{self.hosts}x{self.system}" + ("" if self.network == "fat_tree" else f":{self.network}")
                + ("" if self.oversub == 1 else f":oversub={self.oversub}"))


def _system_key(text: str) -> str:
    return text.lower().replace("-", "").replace("_", "")


def _known(text: str) -> str | None:
    """The key of :data:`SYSTEMS` or :data:`VARIANTS` a name spells, or None."""
    wanted = _system_key(text)
    for key in (*SYSTEMS, *VARIANTS):
        if _system_key(key) == wanted:
            return key
    return None


def _show(text: str) -> str:
    """``repr(text)``, cut to a readable length for messages."""
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"


def _malformed(text: str, why: str) -> SystemSpecError:
    return SystemSpecError(f"malformed system spec {_show(text)}: {why}; expected {SPEC_GRAMMAR}")


def _unknown(text: str) -> UnknownSystemError:
    return UnknownSystemError(f"unknown system {_show(text)}: expected one of {', '.join(SYSTEMS)} (or a "
                              f"variant: {', '.join(VARIANTS)}), or a cluster such as 2xdgx1v or "
                              f"16xdgx2:rail")


def _options(text: str, items: list) -> dict:
    """``option=value`` items of a cluster spec, strictly."""
    options: dict = {}
    for item in items:
        key, equals, value = item.partition("=")
        key = key.lower()
        if not equals or key not in OPTIONS:
            raise SystemSpecError(f"unknown option {_show(item)} in {_show(text)}: expected "
                                  f"{' or '.join(f'{k}=K' for k in OPTIONS)} after the network "
                                  f"({', '.join(NETWORKS)})")
        if key in options:
            raise _malformed(text, f"option {key} is given twice")
        if not _COUNT.fullmatch(value) or len(value) > _MAX_COUNT_DIGITS \
                or not 1 <= int(value) <= MAX_OVERSUB:
            raise _malformed(text, f"{key}={_show(value)} is not a whole number from 1 to {MAX_OVERSUB}")
        options[key] = int(value)
    return options


def parse_system_spec(text: str | SystemSpec, *, max_hosts: int = MAX_HOSTS) -> SystemSpec:
    """Parse ``NAME`` or ``NxNAME[:network][:option=value...]`` (module docstring), strictly.

    Parameters
    ----------
    text : str
        The spec.
    max_hosts : int
        Largest host count accepted (default :data:`topo.cluster.MAX_HOSTS`); a copy of a
        multi-host system counts its :data:`HOSTS_PER_SYSTEM` hosts.

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
        ``--max-gpus``), an unknown network or option, an option given twice or with a value
        that is not a whole number from 1 to :data:`topo.cluster.MAX_OVERSUB`, a network or
        option without a host count, an empty part (``2xdgx2:``).
    """
    check_hosts(1, max_hosts=max_hosts)  # max_hosts itself: a whole number >= 1
    if isinstance(text, SystemSpec):
        if text.system not in SYSTEMS and text.system not in VARIANTS:
            raise _unknown(text.system)
        if text.is_cluster:
            if text.network not in NETWORKS:
                raise SystemSpecError(f"unknown network {text.network!r} in {str(text)!r}: expected one "
                                      f"of {', '.join(NETWORKS)}")
            check_oversub(text.oversub)
        check_hosts(text.hosts * HOSTS_PER_SYSTEM.get(text.system, 1), max_hosts=max_hosts,
                    what=f"system {str(text)!r}")
        return text
    if not isinstance(text, str):
        raise SystemSpecError(f"a system spec must be a string, received {type(text).__name__} "
                              f"{reprlib.repr(text)}; expected {SPEC_GRAMMAR}")
    if not text:
        raise SystemSpecError(f"empty system spec: expected {SPEC_GRAMMAR}")
    if any(c.isspace() for c in text) or not text.isprintable():
        raise _malformed(text, "it contains whitespace or unprintable characters")
    head, colon, rest = text.partition(":")
    if not colon and _known(head):
        return SystemSpec(_known(head))
    count_text, x, system_text = head.partition("x")
    if not x:
        raise _unknown(text)
    system = _known(system_text)
    if system is None:
        if _COUNT.fullmatch(count_text) and system_text:
            raise UnknownSystemError(
                f"unknown system {_show(text)}: {_show(system_text)} is not one of {', '.join(SYSTEMS)} "
                f"or {', '.join(VARIANTS)}; expected {SPEC_GRAMMAR}")
        if colon and _known(head):
            raise _malformed(text, f"a network or option (:{rest}) needs a host count")
        raise _unknown(text)
    if not _COUNT.fullmatch(count_text) or int(count_text[:_MAX_COUNT_DIGITS] or "0") < 1:
        raise _malformed(text, f"the host count {_show(count_text)} is not a whole number >= 1")
    per_copy = HOSTS_PER_SYSTEM.get(system, 1)
    if len(count_text) > _MAX_COUNT_DIGITS:
        hosts = max_hosts + 1  # too large to be anything but refused below
        shown = f"{count_text[:6]}... ({len(count_text)} digits)"
    else:
        hosts = int(count_text)
        shown = str(hosts) if per_copy == 1 else f"{hosts} x {per_copy} = {hosts * per_copy}"
    network, options = "fat_tree", {}
    if colon:
        items = rest.split(":")
        if "=" not in items[0]:
            network_text = items.pop(0)
            network = _NETWORK_NAMES.get(network_text.lower())
            if network is None:
                raise SystemSpecError(f"unknown network {_show(network_text)} in {_show(text)}: expected "
                                      f"one of {', '.join(NETWORKS)}")
        options = _options(text, items)
    if hosts * per_copy > max_hosts:
        raise SystemSpecError(
            f"system spec {_show(text)} asks for {shown} hosts, beyond the limit of {max_hosts}: "
            f"expected at most {max_hosts} hosts (raise it with max_hosts=, on the command line "
            f"--max-gpus)")
    return SystemSpec(system, hosts, network, options.get("oversub", 1))


def _template(node_builder):
    if isinstance(node_builder, str):
        spec = parse_system_spec(node_builder)
        if spec.is_cluster:
            raise DgxTopoError(f"cluster copies a single system: expected a name such as "
                               f"{', '.join(SYSTEMS)}, received the cluster {node_builder!r}")
        return _builder(spec.system)()
    if isinstance(node_builder, nx.DiGraph):
        return node_builder
    if callable(node_builder):
        return node_builder()
    raise DgxTopoError(f"node_builder must be a builder or a system name such as "
                       f"{', '.join(SYSTEMS)}, received {node_builder!r}")


def cluster(node_builder: Callable[[], nx.DiGraph] | str | nx.DiGraph, n: int, *, network: str = "fat_tree",
            oversub: int = 1, max_hosts: int = MAX_HOSTS) -> nx.DiGraph:
    """Join ``n`` copies of a system through their compute NICs (see :mod:`topo.cluster`).

    Parameters
    ----------
    node_builder : callable, str or networkx.DiGraph
        A builder returning one system's fabric (``topo.dgx1v``, or
        ``topo.dgx_nvswitch.gb200nvl72`` for racks of 18 hosts), a built-in name
        (``"dgx1v"``), or a system's fabric used as the template (not modified).
    n : int
        Number of copies, 1 to ``max_hosts``; checked before anything is built.
    network : str
        ``"fat_tree"``, ``"rail"`` or ``"rail_only"``.
    oversub : int
        Leaf down-link to up-link ratio (1: non-blocking).
    max_hosts : int
        Host limit (default :data:`topo.cluster.MAX_HOSTS`).

    Returns
    -------
    networkx.DiGraph
        A validated fabric (see :func:`topo.cluster.join_hosts`).

    Raises
    ------
    DgxTopoError
        For a bad builder, host count, network, oversubscription or template.

    Examples
    --------
    >>> cluster("dgx1", 3).graph["name"]
    '3xDGX-1'
    """
    n = check_hosts(n, max_hosts=max_hosts)
    if network not in NETWORKS:
        raise DgxTopoError(f"unknown network {network!r}: expected one of {', '.join(NETWORKS)}")
    oversub = check_oversub(oversub)
    return join_hosts(_template(node_builder), n, network=network, oversub=oversub, max_hosts=max_hosts)


def build(name: str | SystemSpec, *, max_hosts: int = MAX_HOSTS) -> nx.DiGraph:
    """Build a built-in system, or a cluster of them, from a system spec.

    Parameters
    ----------
    name : str or SystemSpec
        ``NAME`` or ``NxNAME[:network][:option=value...]`` (see the module docstring).
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
    DgxTopoError
        For an ``oversub`` beyond what the network's switches can give (a leaf needs an
        up-port: ``oversub`` <= ports - 1).

    Examples
    --------
    >>> build("DGX-2").number_of_nodes()  # 16 GPUs, 12 NVSwitches, 12 PCIe switches, 2 CPUs, 10 NICs
    52
    >>> build("dgx3")
    Traceback (most recent call last):
    ...
    topo.errors.UnknownSystemError: unknown system 'dgx3': expected one of dgx1, dgx1v, dgx2, dgxa100, dgxh100, dgxh200, dgxh800, dgxb200, dgxb300, gb200nvl72, gb300nvl72 (or a variant: dgxa100-80g, dgx1v-32g, dgx2h), or a cluster such as 2xdgx1v or 16xdgx2:rail
    >>> build("2xdgx1v").graph["hosts"]
    2
    >>> G = build("4xdgxh100:rail")
    >>> sorted(G.nodes[leaf]["rail"] for leaf in G.successors("h3.mlx5_0") if leaf.startswith("net."))
    [0]
    """
    spec = parse_system_spec(name, max_hosts=max_hosts)
    if not spec.is_cluster:
        return _builder(spec.system)()
    return join_hosts(_builder(spec.system)(), spec.hosts, network=spec.network, oversub=spec.oversub,
                      max_hosts=max_hosts)
