"""calibrate and check: recovery of known constants from synthetic runs, prediction of the
held-out DGX-2 runs (tests/data/dgx2_12gpu_nccl_tests.json: wohlbier/nccl-tests README,
"Results on dgx-2" (2020)), the JSON forms, every error path."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import models
import topo
from models.studies.benchmarks import NcclTestsRow, NcclTestsRun, read_nccl_tests
from models.studies.calibration import SCHEMA_VERSION, Calibration, CalibrationError, calibrate, check
from models.predict.measure import DEFAULT, measured
from models.present.explain import explain
from models.present.json_shapes import calibration_file_json, check_json
from models.present.text import calibration_table, check_table
from tests.conftest import DATA

RUN = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())
SIZES = 2 ** np.arange(3, 34, 2)


def synthetic(G, collective, g, model, gpus="0-7"):
    """An nccl-tests run as the measurement model with ``model`` predicts it."""
    e = models.estimate(G, collective, SIZES, gpus)
    m = measured(e, G, gpus_per_thread=g, model=model)
    rows = tuple(NcclTestsRow(int(s), int(s) // 4, "float", "sum", -1, float(t), float(a), float(b), 0.0)
                 for s, t, a, b in zip(SIZES, m.time, m.algbw, m.busbw))
    return NcclTestsRun(collective, rows, nthreads=1, gpus_per_thread=g, name=f"{collective} -g {g}")


@pytest.mark.parametrize("use_scipy", [True, False])
def test_recovers_known_constants(use_scipy):
    G = topo.build("dgx1v")
    truth = DEFAULT.with_values(launch_per_gpu=3e-6, floor=8e-6, **{"efficiency:nvlink2": 0.7})
    runs = [synthetic(G, c, g, truth) for c in ("all_reduce", "broadcast") for g in (4, 8)]
    cal = calibrate(runs, G, gpus="0-7", use_scipy=use_scipy)
    got = {name: value for name, value, _, _ in cal.fitted}
    assert set(got) == {"launch_per_gpu", "floor", "efficiency:nvlink2"}
    assert got["launch_per_gpu"] == pytest.approx(3e-6, rel=0.01)
    assert got["floor"] == pytest.approx(8e-6, rel=0.02)
    assert got["efficiency:nvlink2"] == pytest.approx(0.7, rel=0.01)
    assert cal.after["max_abs_time_error"] < 1e-3 < cal.before["max_abs_time_error"]


@pytest.fixture(scope="module")
def dgx2_runs():
    return {c: read_nccl_tests(v["raw"], name=c) for c, v in RUN["collectives"].items()}


def test_fit_on_part_predicts_the_rest(dgx2_runs):
    G = topo.build("dgx2")
    cal = calibrate([dgx2_runs["all_reduce"], dgx2_runs["broadcast"]], G)
    print("\n" + calibration_table(cal))
    for held_out in ("reduce", "all_gather"):
        result = check(dgx2_runs[held_out], G, calibration=cal, inplace=held_out == "all_gather")
        print(f"{held_out}: median |time error| {result.median_abs_time_error:.1%}, max "
              f"{result.max_abs_time_error:.1%}")
        assert result.median_abs_time_error < 0.07


def test_check_json_has_exactly_the_issue_keys(dgx2_runs):
    result = check(dgx2_runs["all_reduce"], topo.build("dgx2"))
    data = check_json(result)
    assert set(data) == {"rows", "median_abs_time_error", "max_abs_time_error"}
    assert set(data["rows"][0]) == {"size_bytes", "measured_time_us", "predicted_time_us",
                                    "measured_busbw_gbps", "predicted_busbw_gbps", "time_error",
                                    "busbw_error"}
    last = data["rows"][-1]
    assert last["size_bytes"] == 8589934592 and last["measured_time_us"] == pytest.approx(127453)
    assert last["time_error"] == pytest.approx(last["predicted_time_us"] / 127453 - 1)
    assert data["rows"][0]["busbw_error"] is None  # printed 0.00 GB/s: no ratio
    assert result.gpus == tuple(RUN["cuda_visible_devices"]) and result.gpus_per_thread == 12
    json.dumps(data)


def test_json_round_trip(dgx2_runs):
    G = topo.build("dgx2")
    cal = calibrate([dgx2_runs["broadcast"]], G)
    again = Calibration.from_json(json.dumps(calibration_file_json(cal), indent=2))
    assert again.model.launch_per_gpu == cal.model.launch_per_gpu
    assert again.model.efficiency("nvlink2") == cal.model.efficiency("nvlink2")
    assert again.fitted == cal.fitted
    assert "calibration on dgx2" in explain(measured(models.estimate(G, "broadcast", 8, "0-3"), G,
                                                     model=again.model))


def _parameters(**values) -> str:
    return json.dumps({"schema": "dgx-topo calibration", "version": SCHEMA_VERSION, "parameters": values})


@pytest.mark.parametrize("text, message", [
    ("not json", "line 1: expected JSON"),
    ("[]", "schema"),
    (json.dumps({"schema": "dgx-topo calibration", "version": SCHEMA_VERSION + 1}), "version"),
    (_parameters(floor=-1), "floor = -1: expected a number from 0 to 0.001 seconds"),
    (_parameters(speed=1), "unknown parameter 'speed'"),
    # issue 24: an efficiency of 0 divided by zero in check and collective --explain; 5.0 gave a
    # DGX-2 all_reduce of 700 GB/s, beyond line rate; unknown link classes were accepted; a
    # floor of 1e300 printed a 300-digit time; deep nesting raised RecursionError.
    (_parameters(**{"efficiency:nvlink2": 0}), "efficiency:nvlink2 = 0: expected a number from 0.05 to 1"),
    (_parameters(**{"efficiency:nvlink2": 5.0}), "efficiency:nvlink2 = 5.0: expected a number from 0.05 to 1"),
    (_parameters(transfer_efficiency=0), "transfer_efficiency = 0: expected"),
    (_parameters(**{"efficiency:nvlink99": 0.9}), "unknown parameter 'efficiency:nvlink99': expected "
     "efficiency:LINK with LINK one of nvlink1"),
    (_parameters(floor=1e300), "floor = 1e+300: expected a number from 0"),
    (_parameters(launch_per_gpu=True), "launch_per_gpu = True: expected a number"),
    (_parameters(launch_per_gpu="5"), "launch_per_gpu = 5: expected a number"),
    (_parameters(floor=float("nan")).replace("NaN", "NaN"), "received NaN"),
    ('{"a": ' * 100_000, "nested at most 64 levels"),
    (json.dumps({"schema": "dgx-topo calibration", "version": SCHEMA_VERSION, "parameters": {},
                 "fitted": [{"name": "floor", "value": 1, "lower": 0, "upper": 1}]}), '"fitted"[0]: floor = 1'),
    (json.dumps({"schema": "dgx-topo calibration", "version": SCHEMA_VERSION, "parameters": {},
                 "sources": [1]}), '"sources": a list of strings'),
])
def test_bad_calibration_files(text, message):
    with pytest.raises(Exception, match=re.escape(message)) as info:
        Calibration.from_json(text)
    assert isinstance(info.value, topo.DgxTopoError)


def test_error_paths(dgx2_runs):
    G = topo.build("dgx2")
    with pytest.raises(CalibrationError, match="at least one"):
        calibrate([], G)
    unnamed = NcclTestsRun(None, dgx2_runs["reduce"].rows, gpus_per_thread=12, nthreads=1)
    with pytest.raises(CalibrationError, match="collective"):
        check(unnamed, G)
    with pytest.raises(CalibrationError, match="gpus_per_thread must be"):
        check(dgx2_runs["reduce"], G, gpus_per_thread=13)
    with pytest.raises(CalibrationError, match="expected an nccl-tests run"):
        check("text", G)


# -- nccl-tests text as users paste it (issue 21 item 4) --------------------------------------
def _without(text: str, *words) -> str:
    return "\n".join(line for line in text.splitlines() if not any(w in line for w in words))


@pytest.mark.parametrize("collective", sorted(RUN["collectives"]))
def test_check_runs_without_rank_lines_and_without_the_header(collective):
    """The given DGX-2 runs with their rank lines cut (and the nThread header too) check exactly
    as the whole text does: the rank count follows from the rows (size / count, busbw / algbw) or
    the command line's -g 12, the GPUs from CUDA_VISIBLE_DEVICES."""
    G = topo.build("dgx2")
    raw = RUN["collectives"][collective]["raw"]
    whole = check(read_nccl_tests(raw), G)
    for cut in (_without(raw, "Rank"), _without(raw, "Rank", "nThread")):
        run = read_nccl_tests(cut, collective=collective)
        assert run.nranks == 12 and not run.devices
        assert check(run, G) == whole


def test_a_run_that_does_not_show_its_ranks_assumes_the_system_and_says_so():
    G = topo.build("dgx2")
    raw = _without(RUN["collectives"]["broadcast"]["raw"], "Rank", "nThread", "Running")
    run = read_nccl_tests(raw)
    assert run.collective == "broadcast" and run.nranks is None and "factor 1" in run.ranks_source
    result = check(run, G)
    assert len(result.gpus) == 16 and "assumed every GPU of DGX-2 (16)" in check_table(result)
    assert result == check(run, G) and check(run, G, gpus=RUN["cuda_visible_devices"]).gpus == \
        tuple(RUN["cuda_visible_devices"])
    # all_gather's columns without its program line could be alltoall's: refused, naming why.
    bare = read_nccl_tests(_without(RUN["collectives"]["all_gather"]["raw"], "Running"))
    with pytest.raises(CalibrationError, match="all_gather or alltoall alike.*collective="):
        check(bare, G)


def test_gpus_that_do_not_match_the_ranks_are_refused_naming_both(dgx2_runs):
    with pytest.raises(CalibrationError, match="gpus= names 4 GPUs, reduce has 12 ranks"):
        check(dgx2_runs["reduce"], topo.build("dgx2"), gpus="0-3")


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "broadcast", "alltoall"])
def test_check_reads_what_dgxtopo_collective_prints(capsys, collective):
    """`dgxtopo collective` output checked against the same prediction: no error at all."""
    from models.present.cli import main

    assert main(["collective", collective, "--system", "dgxh100", "--gpus", "0-3", "-b", "1M", "-e", "64M",
                 "--explain"]) == 0
    run = read_nccl_tests(capsys.readouterr().out)
    assert (run.collective, run.nranks, run.gpu_ids) == (collective, 4, "0-3")
    result = check(run, topo.build("dgxh100"))
    assert result.gpus == (0, 1, 2, 3)
    assert result.max_abs_time_error < 0.005  # the printed times carry two decimals
