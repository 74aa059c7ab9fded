"""A simulated step as pictures: a Chrome trace, a Gantt chart, link utilisation as a heat map.

:func:`chrome_trace` writes the Trace Event Format that Perfetto (ui.perfetto.dev) and
chrome://tracing open ("Trace Event Format", Google, the document the Chromium project links
from its tracing pages): a JSON object with ``traceEvents``; complete events ``"ph": "X"``
with ``ts`` and ``dur`` in microseconds, ``pid`` and ``tid``; metadata events ``"ph": "M"``
naming processes and threads; counter events ``"ph": "C"``. Here every GPU is a process with
one thread per stream (its compute stream, one per communicator it joins) and the busiest links
are counter tracks of one more process, their share of capacity over time.

Examples
--------
>>> import topo
>>> from models.predict.simulate import simulate, task_graph
>>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1], "bytes": 2**20}]}))
>>> trace = chrome_trace(r)
>>> sorted({e["ph"] for e in trace["traceEvents"]})
['C', 'M', 'X']
"""

from __future__ import annotations

__all__ = ["chrome_trace", "gantt_figure", "gantt_figure_dict", "link_heatmap_figure"]

_LINK_PID = 1_000_000  # the process of the link counters, after every GPU's


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def chrome_trace(result, *, top_links: int = 8) -> dict:
    """A simulated step in the Trace Event Format (module docstring).

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    top_links : int
        Busiest links shown as counter tracks.

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``, ready for
        ``json.dump``.
    """
    events = []
    threads: dict = {}  # (gpu, stream) -> tid
    for gpu in sorted({g for t in result.tasks for g in t.gpus}):
        events.append({"ph": "M", "name": "process_name", "pid": gpu, "tid": 0, "args": {"name": f"GPU {gpu}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": gpu, "tid": 0, "args": {"sort_index": gpu}})
    for t in result.tasks:
        for gpu in t.gpus:
            key = (gpu, t.stream)
            if key not in threads:
                tid = threads[key] = len([k for k in threads if k[0] == gpu])
                events.append({"ph": "M", "name": "thread_name", "pid": gpu, "tid": tid,
                               "args": {"name": t.stream}})
            args = {"kind": t.kind, "alone_us": _us(t.alone)}
            if not t.is_compute:
                args.update(bytes=t.nbytes, algorithm=t.algorithm, protocol=t.protocol,
                            startup_us=_us(t.data_start - t.start))
            if t.critical:
                args["critical"] = True
            events.append({"ph": "X", "name": f"{t.op} {t.id}", "cat": t.kind, "pid": gpu, "tid": threads[key],
                           "ts": _us(t.start), "dur": _us(t.end - t.start), "args": args})
    edges, starts, ends, shares = result.link_series(top=top_links)
    if len(edges):
        events.append({"ph": "M", "name": "process_name", "pid": _LINK_PID, "tid": 0,
                       "args": {"name": f"busiest links (share of capacity, top {len(edges)})"}})
        for j, (u, v) in enumerate(edges):
            name = f"{u}->{v}"
            last = None
            for i in range(starts.size):
                value = round(float(shares[j, i]), 4)
                if value != last:
                    events.append({"ph": "C", "name": name, "pid": _LINK_PID, "tid": 0, "ts": _us(starts[i]),
                                   "args": {"share": value}})
                    last = value
                if i + 1 == starts.size or ends[i] != starts[i + 1]:  # a gap: nothing moves
                    events.append({"ph": "C", "name": name, "pid": _LINK_PID, "tid": 0, "ts": _us(ends[i]),
                                   "args": {"share": 0.0}})
                    last = 0.0
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"fabric": result.fabric, "name": result.name, "step_time_us": _us(result.step_time)}}


def gantt_figure(result, *, max_rows: int = 64):
    """The step as a Gantt chart: one row per (GPU group, stream), one bar per task, by kind.

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    max_rows : int
        Rows shown (the first streams in task order); the title says how many were left out.

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> import topo
    >>> from models.predict.simulate import simulate, task_graph
    >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
    ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1], "bytes": 2**20, "kind": "dp_comm"},
    ...     {"id": "mm", "op": "compute", "gpu": 0, "seconds": 1e-4, "after": ["ar"]}]}))
    >>> [t.name for t in gantt_figure(r).data]      # one bar trace per kind
    ['dp_comm', 'compute']
    """
    from topo.plot_style import build_figure

    return build_figure(**gantt_figure_dict(result, max_rows=max_rows))


def gantt_figure_dict(result, *, max_rows: int = 64) -> dict:
    """:func:`gantt_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`): ``{"data": [...], "layout": {...}}``."""
    from topo.plot_style import axis_title, style_layout, time_unit

    unit, factor = time_unit(result.step_time)  # the unit the step reads best in, as the tables
    rows: dict = {}
    for t in result.tasks:
        row = f"{t.stream} [{_gpus(t.gpus)}]"
        rows.setdefault(row, []).append(t)
    names = list(rows)[:max_rows]
    kinds: dict = {}
    for row in names:
        for t in rows[row]:
            kinds.setdefault(t.kind, {"x": [], "base": [], "y": [], "text": []})
            k = kinds[t.kind]
            k["x"].append((t.end - t.start) * factor)
            k["base"].append(t.start * factor)
            k["y"].append(row)
            k["text"].append(t.id)
    data = [dict(type="bar", name=kind, orientation="h", x=k["x"], base=k["base"], y=k["y"], hovertext=k["text"],
                 hovertemplate="%{hovertext}: %{base:.3f} + %{x:.3f} " + unit) for kind, k in kinds.items()]
    hidden = len(rows) - len(names)
    more = f" ({hidden} more streams not shown)" if hidden else ""
    layout = style_layout(title=f"{result.name or 'task graph'} on {result.fabric}: step "
                          f"{result.step_time * factor:.2f} {unit}{more}", default_height=200 + 18 * len(names))
    layout.update(barmode="overlay", xaxis=dict(title=dict(text=axis_title("time", unit))),
                  yaxis={"autorange": "reversed"})
    return dict(data=data, layout=layout)


def link_heatmap_figure(result, *, top: int = 16, bins: int = 200):
    """The busiest links' share of capacity over the step, as a heat map (time in ``bins`` columns).

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    top : int
        Links shown (the busiest by mean share).
    bins : int
        Columns of time.

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> import topo
    >>> from models.predict.simulate import simulate, task_graph
    >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
    ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26}]}))
    >>> link_heatmap_figure(r, top=2, bins=4).data[0].z.shape
    (2, 4)
    """
    import numpy as np
    import plotly.graph_objects as go

    from topo.plot_style import axis_title, style_figure, time_unit

    edges, starts, ends, shares = result.link_series(top=top)
    step = result.step_time if result.step_time > 0 else 1.0
    grid = np.linspace(0.0, step, bins + 1)
    z = np.zeros((len(edges), bins))
    for i in range(starts.size):  # each interval spread over the columns it overlaps
        lo, hi = starts[i], ends[i]
        first, last = np.searchsorted(grid, lo, "right") - 1, np.searchsorted(grid, hi, "left")
        for b in range(max(first, 0), min(last, bins)):
            overlap = min(hi, grid[b + 1]) - max(lo, grid[b])
            if overlap > 0:
                z[:, b] += shares[:, i] * overlap / (grid[b + 1] - grid[b])
    unit, factor = time_unit(step)
    fig = go.Figure(go.Heatmap(z=z, x=(grid[:-1] + grid[1:]) / 2 * factor, y=[f"{u}->{v}" for u, v in edges],
                               zmin=0, zmax=1, colorscale="Viridis", colorbar={"title": "share"}))
    fig.update_layout(xaxis_title=axis_title("time", unit))
    return style_figure(fig, title=f"busiest links on {result.fabric}: share of capacity over the step",
                        default_height=200 + 22 * len(edges))


def _gpus(gpus) -> str:
    from topo.select import format_gpu_ids

    return format_gpu_ids(gpus)
