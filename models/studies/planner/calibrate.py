"""A training step's compute model fitted to one step the user measured (:func:`calibrate_plan`)."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import networkx as nx

from ...engine.fabric import PreparedFabric
from ..workload import Workload
from .layouts import Context, best, check_options, evaluate, prepare_job, ranked, search_options, simulate_plans
from .records import Calibration, DoesNotFitError, Layout, Plan, PlanError, PlanWarning

__all__ = ["calibrate_plan", "parse_measured", "MEASURED_GRAMMAR"]

#: The grammar of a measured step (:func:`parse_measured`).
MEASURED_GRAMMAR = ("a time per iteration (1.25s, 850ms) or TFLOP/s per GPU (150tflops: model "
                    "FLOPs, as MFU counts them; 150tflops:hardware: with recomputation, as Megatron "
                    "publishes them)")


_MEASURED = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*(s|ms|tflops(?::model|:hardware)?)\s*",
                       re.IGNORECASE)


def parse_measured(text: str) -> tuple:
    """A measured step: ``(kind, value)`` with kind ``"time"`` [s], ``"model_tflops"`` or
    ``"hardware_tflops"`` [TFLOP/s per GPU].

    Raises
    ------
    PlanError
        For text that is not :data:`MEASURED_GRAMMAR`, or a value that is not positive and finite.

    Examples
    --------
    >>> parse_measured("850ms"), parse_measured("150tflops:hardware")
    (('time', 0.85), ('hardware_tflops', 150.0))
    """
    found = _MEASURED.fullmatch(text) if isinstance(text, str) and len(text) <= 40 else None
    if found is None:
        raise PlanError(f"expected a measured step, {MEASURED_GRAMMAR}; received {str(text)[:40]!r}")
    value, unit = float(found.group(1)), found.group(2).lower()
    if not 0 < value < math.inf:
        raise PlanError(f"a measured step must be positive and finite, received {text!r}")
    if unit == "s":
        return "time", value
    if unit == "ms":
        return "time", value / 1e3
    return ("hardware_tflops" if unit.endswith(":hardware") else "model_tflops"), value


def _fit_simulated(w, ctx: Context, layout: Layout, options: dict, target: float, scale: float) -> float:
    """The compute scale whose simulated step of ``layout`` is ``target`` [s], by secant steps
    from the analytical fit ``scale`` (the simulated step grows with the scale)."""
    def error(k):
        cm = dataclasses.replace(ctx.cm, scale=k)
        p = evaluate(ctx, layout, options["tp_groups"], cm)
        return simulate_plans(w, ctx, [p], 1, options["max_events"], cm)[0].step_time / target - 1

    k0, e0 = scale, error(scale)
    k1 = k0 / (1 + e0)  # the step proportional to the scale: a first guess
    for _ in range(8):
        if abs(e0) < 1e-6:
            break
        e1 = error(k1)
        if e1 == e0 or abs(e1) < 1e-6:
            k0, e0 = k1, e1
            break
        k0, k1, e0 = k1, max(k1 - e1 * (k1 - k0) / (e1 - e0), k1 / 16), e1
    return k0


def calibrate_plan(workload: str | Workload, G: nx.DiGraph | PreparedFabric, measured: str, **options: Any) -> Plan:
    """Fit the compute model to one measured step and return the calibrated plan.

    The layout measured is :func:`plan`'s with the same options (fix ``tp``, ``pp``, ``dp`` and
    the rest as they were run). The step fitted is the plan's own: simulated when the plan is
    (the analytical fit first, then secant steps on the simulated step). One number fits one
    constant: a multiplier ``scale`` on every
    kernel's time (products, attention, memory-bound passes, the optimizer), so the predicted
    step equals the measured one; communication is not scaled. The fitted plan's
    ``calibration`` shows the fractions of peak the measurement implies beside the defaults;
    pass ``compute_scale=scale`` to :func:`plan` or :func:`search` to predict other layouts
    and scales with it.

    Parameters
    ----------
    workload, G
        As for :func:`search`.
    measured : str
        :data:`MEASURED_GRAMMAR`: ``"1.25s"``, ``"850ms"``, ``"150tflops"`` (model FLOPs per
        GPU), ``"150tflops:hardware"`` (with recomputation).
    **options
        As for :func:`search` (``compute_scale`` excepted).

    Raises
    ------
    PlanError
        For a malformed measurement, a layout that does not fit (:class:`DoesNotFitError`: it
        cannot have been measured), or a measurement shorter than the communication the model
        predicts alone.
    """
    if "compute_scale" in options:
        raise PlanError("calibrate_plan fits compute_scale: expected no compute_scale option")
    kind, value = parse_measured(measured)
    check_options("calibrate_plan", options)
    options = {**search_options(), **options}
    w, ctx, n, global_batch = prepare_job(workload, G, **options)
    base = best(ranked(w, ctx, n, global_batch, options))
    if not base.fits:
        raise DoesNotFitError(base)
    if kind == "time":
        target = value
    else:
        flops = base.model_flops if kind == "model_tflops" else base.hardware_flops
        target = flops / (value * 1e12 * base.layout.ngpus)

    def step(scale):
        return evaluate(ctx, base.layout, options["tp_groups"],
                         dataclasses.replace(ctx.cm, scale=scale)).step_time

    low, high = 1e-4, 1e4
    if step(low) > target:
        floor = sum(c.exposed for c in base.components if c.name.endswith("_comm"))
        raise PlanError(f"the measured step ({target:.4g} s) is shorter than the communication the model "
                        f"predicts alone ({floor:.4g} s exposed): expected the layout, batch and system "
                        "that were measured")
    if step(high) < target:
        raise PlanError(f"the measured step ({target:.4g} s) is more than {high:g} times the predicted compute: "
                        "expected the layout, batch and system that were measured")
    for _ in range(48):  # bisection in log space (1e8 to 1 + 1e-13): the step grows with the scale
        mid = math.sqrt(low * high)
        if step(mid) < target:
            low = mid
        else:
            high = mid
    scale = math.sqrt(low * high)
    cm = ctx.cm
    if base.simulated:
        scale = _fit_simulated(w, ctx, base.layout, options, target, scale)
    default = {"gemm_efficiency": cm.gemm_efficiency, "memory_efficiency": cm.memory_efficiency}
    if cm.stack.flash_attention:
        default["attention_efficiency"] = cm.attention_efficiency
    fitted = {k: v / scale for k, v in default.items()}
    fit = Calibration(str(measured), target, base.step_time, scale, default, fitted, base.layout.label())
    fitted_cm = dataclasses.replace(cm, scale=scale)
    calibrated = evaluate(ctx, base.layout, options["tp_groups"], fitted_cm)
    if base.simulated:
        calibrated = simulate_plans(w, ctx, [calibrated], 1, options["max_events"], fitted_cm)[0]
    warnings = calibrated.warning_codes + ((PlanWarning.ABOVE_PEAK,) if max(fitted.values()) > 1 else ())
    return dataclasses.replace(calibrated, calibration=fit, warning_codes=warnings)


