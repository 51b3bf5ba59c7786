"""diff and inspect of the default mxfp4-mm build, whose Triton specializations (mm_m16, mm_m32,
mm_m64) are three objects holding one kernel symbol: kernels are read, paired and shown by their
launch names, Triton's dynamic LDS is compared, and arguments are named from the signature."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.diff.compare import diff_sources, load_side
from submitgen.pipeline import BuildOptions, build
from submitgen.readers.containers import load_code_objects
from submitgen.render import provenance

pytest.importorskip("triton")

REPO = Path(__file__).resolve().parent.parent
LAUNCHES = ("mm_m16", "mm_m32", "mm_m64", "mm_quant_a")
SYMBOLS = ("mxfp4_mm_kernel",) * 3 + ("mxfp4_quant_kernel",)
MM_ARGS = ("a_ptr", "as_ptr", "b_ptr", "bs_ptr", "c_ptr", "ws_ptr", "cnt_ptr", "M", "N", "K", "SN", "k_split",
           "(global scratch)", "(profile scratch)")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("spec")
    a, b, c = d / "a.py", d / "b.py", d / "c.py"
    build(BuildOptions(problem="mxfp4-mm", output=a))
    build(BuildOptions(problem="mxfp4-mm", output=b))
    project = d / "proj"
    shutil.copytree(REPO / "kernels" / "mxfp4_mm", project)
    plan = project / "launch.py"
    old = '"constexprs": {"BM": 32, "BN": 64,'
    assert plan.read_text().count(old) == 1
    plan.write_text(plan.read_text().replace(old, '"constexprs": {"BM": 32, "BN": 128,'))
    build(BuildOptions(problem="mxfp4-mm", output=c, kernels=project))
    return a, b, c


def run(*args: str):
    return CliRunner().invoke(cli, [*args], catch_exceptions=False)


@pytest.mark.slow
def test_two_default_builds_pair_by_specialization(files):
    a, b, _ = files
    r = run("diff", str(a), str(b))
    assert r.exit_code == 0, r.output
    tail = r.output.splitlines()[-5:]
    assert tail == ["kernels: 4 paired, 0 changed, 0 added, 0 removed"] + [
        f"kernel {n} ({s}): unchanged" for n, s in zip(LAUNCHES, SYMBOLS)]
    # each object's line says which launch it serves
    for name in LAUNCHES:
        assert f", 1 kernel: {name}\n" in r.output


@pytest.mark.slow
def test_a_changed_tile_pairs_with_its_own_specialization(files):
    a, _, c = files
    result = diff_sources(a, c, fail_on=("lds",))
    changed = [kd.name for kd in result.kernels if kd.changed]
    assert changed == ["mm_m32"] and result.compared == 4
    old_lds = provenance.read(a.read_text()).items("lds")[1]
    new_lds = provenance.read(c.read_text()).items("lds")[1]
    o, n = int(old_lds.rsplit(":", 1)[1]), int(new_lds.rsplit(":", 1)[1])
    assert (old_lds.split(":")[0], new_lds.split(":")[0]) == ("1/mxfp4_mm_kernel", "1/mxfp4_mm_kernel")
    assert n > o  # a BN 128 tile holds more in LDS than BN 64
    kd = result.kernels[1]
    dyn = next(f for f in kd.fields if f.key == "dynamic_lds")
    assert (dyn.old, dyn.new, dyn.worse) == (o, n, True)
    assert [t.message for t in result.tripped] == [
        f"kernel 'mm_m32' dynamic LDS {o} -> {n} B ({n - o:+d})"]
    r = run("diff", str(a), str(c), "--kernel", "mm_m32")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[lines.index("kernels: 1 paired, 1 changed, 0 added, 0 removed") + 1:][:3] == [
        "", "kernel mm_m32 (mxfp4_mm_kernel)",
        "  occupancy estimated for gfx950, block 256 (Triton's num_warps x wave size)"]
    assert f"\n  {'dynamic LDS':<20}{o:>8} -> {n} B             {n - o:+d} (worse)\n" in r.output


def test_kernel_and_pair_take_launch_names_and_symbols(files):
    a, _, c = files
    r = run("diff", str(a), str(c), "--kernel", "mxfp4_mm_kernel")
    assert r.exit_code == 0 and "kernels: 3 paired, 1 changed, 0 added, 0 removed" in r.output
    r = run("diff", str(a), str(c), "--pair", "mxfp4_mm_kernel=mm_m32")
    assert (r.exit_code, r.output) == (1, "Error: --pair: 'mxfp4_mm_kernel' in OLD is launched as 'mm_m16', "
                                          "'mm_m32', 'mm_m64'; name one of them\n")
    r = run("diff", str(a), str(c), "--pair", "mm_m16=mm_m32", "--kernel", "mm_m16", "--json")
    assert r.exit_code == 0, r.output
    import json

    doc = json.loads(r.output)
    assert [(k["old_name"], k["name"], k["symbol"], k["pairing"]) for k in doc["kernels"]] == [
        ("mm_m16", "mm_m32", "mxfp4_mm_kernel", "--pair")]
    assert doc["new"]["launch_names"] == list(LAUNCHES)


def test_arguments_are_named_from_the_signature(files):
    a, _, _ = files
    side = load_side(a)
    assert side.names == LAUNCHES
    for name in LAUNCHES[:3]:
        kernel, _ = side.get(name)
        assert tuple(x.name for x in kernel.explicit_args) == MM_ARGS
    quant, _ = side.get("mm_quant_a")
    assert tuple(x.name for x in quant.explicit_args) == ("a_ptr", "aq_ptr", "as_ptr", "M", "K",
                                                          "(global scratch)", "(profile scratch)")
    # the metadata itself leaves them unnamed: the names are the signature's
    raw = load_code_objects(a)[0].read().kernels[0]
    assert {x.name for x in raw.explicit_args} <= {None, ""}


def test_inspect_shows_and_selects_launch_names(files):
    a, _, _ = files
    r = run("inspect", str(a), "--no-disasm", "--kernel", "mm_m64")
    assert r.exit_code == 0, r.output
    heads = [line for line in r.output.splitlines() if line.startswith("kernel ")]
    assert heads == ["kernel mm_m64 (mxfp4_mm_kernel)"]
    assert "    7      56     4  by_value                   M\n" in r.output
    r = run("inspect", str(a), "--no-disasm", "--kernel", "mxfp4_mm_kernel")
    heads = [line for line in r.output.splitlines() if line.startswith("kernel ")]
    assert heads == [f"kernel {n} (mxfp4_mm_kernel)" for n in LAUNCHES[:3]]
    r = run("inspect", str(a), "--no-disasm", "--kernel", "nope")
    assert (r.exit_code, r.output) == (1, "Error: no kernel named 'nope'; available: 'mm_m16', 'mm_m32', "
                                          "'mm_m64', 'mm_quant_a'\n")


def test_same_symbol_without_launch_names_gives_the_right_advice(files, tmp_path):
    """A .py that embeds the three objects without submitgen's table: --arch cannot help."""
    a, _, _ = files
    text = a.read_text()
    start = text.index("_SG_KERNEL_IMAGE = {")
    end = text.index("}\n", start) + 2
    bare = tmp_path / "bare.py"
    bare.write_text(text[:start] + text[end:])
    r = run("diff", str(bare), str(a))
    assert (r.exit_code, r.output) == (1, (
        f"Error: {bare}: kernel 'mxfp4_mm_kernel' is in 3 code objects (gfx950, gfx950, gfx950); expected "
        "one: nothing names them apart (a submitgen build names each in its _SG_KERNEL_IMAGE table, which "
        "this file lacks); compare the code objects one by one\n"))
