"""MXFP4 format helpers, the mxfp4-mm inputs and reference, and the fallback that submissions paste."""

from __future__ import annotations

import pytest
import torch

from submitgen.problems import get_problem, mxfp4

MM = get_problem("mxfp4-mm")


@pytest.fixture(scope="module")
def fallback():
    namespace: dict = {}
    exec(compile(MM.fallback_source, "fallback", "exec"), namespace)
    return namespace


# --- the format ----------------------------------------------------------------------------------

def test_e2m1_table():
    assert mxfp4.e2m1_table().tolist() == [0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6]
    assert torch.signbit(mxfp4.e2m1_table()[8])  # code 8 is -0


def test_pack_low_nibble_is_even_index():
    codes = torch.tensor([[1, 2, 7, 15]], dtype=torch.uint8)
    packed = mxfp4.pack_nibbles(codes)
    assert packed.tolist() == [[0x21, 0xF7]]
    assert torch.equal(mxfp4.unpack_nibbles(packed), codes)


def test_dequantize_bytes_and_scale():
    packed = torch.zeros((1, 16), dtype=torch.uint8)
    packed[0, 0] = 0x73          # element 0 = 1.5, element 1 = 6
    packed[0, 1] = 0x0E          # element 2 = -4
    scales = torch.tensor([[127 + 3]], dtype=torch.uint8)
    out = mxfp4.dequantize(packed, scales)
    assert out[0, :4].tolist() == [12.0, 48.0, -32.0, 0.0]


def _block(values):
    """One 32-element block holding ``values`` and zeros, with amax 5 so the scale exponent is 0."""
    x = torch.zeros(1, 32)
    x[0, : len(values)] = torch.tensor(values)
    x[0, 31] = 5.0 if max(abs(v) for v in values) <= 5 else 0.0
    return x


def test_scale_rule():
    amax = torch.tensor(
        [4.0, 5.0, 7.0, 1.74 * 8, 1.75 * 8, 1.0, 0.0, 2.0**-140, 1.5 * 2.0**127, float("inf")]
    )
    # floor(log2(amax rounded up at mantissa >= 1.75)) - 2, clamped to [-127, 127]
    assert mxfp4.scale_exponents(amax).tolist() == [0, 0, 1, 1, 2, -2, -127, -127, 125, 127]
    _, scales = mxfp4.quantize(torch.full((1, 32), 6.0))
    assert scales.tolist() == [[127 + 0]]   # 6 = 1.5 * 4 -> scale 2^0: 6 stays representable


def test_ties_go_to_even():
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -2.5, -5.0]
    x = _block(ties)
    even = mxfp4.dequantize(*mxfp4.quantize(x, "even"))[0, : len(ties)].tolist()
    up = mxfp4.dequantize(*mxfp4.quantize(x, "up"))[0, : len(ties)].tolist()
    assert even == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, -0.0, -2.0, -4.0]
    assert up == [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.5, -3.0, -6.0]


def test_saturation_and_grid_values_are_exact():
    x = _block([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, -6.0, 5.5, 6.9])
    x[0, 31] = 0.0  # amax 6.9 = 1.725 * 4 -> scale exponent 0
    out, scales = mxfp4.quantize(x)
    assert scales.tolist() == [[127]]
    assert mxfp4.dequantize(out, scales)[0, :9].tolist() == [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, -6.0, 6.0, 6.0]


@pytest.mark.parametrize("ties", ["even", "up"])
def test_quantization_error_bound(ties):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(64, 512, generator=g) * torch.exp2(torch.randint(-20, 20, (64, 1), generator=g).float()))
    x = x.to(torch.bfloat16)
    packed, scales = mxfp4.quantize(x, ties)
    deq = mxfp4.dequantize(packed, scales)
    scale = torch.exp2(scales.float() - 127).repeat_interleave(32, dim=1)
    q = x.float().abs() / scale
    half_step = torch.where(q < 2, 0.25, torch.where(q < 4, 0.5, 1.0))
    bound = torch.maximum(half_step, q - 6.0) * scale   # beyond 6 the value saturates
    assert ((deq - x.float()).abs() <= bound).all()
    assert (q < 8).all()                                 # the scale rule keeps |x|/scale below 8


def test_fallback_quantization_of_a_matches_ours(fallback):
    """The fallback's bit-trick quantizer against the grid quantizer here, on random values and on
    every tie of every binade."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 1024, generator=g).to(torch.bfloat16)
    # 32 values per row, amax 6 = 1.5 * 4: the scale is 2^row and every tie stays a tie
    grid = torch.tensor(
        [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.1, 5.9, 6.0, 0.3, 0.8, 1.3, 2.7, 4.5, 5.5] * 2
    )
    ties = grid.repeat(8, 1) * torch.exp2(torch.arange(-4, 4).float()).unsqueeze(1)
    ties = torch.cat([ties, -ties]).to(torch.bfloat16)
    for a in (x, ties):
        ours = mxfp4.dequantize(*mxfp4.quantize(a, "even"))
        theirs = fallback["_sg_dequant_a"](a)
        assert torch.equal(ours, theirs)


# --- layouts -------------------------------------------------------------------------------------

def test_weight_shuffle_positions_and_round_trip():
    n, kb = 32, 64
    w = (torch.arange(n * kb) % 251).to(torch.uint8).reshape(n, kb)
    s = mxfp4.shuffle_weight(w.view(mxfp4.FP4X2))
    assert s.dtype == mxfp4.FP4X2 and s.shape == (n, kb)
    flat = mxfp4.as_bytes(s).flatten()
    for row, col in ((0, 0), (5, 17), (17, 40), (31, 63)):
        n1, n2, k1, k2, k3 = row // 16, row % 16, col // 32, (col % 32) // 16, col % 16
        pos = (((n1 * (kb // 32) + k1) * 2 + k2) * 16 + n2) * 16 + k3
        assert flat[pos] == w[row, col]
    assert torch.equal(mxfp4.as_bytes(mxfp4.unshuffle_weight(s)), w)


def test_scale_shuffle_positions_padding_and_round_trip():
    m, n = 300, 18                       # pads to [512, 24]
    s = (torch.arange(m * n) % 200 + 1).to(torch.uint8).reshape(m, n)
    sh = mxfp4.shuffle_scales(s.view(mxfp4.E8M0))
    assert sh.dtype == mxfp4.E8M0 and sh.shape == (512, 24)
    flat, sn = mxfp4.as_bytes(sh).flatten(), 24
    for r, c in ((0, 0), (17, 5), (255, 17), (299, 9)):
        a, b, cc, d, e, f = r // 32, (r % 32) // 16, r % 16, c // 8, (c % 8) // 4, c % 4
        pos = ((((a * (sn // 8) + d) * 4 + f) * 16 + cc) * 2 + e) * 2 + b
        assert flat[pos] == s[r, c]
    back = mxfp4.unshuffle_scales(sh)
    assert torch.equal(back[:m, :n], s) and int(back[m:].sum()) == 0 and int(back[:, n:].sum()) == 0
    assert torch.equal(mxfp4.unshuffle_scales(sh, m, n), s)


# --- the problem ---------------------------------------------------------------------------------

def test_generate_input_layout():
    spec = {"m": 8, "n": 272, "k": 320, "seed": 7}
    a, b, b_q, b_shuffle, b_scale_sh = MM.generate_input(spec)
    assert (a.shape, a.dtype, b.shape, b.dtype) == ((8, 320), torch.bfloat16, (272, 320), torch.bfloat16)
    assert (b_q.shape, b_q.dtype, b_shuffle.shape, b_shuffle.dtype) == ((272, 160), mxfp4.FP4X2) * 2
    assert (b_scale_sh.shape, b_scale_sh.dtype) == ((512, 16), mxfp4.E8M0)
    packed, scales = mxfp4.quantize(b, "even")
    assert torch.equal(mxfp4.as_bytes(b_q), packed)
    assert torch.equal(mxfp4.as_bytes(mxfp4.unshuffle_weight(b_shuffle)), packed)
    assert torch.equal(mxfp4.unshuffle_scales(b_scale_sh, 272, 10), scales)
    again = MM.generate_input(spec)
    assert all(
        torch.equal(mxfp4.as_bytes(x), mxfp4.as_bytes(y))
        for x, y in zip(again, (a, b, b_q, b_shuffle, b_scale_sh))
    )
    assert not torch.equal(MM.generate_input({**spec, "seed": 8})[0], a)


def test_reference_is_the_dequantized_product():
    data = MM.generate_input({"m": 4, "n": 32, "k": 64, "seed": 2})
    a, b = data[0], data[1]
    a_deq = mxfp4.dequantize(*mxfp4.quantize(a)).double()
    b_deq = mxfp4.dequantize(*mxfp4.quantize(b)).double()
    expected = (a_deq @ b_deq.T).to(torch.bfloat16)
    assert MM.check(MM.reference(data), expected).max_abs_err <= 2 ** -7 * float(expected.abs().max())


def test_check_rule():
    ref = torch.tensor([[1.0, -2.0, 100.0, 0.0]], dtype=torch.bfloat16)
    assert MM.check(ref.clone(), ref).passed
    near = ref + torch.tensor([[0.019, 0.0, 0.9, -0.0099]])
    assert MM.check(near.to(torch.bfloat16), ref).passed
    res = MM.check(torch.tensor([[1.05, -2.0, 100.0, float("nan")]], dtype=torch.bfloat16), ref)
    assert not res.passed and res.mismatches == 2 and res.total == 4
    assert not MM.check(ref[:, :3], ref).passed and "SIZE MISMATCH" in MM.check(ref[:, :3], ref).message
    both_nan = torch.tensor([float("nan"), float("inf")])
    assert MM.check(both_nan.clone(), both_nan).passed


@pytest.mark.parametrize("spec", MM.tests, ids=MM.shape_label)
def test_fallback_passes_every_test_shape(spec, fallback, record_property):
    data = MM.generate_input(spec)
    before = [mxfp4.as_bytes(t).clone() for t in data]
    out = fallback["_sg_fallback"](data)
    assert all(torch.equal(mxfp4.as_bytes(t), c) for t, c in zip(data, before)), (
        "the fallback changed its inputs"
    )
    res = MM.check(out, data)
    record_property("check", res.message)
    assert out.dtype == torch.bfloat16 and res.passed, res.message


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 3], ids=["m=8 n=2112 k=7168", "m=256 n=2880 k=512"])
def test_ties_up_quantization_of_a_fails_the_check(index, fallback):
    """leaderboards.md §2 measured 13,931/16,896 and 546,322/737,280 mismatches for these shapes."""
    data = MM.generate_input(MM.tests[index])
    ref = MM.reference(data)
    up = MM.check(MM.reference(data, ties="up"), ref)
    assert not up.passed and up.mismatch_ratio > 0.5, up.message
    assert MM.check(fallback["_sg_fallback"](data), ref).passed
