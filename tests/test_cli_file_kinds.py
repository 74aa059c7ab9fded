"""A file given where another kind was expected is named for what it is (issue 38): ``import``,
``--topo-file`` and ``check`` read it through one reading (models.present.file_kinds) instead of
blaming what it lacks ("nvidia-smi topo -m does not name the GPU model" for a UTF-16 file).
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.present.cli import main
from models.present.file_kinds import FileKind, file_kind
from tests.conftest import DATA

SMI = (DATA / "dgx1v_nvidia_smi_topo.txt").read_text()
XML = (DATA / "dgx1v_nccl_topo_synthetic.xml").read_text()
RUN = "# nThread 1 nGpus 2 minBytes 8\n#  size count type redop root time algbw busbw #wrong\n" \
      "  8  2  float  sum  -1  10.0  0.00  0.00  0\n"


def _fabric(tmp_path, fmt: str, capsys) -> bytes:
    path = tmp_path / f"fabric.{fmt}"
    assert main(["export", "--system", "dgx1v", "--format", fmt, "--out", str(path)]) == 0
    capsys.readouterr()
    return path.read_bytes()


CASES = {  # name: (the bytes, or the export format of a fabric; what the message calls the file)
    "utf16": (SMI.encode("utf-16"), "is UTF-16 text"),
    "utf16be": (SMI.encode("utf-16-be"), "is UTF-16 text"),
    "utf32": (SMI.encode("utf-32"), "is UTF-32 text"),
    "binary": (bytes(range(256)) * 4, "is binary data, not text"),
    "empty": (b"", "is an empty file"),
    "blank": (b" \n\t\n", "is an empty file"),
    "fabric-json": ("json", "is a dgx-topo fabric (JSON)"),
    "fabric-graphml": ("graphml", "is a dgx-topo fabric (GraphML)"),
    "calibration": (b'{"schema": "dgx-topo calibration", "version": 1, "parameters": {}}',
                    "is a dgx-topo calibration file"),
    "task-graph": (b'{"tasks": [{"id": "a", "op": "compute", "gpu": 0, "seconds": 1}]}', "is a task graph (JSON)"),
    "nccl-tests": (RUN.encode(), "is nccl-tests output"),
    "other": (b"hello\n", "is other text"),
}


def _file(tmp_path, name, capsys) -> str:
    content, _ = CASES[name]
    path = tmp_path / name
    path.write_bytes(_fabric(tmp_path, content, capsys) if isinstance(content, str) else content)
    return str(path)


def _one_line(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("dgxtopo: error: "), err
    return err


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_says_what_the_file_is(capsys, tmp_path, name):
    path = _file(tmp_path, name, capsys)
    err = _one_line(capsys, "import", path)
    assert f"{path} {CASES[name][1]}: expected nvidia-smi topo -m output" in err
    assert "does not name the GPU model" not in err
    if name.startswith("fabric"):
        assert err.rstrip().endswith(f"a fabric is read by --topo-file {path}")
    if name.startswith("utf16"):
        assert f"iconv -f UTF-16 -t UTF-8 {path}" in err


@pytest.mark.parametrize("name", sorted(set(CASES) - {"fabric-json", "fabric-graphml"}))
def test_topo_file_and_check_say_it_with_the_same_words(capsys, tmp_path, name):
    path = _file(tmp_path, name, capsys)
    assert f"{path} {CASES[name][1]}: expected a fabric" in _one_line(capsys, "topo", "--topo-file", path)
    if name not in ("nccl-tests", "other"):
        assert f"{path} {CASES[name][1]}: expected nccl-tests" in _one_line(capsys, "check", path, "--system", "dgx2")


def test_what_import_reads_is_still_read(capsys, tmp_path):
    for text, gpu in ((SMI, ["--gpu", "v100-sxm2"]), (XML, [])):
        path = tmp_path / "in.txt"
        path.write_text(text)
        assert main(["import", str(path), *gpu]) == 0 and "8 GPUs" in capsys.readouterr()[0]
    assert file_kind(SMI) is FileKind.NVIDIA_SMI and file_kind(XML) is FileKind.NCCL_XML


def _as_read(data: bytes) -> str:
    """What topo.inputs.read_input gives for these bytes (a log kind: stray bytes replaced)."""
    return data.decode("utf-8", errors="replace")


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=string.printable, min_size=8, max_size=300).filter(lambda t: t.strip()),
       encoding=st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]))
def test_ascii_written_as_utf16_or_utf32_is_told_as_such(text, encoding):
    assert file_kind(_as_read(text.encode(encoding))) is (FileKind.UTF16 if "16" in encoding else FileKind.UTF32)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=600))
def test_any_bytes_have_a_kind_and_nuls_are_never_text(data):
    kind = file_kind(_as_read(data))
    assert isinstance(kind, FileKind)
    if b"\x00" in data[:4096]:
        assert kind in (FileKind.UTF16, FileKind.UTF32, FileKind.BINARY)


# --- found by the fuzz pass: text saved with a byte order mark (Notepad's UTF-8) -------------
@pytest.fixture(scope="module")
def bom_files(tmp_path_factory):
    """Each input twice, in bom/ with a byte order mark and in pln/ without (names of one length)."""
    path = tmp_path_factory.mktemp("inputs")
    (path / "bom").mkdir()
    (path / "pln").mkdir()
    assert main(["export", "--system", "dgx1v", "--out", str(path / "fabric.json")]) == 0
    examples = DATA.parent.parent / "examples" / "data"
    texts = {"smi.txt": SMI, "xml.xml": XML, "run.txt": (examples / "dgx2_12gpu_all_reduce.txt").read_text(),
             "cal.json": (examples / "dgx2_calibration.json").read_text(),
             "fabric.json": (path / "fabric.json").read_text()}
    for name, text in texts.items():
        (path / "bom" / name).write_text(text, encoding="utf-8-sig")
        (path / "pln" / name).write_text(text)
    return path


@pytest.mark.parametrize("argv", [
    ["import", "{smi.txt}", "--gpu", "v100-sxm2"], ["import", "{xml.xml}"], ["check", "{run.txt}", "--system", "dgx2"],
    ["check", "{run.txt}", "--system", "dgx2", "--calibration", "{cal.json}"], ["topo", "--topo-file", "{fabric.json}"],
])
def test_a_byte_order_mark_is_not_content(capsys, bom_files, argv):
    capsys.readouterr()
    outs = []
    for where in ("bom", "pln"):
        assert main([a if not a.startswith("{") else str(bom_files / where / a[1:-1]) for a in argv]) == 0
        outs.append(capsys.readouterr()[0].replace(str(bom_files / where), "DIR"))
    assert outs[0] == outs[1]


def test_the_json_reader_and_the_nvidia_smi_parser_ignore_a_byte_order_mark():
    from topo.inputs import parse_json

    assert parse_json('\ufeff{"a": 1}') == {"a": 1}
    assert topo_from_smi("\ufeff" + SMI).number_of_nodes() == topo_from_smi(SMI).number_of_nodes()


def topo_from_smi(text):
    import topo

    return topo.from_nvidia_smi(text, gpu="v100-sxm2")
