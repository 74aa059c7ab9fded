"""The one writer behind every --out: atomic, regular files only, symlinks written through."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from models.present import output as output_module
from models.present.cli import main
from models.present.output import OutputPathError, check_output_path, write_text_atomic


def _listing(directory) -> list:
    return sorted(p.name for p in directory.iterdir())


def test_writes_and_replaces_a_regular_file(tmp_path):
    target = tmp_path / "out.txt"
    assert write_text_atomic(target, "one") == target
    assert write_text_atomic(str(target), "two") == target
    assert target.read_text() == "two" and _listing(tmp_path) == ["out.txt"]


def test_a_fifo_is_refused_and_left_as_it_is(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match=r"it is a FIFO \(named pipe\), expected a regular file"):
        write_text_atomic(fifo, "text")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and _listing(tmp_path) == ["pipe"]


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError:  # a tmp path too long for AF_UNIX on this machine
        pytest.skip("cannot bind a unix socket here")
    try:
        with pytest.raises(OutputPathError, match="it is a socket"):
            write_text_atomic(path, "text")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        server.close()


def test_a_real_device_is_refused_by_its_mode_alone():
    """check_output_path only reads the mode: /dev/null is never opened or replaced."""
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null")
    with pytest.raises(OutputPathError, match="'/dev/null': it is a character device"):
        check_output_path("/dev/null")


def test_a_device_path_is_refused_before_writing(tmp_path, monkeypatch):
    """As if the target were /dev/full: the check sees a character device and refuses."""
    target = tmp_path / "full"
    target.write_text("stands for a device")
    real_stat = os.stat

    def device_stat(path, *args, **kwargs):
        result = real_stat(path, *args, **kwargs)
        if os.fspath(path) == str(target):
            return os.stat_result((stat.S_IFCHR | 0o666,) + tuple(result)[1:])
        return result
    monkeypatch.setattr(output_module.os, "stat", device_stat)
    with pytest.raises(OutputPathError, match="it is a character device"):
        write_text_atomic(target, "html")
    assert target.read_text() == "stands for a device" and _listing(tmp_path) == ["full"]


def test_a_symlink_is_written_through_to_its_regular_file(tmp_path):
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    assert write_text_atomic(link, "new") == real
    assert link.is_symlink() and real.read_text() == "new"
    assert _listing(tmp_path) == ["link.html", "real.html"]


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "made.html")
    write_text_atomic(link, "made")
    assert link.is_symlink() and (tmp_path / "made.html").read_text() == "made"


def test_a_symlink_to_a_fifo_or_a_directory_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "to-pipe").symlink_to(fifo)
    with pytest.raises(OutputPathError, match=r"a symlink to .*pipe'\): it is a FIFO"):
        write_text_atomic(tmp_path / "to-pipe", "text")
    (tmp_path / "to-dir").symlink_to(tmp_path)
    with pytest.raises(OutputPathError, match="it is a directory"):
        write_text_atomic(tmp_path / "to-dir", "text")
    (tmp_path / "nowhere").symlink_to(tmp_path / "missing" / "x.html")
    with pytest.raises(OutputPathError, match="does not exist"):
        write_text_atomic(tmp_path / "nowhere", "text")
    assert _listing(tmp_path) == ["nowhere", "pipe", "to-dir", "to-pipe"]


def test_a_fifo_appearing_during_the_write_is_not_replaced(tmp_path, monkeypatch):
    """Checked again just before the rename: a FIFO made meanwhile stays, the temp file goes."""
    target = tmp_path / "out.html"
    real_fsync = os.fsync

    def fsync_then_fifo(fd):
        real_fsync(fd)
        os.mkfifo(target)
    monkeypatch.setattr(output_module.os, "fsync", fsync_then_fifo)
    with pytest.raises(OutputPathError, match="it is a FIFO"):
        write_text_atomic(target, "text")
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and _listing(tmp_path) == ["out.html"]


@pytest.mark.parametrize("path", ["", "a\0b", None, 3])
def test_not_a_path(path):
    with pytest.raises(OutputPathError, match="expected a file name"):
        check_output_path(path)


@pytest.mark.parametrize("command", [["report", "--system", "dgx1"], ["compare", "--system", "dgx1v", "dgx1", "-b", "1M", "-e", "1M"]])
@pytest.mark.parametrize("make", ["fifo", "dir", "empty", "missing"])
def test_cli_out_refusals_are_one_line_exit_2(tmp_path, capsys, command, make):
    target = tmp_path / "target"
    if make == "fifo":
        os.mkfifo(target)
    elif make == "dir":
        target.mkdir()
    out = {"fifo": str(target), "dir": str(target), "empty": "", "missing": str(tmp_path / "no" / "x")}[make]
    before = _listing(tmp_path)
    assert main([*command, "--out", out]) == 2
    stdout, stderr = capsys.readouterr()
    assert stdout == "" and stderr.startswith("dgxtopo: error: cannot write to ") and stderr.count("\n") == 1
    assert _listing(tmp_path) == before
