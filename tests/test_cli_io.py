"""dgxtopo import / export, --topo-file on every system command, --fail / --degrade, run in-process.

Real data: tests/data/dgx1v_nvidia_smi_topo.txt (a DGX-1V's nvidia-smi topo -m, source named in
the file); tests/data/dgx1v_nccl_topo_synthetic.xml is synthetic (says so in the file).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topo
from models.present.cli import main
from tests.conftest import DATA, read_data, watchdog

SMI = str(DATA / "dgx1v_nvidia_smi_topo.txt")
XML = str(DATA / "dgx1v_nccl_topo_synthetic.xml")
V100 = "Tesla V100-SXM2-16GB"


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def ok(capsys, *argv) -> str:
    status, out, err = run(capsys, *argv)
    assert (status, err) == (0, ""), err
    return out


def fails(capsys, *argv) -> str:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "", (status, out)
    assert err.count("\n") == 1 and err.startswith("dgxtopo: error: "), err
    return err


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The DGX-1V text imported once, as a JSON file."""
    path = tmp_path_factory.mktemp("io") / "node.json"
    assert main(["import", SMI, "--gpu", V100, "--out", str(path)]) == 0
    return str(path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The built-in dgx1v exported as JSON and as GraphML."""
    folder = tmp_path_factory.mktemp("export")
    paths = {}
    for kind in ("json", "graphml"):
        paths[kind] = str(folder / f"dgx1v.{kind}")
        assert main(["export", "--system", "dgx1v", "--format", kind, "--out", paths[kind]]) == 0
    return paths


# ------------------------------------------------------------------------------- import
def _cells(text: str) -> list:
    """The matrix rows of an nvidia-smi topo -m printout, split into cells (legend dropped)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    rows = []
    for line in lines:
        if line.startswith("Legend"):
            break
        rows.append(line.split())
    return rows


def test_import_then_topo_reproduces_the_matrix_cell_for_cell(capsys, imported):
    out = ok(capsys, "topo", "--topo-file", imported)
    assert _cells(out) == _cells(read_data("dgx1v_nvidia_smi_topo.txt"))
    assert len(_cells(out)) == 13 and _cells(out)[1][:5] == ["GPU0", "X", "NV1", "NV1", "NV2"]


def test_the_shipped_import_is_what_the_readme_command_writes(capsys, tmp_path):
    """examples/dgx1v_imported.json (read by the README's blocks) is what its ```sh line writes."""
    from pathlib import Path
    import shlex

    root = Path(__file__).parents[1]
    line = next(line for line in (root / "README.md").read_text().splitlines()
                if line.startswith("dgxtopo import ") and "--out examples/dgx1v_imported.json" in line)
    argv = shlex.split(line)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "again.json")
    argv[1] = str(root / argv[1])
    ok(capsys, *argv)
    assert (tmp_path / "again.json").read_text() == (root / "examples" / "dgx1v_imported.json").read_text(), \
        "rerun the README's import command to refresh examples/dgx1v_imported.json"


def test_an_imported_dgx1v_predicts_what_the_built_in_one_does(capsys, imported):
    """The published DGX-1V printout, imported, gives the built-in DGX-1V's P2P matrices and
    collectives figure for figure: the importer rebuilds the same fabric from the text."""
    for builtin, again in ((["p2p", "--system", "dgx1v"], ["p2p", "--topo-file", imported]),
                           (["collective", "broadcast", "--system", "dgx1v"], ["collective", "broadcast",
                                                                               "--topo-file", imported]),
                           (["pairs", "all_reduce", "-s", "64M", "--system", "dgx1v"],
                            ["pairs", "all_reduce", "-s", "64M", "--topo-file", imported])):
        expected = json.loads(ok(capsys, *builtin, "--json", "-b", "8", "-e", "1G", "-f", "32")
                              if builtin[0] == "collective" else ok(capsys, *builtin, "--json"))
        got = json.loads(ok(capsys, *again, "--json", "-b", "8", "-e", "1G", "-f", "32")
                         if again[0] == "collective" else ok(capsys, *again, "--json"))
        assert got.pop("system") == "imported" and expected.pop("system") == "dgx1v"
        assert got == expected


def test_import_summary_says_what_was_imported(capsys, tmp_path, monkeypatch):
    # Relative paths: the wrapped lines below must not depend on where the checkout or the
    # temporary directory (deeper under pytest-xdist) lives.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smi.txt").write_bytes(Path(SMI).read_bytes())
    out = ok(capsys, "import", "smi.txt", "--gpu", "v100-sxm2", "--out", "a.json")
    text = " ".join(out.split())
    assert text.startswith(f"Imported smi.txt (nvidia-smi topo -m) as imported: 8 GPUs {V100} (GPU ids 0-7);")
    # DGX-1V: 16 GPU pairs linked, 8 of them twice (NV2): 24 NVLinks (hybrid cube-mesh).
    assert "16 NVLink bundles (24 links; GPU pairs 8 x NV2, 8 x NV1)" in text
    assert "no NVSwitch (inferred from the NV# counts)" in text
    assert "4 PCIe switches (rebuilt from the PIX/PXB/PHB classes); 2 CPU sockets" in text
    assert "4 NICs (mlx5_0, mlx5_1, mlx5_2, mlx5_3; ports ib_edr)" in text
    assert text.endswith("Wrote a.json.")
    assert all(len(line) <= 79 for line in out.splitlines())


def test_gpu_names_nvidia_smi_prints_and_short_forms_give_the_same_file(capsys, tmp_path):
    texts = []
    for name in (V100, "v100-sxm2", "V100SXM2", "Tesla V100-SXM2-32GB", "Tesla V100-SXM3-32GB"):
        ok(capsys, "import", SMI, "--gpu", name, "--out", tmp_path / "g.json")
        texts.append((tmp_path / "g.json").read_text())
    assert texts[0] == texts[1] == texts[2]  # the catalogue's V100-SXM2
    assert "Tesla V100-SXM2-32GB" in texts[3] and texts[3] != texts[0]  # the 32 GB part, by its size
    assert "V100-SXM3" in texts[4] and texts[4] != texts[0]


def test_import_without_out_writes_nothing(capsys, tmp_path):
    before = set(os.listdir(tmp_path))
    out = ok(capsys, "import", SMI, "--gpu", V100)
    assert "Nothing written (pass --out FILE" in " ".join(out.split())
    assert set(os.listdir(tmp_path)) == before


def test_import_nccl_xml_auto_detected(capsys, tmp_path):
    out = ok(capsys, "import", XML, "--out", tmp_path / "x.json")
    text = " ".join(out.split())
    assert "(NCCL topology XML)" in text and "8 GPUs Tesla V100-SXM2-16GB" in text
    assert "no NVSwitch (from the XML's NVLink targets)" in text
    G = topo.from_json((tmp_path / "x.json").read_text())
    assert G.edges["gpu0", "gpu3"]["links"] == 2 and G.edges["gpu0", "gpu1"]["links"] == 1


def test_import_nvswitch_inferred_and_overridden(capsys, tmp_path):
    """A DGX-2 matrix (NV6 between every pair of 16 GPUs) needs NVSwitches: 16 x 15 x 6 links
    would exceed the V100's 6 NVLink ports; --no-nvswitch is therefore refused."""
    text = topo.format_connection_matrix(topo.connection_matrix(topo.dgx2()))
    (tmp_path / "dgx2.txt").write_text(text)
    out = " ".join(ok(capsys, "import", tmp_path / "dgx2.txt", "--gpu", "Tesla V100-SXM3-32GB").split())
    assert "12 NVSwitches (inferred from the NV# counts)" in out and "16 GPUs" in out
    assert "102 NVLink bundles (144 links)" in out and "trunks between them" in out  # DGX-2's wiring
    out = " ".join(ok(capsys, "import", tmp_path / "dgx2.txt", "--gpu", "v100-sxm3", "--nvswitch",
                      "--nvswitches", "3").split())
    assert "3 NVSwitches (--nvswitch)" in out and "48 NVLink bundles (96 links)" in out
    fails(capsys, "import", tmp_path / "dgx2.txt", "--gpu", "v100-sxm3", "--no-nvswitch")


@pytest.mark.parametrize("argv, message", [
    ([SMI], "nvidia-smi topo -m does not name the GPU model: expected --gpu MODEL"),
    ([SMI, "--gpu", "v100"], "GPU model 'v100' is ambiguous"),
    ([SMI, "--gpu", "k80"], "unknown GPU model 'k80'"),
    ([SMI, "--gpu", "v100-sxm2", "--cpu", "nope"], "unknown CPU 'nope'"),
    ([SMI, "--gpu", "v100-sxm2", "--pcie", "nvlink2"], "pcie"),
    ([SMI, "--gpu", "v100-sxm2", "--format", "nccl-xml"], "NCCL topology XML"),
    ([XML, "--format", "nvidia-smi", "--gpu", "v100-sxm2"], "nvidia-smi topo -m"),
    ([XML, "--cpu", "x", "--nvswitch"], "--cpu, --nvswitch/--no-nvswitch apply to nvidia-smi text"),
    (["/nonexistent/file"], "'/nonexistent/file': No such file"),
    ([SMI, "--gpu", "v100-sxm2", "--out", "/nonexistent/dir/x.json"], "/nonexistent/dir"),
    ([SMI, "--gpu", "v100-sxm2", "--format", "csv"], "invalid choice: 'csv'"),
])
def test_import_errors(capsys, argv, message):
    assert message in fails(capsys, "import", *argv)


def test_import_errors_name_the_file_and_line(capsys, tmp_path):
    lines = read_data("dgx1v_nvidia_smi_topo.txt").splitlines()
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(lines[:5]))  # rows GPU4.. and the NICs missing
    err = fails(capsys, "import", path, "--gpu", V100)
    assert str(path) in err and "GPU4" in err
    path.write_text("\n".join(lines).replace("NV2   SYS   SYS   SYS   PIX     PHB     SYS     SYS     0-19",
                                             "NV2   SYS   SYS   SYS   PXB     PHB     SYS     SYS     0-19", 1))
    assert "line" in fails(capsys, "import", path, "--gpu", V100)


# ------------------------------------------------------------------------------- export
def test_export_round_trips_give_the_same_predictions(capsys, exported):
    builtin = json.loads(ok(capsys, "collective", "all_reduce", "--system", "dgx1v", "-b", "8", "-e", "1G",
                            "-f", "64", "--json"))
    for path in exported.values():
        again = json.loads(ok(capsys, "collective", "all_reduce", "--topo-file", path, "-b", "8", "-e", "1G",
                              "-f", "64", "--json"))
        assert again == builtin
    assert ok(capsys, "p2p", "--topo-file", exported["graphml"]) == ok(capsys, "p2p", "--system", "dgx1v")


def test_export_prints_what_it_wrote(capsys, tmp_path):
    out = ok(capsys, "export", "--system", "2xdgx1v:rail", "--format", "graphml", "--out", tmp_path / "c.graphml")
    assert out == f"wrote {tmp_path / 'c.graphml'} (graphml: 2xDGX-1V, 16 GPUs, 41 nodes, 156 edges)\n"
    G = topo.from_graphml((tmp_path / "c.graphml").read_text())
    assert G.graph["network"] == "rail" and len(topo.gpus(G)) == 16


def test_export_of_a_whatif(capsys, tmp_path):
    ok(capsys, "export", "--system", "dgx1v", "--fail", "gpu0-gpu3:1", "--out", tmp_path / "f.json")
    G = topo.from_json((tmp_path / "f.json").read_text())
    assert G.edges["gpu0", "gpu3"]["links"] == 1 and G.graph["name"] == "DGX-1V (fail gpu0-gpu3:1)"


@pytest.mark.parametrize("argv, message", [
    (["--system", "dgx1v"], "the following arguments are required: --out"),
    (["--system", "dgx1v", "--out", "{tmp}"], "it is a directory"),
    (["--system", "dgx1v", "--format", "dot", "--out", "{tmp}/x"], "invalid choice: 'dot'"),
    (["--out", "{tmp}/x"], "the following arguments are required: --system SPEC (or --topo-file FILE)"),
    (["--system", "nope", "--out", "{tmp}/x"], "unknown system 'nope'"),
])
def test_export_errors_write_nothing(capsys, tmp_path, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert message in fails(capsys, "export", *argv)
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------- --topo-file
SYSTEM_COMMANDS = {
    "topo": ["topo", "--no-legend"],
    "p2p": ["p2p", "--gpus", "0,3"],
    "collective": ["collective", "all_reduce"],
    "pairs": ["pairs", "all_reduce", "-s", "1M", "--json"],
    "subsets": ["subsets", "all_reduce", "-k", "7", "-s", "1M", "--top", "2"],
    "compare": ["compare", "-b", "1M", "-e", "1M"],
    "export": ["export", "--out", "{tmp}/e.json"],
}


def _argv(name, tmp_path, *extra):
    return [a.replace("{tmp}", str(tmp_path)) for a in SYSTEM_COMMANDS[name] + list(extra)]


@pytest.mark.parametrize("name", sorted(SYSTEM_COMMANDS))
def test_every_system_command_takes_a_topo_file(capsys, tmp_path, imported, name):
    out = ok(capsys, *_argv(name, tmp_path, "--topo-file", imported))
    assert out.strip()


@pytest.mark.parametrize("name", sorted(set(SYSTEM_COMMANDS) - {"compare"}))
def test_system_and_topo_file_exactly_one(capsys, tmp_path, imported, name):
    option = ["--system", "dgx1v"]
    if name == "topo" or name == "p2p" or name == "export":
        argv = _argv(name, tmp_path)[:1] + option + _argv(name, tmp_path)[1:]
    else:
        argv = _argv(name, tmp_path) + option
    assert "received both" in fails(capsys, *argv, "--topo-file", imported)
    assert "(or --topo-file FILE)" in fails(capsys, *_argv(name, tmp_path))


def test_calibrate_check_and_report_take_topo_files(capsys, tmp_path):
    """A DGX-2 exported and read back calibrates and checks as the built-in one does (real
    nccl-tests output of a DGX-2, tests/data/dgx2_12gpu_nccl_tests.json)."""
    raw = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]["all_reduce"]["raw"]
    (tmp_path / "run.txt").write_text(raw)
    ok(capsys, "export", "--system", "dgx2", "--out", tmp_path / "dgx2.json")
    out = ok(capsys, "calibrate", tmp_path / "run.txt", "--topo-file", tmp_path / "dgx2.json",
             "--out", tmp_path / "cal.json")
    assert "wrote" in out and json.loads((tmp_path / "cal.json").read_text())["version"] == 1
    builtin = ok(capsys, "check", tmp_path / "run.txt", "--system", "dgx2", "--json")
    assert ok(capsys, "check", tmp_path / "run.txt", "--topo-file", tmp_path / "dgx2.json", "--json") == builtin
    assert "received both" in fails(capsys, "check", tmp_path / "run.txt", "--system", "dgx2", "--topo-file",
                                    tmp_path / "dgx2.json")
    assert "required: --system SPEC (or --topo-file FILE)" in fails(capsys, "calibrate", tmp_path / "run.txt",
                                                                   "--out", tmp_path / "c2.json")
    # The report of a GraphML file: a DGX A100 (one NCCL channel search per set class, where a
    # DGX-1V's report adds its 73 classes, the training step and the measurements: the same
    # page code, tested on the built-in systems in tests/models/present/test_report.py).
    ok(capsys, "export", "--system", "dgxa100", "--out", tmp_path / "a100.graphml")
    out = ok(capsys, "report", "--topo-file", tmp_path / "a100.graphml", "--out", tmp_path / "r.html")
    assert out.startswith("wrote ") and out.rstrip().endswith("comparing DGX A100")


def test_compare_builtin_with_imported(capsys, imported):
    data = json.loads(ok(capsys, "compare", "--system", "dgx1v", "--topo-file", imported, "-b", "1M", "-e", "1M", "--json"))
    assert data["systems"] == ["dgx1v", "imported"] and data["ngpus"] == 8


def test_cluster_of_a_topo_file_is_the_cluster_of_the_system(capsys, exported):
    for network in ("fat_tree", "rail"):
        spec = "2xdgx1v" + ("" if network == "fat_tree" else ":rail")
        builtin = json.loads(ok(capsys, "collective", "all_reduce", "--system", spec, "--json"))
        again = json.loads(ok(capsys, "collective", "all_reduce", "--topo-file", exported["json"],
                              "--nodes", "2", "--network", network, "--json"))
        assert again == builtin


def test_cluster_of_an_imported_node(capsys, imported):
    data = json.loads(ok(capsys, "p2p", "--topo-file", imported, "--nodes", "2", "--gpus", "0,8", "--json"))
    assert data["system"] == "2ximported" and data["path_type"][0][1] == "NET"


@pytest.mark.parametrize("content, message", [
    (None, "cannot read topology file"),
    ("", "is an empty file: expected a fabric"),
    ("hello\n", "is other text: expected a fabric"),
    ("\x00\xff\xfe binary", "is binary data, not text: expected a fabric"),
    ("{", "fabric JSON: line 1: expected JSON"),
    ("{}", "expected an object with format 'dgx-topo fabric'"),
    ('{"format": "dgx-topo fabric", "version": 99}', "version 99 is not supported"),
    ("<graphml>", "GraphML"),
    ("<x/>", "GraphML"),
    ("<system version='1'></system>", "is an NCCL topology XML: expected a fabric written by 'dgxtopo import' or "
                                      "'dgxtopo export' (JSON or GraphML); import it first"),
    ("GPU0 GPU1\nGPU0 X NV1\n", "is nvidia-smi topo -m output: expected a fabric written by 'dgxtopo import' or "
                                 "'dgxtopo export' (JSON or GraphML); import it first"),
])
def test_bad_topo_files(capsys, tmp_path, content, message):
    path = tmp_path / "f"
    if content is not None:
        path.write_bytes(content.encode("utf-8", errors="surrogateescape") if isinstance(content, str) else content)
    err = fails(capsys, "topo", "--topo-file", path)
    assert message in err and str(path) in err


def test_topo_file_that_is_not_a_regular_file(capsys, tmp_path):
    os.mkfifo(tmp_path / "fifo")  # reading it would block: refused up front
    assert "expected a regular file" in fails(capsys, "topo", "--topo-file", tmp_path / "fifo")
    assert "topology file" in fails(capsys, "topo", "--topo-file", tmp_path)


@pytest.mark.parametrize("argv, message", [
    (["topo", "--system", "dgx1v", "--nodes", "2"], "--nodes N joins copies of a --topo-file fabric"),
    (["topo", "--system", "dgx1v", "--network", "rail"], "--network applies to a cluster"),
    (["topo", "--topo-file", "{file}", "--nodes", "0"], "argument --nodes"),
    (["topo", "--topo-file", "{file}", "--nodes", "3", "--max-gpus", "16"], "has 24 GPUs, more than the limit of 16"),
    (["collective", "all_reduce", "--topo-file", "{file}", "--max-gpus", "4"], "has 8 GPUs, more than the limit of 4"),
    (["compare", "--network", "rail"], "--network applies to a cluster"),
    (["compare"], "expected at least one system"),
])
def test_cluster_option_errors(capsys, imported, argv, message):
    assert message in fails(capsys, *[a.replace("{file}", imported) for a in argv])


# ------------------------------------------------------------------------------ what-ifs
def test_fail_one_link_shows_in_topo_and_p2p(capsys):
    out = ok(capsys, "topo", "--system", "dgx1v", "--no-legend", "--fail", "gpu0-gpu3:1")
    assert _cells(out)[1][:5] == ["GPU0", "X", "NV1", "NV1", "NV1"]
    assert _cells(ok(capsys, "topo", "--system", "dgx1v", "--fail", "gpu0-gpu3"))[1][4] == "PHB"
    # An NV2 pair at half bandwidth copies like an NV1 pair (the model reads the edge's bandwidth).
    degraded = json.loads(ok(capsys, "p2p", "--system", "dgx1v", "--json", "--degrade", "gpu0-gpu3=0.5"))
    assert degraded["unidirectional_gbps"][0][3] == degraded["unidirectional_gbps"][0][1]
    baseline = json.loads(ok(capsys, "p2p", "--system", "dgx1v", "--json"))
    assert baseline["unidirectional_gbps"][0][3] > degraded["unidirectional_gbps"][0][3]


def test_failed_nvswitch_costs_allreduce_bandwidth(capsys):
    """DGX-2: every GPU has one NVLink to each of 6 switches of its baseboard; without one,
    5 are left, so ring all-reduce loses bandwidth."""
    base = json.loads(ok(capsys, "collective", "all_reduce", "--system", "dgx2", "--json"))["rows"][0]
    failed = json.loads(ok(capsys, "collective", "all_reduce", "--system", "dgx2", "--fail", "nvswitch3",
                           "--json"))["rows"][0]
    assert failed["busbw_gbps"] < base["busbw_gbps"]
    out = ok(capsys, "collective", "all_reduce", "--system", "dgx2", "--fail", "nvswitch3")
    assert out.startswith("# dgxtopo: predicted nccl-tests all_reduce on DGX-2 (fail nvswitch3) GPUs 0-15")


def test_failed_gpu_leaves_the_others_numbered(capsys):
    out = ok(capsys, "topo", "--system", "dgx1v", "--fail", "gpu2", "--no-legend")
    assert _cells(out)[0][:8] == ["GPU0", "GPU1", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7", "mlx5_0"]
    data = json.loads(ok(capsys, "pairs", "all_reduce", "--system", "dgx1v", "--fail", "gpu2", "-s", "1M",
                         "--json"))
    assert len(data["busbw_gbps"]) == 7


def test_whatifs_on_ranked_commands_and_compare(capsys):
    data = json.loads(ok(capsys, "subsets", "all_reduce", "--system", "dgx1v", "-k", "2", "-s", "64M", "--json",
                         "--fail", "gpu0-gpu3", "--fail", "gpu0-gpu4"))
    assert [0, 3] not in [s["gpus"][:2] for s in data["subsets"][:10]]  # now PCIe only: not near the top
    data = json.loads(ok(capsys, "compare", "--system", "dgx1v", "dgx1", "--fail", "gpu0-gpu3", "-b", "1M", "-e", "1M",
                         "--json"))
    assert data["systems"] == ["DGX-1V (fail gpu0-gpu3)", "DGX-1 (fail gpu0-gpu3)"]


@pytest.mark.parametrize("argv, message", [
    (["--fail", "nvswitch3"], "failure spec 'nvswitch3' names no node of DGX-1V"),
    (["--fail", "gpu0-gpu5"], "'gpu0' and 'gpu5' are not directly linked in DGX-1V"),
    (["--fail", "gpu0-gpu3:9"], "the gpu0-gpu3 bundle has 2, expected 1 to 2"),
    (["--fail", "cpu0"], "failing cpu0 disconnects the fabric"),
    (["--degrade", "gpu0-gpu3=2"], "degrade factor 2 in 'gpu0-gpu3=2' is out of range"),
    (["--degrade", "gpu0-gpu3"], "has no '=FACTOR'"),
    (["--fail"], "expected one argument"),
])
def test_whatif_errors(capsys, argv, message):
    for command in (["topo", "--system", "dgx1v"], ["collective", "all_reduce", "--system", "dgx1v"]):
        assert message in fails(capsys, *command, *argv)


# ---------------------------------------------------------------------------------- fuzz


NODE_IDS = st.sampled_from(["gpu0", "gpu3", "gpu7", "gpu9", "nvswitch3", "mlx5_1", "pcie0", "cpu1", "h0.gpu0",
                            "h1.gpu3", "net.leaf0", "", "-", "gpu0-gpu3"])
FAIL_SPECS = st.one_of(
    st.builds(lambda a, b, k: f"{a}-{b}{k}", NODE_IDS, NODE_IDS,
              st.sampled_from(["", ":1", ":2", ":0", ":-1", ":x", ":99999999999999999999"])),
    NODE_IDS, st.text(alphabet="gpu0123-:=.,_ ", max_size=12))
DEGRADE_SPECS = st.one_of(
    st.builds(lambda a, b, f: f"{a}-{b}={f}", NODE_IDS, NODE_IDS,
              st.sampled_from(["0.5", "1", "0", "2", "-1", "nan", "inf", "1e-300", "1e-400", "x", ""])),
    st.text(alphabet="gpu0123-:=.e ", max_size=12))
JUNK = st.one_of(st.binary(max_size=64),
                 st.sampled_from([b"{}", b"[]", b"null", b"{\"format\": \"dgx-topo fabric\", \"version\": 1}",
                                  b"<graphml/>", b"<?xml version='1.0'?><system/>", b"GPU0\n", b"<!DOCTYPE x [",
                                  b"{" * 5000, b"\xef\xbb\xbf{}"]))


@st.composite
def io_command_lines(draw):
    kind = draw(st.sampled_from(["topo", "p2p", "collective", "export", "import"]))
    system = draw(st.sampled_from([["--system", "dgx1v"], ["--system", "2xdgx1v"], ["--topo-file", "{node}"],
                                   ["--topo-file", "{junk}"], ["--topo-file", "{tmp}"], ["--topo-file", "{tmp}/fifo"],
                                   ["--topo-file", "{node}", "--nodes", "2"], []]))
    whatif = []
    for _ in range(draw(st.integers(0, 2))):
        whatif += ["--fail", draw(FAIL_SPECS)]
    for _ in range(draw(st.integers(0, 1))):
        whatif += ["--degrade", draw(DEGRADE_SPECS)]
    tail = ["--max-gpus", "16"]
    if kind == "import":
        return ["import", draw(st.sampled_from(["{junk}", "{smi}", "{xml}", "{tmp}/fifo"])),
                *draw(st.sampled_from([[], ["--gpu", "v100-sxm2"], ["--gpu", "x"], ["--format", "nccl-xml"]])),
                "--out", draw(st.sampled_from(["{tmp}/out.json", "{tmp}", "{tmp}/fifo"]))]
    if kind == "collective":
        return ["collective", "all_reduce", *system, *whatif, *tail]
    if kind == "export":
        return ["export", *system, *whatif, "--out", draw(st.sampled_from(["{tmp}/e.json", "{tmp}/fifo"])), *tail]
    return [kind, *system, *whatif, *tail] + (["--gpus", "0,1"] if kind == "p2p" else [])


@pytest.fixture(scope="module")
def fuzzdir(tmp_path_factory, exported):
    path = tmp_path_factory.mktemp("fuzz_io")
    os.mkfifo(path / "fifo")
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(argv=io_command_lines(), junk=JUNK)
def test_any_io_command_line_is_status_0_or_2_with_one_line(fuzzdir, exported, argv, junk):
    (fuzzdir / "junk").write_bytes(junk)
    for name in ("out.json", "e.json"):
        (fuzzdir / name).unlink(missing_ok=True)
    before = sorted(p.name for p in fuzzdir.iterdir())
    values = {"{node}": exported["json"], "{junk}": str(fuzzdir / "junk"), "{smi}": SMI, "{xml}": XML,
              "{tmp}": str(fuzzdir)}
    for key, value in values.items():
        argv = [a.replace(key, value) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with watchdog(60), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status in (0, 2), (argv, status, err.getvalue())
    assert "Traceback" not in err.getvalue()
    if status == 2:
        assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("dgxtopo: error: "), (argv, err.getvalue())
        assert out.getvalue() == ""
        assert sorted(p.name for p in fuzzdir.iterdir()) == before, argv  # nothing written on error


# ------------------------------------------------ imports that give back the machine (issue 24)
def test_topo_printout_imports_back_to_the_builtin_figures(capsys, tmp_path):
    """dgxtopo topo --system dgxh100 > file; dgxtopo import file: the same NVLS figure as --system dgxh100."""
    (tmp_path / "h100.txt").write_text(ok(capsys, "topo", "--system", "dgxh100"))
    out = " ".join(ok(capsys, "import", tmp_path / "h100.txt", "--gpu", "NVIDIA H100 80GB HBM3",
                      "--out", tmp_path / "h100.json").split())
    assert "From dgxh100, what the text does not say:" in out and "5/4/4/5 links from each GPU" in out
    argv = ["collective", "all_reduce", "-b", "1G", "-e", "1G", "--json"]
    imported = json.loads(ok(capsys, *argv, "--topo-file", tmp_path / "h100.json"))
    builtin = json.loads(ok(capsys, *argv, "--system", "dgxh100"))
    assert imported["rows"] == builtin["rows"] and imported["rows"][0]["algorithm"] == "nvls"


def test_import_options_of_the_known_system(capsys, tmp_path):
    (tmp_path / "h100.txt").write_text(ok(capsys, "topo", "--system", "dgxh100"))
    out = " ".join(ok(capsys, "import", tmp_path / "h100.txt", "--gpu", "h100", "--like", "none",
                      "--nvswitch-links", "5,4,4,5", "--out", tmp_path / "x.json").split())
    assert "From dgxh100" not in out and "4 NVSwitches" in out
    G = topo.from_json((tmp_path / "x.json").read_text())
    assert [G.edges["gpu0", f"nvswitch{s}"]["links"] for s in range(4)] == [5, 4, 4, 5]
    (tmp_path / "tray.txt").write_text(ok(capsys, "topo", "--system", "gb200nvl72"))
    out = " ".join(ok(capsys, "import", tmp_path / "tray.txt", "--gpu", "gb200", "--hosts", "1").split())
    assert "4 GPUs NVIDIA GB200 (GPU ids 0-3)" in out
    out = " ".join(ok(capsys, "import", tmp_path / "tray.txt", "--gpu", "gb200").split())
    assert "72 GPUs NVIDIA GB200 (18 hosts of GPU ids 0-3)" in out and "8 NICs per host" in out


@pytest.mark.parametrize("argv, message", [
    (["--nvswitch-links", "5,4,x"], "--nvswitch-links '5,4,x': expected whole numbers separated by commas"),
    (["--nvswitch-links", "5,4,4"], "nvswitch_links=5/4/4: expected links per NVSwitch chip that add up to the NV18"),
    (["--like", "dgx9"], "like='dgx9': expected 'auto', None or a built-in system"),
    (["--hosts", "2"], "hosts=2: the GPUs' NVLink domain is one host in dgxh100"),
    (["--name", "\x1b[2Jx"], "graph attribute 'name' is '\\x1b[2Jx': expected printable text"),
])
def test_import_option_errors_of_the_known_system(capsys, tmp_path, argv, message):
    (tmp_path / "h100.txt").write_text(ok(capsys, "topo", "--system", "dgxh100"))
    assert message in fails(capsys, "import", tmp_path / "h100.txt", "--gpu", "h100", *argv)


def test_export_nccl_xml_and_import_it(capsys, tmp_path):
    out = ok(capsys, "export", "--system", "dgx2", "--format", "nccl-xml", "--out", tmp_path / "dgx2.xml")
    assert out.startswith(f"wrote {tmp_path / 'dgx2.xml'} (nccl-xml: DGX-2")
    assert (tmp_path / "dgx2.xml").read_text().startswith('<system version="1" name="DGX-2">')
    out = " ".join(ok(capsys, "import", tmp_path / "dgx2.xml", "--out", tmp_path / "dgx2.json").split())
    assert "12 NVSwitches (from the XML's NVLink targets)" in out
    argv = ["collective", "all_reduce", "-b", "1G", "-e", "1G", "--json"]
    assert (json.loads(ok(capsys, *argv, "--topo-file", tmp_path / "dgx2.json"))["rows"]
            == json.loads(ok(capsys, *argv, "--system", "dgx2"))["rows"])
    # A GB200 NVL72 rack: NCCL's XML of its host 0, one tray, whose GPUs reach Grace by C2C only.
    out = ok(capsys, "export", "--system", "gb200nvl72", "--format", "nccl-xml", "--out", tmp_path / "g.xml")
    assert out == f"wrote {tmp_path / 'g.xml'} (nccl-xml: GB200 NVL72, host 0 of 18, 4 GPUs)\n"
    shape = json.loads(ok(capsys, "export", "--system", "gb200nvl72", "--format", "nccl-xml", "--out",
                          tmp_path / "g.xml", "--json"))
    assert (shape["host"], shape["host_gpus"], shape["fabric"]["gpus"]) == (0, 4, 72)
    ok(capsys, "import", tmp_path / "g.xml", "--gpu", "gb200", "--out", tmp_path / "g.json")
    assert (json.loads(ok(capsys, *argv, "--topo-file", tmp_path / "g.json"))["rows"]
            == json.loads(ok(capsys, *argv, "--system", "gb200nvl72", "--gpus", "0-3"))["rows"])


def test_a_fabric_file_with_a_terminal_escape_is_refused(capsys, tmp_path):
    data = json.loads(topo.to_json(topo.build("dgx1v")))
    data["graph"]["graph"]["name"] = "\x1b[2J\x1b[Hpwned"
    (tmp_path / "evil.json").write_text(json.dumps(data))
    err = fails(capsys, "topo", "--topo-file", tmp_path / "evil.json")
    assert "\x1b" not in err and "expected printable text" in err


# ------------------------------------------------------- inputs: every file a command reads
# issue 24: each case ends within seconds in exit 0 with the answer, or exit 2 and one line.
DGX2_RUNS = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())["collectives"]


@pytest.fixture
def measured_run(tmp_path):
    """The given DGX-2 all_reduce run as a file (tests/data/dgx2_12gpu_nccl_tests.json)."""
    path = tmp_path / "m.txt"
    path.write_text(DGX2_RUNS["all_reduce"]["raw"])
    return path


def _calibration_file(tmp_path, **parameters):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"schema": "dgx-topo calibration", "version": 1, "parameters": parameters}))
    return path


@pytest.mark.parametrize("argv", [
    ["check", "{fifo}", "--system", "dgx2"], ["calibrate", "{fifo}", "--system", "dgx2", "--out", "{tmp}/c.json"],
    ["collective", "all_reduce", "--system", "dgx2", "--calibration", "{fifo}"],
    ["topo", "--topo-file", "{fifo}"], ["import", "{fifo}", "--gpu", V100],
    ["check", "{tmp}", "--system", "dgx2"], ["check", "/dev/zero", "--system", "dgx2"],
])
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(capsys, tmp_path, argv):
    os.mkfifo(tmp_path / "fifo")  # nobody writes to it: reading it would block for ever
    argv = [a.replace("{fifo}", str(tmp_path / "fifo")).replace("{tmp}", str(tmp_path)) for a in argv]
    with watchdog(20):
        err = fails(capsys, *argv)
    assert "expected a regular file" in err and ("FIFO" in err or "directory" in err or "device" in err)


def test_inputs_are_sized_before_they_are_read(capsys, tmp_path, measured_run):
    err = fails(capsys, "check", measured_run, "--system", "dgx2", "--max-input", "1K")
    assert f"is {measured_run.stat().st_size} bytes, more than the limit of 1024 bytes" in err
    assert "raise it with --max-input SIZE" in err
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:  # sparse: 17 MiB of nothing, over the 16 MiB default
        handle.truncate(17 * 2**20)
    assert "more than the limit of 16777216 bytes" in fails(capsys, "check", big, "--system", "dgx2")
    assert "more than the limit" in fails(capsys, "topo", "--topo-file", measured_run, "--max-input", "100")
    assert "more than the limit" in fails(capsys, "import", SMI, "--gpu", V100, "--max-input", "100")


def test_an_out_that_is_an_input_is_refused_and_the_input_kept(capsys, tmp_path, measured_run):
    before = measured_run.read_text()
    (tmp_path / "hard.txt").hardlink_to(measured_run)
    for out in (measured_run, tmp_path / "." / "m.txt", tmp_path / "hard.txt"):
        assert "is the input" in fails(capsys, "calibrate", measured_run, "--system", "dgx2", "--out", out)
        assert "is the input" in fails(capsys, "check", measured_run, "--system", "dgx2", "--out", out)
    smi = tmp_path / "x.txt"
    smi.write_text(Path(SMI).read_text())
    assert "is the input" in fails(capsys, "import", smi, "--gpu", V100, "--out", smi)
    cal = _calibration_file(tmp_path)
    assert "is the input" in fails(capsys, "compare", "--system", "dgx1v", "--calibration", cal, "--out", cal)
    assert measured_run.read_text() == before and smi.read_text() == Path(SMI).read_text()


@pytest.mark.parametrize("out, message", [
    ("-", "standard output is not one"), ("/dev/stdout", "it is a standard stream"),
    ("/dev/fd/1", "it is a standard stream"),
])
def test_out_to_standard_output_is_refused_clearly(capsys, measured_run, out, message):
    assert message in fails(capsys, "calibrate", measured_run, "--system", "dgx2", "--out", out)
    assert message in fails(capsys, "export", "--system", "dgx1v", "--out", out)


def _stdin(monkeypatch, data: bytes):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_standard_input_is_read_where_piping_makes_sense(capsys, monkeypatch, measured_run):
    whole = ok(capsys, "check", measured_run, "--system", "dgx2")
    _stdin(monkeypatch, measured_run.read_bytes())
    assert ok(capsys, "check", "-", "--system", "dgx2") == whole
    topo_text = ok(capsys, "topo", "--system", "dgx1v")
    _stdin(monkeypatch, topo_text.encode())
    assert "8 GPUs" in ok(capsys, "import", "-", "--gpu", V100)
    _stdin(monkeypatch, b"")
    assert "standard input is an empty file: expected nccl-tests" in fails(capsys, "check", "-", "--system", "dgx2")
    assert "at most one input given as -" in fails(capsys, "calibrate", "-", "-", "--system", "dgx2",
                                                   "--out", measured_run.parent / "c.json")


@pytest.mark.parametrize("parameters, message", [
    ({"efficiency:nvlink2": 0}, "efficiency:nvlink2 = 0: expected a number from 0.05 to 1"),
    ({"efficiency:nvlink2": 5.0}, "efficiency:nvlink2 = 5.0: expected a number from 0.05 to 1"),
    ({"efficiency:nvlink99": 0.9}, "unknown parameter 'efficiency:nvlink99'"),
    ({"floor": 1e300}, "floor = 1e+300: expected a number from 0 to 0.001 seconds"),
])
def test_calibration_constants_are_range_checked_naming_the_field(capsys, tmp_path, measured_run, parameters,
                                                                   message):
    cal = _calibration_file(tmp_path, **parameters)
    for argv in (["collective", "all_reduce", "--system", "dgx2", "--explain"],
                 ["check", measured_run, "--system", "dgx2", "--explain"]):
        err = fails(capsys, *argv, "--calibration", cal)
        assert message in err and str(cal) in err


def test_deeply_nested_calibration_json_is_refused(capsys, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    err = fails(capsys, "collective", "all_reduce", "--system", "dgx2", "--calibration", deep)
    assert "nested at most 64 levels" in err and str(deep) in err


def test_the_collective_a_run_names_is_not_overridden(capsys, tmp_path, measured_run):
    err = fails(capsys, "check", measured_run, "--system", "dgx2", "--collective", "broadcast")
    assert "names all_reduce (all_reduce_perf), --collective is broadcast" in err
    gather = tmp_path / "gather.txt"
    gather.write_text(DGX2_RUNS["all_gather"]["raw"].replace("all_gather_perf", "gather_perf"))
    assert "it names gather, which dgx-topo does not model" in fails(capsys, "check", gather, "--system", "dgx2")
    bare = tmp_path / "bare.txt"
    bare.write_text("\n".join(line for line in DGX2_RUNS["all_gather"]["raw"].splitlines()
                              if "_perf" not in line))
    assert "all_gather or alltoall alike" in fails(capsys, "check", bare, "--system", "dgx2")
    assert "all_gather on dgx2" in ok(capsys, "check", bare, "--system", "dgx2", "--collective", "all_gather")


def test_nccl_tests_messages_name_the_option(capsys, tmp_path, measured_run):
    huge = tmp_path / "huge.txt"
    huge.write_text(f"{10**30}  2  float  sum  -1  61.03  0.00  0.00  2e-07\n")
    err = fails(capsys, "check", huge, "--system", "dgx2")
    assert "line 1: expected a size of at most 4611686018427387904 (2^62), found a 31-digit number" in err
    assert "--gpus names 4 GPUs, " in fails(capsys, "check", measured_run, "--system", "dgx2", "--gpus", "0-3")
    assert "has 12 ranks" in fails(capsys, "check", measured_run, "--system", "dgx2", "--gpus", "0-3")
    assert "-g must be an integer from 1 to 12" in fails(capsys, "check", measured_run, "--system", "dgx2",
                                                          "-g", "13")
    assert "--fail-each" in fails(capsys, "whatif", "all_reduce", "--system", "dgx1v", "--fail-each", "nvswitch")


def test_calibrate_and_check_run_on_the_runs_without_rank_lines(capsys, tmp_path):
    for collective, published in DGX2_RUNS.items():
        cut = tmp_path / f"{collective}.txt"
        cut.write_text("\n".join(line for line in published["raw"].splitlines()
                                 if "Rank" not in line and "nThread" not in line))
        whole = tmp_path / f"{collective}-whole.txt"
        whole.write_text(published["raw"])
        assert ok(capsys, "check", cut, "--system", "dgx2").replace(cut.name, "") == \
            ok(capsys, "check", whole, "--system", "dgx2").replace(whole.name, "")
    out = ok(capsys, "calibrate", *sorted(tmp_path.glob("*[a-z].txt")), "--system", "dgx2",
             "--out", tmp_path / "c.json")
    assert "launch_per_gpu" in out and (tmp_path / "c.json").exists()


def test_result_rows_are_bounded(capsys, tmp_path, measured_run):
    """A 16 MB nccl-tests text of rows took 45 s and printed 157,000 lines: refused past --max-rows."""
    err = fails(capsys, "check", measured_run, "--system", "dgx2", "--max-rows", "10")
    assert "has more than 10 result rows, the limit: raise it with --max-rows" in err
    assert "8589934592" in ok(capsys, "check", measured_run, "--system", "dgx2", "--max-rows", "34")


def test_a_link_slowed_past_any_search_speed_is_not_reported_at_nccls_fallback_figure(capsys):
    """issue 24: --degrade gpu0-gpu3=0.05 reported 0.10 GB/s, NCCL's fallback tuning figure, as the
    measured busbw (worse than failing the link, 10 GB/s over PCIe). NCCL keeps the direct link
    (fewest hops) and falls back to one channel on it: 2 of the bundle's 40 GB/s moves, and a
    time of 10^300 us prints in powers of ten."""
    row = ok(capsys, "collective", "all_reduce", "--system", "dgx1v", "--degrade", "gpu0-gpu3=0.05",
             "--gpus", "0,3").splitlines()[-2].split()
    assert 1.9 < float(row[7]) < 2.1
    out = ok(capsys, "collective", "all_reduce", "--system", "dgx1v", "--degrade", "gpu0-gpu3=1e-300",
             "--gpus", "0,3", "--explain")
    assert out.splitlines()[3].split()[5] == "8.226e+302" and "tuned at 0.1 GB/s; its data moves at" in out
    assert not any(w in ("nan", "inf") for w in out.lower().split())


def test_messages_name_the_command_lines_options_not_python_keywords(capsys, tmp_path):
    """issue 24: the library names its keyword (socket_link=, gpus_per_thread); the CLI its option."""
    xml = tmp_path / "foo.xml"
    xml.write_text(Path(XML).read_text().replace('vendor="GenuineIntel"', 'vendor="Foo"'))
    err = fails(capsys, "import", xml, "--gpu", "v100-sxm2")
    assert "pass --socket-link one of" in err and "socket_link" not in err
    err = fails(capsys, "pairs", "all_reduce", "--system", "dgx1v", "-s", "8", "-g", "4")
    assert "-g must be" in err and "gpus_per_thread" not in err


def test_a_link_too_slow_for_any_time_is_refused_not_printed_as_inf(capsys, tmp_path):
    """issue 24 (second look): a fabric file whose NVLink has a bandwidth of 1e-300 B/s, or
    --degrade 1e-310, printed a time of inf and a busbw of 8e-310 GB/s, with numpy's overflow
    warnings on stderr. The time would not fit in a float: refused in one line."""
    data = json.loads(topo.to_json(topo.build("dgx1v")))
    for edge in data["graph"]["edges"]:
        if {edge["source"], edge["target"]} == {"gpu0", "gpu3"}:
            edge["bandwidth"] = 1e-300
    (tmp_path / "slow.json").write_text(json.dumps(data))
    for argv in (["--topo-file", tmp_path / "slow.json"], ["--system", "dgx1v", "--degrade", "gpu0-gpu3=1e-310"]):
        err = fails(capsys, "collective", "all_reduce", *argv, "--gpus", "0,3")
        assert "all_reduce of 33554432 B over gpu0-gpu3" in err and "takes more than 10^300 s" in err


def test_too_many_cpu_elements_are_refused_in_the_xmls_words(capsys, tmp_path):
    """issue 24: 4,000 <cpu> elements took 127 s; now refused at once, without a Python name."""
    text = Path(XML).read_text()
    extra = "".join(f'<cpu numaid="{k}" affinity="00" arch="x86_64" vendor="GenuineIntel" familyid="6" '
                    f'modelid="79"/>' for k in range(2, 70))
    (tmp_path / "cpus.xml").write_text(text.replace("</system>", extra + "</system>"))
    err = fails(capsys, "import", tmp_path / "cpus.xml")
    assert "70 elements under <system>, expected at most 64 <cpu> elements" in err and "MAX_" not in err


def test_messages_name_no_python_constant_or_keyword(capsys, tmp_path):
    err = fails(capsys, "plan", "transformer:layers=1000000000,hidden=64,heads=4,seq=8,vocab=10", "--system", "dgx1v")
    assert "from 1 to 100000, received '1000000000'" in err and "WORKLOAD_LIMITS" not in err
    err = fails(capsys, "whatif", "all_reduce", "--system", "dgx1v", "--fail-each", "nvswitch")
    assert err.endswith("expected --fail-each one of the parts it has (nvlink, nic, gpu)\n")
    (tmp_path / "h100.txt").write_text(ok(capsys, "topo", "--system", "dgxh100"))
    out = " ".join(ok(capsys, "import", tmp_path / "h100.txt", "--gpu", "h100", "--like", "none",
                      "--nvswitch-links", "5,4,4,5").split())
    assert "NVSwitch wiring 5/4/4/5 (as given)" in out and "nvswitch_links" not in out
    err = fails(capsys, "import", SMI, "--gpu", V100, "--max-devices", "2")
    assert "12 device columns, more than the limit of 2 (raise it with --max-devices N; the check" in err
    assert "max_devices" not in fails(capsys, "import", SMI, "--gpu", V100, "--max-devices", "2000")


def test_a_fabric_file_with_a_large_host_is_refused_before_the_search(capsys, tmp_path):
    """issue 24: an imported 300-GPU host (import --max-devices 400) took more than a minute in
    collective and report (NCCL's channel search over one host grows with the square of its
    GPUs). A fabric file's hosts are sized on reading, against --max-host-gpus (default 32)."""
    assert ok(capsys, "export", "--system", "2xdgx1v", "--out", tmp_path / "f.json")
    for command in (["topo"], ["collective", "all_reduce"], ["report", "--out", tmp_path / "r.html"]):
        err = fails(capsys, *command, "--topo-file", tmp_path / "f.json", "--max-host-gpus", "4")
        assert err.endswith("f.json has 8 GPUs in host 0, more than the limit of 4: raise it with "
                            "--max-host-gpus N (the work grows with it)\n")
    assert "GPU7" in ok(capsys, "topo", "--topo-file", tmp_path / "f.json", "--max-host-gpus", "8")
    assert not (tmp_path / "r.html").exists()


def _fabric_text(fmt, edit):
    """dgx1v exported as JSON or GraphML, with ``edit`` applied to the text."""
    write = topo.to_json if fmt == "json" else topo.to_graphml
    return edit(write(topo.build("dgx1v")))


def _duplicate_gpu0(text):
    start = text.index('<node id="gpu0">')
    end = text.index("</node>", start) + len("</node>")
    return text[:end] + text[start:end] + text[end:]


@pytest.mark.parametrize("fmt, edit, message", [
    ("json", lambda t: t.replace('"id": "gpu1"', '"id": "gpu0"', 1), "has id 'gpu0', as nodes[3] has: expected every node id once"),
    ("graphml", _duplicate_gpu0, "<node id='gpu0'> appears twice: expected every node id once"),
    ("graphml", lambda t: t[:t.index('<node id="gpu0">')] + t[t.index('<node id="gpu0">'):].replace(
        '<data key="index">0</data>', '<data key="index">-7</data>', 1), "node 'gpu0': attribute 'index' must be 0 to 1023"),
    ("json", lambda t: t.replace('"links": 2', '"links": ' + "9" * 400, 1),
     "links must be at least 1 and at most 65536, received 9999999999"),
])
def test_fabric_files_with_duplicate_nodes_or_unphysical_counts_are_refused(capsys, tmp_path, fmt, edit, message):
    """issue 24: duplicate nodes, a GPU index of -7 and a 400-digit link count were accepted."""
    path = tmp_path / f"f.{fmt}"
    path.write_text(_fabric_text(fmt, edit))
    assert message in fails(capsys, "topo", "--topo-file", path)


@pytest.mark.parametrize("old, new, message", [
    ('link_width="16"', 'link_width="0"', "link_width='0', expected a PCIe width of 1, 2, 4, 8, 12, 16, 32 lanes"),
    ('speed="100000"', 'speed="-5"', "speed='-5', expected the port rate in Mb/s"),
])
def test_nccl_xml_with_unphysical_widths_and_speeds_is_refused(capsys, tmp_path, old, new, message):
    """issue 24: NCCL XML accepted link_width="0" and a NIC speed of -5."""
    path = tmp_path / "x.xml"
    path.write_text(Path(XML).read_text().replace(old, new, 1))
    assert message in fails(capsys, "import", path)


def test_report_is_sized_before_it_starts(capsys, tmp_path):
    """issue 24: report 64xdgx2 took 49 s (more than 38 s of CPU here): report's --max-gpus is 128."""
    err = fails(capsys, "report", "--system", "64xdgx2", "--out", tmp_path / "r.html")
    assert err.endswith("64xdgx2 has 1024 GPUs, more than the limit of 128: raise it with --max-gpus N "
                        "(the work grows with it)\n")
    assert "more than the limit of 8" in fails(capsys, "report", "--system", "dgx2", "--max-gpus", "8",
                                               "--out", tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()
