"""KernelGuard, kernelbot's hack detector, in lint and build (issue 48): lint reports its own verdict
with its version, fails a file it filters with each pattern named, warns about other matches and
says when it is not installed; every default build (gfx950 and sm_90) comes out ``valid``. Also:
lint reads the header as popcorn-cli does (lines end at \\n only), and each finding names its
source, a reviewer's policy never failing the lint."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.lint import LintFinding, lint_file_report, lint_report
from submitgen.rules import BANNED_WORD

pytest.importorskip("kernelguard", reason="the [kernelguard] extra")

VERSION = importlib.metadata.version("kernelguard")
HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
KERNEL = "\n\ndef custom_kernel(data):\n    return data[0]\n"
WORD = BANNED_WORD.capitalize()  # spelled at run time so this file passes the same check


def _api_mode(path) -> dict:
    """``kernelguard --api-mode < path``, as kernelbot runs it (its last line is the JSON verdict)."""
    with open(path) as f:
        done = subprocess.run([sys.executable, "-m", "kernelguard", "--api-mode"], stdin=f,
                              capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _lint(path, *args: str):
    return CliRunner().invoke(cli, ["lint", str(path), *args])


def _valid(verdict: dict) -> tuple:
    return verdict["classification"], verdict["should_filter"], verdict["matched_patterns"]


@pytest.mark.slow
def test_kernelguard_finds_each_default_gfx950_build_valid_and_lint_says_so(default_build):
    path = default_build.output
    assert _valid(_api_mode(path)) == ("valid", False, [])
    result = _lint(path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{path}: KernelGuard {VERSION}: valid",
        f"{path}: lint passed; {lint_file_report(path).payload.summary()}"]
    # the build ran the same check on what it wrote, and says so
    assert default_build.kernelguard.summary() == f"KernelGuard {VERSION}: valid"
    from submitgen.pipeline.summary import format_summary

    assert f"  KernelGuard {VERSION}: valid" in format_summary(default_build).splitlines()


@pytest.mark.slow
def test_kernelguard_finds_each_default_sm_90_build_valid(default_build_sm90):
    assert _valid(_api_mode(default_build_sm90.output)) == ("valid", False, [])
    assert default_build_sm90.kernelguard.summary() == f"KernelGuard {VERSION}: valid"


OBFUSCATED = HEADER + "import base64\n\nexec(base64.b64decode(b'eD0x'))\n" + KERNEL


def test_a_file_kernelguard_filters_fails_lint_with_the_pattern_named(tmp_path):
    path = tmp_path / "obf.py"
    path.write_text(OBFUSCATED)
    assert _api_mode(path)["should_filter"] is True
    result = _lint(path)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{path}:1: kernelguard [KernelGuard]: OBFUSCATED_EXEC (critical): exec() with encoded/decoded "
        "payload (hides exploit code); KernelGuard filters the file, and kernelbot refuses it (fix: change "
        "the code the evidence describes)",
        f"{path}: KernelGuard {VERSION}: hacked, filtered (high_critical): OBFUSCATED_EXEC"]


def test_lint_json_gives_each_findings_source_and_kernelguards_verdict(tmp_path):
    path = tmp_path / "obf.py"
    path.write_text(OBFUSCATED)
    result = _lint(path, "--json")
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert [(f["rule"], f["source"], f["severity"]) for f in doc["errors"]] == [
        ("kernelguard", "kernelguard", "error")]
    assert doc["warnings"] == []
    assert doc["kernelguard"] == {
        "version": VERSION, "installed": True, "classification": "hacked", "should_filter": True,
        "filter_reason": "high_critical", "failure": None, "timed_out": False, "matched_patterns": [
            {"pattern": "OBFUSCATED_EXEC", "severity": "critical",
             "evidence": "exec() with encoded/decoded payload (hides exploit code)"}]}


def test_a_match_kernelguard_does_not_filter_is_a_warning(tmp_path):
    path = tmp_path / "down.py"
    path.write_text(HEADER + "import torch\n\n\ndef custom_kernel(data):\n"
                    "    return data[0].to(torch.bfloat16).float()\n")
    result = _lint(path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[:2] == [
        f"{path}:1: warning: kernelguard [KernelGuard]: PRECISION_DOWNGRADE (medium): Downcast "
        "(.to(torch.bfloat16)) then upcast back — may cheat benchmark via lower precision; KernelGuard "
        "classifies the file low_confidence (not filtered) (fix: reviewers see the match: change the code "
        "the evidence describes where you can)",
        f"{path}: KernelGuard {VERSION}: low_confidence (not filtered: PRECISION_DOWNGRADE)"]


def test_lint_says_plainly_when_kernelguard_is_not_installed(tmp_path):
    """A Python where ``import kernelguard`` fails (sys.modules entry None) runs the real CLI."""
    path = tmp_path / "obf.py"
    path.write_text(OBFUSCATED)
    code = ("import sys; sys.modules['kernelguard'] = None; from submitgen.cli import main; "
            f"sys.argv = ['submitgen', 'lint', {str(path)!r}]; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{path}: KernelGuard: not installed, so its check did not run (pip install "
        "'submitgen[kernelguard]')",
        f"{path}: lint passed; {lint_file_report(path).payload.summary()}"]


def test_a_file_kernelguard_fails_on_is_refused_as_kernelbot_refuses_it():
    """kernelbot refuses a submission whose KernelGuard pre-check exits non-zero; 3,000 terms of one
    sum are past the recursion limit of KernelGuard's parse (and of Python's: a syntax error too)."""
    report = lint_report(HEADER + "x = " + " + ".join(['"a"'] * 3000) + "\n" + KERNEL)
    syntax, f = report.errors
    assert syntax.rule == "syntax"
    assert (f.rule, f.source, f.line) == ("kernelguard", "kernelguard", 1)
    assert f.message.startswith(f"KernelGuard {VERSION} fails on this file (RecursionError: ")
    assert f.message.endswith("): kernelbot refuses a file whose pre-check fails")
    assert report.warnings == ()


def test_kernelguard_past_its_cpu_time_here_is_a_warning_that_its_verdict_is_unknown(tmp_path):
    """A 30,000-character name: KernelGuard's main-alias regex is quadratic in it (tens of seconds),
    past lint's 2 s for it; the verdict is unknown, not a refusal."""
    path = tmp_path / "long.py"
    path.write_text(HEADER + "x" * 30_000 + " = 1\n" + KERNEL)
    result = _lint(path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[:2] == [
        f"{path}:1: warning: kernelguard [KernelGuard]: KernelGuard {VERSION} did not finish within 2 s of "
        f"CPU "
        "here, so its verdict is unknown; kernelbot gives it 30 s and refuses the file when it runs out "
        "(fix: "
        "keep runs of letters and digits short (long identifiers, hex or base64 text without breaks): "
        "KernelGuard's time grows with their square)",
        f"{path}: KernelGuard {VERSION}: not finished within 2 s of CPU, so its verdict is unknown"]


# ---- popcorn-cli's header parse: lines end at \n only (issue 47, issue 48 item 3) ----

def test_cr_only_line_ends_hide_every_directive_but_the_first_from_popcorn_cli(tmp_path):
    """popcorn-cli (``str::lines``) reads a file with bare-CR line ends as one line: its first word
    is '#!POPCORN', so it takes the leaderboard from its next two words (split_whitespace splits at
    \\r too) and reads no gpu directive. lint reads the same, and says why."""
    path = tmp_path / "cr.py"
    path.write_bytes((HEADER + "import torch" + KERNEL).replace("\n", "\r").encode())
    result = _lint(path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{path}:1: warning: header [popcorn-cli]: popcorn-cli reads this as one line of 6: it ends lines "
        "at '\\n' only, and these end in '\\r' (or another break that Python reads), so it does not read "
        "'#!POPCORN gpu MI355X' (fix: save the file with '\\n' (or '\\r\\n') line ends)",
        f"{path}:1: warning: header [popcorn-cli]: no '#!POPCORN gpu <GPU>' directive: popcorn-cli then "
        "needs --gpu (fix: add '#!POPCORN gpu MI355X' after the leaderboard line, or pass --gpu MI355X to "
        "popcorn-cli)",
        f"{path}: KernelGuard {VERSION}: valid",
        f"{path}: lint passed; {lint_file_report(path).payload.summary()}"]


def test_cr_only_file_that_starts_with_a_plain_comment_has_no_directive_for_popcorn_cli(tmp_path):
    """The one line popcorn-cli reads starts with '#', not '#!POPCORN': it reads no directive at all
    (issue 47's case: lint found them all before)."""
    path = tmp_path / "cr.py"
    path.write_bytes(("# my kernel\n" + HEADER + "import torch" + KERNEL).replace("\n", "\r").encode())
    result = _lint(path)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{path}:1: header [popcorn-cli]: no '#!POPCORN leaderboard <name>' directive: popcorn-cli reads it "
        "from a comment line that starts with '#!POPCORN' (fix: add '#!POPCORN leaderboard <name>' (one of "
        "amd-mxfp4-mm, amd-mixed-mla, amd-moe-mxfp4, amd-identity, amd-fp8-mm, amd-mixture-of-experts, "
        "amd-mla-decode, amd-all2all, amd-gemm-rs, amd-ag-gemm) as the first line, or pass --problem)",
        f"{path}:1: warning: header [popcorn-cli]: popcorn-cli reads this as one line of 7: it ends lines "
        "at '\\n' only, and these end in '\\r' (or another break that Python reads), so it does not read "
        "'#!POPCORN leaderboard amd-mxfp4-mm' and 1 more directive(s) (fix: save the file with '\\n' (or "
        "'\\r\\n') line ends)",
        f"{path}:1: warning: header [popcorn-cli]: no '#!POPCORN gpu <GPU>' directive: popcorn-cli then "
        "needs --gpu (fix: add '#!POPCORN gpu <GPU>' after the leaderboard line, or pass --gpu <GPU> to "
        "popcorn-cli)",
        f"{path}: KernelGuard {VERSION}: valid"]


def test_crlf_line_ends_are_read_as_lines():
    report = lint_report((HEADER + "import torch" + KERNEL).replace("\n", "\r\n"))
    assert report.errors == report.warnings == ()


# ---- every finding's source; a reviewer's policy only warns ----

def test_a_reviewer_policy_finding_is_never_an_error():
    with pytest.raises(ValueError, match="a 'policy' finding is a warning, got 'error'"):
        LintFinding("hsa-queue", 1, "m", "f", source="policy")
    with pytest.raises(ValueError, match="lint finding source must be one of"):
        LintFinding("header", 1, "m", "f", source="the moon")
