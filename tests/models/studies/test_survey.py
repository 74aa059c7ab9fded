"""The survey of fabrics (models.studies.survey): its numbers, and the errors it hands back for
the report to word."""

import math

import numpy as np

import topo
from models.engine.fabric import prepare
from models.studies import survey


def test_extreme_pairs_are_the_first_best_and_worst_pairs_with_their_ties():
    """A hand-made 2-GPU matrix: (0,1) and (0,3) share the best busbw, (1,2) and (1,3) the worst;
    a pair the model could not time (inf, NaN) is no extreme."""
    nan, inf = math.nan, math.inf
    m = np.array([[nan, 5.0, 3.0, 5.0],
                  [5.0, nan, 2.0, 2.0],
                  [3.0, 2.0, nan, inf],
                  [5.0, 2.0, inf, nan]])
    assert survey.extreme_pairs(m) == (((0, 1), 5.0, 2), ((1, 2), 2.0, 2))
    assert survey.extreme_pairs(np.full((3, 3), nan)) == ((None, None, 0), (None, None, 0))


def test_a_model_that_does_not_cover_a_case_is_handed_back_as_the_error_itself(monkeypatch):
    """The survey keeps the typed error (the report words it): the pair matrix refused, the rest
    of the system's results are still there, and no extreme pair is made up."""
    refusal = topo.DgxTopoError("not modelled for this test")

    def refuse(*args, **kwargs):
        raise refusal
    monkeypatch.setattr(survey, "pairwise", refuse)
    r = survey.system_results(prepare(topo.dgx1v()))
    assert r.pairs == (None, refusal) and r.extremes == ((None, None, 0), (None, None, 0))
    assert r.e8[1] is None and r.e8[0].nranks == 8 and r.e16 is None
    assert r.curve[1] is None and r.curve8 is None  # 8 GPUs: the curve is GPUs 0-7's

