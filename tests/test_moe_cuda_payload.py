"""`submitgen build moe-mxfp4 --target cuda --arch sm_90` (the file the H200 checks run through) fits
kernelbot's 65,535-char dispatch payload, as the gfx950 build does. The sm_90 objects are the larger
ones (Triton's Hopper lowering of the e2m1 widening), so a kernel or tile change can push this file
over the limit while the gfx950 build still fits."""

from __future__ import annotations

import pytest

pytest.importorskip("triton", reason="the [triton] extra compiles the specializations")


@pytest.mark.slow
@pytest.mark.parametrize("default_build_sm90", ["moe-mxfp4"], indirect=True)
def test_sm_90_moe_build_fits_the_payload_budget(default_build_sm90):
    result = default_build_sm90  # the session's build (conftest), which test_kernelguard checks too
    assert result.target_id.endswith("sm_90a")
    p = result.payload
    assert p.limit == 65_535
    assert p.chars == p.baseline + p.submission_chars
    assert p.chars <= p.limit, f"{p.chars} chars, {p.chars - p.limit} over"
    assert p.headroom == p.limit - p.chars >= 0
    names = [k.name for k in result.kernels]
    assert names == ["route", "gate_up_s", "gate_up_l", "down_s", "down_l", "to_bf16"]
