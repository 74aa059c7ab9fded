"""The words of models.present: one formatting of each quantity (format), the working of any
result (explain) and one HTML page (page)."""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, strategies as st

import topo
from models.predict.collectives import estimate
from models.present.explain import explain, explain_estimate
from models.present.format import format_bytes, format_gbps, format_percent, format_us
from models.present.page import FigureDivs, figures_page, html_page
from topo.errors import DgxTopoError


@pytest.mark.parametrize("nbytes, text", [(0, "0 B"), (1023, "1023 B"), (1024, "1 KiB"), (1000, "1000 B"),
                                          (3 * 2**29, "1.5 GiB"), (2**40, "1 TiB"), (2**50, "1024 TiB")])
def test_format_bytes(nbytes, text):
    assert format_bytes(nbytes) == text


@pytest.mark.parametrize("value, kwargs, text", [
    (0.0512, {"signed": True, "space": True}, "+5.1 %"), (-0.2, {"signed": True, "space": True}, "-20.0 %"),
    (0.0512, {}, "5.1%"), (0.875, {"digits": 0}, "88%"), (1.0, {"digits": 0, "space": True}, "100 %"),
    (None, {}, "-"), (math.nan, {"missing": "n/a"}, "n/a"), (math.inf, {}, "-"),
])
def test_format_percent(value, kwargs, text):
    assert format_percent(value, **kwargs) == text


@given(st.floats(-10, 10, allow_nan=False))
def test_percent_is_pythons_percent_format(fraction):
    # The tables' f"{x:.1%}" and f"{x:+.0%}" are exactly what format_percent writes, except that
    # a value that rounds to zero is written as zero, never "-0.0%".
    def python(spec):
        text = format(fraction, spec)
        return text.replace("-", "+" if "+" in spec else "", 1) if float(text[:-1]) == 0 else text
    assert format_percent(fraction) == python(".1%")
    assert format_percent(fraction, 0, signed=True) == python("+.0%")


def test_format_gbps_and_us():
    assert format_gbps(25e9) == "25.00" and format_gbps(np.float64(1.25e9), 1) == "1.2"
    assert format_gbps(None) == "-" and format_gbps(math.nan, missing="n/a") == "n/a"
    assert format_us(1.5e-6) == "1.50" and format_us(2e-3, 0) == "2000" and format_us(math.inf) == "-"


def test_explain_dispatches_on_the_result_type():
    e = estimate(topo.dgx1v(), "all_reduce", 2**20, [0, 1])
    assert explain(e) == explain_estimate(e)
    assert explain(e.measurement).startswith("Measurement model for all_reduce on 2 GPUs")
    with pytest.raises(DgxTopoError, match="expected a result with a working .* received str"):
        explain("an estimate")


def test_one_page_for_every_figure_page():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    text = figures_page("A <title>", [fig, fig], ["line one\n<b>two</b>"])
    assert text.startswith("<!DOCTYPE html>") and text.count("<title>A &lt;title&gt;</title>") == 1
    assert "<h1>A &lt;title&gt;</h1>" in text and "<pre>line one\n&lt;b&gt;two&lt;/b&gt;</pre>" in text
    assert re.findall(r"data-figure='([^']+)'", text) == ["figure-1", "figure-2"]
    assert text.count("Plotly.Plots.resize") == 1 and not re.search(r"<script[^>]*\ssrc=", text, re.I)
    # plotly.js once, in the head, whatever the number of figures
    assert html_page("x", []).count("<script type='text/javascript'>") == text.count("<script type='text/javascript'>")
    divs = FigureDivs()
    divs.div(fig, "a")
    assert divs.count == 1


@given(st.floats(min_value=-0.0004999, max_value=0.0004999))
def test_a_percent_that_rounds_to_zero_is_written_as_zero(fraction):
    """The sweep's loss column (a failure can speed a case up by a hair): never ``-0.0%``."""
    assert format_percent(fraction) == "0.0%" and format_percent(fraction, signed=True) == "+0.0%"
    assert format_percent(-0.0123, signed=True, space=True) == "-1.2 %"
