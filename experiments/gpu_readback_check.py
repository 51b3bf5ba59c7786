"""Run the GPU read-back tests (tests/hostile/test_evaluate_gpu_readback.py, the CPU unit tests of
the same code, tests/test_evaluate_readback.py, and bench --mode leaderboard's timed-call read-backs,
tests/hostile/test_evaluate_timed_readback.py, which read CUDA inputs where there is a GPU) on a
CUDA machine and print one line a test and a summary. From the repository root:
``PYTHONPATH=. python3 experiments/gpu_readback_check.py``. Needs torch with a CUDA device and
pytest (no pytest-xdist: the repository's addopts are dropped); about two minutes; exits 0 only when
every test passed and none was skipped."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("tests/hostile/test_evaluate_gpu_readback.py", "tests/test_evaluate_readback.py",
         "tests/hostile/test_evaluate_timed_readback.py")
LIMIT_S = 300


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print(f"torch {torch.__version__} sees no CUDA device: the GPU tests would all be skipped")
        return 2
    build = f"HIP {torch.version.hip}" if torch.version.hip else f"CUDA {torch.version.cuda}"
    print(f"torch {torch.__version__}, {build}, {torch.cuda.get_device_name(0)}, "
          f"python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "report.xml"
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path)
        started = time.monotonic()
        try:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p",
                                "no:cacheprovider", "-rfEs", f"--junitxml={xml}", *FILES],
                               cwd=ROOT, env=env, timeout=LIMIT_S, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            print(f"FAILED: pytest ran past {LIMIT_S} s")
            return 1
        seconds = time.monotonic() - started
        if not xml.exists():
            print(r.stdout[-4000:], r.stderr[-4000:], sep="\n")
            print(f"FAILED: pytest wrote no report (exit code {r.returncode})")
            return 1
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for case in ET.parse(xml).getroot().iter("testcase"):
            outcome = ("failed" if case.find("failure") is not None or case.find("error") is not None
                       else "skipped" if case.find("skipped") is not None else "passed")
            counts[outcome] += 1
            if "gpu" in case.get("name", "") or outcome != "passed":
                module = case.get("classname", "").rsplit(".", 1)[-1]
                print(f"{outcome.upper():8} {module}::{case.get('name')}")
    if counts["failed"] or counts["skipped"] or r.returncode:
        print(r.stdout[-6000:])
    ok = not counts["failed"] and not counts["skipped"] and r.returncode == 0
    print(f"{'OK' if ok else 'FAILED'}: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped in {seconds:.0f} s (pytest exit code {r.returncode})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
