"""build --json and lint --json print the documented envelope (docs/json.md), checked against
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
