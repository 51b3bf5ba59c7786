"""Text that goes to a terminal never carries a character the terminal would act on: a kernel name
holding an OSC sequence (set the window title), a CSI one (clear the screen), the C1 CSI byte, a
bidi override and a raw line break is shown escaped (``\\x1b``, ``\\u202e``) by ``inspect``,
``diff`` and the build summary, and a file name holding them is escaped in the ``Error:`` line.
The JSON output escapes them by being ASCII."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from submitgen.textfmt import cut, lines, printable, wrap

WIDTH = 64
PLACEHOLDER = "k" * WIDTH
HOSTILE = "k\x1b]0;pwned\x07\x1b[2J\u202eevil\x9b31m\nfake: ok"
KERNEL = """\
#include <submitgen/device.h>
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void NAME(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i];
}
"""
PLAN = """\
import torch

KERNELS = ({name!r},)


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, n = a.shape[0], b.shape[0]
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [({name!r}, ((m * n + 255) // 256,), (256,), 0, (a, out, m * n))]
"""
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def named() -> str:
    return HOSTILE + "_" * (WIDTH - len(HOSTILE.encode()))


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd)  # in-process (conftest.run_cli)


def assert_escaped(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} reached the terminal"
    assert "k\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil\\x9b31m\\x0afake: ok" in text


@pytest.fixture(scope="module")
def hostile_co(compile_co, tmp_path_factory) -> Path:
    image = compile_co(KERNEL.replace("NAME", PLACEHOLDER)).replace(PLACEHOLDER.encode(), named().encode())
    path = tmp_path_factory.mktemp("esc") / "k.co"
    path.write_bytes(image)
    return path


def test_the_helper_escapes_controls_bidi_and_surrogates_and_is_idempotent():
    s = "a\x1b[2Jb\x00c\x7fd\x85e\u202ef\u2028g\udcffh\U000e0001"
    got = printable(s)
    assert got == "a\\x1b[2Jb\\x00c\\x7fd\\x85e\\u202ef\\u2028g\\udcffh\\U000e0001"
    assert printable(got) == got and got.isprintable()
    assert printable("x\ny", keep="\n") == "x\ny" and printable("ok é λ") == "ok é λ"
    assert wrap("\x1b[2J")[0] == "  \\x1b[2J" and cut("\x1b" * 10, 9) == "\\x1b\\x1b…"
    assert lines(["a\x1b", "b"]) == "a\\x1b\nb"


def test_inspect_shows_a_hostile_name_escaped(hostile_co):
    r = cli("inspect", "--no-disasm", str(hostile_co))
    assert r.returncode == 0, r.stderr
    assert_escaped(r.stdout)
    j = cli("inspect", "--json", "--no-disasm", str(hostile_co))
    assert j.returncode == 0 and j.stdout.isascii() and "\\u001b]0;pwned" in j.stdout


def test_diff_shows_a_hostile_name_escaped(hostile_co):
    r = cli("diff", str(hostile_co), str(hostile_co), "--all")
    assert r.returncode == 0, r.stderr
    assert_escaped(r.stdout)


@pytest.mark.slow
def test_the_build_summary_shows_a_hostile_name_escaped(hostile_co, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "launch.py").write_text(PLAN.format(name=named()), encoding="utf-8")
    r = cli("build", "mxfp4-mm", "--kernels", str(proj), "--co", str(hostile_co),
            "-o", str(tmp_path / "s.py"))
    assert r.returncode == 0, r.stderr
    for ch in RAW:
        assert ch not in r.stdout + r.stderr
    assert "  k\\x1b]0;pwned\\x07\\x1b[2J\\u20 " in r.stdout  # the summary's kernel column (28 chars)


def test_an_error_line_shows_a_hostile_file_name_escaped(tmp_path):
    r = cli("inspect", str(tmp_path / "x\x1b]0;pwned\x07.co"))
    assert r.returncode == 1
    assert r.stderr == f"Error: {tmp_path}/x\\x1b]0;pwned\\x07.co: no such file\n"


TOY = "#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\n"
TITLE = "\\x1b]0;pwned-title\\x07\\x1b[2J"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.slow
@pytest.mark.usefixtures("toy_problems")
def test_a_submissions_exception_text_is_shown_escaped_in_tests_report_and_progress(tmp_path, monkeypatch):
    """Issue 47: ``RuntimeError: \\x1b]0;pwned-title\\x07\\x1b[2J`` set the window title and cleared
    the screen from ``test``'s report and its progress line (shown on a terminal's stderr)."""
    from submitgen.cli import cli as command

    sub = tmp_path / "sub.py"
    sub.write_text(TOY + f"def custom_kernel(data):\n    raise RuntimeError('{TITLE}')\n")
    out, err = io.StringIO(), _Tty()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exit_:
        command.main(["test", str(sub), "--shape", "n=64,seed=1"], prog_name="submitgen")
    assert exit_.value.code == 1
    for ch in RAW:
        assert ch not in out.getvalue() + err.getvalue()
    escaped = "RuntimeError: \\x1b]0;pwned-title\\x07\\x1b[2J"
    assert out.getvalue().splitlines()[-2:] == [escaped, "FAILED: 1 of 1 shapes failed"]
    assert f"[1/1] n=64: FAIL: {escaped}" in err.getvalue().splitlines()
