"""What ``check`` cannot read off a run is refused where the command line refuses it, and said
where it is assumed (issue 38): a header's ``nGpus 0`` is ``-g 0``; rows alone leave the
collective, the GPUs and ``-g`` to assumption; a calibration of another system is applied with a
caveat.

Known answer: the 12-GPU DGX-2 all_reduce of nccl-tests -g 12 (examples/data, wohlbier/nccl-tests
README, "Results on dgx-2", 2020): 12 ranks, busbw / algbw = 2 x 11 / 12.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topo
from models.present.cli import main
from models.present.json_shapes import check_json
from models.present.text import caveat_texts, check_table
from models.studies.benchmarks import BenchmarkParseError, read_nccl_tests
from models.studies.calibration import Calibration, CalibrationError, Caveat, CaveatCode, check

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "data"
RUN = (EXAMPLE / "dgx2_12gpu_all_reduce.txt").read_text()
ROWS = "".join(line + "\n" for line in RUN.splitlines()
               if line.strip() and not line.startswith(("#", "Running")))


@pytest.fixture(scope="module")
def dgx2():
    return topo.dgx2()


def test_the_run_as_printed_assumes_nothing(dgx2):
    c = check(read_nccl_tests(RUN, name="ar"), dgx2)
    assert c.caveats == () and c.gpus_per_thread == 12


def test_a_header_of_ngpus_0_is_refused_as_the_command_line_refuses_g_0(dgx2, tmp_path, capsys):
    text = RUN.replace("nGpus 12", "nGpus 0")
    with pytest.raises(CalibrationError, match=r"ar says nGpus 0: expected nGpus from 1 to 12"):
        check(read_nccl_tests(text, name="ar"), dgx2)
    assert check(read_nccl_tests(text, name="ar"), dgx2, gpus_per_thread=12).gpus_per_thread == 12
    path = tmp_path / "g0.txt"
    path.write_text(text)
    assert main(["check", str(path), "--system", "dgx2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"dgxtopo: error: {path} says nGpus 0: expected nGpus from 1 to 12") and "-g naming" in err
    assert main(["check", str(path), "--system", "dgx2", "-g", "12"]) == 0


def test_rows_alone_say_the_collective_gpus_and_g_they_assume(dgx2, tmp_path, capsys):
    c = check(read_nccl_tests(ROWS, name="rows"), dgx2)
    assert (c.collective, c.gpus, c.gpus_per_thread) == ("all_reduce", tuple(range(12)), 1)
    assert c.caveats[:3] == (
        Caveat(CaveatCode.COLLECTIVE_FROM_COLUMNS, run="rows", collective="all_reduce"),
        Caveat(CaveatCode.GPUS_IN_RANK_ORDER, count=12, run="rows", ranks_source="busbw / algbw", system="DGX-2"),
        Caveat(CaveatCode.GPUS_PER_THREAD_ASSUMED, run="rows"))
    # ... and both readings of its -g compared (tests/models/studies/test_check_modes.py)
    assert [x.code for x in c.caveats[3:]] == [CaveatCode.MODE_FIT]
    words = caveat_texts(c.caveats)
    assert words[0].startswith("rows does not name its program (no *_perf line): all_reduce read from its columns")
    assert "assumed rank r on GPU r of DGX-2 (GPUs 0-11)" in words[1]
    assert "assumed -g 1, one GPU per thread" in words[2]
    assert check_table(c).splitlines()[-4:] == [f"# note: {w}" for w in words]
    assert check_json(c)["notes"] == list(words)
    path = tmp_path / "rows.txt"
    path.write_text(ROWS)
    assert main(["check", str(path), "--system", "dgx2"]) == 0
    out = capsys.readouterr()[0]
    assert sum(line.startswith("# note: ") for line in out.splitlines()) == 4
    assert main(["check", str(path), "--system", "dgx2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr()[0])["notes"]) == 4
    # What the caller says is not assumed.
    told = check(read_nccl_tests(ROWS, collective="all_reduce"), dgx2, gpus="1,2,6-15", gpus_per_thread=12)
    assert told.caveats == () and told.gpus == (1, 2, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)


def test_a_calibration_of_another_system_is_applied_with_a_caveat(dgx2, tmp_path, capsys):
    text = (EXAMPLE / "dgx2_calibration.json").read_text()
    run = read_nccl_tests(RUN, name="ar")
    assert check(run, dgx2, calibration=Calibration.from_json(text)).caveats == ()
    other = json.loads(text)
    other["system"] = "dgx1"
    c = check(run, dgx2, calibration=Calibration.from_json(json.dumps(other)))
    assert c.caveats == (Caveat(CaveatCode.CALIBRATION_OF_ANOTHER_SYSTEM, system="dgx2", calibration_system="dgx1"),)
    assert caveat_texts(c.caveats) == ("the calibration was fitted on dgx1, the check runs on dgx2: its constants "
                                       "are those of dgx1's runs",)
    path, cal = tmp_path / "ar.txt", tmp_path / "cal.json"
    path.write_text(RUN)
    cal.write_text(json.dumps(other))
    assert main(["check", str(path), "--system", "dgx2", "--calibration", str(cal)]) == 0
    assert capsys.readouterr()[0].splitlines()[-1].startswith("# note: the calibration was fitted on dgx1")


# --- the fuzz pass: whatever part of the output is pasted, nothing is assumed silently -------
LINES = RUN.splitlines()


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keep=st.lists(st.booleans(), min_size=len(LINES), max_size=len(LINES)))
def test_whatever_lines_are_kept_each_assumption_is_said(dgx2, keep):
    """Lines of the real output dropped at random (the command, the header, device lines, rows):
    check refuses, or says the collective, GPUs and -g it did not read."""
    text = "\n".join(line for line, kept in zip(LINES, keep) if kept or not line.strip().startswith(("#", "Run")))
    try:
        run = read_nccl_tests(text, name="cut")
        c = check(run, dgx2)
    except (BenchmarkParseError, CalibrationError):
        return
    codes = {caveat.code for caveat in c.caveats}
    assert (run.collective_source == "columns") == (CaveatCode.COLLECTIVE_FROM_COLUMNS in codes)
    assert (run.gpus_per_thread is None) == (CaveatCode.GPUS_PER_THREAD_ASSUMED in codes)
    assert (CaveatCode.MODE_FIT in codes) == (CaveatCode.GPUS_PER_THREAD_ASSUMED in codes and len(c.gpus) > 1)
    gpus_read = run.complete_devices or run.gpu_ids is not None or (
        run.cuda_visible_devices is not None and len(run.cuda_visible_devices) >= len(c.gpus))
    assert gpus_read or codes & {CaveatCode.GPUS_IN_RANK_ORDER, CaveatCode.GPUS_ASSUMED}, (text, c.caveats)
