"""kill -9 at each filesystem step of a build. The build runs in a forked child with an audit hook
(``sys.addaudithook``) that counts the child's filesystem events (an open for writing, rename and
replace, remove, mkdir, rmdir, chmod, rmtree...) and SIGKILLs the child at the N-th, before the
step happens. One uninterrupted build counts the events; then the build is killed at each N in
turn. After each kill: the output folder holds the earlier good output, byte for byte (or, once the
final rename has happened, the whole new one), and nothing else but the dead build's temp files;
the next build removes those temp files and the dead build's private folders, and writes the same
bytes as an uninterrupted build (a half-written cache entry is never used)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.readers.containers import load_code_objects

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_FS_EVENTS = frozenset({
    "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.link",
    "os.symlink", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move", "shutil.copytree",
})


def _is_fs_write(event: str, args: tuple) -> bool:
    if event == "open":
        _, mode, flags = args
        return bool((isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & _WRITE_FLAGS)
    return event in _FS_EVENTS


def _describe(event: str, args: tuple) -> str:
    return f"{event} {args[0]!r}" if args else event


def _forked_build(args: list[str], tmp: Path, kill_at: int = 0) -> tuple[int | None, list[str], int]:
    """``submitgen ARGS`` in a forked child whose private folders go to ``tmp``. With ``kill_at``,
    the child SIGKILLs itself at its ``kill_at``-th filesystem event. Returns (exit code, or None
    when killed; the events seen, the last one being the one it was killed at; the child's pid)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 99
        try:
            os.close(read)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            tempfile.tempdir = str(tmp)
            os.environ["TMPDIR"] = str(tmp)
            me = os.getpid()
            seen = [0]

            def hook(event: str, hook_args: tuple) -> None:
                if seen[0] < 0 or os.getpid() != me or not _is_fs_write(event, hook_args):
                    return
                seen[0] += 1
                os.write(write, (_describe(event, hook_args) + "\n").encode("utf-8", "replace"))
                if seen[0] == kill_at:
                    os.kill(me, signal.SIGKILL)

            sys.addaudithook(hook)
            try:
                cli.main(args, prog_name="submitgen")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            seen[0] = -1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        events = f.read().decode().splitlines()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return None, events, pid
    return os.WEXITSTATUS(status), events, pid


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    shutil.copytree(PROJECT, tmp_path / "proj")
    (tmp_path / "out").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    old = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "--compress", "zlib",
                                   "-o", "out/s.py"])
    assert old.exit_code == 0, old.output
    Path("mm.co").write_bytes(load_code_objects("out/s.py")[0].data)
    shutil.rmtree(tmp_path / "cache")
    return tmp_path


def _leftovers(root: Path, pid: int) -> tuple[list[str], list[str]]:
    """(names in out/ other than s.py, the dead build's private folders in tmp/)."""
    out = sorted(p.name for p in (root / "out").iterdir() if p.name != "s.py")
    private = sorted(p.name for p in (root / "tmp").iterdir() if p.name.startswith(f"submitgen-{pid}-"))
    return out, private


def _steps(events: list[str], stride: int) -> list[int]:
    """Every ``stride``-th event, and always each rename with the events either side of it (the
    final rename of the output among them) and the output's whole write (its last five events)."""
    renames = {i for i, e in enumerate(events, 1) if e.startswith("os.rename")}
    near = {j for i in renames for j in (i - 1, i, i + 1)}
    last = len(events)
    return [n for n in range(1, last + 1) if n % stride == 0 or n in near or n > last - 5]


def _kill_at_every_step(root: Path, args: list[str], cold_cache: bool, stride: int = 1) -> int:
    old = (root / "out" / "s.py").read_bytes()
    cache = root / "cache"
    code, events, _ = _forked_build(args, root / "tmp")
    assert code == 0 and events, events
    new = (root / "out" / "s.py").read_bytes()
    assert new != old
    renames = [i for i, e in enumerate(events, 1) if e.startswith("os.rename") and "s.py" in e]
    final = renames[-1]  # the temp file -> out/s.py
    steps = _steps(events, stride)
    for n in steps:
        (root / "out" / "s.py").write_bytes(old)
        if cold_cache:
            shutil.rmtree(cache, ignore_errors=True)
        code, seen, pid = _forked_build(args, root / "tmp", kill_at=n)
        where = f"killed at event {n}/{len(events)} ({seen[-1] if seen else '-'})"
        assert code is None and len(seen) == n, where
        assert seen[-1].split()[0] == events[n - 1].split()[0], where  # the same step as the counted run
        got = (root / "out" / "s.py").read_bytes()
        assert got == (new if n > final else old), where
        stale, private = _leftovers(root, pid)
        mine = [name for name in stale if name.startswith(f".s.py.{pid}.") and name.endswith(".tmp")]
        assert mine == stale, (where, stale)
        if stale or private or (cold_cache and cache.exists()):
            (root / "out" / "s.py").write_bytes(old)
            code, _, _ = _forked_build(args, root / "tmp")
            assert code == 0, where
            assert (root / "out" / "s.py").read_bytes() == new, where  # a partial cache entry is not used
            assert _leftovers(root, pid) == ([], []), where
    return len(steps)


@pytest.mark.slow
def test_kill_9_at_every_step_of_a_prebuilt_object_build(workspace):
    args = ["build", "mxfp4-mm", "--kernels", "proj", "--co", "mm.co", "-o", "out/s.py"]
    assert _kill_at_every_step(workspace, args, cold_cache=False) >= 5


@pytest.mark.slow
def test_kill_9_at_every_step_of_a_compiling_build(workspace):
    """A cold-cache compile (about 50 events: the toolchain probe, the private compile folder and
    three cache entries, then the output): every third event, and every rename with its
    neighbours."""
    args = ["build", "mxfp4-mm", "--kernels", "proj", "-o", "out/s.py"]
    assert _kill_at_every_step(workspace, args, cold_cache=True, stride=3) >= 20
