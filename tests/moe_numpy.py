"""A second formulation of the amd-moe-mxfp4 pipeline, written for the tests only: numpy, float64,
a dense loop over the experts, reading the RAW (unshuffled) fp4 weights and 2-D scales, with the
e2m1 grid rounding done by ``searchsorted`` on the midpoints. It shares no code with submitgen."""

from __future__ import annotations

import numpy as np
import torch

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
MIDPOINTS = (E2M1[1:] + E2M1[:-1]) / 2


def raw_bytes(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.uint8).numpy()


def dequant(packed: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """float64 [N, K] from fp4 bytes [N, K/2] (even element in the low nibble) and e8m0 bytes [N, K/32]."""
    n, kb = packed.shape
    codes = np.empty((n, 2 * kb), dtype=np.uint8)
    codes[:, 0::2], codes[:, 1::2] = packed & 0xF, packed >> 4
    vals = np.where(codes & 8, -1.0, 1.0) * E2M1[codes & 7]
    return vals * np.repeat(np.exp2(scales.astype(np.float64) - 127.0), 32, axis=1)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to bf16 precision (8 significant bits, ties to even)."""
    mant, exp = np.frexp(x)
    return np.ldexp(np.rint(mant * 256.0) / 256.0, exp)


def grid_codes(q: np.ndarray, ties_up: bool) -> np.ndarray:
    """e2m1 magnitude codes of |values| already divided by their scale, saturating at 6."""
    code = np.searchsorted(MIDPOINTS, q, side="right" if ties_up else "left")
    if not ties_up:  # ties to the even code: the midpoints below codes 2, 4 and 6 round up
        code = code + np.isin(q, MIDPOINTS[1::2])
    return np.minimum(code, 7)


def act_qdq(x: np.ndarray) -> np.ndarray:
    """MXFP4 quantize + dequantize of activations [R, C] per 32 along C: amax's float32 bits plus
    0x200000, masked to a power of two, exponent - 2 is the scale; values rounded half up."""
    r, c = x.shape
    blocks = x.reshape(r, c // 32, 32)
    amax = np.abs(blocks).max(axis=-1).astype(np.float32)
    top = ((amax.view(np.uint32).astype(np.int64) + 0x200000) & 0xFF800000).astype(np.uint32).view(np.float32)
    with np.errstate(divide="ignore"):
        s = np.clip(np.floor(np.log2(top.astype(np.float64))) - 2.0, -127.0, 127.0)[..., None]
    code = grid_codes(np.abs(blocks) * np.exp2(-s), ties_up=True)
    return (np.sign(blocks) * E2M1[code] * np.exp2(s)).reshape(r, c)


def weight_quant(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """aiter per_1x32_f4_quant of float32 [R, C]: (signed codes uint8 [R, C], e8m0 bytes [R, C/32]).
    The scale byte is the float32 exponent field of amax / 4, plus one when its top mantissa bit is
    set; the data is divided by the scale and rounded to the nearest even code."""
    r, c = x.shape
    blocks = x.astype(np.float32).reshape(r, c // 32, 32)
    bits = (np.abs(blocks).max(axis=-1) / np.float32(4.0)).view(np.uint32)
    byte = ((bits >> 23) & 0xFF) + ((bits >> 22) & 1)
    q = np.abs(blocks.astype(np.float64)) / np.exp2(byte.astype(np.float64) - 127.0)[..., None]
    codes = grid_codes(q, ties_up=False) | (np.signbit(blocks) << 3)
    return codes.reshape(r, c).astype(np.uint8), byte.astype(np.uint8)


def moe(data: tuple) -> np.ndarray:
    """float64 [M, H] before the final bf16 rounding (apply :func:`bf16_round` to compare)."""
    hidden = data[0].float().numpy().astype(np.float64)
    gu, dn = raw_bytes(data[1]), raw_bytes(data[2])
    gu_s, dn_s = raw_bytes(data[3]), raw_bytes(data[4])
    weights, ids = data[9].numpy().astype(np.float64), data[10].numpy()
    n_experts, n2, _ = gu.shape
    hp, dp = dn.shape[1], n2 // 2
    a1 = act_qdq(hidden)
    out = np.zeros(hidden.shape)
    for e in range(n_experts):
        tok, slot = np.nonzero(ids == e)
        if tok.size == 0:
            continue
        w_gu = dequant(gu[e], gu_s[e * n2 : (e + 1) * n2])
        w_dn = dequant(dn[e], dn_s[e * hp : (e + 1) * hp])
        g, u = a1[tok] @ w_gu[:dp].T, a1[tok] @ w_gu[dp:].T
        inter = bf16_round(g / (1.0 + np.exp(-g)) * u)
        y = act_qdq(inter) @ w_dn.T
        np.add.at(out, tok, y * weights[tok, slot][:, None])
    return out
