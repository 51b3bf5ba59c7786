"""`submitgen diff` (issue 9): two builds of one kernel, as bare code objects, offload bundles and
.py submissions; --fail-on rules; JSON; bad inputs. Code objects are compiled by the tests."""

from __future__ import annotations

import base64
import dataclasses
import json
import lzma
import struct

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.diff.compare import diff_sides, load_side, plan_blocks
from submitgen.readers.amd import processors
from submitgen.readers.amd.reader import read_code_object

# NACC independent accumulators stay live across the loop: more of them, more VGPRs.
ACC = r"""
#define NACC {nacc}
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void acc(float* __restrict__ out, const float* __restrict__ in, int n) {{
  int t = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  float a[NACC];
#pragma unroll
  for (int j = 0; j < NACC; ++j) a[j] = in[t + j * 4096];
  for (int i = 0; i < n; ++i) {{
    float x = in[i];
#pragma unroll
    for (int j = 0; j < NACC; ++j) a[j] = a[j] * x + a[(j + 1) % NACC];
  }}
#pragma unroll
  for (int j = 0; j < NACC; ++j) out[t + j * 4096] = a[j];
}}
"""

# ARG_T changes the third argument's size; EXTRA adds a kernel.
ARGS = r"""
#define ARG_T {arg_t}
#define EXTRA {extra}
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 128)))
void scale(float* x, ARG_T n, float s) {{
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] *= s;
}}
#if EXTRA
extern "C" __attribute__((global)) void extra(float* x) {{ x[0] = 1.0f; }}
#else
extern "C" __attribute__((global)) void gone(float* x) {{ x[0] = 2.0f; }}
#endif
"""


def run(*args: str):
    return CliRunner().invoke(cli, ["diff", *args], catch_exceptions=False)


def bundle_of(gfx950: bytes) -> bytes:
    """Clang offload bundle: magic, u64 count, then per entry u64 offset, u64 size, u64 id length, id."""
    entries = [("host-x86_64-unknown-linux-gnu-", b""), ("hipv4-amdgcn-amd-amdhsa--gfx950", gfx950)]
    table = len(b"__CLANG_OFFLOAD_BUNDLE__") + 8 + sum(24 + len(eid) for eid, _ in entries)
    out = bytearray(b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries)))
    pos = table
    for eid, blob in entries:
        out += struct.pack("<QQQ", pos, len(blob), len(eid)) + eid.encode()
        pos += len(blob)
    for _, blob in entries:
        out += blob
    return bytes(out)


def submission_of(co: bytes, threads: int = 64) -> str:
    """A .py submission: lzma+base64 code object in a literal, and a launch plan (block THREADS * 2)."""
    b64 = base64.b64encode(lzma.compress(co)).decode()
    return (
        "#!POPCORN leaderboard x\nimport torch\n"
        f"THREADS = {threads}\n"
        f'_BLOB = (\n    "{b64[:60]}"\n    "{b64[60:]}"\n)\n'
        "def plan(data):\n"
        "    out = torch.empty(4)\n"
        '    return out, [("acc", (4, 1, 1), (THREADS * 2, 1, 1), 0, (out, data, 4))]\n'
    )


@pytest.fixture(scope="module")
def builds(compile_co, tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    co = {
        "lo": compile_co(ACC.format(nacc=4)),
        "hi": compile_co(ACC.format(nacc=96)),
        "hi_again": compile_co(ACC.format(nacc=96), name="again.hip"),  # a second, separate build
        "args_a": compile_co(ARGS.format(arg_t="int", extra=0)),
        "args_b": compile_co(ARGS.format(arg_t="long long", extra=1)),
    }
    files = {"bytes": co}
    for key, data in co.items():
        files[key] = d / f"{key}.co"
        files[key].write_bytes(data)
    for key in ("lo", "hi"):
        files[f"{key}_bundle"] = d / f"{key}.hipfb"
        files[f"{key}_bundle"].write_bytes(bundle_of(co[key]))
        files[f"{key}_py"] = d / f"{key}_submission.py"
        files[f"{key}_py"].write_text(submission_of(co[key]))
    return files


def kernel_of(data: bytes, name: str = "acc"):
    return read_code_object(data).kernel(name)


def expected(builds):
    """(old VGPRs, new VGPRs) and occupancy at block 256 and 128, computed from the objects."""
    lo, hi = kernel_of(builds["bytes"]["lo"]), kernel_of(builds["bytes"]["hi"])
    occ = {
        b: (
            processors.occupancy(lo, "gfx950", b).waves_per_simd,
            processors.occupancy(hi, "gfx950", b).waves_per_simd,
        )
        for b in (128, 256)
    }
    return (lo.vgpr_count, hi.vgpr_count), occ


def fits(out: str) -> bool:
    return all(len(line) <= 100 for line in out.splitlines())


# --------------------------------------------------------------------------- register pressure


def test_the_pair_really_differs_in_pressure(builds):
    (v_lo, v_hi), occ = expected(builds)
    assert v_hi >= v_lo + 64
    assert occ[256][1] < occ[256][0]


@pytest.mark.parametrize("form", ["", "_bundle"])
def test_vgpr_and_occupancy_change(builds, form):
    (v_lo, v_hi), occ = expected(builds)
    r = run(str(builds[f"lo{form}"]), str(builds[f"hi{form}"]))
    assert r.exit_code == 0, r.output
    out = r.output
    assert "kernels: 1 paired, 1 changed, 0 added, 0 removed" in out
    assert "occupancy estimated for gfx950, block 256 (max workgroup size; no launch plan" in out
    vgpr = next(line for line in out.splitlines() if line.strip().startswith("VGPR "))
    assert f"{v_lo} -> {v_hi}" in vgpr and f"+{v_hi - v_lo}" in vgpr
    o_lo, o_hi = occ[256]
    line = next(line for line in out.splitlines() if line.strip().startswith("occupancy  "))
    assert f"{o_lo} -> {o_hi} waves/SIMD" in line and f"{o_hi - o_lo:+d} (worse)" in line
    assert "limited by vgpr" in line
    assert "code size" in out and "AGPR" not in out and "target" not in out  # unchanged: hidden
    if form == "_bundle":
        assert "> bundle entry hipv4-amdgcn-amd-amdhsa--gfx950" in out
    assert fits(out)


@pytest.mark.parametrize("old,new,code", [
    ("lo", "hi", 1), ("lo_bundle", "hi_py", 1), ("lo_py", "hi", 1),
    ("hi", "hi_again", 0), ("hi_bundle", "hi_py", 0), ("hi_py", "hi_again", 0), ("hi", "lo", 0),
])
def test_fail_on_occupancy(builds, old, new, code):
    r = run(str(builds[old]), str(builds[new]), "--fail-on", "occupancy")
    assert r.exit_code == code, r.output
    if code:
        assert "fail-on occupancy: tripped: kernel 'acc' occupancy " in r.output
    else:
        assert "fail-on occupancy: passed (no listed measure got worse)" in r.output
    assert fits(r.output)


def test_identical_builds_show_nothing_changed(builds):
    r = run(str(builds["hi"]), str(builds["hi_again"]), "--fail-on", "spills,scratch,occupancy,lds,args")
    assert r.exit_code == 0, r.output
    assert "kernels: 1 paired, 0 changed, 0 added, 0 removed" in r.output
    assert "kernel acc: unchanged" in r.output


def test_all_shows_unchanged_fields(builds):
    (v_lo, v_hi), _ = expected(builds)
    r = run(str(builds["hi"]), str(builds["hi_again"]), "--all")
    assert r.exit_code == 0, r.output
    for label in ("target", "VGPR", "AGPR", "SGPR", "VGPR spills", "SGPR spills", "scratch", "static LDS",
                  "occupancy", "code size", "explicit kernarg", "max workgroup size", "explicit args"):
        assert f"\n  {label} " in r.output, label
    assert "amdgcn-amd-amdhsa--gfx950" in r.output and f" {v_hi}\n" in r.output
    assert fits(r.output)


# --------------------------------------------------------------------------- .py inputs, blocks


def test_python_submissions_use_the_plan_block(builds):
    _, occ = expected(builds)
    r = run(str(builds["lo_py"]), str(builds["hi_py"]))
    assert r.exit_code == 0, r.output
    assert "lo_submission.py:5 (lzma+base64)" in r.output
    assert "occupancy estimated for gfx950, block 128 (launch plan)" in r.output
    o_lo, o_hi = occ[128]
    assert f"{o_lo} -> {o_hi} waves/SIMD" in r.output
    # one side with a plan: its block serves both sides
    r = run(str(builds["lo"]), str(builds["hi_py"]), "--json")
    doc = json.loads(r.output)
    assert doc["kernels"][0]["block"] == {"old": 128, "new": 128, "source": "launch plan",
                                          "detail": "block 128 (launch plan)"}


def test_block_option_overrides(builds):
    r = run(str(builds["lo_py"]), str(builds["hi_py"]), "--block", "64")
    assert "occupancy estimated for gfx950, block 64 (--block)" in r.output
    r = run(str(builds["lo"]), str(builds["hi"]), "--block", "2000")
    assert r.exit_code == 2 and "--block" in r.output


def test_plan_blocks_static_reading():
    src = ("T = 64\nW = T * 4\n"
           "def plan(d):\n"
           "    name = 'k1'\n"
           "    return 0, [(name, g, (T, 1, 1), 0, ()), ('k2', (1, 1, 1), (W // 2, 2, 1), 0, a),\n"
           "               ('k2', g, (W, 1, 1), 0, a), ('k3', g, (d.x, 1, 1), 0, a)]\n")
    assert plan_blocks(src) == {None: (64,), "k2": (256,)}
    assert plan_blocks("not python (") == {}


# --------------------------------------------------------------------------- JSON


def test_json_structure(builds):
    (v_lo, v_hi), occ = expected(builds)
    r = run(str(builds["lo_bundle"]), str(builds["hi"]), "--json", "--fail-on", "occupancy,args")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["format_version"] == 1 and doc["arch"] is None
    assert doc["added"] == [] and doc["removed"] == []
    [co] = doc["old"]["code_objects"]
    assert co["target"] == "amdgcn-amd-amdhsa--gfx950" and co["kernels"] == ["acc"]
    assert co["provenance"].endswith("> bundle entry hipv4-amdgcn-amd-amdhsa--gfx950")
    [k] = doc["kernels"]
    assert k["name"] == "acc" and k["changed"] and k["args"] == []
    assert k["block"]["source"] == "max workgroup size" and k["occupancy_target"] == "gfx950"
    fields = {f["field"]: f for f in k["fields"]}
    assert set(fields) >= {"target", "vgpr_count", "agpr_count", "sgpr_count", "vgpr_spill_count",
                           "sgpr_spill_count", "private_segment_fixed_size", "group_segment_fixed_size",
                           "occupancy", "code_size", "kernarg_segment_size", "max_flat_workgroup_size"}
    assert fields["vgpr_count"] == {
        "field": "vgpr_count",
        "label": "VGPR",
        "unit": "",
        "old": v_lo,
        "new": v_hi,
        "delta": v_hi - v_lo,
        "changed": True,
        "worse": None,
    }
    o = fields["occupancy"]
    assert (o["old"], o["new"], o["worse"]) == (occ[256][0], occ[256][1], True)
    assert fields["agpr_count"]["changed"] is False
    assert k["occupancy"]["new"]["limited_by"] == ["vgpr"]
    assert doc["fail_on"] == ["occupancy", "args"]
    assert [t["rule"] for t in doc["tripped"]] == ["occupancy"] and doc["exit_code"] == 1


# --------------------------------------------------------------------------- args, added/removed


def test_kernarg_layout_and_added_removed(builds):
    r = run(str(builds["args_a"]), str(builds["args_b"]))
    assert r.exit_code == 0, r.output
    out = r.output
    assert "kernels: 1 paired, 1 changed, 1 added, 1 removed" in out
    assert "added    kernel extra" in out and "removed  kernel gone" in out
    assert "arg 1" in out and "by_value 4 B @8 -> by_value 8 B @8" in out
    assert "arg 2" in out and "by_value 4 B @12 -> by_value 4 B @16" in out
    assert "explicit kernarg 16 -> 20 B +4" in " ".join(out.split())
    assert "block 128 (max workgroup size" in out
    r = run(str(builds["args_a"]), str(builds["args_b"]), "--fail-on", "args")
    assert r.exit_code == 1
    assert ("fail-on args: tripped: kernel 'scale' arg 1: by_value 4 B @8 -> by_value 8 B @8 (and 1 more)"
            in r.output)
    r = run(str(builds["args_a"]), str(builds["args_b"]), "--fail-on", "occupancy,spills")
    assert r.exit_code == 0


def test_kernel_option(builds):
    r = run(str(builds["args_a"]), str(builds["args_b"]), "--kernel", "gone")
    assert r.exit_code == 0
    assert "kernels: 0 paired, 0 changed, 0 added, 1 removed" in r.output and "scale" not in r.output
    r = run(str(builds["args_a"]), str(builds["args_b"]), "--kernel", "scale.kd", "--fail-on", "args")
    assert r.exit_code == 1 and "extra" not in r.output


def test_spill_scratch_lds_rules(builds):
    old = load_side(builds["hi"])
    k, co = old.kernels[0]
    worse = dataclasses.replace(k, vgpr_spill_count=k.vgpr_spill_count + 3, private_segment_fixed_size=64,
                                group_segment_fixed_size=k.group_segment_fixed_size + 4096)
    new = dataclasses.replace(old, kernels=((worse, co),))
    res = diff_sides(old, new, fail_on=("spills", "scratch", "lds", "occupancy", "args"))
    assert [t.rule for t in res.tripped] == ["spills", "scratch", "lds"]
    assert (
        res.tripped[0].message
        == f"kernel 'acc' VGPR spills {k.vgpr_spill_count} -> {k.vgpr_spill_count + 3} (+3)"
    )
    assert res.tripped[2].message.endswith(" B (+4096)") and res.exit_code == 1
    assert diff_sides(new, old, fail_on=("spills", "scratch", "lds")).exit_code == 0  # better is fine


# --------------------------------------------------------------------------- bad input


def test_bad_inputs(builds, tmp_path):
    junk = tmp_path / "not_elf.txt"
    junk.write_bytes(b"just some bytes\n")
    r = run(str(junk), str(builds["hi"]))
    assert r.exit_code == 1
    assert r.output == (f"Error: {junk}: not an ELF code object, an offload bundle or a Python file: "
                        "starts with 6a75737420736f6d\n")
    r = run(str(builds["hi"]), str(tmp_path / "nope.co"))
    assert r.exit_code == 1 and r.output == f"Error: {tmp_path / 'nope.co'}: no such file\n"
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    r = run(str(empty), str(builds["hi"]))
    assert r.exit_code == 1 and r.output == (
        f"Error: {empty}: no code object found: none of its 0 string literals decodes from base64 "
        "(or base64 of zlib/gzip/lzma/bz2) to an ELF code object or an offload bundle\n")


def test_bad_options(builds):
    r = run(str(builds["lo"]), str(builds["hi"]), "--fail-on", "occupancy,speed")
    assert r.exit_code == 2
    assert ("Invalid value for '--fail-on': unknown measure 'speed': expected a comma-separated list of "
            "spills, scratch, occupancy, lds, args") in r.output
    r = run(str(builds["lo"]), str(builds["hi"]), "--kernel", "nope")
    assert r.exit_code == 1 and r.output == "Error: no kernel named 'nope' in OLD or NEW; available: 'acc'\n"
    r = run(str(builds["lo_bundle"]), str(builds["hi"]), "--arch", "gfx942")
    assert r.exit_code == 1 and r.output == (
        f"Error: {builds['lo_bundle']}: offload bundle has no entry for gfx942; it has "
        "hipv4-amdgcn-amd-amdhsa--gfx950\n")


def test_bundle_with_two_arches_needs_arch(builds, compile_co, tmp_path):
    from conftest import make_bundle

    both = tmp_path / "both.hipfb"
    both.write_bytes(
        make_bundle(
            [
                ("host-x86_64-unknown-linux-gnu-", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx942", compile_co(ACC.format(nacc=4), "gfx942")),
                ("hipv4-amdgcn-amd-amdhsa--gfx950", builds["bytes"]["lo"]),
            ]
        )
    )
    r = run(str(both), str(builds["hi"]))
    assert r.exit_code == 1 and r.output == (
        f"Error: {both}: kernel 'acc' is in 2 code objects (gfx942, gfx950); expected one: "
        "choose the code object with --arch\n")
    r = run(str(both), str(builds["hi"]), "--arch", "gfx950", "--fail-on", "occupancy")
    assert r.exit_code == 1 and "occupancy estimated for gfx950" in r.output
