"""``dgxtopo schedule check``: the summary of a schedule that holds (exit 0), one line naming the
GPU, threadblock and step of one that does not (exit 2)."""

from __future__ import annotations

import io
import json

from models.present.cli import main
from models.schedules import to_msccl_xml
from models.schedules.ring import ring_all_gather
from tests.conftest import DATA

AP2LL = str(DATA / "msccl" / "ndv4_ap2ll.xml")


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_a_real_schedule_is_summarised_on_one_screen(capsys):
    status, out, err = _run(capsys, "schedule", "check", AP2LL)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) <= 24 and lines[0].endswith("(allreduce_pairs): OK")
    text = " ".join(out.split())
    for fact in ("all_reduce (coll=\"allreduce\"), in place, LL protocol, 512 B - 40 KiB", "GPUs 8",
                 "chunks 128 per loop", "threadblocks 128 (at most 16 per GPU; the runtime takes 216)",
                 "steps 2672 (at most 22 per threadblock", "channels 2 of nchannels=2",
                 "transfers 224 send/receive pairs", "all_reduce postcondition met"):
        assert fact in text


def test_the_json_says_what_the_summary_says(capsys):
    status, out, _ = _run(capsys, "schedule", "check", AP2LL, "--json")
    data = json.loads(out)
    assert status == 0 and (data["verdict"], data["steps"], data["transfers"], data["dialect"]) == \
        ("ok", 2672, 224, "executor")


def test_a_broken_schedule_is_one_line_naming_where(capsys, tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text(to_msccl_xml(ring_all_gather(3)).replace('type="r"', 'type="rcs"', 1))
    status, out, err = _run(capsys, "schedule", "check", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"dgxtopo: error: {path}: MSCCL schedule, gpu 0, tb 0, step 3: sends to gpu 1")


def test_malformed_xml_and_standard_input(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"<algo name='x'")))
    status, out, err = _run(capsys, "schedule", "check", "-")
    assert status == 2 and out == "" and "standard input: MSCCL schedule XML is not well-formed" in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(to_msccl_xml(ring_all_gather(4)).encode())))
    status, out, _ = _run(capsys, "schedule", "check", "-")
    assert status == 0 and "MSCCL schedule standard input (ring_all_gather_4x1): OK" in out


def test_only_check_is_an_action_yet(capsys):
    status, _, err = _run(capsys, "schedule", "evaluate", AP2LL)
    assert status == 2 and "invalid choice: 'evaluate'" in err
