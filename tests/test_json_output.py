"""build, lint, test and bench --json print the documented envelope (docs/json.md), checked against
docs/json.schema.json: results, failures and domain errors alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from schema_check import check

from submitgen import __version__
from submitgen.cli import cli

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
SCHEMA = json.loads((REPO / "docs" / "json.schema.json").read_text())
PREBUILT = ["--kernels", str(TESTS / "projects" / "mm_basic"), "--co", str(TESTS / "golden" / "mm_basic.co")]


def valid(doc: dict) -> list[str]:
    try:
        import jsonschema
    except ImportError:
        return check(doc, SCHEMA)
    return [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc)]


def run_json(*args: str) -> tuple[int, dict]:
    """Exit code and stdout's document (progress and warnings, if any, go to stderr)."""
    r = CliRunner().invoke(cli, [*args, "--json"])
    doc = json.loads(r.stdout)
    assert valid(doc) == [], doc
    return r.exit_code, doc


def test_the_checker_catches_what_the_schema_forbids():
    good = {"command": "lint", "version": "1", "format_version": 1, "ok": False, "error": "x"}
    assert check(good, SCHEMA) == []
    assert check({**good, "extra": 1}, SCHEMA) != []
    assert check({**good, "format_version": True}, SCHEMA) != []
    assert check({k: v for k, v in good.items() if k != "ok"}, SCHEMA) != []


@pytest.mark.slow
def test_build_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, doc = run_json("build", "mxfp4-mm", *PREBUILT, "-o", "s.py")
    assert code == 0
    assert (doc["command"], doc["version"], doc["ok"], doc["error"]) == ("build", __version__, True, None)
    assert [(k["name"], k["symbol"]) for k in doc["kernels"]] == [("mm_tile", "mm_tile"),
                                                                   ("mm_reduce", "mm_reduce")]
    assert doc["submit"] == ("popcorn-cli submit --gpu MI355X --leaderboard amd-mxfp4-mm --mode leaderboard "
                             "s.py")
    assert doc["size"] == (tmp_path / "s.py").stat().st_size and doc["payload"]["fits"] is True
    assert "blob round trip" in doc["checks"]


def test_build_json_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, doc = run_json("build", "mxfp4-mm", *PREBUILT, "-o", "s.py", "--gpu", "H100")
    assert code == 1
    assert doc == {"command": "build", "version": __version__, "format_version": 1, "ok": False,
                   "error": "--gpu H100: amd-mxfp4-mm runs on MI355X; pass --gpu MI355X or leave it out"}


@pytest.mark.parametrize("name", ["mla_torch.py", "mm_zeros.py"])
def test_lint_json_passing(name):
    code, doc = run_json("lint", str(TESTS / "submissions" / name))
    assert code == 0 and doc["ok"] is True and doc["errors"] == []


def test_lint_json_failing_and_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n# a Stream\n"
                   "def custom_kernel(data):\n    return data[0]\n")
    code, doc = run_json("lint", str(bad))
    assert code == 1 and doc["ok"] is False and doc["error"] is None
    assert [(f["rule"], f["line"]) for f in doc["errors"]] == [("banned-word", 3)]
    assert doc["leaderboard"] == "amd-mxfp4-mm"
    code, doc = run_json("lint", str(tmp_path / "nope.py"))
    assert code == 1
    assert doc["error"] == f"cannot read submission '{tmp_path / 'nope.py'}': No such file or directory"


TOY = "#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\nimport torch\n\n"
ONE = ("--shape", "n=64,seed=1")
TWO = ("--shape", "n=64,seed=1", "--shape", "n=96,seed=2")


@pytest.fixture
def toy(monkeypatch):
    import toy_problem

    from submitgen.problems import register, unregister

    for name in ("SUBMITGEN_HIP_LIBRARY", "SUBMITGEN_CUDA_LIBRARY", "SUBMITGEN_HSA_LIBRARY"):
        monkeypatch.delenv(name, raising=False)
    register(toy_problem.PROBLEM)
    yield
    unregister("toy-add")


def _sub(tmp_path: Path, body: str) -> str:
    path = tmp_path / "sub.py"
    path.write_text(TOY + body)
    return str(path)


def _same_exit_as_text(code: int, *args: str) -> None:
    assert CliRunner().invoke(cli, list(args)).exit_code == code


@pytest.mark.slow
def test_test_json_failing_shape_and_exit_code(toy, tmp_path):
    sub = _sub(tmp_path, "def custom_kernel(data):\n    return data[0] - data[1] if data[0].shape[0] == 96 "
                         "else data[0] + data[1]\n")
    r = CliRunner().invoke(cli, ["test", sub, *TWO, "--json"])
    doc = json.loads(r.stdout)
    assert valid(doc) == [], doc
    assert r.exit_code == 1 and not r.stdout.lstrip().startswith("submitgen")
    assert r.stderr.startswith("submitgen test: 2 shape(s) of amd-toy-add")  # progress on stderr only
    assert (doc["command"], doc["ok"], doc["error"], doc["exit_code"]) == ("test", False, None, 1)
    assert doc["mode"] == "test"
    assert doc["verdict"] == "FAILED: 1 of 2 shapes failed"
    assert doc["backend"]["kernel"] == "no-gpu" and doc["backend"]["gpu"] is False
    first, second = doc["shapes"]
    assert (first["label"], first["result"], first["passed"], first["spec"]) == ("n=64", "pass", True,
                                                                                {"n": 64, "seed": 1})
    assert first["figures"]["mismatches"] == 0 and first["figures"]["total"] == 64
    assert (second["label"], second["result"], second["passed"]) == ("n=96", "FAIL", False)
    assert second["error"] is None
    import toy_problem

    data = toy_problem.generate_input({"n": 96, "seed": 2})
    assert second["message"] == toy_problem.PROBLEM.check(data[0] - data[1], data).message
    assert second["message"].startswith("FAIL (rtol=1e-05 atol=1e-05, every element): ")
    # text mode's exit 1 for a failing shape: test_cli_lint_test_bench.py's zeros test


@pytest.mark.slow
def test_test_json_fallback_only_and_require_kernel(toy, tmp_path):
    sub = _sub(tmp_path, "SUBMITGEN_BACKEND = 'fallback'\n\n\ndef custom_kernel(data):\n"
                         "    return data[0] + data[1]\n")
    code, doc = run_json("test", sub, *ONE)
    assert code == 0 and doc["ok"] is True
    assert doc["backend"]["kernel"] == "fallback" and doc["backend"]["value"] == "fallback"
    assert doc["verdict"] == "kernel not run: fallback only (the pure-torch fallback passed all 1 shapes)"
    assert doc["require_kernel"] is None
    code, doc = run_json("test", sub, *ONE, "--require-kernel")
    assert code == 1 and doc["ok"] is False and doc["exit_code"] == 1
    assert doc["require_kernel"] == ("--require-kernel: the kernel did not run (only the pure-torch "
                                     "fallback ran)")
    # text mode's exit 1 under --require-kernel: test_evaluate_verdicts.py, on a fallback-only file


@pytest.mark.slow
def test_bench_json_timings_and_score(toy, tmp_path):
    sub = _sub(tmp_path, "def custom_kernel(data):\n    return data[0] + data[1]\n")
    code, doc = run_json("bench", sub, *TWO, "--iters", "3")
    assert code == 0 and doc["ok"] is True and doc["exit_code"] == 0
    assert (doc["mode"], doc["timing"], doc["verdict"]) == ("benchmark", "host", "all 2 shapes passed")
    means = []
    for shape in doc["shapes"]:
        t = shape["timing"]
        assert shape["result"] == "ok" and t["runs"] == 3
        assert 0 < t["best_us"] <= t["mean_us"] <= t["worst_us"]
        assert t["err_us"] == pytest.approx(t["std_us"] / 3 ** 0.5)
        means.append(t["mean_us"])
    assert doc["score_us"] == pytest.approx((means[0] * means[1]) ** 0.5)


@pytest.mark.slow
def test_bench_json_fallback_not_timed_and_wrong_output(toy, tmp_path):
    sub = _sub(tmp_path, "SUBMITGEN_BACKEND = 'fallback'\n\n\ndef custom_kernel(data):\n"
                         "    return data[0] * 0\n")
    code, doc = run_json("bench", sub, *ONE, "--iters", "3")
    assert code == 1 and doc["ok"] is False
    shape = doc["shapes"][0]
    assert (shape["result"], shape["timing"], shape["skipped"]) == ("WRONG", None, "fallback-on-cpu")
    assert doc["score_us"] is None and doc["backend"]["kernel"] == "fallback"
    assert doc["verdict"] == "FAILED: 1 of 1 shapes failed (kernel not run: fallback only)"
    _same_exit_as_text(1, "bench", sub, *ONE, "--iters", "3")


def test_test_and_bench_json_errors(toy, tmp_path):
    bad = _sub(tmp_path, "# a Stream\ndef custom_kernel(data):\n    return data[0]\n")
    r = CliRunner().invoke(cli, ["test", bad, *ONE, "--json"])
    assert r.exit_code == 1 and valid(json.loads(r.stdout)) == []
    assert json.loads(r.stdout)["error"] == (
        f"{bad}: 1 lint failure(s): not run, because it fails lint (the leaderboard would refuse it); "
        "pass --no-lint to run it anyway for a local experiment")
    assert f"{bad}:5: banned-word [kernelbot]:" in r.stderr
    code, doc = run_json("bench", bad, "--mode", "test")
    assert code == 1 and doc["error"] == ("bench --mode test needs --reference-kernels DIR; the built-in "
                                          "harness checks with `submitgen test`")
    code, doc = run_json("test", bad, "--reference-kernels", str(tmp_path))
    assert code == 1 and doc["error"] == ("--json does not apply with --reference-kernels: eval.py's own "
                                          "report is printed as it gives it")
    code, doc = run_json("test", str(tmp_path / "nope.py"))
    assert code == 1 and doc["command"] == "test"
    assert doc["error"] == f"cannot read submission '{tmp_path / 'nope.py'}': No such file or directory"
