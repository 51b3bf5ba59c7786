"""Every command that writes a file goes through one writer (files.write_output) with one set of
checks: a FIFO, a device, a folder or one of the command's own inputs (the same inode, whatever
the path) is refused before any work, a full disk or /proc is one Error line, and no temp file
is left behind (`compile -o` used to replace /dev/null and overwrite its own source)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen import files
from submitgen.cli import cli

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"


@pytest.fixture
def src(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    shutil.copy(PROJECT / "mm.hip", tmp_path / "g.hip")
    return Path("g.hip")


def compile_(*args: str):
    return CliRunner().invoke(cli, ["compile", "g.hip", *args])


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def device_node(folder: Path) -> str:
    """A character device like /dev/null: a node of its own where the test may make one (root), so
    that a writer that replaces devices replaces that one and not the system's /dev/null."""
    node = folder / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        return "/dev/null"  # not root: an unfixed writer fails to replace it (Permission denied)
    return str(node)


def test_compile_refuses_a_device_node(src, tmp_path):
    node = device_node(tmp_path)
    r = compile_("-o", node)
    assert (r.exit_code, r.output) == (
        1, f"Error: -o {node}: is a device; the code object is written to a regular file\n")
    assert stat.S_ISCHR(os.stat(node).st_mode)


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("g.hip", "-o g.hip: is one of the sources (g.hip); name another file"),
        ("./g.hip", "-o g.hip: is one of the sources (g.hip); name another file"),
        ("sub", "-o sub: is a folder; the code object is written to a regular file"),
        ("", "-o: the output path is empty; name a file, e.g. -o kernel.co"),
    ],
)
def test_compile_refuses_a_folder_and_its_own_source(src, target, error):
    (src.parent / "sub").mkdir()
    before = src.read_bytes()
    r = compile_("-o", target)
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")
    assert src.read_bytes() == before


def test_compile_refuses_a_fifo_and_leaves_it_a_fifo(src):
    os.mkfifo("ff")
    r = compile_("-o", "ff")
    assert (r.exit_code, r.output) == (
        1, "Error: -o ff: is a FIFO; the code object is written to a regular file\n")
    assert stat.S_ISFIFO(os.stat("ff").st_mode)


def test_compile_refuses_a_hard_link_to_its_source(src):
    os.link(src, "h.co")
    r = compile_("-o", "h.co")
    assert (r.exit_code, r.output) == (
        1, "Error: -o h.co: is one of the sources (g.hip); name another file\n")


def test_build_refuses_a_hard_link_to_its_plan(tmp_path, monkeypatch):
    shutil.copytree(PROJECT, tmp_path / "proj")
    monkeypatch.chdir(tmp_path)
    os.link("proj/launch.py", "s.py")
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "-o", "s.py"])
    assert (r.exit_code, r.output) == (
        1, "Error: -o s.py: is one of the build's own inputs (proj/launch.py); name another file\n")


def test_compile_on_a_full_disk_is_one_error_line_and_leaves_no_temp_file(src, monkeypatch):
    real = os.fdopen

    class Full:
        def __init__(self, fd):
            self.f = real(fd, "wb")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[:100])
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, mode="r", *args, **kwargs):  # the disk is full when the output's temp file is written
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(".g.co."):
            return Full(fd)
        return real(fd, mode, *args, **kwargs)

    monkeypatch.setattr(files.os, "fdopen", fdopen)
    r = compile_("-o", "g.co")
    assert (r.exit_code, r.output) == (1, "Error: cannot write g.co: No space left on device\n")
    assert not Path("g.co").exists() and temp_files(Path(".")) == []


@pytest.mark.parametrize("target", ["/proc/x", "/proc/self/status"])
def test_compile_under_proc_is_one_error_line(src, target):
    r = compile_("-o", target)
    assert (r.exit_code, r.output) == (1, f"Error: cannot write {target}: No such file or directory\n")


def test_a_target_replaced_by_a_fifo_during_the_command_is_refused_at_write_time(tmp_path):
    out = tmp_path / "o.co"
    files.check_output(out, ())  # nothing there yet: fine
    os.mkfifo(out)
    with pytest.raises(files.OutputError) as e:
        files.write_output(out, b"x", (), what="the code object")
    assert str(e.value) == f"-o {out}: is a FIFO; the code object is written to a regular file"
    assert stat.S_ISFIFO(os.stat(out).st_mode) and temp_files(tmp_path) == []
