"""The readers on real third-party code objects (tests/corpus/aiter, see its README): every object
reads cleanly, ``inspect --json`` agrees field by field with ``llvm-readelf --notes``, and the
facts these objects exercise (absent keys, derived AGPRs, 512 VGPRs, ``.reqd_workgroup_size``,
Triton sidecars) come out right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from readelf_notes import find_readelf, metadata

from submitgen.cli import cli
from submitgen.readers.amd.reader import read_code_object

CORPUS = Path(__file__).parent / "corpus" / "aiter"
OBJECTS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".co", ".hsaco"))
F4GEMM = CORPUS / "hsa/gfx950/f4gemm/f4gemm_bf16_per1x32Fp4_BpreShuffle_128x128.co"
TRITON = CORPUS / "triton/gemm_afp4_wfp4_M64-N2560-K8192.hsaco"
READELF = find_readelf(F4GEMM)


def inspect(*args: str):
    return CliRunner().invoke(cli, ["inspect", *args], catch_exceptions=False)


def inspect_json(*args: str) -> dict:
    r = inspect("--json", *args)
    return json.loads(r.output)


def test_corpus_covers_what_it_claims():
    cos = [read_code_object(p.read_bytes(), label=str(p)) for p in OBJECTS]
    assert 20 <= len(cos) <= 40
    assert {co.header.code_object_version for co in cos} == {4, 5, 6}
    assert {co.processor for co in cos} == {"gfx942", "gfx950"}
    kernels = [k for co in cos for k in co.kernels]
    assert {84, 88, 158} <= {len(k.explicit_args) for k in kernels}
    assert any(k.agpr_count for k in kernels) and any(k.agpr_count_derived for k in kernels)
    assert all((p.with_suffix(".json")).is_file() for p in OBJECTS if p.suffix == ".hsaco")


def test_every_object_reads_without_error_findings():
    doc = inspect_json(*map(str, OBJECTS))
    assert doc["exit_status"] == 0 and len(doc["code_objects"]) == len(OBJECTS)
    for co in doc["code_objects"]:
        errors = [f for f in co["findings"] if f["severity"] == "error"]
        errors += [f for k in co["kernels"] for f in k["findings"] if f["severity"] == "error"]
        assert errors == [], (co["source"], errors)


def _compare(ours: dict, theirs: dict, where: str) -> int:
    """Every key readelf prints must be in ours with the same value; returns the fields compared."""
    n = 0
    for key, want in theirs.items():
        got = ours.get(key.lstrip("."), "<missing>")
        assert got == want, f"{where} {key}: readelf says {want!r}, inspect --json says {got!r}"
        n += 1
    return n


@pytest.mark.slow
@pytest.mark.skipif(
    READELF is None, reason="no llvm-readelf that prints AMDGPU metadata (apt-get install llvm-22)"
)
def test_inspect_json_agrees_with_llvm_readelf():
    doc = inspect_json(*map(str, OBJECTS))
    compared = 0
    for path, co in zip(OBJECTS, doc["code_objects"]):
        theirs = metadata(READELF, path)
        kernels = theirs.pop("amdhsa.kernels")
        compared += _compare(
            co["metadata"], {k.removeprefix("amdhsa."): v for k, v in theirs.items()}, path.name
        )
        by_name = {k["name"]: k for k in co["kernels"]}
        assert sorted(by_name) == sorted(k[".name"] for k in kernels), path
        for k in kernels:
            mine = by_name[k[".name"]]
            args = k.pop(".args", [])
            compared += _compare(mine, k, f"{path.name} {k['.name']}")
            assert len(mine["args"]) == len(args)
            for i, (a, b) in enumerate(zip(mine["args"], args)):
                compared += _compare(a, b, f"{path.name} {k['.name']} arg {i}")
    print(f"{compared} fields compared with {READELF} over {len(OBJECTS)} objects")
    assert compared > 5000


def test_absent_keys_are_null_and_agprs_derived():
    doc = inspect_json(str(F4GEMM))
    [k] = doc["code_objects"][0]["kernels"]
    assert k["agpr_count"] is None and k["sgpr_spill_count"] is None and k["vgpr_spill_count"] is None
    assert k["uniform_work_group_size"] is None
    assert k["agpr_count_derived"] == 256 and k["descriptor"]["accum_offset"] == 256
    text = " ".join(inspect(str(F4GEMM)).output.split())
    assert "AGPR 256 (derived from the descriptor)" in text and "spills - VGPR - SGPR" in text
    triton = inspect_json(str(TRITON))["code_objects"][0]["kernels"][0]
    assert triton["agpr_count"] == 64 and triton["agpr_count_derived"] is None


def test_512_vgprs_at_block_64_is_one_wave_per_simd():
    r = inspect("--json", str(F4GEMM), "--block", "64")
    occ = json.loads(r.output)["code_objects"][0]["kernels"][0]["occupancy"]
    assert occ["waves_per_simd"] == 1 and occ["launchable"]
    assert (
        occ["limits"]["vgpr"]["waves_per_simd"] == 1
        and "512/512 -> 1 waves/SIMD" in occ["limits"]["vgpr"]["detail"]
    )


def test_reqd_workgroup_size_is_shown_defaults_the_block_and_flags_a_contradiction():
    r = inspect(str(F4GEMM))
    text = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "required block (256, 1, 1)" in text and "occupancy on gfx950, block 256:" in text
    r = inspect(str(F4GEMM), "--block", "64")
    assert r.exit_code == 1
    assert ("error: a block of 64 threads contradicts .reqd_workgroup_size (256, 1, 1) (256 threads)"
            in " ".join(r.output.split()))
    assert all(len(line) <= 100 for line in r.output.splitlines())


def test_triton_sidecar_gives_the_dynamic_lds():
    k = inspect_json(str(TRITON))["code_objects"][0]["kernels"][0]
    assert k["occupancy"]["dynamic_lds"] == 36864
    assert k["occupancy"]["dynamic_lds_source"] == f"sidecar {TRITON.with_suffix('.json').name}"
    r = inspect(str(TRITON))
    assert "dynamic LDS 36864 B (sidecar gemm_afp4_wfp4_M64-N2560-K8192.json)" in " ".join(r.output.split())
