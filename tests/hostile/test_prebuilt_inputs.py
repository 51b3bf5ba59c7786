"""A prebuilt `--co` is read by the one bounded reader for every target (`build --target cuda --co
FIFO` hung), and a plain float for a by-value argument whose type nothing says is refused with
what to pass instead: a prebuilt object cannot tell float from int. ctypes scalars
(`ctypes.c_float(x)`, `ctypes.c_int(n)`) are packed as their own bytes, and checked against the
source's types where the build knows them."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.runtime.pack import SgPlanError, sg_pack

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"
REPO = Path(__file__).resolve().parents[2]
SHAPE = "m=8 n=2112 k=7168"


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(PROJECT, tmp_path / "proj")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "proj"


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.slow
def test_cuda_co_fifo_is_refused_at_once(proj, tmp_path):
    os.mkfifo(tmp_path / "k.cubin")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(
        [sys.executable, "-m", "submitgen", "build", "mxfp4-mm", "--target", "cuda", "--co", "k.cubin",
         "--kernels", "proj", "-o", "s.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )
    assert (r.returncode, r.stdout + r.stderr) == (
        1, "Error: k.cubin: not a regular file (a FIFO): expected a code object, an offload bundle or a "
           "Python file\n")


@pytest.mark.slow
def test_a_plain_float_for_an_untyped_prebuilt_argument_is_refused(proj):
    """The project's own source types a --co object's arguments when the folder has it; here it does not."""
    assert run("compile", "proj/mm.hip", "-o", "mm.co").exit_code == 0
    (proj / "mm.hip").unlink()  # a prebuilt object alone: no source says the argument types
    plan = proj / "launch.py"
    plan.write_text(plan.read_text().replace('SOURCES = ("mm.hip",)\n', ""))
    r = run("build", "mxfp4-mm", "--co", "mm.co", "--kernels", "proj", "-o", "s.py")
    assert (r.exit_code, r.output) == (
        1, "Error: kernel 'mm_tile' arg 7: nothing says whether this 4-byte argument is a float or an int (a "
           "prebuilt code object, no source types known); pass ctypes.c_float(0.5) for a float or "
           f"ctypes.c_int(n) for an int ({SHAPE})\n")
    assert not Path("s.py").exists()
    plan.write_text(plan.read_text().replace("m, n, k, 0.5)", "m, n, k, ctypes.c_float(0.5))"))
    r = run("build", "mxfp4-mm", "--co", "mm.co", "--kernels", "proj", "-o", "s.py")
    assert r.exit_code == 0, r.output
    assert "ctypes.c_float(0.5)" in Path("s.py").read_text()


def test_a_ctypes_int_for_a_float_source_parameter_is_refused(proj):
    plan = proj / "launch.py"
    plan.write_text(plan.read_text().replace("m, n, k, 0.5)", "m, n, k, ctypes.c_int(1))"))
    r = run("build", "mxfp4-mm", "--kernels", "proj", "-o", "s.py")
    assert (r.exit_code, r.output) == (
        1, "Error: kernel 'mm_tile' arg 7: mm.hip declares a floating-point parameter, plan passes "
           f"ctypes.c_int(1) ({SHAPE})\n")


TABLE = {"k": (16, ((0, 4, "by_value", ""), (8, 8, "by_value", "")))}


def test_ctypes_scalars_pack_as_their_own_bytes():
    packed = sg_pack(TABLE, ("k", (1,), (64,), 0, (ctypes.c_float(0.5), ctypes.c_int64(-3))), (), None)
    assert bytes(packed.kernarg) == struct.pack("<f4xq", 0.5, -3)
    packed = sg_pack(TABLE, ("k", (1,), (64,), 0, (ctypes.c_int(7), ctypes.c_double(2.5))), (), None)
    assert bytes(packed.kernarg) == struct.pack("<i4xd", 7, 2.5)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (ctypes.c_double(0.5), "kernel 'k' arg 0: metadata says by_value size 4, plan passes ctypes.c_double "
                               "(8 bytes)"),
        (ctypes.c_char_p(b"x"), "kernel 'k' arg 0: ctypes.c_char_p cannot be passed by value; pass "
                                "ctypes.c_float, ctypes.c_double or a ctypes integer"),
    ],
)
def test_ctypes_scalars_of_the_wrong_size_or_kind_are_refused(value, error):
    with pytest.raises(SgPlanError) as e:
        sg_pack(TABLE, ("k", (1,), (64,), 0, (value, 1)), (), None)
    assert str(e.value) == error
