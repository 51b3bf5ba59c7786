"""`submitgen build moe-mxfp4 --target cuda --arch sm_90` (the file the H200 checks run through) fits
kernelbot's 65,535-char dispatch payload, as the gfx950 build does. The sm_90 objects are the larger
ones (Triton's Hopper lowering of the e2m1 widening), so a kernel or tile change can push this file
over the limit while the gfx950 build still fits."""

from __future__ import annotations

import pytest

from submitgen.options import Target
from submitgen.pipeline import BuildOptions, build

pytest.importorskip("triton", reason="the [triton] extra compiles the specializations")


@pytest.mark.slow
def test_sm_90_moe_build_fits_the_payload_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    result = build(BuildOptions(problem="moe-mxfp4", target=Target.CUDA, arch="sm_90",
                                output=tmp_path / "moe_sm90.py"))
    assert result.target_id.endswith("sm_90a")
    p = result.payload
    assert p.limit == 65_535
    assert p.chars == p.baseline + p.submission_chars
    assert p.chars <= p.limit, f"{p.chars} chars, {p.chars - p.limit} over"
    assert p.headroom == p.limit - p.chars >= 0
    names = [k.name for k in result.kernels]
    assert names == ["route", "gate_up_s", "gate_up_l", "down_s", "down_l", "to_bf16"]
