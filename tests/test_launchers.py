"""Launchers are one seam: a LauncherSpec registered is all a new launcher takes (CLI-free build,
provenance, rebuild line, summary, render), prepare resolves the options once and the later stages
read the resolved values, and no module outside launchers/ and prepare tests a launcher's name."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from submitgen import launchers
from submitgen.backends.amd import HIP
from submitgen.backends.cuda import CUDA
from submitgen.errors import LauncherError, OptionError
from submitgen.launchers import ImportCost, LauncherSpec, get_launcher, register
from submitgen.launchers.builtin import AQL, CPP, CTYPES, HSA
from submitgen.options import Compress, Target
from submitgen.pipeline import (
    BuildOptions,
    Prepared,
    build,
    check,
    prepare,
    produce_objects,
    render_submission,
)
from submitgen.pipeline.summary import format_summary
from submitgen.render import provenance

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "submitgen"
PROJECT = TESTS / "projects" / "mm_basic"
CO = TESTS / "golden" / "mm_basic.co"

FAKE = LauncherSpec(
    name="fakeload",
    summary="a launcher only this test knows",
    runtimes={Target.AMD: HIP},
    import_cost=ImportCost("pretends to load {objects}", "~1 ms", "a test machine", "2026-12-02"),
    template="launcher/ctypes.py.j2",  # its own template would sit beside it; ctypes' serves the test
    submittable=False,
    needs="runs on a pretend GPU",
)


def test_a_new_launcher_spec_is_all_it_takes(tmp_path, request):
    register(FAKE)
    request.addfinalizer(lambda: launchers.REGISTRY.unregister(FAKE.name))
    out = tmp_path / "s.py"
    r = build(BuildOptions(problem="mxfp4-mm", output=out, kernels=PROJECT, code_objects=(CO,),
                           launcher="fakeload"))
    prov = provenance.read(r.text)
    assert prov is not None and prov.value("launcher") == "fakeload"
    lines = r.text.splitlines()
    assert lines[lines.index("# Rebuild it with:") + 1] == (
        "#   submitgen build mxfp4-mm --kernels mm_basic --co mm_basic.co --launcher fakeload")
    assert r.warnings[0] == ("import cost of this file's launcher: fakeload: pretends to load the code "
                             "object (~1 ms on a test machine, 2026-12-02)")
    assert r.warnings[1].startswith("for comparison, --launcher ctypes: decodes and loads the code object")
    assert r.submit == "" and "submit it with" not in format_summary(r)  # not submittable
    with pytest.raises(OptionError) as e:
        prepare(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, target="cuda", launcher="fakeload"))
    assert str(e.value) == "--launcher fakeload runs on a pretend GPU; it is for --target amd only"


def test_no_stage_after_prepare_sees_the_build_options(tmp_path):
    """prepare resolves every option once into a typed field of Prepared (the launcher spec, the
    compressor, paths and flags, the rebuild line's flags); Prepared holds no BuildOptions, and no
    stage module but prepare (values defines BuildOptions, the package's build hands it to
    prepare) names it."""
    fields = {f.name: str(f.type) for f in dataclasses.fields(Prepared)}
    assert "options" not in fields and not any("BuildOptions" in t for t in fields.values())
    allowed = ("prepare.py", "values.py", "__init__.py")
    stages = [path for path in (PACKAGE / "pipeline").rglob("*.py")
              if path.relative_to(PACKAGE / "pipeline").as_posix() not in allowed]
    assert stages and [path.name for path in stages if "BuildOptions" in path.read_text()] == []
    opts = BuildOptions(problem="mxfp4-mm", output=tmp_path / "s.py", kernels=PROJECT, code_objects=(CO,),
                        launcher="cpp", compress="zlib")
    p = prepare(opts)
    assert (p.launcher, p.compress, p.runtime, p.code_objects) == (CPP, Compress.ZLIB, HIP, (CO,))
    assert " ".join(p.rebuild) == "--kernels mm_basic --co mm_basic.co --compress zlib --launcher cpp"
    objects = produce_objects(p)
    text = render_submission(p, objects, check(p, objects)).text
    prov = provenance.read(text)
    assert (prov.value("launcher"), prov.value("compress")) == ("cpp", "zlib")
    assert "#   submitgen build mxfp4-mm " + " ".join(p.rebuild) + "\n" in text


def test_the_builtin_launchers():
    assert tuple(launchers.REGISTRY) == ("ctypes", "cpp", "aql") and launchers.DEFAULT == "ctypes"
    assert (get_launcher("ctypes"), get_launcher("cpp"), get_launcher("aql")) == (CTYPES, CPP, AQL)
    assert CTYPES.targets == (Target.AMD, Target.CUDA) and CPP.targets == AQL.targets == (Target.AMD,)
    assert (CTYPES.runtime(Target.CUDA), AQL.runtime(Target.AMD)) == (CUDA, HSA)
    assert [s.name for s in launchers.comparable(CTYPES, Target.AMD)] == ["cpp"]
    assert launchers.comparable(CTYPES, Target.CUDA) == () and AQL.own_queue is not None
    for spec in (CTYPES, CPP):  # every figure says where and when it was measured
        assert "here" not in spec.import_cost.text("x") and "2026-11-29" in spec.import_cost.text("x")


def test_a_spec_that_says_too_little_is_refused():
    with pytest.raises(LauncherError) as e:
        ImportCost("loads", "~1 ms")
    assert str(e.value) == ("import cost '~1 ms': expected the machine and the date it was measured on, "
                            "got machine='' date=''")
    with pytest.raises(LauncherError) as e:
        dataclasses.replace(FAKE, runtimes={})
    assert str(e.value) == "launcher 'fakeload': expected at least one target that runs it, got none"
    with pytest.raises(LauncherError) as e:
        register(dataclasses.replace(CTYPES, summary="another"))
    assert str(e.value) == ("launcher 'ctypes' clashes with the registered launcher 'ctypes', built in "
                            "(submitgen.launchers.builtin)")
    with pytest.raises(OptionError) as e:
        get_launcher("hip")
    assert str(e.value) == "--launcher must be one of ctypes, cpp, aql, got 'hip'"


def _launcher_tests(tree: ast.AST) -> list[int]:
    """Lines comparing something with a launcher's name or with a ``.launcher`` value."""
    names = set(launchers.REGISTRY)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if (isinstance(side, ast.Constant) and side.value in names) or (
                        isinstance(side, ast.Attribute) and side.attr == "launcher"):
                    lines.append(node.lineno)
                    break
    return lines


def test_nothing_outside_the_launchers_and_prepare_tests_a_launcher_name():
    """A complement of the behavioural tests above: no module branches on which launcher is active."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "launchers" or rel == Path("pipeline/prepare.py"):
            continue
        found += [f"{rel}:{line}" for line in _launcher_tests(ast.parse(path.read_text()))]
    assert found == []


def test_the_launcher_test_finds_a_comparison():
    src = 'if opts.launcher == Launcher.AQL:\n    pass\nx = ctx.launcher == "cpp"\ny = "aql" != name\n'
    assert _launcher_tests(ast.parse(src)) == [1, 3, 4]
