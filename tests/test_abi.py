"""The emitted loader's ABI, checked against a stand-in libamdhip64 (tests/fakehip/fakehip.c)
that records every call. For every benchmark shape the submission must load exactly the embedded
code object, get the right functions, and launch with the grid, block, LDS and kernarg bytes that
the plan and the code object's metadata say. The expected bytes are rebuilt here from the
metadata (read independently from the file) and the plan's own description of its arguments."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from conftest import build_stub, run_script

from submitgen.pipeline import BuildOptions, build
from submitgen.readers.containers import load_code_objects

TESTS = Path(__file__).resolve().parent
PROJECTS = {
    "mm_basic": ("mxfp4-mm", TESTS / "projects" / "mm_basic", "ctypes"),
    # the load_inline C++ host launcher, compiled at import against the stand-in library
    "mm_basic-cpp": ("mxfp4-mm", TESTS / "projects" / "mm_basic", "cpp"),
    "mm_basic-reuse-output": ("mxfp4-mm", TESTS / "projects" / "mm_basic", "ctypes-reuse"),
    # the HIP kernels (the defaults are Triton now: several objects, covered by the Triton tests)
    "hip-mxfp4-mm": ("mxfp4-mm", TESTS.parent / "examples" / "hip_mxfp4_mm", "ctypes"),
    "hip-mixed-mla": ("mixed-mla", TESTS.parent / "examples" / "hip_mixed_mla", "ctypes"),
    # --target cuda: the same template with the CUDA driver binding, against the same stand-in
    # (it also exports cuModuleLoadData / cuModuleGetFunction / cuLaunchKernel)
    "cuda-mm_basic": ("mxfp4-mm", TESTS / "projects" / "mm_basic", "cuda"),
    "cuda-hip-mixed-mla": ("mixed-mla", TESTS.parent / "examples" / "hip_mixed_mla", "cuda"),
}


@pytest.fixture(scope="session")
def fakehip(tmp_path_factory) -> Path:
    return build_stub(tmp_path_factory, "fakehip")


def run_dry(submission: Path, problem: str, fakehip: Path, tmp: Path):
    log = tmp / "hip.log"
    result = tmp / "result.json"
    env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(fakehip), SUBMITGEN_CUDA_LIBRARY=str(fakehip),
               SUBMITGEN_FAKEHIP_LOG=str(log), TORCH_EXTENSIONS_DIR=str(tmp / "torch_extensions"))
    r = run_script(TESTS / "abi_driver.py", str(submission), problem, str(result), env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return calls, json.loads(result.read_text())


def _pad3(dims):
    return list(dims) + [1] * (3 - len(dims))


def expected_kernarg(kernel, args, shape, out_ptr):
    """Explicit kernarg bytes at the metadata's offsets. Workspace pointers are not known to the
    test, so the recorded ones are collected (and then checked for consistency)."""
    explicit = kernel.explicit_args
    size = max((a.offset + a.size for a in explicit), default=0)
    buf = bytearray(size)
    wildcard = []  # (byte offset, workspace id) of workspace pointers

    def pointer(desc, offset):
        t = desc["tensor"]
        if t == "workspace":
            wildcard.append((offset, desc["id"]))
            return 0
        return out_ptr if t == "out" else shape["leaves"][t]

    assert len(args) == len(explicit)
    for desc, arg in zip(args, explicit):
        if desc.get("none"):  # a null pointer: the bytes stay 0
            assert arg.value_kind in ("global_buffer", "cuda_param") and arg.size == 8
        elif "tensor" in desc:
            assert arg.value_kind in ("global_buffer", "cuda_param") and arg.size == 8
            struct.pack_into("<Q", buf, arg.offset, pointer(desc, arg.offset))
        elif "struct" in desc:
            assert arg.value_kind in ("by_value", "cuda_param") and arg.size == desc["size"]
            buf[arg.offset:arg.offset + arg.size] = bytes.fromhex(desc["struct"])
            for off, p in desc["pointers"].items():
                struct.pack_into("<Q", buf, arg.offset + int(off), pointer(p, arg.offset + int(off)))
        elif "float" in desc:
            struct.pack_into("<f" if arg.size == 4 else "<d", buf, arg.offset, desc["float"])
        else:
            struct.pack_into({4: "<i", 8: "<q"}[arg.size], buf, arg.offset, desc["int"])
    return bytes(buf), wildcard


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_abi_against_stand_in_hip(name, fakehip, tmp_path):
    problem, project, launcher = PROJECTS[name]
    sub = tmp_path / "submission.py"
    if launcher == "cuda":
        if shutil.which("nvcc") is None:
            pytest.skip("nvcc is not installed: the CUDA target cannot be built here")
        build(BuildOptions(problem=problem, output=sub, kernels=project, target="cuda", arch="sm_90"))
    else:
        build(BuildOptions(problem=problem, output=sub, kernels=project, launcher=launcher.split("-")[0],
                           reuse_output=launcher.endswith("-reuse")))
    (embedded,) = load_code_objects(sub)
    co = embedded.read()
    calls, result = run_dry(sub, problem, fakehip, tmp_path)
    assert result["backend"] == "dry-run"

    loads = [c for c in calls if c["call"] == "hipModuleLoadData"]
    assert len(loads) == 1, "the module is loaded once per process, at import"
    image = bytes.fromhex(loads[0]["hex"])
    assert image == embedded.data
    assert hashlib.sha256(image).hexdigest() in sub.read_text().splitlines()[2]

    functions = {c["function"]: c["name"] for c in calls if c["call"] == "hipModuleGetFunction"}
    kernel_names = {k.name for k in co.kernels}
    assert set(functions.values()) <= kernel_names and len(functions) == len(set(functions.values()))
    launches = [c for c in calls if c["call"] == "hipModuleLaunchKernel"]
    expected_count = sum(len(s["launches"]) for s in result["shapes"])
    assert len(launches) == expected_count

    it = iter(launches)
    for shape in result["shapes"]:
        workspace_seen: dict[int, int] = {}
        for planned in shape["launches"]:
            got = next(it)
            assert functions[got["function"]] == planned["kernel"], shape["label"]
            assert got["grid"] == _pad3(planned["grid"]), shape["label"]
            assert got["block"] == _pad3(planned["block"]), shape["label"]
            assert got["lds"] == planned["lds"]
            assert got["queue"] == 0, "launches go to queue 0 (torch's default)"
            kernel = co.kernel(planned["kernel"])
            want, wildcard = expected_kernarg(kernel, planned["args"], shape, shape["out"])
            have = bytearray.fromhex(got["kernarg"])
            assert len(have) == len(want), f"{planned['kernel']}: kernarg size"
            for off, ws in wildcard:  # a workspace: a real address, the same in every launch that uses it
                ptr = struct.unpack_from("<Q", have, off)[0]
                assert ptr != 0 and workspace_seen.setdefault(ws, ptr) == ptr, shape["label"]
                have[off:off + 8] = bytes(8)
            assert bytes(have) == want, f"{planned['kernel']} ({shape['label']}): kernarg bytes differ"
        assert len(set(workspace_seen.values())) == len(workspace_seen), "distinct workspaces share memory"
