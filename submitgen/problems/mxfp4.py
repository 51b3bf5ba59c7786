"""The MXFP4 format as the leaderboards use it (docs/mxfp4.md; moe-mxfp4's weight scale rule:
docs/moe-mxfp4.md): e2m1 values in packed pairs, one e8m0 scale per 32 elements, and aiter's two
layouts. Written from those rules only, as grid arithmetic (counting the midpoints below a value),
so that it checks the bit-trick code in submitgen/problems/fallbacks/ independently."""

from __future__ import annotations

import torch

from submitgen.errors import ProblemError

BLOCK = 32
"""Elements per e8m0 scale."""

E2M1_VALUES: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)

FP4X2 = getattr(torch, "float4_e2m1fn_x2", torch.uint8)
"""aiter's ``dtypes.fp4x2``: ``torch.float4_e2m1fn_x2`` where torch has it, else uint8."""
E8M0 = torch.float8_e8m0fnu


def pad_to(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


def e2m1_table(device: torch.device | str = "cpu") -> torch.Tensor:
    """The 16 e2m1 codes as float32 (codes 8..15 are the negatives, 8 is -0.0)."""
    pos = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)
    return torch.cat([pos, -pos])


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """View an fp4x2 / e8m0 / uint8 tensor as its raw bytes (no copy)."""
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def scale_exponents(amax: torch.Tensor) -> torch.Tensor:
    """The unbiased scale exponent (int32) of blocks whose absolute maximum is ``amax`` (float32).

    ``frexp`` gives amax = f * 2^e with f in [0.5, 1): floor(log2(amax)) = e - 1, and the
    ``+0x200000`` rounding adds one when 2f >= 1.75."""
    amax = amax.float()
    f, e = torch.frexp(amax)
    exp = e.to(torch.int32) - 1 + (f >= 0.875).to(torch.int32) - 2
    exp = torch.where(amax == 0, -127, exp)
    exp = torch.where(torch.isfinite(amax), exp, 127)  # inf/NaN: the bit rule gives log2 = inf
    return exp.clamp(-127, 127)


def per_1x32_scale_exponents(amax: torch.Tensor) -> torch.Tensor:
    """The unbiased scale exponent (int32) aiter's ``per_1x32_f4_quant`` gives blocks of absolute
    maximum ``amax``: e8m0 of ``amax / 4``, i.e. floor(log2(amax)) - 2, plus one when the mantissa
    of amax is >= 1.5 (``frexp``'s f >= 0.75). A zero block gets byte 0 (2^-127)."""
    amax = amax.float()
    f, e = torch.frexp(amax)
    exp = e.to(torch.int32) - 1 + (f >= 0.75).to(torch.int32) - 2
    exp = torch.where(amax == 0, -127, exp)
    exp = torch.where(torch.isfinite(amax), exp, 128)  # inf/NaN: byte 0xFF (NaN)
    return exp.clamp(-127, 128)


_SCALE_RULES = {"dynamic": scale_exponents, "per_1x32": per_1x32_scale_exponents}


def _magnitude_codes(a: torch.Tensor, ties: str) -> torch.Tensor:
    """e2m1 codes (uint8) of the magnitudes ``a``, already divided by their scale: the number of
    grid midpoints below each; a value exactly on a midpoint counts it (rounds up) when
    ``ties="up"``, or when the code above is even with ``ties="even"`` (midpoints 0.75, 1.75, 3.5
    lie below the even codes 2, 4, 6). Everything above the last midpoint, 6 and beyond included,
    gets code 7 (6.0): saturation."""
    if ties not in ("even", "up"):
        raise ProblemError(f"mxfp4 rounding: ties must be 'even' or 'up', got {ties!r}")
    codes = torch.zeros(a.shape, dtype=torch.uint8, device=a.device)
    above = torch.empty(a.shape, dtype=torch.bool, device=a.device)
    for i, mid in enumerate(_MIDPOINTS):
        (torch.ge if ties == "up" or i % 2 == 1 else torch.gt)(a, mid, out=above)
        codes.add_(above.view(torch.uint8))
    return codes


def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """[..., 2j] low nibble, [..., 2j+1] high nibble -> uint8 [..., K/2]."""
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    """uint8 [..., K/2] -> codes uint8 [..., K]."""
    b = as_bytes(packed)
    return torch.stack([b & 0xF, b >> 4], dim=-1).flatten(-2)


def quantize(x: torch.Tensor, ties: str = "even", out: tuple[torch.Tensor, torch.Tensor] | None = None,
             scale_rule: str = "dynamic") -> tuple[torch.Tensor, torch.Tensor]:
    """MXFP4-quantize a 2-D tensor [M, K] (K a multiple of 32). ``scale_rule``: "dynamic" (the
    ``+0x200000`` rule of :func:`scale_exponents`) or "per_1x32" (:func:`per_1x32_scale_exponents`).

    Returns (packed uint8 [M, K/2], e8m0 bytes uint8 [M, K/32]), both unpadded and row-major.
    With ``out`` the results are written into those two uint8 tensors instead."""
    if x.dim() != 2 or x.shape[1] % BLOCK:
        raise ProblemError(
            f"mxfp4 quantize: expected a 2-D tensor with K % 32 == 0, got shape {tuple(x.shape)}"
        )
    if scale_rule not in _SCALE_RULES:
        raise ProblemError(
            f"mxfp4 quantize: scale_rule must be one of {sorted(_SCALE_RULES)}, got {scale_rule!r}"
        )
    m, k = x.shape
    blocks = x.float().reshape(m, k // BLOCK, BLOCK)
    mag = blocks.abs()
    exp = _SCALE_RULES[scale_rule](mag.amax(dim=-1))
    mag *= torch.exp2(-exp.float()).unsqueeze(-1)
    codes = (_magnitude_codes(mag, ties) | (torch.signbit(blocks).to(torch.uint8) << 3)).reshape(m, k)
    if out is None:
        return pack_nibbles(codes), (exp + 127).to(torch.uint8)
    out[0].copy_(pack_nibbles(codes))
    out[1].copy_(exp + 127)
    return out


def dequantize(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """float32 [M, K] from packed fp4 [M, K/2] and row-major e8m0 scales [>=M, >=K/32] (padding
    beyond the data is ignored)."""
    codes = unpack_nibbles(packed)
    m, k = codes.shape
    s = as_bytes(scales)[:m, : k // BLOCK]
    vals = e2m1_table(codes.device)[codes.long()].reshape(m, k // BLOCK, BLOCK)
    return (vals * torch.exp2(s.float() - 127.0).unsqueeze(-1)).reshape(m, k)


# --- aiter layouts -------------------------------------------------------------------------------

def shuffle_weight(w: torch.Tensor) -> torch.Tensor:
    """aiter ``shuffle_weight(w, layout=(16, 16))`` on packed fp4 bytes [N, K/2]: each 16-row x 32-byte
    tile is stored as two [16 rows x 16 bytes] halves. Same shape and dtype as ``w``."""
    b = as_bytes(w)
    n, kb = b.shape
    if n % 16 or kb % 32:
        raise ProblemError(f"shuffle_weight: need N % 16 == 0 and K/2 % 32 == 0, got [{n}, {kb}]")
    s = b.view(n // 16, 16, kb // 32, 2, 16).permute(0, 2, 3, 1, 4).contiguous().view(n, kb)
    return s.view(w.dtype)


def unshuffle_weight(s: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`shuffle_weight`."""
    b = as_bytes(s)
    n, kb = b.shape
    w = b.view(n // 16, kb // 32, 2, 16, 16).permute(0, 3, 1, 2, 4).contiguous().view(n, kb)
    return w.view(s.dtype)


def shuffle_scales(scales: torch.Tensor) -> torch.Tensor:
    """aiter ``e8m0_shuffle``: zero-pad e8m0 [M, K/32] to [pad256(M), pad8(K/32)], then permute each
    32-row x 8-column tile. Returns e8m0."""
    b = as_bytes(scales)
    m, n = b.shape
    sm, sn = pad_to(m, 256), pad_to(n, 8)
    padded = torch.zeros((sm, sn), dtype=torch.uint8, device=b.device)
    padded[:m, :n] = b
    out = padded.view(sm // 32, 2, 16, sn // 8, 2, 4).permute(0, 3, 5, 2, 4, 1).contiguous()
    return out.view(sm, sn).view(E8M0)


def unshuffle_scales(
    shuffled: torch.Tensor, rows: int | None = None, cols: int | None = None
) -> torch.Tensor:
    """Inverse of :func:`shuffle_scales`; with ``rows``/``cols`` the padding is cut off. Returns uint8."""
    b = as_bytes(shuffled)
    sm, sn = b.shape
    out = b.view(sm // 32, sn // 8, 4, 16, 2, 2).permute(0, 5, 3, 1, 4, 2).contiguous().view(sm, sn)
    return out[: sm if rows is None else rows, : sn if cols is None else cols]
