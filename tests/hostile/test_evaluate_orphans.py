"""`submitgen test`'s worker, and what the submission started in it, die with `submitgen` however it
ends: SIGKILL (the watchdog and PR_SET_PDEATHSIG), SIGTERM and SIGHUP (the run ends as on Ctrl-C,
and its folder is removed)."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 60  # a hang catcher: the wait ends as soon as every process is gone


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "gone"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_the_worker_dies_with_submitgen(tmp_path, sig):
    pidfile = tmp_path / "pids"
    sub = tmp_path / "sub.py"
    sub.write_text(
        "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
        "import os\nimport time\n\nimport torch\n\n\n"
        "def custom_kernel(data):\n"
        "    child = os.fork()\n"
        "    if child == 0:\n        time.sleep(600)\n        os._exit(0)\n"
        f"    with open({str(pidfile) + '.tmp'!r}, 'w') as f:\n"
        "        f.write(f'{os.getpid()} {child}')\n"
        f"    os.rename({str(pidfile) + '.tmp'!r}, {str(pidfile)!r})\n"
        "    time.sleep(600)\n"
        "    return data[0]\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = subprocess.Popen([sys.executable, "-m", "submitgen", "test", str(sub), "--no-lint",
                            "--shape", "m=8,n=256,k=512,seed=1"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not pidfile.exists():
            assert cli.poll() is None, f"submitgen test ended early ({cli.returncode})"
            assert time.monotonic() < deadline, "the submission never ran"
            time.sleep(0.2)
        pids = [int(p) for p in pidfile.read_text().split()]
        assert all(_state(p) not in ("gone", "Z") for p in pids)
        cli.send_signal(sig)
        code = cli.wait(timeout=60)
        deadline = time.monotonic() + GONE_WITHIN_S
        while time.monotonic() < deadline and any(_state(p) not in ("gone", "Z", "X") for p in pids):
            time.sleep(0.1)
        assert {p: _state(p) for p in pids if _state(p) not in ("gone", "Z", "X")} == {}
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert code == -sig if sig == signal.SIGKILL else code == 128 + sig
    if sig != signal.SIGKILL:  # the run ended in order: its folder is gone too
        assert glob.glob(f"/tmp/submitgen-{cli.pid}-run-*") == []
