"""`submitgen build`: the pipeline end to end on a small test project, the bad plans it refuses
(tests/bad_plans.py: each case is an edit of the test plan and the exact line the CLI prints), and
the properties of the emitted file."""

from __future__ import annotations

import ast
import hashlib
import os
import random
import re
from pathlib import Path

import pytest
from bad_plans import CASES, BadPlan
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.pipeline import BuildOptions, build
from submitgen.readers.containers import load_code_objects

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PROJECT = TESTS / "projects" / "mm_basic"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("build") / "submission.py"
    return build(BuildOptions(problem="mxfp4-mm", output=out, kernels=PROJECT))


def test_build_writes_a_checked_file(built):
    text = built.output.read_text()
    assert text == built.text
    lines = text.splitlines()
    assert lines[:2] == ["#!POPCORN leaderboard amd-mxfp4-mm", "#!POPCORN gpu MI355X"]
    assert lines[2].startswith("# submitgen-provenance: version=")
    assert "stream" not in text.lower()
    assert "exec(" not in text and "eval(" not in text
    assert [k.name for k in built.kernels] == ["mm_tile", "mm_reduce"]
    # 10 shapes (4 tests + 6 benchmarks), two launches each
    assert built.plan.shapes == 10 and len(built.plan.launches) == 20
    assert built.payload.fits and built.payload.chars > built.payload.baseline


def test_embedded_blob_is_the_code_object(built):
    (found,) = load_code_objects(built.output)
    assert hashlib.sha256(found.data).hexdigest() == built.blobs[0].sha256
    co = found.read()
    assert co.processor == "gfx950"
    assert {k.name for k in co.kernels} == {"mm_tile", "mm_reduce"}
    provenance = built.text.splitlines()[2]
    assert f"co={built.blobs[0].sha256}" in provenance
    assert "kernels=mm_tile,mm_reduce" in provenance


def test_kernel_table_comes_from_metadata(built):
    (found,) = load_code_objects(built.output)
    reduce_ = found.read().kernel("mm_reduce")
    (arg,) = reduce_.explicit_args
    assert (arg.offset, arg.size, arg.value_kind) == (0, 32, "by_value")
    (table,) = (ast.literal_eval(n.value) for n in ast.parse(built.text).body
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "_SG_KERNELS")
    assert table["mm_reduce"] == (32, ((0, 32, "by_value", ""),))


def test_written_file_has_the_usual_mode(built):
    """Written atomically through a temp file, but with the mode a plain open() would give."""
    umask = os.umask(0)
    os.umask(umask)
    assert built.output.stat().st_mode & 0o777 == 0o666 & ~umask


def test_rebuild_is_byte_identical(built, tmp_path):
    again = build(BuildOptions(problem="mxfp4-mm", output=tmp_path / "again.py", kernels=PROJECT))
    assert again.output.read_bytes() == built.output.read_bytes()


@pytest.mark.slow
def test_zlib_and_lzma_embed_the_same_code_object(built, tmp_path):
    z = build(BuildOptions(problem="mxfp4-mm", output=tmp_path / "z.py", kernels=PROJECT, compress="zlib"))
    assert z.blobs[0].sha256 == built.blobs[0].sha256
    assert "import zlib" in z.text and "import lzma" not in z.text
    assert z.blobs[0].chars > built.blobs[0].chars  # lzma is the smaller default


@pytest.mark.slow
def test_prebuilt_code_object(built, tmp_path):
    (found,) = load_code_objects(built.output)
    co = tmp_path / "mm.co"
    co.write_bytes(found.data)
    r = build(BuildOptions(problem="mxfp4-mm", output=tmp_path / "pre.py", kernels=PROJECT,
                           code_objects=(co,)))
    assert r.blobs[0].sha256 == built.blobs[0].sha256


def test_prebuilt_code_object_for_the_wrong_arch(compile_co, tmp_path):
    co = tmp_path / "gfx942.co"
    co.write_bytes(compile_co((PROJECT / "mm.hip").read_text(), arch="gfx942"))
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(PROJECT), "--co", str(co),
                                 "-o", str(tmp_path / "x.py")])
    assert r.exit_code == 1
    assert r.output == f"Error: {co}: code object is for gfx942, expected gfx950\n"
    assert not (tmp_path / "x.py").exists()


@pytest.mark.slow
def test_the_payload_cap_holds_for_the_leaderboards_arch_and_is_reported_for_another(compile_co, tmp_path):
    """Issue 47: a file for another arch (never submitted) was refused over the 65,535-char cap,
    which blocked measured sm_90 wins; the same object for gfx950 is still refused."""
    noise = random.Random(47).randbytes(60_000)  # incompressible: ~80,000 chars of base64
    src = (PROJECT / "mm.hip").read_text() + (
        f"\n__device__ __attribute__((used)) const unsigned char sg_noise[{len(noise)}] = "
        f"{{{','.join(map(str, noise))}}};\n")
    out = {}
    for arch in ("gfx942", "gfx950"):
        co = tmp_path / f"{arch}.co"
        co.write_bytes(compile_co(src, arch=arch))
        out[arch] = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(PROJECT), "--co",
                                             str(co), "--arch", arch, "-o", str(tmp_path / f"{arch}.py")])
    assert out["gfx942"].exit_code == 0, out["gfx942"].output
    chars, over = re.search(r"payload estimate ([\d,]+) / 65,535 chars .*; headroom -([\d,]+)",
                            out["gfx942"].output).groups()
    assert (f"  note: payload estimate {chars} chars is {over} over the 65,535-char limit: not enforced for "
            "a file built for gfx942, which is not submitted") in out["gfx942"].output.splitlines()
    assert "ok  payload within budget" not in out["gfx942"].output
    assert out["gfx950"].exit_code == 1 and not (tmp_path / "gfx950.py").exists()
    assert re.fullmatch(r"Error: estimated dispatch payload \d+ chars exceeds the 65535-char limit "
                        r"\(\d+ over\); embed fewer or smaller kernels\n", out["gfx950"].output)


@pytest.mark.slow
def test_cli_summary(tmp_path):
    out = tmp_path / "s.py"
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(PROJECT), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert f"wrote {out} for amd-mxfp4-mm (amdgcn-amd-amdhsa--gfx950)" in r.output
    assert re.search(r"mm_tile\s+\d+\s+\d+\s+\d+\s+0\s+0\s+256\s+\d waves/SIMD", r.output)
    for check in ("compiles", "header first", "no banned word", "size <= 1 MB", "blob round trip", "lint"):
        assert f"ok  {check}" in r.output
    assert "payload estimate" in r.output and "/ 65,535 chars" in r.output


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_plan_stops_the_build(case: BadPlan, tmp_path, monkeypatch):
    good = (PROJECT / "launch.py").read_text()
    assert good.count(case.old) == 1, f"{case.name}: the edit no longer applies to the test project's plan"
    project = tmp_path / case.name
    project.mkdir()
    (project / "mm.hip").write_text((PROJECT / "mm.hip").read_text())
    (project / "launch.py").write_text(good.replace(case.old, case.new))
    monkeypatch.chdir(tmp_path)  # messages name paths as the user gave them
    out = tmp_path / "submission.py"
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", case.name, "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert r.output == f"Error: {case.error}\n"
    assert not out.exists(), "a failed build must write nothing"
    assert sorted(p.name for p in tmp_path.iterdir()) == [case.name]


def test_unknown_problem(tmp_path):
    r = CliRunner().invoke(cli, ["build", "moe", "-o", str(tmp_path / "x.py")])
    assert r.exit_code == 1
    assert r.output.startswith("Error: ") and "mxfp4-mm" in r.output and "Traceback" not in r.output


def test_mla_struct_8_bytes_short_names_kernel_arg_and_sizes(tmp_path, monkeypatch):
    """The HIP mixed-mla project with its by-value struct cut by 8 bytes (one pointer field)."""
    import shutil

    project = tmp_path / "mla_short"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "hip_mixed_mla", project)
    plan = project / "launch.py"
    text = plan.read_text()
    assert text.count('        ("kv_scale", ctypes.c_void_p),\n') == 1
    plan.write_text(text.replace('        ("kv_scale", ctypes.c_void_p),\n', ""))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mixed-mla", "--kernels", "mla_short", "-o", "x.py"])
    assert r.exit_code == 1
    assert r.output == ("Error: kernel 'mla_decode_split' arg 0: metadata says by_value size 64, "
                        "plan's struct MlaParams is 56 bytes (batchsize=4 qseqlen=1 kvseqlen=1024)\n")
    assert not (tmp_path / "x.py").exists()


@pytest.mark.slow
def test_prebuilt_offload_bundle_picks_the_gfx950_entry(built, compile_co, tmp_path):
    """hipcc-style output: a clang offload bundle with host, gfx942 and gfx950 entries."""
    from conftest import make_bundle

    source = (PROJECT / "mm.hip").read_text()
    fatbin = tmp_path / "mm.hipfb"
    fatbin.write_bytes(make_bundle([
        ("host-x86_64-unknown-linux-gnu-", b""),
        ("hipv4-amdgcn-amd-amdhsa--gfx942", compile_co(source, arch="gfx942")),
        ("hipv4-amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-", compile_co(source, arch="gfx950")),
    ]))
    r = build(BuildOptions(problem="mxfp4-mm", output=tmp_path / "b.py", kernels=PROJECT,
                           code_objects=(fatbin,)))
    (found,) = load_code_objects(r.output)
    assert found.read().processor == "gfx950"
    assert hashlib.sha256(compile_co(source, arch="gfx950")).hexdigest() == r.blobs[0].sha256
