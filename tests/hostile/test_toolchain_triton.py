"""Hostile Triton kernel files: they run in a child process under a time limit, so one that loops,
exits or prints at load time fails the compile with one line, and never hangs or ends the caller."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest

from submitgen.errors import ToolchainError, TritonCompileError
from submitgen.toolchain.triton import TritonSpec, compile_triton

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="triton is not installed (pip install 'submitgen[triton]')")

KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))


def spec(tmp_path: Path, prefix: str) -> TritonSpec:
    p = tmp_path / "k.py"
    p.write_text(prefix + KERNEL)
    return TritonSpec(
        "k64", p, p.read_bytes(), "k", (("x_ptr", "*fp32"), ("BLOCK", "constexpr")), (("BLOCK", 64),)
    )


@pytest.mark.slow
def test_a_file_that_loops_at_load_time_ends_at_the_time_limit(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(ToolchainError) as e:
        compile_triton(spec(tmp_path, "while True:\n    pass\n"), "gfx950", timeout=5)
    assert time.monotonic() - t0 < 60
    assert str(e.value) == (
        "compiling Triton kernels (k64) for gfx950 ran past its time limit of 5 s and was "
        "stopped (does a kernel's file loop when it is loaded?)"
    )


def test_a_file_that_ends_the_process_fails_the_compile_only(tmp_path):
    s = spec(tmp_path, "import os\nos._exit(3)\n")
    with pytest.raises(TritonCompileError) as e:
        compile_triton(s, "gfx950")
    assert (
        str(e.value)
        == f"{s.source}: Triton kernel 'k': the compile process ended without a result (exit code 3)"
    )
    s = spec(tmp_path, "raise SystemExit(0)\n")
    with pytest.raises(TritonCompileError) as e:
        compile_triton(s, "gfx950")
    assert str(e.value) == f"{s.source}:1: Triton kernel 'k': loading the file raised SystemExit: 0"


def test_output_and_environment_changes_stay_in_the_child(tmp_path, capfd):
    s = spec(
        tmp_path,
        "import os, sys\nprint('noise')\nprint('more', file=sys.stderr)\nos.environ['SG_LEAK'] = '1'\n",
    )
    art = compile_triton(s, "gfx950")
    assert art.symbol == "k" and art.block == 256
    out, err = capfd.readouterr()
    assert "noise" not in out and "more" not in err and "SG_LEAK" not in os.environ
