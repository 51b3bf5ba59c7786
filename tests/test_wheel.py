"""The installed package, not only the checkout, finds its templates and kernels and builds."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib.util import find_spec
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(find_spec("hatchling") is None,
                    reason="hatchling (pyproject's build backend) is not installed: pip wheel "
                           "--no-build-isolation cannot build the wheel")
def test_wheel_ships_templates_and_kernels_and_builds(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(REPO)], check=True, capture_output=True)
    (wheel,) = wheels.glob("submitgen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for template in ("skeleton.py.j2", "launcher/ctypes.py.j2", "launcher/cpp_host.cpp", "runtime/hsa.py.j2"):
        assert f"submitgen/_data/templates/{template}" in names
    assert "submitgen/_data/kernels/include/submitgen/device.h" in names
    assert "submitgen/_data/kernels/mxfp4_mm/launch.py" in names
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run([sys.executable, "-c", "import submitgen; print(submitgen.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(site)), where
    r = subprocess.run([sys.executable, "-m", "submitgen", "build", "mxfp4-mm", "-o", "sub.py"],
                       cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (work / "sub.py").read_text().startswith("#!POPCORN leaderboard amd-mxfp4-mm\n")
    r = subprocess.run([sys.executable, "-m", "submitgen", "inspect", "--no-disasm", "sub.py"], cwd=work,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kernel mm_m16 (mxfp4_mm_kernel)" in r.stdout, r.stdout
