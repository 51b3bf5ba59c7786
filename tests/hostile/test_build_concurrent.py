"""Builds running at the same time, sharing one (initially empty) compile cache, write
byte-identical submissions, and so does a later build that reads the cache they filled."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import forked_cli

from submitgen.cli import cli

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"


@pytest.mark.slow
def test_concurrent_builds_sharing_the_cache_are_identical(tmp_path, monkeypatch):
    shutil.copytree(PROJECT, tmp_path / "proj")
    env = dict(os.environ, SUBMITGEN_CACHE_DIR=str(tmp_path / "cache"))
    builds = [forked_cli("build", "mxfp4-mm", "--kernels", "proj", "-o", f"out{i}/submission.py",
                         cwd=tmp_path, env=env) for i in range(2)]  # two processes at once
    for p in builds:
        r = p.wait(300)
        assert r.returncode == 0, r.stdout + r.stderr
    assert any((tmp_path / "cache").rglob("*")), "the builds cached nothing"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", env["SUBMITGEN_CACHE_DIR"])
    warm = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "-o", "warm/submission.py"])
    assert warm.exit_code == 0, warm.output
    texts = {(tmp_path / d / "submission.py").read_bytes() for d in ("out0", "out1", "warm")}
    assert len(texts) == 1
    assert sorted(p.name for p in tmp_path.rglob(".submission.py.*")) == []
