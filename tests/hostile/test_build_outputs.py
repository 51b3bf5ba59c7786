"""Where a build writes, and what a killed or raced build leaves: -o on a device, a FIFO, one of
the build's own inputs, a folder, an empty path or /proc gives one Error line; temp files of killed
builds are cleaned up; a kill -9 at any point leaves the earlier good output whole; a launch.py or
source saved during a build never reaches the file unchecked."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen import files
from submitgen.backends.amd import AmdBackend
from submitgen.cli import cli
from submitgen.pipeline import BuildOptions, build

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(PROJECT, tmp_path / "proj")
    monkeypatch.chdir(tmp_path)
    return Path("proj")


def run(*args: str):
    return CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", *args])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("/dev/null", "-o /dev/null: is a device; the submission is written to a regular file"),
        ("", "-o: the output path is empty; name a file, e.g. -o submission.py"),
        (
            "proj/launch.py",
            "-o proj/launch.py: is one of the build's own inputs (proj/launch.py); name another file",
        ),
        ("proj/mm.hip", "-o proj/mm.hip: is one of the build's own inputs (proj/mm.hip); name another file"),
        ("/proc/x", "cannot write /proc/x: No such file or directory"),
    ],
)
def test_bad_outputs_are_one_error_line(project, target, error):
    before = (project / "launch.py").read_bytes()
    r = run("-o", target)
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")
    assert (project / "launch.py").read_bytes() == before


def test_fifo_output_is_refused(project, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    r = run("-o", "fifo")
    assert (r.exit_code, r.output) == (
        1,
        "Error: -o fifo: is a FIFO; the submission is written to a regular file\n",
    )


@pytest.mark.slow
def test_the_co_input_cannot_be_the_output(project, tmp_path):
    co = tmp_path / "mm.co"
    good = run("-o", "first.py")
    assert good.exit_code == 0, good.output
    from submitgen.readers.containers import load_code_objects

    co.write_bytes(load_code_objects("first.py")[0].data)
    r = run("--co", "mm.co", "-o", "mm.co")
    assert (r.exit_code, r.output) == (
        1,
        "Error: -o mm.co: is one of the build's own inputs (mm.co); name another file\n",
    )


@pytest.mark.slow
def test_output_folder_gets_submission_py(project, tmp_path):
    r = run("-o", "newdir/")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "newdir" / "submission.py").is_file()
    r = run("-o", "newdir")  # an existing folder, without the slash
    assert r.exit_code == 0 and "wrote newdir/submission.py" in r.output


@pytest.mark.slow
def test_full_disk_is_one_error_line(project, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    r = run("-o", "s.py")
    assert (r.exit_code, r.output) == (1, "Error: cannot write s.py: No space left on device\n")
    assert not [p for p in Path(".").iterdir() if p.name.startswith(".s.py.")]


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.slow
def test_stale_temp_files_of_killed_builds_are_removed(project, tmp_path):
    dead, live = _dead_pid(), os.getppid()
    stale = tmp_path / f".s.py.{dead}.abc123.tmp"
    alive = tmp_path / f".s.py.{live}.abc123.tmp"
    other = tmp_path / ".s.py.notapid.tmp"
    for p in (stale, alive, other):
        p.write_text("partial")
    stale_dir = Path(files.tempfile.gettempdir()) / f"submitgen-{dead}-build-xyz"
    stale_dir.mkdir()
    r = run("-o", "s.py")
    assert r.exit_code == 0, r.output
    with files.private_dir("test") as d:
        assert Path(d).name.startswith(f"submitgen-{os.getpid()}-test-")
    assert not stale.exists() and alive.exists() and other.exists() and not stale_dir.exists()


@pytest.mark.slow
def test_a_plan_saved_during_the_build_is_not_embedded(project, monkeypatch):
    """launch.py is read once: an edit after that point is neither checked nor embedded."""
    real = AmdBackend.compile

    def edit_then_compile(self, *args, **kwargs):
        plan = project / "launch.py"
        plan.write_text(plan.read_text().replace("(256, 1, 1), 0,", "(1024, 1, 1), 0,"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AmdBackend, "compile", edit_then_compile)
    r = build(BuildOptions(problem="mxfp4-mm", kernels=project, output=Path("s.py")))
    assert "(1024, 1, 1), 0," not in r.text and "(256, 1, 1), 0," in r.text
    assert "(1024, 1, 1), 0," in (project / "launch.py").read_text()


def test_a_source_saved_during_the_build_is_refused(project, monkeypatch):
    real = AmdBackend.compile

    def edit_then_compile(self, *args, **kwargs):
        src = project / "mm.hip"
        src.write_text(src.read_text() + "\n// edited\n")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AmdBackend, "compile", edit_then_compile)
    r = run("-o", "s.py")
    assert (r.exit_code, r.output) == (
        1,
        "Error: proj/mm.hip changed during the build (it was read, then compiled with other bytes); build "
        "again\n",
    )
    assert not Path("s.py").exists()


@pytest.mark.slow
def test_kill_9_leaves_the_earlier_output_whole(project, tmp_path):
    """A build killed at several points (import, compile, plan, write) never leaves a partial file:
    the earlier good output stays byte for byte, and the next build removes the killed one's temp file."""
    good = run("-o", "s.py")
    assert good.exit_code == 0, good.output
    before = Path("s.py").read_bytes()
    slow = tmp_path / "slow"
    shutil.copytree(PROJECT, slow)
    plan = slow / "launch.py"
    plan.write_text(
        plan.read_text().replace(
            "    m, k = a.shape\n", "    m, k = a.shape\n    while True:\n        pass\n"
        )
    )
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for delay in (0.5, 2.0, 5.0):
        proc = subprocess.Popen([sys.executable, "-m", "submitgen", "build", "mxfp4-mm", "--kernels", "slow",
                                 "-o", "s.py"], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert Path("s.py").read_bytes() == before
    assert _plan_children_gone(tmp_path), "the plan's child outlived the killed build"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".s.py.")]
    assert all(p.endswith(".tmp") for p in leftovers)
    assert run("-o", "s.py").exit_code == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".s.py.")] == []


def _plan_children_gone(where: Path, within_s: float = 60.0) -> bool:
    """True once no process but this one runs in ``where`` with the slow project on its command
    line (the plan's child leads a session of its own, so the group kill above does not reach it:
    it must die with its parent)."""
    deadline = time.monotonic() + within_s
    while True:
        alive = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if Path(os.readlink(d / "cwd")) == where and b"slow" in (d / "cmdline").read_bytes():
                    alive.append(d.name)
            except OSError:
                continue
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
