"""The provenance's ``lds`` field: the build writes the dynamic LDS of every kernel it knows (the
plan's largest over the shapes; Triton's ``shared`` for a specialization the plan never launches),
keyed by object index and kernel name, since Triton specializations of one kernel share its name.
``inspect`` on the file reports occupancy with it and flags a total over gfx950's 160 KiB (an
item of another form is skipped). A plan giving a specialization 196,608 B is refused by the build."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from mixed_project import mixed_project
from ruffclean import order_problems, ruff_problems

from submitgen.cli import cli
from submitgen.inspection.report import exit_status, inspect_sources
from submitgen.pipeline import BuildOptions, build
from submitgen.readers.amd import processors
from submitgen.render import provenance
from submitgen.render.provenance import format_line, lds_item, parse_lds

pytest.importorskip("triton", reason="the default projects are Triton")

TESTS = Path(__file__).resolve().parent
ODD = "k/1:x, y\u00e9"  # a name holding the separators, a comma, a space and non-ASCII


def test_items_round_trip_through_the_line_and_scope_to_their_object():
    line = format_line({"lds": (lds_item(0, ODD, 18912), lds_item(12, "k", 7), "old:5", "bad:x", "3/:1")})
    items = provenance.read(line).items("lds")
    assert parse_lds(items, 0) == {ODD: 18912}
    assert parse_lds(items, 12) == {"k": 7}
    assert parse_lds(items, 1) == parse_lds(items, None) == {}


@pytest.mark.slow
def test_default_builds_are_ruff_clean(default_build):
    """Issue 25: each default kernel project's emitted file is as ``ruff format`` writes it and
    passes pycodestyle (tests/ruffclean.py), its long launch-default names and comments included;
    issue 46: it reads top-down, TRITON's read-only copy before its plan (order_problems)."""
    assert ruff_problems(default_build.output) == ""
    assert order_problems(default_build.output.read_text()) == ""


@pytest.mark.slow
def test_default_builds_record_each_kernels_lds_and_inspect_uses_it(default_build):
    built = default_build
    prov = provenance.read(built.text)
    names = prov.kernels  # launch names, one Triton object each, in "co" order
    largest: dict[str, int] = {}
    for launch in built.plan.launches:
        largest[launch.kernel] = max(largest.get(launch.kernel, 0), launch.dynamic_lds)
    assert set(largest) == set(names) and any(largest.values())
    items = inspect_sources([built.output], disasm=False)
    assert len(items) == len(names) == len(prov.items("lds"))
    for index, (item, name) in enumerate(zip(items, names)):
        (kernel,) = item.kernels
        assert prov.items("lds")[index] == lds_item(index, kernel.name, largest[name])
        assert item.dynamic_lds[kernel.name].bytes == largest[name]
        assert item.dynamic_lds[kernel.name].source == "provenance"
        want = processors.occupancy(kernel, "gfx950", None, dynamic_lds=largest[name])
        assert item.occupancy[kernel.name] == want and want.launchable
    assert exit_status(items) == 0


@pytest.mark.slow
@pytest.mark.parametrize("default_build", ["mxfp4-mm"], indirect=True)
def test_inspect_flags_a_specialization_needing_196608_bytes(default_build, tmp_path):
    """Objects 0..2 of the mxfp4-mm build all hold mxfp4_mm_kernel: only object 1's is flagged."""
    text = default_build.text  # the session's build (conftest)
    old = provenance.read(text).fields["lds"].split(",")[1]
    assert old.startswith("1/mxfp4_mm_kernel:")
    edited = tmp_path / "edited.py"
    edited.write_text(text.replace(f",{old},", ",1/mxfp4_mm_kernel:196608,", 1))
    r = CliRunner().invoke(cli, ["inspect", "--no-disasm", str(edited)])
    assert r.exit_code == 1
    flat = " ".join(r.output.split())
    assert flat.count("cannot launch") == 1
    assert "dynamic LDS 196608 B (provenance): cannot launch" in flat
    assert ("error: on gfx950 with a block of 256: LDS 196608 bytes exceeds gfx950's 163840 bytes per "
            "workgroup") in flat
    items = inspect_sources([edited], disasm=False)
    assert [i.occupancy["mxfp4_mm_kernel"].launchable for i in items[:3]] == [True, False, True]
    assert items[1].dynamic_lds["mxfp4_mm_kernel"].bytes == 196608
    ok = CliRunner().invoke(cli, ["inspect", "--no-disasm", str(default_build.output)])
    assert ok.exit_code == 0 and "cannot launch" not in ok.output


def test_build_refuses_a_specialization_given_196608_bytes(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    shutil.copytree(TESTS / "projects" / "triton_fill", project)
    plan = project / "launch.py"
    launch = '("fill_1024", ((m * n + 1023) // 1024,), None, None, (out, m * n, 0.0))'
    assert plan.read_text().count(launch) == 1
    plan.write_text(plan.read_text().replace(launch, launch.replace("None, None", "None, 196608")))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "-o", "s.py"])
    assert (r.exit_code, r.output) == (1, "Error: kernel 'fill_1024' (m=8 n=2112 k=7168): LDS 196608 bytes "
                                          "(static 0 + dynamic 196608) exceeds the target's 163840 bytes "
                                          "(160 KiB)\n")
    assert not (tmp_path / "s.py").exists()


@pytest.mark.slow
def test_mixed_project_records_hip_kernels_and_an_unlaunched_specialization(tmp_path):
    """HIP kernels get the plan's largest dynamic LDS; a specialization the plan never launches
    gets Triton's shared."""
    project = mixed_project(tmp_path)
    built = build(BuildOptions(problem="mxfp4-mm", kernels=project, output=tmp_path / "s.py"))
    from submitgen.project.load import load_project
    from submitgen.toolchain.triton import compile_triton

    (spec,) = load_project(project, "gfx950").triton
    shared = compile_triton(spec, "gfx950").shared
    largest: dict[str, int] = {}
    for launch in built.plan.launches:
        largest[launch.kernel] = max(largest.get(launch.kernel, 0), launch.dynamic_lds)
    assert set(largest) == {"mm_tile", "mm_reduce"}
    assert provenance.read(built.text).items("lds") == (
        lds_item(0, "mm_tile", largest["mm_tile"]), lds_item(0, "mm_reduce", largest["mm_reduce"]),
        lds_item(1, "fill_kernel", shared))
