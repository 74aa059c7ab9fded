"""The report's bounds of the built-in systems are shipped (models.present.report.analysis,
SHIPPED_BOUNDS): the file must be what the models compute today, and a fabric that differs from
the one shipped is computed."""

from __future__ import annotations

from importlib import resources

import topo
from models.engine.fabric import prepare
from models.present.report import analysis
from models.present.report.analysis import BOUND_WORST, SHIPPED_BOUNDS, shipped_bounds_text, system_bounds


def test_shipped_bounds_are_what_the_models_compute():
    # On failure: python -c "from models.present.report.analysis import write_shipped_bounds as w; w()"
    shipped = resources.files(analysis.__package__).joinpath(*SHIPPED_BOUNDS).read_text(encoding="utf-8")
    assert shipped == shipped_bounds_text()


def test_a_fabric_is_read_from_the_shipped_file_only_when_it_is_the_one_shipped(monkeypatch):
    computed = []
    original = analysis._system_bounds
    monkeypatch.setattr(analysis, "_system_bounds", lambda *a: computed.append(a) or original(*a))
    shipped = system_bounds(prepare(topo.build("dgxh100")))
    assert not computed and shipped.sets and shipped.system == "dgxh100"
    halved = system_bounds(topo.scale_kind(topo.build("dgxh100"), 0.5, kind="nvlink"))  # another fabric
    assert len(computed) == 1
    assert [s.gpus for s in halved.sets] == [s.gpus for s in shipped.sets]
    assert all(h.bound_busbw < s.bound_busbw for h, s in zip(halved.sets, shipped.sets))
    assert system_bounds(topo.build("dgxh100"), worst=BOUND_WORST - 1).worst == shipped.worst[:BOUND_WORST - 1]
    assert len(computed) == 2  # another worst: computed
