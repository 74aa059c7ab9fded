"""The report's analysis of the built-in systems is shipped (models.present.report.shipped,
analysis.SHIPPED_ANALYSIS): the file must hold a record for every section the report computes on
them and what the models compute today, and a fabric, release or option that differs from the
one shipped is computed.

Recomputing the whole file costs ~5 s of a core (the bounds of every GPU set of a DGX-1 the most),
so the suite checks the key set (every record, cheap: the fingerprints need the fabrics only) and
a fixed sample recomputed: one record of every section, on the DGX H100 where a section is per
system (~3 s); the whole file is recomputed by the test marked slow (``python -m pytest -m slow``,
CI's step after the suite). On failure rewrite the file:
python -c "from models.present.report.analysis import write_shipped_analysis as w; w()"
"""

from __future__ import annotations

import enum
import json
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import topo
from models.engine.fabric import prepare
from models.engine.routes import PathType
from models.present.report import analysis, shipped
from models.present.report.analysis import shipped_plan, system_bounds
from models.studies.survey import BOUND_WORST
from topo.errors import DgxTopoError

# One record of every section (the per-system ones on the DGX H100), recomputed by the suite.
SAMPLE = {("system", "dgxh100"), ("drawing", "dgxh100"), ("generation", "dgxh100"), ("simulated", "dgxh100"),
          ("simulated-generation", "dgxh100"), ("bounds", "dgxh100"), ("seed", "dgx2+2xdgx1v"),
          ("measurement", "dgx1v+dgx2"), ("training", "dgx2+2xdgx1v"), ("schedule", "dgx1v")}


@pytest.fixture(scope="module")
def plan():
    """The shipped plan, each record computed at most once for the module: where the sample and
    the whole file's recompute (marked slow) run in one process (``-m ""``), the recompute reads
    the sample's records."""
    def once(compute):
        value = []

        def computed():
            if not value:
                value.append(compute())
            return value[0]
        return computed
    return [(section, label, key, once(compute)) for section, label, key, compute in shipped_plan()]


def _text(value) -> str:
    return json.dumps(shipped.encode(value, {}), separators=(",", ":"))


def test_the_shipped_file_holds_a_record_of_every_section_of_the_built_in_systems(plan):
    records = shipped.shipped_records()["records"]
    assert {key: (section, label) for section, label, key, _ in plan} == \
        {key: (r["section"], r["label"]) for key, r in records.items()}
    sections = {section for section, *_ in plan}
    assert sections == {"system", "drawing", "generation", "simulated", "simulated-generation", "bounds", "seed",
                        "measurement", "training", "schedule"}
    assert {(section, label) for section, label, *_ in plan} >= SAMPLE


def test_a_sample_of_the_shipped_records_is_what_the_models_compute(plan):
    records = shipped.shipped_records()
    for section, label, key, compute in plan:
        if (section, label) in SAMPLE:
            shipped_value = shipped.shipped_record(key, records)
            assert _text(shipped_value) == _text(compute()), (section, label)


@pytest.mark.slow  # the whole file recomputed (~5 s of a core): the suite checks the keys and a sample
def test_the_whole_shipped_file_is_what_the_models_compute(plan):
    assert shipped.shipped_text_of_file() == analysis.shipped_analysis_text(plan)


def test_a_shipped_record_reads_back_as_the_objects_it_was_written_from(plan):
    records = shipped.shipped_records()
    key = next(key for section, label, key, _ in plan if (section, label) == ("system", "dgxh100"))
    a = shipped.shipped_record(key, records)
    assert type(a) is analysis.SystemAnalysis and a.G is None
    assert a.e8.ring.type_intra in PathType and a.e8.busbw.dtype == np.float64
    assert a.e8.point().busbw == pytest.approx(a.row.busbw_8)
    # The file's text is the encoding of what it decodes to: nothing is lost or reordered.
    classes = {name: i for i, name in enumerate(records["classes"])}
    assert json.dumps(shipped.encode(a, classes), separators=(",", ":")) == records["records"][key]["value"]
    assert len(classes) == len(records["classes"])


def test_a_fabric_is_read_from_the_shipped_file_only_when_it_is_the_one_shipped(monkeypatch):
    computed = []
    original = analysis._system_bounds
    monkeypatch.setattr(analysis, "_system_bounds", lambda *a: computed.append(a) or original(*a))
    shipped_bounds = system_bounds(prepare(topo.build("dgxh100")))
    assert not computed and shipped_bounds.sets and shipped_bounds.system == "dgxh100"
    halved = system_bounds(topo.scale_kind(topo.build("dgxh100"), 0.5, kind="nvlink"))  # another fabric
    assert len(computed) == 1
    assert [s.gpus for s in halved.sets] == [s.gpus for s in shipped_bounds.sets]
    assert all(h.bound_busbw < s.bound_busbw for h, s in zip(halved.sets, shipped_bounds.sets))
    assert system_bounds(topo.build("dgxh100"), worst=BOUND_WORST - 1).worst == shipped_bounds.worst[:BOUND_WORST - 1]
    assert len(computed) == 2  # another worst: computed
    other_release = prepare(topo.build("dgxh100"), nccl="2.18.5")
    assert shipped.shipped_record(shipped.fingerprint("bounds", analysis._content(other_release), BOUND_WORST)) is None


def test_a_report_computes_what_is_not_shipped_and_reads_the_rest(monkeypatch):
    computed = []
    original = analysis._analysed
    monkeypatch.setattr(analysis, "_analysed", lambda f: computed.append(f.name) or original(f))
    G = topo.build("dgxh100")
    halved = topo.scale_kind(topo.build("dgxh100"), 0.5, kind="nvlink")
    halved.graph["name"] = "DGX H100, half NVLink"
    report = analysis.analyse_report([topo.build("dgxb200"), G, halved])
    assert computed == ["DGX H100, half NVLink"]
    shipped_row, halved_row = report.systems[1].row, report.systems[2].row
    assert report.systems[1].G is G  # a shipped analysis is drawn on the caller's graph
    assert halved_row.busbw_8 < shipped_row.busbw_8


# ------------------------------------------------------------------------------ the encoding
class _Colour(enum.Enum):
    RED = 1


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                   | st.dictionaries(st.integers() | st.text(max_size=3) | st.tuples(st.integers()), inner, max_size=3)),
    max_leaves=12)


@given(_VALUES)
def test_what_is_encoded_decodes_to_an_equal_value_of_the_same_types(value):
    text = json.dumps(shipped.encode(value))
    back = shipped.decode(json.loads(text))
    assert back == value and repr(back) == repr(value)  # repr: tuples stay tuples, ints ints
    assert repr(shipped.loads(text)) == repr(value)  # decoded as it is parsed: the same


def test_numpy_values_and_path_types_keep_their_types():
    value = (np.array([8, 2**33]), np.array("ring"), np.float64(math.inf), PathType.NVL, frozenset({1, 2}))
    classes = {}
    back = shipped.decode(json.loads(json.dumps(shipped.encode(value, classes))), list(classes))
    assert repr(shipped.loads(json.dumps(shipped.encode(value, {})), list(classes))) == repr(back)
    assert back[0].dtype == np.int64 and back[0].tolist() == [8, 2**33]
    assert back[1].shape == () and str(back[1]) == "ring"
    assert type(back[2]) is np.float64 and back[2] == math.inf
    assert back[3] is PathType.NVL and back[4] == frozenset({1, 2})


def test_what_cannot_be_shipped_is_refused():
    with pytest.raises(DgxTopoError, match="cannot ship a object"):
        shipped.encode(object())
    with pytest.raises(DgxTopoError, match="expected a class of models or topo"):
        shipped.decode({"!": "os:PathLike", "v": "x"})
    with pytest.raises(DgxTopoError, match="expected an encode"):
        shipped.decode({"what": 1})
    with pytest.raises(DgxTopoError, match="expected an encode"):
        shipped.loads('[1, {"what": 1}]')
    with pytest.raises(DgxTopoError, match="expected a class of models or topo"):
        shipped.decode(shipped.encode(_Colour.RED))  # an enum of another package is not read


def test_the_report_of_the_built_in_systems_computes_nothing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("computed a section the file ships")
    for name in ("_analysed", "_generation_of", "_seed_compared", "_measurement_compared", "_system_bounds",
                 "_training_planned", "_simulated_step"):
        monkeypatch.setattr(analysis, name, refuse)
    report = analysis.analyse_report(analysis.report_fabrics())
    assert len(report.systems) == len(topo.SYSTEMS) and report.training.searches[0].best.fits
    assert all(drawn is not None for drawn in report.drawings)  # the page draws none of them
    assert [s.system for s in report.simulated] == ["dgx1", "dgx1v", "dgxa100", "dgxh100", "dgxh200", "dgxb200",
                                                         "dgxb300"]
