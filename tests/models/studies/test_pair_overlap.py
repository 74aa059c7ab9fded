"""An overlapped pair walked in closed form (models.studies.planner.pair_overlap; issue 40): the
phase-by-phase time of two blocks on one GPU and one communicator, against hand-worked answers
and the bounds any schedule of two chains obeys."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from models.studies.planner.ep_overlap import BATCH_OVERLAP, DUALPIPE, NO_OVERLAP
from models.studies.planner.pair_overlap import (GPU, LayerPass, block_segments, by_part, communication,
                                                 pair_exposure, pair_time)


def test_a_pair_is_the_sum_of_its_phases_maxima():
    # forward: attention 3, dispatch 1, experts 2, combine 1; backward: 4, 1, 4, 1. Phases:
    # [F attention] [F dispatch | B attention] [F experts | B dispatch] [F combine | B experts]
    # [B combine]: 3 + max(1, 4) + max(2, 1) + max(1, 4) + 1 = 14
    f = ((GPU, 3.0), ("ep", 1.0), (GPU, 2.0), ("ep", 1.0))
    b = ((GPU, 4.0), ("ep", 1.0), (GPU, 4.0), ("ep", 1.0))
    assert pair_time(f, b) == 14.0 and pair_exposure(f, b) == 1.0
    # the perfect overlap hides it all (2 + 2 of all-to-alls behind 13 of kernels)
    assert BATCH_OVERLAP.exposed_ep(4.0, 13.0) == 0.0 and BATCH_OVERLAP.exposed_pair(f, b) == 1.0
    # communication-bound: one communicator runs both chains' all-to-alls one after the other
    f = ((GPU, 1.0), ("ep", 5.0), (GPU, 1.0), ("ep", 5.0))
    assert pair_time(f, f) == 1.0 + 4 * 5.0 and pair_exposure(f, f) == 21.0 - 4.0


def test_streams_of_different_communicators_run_together():
    f = ((GPU, 1.0), ("ep", 5.0))
    b = ((GPU, 1.0), ("etp", 5.0))
    assert pair_time(f, b) == 7.0  # 1, then the backward's kernel beside the dispatch, then its 5


def test_no_overlap_exposes_all_and_dualpipe_pairs_the_mirror_stage():
    f = ((GPU, 3.0), ("ep", 1.0), (GPU, 2.0), ("ep", 1.0))
    assert NO_OVERLAP.exposed_pair(f, f) == 4.0 and communication(f) == 2.0
    assert [DUALPIPE.paired_stage(8, s) for s in (0, 3, 7)] == [7, 4, 0]
    assert [BATCH_OVERLAP.paired_stage(8, s) for s in (0, 3, 7)] == [0, 3, 7]


def test_a_blocks_segments_follow_the_step_graphs_layer():
    attention = LayerPass(pre=1.0, attention=2.0)
    moe = LayerPass(pre=1.0, attention=2.0, route=0.5, experts=3.0, rest=0.25)
    forward = block_segments([(True, attention), (False, moe)], forward=True, ep=((0.7, 0.9),), one_tp=0.1,
                             first=10.0, last=20.0, head_collectives=(1, 1))
    assert forward == ((GPU, 13.0), (GPU, 0.1), (GPU, 0.2),  # layer 0: attention + embedding, 1 + 1 collectives
                       (GPU, 23.0), (GPU, 0.1), (GPU, 0.5), ("ep", 0.7), (GPU, 3.0), ("ep", 0.9), (GPU, 0.25),
                       (GPU, 0.1))  # layer 1 with the head: no FFN collective, the head's one
    backward = block_segments([(False, moe)], forward=False, ep=((0.7, 0.9), (0.9, 0.9)), etp=(0.3, 0.4),
                              recount=2, shared=True)
    # full recomputation: the forward's all-to-alls again, then the gradients'; the experts once, last
    assert backward == ((GPU, 3.0), (GPU, 0.5), ("ep", 0.7), ("etp", 0.3), ("etp", 0.4), ("ep", 0.9),
                        ("ep", 0.9), ("etp", 0.3), (GPU, 3.0), ("etp", 0.4), ("ep", 0.9), (GPU, 0.25))
    assert by_part([("flash_attention", 2.0), ("qkv", 1.0), ("router", 0.5), ("experts_in", 3.0),
                    ("shared_in", 0.25)]) == moe


_segments = st.lists(st.tuples(st.sampled_from([GPU, GPU, "ep", "etp"]),
                               st.floats(0.0, 10.0, allow_nan=False)), max_size=12).map(tuple)


@settings(max_examples=200, deadline=None)
@given(_segments, _segments)
def test_a_pair_lies_between_its_busiest_stream_and_running_one_block_after_the_other(f, b):
    t = pair_time(f, b)
    total = sum(s for _, s in (*f, *b))
    busiest = max([sum(s for x, s in (*f, *b) if x == stream) for stream in (GPU, "ep", "etp")])
    assert max(busiest, sum(s for _, s in f), sum(s for _, s in b)) - 1e-9 <= t <= total + 1e-9
    # what the GPU idles: no less than the perfect overlap's, no more than all the communication
    exposed = BATCH_OVERLAP.exposed_pair(f, b)
    comm = communication(f) + communication(b)
    busy = total - comm
    assert max(0.0, comm - busy) - 1e-9 <= exposed <= comm + 1e-9
    assert 0.0 <= pair_exposure(f, b) <= comm + 1e-9
