"""The dgxtopo command line, run in-process."""

from __future__ import annotations

import json

import pytest

import topo
from models.present.cli import main
from tests.conftest import read_data


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_systems_table(capsys):
    status, out, err = run(capsys, "systems")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["system", "name", "GPUs"]
    rows = {line.split()[0]: line.split() for line in lines[1:1 + len(topo.SYSTEMS)]}
    assert set(rows) == set(topo.SYSTEMS)
    assert rows["dgx2"][-2:] == ["150.0", "1200.0"]
    assert rows["dgx1v"][-2:] == ["150.0", "150.0"]
    assert rows["dgx1"][-2:] == ["80.0", "80.0"]


def test_systems_json_schema(capsys):
    status, out, _ = run(capsys, "systems", "--json")
    assert status == 0
    systems = json.loads(out)["systems"]
    assert [s["system"] for s in systems] == list(topo.SYSTEMS)
    assert set(systems[0]) == {"name", "system", "description", "gpus", "gpu_models", "nvlink_links",
                               "nvswitches", "pcie_switches", "cpus", "nics", "injection_gbps",
                               "bisection_gbps"}
    assert systems[2]["bisection_gbps"] == 1200.0 and systems[2]["nvlink_links"] == 144


def test_topo_prints_nvidia_smi_layout(capsys):
    status, out, _ = run(capsys, "topo", "--system", "dgx1v", "--no-legend")
    assert status == 0
    assert out.rstrip("\n") == read_data("dgx1v_nvidia_smi_topo.txt")
    status, out, _ = run(capsys, "topo", "--system", "dgx1v")
    assert "Legend:" in out and "NV#" in out


def test_topo_json(capsys):
    status, out, _ = run(capsys, "topo", "--system", "DGX-2", "--json")
    data = json.loads(out)
    assert status == 0 and data["system"] == "dgx2"
    assert data["devices"][:2] == ["GPU0", "GPU1"] and data["matrix"][0][1] == "NV6"


@pytest.mark.parametrize("argv, message", [
    (["topo", "--system", "dgx3"], "unknown system 'dgx3': expected one of dgx1, dgx1v, dgx2"),
    (["topo"], "the following arguments are required: --system SPEC (or --topo-file FILE)"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: COMMAND"),
    (["systems", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err


def test_help_exits_zero(capsys):
    assert main(["--help"]) == 0
    assert "systems" in capsys.readouterr().out


def test_installed_console_script_runs():
    """`pip install -e .` puts `dgxtopo` beside the interpreter; CI (CI=true) must have it."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    script = shutil.which("dgxtopo", path=str(Path(sys.executable).parent)) or shutil.which("dgxtopo")
    if script is None:
        if os.environ.get("CI"):
            pytest.fail("dgxtopo is not installed: the README's commands install it with pip install -e .")
        pytest.skip("dgxtopo console script not installed (pip install -e .)")
    result = subprocess.run([script, "topo", "--system", "nope"], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and result.stderr.startswith("dgxtopo: error: unknown system 'nope'")
    result = subprocess.run([script, "systems"], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("system")


def test_collective_sweep_prints_nccl_tests_columns(capsys):
    status, out, err = run(capsys, "collective", "all_reduce", "--system", "dgx1v", "--gpus", "0-3",
                           "-b", "8", "-e", "1G", "-f", "2")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[1].split()[1:9] == ["size", "count", "type", "redop", "root", "time", "algbw", "busbw"]
    rows = [line.split() for line in lines if line and not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [2**i for i in range(3, 31)]
    assert all(r[2:5] == ["float", "sum", "-1"] for r in rows)
    assert int(rows[-1][1]) == 2**30 // 4
    assert lines[-1].startswith("# Avg bus bandwidth")


def test_collective_json_schema(capsys):
    status, out, _ = run(capsys, "collective", "reduce_scatter", "--system", "dgx2", "-b", "1M", "-e", "4M",
                         "--json")
    data = json.loads(out)
    assert status == 0 and set(data) == {"system", "collective", "gpus", "rows"}
    assert data["gpus"] == list(range(16)) and len(data["rows"]) == 3
    assert set(data["rows"][0]) == {"size_bytes", "time_us", "algbw_gbps", "busbw_gbps", "algorithm",
                                    "protocol", "nchannels"}
    # nccl-tests rounds a reduce_scatter size down to whole elements per rank (16 x 4 B).
    assert all(row["size_bytes"] % 64 == 0 for row in data["rows"])


def test_collective_explain_and_forcing(capsys):
    status, out, _ = run(capsys, "collective", "all_reduce", "--system", "dgx1v", "-b", "1M", "-e", "1M",
                         "--algo", "tree", "--proto", "LL128", "--explain")
    assert status == 0
    row = [line.split() for line in out.splitlines() if line.startswith("  ") and line.split()[0] == "1048576"]
    assert row[0][-3:-1] == ["tree", "LL128"]
    assert "balanced_tree graph: 6 channels x 20.0 GB/s" in out and "bottleneck" in out


def test_pairs_and_subsets(capsys):
    status, out, _ = run(capsys, "pairs", "all_reduce", "--system", "dgx1v", "-s", "256M", "--json")
    matrix = json.loads(out)["busbw_gbps"]
    assert status == 0 and matrix[0][0] is None and matrix[0][3] > matrix[0][1] > matrix[0][5]
    status, out, _ = run(capsys, "subsets", "all_reduce", "--system", "dgx1v", "-k", "4", "-s", "1G",
                         "--top", "2")
    assert status == 0
    assert [line.split()[1] for line in out.splitlines()[2:4]] == ["0-3", "4-7"]
    status, out, _ = run(capsys, "subsets", "all_gather", "--system", "dgx2", "-k", "3", "-s", "64M", "--json")
    data = json.loads(out)
    assert data["count"] == 560 and len(data["subsets"]) == 560


@pytest.mark.parametrize("argv, message", [
    (["collective", "allreduce", "--system", "dgx1v"], "invalid choice: 'allreduce'"),
    (["collective", "all_reduce", "--system", "dgx9"], "unknown system 'dgx9'"),
    (["collective", "all_reduce", "--system", "dgx1v", "--gpus", "0,8"], "GPU id 8 out of range"),
    (["collective", "all_reduce", "--system", "dgx1v", "--gpus", "3-1"], "ascending range"),
    (["collective", "all_reduce", "--system", "dgx1v", "-b", "-8"], "invalid size '-8'"),
    (["collective", "all_reduce", "--system", "dgx1v", "-b", "1G", "-e", "1M"], "expected -e >= -b"),
    (["collective", "all_reduce", "--system", "dgx1v", "-f", "1"], "argument -f/--stepfactor: value must be a whole number from 2"),
    (["collective", "broadcast", "--system", "dgx1v", "--algo", "tree"], "broadcast with Ring only"),
    (["pairs", "all_reduce", "--system", "dgx1v"], "the following arguments are required: -s/--size"),
    (["subsets", "all_reduce", "--system", "dgx1v", "-k", "0", "-s", "1G"], "argument -k: value must be a whole number from 1"),
    (["collective", "all_reduce", "--system", "dgx1v", "--nccl", "2.99"], "no NCCL profile for version '2.99'"),
    (["plan", "bert-large", "--system", "dgx1v", "--nccl", "2.99"], "no NCCL profile for version '2.99'"),
])
def test_collective_bad_input(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_compare_one_dgx2_with_two_dgx1v(capsys):
    status, out, err = run(capsys, "compare", "--system", "dgx2", "2xdgx1v", "-b", "1M", "-e", "1G", "-f", "32")
    assert status == 0 and err == ""
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [int(r[0]) for r in rows] == [2**20, 2**25, 2**30]
    # NCCL's figures: NVSwitch 6 x 20 GB/s against 4 NICs x 12 GB/s = 2.50; measured, NVLink 2
    # achieves 1.02x NCCL's figure and an EDR NIC's path 0.797x (PCIe 3.0 DMA, 9.56 GB/s each
    # way as measured on a DGX-1V, over NCCL's 12 for its PCIe link), which widens it.
    assert rows[-1][-2:] == ["dgx2", "x3.19"]


def test_compare_json_and_errors(capsys):
    status, out, _ = run(capsys, "compare", "--system", "dgx2", "dgx1v", "--ngpus", "8", "-b", "1G", "-e", "1G", "--json")
    data = json.loads(out)
    assert status == 0 and data["ngpus"] == 8 and data["systems"] == ["dgx2", "dgx1v"]
    assert set(data["rows"][0]["results"][0]) == {"system", "time_us", "busbw_gbps", "algorithm", "protocol"}
    status, out, err = run(capsys, "compare", "--system", "dgx2", "dgx1v")
    assert status == 2 and "same GPU count" in err and err.count("\n") == 1
    status, out, err = run(capsys, "compare", "--system", "dgx2", "3xdgx7")
    assert status == 2 and "unknown system '3xdgx7'" in err


def test_cluster_systems_work_everywhere(capsys):
    for argv in (["topo", "--system", "2xdgx1v", "--no-legend"], ["p2p", "--system", "2xdgx1v", "--gpus", "0,8"],
                 ["collective", "all_gather", "--system", "4xdgx2:rail", "-b", "1M", "-e", "1M"]):
        status, out, err = run(capsys, *argv)
        assert status == 0 and err == "", argv
    status, out, _ = run(capsys, "p2p", "--system", "2xdgx1v", "--gpus", "0,8", "--json")
    assert json.loads(out)["path_type"][0][1] == "NET"


# --- calibrate and check (issue 11) -------------------------------------------------------
# Real outputs: tests/data/dgx2_12gpu_nccl_tests.json (wohlbier/nccl-tests README, "Results
# on dgx-2" (2020)), written to files as a user would have them.

def _dgx2_file(tmp_path, collective):
    from tests.conftest import DATA

    raw = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"][collective]["raw"]
    path = tmp_path / f"{collective}.txt"
    path.write_text(raw)
    return str(path)


def test_calibrate_then_check(capsys, tmp_path):
    out_file = tmp_path / "calibration.json"
    status, out, err = run(capsys, "calibrate", _dgx2_file(tmp_path, "all_reduce"),
                           _dgx2_file(tmp_path, "broadcast"), "--system", "dgx2", "--out", str(out_file))
    assert status == 0 and err == ""
    assert "launch_per_gpu =" in out and "|time error| after" in out
    assert json.loads(out_file.read_text())["version"] == 1
    status, out, err = run(capsys, "check", _dgx2_file(tmp_path, "reduce"), "--system", "dgx2",
                           "--calibration", str(out_file), "--json")
    assert status == 0
    data = json.loads(out)
    assert len(data["rows"]) == 31 and data["median_abs_time_error"] < 0.07
    status, out, err = run(capsys, "check", _dgx2_file(tmp_path, "reduce"), "--system", "dgx2",
                           "-g", "12", "--explain")
    assert status == 0
    assert "|time error|: median" in out and "12 x 4.985 us" in out


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("nothing here\n", "found none"),
    ("    8  2  float  sum  1.0  x\n", "line 1"),
])
def test_check_bad_files(capsys, tmp_path, content, message):
    path = tmp_path / "run.txt"
    if content is not None:
        path.write_text(content)
    status, out, err = run(capsys, "check", str(path), "--system", "dgx2")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err


def test_calibrate_bad_calibration_and_g(capsys, tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text("{}")
    status, _, err = run(capsys, "check", _dgx2_file(tmp_path, "reduce"), "--system", "dgx2",
                         "--calibration", str(bad))
    assert status == 2 and "schema" in err
    status, _, err = run(capsys, "check", _dgx2_file(tmp_path, "reduce"), "--system", "dgx2", "-g", "0")
    assert status == 2 and "argument -g/--gpus-per-thread: value must be" in err
    out_file = tmp_path / "never.json"
    status, _, err = run(capsys, "calibrate", str(bad), "--system", "dgx2", "--out", str(out_file))
    assert status == 2 and not out_file.exists()


# --- conventions, limits, progress, Ctrl-C (issue 10) -------------------------------------
from models.present.cli import COMMANDS, MAX_SEARCHES  # noqa: E402


def test_version(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dgxtopo ") and out.count("\n") == 1


#: The grammars each command's options take (its --help states these and only these).
GRAMMARS = {"spec": "NAME or NxNAME[:network]", "topo_file": "Topology files (--topo-file FILE)",
            "whatif": "What-ifs: --fail", "size": "64K = 65536"}
_ALL = ("spec", "topo_file", "whatif", "size")
TAKES = {"systems": (), "topo": _ALL, "p2p": _ALL, "collective": _ALL, "pairs": _ALL, "subsets": _ALL,
         "compare": _ALL, "report": ("spec", "topo_file", "size"), "calibrate": ("spec", "topo_file", "size"),
         "check": ("spec", "topo_file", "size"), "import": ("size",), "export": _ALL, "bound": _ALL,
         "whatif": _ALL, "plan": _ALL, "gpus": (), "simulate": _ALL,
         "tuner": _ALL, "schedule": _ALL, "graphs": _ALL, "dispatch": _ALL, "grouped": _ALL,
         "alltoallv": _ALL}  # size: --max-input SIZE too


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_help_states_the_grammars_it_takes_and_no_other(capsys, command):
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert {kind for kind, text in GRAMMARS.items() if text in out} == set(TAKES[command])
    if "spec" in TAKES[command]:
        assert "16xdgx2:rail" in out and "rail or rail_only" in out and "--system SPEC" in out
    if "size" in TAKES[command]:
        assert "64K, 256M, 1G" in out


def test_top_level_help_states_every_grammar(capsys):
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert all(text in out for text in GRAMMARS.values())


@pytest.mark.parametrize("argv, message", [
    (["collective", "all_reduce", "--system", "dgx1v", "--bogus"],
     "unrecognized arguments: --bogus (see 'dgxtopo collective --help')"),
    (["topo", "--system", "dgx1v", "extra", "more"], "unrecognized arguments: extra more (see 'dgxtopo topo --help')"),
    (["gpus", "bert-large", "--system", "dgx1v"], "unrecognized arguments: --system dgx1v (see 'dgxtopo gpus --help')"),
    (["plan"], "the following arguments are required: WORKLOAD (see 'dgxtopo plan --help')"),
    (["nonsense"], "invalid choice: 'nonsense'"),
])
def test_usage_errors_point_to_the_commands_help(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and message in err and err.count("\n") == 1


@pytest.mark.parametrize("old, new", [
    (["topo", "dgx1v", "--no-legend"], ["topo", "--system", "dgx1v", "--no-legend"]),
    (["p2p", "dgx1v", "--gpus", "0,3"], ["p2p", "--system", "dgx1v", "--gpus", "0,3"]),
    (["compare", "dgx1v", "dgx1", "-b", "1M", "-e", "1M"], ["compare", "--system", "dgx1v", "dgx1", "-b", "1M", "-e", "1M"]),
])
def test_the_system_is_named_with_system_and_a_positional_system_is_a_usage_error(capsys, old, new):
    status, out, err = run(capsys, *new)
    assert status == 0 and err == ""
    status, old_out, old_err = run(capsys, *old)
    spec = " ".join(a for a in old[1:] if a in ("dgx1v", "dgx1"))
    assert status == 2 and old_out == "" and old_err.count("\n") == 1
    assert f"unrecognized arguments: {spec} (see 'dgxtopo {old[0]} --help')" in old_err


def test_every_command_taking_a_system_names_it_with_system():
    from models.present.cli import build_parser
    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    takes = {name for name, sub in choices.items() if any(a.dest == "system" for a in sub._actions)}
    assert takes == {name for name, grammars in TAKES.items() if "spec" in grammars}
    assert all("--system" in choices[name].format_usage() for name in takes)
    assert "--system SPEC [SPEC ...]" in choices["compare"].format_usage()


def test_rail_only_is_a_network_wherever_a_cluster_is_joined(capsys, tmp_path):
    path = tmp_path / "dgxh100.json"
    assert main(["export", "--system", "dgxh100", "--out", str(path)]) == 0
    capsys.readouterr()
    status, out, err = run(capsys, "topo", "--topo-file", str(path), "--nodes", "2", "--network", "rail_only",
                           "--json")
    assert status == 0 and json.loads(out)["system"]


def test_every_out_says_what_it_wrote_unless_json(capsys, tmp_path):
    page = tmp_path / "c.html"
    status, out, _ = run(capsys, "compare", "--system", "dgx1v", "dgx1", "-b", "1M", "-e", "1M", "--out", str(page))
    assert status == 0 and out.endswith(f"wrote {page}\n")
    status, out, _ = run(capsys, "compare", "--system", "dgx1v", "dgx1", "-b", "1M", "-e", "1M", "--out", str(page),
                         "--json")
    assert status == 0 and "wrote" not in out and json.loads(out)["systems"] == ["dgx1v", "dgx1"]
    target = tmp_path / "x.json"
    status, out, _ = run(capsys, "export", "--system", "dgx1v", "--out", str(target), "--json")
    data = json.loads(out)
    assert data["path"] == str(target) and data["file_bytes"] == target.stat().st_size
    assert data["format"] == "json" and data["fabric"]["system"] == "dgx1v" and data["fabric"]["gpus"] == 8


def test_top_is_honoured_in_json(capsys):
    status, out, _ = run(capsys, "whatif", "all_reduce", "--system", "dgx1v", "--fail-each", "nvlink", "--top", "3",
                         "--json", "--executor", "inline")
    data = json.loads(out)
    assert status == 0 and len(data["rows"]) == 3 and data["count"] == 16
    # Data parallel layouts only: still more than 2. One simulated: --top cuts the ranking the
    # same way (the default eight run in docs/json.md's `plan ... --search --top 2 --json`).
    status, out, _ = run(capsys, "plan", "bert-large", "--system", "dgx1v", "--tp", "1", "--pp", "1", "--search",
                         "--simulate", "1", "--top", "2", "--json")
    data = json.loads(out)
    assert status == 0 and len(data["layouts"]) == 2 and data["layouts"][0] == data["best"]


def test_shell_completion_with_argcomplete(monkeypatch, capsys):
    argcomplete = pytest.importorskip("argcomplete")
    import argcomplete.finders
    import argcomplete.io
    import io

    from models.present import cli

    completions = io.StringIO()
    real = argcomplete.autocomplete

    def answer(parser, **kwargs):  # argcomplete writes to fd 8 and exits; capture it instead
        real(parser, exit_method=lambda code=0: None, output_stream=completions, **kwargs)
        raise SystemExit(0)
    monkeypatch.setattr(argcomplete, "autocomplete", answer)
    # argcomplete's debug stream is fd 9, which pytest holds: argcomplete documents overriding it.
    monkeypatch.setattr(argcomplete.finders.CompletionFinder, "_init_debug_stream",
                        lambda self: setattr(argcomplete.io, "debug_stream", io.StringIO()))
    for line, expected in (("dgxtopo coll", {"collective"}), ("dgxtopo topo --sy", {"--system"}),
                           ("dgxtopo collective all_r", {"all_reduce"})):
        completions.seek(0)
        completions.truncate()
        monkeypatch.setenv("_ARGCOMPLETE", "1")
        monkeypatch.setenv("COMP_LINE", line)
        monkeypatch.setenv("COMP_POINT", str(len(line)))
        monkeypatch.setenv("_ARGCOMPLETE_IFS", "\013")
        assert cli.main([]) == 0
        assert {word.strip() for word in completions.getvalue().split("\013")} >= expected, line


def test_completion_is_silent_without_argcomplete(monkeypatch, capsys):
    import builtins
    real_import = builtins.__import__

    def no_argcomplete(name, *args, **kwargs):
        if name == "argcomplete":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_argcomplete)
    monkeypatch.setenv("_ARGCOMPLETE", "1")
    assert main(["systems", "--json"]) == 0 and json.loads(capsys.readouterr().out)["systems"]


def test_json_with_explain_keeps_the_explanation(capsys):
    status, out, _ = run(capsys, "collective", "all_reduce", "--system", "dgx1v", "--gpus", "0,1,4,5",
                         "-b", "1M", "-e", "1M", "--json", "--explain")
    data = json.loads(out)
    assert status == 0 and data["explanation"].startswith("all_reduce on GPUs 0,1,4,5 (4 ranks)")
    status, out, _ = run(capsys, "collective", "all_reduce", "--system", "dgx1v", "-b", "1M", "-e", "1M", "--json")
    assert "explanation" not in json.loads(out)


def test_a_256_rank_header_is_compressed(capsys):
    status, out, _ = run(capsys, "collective", "all_gather", "--system", "16xdgx2", "-b", "1G", "-e", "1G")
    assert status == 0
    assert out.splitlines()[0].startswith("# dgxtopo: predicted nccl-tests all_gather on 16xDGX-2 GPUs 0-255 "
                                          "(256 ranks)")


@pytest.mark.parametrize("argv, message", [
    (["subsets", "all_reduce", "--system", "dgx1v", "-k", "4", "-s", "1G", "--top", "0"], "argument --top"),
    (["subsets", "all_reduce", "--system", "dgx1v", "-k", "4", "-s", "1G", "--top", "-3"], "argument --top"),
    (["collective", "all_reduce", "--system", "dgx1v", "-e", "99999999999999999999"], "too large"),
    (["compare", "--system", "dgx2", "2xdgx1v", "--out", ""], "cannot write to ''"),
    (["topo", "--system", "1000000xdgx2"], "--max-gpus"),
    (["topo", "--system", "300xdgx2"], "300xdgx2 has 4800 GPUs, more than the limit of 4096: raise it with --max-gpus N"),
    (["topo", "--system=-1xdgx2"], "malformed system spec '-1xdgx2'"),
    (["topo", "--system", "1-6xdgx2"], "malformed system spec '1-6xdgx2'"),
    (["subsets", "all_reduce", "--system", "2xdgx1v", "-k", "8", "-s", "1G"],
     f"need 8458 estimates, more than the limit of {MAX_SEARCHES}: raise it with --max-searches N"),
    (["subsets", "all_reduce", "--system", "dgx2", "-k", "8", "-s", "1G", "--limit", "100"],
     "12870 sets of 8 GPUs on DGX-2, more than the limit of 100: raise it with --limit N"),
    (["p2p", "--system", "32xdgx2"], "routes 261632 GPU pairs, more than the limit of 70000: raise it with --limit N"),
    (["collective", "alltoall", "--system", "2xdgx2", "--limit", "500"],
     "alltoall of 32 GPUs routes 512 GPU pairs, more than the limit of 500: raise it with --limit N"),
    (["report", "--system", "5000xdgx1", "--out", "/nonexistent/r.html"], "cannot write to"),
])
def test_silently_wrong_or_unbounded_inputs_are_one_line_exit_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err


def test_every_k_of_every_built_in_system_is_within_the_default_limits(capsys):
    """The default --limit / --max-searches refuse nothing on a built-in system of one host; a
    GB200 NVL72 rack's C(72, 4) = 1,028,790 sets are refused at once, saying how to raise it."""
    from math import comb

    from models.present.cli import MAX_SETS
    sizes = {system: len(topo.gpus(topo.build(system))) for system in topo.SYSTEMS}
    for k in (4, 8):  # the most sets and classes; k = 1 is one class
        for system, n in sizes.items():
            status, _, err = run(capsys, "subsets", "all_reduce", "--system", system, "-k", str(k),
                                 "-s", "1G", "--top", "1", "--json")
            if comb(n, k) <= MAX_SETS:
                assert status == 0, err
            else:
                assert status == 2 and f"{comb(n, k)} sets of {k} GPUs" in err and "--limit" in err


def test_progress_is_silent_when_piped_or_json(capsys):
    from models.present.progress import wants_progress

    class Terminal:
        def isatty(self):
            return True
    assert wants_progress(json_output=False, stream=Terminal())
    assert not wants_progress(json_output=True, stream=Terminal())
    assert not wants_progress(json_output=False)  # pytest captures stderr: not a terminal
    # A ranking run under its progress bar, piped: nothing on stderr (sets of 2 of a DGX-1V take
    # the bar's code path as sets of 4 do, with a sixth of the CPU).
    status, out, err = run(capsys, "subsets", "all_reduce", "--system", "dgx1v", "-k", "2", "-s", "1G")
    assert status == 0 and err == ""


def test_progress_bar_draws_on_a_terminal():
    import io
    pytest.importorskip("tqdm")
    from models.present.progress import progress_bar

    stream = io.StringIO()
    with progress_bar("searching", enabled=True, unit="search", stream=stream, delay=0) as progress:
        for done in range(1, 4):
            progress(done, 3)
    assert "searching" in stream.getvalue() and "3/3" in stream.getvalue()


def test_ctrl_c_is_one_line_exit_130_and_leaves_no_file(tmp_path):
    """SIGINT to a long run (2xdgx1v subsets of 8, 8,458 estimates, the limit raised to let them
    run: minutes of work): one line, status 130. (With a limit below that count the command is
    refused once the sets are sized, which may take less than the second this test waits.)"""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    # The child restores Python's SIGINT handler: it would inherit "ignore" from a parent
    # that ignores SIGINT (as a shell does for background jobs), and then rightly ignore it.
    code = ("import signal, sys, models.present.cli\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "sys.stderr.write('ready\\n'); sys.stderr.flush()\n"
            "raise SystemExit(models.present.cli.main(sys.argv[1:]))\n")
    argv = ["subsets", "all_reduce", "--system", "2xdgx1v", "-k", "8", "-s", "1G", "--max-searches", "10000"]
    child = subprocess.Popen([sys.executable, "-c", code, *argv], cwd=Path(__file__).parents[1],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stderr.readline() == "ready\n"
        import time
        time.sleep(1.0)  # inside the work (it takes minutes)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    assert err == "dgxtopo: interrupted\n" and out == ""
    assert list(tmp_path.iterdir()) == []
