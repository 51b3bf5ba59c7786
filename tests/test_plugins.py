"""Problems as plug-ins (the ``submitgen.problems`` entry point group, docs/plugins.md).

examples/plugin_toy_mul is pip-installed (``pip install --target``, no index, no build isolation)
into a scratch folder put on ``sys.path``; it then appears in ``submitgen problems`` and the CLI's
choices, and builds, lints, tests and benches through the CLI with no change to submitgen. Broken
plug-ins are test distributions written here (a ``.dist-info`` with ``entry_points.txt``): each gives
one ``Error:`` line naming it and its package when its problem is named, one ``Warning:`` line on
stderr after any other command that read the registry, and every other problem keeps working."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import kernelguard_line

from submitgen.cli import cli
from submitgen.problems import registry

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "plugin_toy_mul"
GOLDEN = REPO / "tests" / "golden" / "mm_basic_ctypes.py"
BUILT_IN = (
    "mxfp4-mm   amd-mxfp4-mm            MI355X   built in (submitgen.problems.mxfp4_mm)\n"
    "mixed-mla  amd-mixed-mla           MI355X   built in (submitgen.problems.mixed_mla)\n"
    "moe-mxfp4  amd-moe-mxfp4           MI355X   built in (submitgen.problems.moe_mxfp4)\n"
)


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _forget(prefixes: tuple[str, ...]) -> None:
    for name in [m for m in sys.modules if m.startswith(prefixes)]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The example plug-in, installed by pip into a folder of its own (once: pip takes seconds)."""
    target = tmp_path_factory.mktemp("plugin-site")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(EXAMPLE)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (target / "submitgen_toy_mul-0.1.0.dist-info" / "entry_points.txt").read_text() == (
        "[submitgen.problems]\ntoy-mul = submitgen_toy_mul.problem\n")
    return target


@contextlib.contextmanager
def _on_path(target: Path):
    """``target`` on sys.path, the registry reading its plug-ins again, for the block only: the
    tests after it (the broken plug-ins') see exactly the plug-ins they install."""
    sys.path.insert(0, str(target))
    registry.REGISTRY.reload_plugins()
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        _forget(("submitgen_toy_mul",))
        registry.REGISTRY.reload_plugins()


@pytest.fixture
def installed(site):
    """The installed example plug-in on sys.path for one test."""
    with _on_path(site):
        yield site


@pytest.fixture(scope="module")
def built(site, tmp_path_factory):
    out = tmp_path_factory.mktemp("toy-mul") / "toy_mul.py"
    with _on_path(site):
        r = run("build", "toy-mul", "-o", str(out))
    assert r.exit_code == 0, r.output
    return out, r.output


@pytest.mark.slow
def test_the_installed_plugin_is_listed_with_its_package(installed):
    r = run("problems")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "problem    leaderboard             gpu      from"
    assert "\n".join(lines[1:5]) + "\n" == BUILT_IN + (
        "toy-mul    example-toy-mul         MI355X   plug-in submitgen-toy-mul 0.1.0 "
        "(toy-mul = submitgen_toy_mul.problem)\n")
    assert lines[5] == "-          amd-identity            MI300    lint only (no problem module)"
    assert "{mxfp4-mm|mixed-mla|moe-mxfp4|toy-mul}" in run("build", "--help").output
    assert registry.REGISTRY.origin("toy-mul").distribution == "submitgen-toy-mul 0.1.0"


@pytest.mark.slow
def test_the_plugin_builds_lints_tests_and_benches(installed, built):
    out, summary = built
    assert f"wrote {out} for example-toy-mul" in summary
    text = out.read_text()
    assert text.splitlines()[:2] == ["#!POPCORN leaderboard example-toy-mul", "#!POPCORN gpu MI355X"]
    assert "kernels=toy_mul" in text and "return torch.mul(a, b)" in text
    r = run("lint", str(out))
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"{kernelguard_line(out)}\n{out}: lint passed; estimated payload ")
    assert "for example-toy-mul (problem files ≈2,000" in r.output
    r = run("test", str(out), "--shapes", "all")
    assert r.exit_code == 0, r.output
    assert ("kernel not run: fallback only (the pure-torch fallback passed all 3 shapes)" in r.output
            and "n=1000  pass" in r.output)
    r = run("bench", str(out), "--iters", "2", "--problem", "toy-mul", "--force")  # time the fallback
    assert r.exit_code == 0, r.output
    assert "n=4096  2     " in r.output and "geometric mean of the means" in r.output


@pytest.mark.slow
def test_a_fresh_process_finds_the_plugin_on_its_path(installed):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(installed), str(REPO))))
    r = subprocess.run([sys.executable, "-m", "submitgen", "problems"], capture_output=True, text=True,
                       env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stderr) == (0, "")
    assert "toy-mul    example-toy-mul         MI355X   plug-in submitgen-toy-mul 0.1.0" in r.stdout


@pytest.mark.slow
def test_docs_example_lints_in_a_fresh_process_that_loads_the_plugin(installed, built):
    """docs/plugins.md: `submitgen lint toy.py` in a fresh process, where the header's leaderboard is
    only known once the plug-ins are loaded: passes, with no unknown-leaderboard warning."""
    out, _ = built
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(installed), str(REPO))))
    r = subprocess.run([sys.executable, "-m", "submitgen", "lint", str(out)], capture_output=True, text=True,
                       env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout.startswith(f"{kernelguard_line(out)}\n{out}: lint passed; estimated payload ")
    assert "for example-toy-mul (problem files ≈2,000 + submission" in r.stdout


# --------------------------------------------------------------------------- broken plug-ins

def _distribution(root: Path, dist: str, entries: dict[str, str], modules: dict[str, str]) -> Path:
    """A test distribution: ``dist``'s .dist-info declaring ``entries`` in the group, and ``modules``."""
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[submitgen.problems]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)
    return root


BROKEN = {
    "import": (
        {"sg-noimport": "sg_noimport"},
        {"sg_noimport": "import nope_not_installed\n"},
        "problem plug-in 'sg-noimport' (sg_noimport) of the package sg-broken-import 0.1 cannot be "
        "imported: ModuleNotFoundError: No module named 'nope_not_installed'",
    ),
    "spec": (
        {"sg-notaspec": "sg_notaspec"},
        {"sg_notaspec": "PROBLEM = 42\n"},
        "problem plug-in 'sg-notaspec' (sg_notaspec) of the package sg-broken-spec 0.1 has a bad spec: "
        "sg_notaspec.PROBLEM is int, expected a ProblemSpec",
    ),
    "name": (
        {"sg-misnamed": "sg_misnamed"},
        {"sg_misnamed": "from dataclasses import replace\nfrom toy_problem import PROBLEM as _P\n\n"
                        "PROBLEM = replace(_P, name='other', leaderboard='amd-other', module=__name__)\n"},
        "problem plug-in 'sg-misnamed' (sg_misnamed) of the package sg-broken-name 0.1 has a bad spec: "
        "its entry point is named 'sg-misnamed', but the spec's name is 'other' (they must be equal)",
    ),
    "clash": (
        {"mxfp4-mm": "sg_clash"},
        {"sg_clash": "from dataclasses import replace\nfrom toy_problem import PROBLEM as _P\n\n"
                     "PROBLEM = replace(_P, name='mxfp4-mm', module=__name__)\n"},
        "problem plug-in 'mxfp4-mm' (sg_clash) of the package sg-broken-clash 0.1 clashes with the "
        "problem 'mxfp4-mm' (amd-mxfp4-mm), built in (submitgen.problems.mxfp4_mm): its problem is "
        "'mxfp4-mm' (amd-toy-add); a plug-in needs a name and a leaderboard of its own",
    ),
    # issue 47: a raw escape in the import error, a BaseException at import (a traceback from
    # `build --help` and `problems`), a leaderboard holding line breaks (fake rows in `problems`)
    "escape": (
        {"sg-escape": "sg_escape"},
        {"sg_escape": "raise RuntimeError('\\x1b]0;pwned\\x07\\x1b[2J')\n"},
        "problem plug-in 'sg-escape' (sg_escape) of the package sg-broken-escape 0.1 cannot be imported: "
        "RuntimeError: \\x1b]0;pwned\\x07\\x1b[2J",
    ),
    "base": (
        {"sg-base": "sg_base"},
        {"sg_base": "class Boom(BaseException):\n    pass\n\n\nraise Boom('not an Exception')\n"},
        "problem plug-in 'sg-base' (sg_base) of the package sg-broken-base 0.1 cannot be imported: "
        "Boom: not an Exception",
    ),
    "rows": (
        {"sg-rows": "sg_rows"},
        {"sg_rows": "from dataclasses import replace\nfrom toy_problem import PROBLEM as _P\n\n"
                    "PROBLEM = replace(_P, name='sg-rows', leaderboard='amd-x\\nimport os; os.system(1)',"
                    " module=__name__)\n"},
        "problem plug-in 'sg-rows' (sg_rows) of the package sg-broken-rows 0.1 has a bad spec: leaderboard "
        "'amd-x\\nimport os; os.system(1)' must be 1 to 64 letters, digits, '.', '_' or '-' (starting with a "
        "letter or digit)",
    ),
}


@pytest.fixture(params=sorted(BROKEN))
def broken(request, tmp_path):
    entries, modules, message = BROKEN[request.param]
    root = _distribution(tmp_path / "site", f"sg-broken-{request.param}", entries, modules)
    sys.path.insert(0, str(root))
    registry.REGISTRY.reload_plugins()
    yield next(iter(entries)), message
    sys.path.remove(str(root))
    _forget(tuple(modules))
    registry.REGISTRY.reload_plugins()


def test_a_broken_plugin_is_one_error_line_when_its_problem_is_named(broken, tmp_path):
    name, message = broken
    if name == "mxfp4-mm":  # the built-in keeps its name: the clash is a warning (the next test)
        assert registry.get_problem(name).module == "submitgen.problems.mxfp4_mm"
        return
    r = CliRunner().invoke(cli, ["build", name, "-o", str(tmp_path / "x.py")])
    assert (r.exit_code, r.output) == (1, f"Error: {message}\n")
    assert not (tmp_path / "x.py").exists()


def test_a_broken_plugin_is_one_warning_and_the_other_problems_work(broken):
    _, message = broken
    r = CliRunner().invoke(cli, ["lint", str(GOLDEN)])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"{kernelguard_line(GOLDEN)}\n{GOLDEN}: lint passed; ")
    assert r.stderr == f"Warning: {message}; not loaded (submitgen problems lists the problems)\n"
    assert tuple(p.name for p in registry.problems())[:3] == ("mxfp4-mm", "mixed-mla", "moe-mxfp4")


def test_problems_lists_a_broken_plugin_and_exits_1(broken):
    _, message = broken
    r = CliRunner().invoke(cli, ["problems"])
    assert r.exit_code == 1
    assert r.stderr == ""
    assert r.stdout.endswith(f"\n\nnot loaded (1):\n  {message}\n")
    assert BUILT_IN in r.stdout


def test_commands_that_never_read_the_registry_say_nothing(broken):
    r = CliRunner().invoke(cli, ["toolchain", "--help"])
    assert r.exit_code == 0 and r.stderr == ""
    name, _ = broken
    r = CliRunner().invoke(cli, ["build", "--help"])  # the usage line names the plug-in, unimported
    assert (r.exit_code, r.stderr) == (0, "")
    listed = "" if name == "mxfp4-mm" else f"|{name}"
    usage = f"Usage: cli build [OPTIONS] [{{mxfp4-mm|mixed-mla|moe-mxfp4{listed}}}]"
    assert r.stdout.splitlines()[0] == usage
    assert not registry.REGISTRY.loaded


def test_a_plugin_that_hangs_at_import_is_given_up_after_its_limit(tmp_path, monkeypatch):
    """Issue 47: a plug-in sleeping at import held `build --help` and every command that lists the
    problems. `build --help` does not import it; reading the registry gives it up after the limit."""
    from submitgen import registry as registries

    root = _distribution(tmp_path / "site", "sg-sleepy", {"sg-sleepy": "sg_sleepy"},
                         {"sg_sleepy": "import time\n\ntime.sleep(30)\n"})
    monkeypatch.syspath_prepend(str(root))
    assert registries.PLUGIN_IMPORT_S == 30.0  # docs/plugins.md, docs/limits.md
    monkeypatch.setattr(registries, "PLUGIN_IMPORT_S", 0.5)
    registry.REGISTRY.reload_plugins()
    try:
        r = CliRunner().invoke(cli, ["build", "--help"])
        assert r.exit_code == 0 and "|sg-sleepy}]" in r.stdout.splitlines()[0]
        assert "sg_sleepy" not in sys.modules
        r = CliRunner().invoke(cli, ["problems"])
        assert r.exit_code == 1
        assert r.stdout.endswith("\n\nnot loaded (1):\n  problem plug-in 'sg-sleepy' (sg_sleepy) of the "
                                 "package sg-sleepy 0.1 cannot be imported: its import ran past the 0.5 s "
                                 "limit\n")
    finally:
        _forget(("sg_sleepy",))
        registry.REGISTRY.reload_plugins()
