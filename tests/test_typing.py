"""``mypy --strict`` passes on the readers, the backends and the pipeline (issue 25): the values
that cross those boundaries are typed (ObjectInfo, KernelInfo, TritonSpec, TritonArtifact, no
``Any``). Modules they import are type-checked for their signatures only (--follow-imports=silent):
their own bodies are not part of this gate. torch and numpy are not followed (their types are Any):
the checked packages name neither, and reading torch's 1,384 modules was 19 of the check's 23 s of
CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKED = ("submitgen/readers", "submitgen/backends", "submitgen/pipeline")
NOT_FOLLOWED = "[mypy]\n\n[mypy-torch.*,numpy.*]\nfollow_imports = skip\nfollow_imports_for_stubs = True\n"


@pytest.mark.slow
def test_mypy_strict_passes_on_readers_backends_and_pipeline(tmp_path):
    config = tmp_path / "mypy.ini"
    config.write_text(NOT_FOLLOWED)
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--strict",
                        "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"), *CHECKED],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0 and r.stdout.startswith("Success: no issues found"), r.stdout + r.stderr
