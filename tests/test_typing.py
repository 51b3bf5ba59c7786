"""``mypy --strict`` passes on the readers, the backends and the pipeline (issue 25): the values
that cross those boundaries are typed (ObjectInfo, KernelInfo, TritonSpec, TritonArtifact, no
``Any``). Modules they import are type-checked for their signatures only (--follow-imports=silent):
their own bodies are not part of this gate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKED = ("submitgen/readers", "submitgen/backends", "submitgen/pipeline")


@pytest.mark.slow
def test_mypy_strict_passes_on_readers_backends_and_pipeline(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                        "--cache-dir", str(tmp_path / "cache"), *CHECKED],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0 and r.stdout.startswith("Success: no issues found"), r.stdout + r.stderr
