"""`submitgen inspect` through click's CliRunner: text, JSON, options and every bad input."""

from __future__ import annotations

import base64
import json
import sys
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_bundle

from submitgen.cli import cli

BAD = Path(__file__).parent / "bad_inputs"
sys.path.insert(0, str(BAD))
import generate  # noqa: E402


def run(*args: str):
    return CliRunner().invoke(cli, ["inspect", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory, cos, bundle):
    d = tmp_path_factory.mktemp("inspect")
    out = {}
    for key, data in cos.items():
        out[key] = d / f"{key}.co"
        out[key].write_bytes(data)
    out["bundle"] = d / "k.hipfb"
    out["bundle"].write_bytes(bundle)
    b64 = base64.b64encode(zlib.compress(cos["args_v5"])).decode()
    out["py"] = d / "submission.py"
    out["py"].write_text(f'#!POPCORN leaderboard x\nimport ctypes\nCO = "{b64}"\n')
    return out


def test_text_report(files):
    r = run(str(files["args_v5"]))
    assert r.exit_code == 0, r.output
    out = r.output
    assert "amdgcn-amd-amdhsa--gfx950   code object v5" in out
    assert "kernel many_args" in out and "kernel void scale<4>(float*, int)" in out
    assert "raw name _Z5scaleILi4EEvPfi" in out
    assert "kernarg 72 bytes explicit (8 args), 328 total" in out
    assert "hidden_grid_dims" in out and "(hidden)" in out
    assert "occupancy on gfx950, block 256: 8 waves/SIMD" in out
    assert all(len(line) <= 100 for line in out.splitlines())


def test_text_big_kernels_and_warnings(files):
    r = run(str(files["big"]), "--arch", "gfx950", "--kernel", "big_lds", "--block", "128")
    assert r.exit_code == 0, r.output
    assert "LDS 160000 B" in r.output and "kernel hi_vgpr" not in r.output
    assert "block 128" in r.output and "limited by" in r.output
    r = run(str(files["big"]), "--kernel", "hi_vgpr", "--block", "1024")
    assert "VGPR 288   AGPR 32" in r.output and "cannot launch" in r.output
    assert "error: on gfx950 with a block of 1024:" in r.output
    assert all(len(line) <= 100 for line in r.output.splitlines())


def test_json(files):
    r = run(str(files["args_v5"]), "--json")
    assert r.exit_code == 0
    doc = json.loads(r.output)
    [co] = doc["code_objects"]
    assert co["target"] == "amdgcn-amd-amdhsa--gfx950" and co["code_object_version"] == 5
    assert co["metadata"]["version"] == [1, 2]
    k = {k["name"]: k for k in co["kernels"]}
    m = k["many_args"]
    for key in (
        "name",
        "symbol",
        "kernarg_segment_size",
        "group_segment_fixed_size",
        "private_segment_fixed_size",
        "vgpr_count",
        "agpr_count",
        "sgpr_count",
        "max_flat_workgroup_size",
        "wavefront_size",
        "args",
        "demangled_name",
        "occupancy",
        "findings",
        "descriptor",
        "explicit_args_size",
        "code_size",
    ):
        assert key in m, key
    assert [(a["offset"], a["size"], a["value_kind"]) for a in m["args"][:3]] == \
        [(0, 8, "global_buffer"), (8, 8, "global_buffer"), (16, 4, "by_value")]
    assert m["args"][8]["hidden"] and not m["args"][0]["hidden"]
    assert m["occupancy"]["waves_per_simd"] == 8 and m["occupancy"]["limited_by"] == ["hardware"]
    assert m["descriptor"]["vgpr_alloc"] >= m["vgpr_count"]
    assert k["_Z5scaleILi4EEvPfi"]["demangled_name"] == "void scale<4>(float*, int)"


def test_python_and_bundle(files):
    r = run(str(files["py"]), "--json")
    [co] = json.loads(r.output)["code_objects"]
    assert co["container"] == "python" and co["encoding"] == "zlib+base64" and co["python_line"] == 3
    assert [k["name"] for k in co["kernels"]] == ["many_args", "_Z5scaleILi4EEvPfi"]
    r = run(str(files["bundle"]), "--arch", "gfx942")
    # the text wraps at 100 columns, so where the line breaks depends on the temp folder's length
    assert r.exit_code == 0 and "bundle entry hipv4-amdgcn-amd-amdhsa--gfx942" in " ".join(r.output.split())
    r = run(str(files["bundle"]), str(files["opencl"]), "--json")
    assert [c["processor"] for c in json.loads(r.output)["code_objects"]] == ["gfx942", "gfx950", "gfx950"]


def test_unknown_kernel(files):
    r = run(str(files["opencl"]), "--kernel", "nope")
    assert r.exit_code == 1
    assert r.output == "Error: no kernel named 'nope'; available: 'cl_axpy'\n"


def _expected() -> dict[str, str]:
    out = {}
    for line in (BAD / "expected.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, msg = line.split("\t", 1)
            out[name] = msg
    return out


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, cos):
    d = tmp_path_factory.mktemp("bad")
    good = cos["args_v6"]
    bundle = make_bundle(
        [("host-x86_64-unknown-linux-gnu-", b""), ("hipv4-amdgcn-amd-amdhsa--gfx942", cos["args_942"])]
    )
    paths = {p.name: p for p in BAD.iterdir() if p.suffix in (".txt", ".py", ".co") and p.name not in
             ("expected.txt", "generate.py")}
    for gen in generate.GENERATORS:
        name, data = gen(good, bundle)
        (d / name).write_bytes(data)
        paths[name] = d / name
    return paths


def test_bad_inputs(bad_files):
    expected = _expected()
    assert sorted(expected) == sorted(bad_files)
    for name, path in sorted(bad_files.items()):
        args = [str(path)] + (["--arch", "gfx950"] if name.endswith(".hipfb") else [])
        r = run(*args)
        assert r.exit_code == 1, (name, r.output)
        want = "Error: " + expected[name].format(path=path) + "\n"
        assert r.output == want, name


def test_missing_file(tmp_path):
    r = run(str(tmp_path / "nope.co"))
    assert r.exit_code == 1 and r.output == f"Error: {tmp_path / 'nope.co'}: no such file\n"
