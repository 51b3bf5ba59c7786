"""A build whose output folder is read-only gives one ``Error:`` line, writes no file and leaves an
earlier output there untouched. Run as root (as CI does), the build runs in a forked child that
drops to the ``nobody`` user (uid and gid 65534) just before its write stage, since root writes
through any mode bits (the build itself runs as root: the checkout may be in a folder nobody cannot
read). A writable folder, written the same way, is the control."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import submitgen.pipeline as build_stages
from submitgen.cli import cli
from submitgen.readers.containers import load_code_objects

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"
NOBODY = 65534


@pytest.fixture
def world(monkeypatch):
    """A folder every user can read (pytest's own tmp folders are root's alone): the project, its
    code object and a good output in ``out/``."""
    base = Path(tempfile.mkdtemp(prefix="sg-readonly-"))
    base.chmod(0o755)
    shutil.copytree(PROJECT, base / "proj")
    monkeypatch.chdir(base)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "-o", "out/s.py"])
    assert r.exit_code == 0, r.output
    Path("mm.co").write_bytes(load_code_objects("out/s.py")[0].data)
    yield base
    (base / "out").chmod(0o755)
    shutil.rmtree(base)


def _build_as_nobody(args: list[str]) -> tuple[int, str]:
    """``submitgen ARGS`` in a forked child that writes its output as nobody."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            real = build_stages.write

            def write_as_nobody(*stage_args):
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                return real(*stage_args)

            build_stages.write = write_as_nobody
            r = CliRunner().invoke(cli, args)
            os.write(write, json.dumps([r.exit_code, r.output]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    code, output = json.loads(data)
    return code, output


def _run(args: list[str]) -> tuple[int, str]:
    if os.geteuid() == 0:
        return _build_as_nobody(args)
    r = CliRunner().invoke(cli, args)
    return r.exit_code, r.output


@pytest.mark.slow
@pytest.mark.parametrize("existing", [True, False])
def test_read_only_output_folder_is_one_error_line(world, existing):
    out = world / "out"
    good = (out / "s.py").read_bytes()
    if not existing:
        (out / "s.py").unlink()
    out.chmod(0o555)
    code, output = _run(["build", "mxfp4-mm", "--kernels", "proj", "--co", "mm.co", "-o", "out/s.py"])
    assert (code, output) == (1, "Error: cannot write out/s.py: Permission denied\n")
    assert sorted(p.name for p in out.iterdir()) == (["s.py"] if existing else [])
    if existing:
        assert (out / "s.py").read_bytes() == good


def test_a_writable_folder_is_written_the_same_way(world):
    """The control: the same child writes into a folder that nobody may write to."""
    (world / "open").mkdir(mode=0o777)
    (world / "open").chmod(0o777)
    code, output = _run(["build", "mxfp4-mm", "--kernels", "proj", "--co", "mm.co", "-o", "open/s.py"])
    assert code == 0, output
    assert (world / "open" / "s.py").read_bytes().startswith(b"#!POPCORN leaderboard amd-mxfp4-mm\n")
    if os.geteuid() == 0:
        assert (world / "open" / "s.py").stat().st_uid == NOBODY
