"""`build --launcher aql` of a Triton project: several code objects (one per specialization, three
of them holding a kernel of the same name), each loaded at import into an HSA executable of its
own, and each kernel's descriptor taken from its own executable. Checked end to end against the
stand-in libhsa-runtime64 (tests/fakehsa/fakehsa.c, symbols scoped to their object) on every test
and benchmark shape: the packet's kernel object, block, grid, LDS (static + Triton's shared) and
the whole kernarg segment, explicit and hidden arguments, rebuilt here from each object's own
metadata note."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest
from conftest import build_stub, embedded_triton, run_script
from test_abi_triton import ROOT, WAVE, amdgpu_metadata, artifacts, expected_kernarg

from submitgen.pipeline import BuildOptions, build
from submitgen.render import provenance

pytest.importorskip("triton", reason="the [triton] extra compiles the specializations")

TESTS = Path(__file__).resolve().parent
PROJECT = ROOT / "kernels" / "mxfp4_mm"
PACKET = struct.Struct("<HHHHHHIIIIIQQQQ")


@pytest.fixture(scope="module")
def fakehsa(tmp_path_factory) -> Path:
    return build_stub(tmp_path_factory, "fakehsa")


def hidden_values(meta: dict, grid, block, lds) -> dict[int, bytes]:
    """Code object v5 hidden arguments as the HIP runtime fills them; 0 for those an own-queue
    dispatcher cannot honour."""
    values = {"hidden_grid_dims": 3, "hidden_dynamic_lds_size": lds}
    for i, axis in enumerate("xyz"):
        values[f"hidden_block_count_{axis}"] = grid[i]
        values[f"hidden_group_size_{axis}"] = block[i]
    return {a[".offset"]: values.get(a[".value_kind"], 0).to_bytes(a[".size"], "little")
            for a in meta[".args"] if a[".value_kind"].startswith("hidden_")}


@pytest.mark.slow
def test_several_objects_through_the_aql_launcher(fakehsa, tmp_path):
    sub = tmp_path / "submission.py"
    built = build(BuildOptions(problem="mxfp4-mm", output=sub, kernels=PROJECT, launcher="aql",
                               allow_own_queue=True))
    table, arts = embedded_triton(built.text), artifacts(PROJECT)
    names = list(table)
    images = [arts[n].image for n in names]
    assert provenance.read(built.text).code_objects == tuple(hashlib.sha256(i).hexdigest() for i in images)
    metas = [amdgpu_metadata(i)["amdhsa.kernels"][0] for i in images]
    assert len({m[".symbol"] for m in metas}) < len(metas), "the test needs objects sharing a symbol name"
    symbols = ";".join(f"{i}:{m['.symbol']}={m['.kernarg_segment_size']},{m['.group_segment_fixed_size']},"
                       f"{m['.private_segment_fixed_size']}" for i, m in enumerate(metas))

    log, result = tmp_path / "hsa.log", tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if k != "SUBMITGEN_HIP_LIBRARY"}
    env.update(SUBMITGEN_HSA_LIBRARY=str(fakehsa), SUBMITGEN_FAKEHSA_LOG=str(log),
               SUBMITGEN_FAKEHSA_SYMBOLS=symbols)
    r = run_script(TESTS / "abi_driver.py", str(sub), "mxfp4-mm", str(result), "all", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    result = json.loads(result.read_text())

    readers = [c for c in calls if c["call"] == "hsa_code_object_reader_create_from_memory"]
    assert [bytes.fromhex(c["hex"]) for c in readers] == images, "every object read once, at import, in order"
    loads = [c for c in calls if c["call"] == "hsa_executable_load_agent_code_object"]
    assert [c["object"] for c in loads] == list(range(len(images))), "one executable per object"
    executable_object = {c["executable"]: c["object"] for c in loads}
    lookups = [c for c in calls if c["call"] == "hsa_executable_get_symbol_by_name"]
    assert [(executable_object[c["executable"]], c["name"]) for c in lookups] == [
        (i, m[".symbol"]) for i, m in enumerate(metas)], "each symbol looked up in its own executable"
    descriptor = {names[executable_object[c["executable"]]]: c["kernel_object"] for c in lookups}
    assert len(set(descriptor.values())) == len(names)
    (signal,) = [c["signal"] for c in calls if c["call"] == "hsa_signal_create"]

    packets = [c for c in calls if c["call"] == "packet"]
    assert len(packets) == sum(len(s["launches"]) for s in result["shapes"])
    it = iter(packets)
    for shape in result["shapes"]:
        label, seen = shape["label"], {}
        for planned in shape["launches"]:
            got, name = next(it), planned["kernel"]
            meta, art = metas[names.index(name)], arts[name]
            grid = list(planned["grid"]) + [1] * (3 - len(planned["grid"]))
            block = [art.spec.num_warps * WAVE, 1, 1]
            lds = art.shared if planned["lds"] is None else planned["lds"]
            (_header, setup, wx, wy, wz, _r0, gx, gy, gz, private, group, kernel_object, _kernarg, _r2,
             completion) = PACKET.unpack(bytes.fromhex(got["packet"]))
            assert kernel_object == descriptor[name], f"{label}: {name} dispatched another object's kernel"
            assert (setup, [wx, wy, wz], completion) == (3, block, signal), label
            assert [gx, gy, gz] == [g * b for g, b in zip(grid, block)], f"{label}: grid in work-items"
            assert lds >= art.shared, f"{label}: {name} gets less LDS than Triton's shared"
            assert group == meta[".group_segment_fixed_size"] + lds, f"{label}: {name} static + dynamic LDS"
            assert private == meta[".private_segment_fixed_size"]
            have = bytearray.fromhex(got["kernarg"])
            assert len(have) == meta[".kernarg_segment_size"], f"{name}: the whole kernarg segment"
            explicit, wildcard = expected_kernarg(meta, planned["args"], shape,
                                                  (art.global_scratch, art.profile_scratch))
            want = bytearray(meta[".kernarg_segment_size"])
            want[:len(explicit)] = explicit
            for offset, data in hidden_values(meta, grid, block, lds).items():
                want[offset:offset + len(data)] = data
            for off, key in wildcard:
                ptr = struct.unpack_from("<Q", have, off)[0]
                assert ptr and seen.setdefault(key, ptr) == ptr, f"{label}: {name} workspace at {off}"
                have[off:off + 8] = bytes(8)
            assert bytes(have) == bytes(want), f"{name} ({label}): kernarg bytes differ"
    assert next(it, None) is None
