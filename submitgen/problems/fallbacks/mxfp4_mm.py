# Pure-torch path for amd-mxfp4-mm: runs on CPU or any GPU, reads its inputs without changing them.
# A is quantized to MXFP4 as the leaderboard's reference does (aiter's Triton quantizer: block amax
# rounded up by (bits + 0x200000) & 0xFF800000, scale exponent floor(log2) - 2, round half to even,
# saturate at 6); B comes from B_q and the unshuffled B_scale_sh. Both are dequantized to float32 and
# multiplied, and the product is stored in a bf16 output as a kernel stores its float32 accumulator
# (round to nearest even).
import torch

_SG_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _sg_dequant_a(a):
    m, k = a.shape
    x = a.float().reshape(m, k // 32, 32)
    bits = x.abs().amax(dim=-1, keepdim=True).view(torch.int32)
    top = ((bits + 0x200000) & -0x800000).view(torch.float32)
    e = (torch.floor(torch.log2(top)) - 2.0).clamp(-127.0, 127.0)
    q = (x * torch.exp2(-e)).abs()
    # The e2m1 grid has step 0.5 below 2, 1 below 4, 2 above; torch.round rounds half to even,
    # which on these steps is the even code.
    step = torch.where(q < 2.0, 0.5, torch.where(q < 4.0, 1.0, 2.0))
    v = torch.minimum(torch.round(q / step) * step, torch.full_like(q, 6.0))
    return (torch.copysign(v, x) * torch.exp2(e)).reshape(m, k)


def _sg_dequant_b(b_q, b_scale_sh, k):
    n = b_q.shape[0]
    raw = b_q.view(torch.uint8)
    codes = torch.stack([raw & 0xF, raw >> 4], dim=-1).reshape(n, k).long()
    vals = torch.tensor(_SG_E2M1, dtype=torch.float32, device=raw.device)[codes]
    sm, sn = b_scale_sh.shape
    s = b_scale_sh.view(torch.uint8).view(sm // 32, sn // 8, 4, 16, 2, 2).permute(0, 5, 3, 1, 4, 2)
    s = s.reshape(sm, sn)[:n, : k // 32].float()
    return (vals.reshape(n, k // 32, 32) * torch.exp2(s - 127.0).unsqueeze(-1)).reshape(n, k)


def _sg_fallback(data):
    a, _b, b_q, _b_shuffle, b_scale_sh = data
    m, k = a.shape
    out = torch.empty((m, b_q.shape[0]), dtype=torch.bfloat16, device=a.device)
    return out.copy_(_sg_dequant_a(a) @ _sg_dequant_b(b_q, b_scale_sh, k).T)
