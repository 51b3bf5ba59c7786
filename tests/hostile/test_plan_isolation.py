"""A process the plan starts does not outlive the plan timeout in the plan's process group, and
nothing it starts (even in a session of its own) holds the build's stdout or stderr open: the
caller's pipes close within seconds of the timeout. (A detached `sleep 300` kept a caller of
`submitgen build` waiting 307 s.)"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"
REPO = Path(__file__).resolve().parents[2]


def _pids_running(argv: list[str]) -> list[int]:
    """Processes whose command line is exactly ``argv`` (the test's own, by a unique argument)."""
    want = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes() == want:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_the_plan_group_is_killed_and_the_callers_pipes_close_at_the_timeout(tmp_path):
    tag = f"{random.randrange(10**6)}"
    grouped = ["sleep", f"300.{tag}1"]
    detached = ["sleep", f"300.{tag}2"]
    shutil.copytree(PROJECT, tmp_path / "spawns")
    plan = tmp_path / "spawns" / "launch.py"
    plan.write_text(plan.read_text().replace(
        "    m, k = a.shape\n",
        f'    torch.os.system("{" ".join(grouped)} & setsid {" ".join(detached)} &")\n'
        "    while True:\n        pass\n",
    ))
    env = dict(os.environ, PYTHONPATH=str(REPO), SUBMITGEN_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "submitgen", "build", "mxfp4-mm", "--kernels", "spawns", "-o", "s.py",
         "--plan-timeout", "3"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        proc.wait(timeout=60)
        exited = time.monotonic()
        out, err = proc.communicate(timeout=60)  # returns when both pipes are closed
        after_exit = time.monotonic() - exited
        print(f"pipes closed {after_exit:.2f} s after submitgen exited")
        assert out == b""
        assert err == (b"Error: spawns/launch.py: the plan did not finish within 3 s (--plan-timeout); a "
                       b"plan looks at shapes only and returns at once\n")
        assert proc.returncode == 1
        assert after_exit < 60  # a hang catcher only: the detached sleep would hold them 300 s
        assert _pids_running(detached) != []  # the plan did start both; this one left the group
        assert _pids_running(grouped) == []  # it was in the plan's group: killed with it
    finally:
        proc.kill()
        proc.wait()
        for argv in (grouped, detached):
            for pid in _pids_running(argv):  # only this test's own sleeps, by their unique argument
                os.kill(pid, signal.SIGKILL)


def test_what_the_plan_started_dies_with_a_killed_build(tmp_path):
    """kill -9 of the build, while its plan runs: the plan's child had PR_SET_PDEATHSIG, but a
    process the plan started did not, and lived on; the plan's watchdog now kills the group."""
    tag = f"{random.randrange(10**6)}"
    grouped = ["sleep", f"300.{tag}3"]
    shutil.copytree(PROJECT, tmp_path / "spawns")
    plan = tmp_path / "spawns" / "launch.py"
    plan.write_text(plan.read_text().replace(
        "    m, k = a.shape\n",
        f'    torch.os.system("{" ".join(grouped)} &")\n'
        "    while True:\n        pass\n",
    ))
    env = dict(os.environ, PYTHONPATH=str(REPO), SUBMITGEN_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "submitgen", "build", "mxfp4-mm", "--kernels", "spawns", "-o", "s.py",
         "--plan-timeout", "120"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while not _pids_running(grouped):
            assert proc.poll() is None and time.monotonic() < deadline, "the plan never started its sleep"
            time.sleep(0.1)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 60  # a hang catcher: the loop ends as soon as it holds
        while _pids_running(grouped) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _pids_running(grouped) == []
        assert not (tmp_path / "s.py").exists()
    finally:
        proc.kill()
        proc.wait()
        for pid in _pids_running(grouped):  # only this test's own sleep, by its unique argument
            os.kill(pid, signal.SIGKILL)
