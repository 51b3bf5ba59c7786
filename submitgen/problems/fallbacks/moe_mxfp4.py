# Pure-torch path for amd-moe-mxfp4: runs on CPU or any GPU, reads its inputs without changing them.
# The leaderboard's fused_moe pipeline, one expert at a time: the activations quantized to MXFP4 per
# 32 values (block amax rounded up by (bits + 0x200000) & 0xFF800000, scale exponent floor(log2) - 2,
# e2m1 rounding half up, saturating at 6); gate/up from the raw fp4 weights and their 2-D e8m0
# scales; silu(gate) * up stored as bf16 and re-quantized the same way; down times the routing weight,
# summed over the token's slots in float32, stored in the bf16 output (round to nearest even).
import torch

_SG_MOE_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _sg_moe_act(x):
    """float32 [R, C]: x quantized per 32 along C with round half up, dequantized."""
    rows, cols = x.shape
    blk = x.float().reshape(rows, cols // 32, 32)
    top = (blk.abs().amax(dim=-1, keepdim=True).view(torch.int32) + 0x200000) & -0x800000
    scale = torch.exp2((torch.floor(torch.log2(top.view(torch.float32))) - 2.0).clamp(-127.0, 127.0))
    mag = blk.abs() / scale
    # From 1 up the e2m1 grid keeps one mantissa bit: adding half of the dropped bits' range to the
    # float32 pattern and clearing them rounds half up (aiter's ((e<<2)|(m>>21)) + 1) >> 1).
    high = ((mag.view(torch.int32) + 0x200000) & -0x400000).view(torch.float32).clamp(max=6.0)
    low = ((mag >= 0.25).float() + (mag >= 0.75).float()) * 0.5
    return (torch.copysign(torch.where(mag >= 1.0, high, low), blk) * scale).reshape(rows, cols)


def _sg_moe_weight(w, scale, e):
    """float32 [N, K] of expert e from fp4x2 [E, N, K/2] and e8m0 [E*N, K/32]."""
    raw = w.view(torch.uint8)[e]
    n, half = raw.shape
    table = torch.tensor(_SG_MOE_E2M1, dtype=torch.float32, device=raw.device)
    vals = table[torch.stack([raw & 0xF, raw >> 4], dim=-1).long()].reshape(n, half // 16, 32)
    exps = scale.view(torch.uint8)[e * n : (e + 1) * n].float() - 127.0
    return (vals * torch.exp2(exps).unsqueeze(-1)).reshape(n, 2 * half)


def _sg_fallback(data):
    hidden, gate_up, down, gate_up_scale, down_scale = data[:5]
    topk_weights, topk_ids = data[9], data[10]
    slots_per_token = topk_ids.shape[1]
    d_expert = gate_up.shape[1] // 2
    ids = topk_ids.reshape(-1).long()
    routing = topk_weights.reshape(-1).float()
    a1 = _sg_moe_act(hidden)
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for e in torch.unique(ids).tolist():
        slot = torch.nonzero(ids == e).squeeze(1)
        token = slot // slots_per_token
        gu = a1[token] @ _sg_moe_weight(gate_up, gate_up_scale, e).T
        inter = torch.empty((gu.shape[0], d_expert), dtype=torch.bfloat16, device=gu.device)
        torch.mul(torch.nn.functional.silu(gu[:, :d_expert]), gu[:, d_expert:], out=inter)
        y = _sg_moe_act(inter) @ _sg_moe_weight(down, down_scale, e).T
        out.index_add_(0, token, y * routing[slot].unsqueeze(1))
    return torch.empty(hidden.shape, dtype=torch.bfloat16, device=hidden.device).copy_(out)
