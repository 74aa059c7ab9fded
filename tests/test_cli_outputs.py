"""One rule for every command's output files (models.present.output.check_output_paths, issue 38).

An output may be no input file and no two outputs one file: the same name, another spelling of
it, a symbolic link or a hard link to it. The refusal is one line on standard error, exit status
2, before any work, and every file is left as it was. Before issue 38, ``simulate --graph g.json
--out g.json`` replaced the task graph with HTML and ``--trace t.json --out t.json`` lost the
trace.

Inputs: tests/data/dgx2_12gpu_nccl_tests.json (a measured DGX-2 run, source named in the file) and
tests/data/dgx1v_nvidia_smi_topo.txt (a DGX-1V's nvidia-smi topo -m); a task graph written here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.present.cli import main
from models.present.output import OutputPathError, check_output_paths
from tests.conftest import DATA

V100 = "Tesla V100-SXM2-16GB"
GRAPH = {"tasks": [{"id": "grad", "op": "all_reduce", "gpus": [0, 1], "bytes": 1048576},
                   {"id": "mm", "op": "compute", "gpu": 0, "seconds": 0.001, "after": ["grad"]}]}


@pytest.fixture
def inputs(tmp_path, capsys):
    """One input file of each kind a command reads, in ``tmp_path``."""
    runs = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]
    files = {"run": tmp_path / "m.txt", "smi": tmp_path / "smi.txt", "graph": tmp_path / "g.json",
             "cal": tmp_path / "cal.json", "fabric": tmp_path / "fabric.json"}
    files["run"].write_text(runs["all_reduce"]["raw"])
    files["smi"].write_text((DATA / "dgx1v_nvidia_smi_topo.txt").read_text())
    files["graph"].write_text(json.dumps(GRAPH))
    files["cal"].write_text(json.dumps({"schema": "dgx-topo calibration", "version": 1, "parameters": {}}))
    assert main(["export", "--system", "dgx1v", "--out", str(files["fabric"])]) == 0
    capsys.readouterr()
    return files


# Every command that writes a file, with the input its output collides with ({in}) and the
# option that names the output ({out} is where the collision goes).
WRITERS = [
    ("compare", ["compare", "--topo-file", "{fabric}", "--out", "{out}"], "fabric"),
    ("compare-calibration", ["compare", "--system", "dgx1v", "--calibration", "{cal}", "--out", "{out}"], "cal"),
    ("report", ["report", "--topo-file", "{fabric}", "--out", "{out}"], "fabric"),
    ("calibrate", ["calibrate", "{run}", "--system", "dgx2", "--out", "{out}"], "run"),
    ("check", ["check", "{run}", "--system", "dgx2", "--out", "{out}"], "run"),
    ("import", ["import", "{smi}", "--gpu", V100, "--out", "{out}"], "smi"),
    ("export", ["export", "--topo-file", "{fabric}", "--out", "{out}"], "fabric"),
    ("bound", ["bound", "all_reduce", "--topo-file", "{fabric}", "--out", "{out}"], "fabric"),
    ("whatif", ["whatif", "all_reduce", "--topo-file", "{fabric}", "--fail-each", "nvlink", "--out", "{out}"], "fabric"),
    ("plan", ["plan", "gpt2", "--topo-file", "{fabric}", "--out", "{out}"], "fabric"),
    ("simulate-out", ["simulate", "--graph", "{graph}", "--system", "dgx1v", "--out", "{out}"], "graph"),
    ("simulate-trace", ["simulate", "--graph", "{graph}", "--system", "dgx1v", "--trace", "{out}"], "graph"),
    ("simulate-topo-file", ["simulate", "--graph", "{graph}", "--topo-file", "{fabric}", "--trace", "{out}"],
     "fabric"),
]


def _snapshot(folder: Path) -> dict:
    """Every entry of ``folder``: its kind and, for a file, its bytes (what a refusal must keep)."""
    return {p.name: ("link", os.readlink(p)) if p.is_symlink() else ("dir",) if p.is_dir()
            else ("file", p.read_bytes()) for p in sorted(folder.iterdir())}


def _refused(capsys, argv) -> str:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == 2 and out == "", (status, out, err)
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: "), err
    return err


def _spellings(path: Path) -> dict:
    """The same file named four ways: as given, through '.', by a symbolic link, by a hard link."""
    symlink, hardlink = path.with_name("sym-" + path.name), path.with_name("hard-" + path.name)
    symlink.symlink_to(path.name)
    hardlink.hardlink_to(path)
    return {"name": path, "dotted": path.parent / "." / path.name, "symlink": symlink, "hardlink": hardlink}


@pytest.mark.parametrize("spelling", ["name", "dotted", "symlink", "hardlink"])
@pytest.mark.parametrize("label, argv, source", WRITERS, ids=[w[0] for w in WRITERS])
def test_no_command_writes_over_its_input(capsys, inputs, label, argv, source, spelling):
    out = _spellings(inputs[source])[spelling]
    before = _snapshot(inputs[source].parent)
    filled = [a.format(out=out, **inputs) for a in argv]
    assert "is the input" in _refused(capsys, filled)
    assert _snapshot(inputs[source].parent) == before


@pytest.mark.parametrize("spelling", ["name", "dotted", "symlink", "hardlink"])
def test_simulate_writes_its_two_outputs_to_two_files(capsys, inputs, tmp_path, spelling):
    trace = tmp_path / "t.json"
    trace.write_text("an earlier trace")
    other = _spellings(trace)[spelling]
    before = _snapshot(tmp_path)
    err = _refused(capsys, ["simulate", "--graph", inputs["graph"], "--system", "dgx1v",
                            "--trace", trace, "--out", other])
    assert "it is also where" in err and "expected two different files" in err
    assert _snapshot(tmp_path) == before


def test_simulate_with_two_outputs_apart_writes_both(capsys, inputs, tmp_path):
    status = main(["simulate", "--graph", str(inputs["graph"]), "--system", "dgx1v",
                   "--trace", str(tmp_path / "t.json"), "--out", str(tmp_path / "s.html")])
    capsys.readouterr()
    assert status == 0
    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())
    assert (tmp_path / "s.html").read_text().lstrip().startswith("<!DOCTYPE html>")
    assert json.loads(inputs["graph"].read_text()) == GRAPH


def test_two_outputs_that_do_not_exist_yet_collide_by_their_resolved_name(tmp_path):
    (tmp_path / "sub").mkdir()
    with pytest.raises(OutputPathError, match="expected two different files"):
        check_output_paths({"--out": tmp_path / "x.html", "--trace": tmp_path / "sub" / ".." / "x.html"})
    (tmp_path / "dangling").symlink_to("y.json")  # a link to a file not made yet
    with pytest.raises(OutputPathError, match="expected two different files"):
        check_output_paths({"--out": tmp_path / "dangling", "--trace": tmp_path / "y.json"})
    assert check_output_paths({"--out": tmp_path / "a", "--trace": None}) == {"--out": tmp_path / "a"}


# Path collisions in general: files a and b, a symbolic and a hard link to a, a name not made yet
# and a link to it. The oracle is the file system's: two names collide when they resolve to one
# name or (existing) to one inode.
_NAMES = ["a", "b", "sym-a", "hard-a", "./a", "new", "sym-new", "sub/../new"]


def _world(folder: Path) -> None:
    (folder / "sub").mkdir()
    (folder / "a").write_text("A")
    (folder / "b").write_text("B")
    (folder / "sym-a").symlink_to("a")
    (folder / "hard-a").hardlink_to(folder / "a")
    (folder / "sym-new").symlink_to("new")


def _collide(folder: Path, x: str, y: str) -> bool:
    p, q = os.path.realpath(folder / x), os.path.realpath(folder / y)
    return p == q or (os.path.exists(p) and os.path.exists(q) and os.path.samefile(p, q))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outputs=st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3),
       inputs=st.lists(st.sampled_from(_NAMES[:5]), max_size=2))
def test_outputs_are_refused_exactly_when_they_collide(tmp_path_factory, outputs, inputs):
    folder = tmp_path_factory.mktemp("paths")
    _world(folder)
    before = _snapshot(folder)
    named = {f"--o{k}": folder / name for k, name in enumerate(outputs)}
    clash = any(_collide(folder, o, i) for o in outputs for i in inputs) or \
        any(_collide(folder, outputs[j], outputs[k]) for j in range(len(outputs)) for k in range(j))
    if clash:
        with pytest.raises(OutputPathError):
            check_output_paths(named, inputs=[folder / i for i in inputs])
    else:
        targets = check_output_paths(named, inputs=[folder / i for i in inputs])
        assert len({str(t) for t in targets.values()}) == len(outputs)
    assert _snapshot(folder) == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=st.sampled_from(_NAMES[:5]), out=st.sampled_from(_NAMES), trace=st.sampled_from(_NAMES))
def test_simulate_refuses_every_collision_and_keeps_every_file(tmp_path_factory, capsys, graph, out, trace):
    folder = tmp_path_factory.mktemp("sim")
    _world(folder)
    (folder / "a").write_text(json.dumps(GRAPH))
    (folder / "b").write_text(json.dumps(GRAPH))
    before = _snapshot(folder)
    clash = _collide(folder, out, trace) or _collide(folder, graph, out) or _collide(folder, graph, trace)
    if not clash:  # the refusal is what is tested: the run itself is tested above
        return
    _refused(capsys, ["simulate", "--graph", folder / graph, "--system", "dgx1v", "--out", folder / out,
                      "--trace", folder / trace])
    assert _snapshot(folder) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writer=st.sampled_from(WRITERS), spelling=st.sampled_from(["name", "dotted", "symlink", "hardlink"]),
       other=st.sampled_from(["run", "smi", "graph", "cal", "fabric"]))
def test_every_writer_refuses_any_spelling_of_any_input_it_reads(tmp_path_factory, capsys, writer, spelling, other):
    """Any command that writes, its output any spelling of any file: refused when the file is one it
    reads, and every file kept; a file it does not read is not refused for that (not run here)."""
    _, argv, source = writer
    folder = tmp_path_factory.mktemp("writer")
    files = {"run": folder / "m.txt", "smi": folder / "smi.txt", "graph": folder / "g.json",
             "cal": folder / "cal.json", "fabric": folder / "fabric.json"}
    for name, path in files.items():
        path.write_text(name)  # never read: the refusal comes first
    out = _spellings(files[other])[spelling]
    filled = [a.format(out=out, **files) for a in argv]
    if "{" + other + "}" not in argv:  # not an input of this command
        return
    before = _snapshot(folder)
    assert "is the input" in _refused(capsys, filled)
    assert _snapshot(folder) == before
