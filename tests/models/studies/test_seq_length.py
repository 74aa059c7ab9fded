"""plan --seq-length: a workload trained at another sequence length, through the API and the CLI."""

from dataclasses import replace

import pytest

import topo
from models.studies.moe import MOE_PRESETS
from models.studies.planner import plan
from models.studies.workload import PRESETS, WorkloadError, with_seq_length
from tests.test_cli_commands import one_line_error


def test_the_override_is_the_spec_with_its_sequence_replaced():
    """Planning llama3-8b at 2,048 tokens is planning the spec with seq=2048: the same step, and
    the plan carries the spec it planned."""
    G = topo.dgx1v()
    w = PRESETS["gpt2-1.5b"]
    options = dict(tp=1, pp=1, dp=8, zero=1, recompute="full", simulate=0)
    a = plan(w, G, seq_length=512, **options)
    b = plan(replace(w, seq=512), G, **options)
    assert a.step_time == b.step_time and a.workload_spec.seq == 512
    longer = plan(w, G, seq_length=1024, **options)
    assert longer.step_time > a.step_time  # twice the tokens per sample


def test_moe_specs_take_it_too():
    assert with_seq_length(MOE_PRESETS["deepseek-v3"], 32768).seq == 32768


@pytest.mark.parametrize("workload, seq, message", [
    ("resnet50", 1024, "resnet50 is a CNN: a sequence length applies to a transformer, received seq_length=1024"),
    ("llama3-8b", 0, "seq_length must be a whole number from 1 to 10000000, received 0"),
    ("llama3-8b", 2.5, "seq_length must be a whole number from 1 to 10000000, received 2.5"),
    ("bert-large", 64, "an mlm head needs predictions from 1 to seq"),
])
def test_bad_lengths_are_refused(workload, seq, message):
    with pytest.raises(WorkloadError, match=message):
        with_seq_length(PRESETS[workload], seq)


@pytest.mark.parametrize("argv, message", [
    (["plan", "resnet50", "--system", "dgx1v", "--seq-length", "64"], "resnet50 is a CNN"),
    (["plan", "llama3-8b", "--system", "dgx1v", "--seq-length", "0"], "argument --seq-length"),
    (["plan", "llama3-8b", "--system", "dgx1v", "--seq-length", "20000000"],
     "seq_length must be a whole number from 1 to 10000000, received 20000000"),
    (["simulate", "resnet50", "--system", "dgx1v", "--seq-length", "64"], "resnet50 is a CNN"),
])
def test_cli_refuses_in_one_line(capsys, argv, message):
    assert message in one_line_error(capsys, *argv)
