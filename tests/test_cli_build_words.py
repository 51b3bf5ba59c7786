"""popcorn-cli's words on the build (--leaderboard, amd-* names, --gpu, --mode, the submit line it
prints), the test command's refusal of a file that fails lint, and the rebuild line in a file's
header carrying every option the build used. Builds embed the golden code object (no compile)."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.pipeline import BuildOptions, build
from submitgen.pipeline.prepare import NOT_REBUILT
from submitgen.render import provenance

TESTS = Path(__file__).resolve().parent
MM = TESTS / "projects" / "mm_basic"
CO = TESTS / "golden" / "mm_basic.co"
PREBUILT = ["--kernels", str(MM), "--co", str(CO)]


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_leaderboard_and_gpu_as_popcorn_cli_says_them(here):
    r = run("build", "--leaderboard", "amd-mxfp4-mm", "--gpu", "MI355X", *PREBUILT, "-o", "s.py")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("wrote s.py for amd-mxfp4-mm (amdgcn-amd-amdhsa--gfx950)\n")
    assert r.output.endswith(
        "\n  not checked: the build ran no kernel, so its outputs were never compared with the reference: "
        "`submitgen test --interpret PROJECT_DIR` runs a Triton project's kernels on this CPU, "
        "`submitgen test s.py` runs the file on the leaderboard's GPU"
        "\n\n  submit it with: popcorn-cli submit --gpu MI355X --leaderboard amd-mxfp4-mm --mode leaderboard "
        "s.py\n")


@pytest.mark.slow
def test_amd_name_as_the_problem_and_another_mode(here):
    r = run("build", "amd-mxfp4-mm", "--mode", "benchmark", *PREBUILT, "-o", "s.py")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == (
        "  submit it with: popcorn-cli submit --gpu MI355X --leaderboard amd-mxfp4-mm --mode benchmark s.py")


def test_help_says_amd_names_work():
    r = run("build", "--help")
    assert "leaderboard's amd-* name, also as --leaderboard" in " ".join(r.output.split())
    for command in ("lint", "test", "bench"):
        r = run(command, "--help")
        assert "--problem, --leaderboard {mxfp4-mm|" in r.output
        assert "amd-* leaderboard name" in " ".join(r.output.split())


@pytest.mark.parametrize(("args", "code", "error"), [
    (["--gpu", "H100"], 1,
     "Error: --gpu H100: amd-mxfp4-mm runs on MI355X; pass --gpu MI355X or leave it out"),
    (["--leaderboard", "amd-mixed-mla"], 2, "Error: PROBLEM mxfp4-mm and --leaderboard amd-mixed-mla name "
                                            "different problems"),
    (["--mode", "profile"], 2,
     "Error: Invalid value for '--mode': 'profile' is not one of 'test', 'benchmark', 'leaderboard'."),
])
def test_wrong_words_are_refused(here, args, code, error):
    r = run("build", "mxfp4-mm", *args, *PREBUILT, "-o", "s.py")
    assert r.exit_code == code and r.output.splitlines()[-1] == error
    assert not (here / "s.py").exists()


def test_no_problem_at_all(here):
    r = run("build", "-o", "s.py")
    assert r.exit_code == 2
    assert r.output.splitlines()[-1] == "Error: name the problem: PROBLEM or --leaderboard NAME"


@pytest.mark.slow
def test_an_own_queue_build_prints_no_submit_line(here):
    r = run("build", "mxfp4-mm", "--launcher", "aql", "--allow-own-queue", *PREBUILT, "-o", "s.py")
    assert r.exit_code == 0, r.output
    assert "popcorn-cli" not in r.output


def test_test_says_why_it_did_not_run_a_file(here):
    bad = here / "bad.py"
    bad.write_text("#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n# a Stream\n"
                   "def custom_kernel(data):\n    return data[0]\n")
    r = run("test", str(bad))
    assert r.exit_code == 1
    assert r.output.splitlines()[-1] == (
        f"Error: {bad}: 1 lint failure(s): not run, because it fails lint (the leaderboard would refuse it); "
        "pass --no-lint to run it anyway for a local experiment")
    r = run("lint", str(bad), "--leaderboard", "amd-mxfp4-mm")
    assert r.exit_code == 1 and r.output.startswith(f"{bad}:3: banned-word [kernelbot]: 'Stream' at column 5")


# --------------------------------------------------------------------------- the rebuild line

CASES = [
    dict(launcher="cpp", compress="zlib"),
    dict(launcher="cpp", allow_fallback=False, reuse_output=True, arch="gfx950", plan_timeout=30.0),
    dict(launcher="aql", allow_own_queue=True, compiler="/opt/rocm/bin/hipcc"),
    dict(target="amd", compress="lzma", launcher="ctypes"),
]


def _rebuilt(text: str, where: Path, monkeypatch) -> BuildOptions:
    """The options the header's rebuild line parses to, through the CLI's own parser, run in a
    folder that holds the inputs by the names the line gives them."""
    (where / MM.name).symlink_to(MM)
    (where / CO.name).symlink_to(CO)
    monkeypatch.chdir(where)
    lines = text.splitlines()
    argv = shlex.split(lines[lines.index("# Rebuild it with:") + 1].removeprefix("#   "))
    assert argv[:2] == ["submitgen", "build"]
    ctx = cli.commands["build"].make_context("build", argv[2:])
    p = ctx.params
    return BuildOptions(
        problem=p["problem"], kernels=p["kernels"], code_objects=tuple(p["code_objects"]), arch=p["arch"],
        target=p["target"], compress=p["compress"], allow_fallback=not p["no_fallback"],
        reuse_output=p["reuse_output"], launcher=p["launcher"], allow_own_queue=p["allow_own_queue"],
        compiler=p["compiler"], plan_timeout=p["plan_timeout"])


def _comparable(value):
    if isinstance(value, Path) or (isinstance(value, str) and "/" in value):  # paths: by name only
        return Path(value).name
    if isinstance(value, Path):
        return value.name
    if isinstance(value, tuple):
        return tuple(_comparable(v) for v in value)
    return str(value) if value is not None else None


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_every_option_a_build_used_is_on_its_rebuild_line(tmp_path, monkeypatch, case):
    used = BuildOptions(problem="mxfp4-mm", output=tmp_path / "s.py", kernels=MM, code_objects=(CO,), **case)
    text = build(used).text
    again = _rebuilt(text, tmp_path, monkeypatch)
    for f in dataclasses.fields(BuildOptions):
        if f.name not in NOT_REBUILT:
            assert _comparable(getattr(again, f.name)) == _comparable(getattr(used, f.name)), f.name
    # and the provenance says the same launcher and compression as the line
    prov = provenance.read(text)
    assert (prov.value("launcher"), prov.value("compress")) == (str(again.launcher), str(again.compress))


def test_the_cpp_rebuild_line():
    golden = (TESTS / "golden" / "mm_basic_cpp_zlib.py").read_text()
    line = "#   submitgen build mxfp4-mm --kernels mm_basic --co mm_basic.co --compress zlib --launcher cpp\n"
    assert line in golden
