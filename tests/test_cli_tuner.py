"""``dgxtopo tuner``: the config of NCCL's example tuner plugin written through the output rule,
what it wrote summarised; bad input one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os

import topo
from models.present.cli import main
from models.studies.tuner import parse_tuner_config, tuner_rows


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_file_holds_the_models_rows_and_the_summary_says_so(capsys, tmp_path):
    path = tmp_path / "nccl_tuner.conf"
    status, out, err = _run(capsys, "tuner", "--system", "dgxh100", "--gpus", "0-3", "--out", str(path))
    expected = tuner_rows(topo.build("dgxh100"), gpus="0-3")
    assert status == 0 and err == ""
    assert parse_tuner_config(path.read_text()) == expected.rows
    lines = out.splitlines()
    assert lines[0].startswith(f"# dgxtopo: wrote {path}: {len(expected)} rows, NCCL 2.27.7's choices")
    assert lines[0].endswith("on dgxh100, GPUs 0-3 (1 node, 4 ranks)") and len(lines) == len(expected) + 2
    assert lines[-1].split()[:3] == ["all_reduce", str(expected[-1].min_bytes), "4294967295"]


def test_the_json_lists_the_rows_written(capsys, tmp_path):
    path = tmp_path / "t.conf"
    status, out, _ = _run(capsys, "tuner", "--system", "2xdgx1v", "--nccl", "2.18", "--out", str(path), "--json")
    data = json.loads(out)
    rows = parse_tuner_config(path.read_text())
    assert status == 0 and (data["nccl"], data["gpus"], len(data["rows"])) == ("2.18.6", list(range(16)), len(rows))
    assert [(r["collective"], r["min_bytes"], r["algorithm"], r["nnodes"]) for r in data["rows"]] == \
        [(r.collective, r.min_bytes, r.algorithm, 2) for r in rows]


def test_one_gpu_is_refused_in_one_line_and_nothing_is_written(capsys, tmp_path):
    path = tmp_path / "nccl_tuner.conf"
    status, out, err = _run(capsys, "tuner", "--system", "dgxh100", "--gpus", "3", "--out", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1 and "at least 2 GPUs" in err
    assert not path.exists()


def test_a_path_that_is_not_a_regular_file_is_refused_before_any_work(capsys, tmp_path):
    status, _, err = _run(capsys, "tuner", "--system", "dgxh100", "--out", str(tmp_path))
    assert status == 2 and err.count("\n") == 1 and "expected a regular file" in err
    assert os.listdir(tmp_path) == []


def test_the_fabric_read_is_not_the_file_written(capsys, tmp_path):
    fabric = tmp_path / "fabric.json"
    assert main(["export", "--system", "dgx1v", "--out", str(fabric)]) == 0
    before = fabric.read_bytes()
    capsys.readouterr()
    status, _, err = _run(capsys, "tuner", "--topo-file", str(fabric), "--out", str(fabric))
    assert status == 2 and err.count("\n") == 1 and fabric.read_bytes() == before


def test_an_existing_config_is_replaced_whole(capsys, tmp_path):
    path = tmp_path / "nccl_tuner.conf"
    path.write_text("x" * 100_000)
    assert main(["tuner", "--system", "dgx1v", "--out", str(path)]) == 0
    assert parse_tuner_config(path.read_text()) == tuner_rows(topo.dgx1v()).rows


def test_out_is_required(capsys):
    status, _, err = _run(capsys, "tuner", "--system", "dgx1v")
    assert status == 2 and err.count("\n") == 1 and "--out" in err
