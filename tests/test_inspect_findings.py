"""inspect's verdicts: the exit status (1 on any error finding), both ``amdhsa.target`` spellings,
and the LDS a launch adds (``--lds``, a submission's provenance) counted against the limit."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.readers.amd.reader import read_code_object

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
from elfedit import with_metadata  # noqa: E402

SRC = r"""
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void k(float* out) { out[__builtin_amdgcn_workitem_id_x()] = 1.0f; }
"""


def inspect(*args: str):
    return CliRunner().invoke(cli, ["inspect", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def co(compile_co):
    return compile_co(SRC)


def _target(spelling: str):
    def edit(doc):
        doc["amdhsa.target"] = spelling
    return edit


@pytest.mark.parametrize("spelling,mismatch", [
    ("amdgcn-amd-amdhsa--gfx950", False),
    ("amdgpu9.50-amd-amdhsa-unknown-gfx950", False),
    ("amdgpu9.42-amd-amdhsa-unknown-gfx942", True),
    ("amdgcn-amd-amdhsa--gfx950:xnack+", True),
])
def test_both_target_spellings(co, spelling, mismatch):
    found = read_code_object(with_metadata(co, _target(spelling))).findings
    assert any(f.code == "target-mismatch" for f in found) == mismatch, found


def test_exit_status_is_one_on_an_error_finding(co, tmp_path):
    good = tmp_path / "good.co"
    good.write_bytes(co)
    r = inspect(str(good))
    assert r.exit_code == 0 and "error:" not in r.output
    assert json.loads(inspect("--json", str(good)).output)["exit_status"] == 0
    r = inspect(str(good), "--lds", str(196608))
    assert r.exit_code == 1
    text = " ".join(r.output.split())
    assert "occupancy on gfx950, block 256, dynamic LDS 196608 B (--lds): cannot launch" in text
    assert (
        "error: on gfx950 with a block of 256: LDS 196608 bytes exceeds gfx950's 163840 bytes per workgroup"
        in text
    )
    doc = json.loads(inspect("--json", str(good), "--lds", "196608").output)
    occ = doc["code_objects"][0]["kernels"][0]["occupancy"]
    assert doc["exit_status"] == 1 and not occ["launchable"] and occ["dynamic_lds"] == 196608
    r = inspect(str(good), "--lds", str(160 * 1024))
    assert r.exit_code == 0 and "dynamic LDS 163840 B (--lds): 1 waves/SIMD" in " ".join(r.output.split())


def test_lds_from_the_provenance_line(co, tmp_path):
    b64 = base64.b64encode(zlib.compress(co)).decode()
    sub = tmp_path / "submission.py"
    sub.write_text(
        f"#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
        f"# submitgen-provenance: version=0.1.0 arch=gfx950 kernels=k co={hashlib.sha256(co).hexdigest()} "
        f'lds=0/k:196608\nCO = "{b64}"\n'
    )
    r = inspect(str(sub))
    assert r.exit_code == 1
    assert "dynamic LDS 196608 B (provenance): cannot launch" in " ".join(r.output.split())
