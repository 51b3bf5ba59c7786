"""RDNA code objects (GFX10+): the VGPR granule depends on the wavefront size, so a wave32 kernel
must not be reported as allocating fewer VGPRs than its metadata asks for."""

from __future__ import annotations

import pytest

from submitgen.readers.amd.descriptor import vgpr_encoding_granule
from submitgen.readers.amd.reader import read_code_object

PRESSURE = """
#include <submitgen/device.h>
extern "C" __global__ void many(float* out, const float* in, int n) {
    float acc[24];
    for (int j = 0; j < 24; j++) acc[j] = in[threadIdx.x + j * n];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 24; j++) acc[j] = acc[j] * in[i] + acc[(j + 1) % 24];
    for (int j = 0; j < 24; j++) out[threadIdx.x + j * n] = acc[j];
}
"""


@pytest.mark.parametrize("arch,flags,wave32", [
    ("gfx1100", (), True),
    ("gfx1100", ("-mwavefrontsize64",), False),
    ("gfx950", (), False),
])
def test_descriptor_vgprs_agree_with_metadata(compile_co, arch, flags, wave32):
    co = read_code_object(compile_co(PRESSURE, arch=arch, flags=flags), label=arch)
    (k,) = co.kernels
    assert k.descriptor.wave32 is wave32
    assert k.vgpr_count > 8
    granule = vgpr_encoding_granule(arch, wave32=wave32)
    assert k.descriptor.vgpr_alloc >= -(-k.vgpr_count // granule) * granule
    assert not [f for f in co.findings if f.code == "descriptor-mismatch"], co.findings


def test_granules():
    assert vgpr_encoding_granule("gfx950", wave32=False) == 8
    assert vgpr_encoding_granule("gfx908", wave32=False) == 4
    assert vgpr_encoding_granule("gfx1201", wave32=True) == 8
    assert vgpr_encoding_granule("gfx1201", wave32=False) == 4
