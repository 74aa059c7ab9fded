"""The HTML report: content as data, self-contained, atomic writing, CLI errors, and a real
headless browser (Debian's chromium, skipped when absent) that opens it offline."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import topo
from models import output as output_module
from models.cli import main
from models.output import OutputPathError, check_output_path
from models.report import analysis as analysis_module
from models.report import report_html, summary_rows, write_compare_figure, write_report


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """The default report (all built-in systems), written once for the module."""
    path = tmp_path_factory.mktemp("report") / "report.html"
    written = write_report(path)
    return written, path.read_text(encoding="utf-8")


def _figure_ids(text) -> list:
    return re.findall(r"<figure class='plot' data-figure='([^']+)'", text)


# ------------------------------------------------------------------------------ content
def test_summary_rows_known_answers():
    rows = {r.system: r for r in summary_rows()}
    assert list(rows) == list(topo.SYSTEMS)
    assert (rows["dgx1"].gpus, rows["dgx1v"].gpus, rows["dgx2"].gpus) == (8, 8, 16)
    assert rows["dgx2"].bisection == pytest.approx(1.2e12)
    # 6 rings x 20 GB/s on a DGX-1V and on any DGX-2 set; 4 x 18 on the P100 DGX-1.
    assert rows["dgx1v"].busbw_8 == pytest.approx(rows["dgx2"].busbw_8)
    assert rows["dgx1"].busbw_8 < rows["dgx1v"].busbw_8 < 120e9
    assert rows["dgx1"].busbw_16 is None and rows["dgx1v"].busbw_16 is None
    assert rows["dgx2"].busbw_16 is not None
    # DGX-1V: a doubled NVLink pair is best, a pair without NVLink worst; DGX-2: all equal.
    assert rows["dgx1v"].best_pair == (0, 3) and rows["dgx1v"].worst_pair == (0, 5)
    assert rows["dgx1v"].best_busbw > 2 * rows["dgx1v"].worst_busbw
    assert rows["dgx2"].best_busbw == pytest.approx(rows["dgx2"].worst_busbw)
    assert rows["dgx2"].best_count == 120


def test_report_shows_every_system_and_figure(full_report):
    written, text = full_report
    assert written.systems == tuple(topo.build(name).graph["name"] for name in topo.SYSTEMS)
    ids = _figure_ids(text)
    assert ids[:4] == ["curves-busbw", "curves-time", "compare-busbw", "compare-time"]
    for system in topo.SYSTEMS:
        assert [i for i in ids if i.startswith(f"{system}-")] == [
            f"{system}-fabric", f"{system}-channels", f"{system}-p2p", f"{system}-latency", f"{system}-pairs"]
    assert len(ids) == 4 + 5 * len(topo.SYSTEMS)
    # The seed comparison of issue 6: one DGX-2 against two DGX-1V, 16 GPUs each.
    assert "One DGX-2 against two DGX-1V" in text and "2.50x faster" in text
    assert text.count("class=\"plotly-graph-div\"") == len(ids)
    for heading in ("Summary", "How the model works", "How it was validated"):
        assert f">{heading}</h2>" in text
    assert "n/a" in text  # 16-GPU column of the 8-GPU systems
    assert "GB/s" in text


def test_report_is_self_contained(full_report):
    written, text = full_report
    assert written.nbytes == len(text.encode("utf-8"))
    assert not re.search(r"<script[^>]*\ssrc=", text, re.I)  # nothing loaded from anywhere
    assert not re.search(r"<link[^>]*href=[\"']https?:", text, re.I)
    # The plotly.js source itself is in the page.
    from plotly.offline import get_plotlyjs
    assert get_plotlyjs()[:2000] in text


def test_report_is_deterministic():
    assert report_html(["dgx1v"]) == report_html(["dgx1v"])


def test_a_system_the_model_does_not_cover_gets_a_note(monkeypatch):
    """A model error for a system becomes a note and n/a, not a failed report."""
    def refuse(*args, **kwargs):
        raise topo.DgxTopoError("not modelled for this test")
    monkeypatch.setattr(analysis_module, "pairwise", refuse)
    text = report_html(["dgx1"])
    assert "pairs: not modelled for this test" in text
    assert "2-GPU all_reduce matrix</b>: not available; not modelled for this test" in text
    assert "dgx1-pairs" not in _figure_ids(text)


def test_unknown_system_and_duplicates():
    with pytest.raises(topo.UnknownSystemError, match="unknown system 'dgx9'"):
        summary_rows(["dgx1", "dgx9"])
    assert [r.system for r in summary_rows(["DGX-1V", "dgx1v"])] == ["dgx1v"]


# ------------------------------------------------------------------------------ writing
def test_write_replaces_atomically(tmp_path):
    target = tmp_path / "r.html"
    target.write_text("old")
    written = write_report(target, ["dgx1v"])
    assert written.path == target and target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


@pytest.mark.parametrize("failure", ["write", "replace"])
def test_interrupted_write_leaves_nothing_behind(tmp_path, monkeypatch, failure):
    """An interrupt in the middle of writing (or before the rename) leaves the old file
    untouched, or no file at all, and no temporary file."""
    real_fdopen = os.fdopen

    class Interrupting:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, text):
            self.handle.write(text[: len(text) // 2])  # half the page reaches the disk...
            raise KeyboardInterrupt  # ...then the user presses Ctrl-C

        def __getattr__(self, name):
            return getattr(self.handle, name)

    if failure == "write":
        monkeypatch.setattr(output_module.os, "fdopen", lambda *a, **k: Interrupting(real_fdopen(*a, **k)))
    else:
        def interrupted_replace(*args):
            raise KeyboardInterrupt
        monkeypatch.setattr(output_module.os, "replace", interrupted_replace)
    fresh = tmp_path / "fresh.html"
    with pytest.raises(KeyboardInterrupt):
        write_report(fresh, ["dgx1"])
    assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "existing.html"
    existing.write_text("previous report")
    with pytest.raises(KeyboardInterrupt):
        write_report(existing, ["dgx1"])
    assert existing.read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["existing.html"]


def test_disk_errors_while_writing_are_report_path_errors(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(output_module.os, "fsync", full)
    with pytest.raises(OutputPathError, match="No space left on device"):
        write_report(tmp_path / "r.html", ["dgx1"])
    assert list(tmp_path.iterdir()) == []


def test_new_file_gets_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        path = write_report(tmp_path / "r.html", ["dgx1"]).path
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644


def test_bad_paths(tmp_path, monkeypatch):
    with pytest.raises(OutputPathError, match="it is a directory"):
        check_output_path(tmp_path)
    with pytest.raises(OutputPathError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "r.html")
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputPathError, match="is not a directory"):
        check_output_path(tmp_path / "file" / "r.html")
    # Not writable: simulated, since the tests may run as root (who may write anywhere).
    monkeypatch.setattr(output_module.os, "access", lambda *args: False)
    with pytest.raises(OutputPathError, match="is not writable"):
        check_output_path(tmp_path / "r.html")


def test_permission_denied_at_creation_is_a_report_path_error(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(output_module.tempfile, "mkstemp", denied)
    with pytest.raises(OutputPathError, match="Permission denied"):
        write_report(tmp_path / "r.html", ["dgx1"])


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_directory_for_real(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(OutputPathError, match="is not writable"):
            write_report(locked / "r.html", ["dgx1"])
    finally:
        locked.chmod(0o755)


# ---------------------------------------------------------------------------------- CLI
def test_cli_report(tmp_path, capsys):
    out = tmp_path / "dgx1.html"
    assert main(["report", "dgx1", "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert stderr == "" and out.exists()
    assert stdout.startswith(f"wrote {out} (") and "DGX-1" in stdout
    assert stdout.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["report", "--out", "{tmp}/missing/r.html"], "directory '{tmp}/missing' does not exist"),
    (["report", "--out", "{tmp}"], "it is a directory"),
    (["report", "--out", ""], "expected a file name such as report.html"),
    (["report", "dgx9", "--out", "{tmp}/r.html"], "unknown system 'dgx9'"),
    (["report", "--out"], "expected one argument"),
])
def test_cli_report_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("dgxtopo: error: ") and message.replace("{tmp}", str(tmp_path)) in err
    assert list(tmp_path.iterdir()) == []


def test_plotly_is_loaded_only_by_the_report_command():
    code = ("import sys, models.cli, topo, models\n"
            "models.cli.build_parser()\n"
            "assert 'plotly' not in sys.modules, 'the CLI imported plotly before the report command'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


# ----------------------------------------------------------------------- real browser
def _high_fd(fd) -> int:
    import fcntl
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Chromium:
    """Debian's chromium, headless, driven over the DevTools protocol on a pipe (fds 3/4).

    No network is used: the page is a file:// URL and background networking is off.
    """

    def __init__(self, binary, profile):
        # Pipe ends numbered 10 and up, so that moving them to 3 and 4 in the child cannot
        # overwrite one another.
        to_browser_read, self._to_browser, self._from_browser, from_browser_write = (
            _high_fd(fd) for pair in (os.pipe(), os.pipe()) for fd in pair)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}",
                 "--window-size=1400,1000", "about:blank"]
        # The protocol pipe must be the browser's fds 3 (commands) and 4 (replies): a small
        # Python trampoline moves the pipe ends there, then becomes the browser.
        trampoline = ("import os, sys\n"
                      "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
                      "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)\n"
                      "os.execv(sys.argv[3], sys.argv[3:])\n")
        self.log = open(Path(profile).parent / "chromium.log", "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen([sys.executable, "-c", trampoline, str(to_browser_read),
                                         str(from_browser_write), binary, *flags],
                                        pass_fds=(to_browser_read, from_browser_write),
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list = []

    def send(self, method, params=None, session=None, timeout=60.0):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read(deadline))

    def _read(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                self.log.flush()
                tail = Path(self.log.name).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"chromium closed the DevTools pipe; its log ends:\n{tail}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url):
        """Open ``url`` in a new page; return the page's session id once it has loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired")
        return session

    def evaluate(self, session, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def errors(self) -> list:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self.log.close()


_RENDERED = """
(async () => {
  for (let i = 0; i < 100; i++) {
    const divs = [...document.querySelectorAll('.plotly-graph-div')];
    const drawn = divs.filter(d => d.classList.contains('js-plotly-plot') && d.querySelector('svg.main-svg')
                                   && d.getBoundingClientRect().width > 100 && d.getBoundingClientRect().height > 100);
    if (divs.length && drawn.length === divs.length) {
      return {figures: divs.length, drawn: drawn.length,
              traces: divs.map(d => d.data.length), ids: divs.map(d => d.id),
              overflowing: divs.filter(d => d.querySelector('svg.main-svg').getBoundingClientRect().width
                                            > d.parentElement.getBoundingClientRect().width + 1).map(d => d.id)};
    }
    await new Promise(r => setTimeout(r, 100));
  }
  const divs = [...document.querySelectorAll('.plotly-graph-div')];
  return {figures: divs.length, drawn: divs.filter(d => d.querySelector('svg.main-svg')).length};
})()
"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_report_opens_in_headless_chromium_without_errors(full_report, tmp_path):
    written, text = full_report
    browser = Chromium(shutil.which("chromium"), tmp_path / "profile")
    try:
        session = browser.open(written.path.resolve().as_uri())
        state = browser.evaluate(session, _RENDERED)
        errors = browser.errors()
    finally:
        browser.close()
    ids = ["fig-" + i for i in _figure_ids(text)]
    assert errors == []
    assert state["figures"] == len(ids) and state["drawn"] == len(ids), state
    assert state["ids"] == ids
    assert all(n > 0 for n in state["traces"])
    assert state["overflowing"] == []


def test_compare_out_writes_its_curves(tmp_path, capsys):
    """``dgxtopo compare ... --out FILE`` (the compare command) writes through this module."""
    out = tmp_path / "cmp.html"
    assert main(["compare", "dgx1v", "dgx1", "-b", "1M", "-e", "16M", "-f", "4", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert _figure_ids(text) == ["compare-busbw", "compare-time"]
    assert not re.search(r"<script[^>]*\ssrc=", text, re.I) and "dgx1v, 8 GPUs" in text
    assert list(tmp_path.iterdir()) == [out]
    capsys.readouterr()
    assert main(["compare", "dgx1v", "dgx1", "--out", str(tmp_path / "no" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(topo.DgxTopoError, match="one name per estimate"):
        write_compare_figure([], ["a"], tmp_path / "y.html")
