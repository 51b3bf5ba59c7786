"""The build's seams: options as enums (one check each), backends behind one protocol (no module
outside submitgen/backends asks which target is active), the stages' frozen values, one parse
per embedded code object, and --traceback."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from submitgen import pipeline as build_pkg
from submitgen.backends import BACKENDS, Backend, get_backend
from submitgen.backends.amd import AmdBackend
from submitgen.backends.cuda import CudaBackend
from submitgen.cli import cli
from submitgen.errors import OptionError
from submitgen.launchers import REGISTRY, get_launcher
from submitgen.launchers.builtin import CPP, CTYPES
from submitgen.options import Compress, Target, choices
from submitgen.pipeline import BuildOptions, build, check, prepare, produce_objects

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "submitgen"
PROJECT = TESTS / "projects" / "mm_basic"


def test_cli_choices_come_from_the_enums_and_the_launchers():
    params = {p.name: p for p in cli.commands["build"].params}
    for name, enum in (("target", Target), ("compress", Compress)):
        assert isinstance(params[name].type, click.Choice)
        assert tuple(params[name].type.choices) == choices(enum) == tuple(m.value for m in enum)
    assert tuple(params["launcher"].type.choices) == tuple(REGISTRY) == ("ctypes", "cpp", "aql")
    assert choices(Target) == ("amd", "cuda") and Target.HIP is Target.AMD


@pytest.mark.parametrize(("field", "value", "message"), [
    ("target", "rocm", "--target must be one of amd, cuda, got 'rocm'"),
    ("launcher", "hip", "--launcher must be one of ctypes, cpp, aql, got 'hip'"),
    ("compress", "bz2", "--compress must be one of lzma, zlib, got 'bz2'"),
])
def test_library_values_are_checked_once(field, value, message):
    with pytest.raises(OptionError) as e:
        prepare(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, **{field: value}))
    assert str(e.value) == message
    assert get_launcher("cpp") is CPP


@pytest.mark.parametrize(("launcher", "what"), [
    ("cpp", "builds a HIP host extension"), ("aql", "dispatches through the HSA runtime")])
def test_launchers_a_target_cannot_run_are_refused(launcher, what):
    with pytest.raises(OptionError) as e:
        prepare(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, target="cuda", launcher=launcher))
    assert str(e.value) == f"--launcher {launcher} {what}; it is for --target amd only"


def test_backends_satisfy_the_protocol():
    assert isinstance(get_backend("amd"), AmdBackend) and isinstance(get_backend(Target.CUDA), CudaBackend)
    members = [n for n in vars(Backend) if not n.startswith("_")] + list(Backend.__annotations__)
    for backend in BACKENDS.values():
        for name in members:
            assert hasattr(backend, name), (type(backend).__name__, name)
    assert {b.default_arch for b in BACKENDS.values()} == {"gfx950", "sm_90"}


def _target_tests(tree: ast.AST) -> list[int]:
    """Lines comparing something with a target's value ("amd", "cuda", Target.X)."""
    values = {m.value for m in Target}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                literal = isinstance(side, ast.Constant) and side.value in values
                member = (isinstance(side, ast.Attribute) and isinstance(side.value, ast.Name)
                          and side.value.id == "Target")
                if literal or member:
                    lines.append(node.lineno)
    return lines


# Modules whose "cuda" is not the build's target: evaluate.py reads which runtime a submission
# says it ran on.
_OTHER_MEANING = {"evaluate.py"}


def test_nothing_outside_the_backends_asks_which_target_is_active():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if "backends" in rel.parts or rel.name == "options.py" or str(rel) in _OTHER_MEANING:
            continue
        found += [f"{rel}:{line}" for line in _target_tests(ast.parse(path.read_text()))]
    assert found == []


def test_the_target_test_finds_a_comparison():
    assert _target_tests(ast.parse('if opts.target == "cuda":\n    pass\nx = t is Target.AMD\n')) == [1, 3]


@pytest.mark.slow
def test_stages_pass_frozen_values(tmp_path):
    p = prepare(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, output=tmp_path / "s.py"))
    objects = produce_objects(p)
    checked = check(p, objects)
    for value in (p, *objects, checked, checked.plan, *checked.layouts):
        assert dataclasses.is_dataclass(value) and type(value).__dataclass_params__.frozen, type(value)
    assert isinstance(objects, tuple) and len(objects) == 1
    assert [b.name for b in objects[0].kernels] == ["mm_tile", "mm_reduce"]
    assert p.launcher is CTYPES and p.backend is BACKENDS[Target.AMD]


def _count_parses(monkeypatch) -> list:
    """The labels of every read_code_object call from now on: the reader's function is replaced in
    its module and in every loaded submitgen module that bound it by name (the package's names load
    on first use; callers import it from the reader or the package)."""
    import sys

    from submitgen.readers.amd import reader

    calls: list = []
    real = reader.read_code_object

    def counted(*args, **kwargs):
        calls.append(kwargs.get("label"))
        return real(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("submitgen") and getattr(module, "read_code_object", None) is real:
            monkeypatch.setattr(module, "read_code_object", counted)
    return calls


@pytest.mark.slow
def test_each_code_object_is_parsed_once(tmp_path, monkeypatch):
    """A build reads each object it embeds once (the compile cache already holds this project's)."""
    build(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, output=tmp_path / "warm.py"))
    calls = _count_parses(monkeypatch)
    result = build(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, output=tmp_path / "s.py"))
    assert len(result.blobs) == 1
    assert calls == ["mm_basic (gfx950)"]


def test_traceback_flag_shows_the_stack_behind_the_error_line(tmp_path):
    args = ["build", "mxfp4-mm", "--kernels", str(PROJECT), "--target", "cuda", "--launcher", "cpp",
            "-o", str(tmp_path / "x.py")]
    plain = CliRunner().invoke(cli, args)
    assert plain.exit_code == 1
    assert plain.output == "Error: --launcher cpp builds a HIP host extension; it is for --target amd only\n"
    traced = CliRunner().invoke(cli, ["--traceback", *args])
    assert traced.exit_code == 1
    assert traced.output.startswith("Traceback (most recent call last):\n")
    assert "submitgen/pipeline/prepare.py" in traced.output
    assert traced.output.endswith(f"OptionError: {plain.output[len('Error: '):]}{plain.output}")


def test_build_package_keeps_its_public_names():
    """The package names its stages and values (its docstring); the summary's helpers live in
    pipeline.summary (the package re-exports them no more)."""
    from submitgen.pipeline import summary

    for name in ("BuildOptions", "BuildResult", "build", "prepare", "produce_objects", "check",
                 "render_submission", "verify", "write"):
        assert hasattr(build_pkg, name), name
    for name in ("format_summary", "aql_zeroed_warnings"):
        assert callable(getattr(summary, name, None)), name


@pytest.mark.slow
def test_a_cold_build_parses_its_compiled_object_once(tmp_path, monkeypatch):
    """With an empty compile cache the toolchain's read-back model is reused: still one parse."""
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cold-cache"))
    calls = _count_parses(monkeypatch)
    build(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, output=tmp_path / "s.py"))
    assert len(calls) == 1
