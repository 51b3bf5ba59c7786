"""`submitgen lint` on files written here, one per rule change, with the exact lines users see:
the #!POPCORN header as popcorn-cli reads it, and lint without torch."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import kernelguard_line

from submitgen.cli import cli
from submitgen.rules import BANNED_WORD

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
KERNEL = "\n\ndef custom_kernel(data):\n    return data\n"
WORD = BANNED_WORD.capitalize()
ROOT = Path(__file__).resolve().parent.parent


def lint(path: Path, *args: str):
    return CliRunner().invoke(cli, ["lint", str(path), *args], catch_exceptions=False)


def test_header_after_a_docstring_passes_with_warnings(tmp_path: Path):
    """popcorn-cli reads #!POPCORN from any comment line and sends the leaderboard itself."""
    sub = tmp_path / "submission.py"
    sub.write_text('"""MLA decode, torch only."""\nimport torch\n# notes\n'
                   "#!POPCORN leaderboard amd-mixed-mla\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[:2] == [
        f"{sub}:4: warning: header [kernelbot]: this directive is not in a comment block at the top of the "
        f"file "
        "(its first line is not a comment): popcorn-cli reads it and sends its value with the "
        "request, but the server reads directives only from the first comment block (fix: move "
        "'#!POPCORN leaderboard amd-mixed-mla' to the top of the file, before any code or blank line)",
        f"{sub}:4: warning: header [popcorn-cli]: no '#!POPCORN gpu <GPU>' directive: popcorn-cli then needs "
        f"--gpu "
        "(fix: add '#!POPCORN gpu MI355X' after the leaderboard line, or pass --gpu MI355X to "
        "popcorn-cli)"]
    assert out[2] == kernelguard_line(sub)
    assert out[3].startswith(f"{sub}: lint passed; estimated payload ")
    assert " chars for amd-mixed-mla " in out[3]
    assert len(out) == 4


def test_header_missing_leaderboard_fails(tmp_path: Path):
    """'# !POPCORN' is no directive to popcorn-cli: the file names no leaderboard."""
    sub = tmp_path / "submission.py"
    sub.write_text("# !POPCORN leaderboard amd-moe-mxfp4\n#!POPCORN gpu MI355X\nimport torch\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{sub}:1: header [popcorn-cli]: no '#!POPCORN leaderboard <name>' directive: popcorn-cli reads it "
        "from a comment line that starts with '#!POPCORN' (fix: add '#!POPCORN leaderboard <name>' (one of "
        "amd-mxfp4-mm, amd-mixed-mla, amd-moe-mxfp4, amd-identity, amd-fp8-mm, amd-mixture-of-experts, "
        "amd-mla-decode, amd-all2all, amd-gemm-rs, amd-ag-gemm) as the first line, or pass --problem)",
        kernelguard_line(sub)]
