"""The ABI of Triton builds, checked against the stand-in libamdhip64 (tests/fakehip/fakehip.c) that
records every call. For the default kernel projects of the three problems and for
examples/triton_mxfp4_mm, the real build (gfx950, ctypes launcher) writes the file; the file is
imported against the stand-in and custom_kernel is called on every test and benchmark shape
(inputs are uninitialised CPU tensors of the problem's shapes: the stand-in never reads memory).

For every recorded launch: the function comes from the module whose image is the build's object
for that specialization (sha256 against the provenance and against Triton's artifact), the grid is
the plan's, the block is num_warps x 64 from the project's TRITON table, the dynamic LDS is Triton's
``shared`` (or the plan's, never less), the two trailing scratch pointers are null (or a workspace
when Triton asks for scratch), and the kernarg bytes equal what this test rebuilds from the object's
own metadata note (read here with pyelftools and msgpack, not through submitgen's reader) and the
plan's argument values and addresses: every byte, padding included. Hidden arguments are the HIP
runtime's to write: the buffer must end where the explicit arguments end, before the first one."""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
from pathlib import Path

import msgpack
import pytest
from conftest import build_stub, embedded_triton, run_script
from elftools.elf.elffile import ELFFile

from submitgen.pipeline import BuildOptions, build
from submitgen.render import provenance

pytest.importorskip("triton", reason="the [triton] extra compiles the specializations")

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
ARCH = "gfx950"
WAVE = 64
PROJECTS = {
    "mxfp4-mm": ("mxfp4-mm", ROOT / "kernels" / "mxfp4_mm"),
    "mixed-mla": ("mixed-mla", ROOT / "kernels" / "mixed_mla"),
    "moe-mxfp4": ("moe-mxfp4", ROOT / "kernels" / "moe_mxfp4"),
    "example-triton_mxfp4_mm": ("mxfp4-mm", ROOT / "examples" / "triton_mxfp4_mm"),
}
NT_AMDGPU_METADATA = 32


@pytest.fixture(scope="module")
def fakehip(tmp_path_factory) -> Path:
    return build_stub(tmp_path_factory, "fakehip")


def amdgpu_metadata(image: bytes) -> dict:
    """The NT_AMDGPU_METADATA note of a code object, decoded with msgpack."""
    for section in ELFFile(io.BytesIO(image)).iter_sections():
        if section["sh_type"] != "SHT_NOTE":
            continue
        data, pos = section.data(), 0
        while pos + 12 <= len(data):
            namesz, descsz, kind = struct.unpack_from("<III", data, pos)
            pos += 12
            name = data[pos:pos + namesz].rstrip(b"\0")
            pos += (namesz + 3) & ~3
            desc = data[pos:pos + descsz]
            pos += (descsz + 3) & ~3
            if name == b"AMDGPU" and kind == NT_AMDGPU_METADATA:
                return msgpack.unpackb(desc, raw=False)
    raise AssertionError("no AMDGPU metadata note")


def artifacts(project: Path) -> dict:
    """Triton's artifact of every specialization: the build's own compile, from the cache."""
    from submitgen.project.load import load_project
    from submitgen.toolchain.triton import compile_triton

    return {s.name: compile_triton(s, ARCH) for s in load_project(project, ARCH).triton}


def run_driver(sub: Path, problem: str, fakehip: Path, tmp: Path) -> tuple[list[dict], dict]:
    log, result = tmp / "hip.log", tmp / "result.json"
    env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(fakehip), SUBMITGEN_FAKEHIP_LOG=str(log))
    r = run_script(TESTS / "abi_driver.py", str(sub), problem, str(result), "all", env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(line) for line in log.read_text().splitlines()], json.loads(result.read_text())


def expected_kernarg(meta: dict, planned: list, shape: dict, scratch: tuple[int, int]):
    """Explicit kernarg bytes at the metadata's offsets: the plan's arguments, then the two
    scratch pointers Triton appends. Workspace pointers (the plan's, a scratch buffer) are not
    known here: their offsets are returned with an id, and the recorded ones checked apart."""
    explicit = [a for a in meta[".args"] if not a[".value_kind"].startswith("hidden_")]
    assert len(explicit) == len(planned) + 2, f"{meta['.name']}: explicit args vs plan args + 2 scratch"
    end = max(a[".offset"] + a[".size"] for a in explicit)
    buf, wildcard = bytearray(end), []
    for desc, arg in zip(planned, explicit):
        off, size, kind = arg[".offset"], arg[".size"], arg[".value_kind"]
        if "tensor" in desc or desc.get("none"):
            assert kind == "global_buffer" and size == 8
            t = desc.get("tensor")
            if t == "workspace":
                wildcard.append((off, desc["id"]))
            elif t is not None:
                struct.pack_into("<Q", buf, off, shape["out"] if t == "out" else shape["leaves"][t])
        elif "float" in desc:
            assert kind == "by_value"
            struct.pack_into({4: "<f", 8: "<d"}[size], buf, off, desc["float"])
        else:
            assert kind == "by_value"
            struct.pack_into({4: "<i", 8: "<q"}[size], buf, off, desc["int"])
    for arg, size in zip(explicit[-2:], scratch):
        assert arg[".value_kind"] == "global_buffer" and arg[".size"] == 8
        if size:
            wildcard.append((arg[".offset"], object()))  # a buffer of this launch's own
    hidden = [a[".offset"] for a in meta[".args"] if a[".value_kind"].startswith("hidden_")]
    assert not hidden or end <= min(hidden), "explicit arguments end before the hidden ones"
    return bytes(buf), wildcard


@pytest.fixture(scope="module", params=sorted(PROJECTS))
def dry_run(request, fakehip, tmp_path_factory):
    problem, project = PROJECTS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    sub = tmp / "submission.py"
    built = build(BuildOptions(problem=problem, output=sub, kernels=project))
    calls, result = run_driver(sub, problem, fakehip, tmp)
    return project, built, calls, result


@pytest.mark.slow
def test_every_launch_on_every_shape(dry_run):
    project, built, calls, result = dry_run
    table, arts = embedded_triton(built.text), artifacts(project)  # the table the file launches by
    co = provenance.read(built.text).code_objects
    # one object per specialization, in TRITON order, each the build's artifact
    assert list(arts) == list(table) and len(co) == len(table)
    assert co == tuple(hashlib.sha256(arts[name].image).hexdigest() for name in table)

    loads = [c for c in calls if c["call"] == "hipModuleLoadData"]
    images = {c["module"]: bytes.fromhex(c["hex"]) for c in loads}
    assert [hashlib.sha256(images[c["module"]]).hexdigest() for c in loads] == list(co), (
        "every object loaded once, at import, in order")
    got = [c for c in calls if c["call"] == "hipModuleGetFunction"]
    assert all(c["found"] for c in got)
    module_of = {c["function"]: c["module"] for c in got}
    meta = {hashlib.sha256(i).hexdigest(): amdgpu_metadata(i) for i in images.values()}

    launches = [c for c in calls if c["call"] == "hipModuleLaunchKernel"]
    assert len(launches) == sum(len(s["launches"]) for s in result["shapes"])
    assert len(result["shapes"]) == len(built.problem.tests) + len(built.problem.benchmarks)
    it = iter(launches)
    for shape in result["shapes"]:
        label, seen = shape["label"], {}
        for planned in shape["launches"]:
            rec, name = next(it), planned["kernel"]
            art = arts[name]  # the file's TRITON holds what the plan reads: kernel, warps from the spec
            image = images[module_of[rec["function"]]]
            sha = hashlib.sha256(image).hexdigest()
            assert sha == co[list(table).index(name)], f"{label}: {name} runs from another object"
            (kmeta,) = meta[sha]["amdhsa.kernels"]
            assert kmeta[".name"] == art.spec.kernel == art.symbol
            threads = art.spec.num_warps * WAVE
            assert kmeta[".max_flat_workgroup_size"] >= threads
            assert planned["block"] in (None, [threads, 1, 1])
            assert rec["block"] == [threads, 1, 1], f"{label}: {name} block"
            assert rec["grid"] == list(planned["grid"]) + [1] * (3 - len(planned["grid"])), label
            want_lds = art.shared if planned["lds"] is None else planned["lds"]
            assert want_lds >= art.shared and rec["lds"] == want_lds, f"{label}: {name} dynamic LDS"
            assert rec["queue"] == 0
            want, wildcard = expected_kernarg(kmeta, planned["args"], shape,
                                              (art.global_scratch, art.profile_scratch))
            have = bytearray.fromhex(rec["kernarg"])
            assert len(have) == len(want), f"{label}: {name} kernarg size"
            for off, key in wildcard:  # a workspace: a real address, the same in every launch using it
                ptr = struct.unpack_from("<Q", have, off)[0]
                assert ptr and seen.setdefault(key, ptr) == ptr, f"{label}: {name} workspace at {off}"
                have[off:off + 8] = bytes(8)
            assert bytes(have) == want, f"{name} ({label}): kernarg bytes differ"
        assert len(set(seen.values())) == len(seen), f"{label}: distinct workspaces share memory"
    assert next(it, None) is None
