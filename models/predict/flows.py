"""Max-min fair sharing of links by flows: progressive filling.

A *flow* is something that moves data over several links at once (here: the data phase of one
collective or one send, :mod:`models.predict.decompose`). Alone, flow ``f`` would run at its own
speed and fill link ``l`` to the fraction ``usage[f, l]`` of the link's capacity (at most 1:
alone, a flow never needs more than a link has). Flows running together get a *speed factor*
``x[f]`` in [0, 1] (the share of their alone speed they reach), subject to every link::

    sum over f of usage[f, l] x x[f] <= 1

:func:`max_min_share` gives the max-min fair factors by progressive filling (Bertsekas and
Gallager, "Data Networks", 2nd ed., 1992, section 6.5.2): every flow not yet frozen raises the
share of the link it fills most (its *peak*, ``max over l of usage[f, l]``) at the same pace;
a link that fills freezes the flows crossing it, a flow that reaches its own speed freezes
alone. So two flows that both fill a link alone split it half and half, and a flow that needs
only a third of the link keeps its speed beside one that would fill it (it takes its third,
the other the rest). Flows on no link run at their own speed.

The computation is vectorised over the nonzero usages (numpy ``bincount``), one pass per
distinct bottleneck, so many flows on a large fabric cost one array operation per pass.

Examples
--------
>>> import numpy as np
>>> flows = np.array([0, 1]); links = np.array([0, 0]); usage = np.array([1.0, 1.0])
>>> max_min_share(2, flows, links, usage).tolist()      # two flows filling one link alone
[0.5, 0.5]
>>> max_min_share(2, flows, links, np.array([1/3, 1.0])).round(6).tolist()  # a third and a full one
[1.0, 0.666667]
"""

from __future__ import annotations

import numpy as np

from topo.errors import DgxTopoError

__all__ = ["FlowError", "max_min_share", "link_utilisation"]

# A link whose spare share is below this is full; a flow this close to its own speed is done.
_EPS = 1e-12


class FlowError(DgxTopoError):
    """Malformed flow data (shapes, negative or non-finite usage)."""


def _check(n_flows, flows, links, usage) -> tuple:
    flows = np.asarray(flows, dtype=np.int64)
    links = np.asarray(links, dtype=np.int64)
    usage = np.asarray(usage, dtype=np.float64)
    if not (flows.shape == links.shape == usage.shape and flows.ndim == 1):
        raise FlowError(f"expected flows, links and usage of one length, received shapes "
                        f"{flows.shape}, {links.shape}, {usage.shape}")
    if usage.size and (not np.all(np.isfinite(usage)) or usage.min() < 0 or usage.max() > 1 + 1e-9):
        raise FlowError("expected every usage in [0, 1] (a flow alone never needs more than a link has)")
    if flows.size and (flows.min() < 0 or flows.max() >= n_flows):
        raise FlowError(f"expected flow indices in [0, {n_flows}), received {flows.min()}..{flows.max()}")
    if links.size and links.min() < 0:
        raise FlowError("expected link indices >= 0")
    return flows, links, usage


def max_min_share(n_flows: int, flows, links, usage, *, check: bool = True, peaks=None) -> np.ndarray:
    """Max-min fair speed factors of flows sharing links (progressive filling).

    Parameters
    ----------
    n_flows : int
        Number of flows (flows with no usage entry run at their own speed).
    flows, links : array_like of int
        One entry per (flow, link) pair that the flow uses: the flow's index and the link's.
    usage : array_like of float
        For that pair, the fraction of the link's capacity the flow fills alone, in [0, 1].
    check : bool
        Validate the arrays (a caller that built them itself may skip it).
    peaks : array_like of float, optional
        Per flow, the share it fills on its busiest link when it stands for several identical
        flows on different links (:mod:`models.predict.simulate`'s folded replicas): the share of
        *one* of them. Default: the largest usage of the flow.

    Returns
    -------
    numpy.ndarray
        Per flow, its speed factor in (0, 1]: the share of its alone speed it gets.

    Raises
    ------
    FlowError
        For arrays of different lengths, usage outside [0, 1] or bad indices.

    Notes
    -----
    Only links whose flows would together need more than the link has (*tight* links) can
    slow anyone: a flow on no tight link runs at its own speed whatever the others do, so the
    filling runs on the flows that touch a tight link only, which is exact and, on a fabric
    whose concurrent groups share nothing, costs one ``bincount``.

    Examples
    --------
    >>> import numpy as np
    >>> # flow 0 crosses links 0 and 1; flows 1 and 2 cross link 1 only; all fill what they cross
    >>> max_min_share(3, [0, 0, 1, 2], [0, 1, 1, 1], [1.0, 1.0, 1.0, 1.0]).round(4).tolist()
    [0.3333, 0.3333, 0.3333]
    """
    if check:
        flows, links, usage = _check(n_flows, flows, links, usage)
    x = np.ones(n_flows)
    if not usage.size:
        return x
    demand = np.bincount(links, weights=usage)
    tight = demand > 1 + 1e-9
    if not tight.any():
        return x
    touched = np.zeros(n_flows, dtype=bool)
    touched[flows[tight[links]]] = True
    keep = touched[flows] & (usage > 0)
    flows, links, usage = flows[keep], links[keep], usage[keep]
    # Compress the links to those in use: the passes then cost the nonzero entries only.
    used, links = np.unique(links, return_inverse=True)
    n_links = used.size
    peak = np.zeros(n_flows)
    np.maximum.at(peak, flows, usage)
    if peaks is not None:
        peak = np.where(peak > 0, np.asarray(peaks, dtype=np.float64), 0.0)
    weight = usage / peak[flows]  # usage per unit of the flow's peak share
    share = np.zeros(n_flows)  # the peak share each flow has reached
    spare = np.ones(n_links)
    active = peak > 0
    while active.any():
        on = active[flows]
        pace = np.bincount(links[on], weights=weight[on], minlength=n_links)
        loaded = pace > _EPS
        step_link = np.min(spare[loaded] / pace[loaded]) if loaded.any() else np.inf
        step_flow = np.min(peak[active] - share[active])
        step = max(0.0, min(step_link, step_flow))
        share[active] += step
        spare -= pace * step
        full = loaded & (spare <= _EPS * np.maximum(1.0, pace))
        frozen = active & (share >= peak - _EPS)
        if full.any():
            frozen[np.unique(flows[full[links] & on])] = True
        if not frozen.any():  # rounding: freeze the flow closest to its limit
            frozen[np.flatnonzero(active)[0]] = True
        active &= ~frozen
    x[touched] = np.minimum(share[touched] / np.where(peak[touched] > 0, peak[touched], 1.0), 1.0)
    return x


def link_utilisation(n_links: int, flows, links, usage, factors) -> np.ndarray:
    """Per link, the fraction of its capacity the flows fill at their speed factors.

    Parameters
    ----------
    n_links : int
    flows, links, usage : array_like
        As for :func:`max_min_share`.
    factors : array_like of float
        Per flow, its speed factor (0 for a flow not moving data).

    Returns
    -------
    numpy.ndarray
        ``sum over f of usage[f, l] x factors[f]``, of length ``n_links``.

    Examples
    --------
    >>> link_utilisation(2, [0, 1], [1, 1], [0.5, 1.0], [1.0, 0.5]).tolist()
    [0.0, 1.0]
    """
    flows = np.asarray(flows, dtype=np.int64)
    factors = np.asarray(factors, dtype=np.float64)
    return np.bincount(np.asarray(links, dtype=np.int64),
                       weights=np.asarray(usage, dtype=np.float64) * factors[flows], minlength=n_links)
