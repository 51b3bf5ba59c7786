"""The README's command list matches the CLI: every command is listed, every option a line names
exists on that command (as `--help` shows it), and a line that spells an option's values
(`--launcher ctypes|cpp|aql`) spells exactly the CLI's choices. The set-up lines name extras that
pyproject.toml defines (and CI installs the test line's), every `submitgen` command of a code block
exists, the exit statuses are the ones it states, every path of the project it names exists, and
the problems table gives each default kernel project's language as its sources are written."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from submitgen.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"
ROOT = README.parent


def _rows() -> dict[str, str]:
    """command name -> its line, from README's "## Commands" list."""
    section = README.read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"- `submitgen (\w+)", line)
        if m:
            rows[m.group(1)] = line
    return rows


def _mentions(row: str) -> list[tuple[str, str | None]]:
    """(option, value) for every `-x VALUE` / `--opt VALUE` spelled in a row's code spans."""
    found = []
    for span in re.findall(r"`([^`]+)`", row):
        tokens = span.replace("\\|", "|").split()
        for i, tok in enumerate(tokens):
            if re.fullmatch(r"--?[a-zA-Z][\w-]*", tok):
                value = tokens[i + 1] if i + 1 < len(tokens) and not tokens[i + 1].startswith("-") else None
                found.append((tok, value))
    return found


def _help(command: str) -> str:
    r = CliRunner().invoke(cli, [command, "--help"], terminal_width=100)
    assert r.exit_code == 0, r.output
    return r.output


def test_every_command_has_a_row():
    assert sorted(_rows()) == sorted(cli.commands)


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_row_options_exist_with_their_choices(command):
    row = _rows()[command]
    help_text = _help(command)
    params = {opt: p for p in cli.commands[command].params for opt in p.opts}
    for option, value in _mentions(row):
        assert option in params, f"README names {option} for `{command}`, which has no such option"
        assert re.search(rf"(^|[\s,]){re.escape(option)}[\s,=]", help_text, re.M), (command, option)
        choice = params[option].type
        if value and isinstance(choice, click.Choice):
            spelled = value.split("|")
            if len(spelled) > 1:
                assert spelled == list(choice.choices), f"{option}: README {spelled}, CLI {choice.choices}"
            else:
                assert value in choice.choices, f"{option}: README {value!r}, CLI {choice.choices}"


def test_the_table_was_read():
    """Guard against a parser that finds nothing: the build line names its known options."""
    options = [o for o, _ in _mentions(_rows()["build"])]
    assert {"-o", "--kernels", "--co"} <= set(options)


def _blocks() -> list[str]:
    return re.findall(r"^```\n(.*?)^```", README.read_text(), re.M | re.S)


def _extras(text: str) -> list[set[str]]:
    """The extras of every `-e '.[a,b]'` install in a text, in order."""
    return [set(m.split(",")) for m in re.findall(r"-e '\.\[([\w,-]+)\]'", text)]


def test_the_setup_lines_name_extras_that_exist():
    setup = README.read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    build, test = _extras(setup)[:2]
    pyproject = (ROOT / "pyproject.toml").read_text()
    table = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    defined = set(re.findall(r"^([\w-]+) = \[", table, re.M))
    assert build | test <= defined, sorted((build | test) - defined)
    assert {"triton", "kernelguard"} <= build and {"test", "kernelguard"} <= test
    assert build < test, "the test line installs everything the build line does"
    assert _extras((ROOT / ".ci" / "run").read_text())[-1] == test, "CI installs the README's test extras"


def test_the_first_screen_holds_the_status_the_setup_and_the_quick_start():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150
    first = "\n".join(lines[:40])
    assert "No AMD GPU has ever run a file submitgen emits" in first
    assert len(_extras(first.split("## Quick start")[0])) >= 2  # the two set-up lines
    for command in ("submitgen build mxfp4-mm", "submitgen test submission.py",
                    "submitgen bench submission.py", "submitgen build ../reference-kernels/problems/"):
        assert f"\n{command}" in first, command


def test_every_command_of_a_code_block_exists():
    named = {m for block in _blocks() for m in re.findall(r"\bsubmitgen (\w+)", block)}
    assert {"build", "test", "bench"} <= named
    assert named <= set(cli.commands), sorted(named - set(cli.commands))


def test_the_exit_statuses_the_readme_states(tmp_path):
    text = " ".join(README.read_text().split())
    assert "A usage error (a missing argument, an unknown option or value) exits 2" in text
    assert "any other error prints one `Error:` line and exits 1" in text
    runner = CliRunner()
    for args in (["build", "--no-such-option"], ["bench"], ["build", "mxfp4-mm", "--target", "nope"]):
        assert runner.invoke(cli, args).exit_code == 2, args
    r = runner.invoke(cli, ["lint", str(tmp_path / "missing.py")])
    assert r.exit_code == 1 and r.output.count("Error:") == 1 and r.output.startswith("Error: "), r.output


_TOP = r"(?:\.ci|benchmarks|docs|examples|kernels|submitgen|templates|tests)"
_PATH = re.compile(rf"(?<![\w/.<-])({_TOP}/[\w./*-]*)")


def test_every_path_the_readme_names_exists():
    named = {m.group(1).rstrip(".") for m in _PATH.finditer(README.read_text())}
    assert {".ci/run", "kernels/mxfp4_mm/", "docs/cli.md"} <= named
    def exists(p: str) -> bool:
        return bool(list(ROOT.glob(p.rstrip("/")))) if "*" in p else (ROOT / p).exists()

    missing = sorted(p for p in named if not exists(p))
    assert missing == [], f"README names paths that do not exist: {missing}"


def _language(project: Path) -> str:
    """A kernel project's language, from its sources: Triton (``@triton.jit`` in a .py), HIP (.hip)."""
    found = set()
    if any("@triton.jit" in f.read_text() for f in project.glob("*.py") if f.name != "launch.py"):
        found.add("Triton")
    if any(project.glob("*.hip")):
        found.add("HIP")
    assert len(found) == 1, (project, found)
    return found.pop()


def test_the_problems_table_gives_each_default_projects_language():
    from submitgen.problems import PROBLEMS

    section = README.read_text().split("## The problems", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \(([\w-]+)\) \|.*\| `kernels/(\w+)/` \((\w+)\) \|$", section, re.M)
    assert sorted(r[0] for r in rows) == sorted(PROBLEMS)
    for name, leaderboard, folder, language in rows:
        problem = PROBLEMS[name]
        assert (problem.leaderboard, problem.kernel_project.name) == (leaderboard, folder)
        assert language == _language(ROOT / "kernels" / folder), name
