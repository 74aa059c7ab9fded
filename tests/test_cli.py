"""The dgxtopo command line, run in-process."""

from __future__ import annotations

import json

import pytest

import topo
from models.cli import main
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
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert set(rows) == set(topo.SYSTEMS)
    assert rows["dgx2"][-2:] == ["150.0", "1200.0"]
    assert rows["dgx1v"][-2:] == ["150.0", "150.0"]
    assert rows["dgx1"][-2:] == ["80.0", "80.0"]


def test_systems_json_schema(capsys):
    status, out, _ = run(capsys, "systems", "--json")
    assert status == 0
    systems = json.loads(out)["systems"]
    assert [s["system"] for s in systems] == ["dgx1", "dgx1v", "dgx2"]
    assert set(systems[0]) == {"name", "system", "description", "gpus", "gpu_models", "nvlink_links",
                               "nvswitches", "pcie_switches", "cpus", "nics", "injection_gbps",
                               "bisection_gbps"}
    assert systems[2]["bisection_gbps"] == 1200.0 and systems[2]["nvlink_links"] == 144


def test_topo_prints_nvidia_smi_layout(capsys):
    status, out, _ = run(capsys, "topo", "dgx1v", "--no-legend")
    assert status == 0
    assert out.rstrip("\n") == read_data("dgx1v_nvidia_smi_topo.txt")
    status, out, _ = run(capsys, "topo", "dgx1v")
    assert "Legend:" in out and "NV#" in out


def test_topo_json(capsys):
    status, out, _ = run(capsys, "topo", "DGX-2", "--json")
    data = json.loads(out)
    assert status == 0 and data["system"] == "dgx2"
    assert data["devices"][:2] == ["GPU0", "GPU1"] and data["matrix"][0][1] == "NV6"


@pytest.mark.parametrize("argv, message", [
    (["topo", "dgx3"], "unknown system 'dgx3': expected one of dgx1, dgx1v, dgx2"),
    (["topo"], "the following arguments are required: NAME"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: COMMAND"),
    (["systems", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: ") and message in err


def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
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
    result = subprocess.run([script, "topo", "nope"], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and result.stderr.startswith("dgxtopo: error: unknown system 'nope'")
    result = subprocess.run([script, "systems"], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("system")
