"""``dgxtopo schedule``: ``check``, the summary of a schedule that holds (exit 0), one line naming
the GPU, threadblock and step of one that does not (exit 2); ``evaluate``, nccl-tests' columns of
the schedule beside NCCL and the bound; ``export``, NCCL's rings or the packing written atomically
to a regular file, checked."""

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


def test_evaluate_prints_the_schedule_beside_nccl_and_the_bound(capsys):
    status, out, err = _run(capsys, "schedule", "evaluate", AP2LL, "--system", "dgxa100", "-b", "8K", "-e", "16K",
                            "--explain")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"# dgxtopo: MSCCL schedule {AP2LL} (allreduce_pairs) on DGX A100 GPUs 0-7 (8 ranks)")
    rows = [line.split() for line in lines[3:5]]
    assert [r[0] for r in rows] == ["8192", "16384"] and all(r[9] == "ring/LL" for r in rows)
    assert "channel rate" in out and "bound by llMaxBws" in out


def test_evaluate_json_and_its_default_sizes(capsys):
    status, out, _ = _run(capsys, "schedule", "evaluate", AP2LL, "--system", "dgxa100", "--json")
    data = json.loads(out)
    assert status == 0 and [r["nbytes"] for r in data["rows"]] == [512 * 2**i for i in range(7)]  # 512 B - 40 KiB
    assert data["pricing"]["protocol"] == "LL" and data["rows"][0]["schedule"] == "allreduce_pairs"


def test_evaluate_refuses_a_schedule_for_more_gpus(capsys, tmp_path):
    path = tmp_path / "ring.xml"
    path.write_text(to_msccl_xml(ring_all_gather(4)))
    status, out, err = _run(capsys, "schedule", "evaluate", str(path), "--system", "dgx1v", "--gpus", "0-2")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "is for 4 GPUs, but the selection 0-2 of DGX-1V has 3" in err
    status, _, err = _run(capsys, "schedule", "evaluate", str(path))
    assert status == 2 and "--system SPEC (or --topo-file FILE)" in err


def test_export_writes_a_schedule_the_checker_and_the_evaluator_take(capsys, tmp_path):
    out_file = tmp_path / "ring.xml"
    status, out, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--source", "nccl",
                            "--out", str(out_file))
    assert status == 0 and err == "" and out.startswith(f"# dgxtopo: wrote {out_file}: nccl_ring_all_gather_8x6")
    status, out, _ = _run(capsys, "schedule", "check", str(out_file))
    assert status == 0 and out.splitlines()[0].endswith("OK")
    status, out, _ = _run(capsys, "schedule", "evaluate", str(out_file), "--system", "dgx1v", "-b", "1G", "-e", "1G")
    row = out.splitlines()[3].split()
    assert status == 0 and row[7] == row[8]  # busbw as NCCL's own ring


def test_export_refuses_what_it_cannot_write(capsys, tmp_path):
    status, _, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v")
    assert status == 2 and "--out FILE" in err
    status, _, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--out", str(tmp_path))
    assert status == 2 and "it is a directory, expected a regular file" in err
    status, _, err = _run(capsys, "schedule", "export", "broadcast", "--system", "dgx1v", "--out",
                          str(tmp_path / "b.xml"))
    assert status == 2 and "the packing is written for all_gather, reduce_scatter, all_reduce, received 'broadcast'" in err
    assert not (tmp_path / "b.xml").exists()


def test_export_writes_nccl_trees_and_the_packing_s_all_reduce(capsys, tmp_path):
    out_file = tmp_path / "tree.xml"
    status, out, err = _run(capsys, "schedule", "export", "all_reduce", "--system", "dgx1v", "--gpus", "0,1,2",
                            "--source", "nccl", "--algo", "tree", "--out", str(out_file))
    assert status == 0 and err == "" and out.startswith(f"# dgxtopo: wrote {out_file}: nccl_tree_all_reduce_3x2")
    status, _, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--source", "nccl",
                          "--algo", "tree", "--out", str(out_file))
    assert status == 2 and "NCCL's trees are written for all_reduce, received 'all_gather'" in err
    status, out, _ = _run(capsys, "schedule", "export", "all_reduce", "--system", "dgx1v", "--gpus", "0,3",
                          "--chunks", "2", "--out", str(tmp_path / "ar.xml"))
    assert status == 0 and "packing_all_reduce_2x2, all_reduce on 2 GPUs" in out and out.endswith("(checked: OK)\n")


def test_export_writes_the_packing_for_a_size(capsys, tmp_path):
    """--size writes the packing for that message: LL with 32 chunks a GPU at 64 KiB on DGX-1V GPUs
    0,1,4,5, 4 with --proto Simple (models.schedules.export.sized_chunks' known answers), timed
    there by --evaluate; --explain shows what was timed."""
    status, out, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1,4,5",
                            "--size", "64K", "--evaluate", "--explain", "--out", str(tmp_path / "small.xml"))
    assert status == 0 and err == "" and "packing_all_gather_4x32, all_gather on 4 GPUs, LL," in out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("65536"))
    assert row.split()[7] == "4.78" and row.split()[8] == "4.55"  # the schedule's busbw, NCCL's (LL)
    assert "Chosen for 64 KiB: LL with 32 chunks per GPU" in out and "\n  Simple   1: 21.01, 2: 20.21," in out
    assert 'proto="LL"' in (tmp_path / "small.xml").read_text()
    status, out, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1,4,5",
                            "--size", "64K", "--proto", "Simple", "--evaluate", "--out", str(tmp_path / "s.xml"))
    row = next(line for line in out.splitlines() if line.lstrip().startswith("65536"))
    assert status == 0 and "packing_all_gather_4x4, all_gather on 4 GPUs, Simple," in out and row.split()[7] == "2.45"


def test_export_for_a_size_is_refused_beyond_its_work_limit(capsys, tmp_path):
    """The timings that choose are sized first: beyond --max-events, one line naming the option
    that raises it, exit 2, nothing written (1 GiB on 4 GPUs of a DGX-1V: 119,664 events)."""
    out = tmp_path / "big.xml"
    status, stdout, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1,4,5",
                               "--size", "1G", "--max-events", "100000", "--out", str(out))
    assert status == 2 and stdout == "" and len(err.splitlines()) == 1 and not out.exists()
    assert "119664 simulator events, more than the limit of 100000: raise it with --max-events N" in err


def test_size_is_refused_where_it_would_be_ignored(capsys, tmp_path):
    """--size chooses a packing's chunks: with --chunks, with --source nccl and in evaluate it would
    be silently ignored; one line and exit 2 instead, nothing written."""
    out = tmp_path / "x.xml"
    cases = ((["export", "all_gather", "--chunks", "4"], "without --chunks, received --source packing with --chunks"),
             (["export", "all_gather", "--source", "nccl"], "received --source nccl"),
             (["evaluate", str(DATA / "msccl" / "ndv5_ag-1m.xml")], "give the sizes to time with -b/-e"))
    for argv, words in cases:
        status, _, err = _run(capsys, "schedule", *argv, "--system", "dgx1v", "--gpus", "0,1", "--size", "64K",
                              *(["--out", str(out)] if argv[0] == "export" else []))
        assert status == 2 and words in err and len(err.splitlines()) == 1 and not out.exists()


def test_a_schedule_written_for_zero_bytes_is_timed_at_zero(capsys, tmp_path):
    status, out, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1",
                            "--size", "0", "--evaluate", "--json", "--out", str(tmp_path / "z.xml"))
    assert status == 0 and json.loads(out)["evaluation"]["rows"][0]["nbytes"] == 0


def test_work_limits_are_refused_where_they_would_be_ignored(capsys, tmp_path):
    """--max-events limits the timings (a size's choice, --evaluate's, evaluate's): an export
    without --size or --evaluate would ignore it; --max-hops limits the packing's build: evaluate
    and --source nccl would ignore it. One line and exit 2 instead, nothing written."""
    out = tmp_path / "x.xml"
    cases = ((["export", "all_gather", "--out", str(out), "--max-events", "10"], "expected it with --size or --evaluate"),
             (["export", "all_gather", "--source", "nccl", "--out", str(out), "--max-hops", "10"],
              "expected it with --source packing, received --source nccl"),
             (["evaluate", str(DATA / "msccl" / "ndv5_ag-1m.xml"), "--max-hops", "10"],
              "--max-hops limits the packing export builds"))
    for argv, words in cases:
        status, _, err = _run(capsys, "schedule", *argv, "--system", "dgx1v", "--gpus", "0,1")
        assert status == 2 and words in err and len(err.splitlines()) == 1 and not out.exists()


def test_check_refuses_what_only_evaluate_and_export_read(capsys, tmp_path):
    """check reads FILE alone: a fabric, sizes, limits or an output given to it were ignored with
    exit 0 (review); one line naming the first such option, exit 2, nothing written. --json is
    check's own."""
    path, out = str(DATA / "msccl" / "ndv5_ag-1m.xml"), tmp_path / "x.xml"
    for extra in (["--system", "dgx1v"], ["--max-events", "3"], ["--max-hops", "3"], ["--size", "1M"],
                  ["--chunks", "2"], ["--evaluate"], ["--out", str(out)], ["-b", "1K"], ["--fail", "gpu1"],
                  ["--source", "nccl"], ["-f", "4"]):
        status, stdout, err = _run(capsys, "schedule", "check", path, *extra)
        assert status == 2 and stdout == "" and len(err.splitlines()) == 1 and not out.exists()
        assert f"expected no {extra[0]}, received it" in err
    status, stdout, _ = _run(capsys, "schedule", "check", path, "--json")
    assert status == 0 and json.loads(stdout)


def test_evaluate_is_refused_beyond_its_work_limit(capsys, tmp_path):
    """A schedule's timings are sized before any is simulated (three events a task, a task per
    step and loop, and one latency wait per send of the first loop): Azure's NDv5 all_gather at
    1 MiB, 448 steps of which 224 send, on one loop: 3 x (448 + 224) = 2,016 events. Beyond
    --max-events, one line naming the option; --evaluate's refusal writes nothing."""
    status, stdout, err = _run(capsys, "schedule", "evaluate", str(DATA / "msccl" / "ndv5_ag-1m.xml"), "--system",
                               "dgxh100", "--max-events", "2015")
    assert status == 2 and stdout == "" and len(err.splitlines()) == 1
    assert ("timing schedule 'all_gather_llm' (448 steps) at 1 size up to 1048576 B: 2016 simulator events, more than "
            "the limit of 2015: raise it with --max-events N") in err
    status, stdout, _ = _run(capsys, "schedule", "evaluate", str(DATA / "msccl" / "ndv5_ag-1m.xml"), "--system",
                             "dgxh100", "--max-events", "2016")
    assert status == 0 and "1048576" in stdout
    out = tmp_path / "x.xml"
    status, stdout, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1",
                               "--chunks", "4", "--evaluate", "--max-events", "10", "--out", str(out))
    assert status == 2 and stdout == "" and len(err.splitlines()) == 1 and not out.exists()
    assert "timing schedule 'packing_all_gather_2x4'" in err and "raise it with --max-events N" in err


def test_the_packing_build_is_refused_beyond_its_work_limit(capsys, tmp_path):
    """The packing's build is sized before the trees are packed, in tree hops (GPUs x (GPUs - 1) x
    chunks a GPU, twice for all_reduce): all 72 GPUs of a GB200 NVL72 rack at 128 chunks, 654,336
    hops, beyond the default 75,000; 8 GPUs of a DGX-1V with 1,000 chunks all_reduce, 112,000. One
    line naming --max-hops, exit 2, nothing written; raised, the same export is written."""
    out = tmp_path / "x.xml"
    for argv, words in ((["all_gather", "--system", "gb200nvl72"],
                         "all_gather on 72 GPUs with 128 chunks a GPU: 654336 tree hops, more than the limit of 75000"),
                        (["all_reduce", "--system", "dgx1v", "--chunks", "1000"],
                         "all_reduce on 8 GPUs with 1000 chunks a GPU: 112000 tree hops"),
                        (["all_gather", "--system", "dgx1v", "--gpus", "0,1", "--size", "1M", "--max-hops", "255"],
                         "all_gather on 2 GPUs with 128 chunks a GPU: 256 tree hops, more than the limit of 255")):
        status, stdout, err = _run(capsys, "schedule", "export", *argv, "--out", str(out))
        assert status == 2 and stdout == "" and len(err.splitlines()) == 1 and not out.exists()
        assert words in err and "raise it with --max-hops N" in err
    status, stdout, _ = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1",
                             "--max-hops", "256", "--out", str(out))
    assert status == 0 and out.exists() and "packing_all_gather_2x128" in stdout


def test_export_for_a_size_says_how_it_chose_in_json(capsys, tmp_path):
    """--size --json adds ``choice``: the size, the pick, and every schedule timed (and each
    protocol not timed, why), as --explain prints them: at 64 KiB on DGX-1V GPUs 0,1,4,5 LL with 32
    chunks a GPU, timed beside Simple's 1 to 128 (Simple: 21.01 us with one)."""
    status, out, err = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1,4,5",
                            "--size", "64K", "--json", "--out", str(tmp_path / "small.xml"))
    choice = json.loads(out)["choice"]
    assert status == 0 and (choice["nbytes"], choice["protocol"], choice["chunks_per_gpu"]) == (65536, "LL", 32)
    assert [t["chunks_per_gpu"] for t in choice["tried"] if t["protocol"] == "Simple"] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert round(choice["tried"][0]["time_s"] * 1e6, 2) == 21.01
    chosen = [t for t in choice["tried"] if t["chosen"]]
    assert [(t["protocol"], t["chunks_per_gpu"]) for t in chosen] == [("LL", 32)]
    assert chosen[0]["time_s"] == min(t["time_s"] for t in choice["tried"] if t["time_s"] is not None)
    status, out, _ = _run(capsys, "schedule", "export", "all_gather", "--system", "dgx1v", "--gpus", "0,1,4,5",
                          "--json", "--out", str(tmp_path / "default.xml"))
    assert status == 0 and "choice" not in json.loads(out)
