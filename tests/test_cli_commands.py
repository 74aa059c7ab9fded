"""The commands of issues 11-15 on the command line: -g and --calibration, --algo, check --out,
bound, whatif, plan and gpus, run in-process.

Known answers: the DGX-1V's NVLink-only all_reduce bound is 150 GB/s (every GPU has 6 NVLinks
of 25 GB/s per direction: the cut around one GPU); failing one link of an NV2 bundle of a
DGX-1V costs a sixth of the all_reduce busbw (one of NCCL's 6 channels); the 8-byte all_reduce
of nccl-tests -g 12 on 12 GPUs of a DGX-2 took 61.03 us (tests/data/dgx2_12gpu_nccl_tests.json:
wohlbier/nccl-tests README, "Results on dgx-2", 2020).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import models
import topo
from models.present.cli import COMMANDS, main
from models.studies.bounds import pairwise_bounds
from models.studies.compute import GENERATIONS
from tests.conftest import DATA


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(capsys, *argv) -> str:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "", (status, out, err)
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: "), err
    return err


def calibration_file(tmp_path, launch_per_gpu: float) -> str:
    from models.studies.calibration import SCHEMA, SCHEMA_VERSION

    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"schema": SCHEMA, "version": SCHEMA_VERSION, "system": "test",
                                "parameters": {"launch_per_gpu": launch_per_gpu}}))
    return str(path)


# --- -g and --calibration (issue 11) -------------------------------------------------------
DGX2_RUN_GPUS = "1,2,6-15"  # CUDA_VISIBLE_DEVICES of the measured run


def _time_us(out: str) -> float:
    return float(next(line for line in out.splitlines() if not line.startswith("#")).split()[5])


def test_g_charges_one_thread_launching_every_gpu(capsys):
    base = ["collective", "all_reduce", "--system", "dgx2", "--gpus", DGX2_RUN_GPUS, "-b", "8", "-e", "8"]
    status, out, _ = run(capsys, *base, "-g", "12")
    assert status == 0
    header = out.splitlines()[0]
    assert header.endswith("; -g 12; measurement constants: default (DGX-2 fit)")
    assert _time_us(out) == pytest.approx(61.03, rel=0.2)  # measured, nccl-tests -g 12
    status, out, _ = run(capsys, *base)
    assert "-g" not in out.splitlines()[0] and _time_us(out) < 61.03 / 2


def test_calibration_file_changes_the_constants_and_says_so(capsys, tmp_path):
    path = calibration_file(tmp_path, 20e-6)
    argv = ["collective", "all_reduce", "--system", "dgx1v", "-b", "8", "-e", "8", "-g", "8"]
    _, default, _ = run(capsys, *argv)
    status, out, _ = run(capsys, *argv, "--calibration", path)
    assert status == 0 and out.splitlines()[0].endswith(f"; -g 8; measurement constants: {path}")
    # 8 GPUs launched one after another at 20 us each instead of the fitted 4.985 us.
    assert _time_us(out) - _time_us(default) == pytest.approx(8 * (20 - 4.985), rel=0.02)
    for command in (["pairs", "all_reduce", "--system", "dgx1v", "-s", "8", "-g", "2"],
                    ["subsets", "all_reduce", "--system", "dgx1v", "-k", "2", "-s", "8", "-g", "2"],
                    ["compare", "--system", "dgx1v", "dgx1", "-b", "8", "-e", "8", "-g", "4"]):
        status, out, _ = run(capsys, *command, "--calibration", path, "--json")
        assert status == 0, command
    # -g beyond the ranks: the model's one-line error
    # The library names its keyword (gpus_per_thread); the command line names its option.
    assert "-g must be" in one_line_error(capsys, "pairs", "all_reduce", "--system", "dgx1v",
                                                       "-s", "8", "-g", "4")


@pytest.mark.parametrize("command", [
    ["collective", "all_reduce", "--system", "dgx1v"],
    ["pairs", "all_reduce", "--system", "dgx1v", "-s", "1M"],
    ["subsets", "all_reduce", "--system", "dgx1v", "-k", "2", "-s", "1M"],
    ["compare", "--system", "dgx1v", "dgx1"],
    ["check", str(DATA / "dgx2_12gpu_nccl_tests.json"), "--system", "dgx2"],
])
@pytest.mark.parametrize("content, message", [
    (None, "cannot read calibration file"),
    ("not json", "line 1: expected JSON"),
    ('{"schema": "other"}', "schema"),
    ('{"schema": "dgx-topo calibration", "version": 1, "parameters": {"floor": -1}}', "floor = -1: expected a number from 0"),
])
def test_a_bad_calibration_file_is_one_line(capsys, tmp_path, command, content, message):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    assert message in one_line_error(capsys, *command, "--calibration", path)


def test_g_must_be_a_whole_number(capsys):
    for command in ("collective", "pairs", "subsets"):
        err = one_line_error(capsys, command, "all_reduce", "--system", "dgx1v", "-s", "1M", "-k", "2", "-g", "0")
        assert "-g/--gpus-per-thread" in err


# --- --algo (issue 12) and check --out -----------------------------------------------------
def test_algo_forces_nvls_where_the_fabric_has_it(capsys):
    status, out, _ = run(capsys, "collective", "all_reduce", "--system", "dgxh100", "-b", "1G", "-e", "1G",
                         "--algo", "nvls", "--json")
    assert status == 0 and json.loads(out)["rows"][0]["algorithm"] == "nvls"
    err = one_line_error(capsys, "collective", "all_reduce", "--system", "dgx1v", "--algo", "nvls")
    assert "compute capability 90" in err
    assert "NCCL 2.3.7 has no trees" in one_line_error(
        capsys, "collective", "all_reduce", "--system", "dgx1v", "--algo", "tree", "--nccl", "2.3.7")
    assert "invalid choice" in one_line_error(capsys, "collective", "all_reduce", "--system", "dgx1v",
                                              "--algo", "collnet")


def test_check_out_writes_the_page_and_a_bad_path_fails_first(capsys, tmp_path):
    raw = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]["broadcast"]["raw"]
    run_file = tmp_path / "broadcast.txt"
    run_file.write_text(raw)
    page = tmp_path / "check.html"
    status, out, _ = run(capsys, "check", run_file, "--system", "dgx2", "--out", page)
    assert status == 0 and out.rstrip().endswith(f"wrote {page}")
    assert page.read_text().startswith("<!DOCTYPE html>") and "broadcast" in page.read_text()
    assert "cannot write" in one_line_error(capsys, "check", tmp_path / "missing.txt", "--system", "dgx2",
                                            "--out", tmp_path / "no" / "x.html")


# --- bound (issue 14) ----------------------------------------------------------------------
def test_bound_of_the_dgx1v_nvlink_all_reduce_is_150_gbps(capsys):
    status, out, _ = run(capsys, "bound", "all_reduce", "--system", "dgx1v", "--links", "nvlink", "--json")
    data = json.loads(out)
    assert status == 0 and data["bound_busbw_gbps"] == pytest.approx(150.0)
    assert data["ratio"] == pytest.approx(data["nccl_busbw_gbps"] / data["bound_busbw_gbps"])
    assert 0 < data["ratio"] <= 1
    assert data["cut"]["capacity_gbps"] == pytest.approx(150.0) and len(data["cut"]["gpus"]) in (1, 7)
    status, out, _ = run(capsys, "bound", "all_reduce", "--system", "dgx1v", "--links", "nvlink")
    lines = out.splitlines()
    assert lines[1].split()[:3] == ["bound", "busbw", "150.0"]
    assert "NCCL busbw" in out and "of the bound" in out and "binding cut:" in out


def test_bound_trees_and_page(capsys, tmp_path):
    page = tmp_path / "bound.html"
    status, out, _ = run(capsys, "bound", "broadcast", "--system", "dgx1v", "--gpus", "0-3", "--links",
                         "nvlink", "--out", page)
    assert status == 0 and "tree" in out and out.rstrip().endswith(f"wrote {page}")
    assert "plotly" in page.read_text()[:4_000_000].lower()
    status, out, _ = run(capsys, "bound", "all_gather", "--system", "dgx1v", "--gpus", "0-3", "--trees", "--json")
    assert status == 0 and json.loads(out)["trees"]


@pytest.mark.parametrize("argv, message", [
    (["alltoall", "--system", "dgx1v", "--trees"], "its bound is a flow LP"),
    (["all_reduce", "--system", "4xdgx2", "--limit", "32"], "a bound on 64 GPUs, more than the limit of 32"),
    (["all_reduce", "--system", "dgx1v", "--gpus", "0"], "at least 2 GPUs"),
    (["all_reduce", "--system", "dgx1v", "--links", "nvlink,wifi"], "argument --links"),
    (["all_reduce", "--system", "dgx1v", "--relay", "gpus"], "argument --relay"),
    (["broadcast", "--system", "dgx1v", "--gpus", "0-3", "--root", "5"], "root must be a GPU id"),
    (["alltoall", "--system", "8xdgx2", "--limit", "256"], "MAX_LP_VARIABLES"),
])
def test_bound_bad_input(capsys, argv, message):
    assert message in one_line_error(capsys, "bound", *argv)


def test_bound_columns_of_subsets_and_pairs(capsys):
    status, out, _ = run(capsys, "subsets", "all_reduce", "--system", "dgx1v", "-k", "4", "-s", "1G",
                         "--bound", "--json")
    rows = json.loads(out)["subsets"]
    expected = {r.gpus: r.bound_busbw for r in models.subset_bounds(topo.dgx1v(), "all_reduce", 4)}
    assert status == 0 and len(rows) == 70
    for row in rows:  # the bound reused per symmetry class is each set's own bound
        assert row["bound_busbw_gbps"] == pytest.approx(expected[tuple(row["gpus"])] / 1e9)
        assert row["ratio"] == pytest.approx(row["busbw_gbps"] / row["bound_busbw_gbps"]) and row["ratio"] <= 1
    status, out, _ = run(capsys, "subsets", "all_reduce", "--system", "dgx1v", "-k", "4", "-s", "1G",
                         "--bound", "--top", "2")
    assert "bound (GB/s)  NCCL/bound" in out and "115.75" in out
    status, out, _ = run(capsys, "pairs", "all_reduce", "--system", "dgx1v", "-s", "1G", "--bound", "--json")
    data = json.loads(out)
    bounds = pairwise_bounds(topo.dgx1v(), "all_reduce") / 1e9
    got = np.array([[np.nan if v is None else v for v in row] for row in data["bound_busbw_gbps"]])
    assert np.allclose(got, bounds, equal_nan=True)
    assert np.nanmax(np.array(data["busbw_gbps"], dtype=float) / got) <= 1
    status, out, _ = run(capsys, "pairs", "all_reduce", "--system", "dgx1v", "-s", "1G", "--bound")
    assert "NCCL gets" in out.splitlines()[-1] and "of the busbw this fabric allows a pair" in out


# --- whatif (issue 13) ---------------------------------------------------------------------
def test_whatif_ranks_one_nvlink_of_a_dgx1v_at_a_sixth(capsys, tmp_path):
    page = tmp_path / "whatif.html"
    status, out, _ = run(capsys, "whatif", "all_reduce", "--system", "dgx1v", "--fail-each", "nvlink",
                         "--json", "--out", page, "--executor", "inline")
    data = json.loads(out)
    assert status == 0 and set(data) == {"baseline", "rows", "count"} and len(data["rows"]) == 16
    assert set(data["rows"][0]) == {"failed", "busbw_gbps", "time_us", "loss"}
    assert data["rows"][0]["loss"] == pytest.approx(1 / 6, abs=0.01)
    assert data["rows"][0]["busbw_gbps"] == pytest.approx(data["baseline"]["busbw_gbps"] * 5 / 6, rel=0.01)
    assert [r["loss"] for r in data["rows"]] == sorted((r["loss"] for r in data["rows"]), reverse=True)
    assert page.read_text().startswith("<!DOCTYPE html>")
    status, out, _ = run(capsys, "whatif", "all_reduce", "--system", "dgx1v", "--fail-each", "nvlink", "--top", "2")
    assert status == 0 and "16.6%" in out.splitlines()[3] and out.rstrip().endswith("... 14 more")


@pytest.mark.parametrize("argv, message", [
    (["--system", "dgx1v"], "the following arguments are required: --fail-each"),
    (["--system", "dgx1v", "--fail-each", "nvswitch"], "has no nvswitch to fail"),
    (["--system", "dgx1v", "--fail-each", "disk"], "argument --fail-each: invalid choice"),
    (["--system", "dgx2", "--fail-each", "nvlink", "--pairs"],
     "gives 5,151 failure cases (102 components), more than the limit of 2,000: raise it with --max-cases N"),
    (["--system", "dgx1v", "--fail-each", "nic", "--executor", "threads"], "dask://HOST:PORT"),
    (["--system", "dgx1v", "--fail-each", "nic", "--out", "/nonexistent-dir/w.html"], "cannot write"),
])
def test_whatif_bad_input(capsys, argv, message):
    assert message in one_line_error(capsys, "whatif", "all_reduce", *argv)


# --- plan and gpus (issue 15) --------------------------------------------------------------
PLAN_KEYS = {"step_time_s", "samples_per_s", "tokens_per_s", "model_tflops_per_gpu",
             "hardware_tflops_per_gpu", "mfu", "hfu", "memory_per_gpu_bytes", "components"}


def test_plan_bert_large_on_a_dgx1v(capsys, tmp_path):
    status, out, _ = run(capsys, "plan", "bert-large", "--system", "dgx1v", "--dp", "8", "--tp", "1",
                         "--pp", "1", "--zero", "0", "--recompute", "none", "--json")
    data = json.loads(out)
    assert status == 0 and PLAN_KEYS <= set(data) and data["fits"]
    assert {"compute", "dp_comm", "bubble"} <= set(data["components"])
    assert data["samples_per_s"] == pytest.approx(data["layout"]["global_batch"] / data["step_time_s"])
    assert 0 < data["mfu"] < 1
    page = tmp_path / "plan.html"
    # The page of a search with a simulated layout in it: one simulation shows that (the default
    # eight run in the README's `plan bert-large --system dgx1v --search --top 4`).
    status, out, _ = run(capsys, "plan", "bert-large", "--system", "dgx1v", "--tp", "1", "--pp", "1",
                         "--search", "--simulate", "1", "--out", page)
    assert status == 0 and out.splitlines()[0].startswith("layout") and page.exists()
    status, out, _ = run(capsys, "plan", "transformer:layers=2,hidden=256,heads=4,seq=128,vocab=1000",
                         "--system", "dgx1v", "--tp", "2", "--pp", "1", "--dp", "4", "--recompute", "full")
    assert status == 0 and "tp2 pp1 dp4" in out and "binding:" in out


def test_plan_layouts_people_use(capsys):
    # A job smaller than the system (issue 23: refused before).
    status, out, _ = run(capsys, "plan", "resnet50", "--system", "dgx1v", "--dp", "1", "--micro-batch", "32")
    assert status == 0 and "tp1 pp1 dp1" in out and "dp groups: (0)" in out
    small = "transformer:layers=4,hidden=256,heads=16,seq=128,vocab=1000"
    status, out, _ = run(capsys, "plan", small, "--system", "2xdgx1v", "--tp", "16", "--pp", "1", "--dp", "1",
                         "--sequence-parallel", "off", "--software", "eager", "--overlap", "0",
                         "--bucket", "64M", "--efficiency", "0.5", "--memory-efficiency", "0.7", "--json")
    data = json.loads(out)
    assert status == 0 and data["warnings"] and not data["layout"]["sequence_parallel"]
    assert data["software"] == "eager" and "GEMM 50% of peak, HBM 70%" in data["compute"]
    status, out, _ = run(capsys, "plan", small, "--system", "dgx1v", "--tp", "1", "--pp", "4", "--dp", "2",
                         "--virtual-stages", "1", "--global-batch", "64", "--dtype", "fp16")
    assert status == 0 and "tp1 pp4 dp2" in out
    status, out, _ = run(capsys, "plan", small, "--system", "dgxa100-80g", "--dtype", "tf32", "--tp", "1",
                         "--pp", "1", "--dp", "8")
    assert status == 0 and "(A100, tf32, NCCL 2.27.7)" in out and "DGX A100 640GB" in out


def test_plan_calibrated(capsys):
    # One layout (ZeRO stage given too: the calibration is the question, not the search).
    small = ["transformer:layers=4,hidden=256,heads=4,seq=128,vocab=1000", "--system", "dgx1v", "--tp", "2",
             "--pp", "1", "--dp", "4", "--zero", "1", "--recompute", "full", "--dtype", "fp16"]
    status, out, _ = run(capsys, "plan", *small, "--json")
    step = json.loads(out)["step_time_s"]
    status, out, _ = run(capsys, "plan", *small, "--calibrate", f"{step * 1.5:.9f}s", "--json")
    fit = json.loads(out)["calibration"]
    assert status == 0 and fit["compute_scale"] > 1 and fit["measured_step_s"] == pytest.approx(step * 1.5)
    assert fit["fitted"]["gemm_efficiency"] < fit["default"]["gemm_efficiency"]
    status, out, _ = run(capsys, "plan", *small, "--calibrate", f"{step * 1.5:.9f}s")
    assert status == 0 and "fitted compute time scale" in out and "default 0.740 -> fitted" in out
    status, out, _ = run(capsys, "plan", small[0], "--system", "dgx1v", "--tp", "1", "--compute-scale", "2",
                         "--search", "--top", "2", "--json")
    assert status == 0 and len(json.loads(out)["layouts"]) == 2


def test_plan_that_does_not_fit_exits_2_with_the_verdict_and_one_line(capsys):
    """The verdict and its numbers on stdout (text or JSON), one line on stderr saying why, status 2."""
    status, out, err = run(capsys, "plan", "gpt3-175b", "--system", "dgx1v")
    assert status == 2 and "does not fit: out of memory" in out
    assert err == ("dgxtopo: error: gpt3-175b does not fit on DGX-1V: tp8 pp1 dp1 zero0 mb1 rc=full sp tp-dp-pp: "
                   "out of memory: needs 437.2 GB of 17.2 GB (weights 43.7, gradients 43.7, optimizer 349.2, "
                   "activations 0.7) per GPU\n")
    # The JSON and the search at the layout the default search chose above (tp8 pp1): the same verdict.
    status, out, err = run(capsys, "plan", "gpt3-175b", "--system", "dgx1v", "--tp", "8", "--pp", "1", "--json")
    assert status == 2 and json.loads(out)["fits"] is False and err.count("\n") == 1
    status, out, err = run(capsys, "plan", "gpt3-175b", "--system", "dgx1v", "--tp", "8", "--search", "--top", "2",
                           "--json")
    layouts = json.loads(out)["layouts"]
    assert status == 2 and not any(p["fits"] for p in layouts) and err.count("\n") == 1
    assert err.startswith("dgxtopo: error: no layout of gpt3-175b fits on DGX-1V; the closest, ")


@pytest.mark.parametrize("argv, message", [
    (["--recompute", "bert-large", "--system", "dgx1v"], "argument --recompute: invalid choice: 'bert-large'"),
    (["bert-large", "--system", "dgx1v", "--top", "3"], "--top ranks layouts: expected it with --search"),
    (["transformer:layers=1000000000,hidden=64,heads=4,seq=8,vocab=10", "--system", "dgx1v"],
     "layers must be a whole number from 1 to 100000"),
    (["bert-large", "--system", "dgx1v", "--efficiency", "0"], "--efficiency must be a number in (0, 1]"),
    (["bert-large", "--system", "dgx1v", "--overlap", "nan"], "--overlap must be a number in [0, 1]"),
    (["bert-large", "--system", "dgx1v", "--calibrate", "fast"], "expected a measured step"),
    (["bert-large", "--system", "dgx1v", "--calibrate", "1s", "--compute-scale", "2"], "not both"),
    (["llama2-7b", "--system", "dgx1v", "--dtype", "tf32"], "V100-SXM2 (V100 generation) has no tf32 arithmetic"),
    (["llama2-7b", "--system", "dgxh100", "--dtype", "nvfp4"],
     "has no nvfp4 arithmetic: expected one of its dtypes, fp32, tf32, fp16, bf16, fp8; received 'nvfp4'"),
    (["llama2-7b", "--system", "dgxa100", "--dtype", "mxfp8"], "has no mxfp8 arithmetic"),
    (["llama2-7b", "--system", "dgx1v", "--software", "flash"], "Ampere"),
    (["bert-large", "--system", "dgx1v", "--sequence-parallel", "maybe"], "argument --sequence-parallel"),
])
def test_plan_refuses_in_one_line(capsys, argv, message):
    assert message in one_line_error(capsys, "plan", *argv)


@pytest.mark.parametrize("argv, message", [
    (["nope", "--system", "dgx1v"], "unknown workload 'nope'"),
    (["transformer:layers=2", "--system", "dgx1v"], "lacks hidden"),
    (["bert-large", "--system", "16xdgx2", "--limit", "128"], "a plan of 256 GPUs, more than the limit of 128"),
    (["bert-large", "--system", "dgx1v", "--tp", "3", "--pp", "1", "--dp", "1"], "does not divide"),
    (["bert-large", "--system", "dgx1v", "--zero", "4"], "argument --zero"),
    (["bert-large", "--system", "dgx1v", "--dtype", "int4"], "argument --dtype"),
    (["bert-large", "--system", "dgx1v", "--out", "/nonexistent-dir/p.html"], "cannot write"),
])
def test_plan_bad_input(capsys, argv, message):
    assert message in one_line_error(capsys, "plan", *argv)


def test_gpus_ranks_generations(capsys):
    status, out, _ = run(capsys, "gpus", "resnet50", "--json")
    data = json.loads(out)
    times = [r["time_per_sample_s"] for r in data["ranking"]]
    assert status == 0 and {r["generation"] for r in data["ranking"]} == set(GENERATIONS)
    assert times == sorted(times) and data["ranking"][-1]["generation"] == "P100"
    status, out, _ = run(capsys, "gpus", "bert-large", "--dtype", "fp8", "--json")
    unsupported = [r for r in json.loads(out)["ranking"] if r["time_per_sample_s"] is None]
    assert unsupported and all(r["binding"] == "unsupported dtype" for r in unsupported)
    assert "unknown workload" in one_line_error(capsys, "gpus", "gpt5")


# --- help ----------------------------------------------------------------------------------
@pytest.mark.parametrize("command, grammar", [
    ("bound", "none (GPU to GPU links only), switches"),
    ("whatif", "nvlink: one physical link of each NVLink bundle"),
    ("plan", "transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V"),
    ("gpus", "transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V"),
    ("collective", "nvls_tree"),
])
def test_new_helps_state_their_grammars(capsys, command, grammar):
    assert command in [c.name for c in COMMANDS]
    assert main([command, "--help"]) == 0
    assert grammar in " ".join(capsys.readouterr().out.split())
