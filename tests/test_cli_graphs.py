"""``dgxtopo graphs``: NCCL's graph dump beside the model's channel search, as text and JSON;
bad input one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from models.present.cli import main

DUMP = str(Path(__file__).parent / "data" / "nccl_graph_dgxh100_synthetic.xml")


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_synthetic_dgx_h100_dump_agrees_channel_by_channel(capsys):
    status, out, err = _run(capsys, "graphs", DUMP, "--system", "dgxh100")
    lines = out.splitlines()
    assert status == 0 and err == ""
    assert lines[0].endswith("beside the model's channel search on dgxh100, GPUs 0-7 (NCCL 2.27.7): the same")
    assert lines[1] == ("ring: NCCL 12 x 30 GB/s (bwInter 30), NVL/PIX, same channels; model 12 x 30 GB/s "
                        "(bwInter 30), NVL/PIX, same channels")
    assert lines[3].split() == ["0", "0", "1", "2", "3", "4", "5", "6", "7", "0", "1", "2", "3", "4", "5", "6", "7"]
    assert "*" not in out and len(lines) == 1 + 3 * 2 + 12 + 12 + 8


def test_a_dump_of_another_release_marks_what_the_model_finds_otherwise(capsys, tmp_path):
    # NCCL 2.12 has no NVLS: the dump's NVLS graph has no model side.
    status, out, _ = _run(capsys, "graphs", DUMP, "--system", "dgxh100", "--nccl", "2.12")
    assert status == 0 and "differences marked *" in out.splitlines()[0]
    assert "nvls: NCCL 8 x 40 GB/s (bwInter 60), NVL/PIX, channels differ; model none  * differs: missing" in out


def test_the_json_holds_both_sides_and_a_record_per_channel(capsys):
    status, out, _ = _run(capsys, "graphs", DUMP, "--system", "dgxh100", "--json")
    data = json.loads(out)
    assert status == 0 and data["same"] and data["gpus"] == list(range(8)) and data["nccl"] == "2.27.7"
    assert [(g["graph"], g["nccl"]["nchannels"], g["model"]["bw_intra"], g["differs"]) for g in data["graphs"]] == [
        ("ring", 12, 30e9, []), ("tree", 12, 30e9, []), ("nvls", 8, 40e9, [])]
    assert data["channels"][0] == {"graph": "ring", "channel": 0, "nccl": "0 1 2 3 4 5 6 7",
                                   "model": "0 1 2 3 4 5 6 7", "nccl_nets": "", "same": True, "gpus": list(range(8)),
                                   "nccl_release": "2.27.7"}


def test_malformed_dumps_and_misfits_are_refused_in_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.xml"
    for text, message in (("<graphs", "NCCL graph XML"), ('<graphs version="1"/>', "no <graph>"),
                          (Path(DUMP).read_text().replace('nchannels="8"', 'nchannels="9"'),
                           "nchannels=9 but 8 <channel> element(s)")):
        bad.write_text(text)
        status, out, err = _run(capsys, "graphs", str(bad), "--system", "dgxh100")
        assert status == 2 and out == "" and err.count("\n") == 1 and message in err, err
    status, _, err = _run(capsys, "graphs", DUMP, "--system", "dgx1v", "--gpus", "0-3")
    assert status == 2 and err.count("\n") == 1 and "outside the communicator 0-3" in err
    status, _, err = _run(capsys, "graphs", str(tmp_path), "--system", "dgxh100")
    assert status == 2 and err.count("\n") == 1 and "expected a regular file" in err
    status, _, err = _run(capsys, "graphs", DUMP, "--system", "dgxh100", "--max-input", "1K")
    assert status == 2 and err.count("\n") == 1 and "--max-input" in err
