"""The model's choices handed to NCCL: the config file of NCCL's example tuner plugin.

NCCL's example tuner plugin (NVIDIA/nccl ``plugins/tuner/example/plugin.c`` and its
``nccl_tuner.conf``, as of v2.29.7, commit 56a0c229) reads a CSV file, one rule a line::

    collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]

``#`` lines and blank lines are ignored, and there are no spaces after the commas. For each
collective call the **first** line with the same collective, ``min_bytes <= nBytes <= max_bytes``
(inclusive) and nNodes/nRanks equal (or -1) wins: the plugin zeroes that (algorithm, protocol)
cell of NCCL's cost table so NCCL picks it, and sets the channel count (unless -1). The optional
numPipeOps and regBuff columns, when absent, match any call. NCCL's ``nBytes`` is the total buffer
for all_gather and reduce_scatter and the per-rank buffer otherwise, nccl-tests' size ``S``
(NCCL ``src/enqueue.cc``), the size :func:`models.predict.collectives.estimate` takes.

:func:`tuner_rows` sweeps every power of two up to ``max_bytes`` (default 2^32 - 1, the example
file's "every size"), finds the byte where the model's (algorithm, protocol, channels) changes
between two of them by bisection, and returns one :class:`TunerRow` per band where the choice is
constant; :func:`tuner_config` writes them in the plugin's format. Sizes above ``max_bytes`` match
no line, and NCCL keeps its own choice there. A choice that changes and changes back between two
sampled sizes (powers of two and the bisection's points) is not seen.

**The channels column** is the count NCCL runs, not the search's. The plugin's ``*nChannels``
stands for the channels the collective runs on (``info->nChannels`` in place of
``comm->nChannels``: NCCL v2.18 src/enqueue.cc rescales a forced count's bandwidth by
``bw / comm->nChannels * info->nChannels``), and NCCL by itself runs ``comm->nChannels`` for Ring,
Tree and PAT and ``comm->nvlsChannels`` for NVLS and NVLSTree (v2.27.7-1 src/enqueue.cc
``topoGetAlgoInfo``), each clamped to the release's CTAs: :meth:`Algorithm.blocks
<models.engine.nccl.algorithms.base.Algorithm.blocks>` of the chosen algorithm. On a DGX H100 the
ring's search finds 12 channels and ``ncclTopoPostset`` doubles them to ``comm->nChannels`` = 24
(src/graph/connect.cc); NVLS runs ``comm->nvlsChannels`` = 16 on sm90 whatever its graph's 8 heads.
Writing the search's 12 would halve what NCCL runs. ``-1`` ("keep NCCL's") is not written: the
example plugin sets ``*nChannels = 1`` before it matches and leaves it so for ``-1``
(plugins/tuner/example/plugin.c, v2.29.7), so what NCCL then runs hangs on how the release reads
that 1 [U]; the explicit count is NCCL's own. NCCL's own count shrinks for small sizes (``nBytes <
nc x nThreads x threadThreshold``), which the model does not follow [U]: there a row asks for more
channels than NCCL would pick by itself.

Examples
--------
>>> import topo
>>> rows = tuner_rows(topo.build("dgxh100"), collectives=["all_reduce"])
>>> rows[-1].nccl_line()
'allreduce,1154555,4294967295,nvls,simple,16,1,8'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

import networkx as nx

import topo
from topo.errors import DgxTopoError
from topo.select import GpuIds

from ..engine.fabric import PreparedFabric
from ..engine.nccl.algorithms.catalog import algorithm_named
from ..engine.nccl.profiles import NcclProfile
from ..engine.nccltests import NCCL_COLLECTIVES, collective as _collective
from ..engine.results import gpu_set, tidy_records
from ..predict.collectives import Estimator

__all__ = ["TunerError", "TunerRow", "TunerRows", "tuner_rows", "tuner_config", "parse_tuner_config",
           "MAX_BYTES", "CSV_COLUMNS"]

#: The largest ``max_bytes`` of NCCL's example ``nccl_tuner.conf`` ("0 ... 4294967295" for every
#: size; NVIDIA/nccl plugins/tuner/example/nccl_tuner.conf, v2.29.7). [bytes]
MAX_BYTES = 2**32 - 1

#: The plugin's columns, in its order (plugins/tuner/example/README.md, v2.29.7); the last two are
#: optional and :func:`tuner_config` leaves them out (any call matches).
CSV_COLUMNS = ("collective_type", "min_bytes", "max_bytes", "algorithm", "protocol", "channels", "nNodes",
               "nRanks", "numPipeOps", "regBuff")

# Our names -> the plugin's spellings (plugins/tuner/example/plugin.c, v2.29.7: collective_type
# broadcast/reduce/allgather/reducescatter/allreduce; algorithms tree, ring, collnet_direct,
# collnet_chain, nvls, nvls_tree, pat; protocols ll, ll128, simple).
NCCL_COLLECTIVE_NAMES = MappingProxyType({"broadcast": "broadcast", "reduce": "reduce",
                                          "all_gather": "allgather", "reduce_scatter": "reducescatter",
                                          "all_reduce": "allreduce"})
NCCL_ALGORITHM_NAMES = MappingProxyType({name: name for name in ("tree", "ring", "collnet_direct",
                                                                 "collnet_chain", "nvls", "nvls_tree", "pat")})
NCCL_PROTOCOL_NAMES = MappingProxyType({"LL": "ll", "LL128": "ll128", "Simple": "simple"})


class TunerError(DgxTopoError):
    """A tuner config that cannot be written (a collective or algorithm the plugin does not
    know, one GPU) or read back (a malformed line)."""


@dataclass(frozen=True, slots=True)
class TunerRow:
    """One line of the tuner config: the model's choice over a band of sizes.

    Attributes
    ----------
    collective : str
        Our name (``all_reduce``); :meth:`nccl_line` spells it as the plugin does.
    min_bytes, max_bytes : int
        The band, both ends inclusive (NCCL's nBytes). [bytes]
    algorithm, protocol : str
        What the model chooses there (``nvls``, ``Simple``).
    nchannels : int
        The channels NCCL runs for it (the plugin's ``channels`` column): :meth:`Algorithm.blocks
        <models.engine.nccl.algorithms.base.Algorithm.blocks>`, ``comm->nChannels`` or
        ``comm->nvlsChannels``, not the search's graph count (the module's doc says why).
    nnodes, nranks : int
        NCCL's nodes (the hosts; the hosts of a multi-node NVLink domain, which NCCL fuses, are
        one) and the GPUs of the communicator, as the plugin matches them.
    """

    collective: str
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    nchannels: int
    nnodes: int
    nranks: int

    def covers(self, nbytes: int) -> bool:
        """Whether a call of ``nbytes`` falls in this row's band."""
        return self.min_bytes <= nbytes <= self.max_bytes

    def nccl_line(self) -> str:
        """The row as the plugin reads it (its spellings, no spaces)."""
        return ",".join((NCCL_COLLECTIVE_NAMES[self.collective], str(self.min_bytes), str(self.max_bytes),
                         NCCL_ALGORITHM_NAMES[self.algorithm], NCCL_PROTOCOL_NAMES[self.protocol],
                         str(self.nchannels), str(self.nnodes), str(self.nranks)))

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"collective": self.collective, "min_bytes": self.min_bytes,
                             "max_bytes": self.max_bytes, "algorithm": self.algorithm,
                             "protocol": self.protocol, "nchannels": self.nchannels,
                             "nnodes": self.nnodes, "nranks": self.nranks})


@dataclass(frozen=True, slots=True)
class TunerRows:
    """What :func:`tuner_rows` returns: the rows, in the plugin's file order (per collective,
    ascending bands), and what they were computed for.

    Attributes
    ----------
    rows : tuple of TunerRow
    gpus : tuple of int
    nccl : str
        The NCCL release modelled.
    """

    rows: tuple
    gpus: tuple
    nccl: str

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]

    def row_for(self, collective: str, nbytes: int) -> TunerRow | None:
        """The row the plugin would match for a call (the first that covers it), or None."""
        return next((r for r in self.rows if r.collective == collective and r.covers(nbytes)), None)

    def to_records(self) -> list:
        """Tidy rows, one per band, with the GPU set and the release."""
        return [{**row, "gpus": gpu_set(self.gpus), "nccl": self.nccl} for r in self.rows for row in r.to_records()]


def _collectives(collectives) -> tuple:
    names = []
    for name in collectives:
        spec = _collective(name)  # an unknown name raises the one typed error
        if spec.name not in NCCL_COLLECTIVE_NAMES:
            raise TunerError(f"NCCL's tuner plugin covers {', '.join(NCCL_COLLECTIVE_NAMES)}: expected one of "
                             f"them, received {name!r}")
        names.append(spec.name)
    return tuple(dict.fromkeys(names))


def tuner_rows(G: nx.DiGraph | PreparedFabric, collectives: Iterable[str] = NCCL_COLLECTIVES, gpus: GpuIds = None,
               *, profile: str | NcclProfile | None = None, max_bytes: int = MAX_BYTES) -> TunerRows:
    """The model's choices as tuner-config rows: one per band where (algorithm, protocol, channels)
    is constant, for each collective, from 0 bytes to ``max_bytes``.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collectives : iterable of str
        Of :data:`models.engine.nccltests.NCCL_COLLECTIVES` (default: all five).
    gpus : GPU ids, optional
        The communicator (default: every GPU); nNodes and nRanks come from it.
    profile : str or NcclProfile, optional
        NCCL release (default: the reference one).
    max_bytes : int
        The last band's upper end. [bytes]

    Returns
    -------
    TunerRows

    Raises
    ------
    TunerError
        For a collective the plugin does not cover, a set of one GPU, an algorithm it cannot name.
    topo.GpuSelectionError, models.engine.nccltests.UnknownCollectiveError, SizeError
    """
    max_bytes = int(topo.parse_nbytes(max_bytes))
    if max_bytes < 1:
        raise TunerError(f"expected max_bytes of at least 1, received {max_bytes}")
    names = _collectives(collectives)
    estimator = Estimator(G, profile=profile)
    fabric = estimator.fabric
    nodes = topo.select_gpus(fabric.G, gpus)
    if len(nodes) < 2:
        raise TunerError(f"expected a communicator of at least 2 GPUs for a tuner config, received {len(nodes)}")
    hosts = len({fabric.G.nodes[n]["host"] for n in nodes})
    compute_capability = min(fabric.G.nodes[n]["compute_capability"] for n in nodes)
    ids: tuple = ()
    sizes = [2**k for k in range(max_bytes.bit_length()) if 2**k <= max_bytes]
    if sizes[-1] != max_bytes:
        sizes.append(max_bytes)
    rows = []
    for name in names:
        e = estimator.estimate(name, sizes, gpus)
        ids = ids or tuple(e.gpus)
        # NCCL's node count, which the plugin matches nNodes against and NVLS's channels depend on:
        # the hosts of a multi-node NVLink domain are one NCCL node (the ring search's nnodes).
        nnodes = e.ring.nnodes if e.ring is not None else hosts
        choices = list(zip(e.algorithm.tolist(), e.protocol.tolist(), e.nchannels.tolist()))

        def choice(nbytes: int, name=name) -> tuple:
            one = estimator.estimate(name, nbytes, gpus)
            return str(one.algorithm), str(one.protocol), int(one.nchannels)

        edges = []  # the first byte of each band after the first, and its choice
        for lo, hi, a, b in zip(sizes, sizes[1:], choices, choices[1:]):
            while a != b:  # the first byte in (lo, hi] whose choice differs from lo's
                left, right = lo, hi
                while right - left > 1:
                    middle = (left + right) // 2
                    if choice(middle) == a:
                        left = middle
                    else:
                        right = middle
                a = choice(right)
                edges.append((right, a))
                lo = right
        starts = [(0, choices[0])] + edges
        for (start, (algorithm, protocol, nchannels)), end in zip(starts, [s for s, _ in edges] + [max_bytes + 1]):
            if algorithm not in NCCL_ALGORITHM_NAMES or protocol not in NCCL_PROTOCOL_NAMES:
                raise TunerError(f"NCCL's tuner plugin names algorithms {', '.join(NCCL_ALGORITHM_NAMES)} and "
                                 f"protocols LL, LL128, Simple: expected one of them for {name}, received "
                                 f"{algorithm!r}/{protocol!r}")
            runs = algorithm_named(algorithm).blocks(nchannels, fabric.profile, compute_capability, nnodes)
            rows.append(TunerRow(name, start, end - 1, algorithm, protocol, runs, nnodes, len(nodes)))
    return TunerRows(_merged(rows), ids, fabric.profile.version)


def _merged(rows) -> tuple:
    """Adjacent bands of one collective with the same choice as one (a bisection that changed
    back lands two)."""
    out: list = []
    for row in rows:
        last = out[-1] if out else None
        if last is not None and (last.collective, last.algorithm, last.protocol, last.nchannels) == \
                (row.collective, row.algorithm, row.protocol, row.nchannels) and last.max_bytes + 1 == row.min_bytes:
            out[-1] = TunerRow(last.collective, last.min_bytes, row.max_bytes, row.algorithm, row.protocol,
                               row.nchannels, row.nnodes, row.nranks)
        else:
            out.append(row)
    return tuple(out)


def tuner_config(rows: TunerRows, *, title: str = "") -> str:
    """The rows as NCCL's example tuner plugin reads them: ``#`` comment lines (``title``, the
    columns), then one line per row.

    Examples
    --------
    >>> row = TunerRow("all_gather", 0, 1023, "ring", "LL", 12, 1, 8)
    >>> print(tuner_config(TunerRows((row,), tuple(range(8)), "2.27.7")), end="")
    # NCCL tuner config (plugins/tuner/example), NCCL 2.27.7, GPUs 0-7
    # collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks
    allgather,0,1023,ring,ll,12,1,8
    """
    from topo.select import format_gpu_ids

    lines = [f"# {title}" if title else None,
             f"# NCCL tuner config (plugins/tuner/example), NCCL {rows.nccl}, GPUs {format_gpu_ids(rows.gpus)}",
             "# " + ",".join(CSV_COLUMNS[:8])]
    lines += [row.nccl_line() for row in rows]
    return "\n".join(line for line in lines if line is not None) + "\n"


_BY_NCCL = (MappingProxyType({v: k for k, v in NCCL_COLLECTIVE_NAMES.items()}),
            MappingProxyType({v: k for k, v in NCCL_PROTOCOL_NAMES.items()}))


def parse_tuner_config(text: str) -> tuple:
    """Read a tuner config back as the plugin does (``#`` and blank lines skipped; 8 to 10
    comma-separated fields, the optional two dropped): a tuple of :class:`TunerRow`.

    Raises
    ------
    TunerError
        For a line with another number of fields, an unknown name or a non-integer number,
        naming the line.
    """
    rows = []
    collectives, protocols = _BY_NCCL
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        if not 8 <= len(fields) <= 10:
            raise TunerError(f"tuner config line {number}: expected 8 to 10 comma-separated fields "
                             f"({','.join(CSV_COLUMNS)}), received {len(fields)}")
        coll, lo, hi, algorithm, protocol, channels, nnodes, nranks = fields[:8]
        if coll not in collectives or algorithm not in NCCL_ALGORITHM_NAMES or protocol not in protocols:
            raise TunerError(f"tuner config line {number}: expected a collective, algorithm and protocol "
                             f"the plugin names, received {coll!r}, {algorithm!r}, {protocol!r}")
        try:
            numbers = [int(value) for value in (lo, hi, channels, nnodes, nranks)]
        except ValueError:
            raise TunerError(f"tuner config line {number}: expected integers for min_bytes, max_bytes, "
                             f"channels, nNodes and nRanks, received {line!r}") from None
        rows.append(TunerRow(collectives[coll], numbers[0], numbers[1], algorithm, protocols[protocol],
                             *numbers[2:]))
    return tuple(rows)

