"""The amd-moe-mxfp4 reference pipeline (aiter ``fused_moe`` with per-1x32 MXFP4, two stages) on the
CPU or any torch device, one expert at a time (docs/moe-mxfp4.md has the steps and their sources):
one expert's weights are dequantized at a time (float32, 117 MB for gate/up at H=7168,
d_expert=2048)."""

from __future__ import annotations

from typing import Any

import torch

from submitgen.errors import ProblemError
from submitgen.problems import mxfp4

ROUTING_STAGES = (1, 2)


def _unpack(data: Any) -> tuple[Any, ...]:
    if not isinstance(data, (tuple, list)) or len(data) != 12:
        raise ProblemError(
            f"moe-mxfp4: expected the 12-tuple (hidden_states, ..., topk_ids, config), "
            f"got {type(data).__name__} of length {len(data) if isinstance(data, (tuple, list)) else '-'}"
        )
    return tuple(data)


def quant_dequant(x: torch.Tensor, ties: str = "up") -> torch.Tensor:
    """float32 [R, C]: ``x`` MXFP4-quantized per 32 along C with the activation rule and dequantized."""
    packed, scales = mxfp4.quantize(x.float(), ties)
    return mxfp4.dequantize(packed, scales)


class ExpertWeights:
    """Dequantized (float32) weights of one expert, read from a shuffled fp4x2 tensor [E, N, K/2]
    and its shuffled 2-D e8m0 scales [E*N, K/32]."""

    def __init__(self, shuffled: torch.Tensor, scales_shuffled: torch.Tensor) -> None:
        self.weights = shuffled
        e, self.rows, kb = shuffled.shape
        self.cols = 2 * kb
        # The scale shuffle permutes 32-row tiles, never across experts (N % 256 == 0).
        self.scales = mxfp4.unshuffle_scales(scales_shuffled, e * self.rows, self.cols // mxfp4.BLOCK)

    def __getitem__(self, expert: int) -> torch.Tensor:
        packed = mxfp4.unshuffle_weight(self.weights[expert])
        rows = slice(expert * self.rows, (expert + 1) * self.rows)
        return mxfp4.dequantize(packed, self.scales[rows])


def _slots_by_expert(topk_ids: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
    """(expert, flat slot indices token*K + j) for every expert some slot routes to."""
    flat = topk_ids.reshape(-1).long()
    return [(int(e), torch.nonzero(flat == e).squeeze(1)) for e in torch.unique(flat).tolist()]


def _stage1(
    a1: torch.Tensor,
    gate_up: ExpertWeights,
    groups,
    k: int,
    weights: torch.Tensor,
    routing_stage: int,
    bf16_intermediate: bool,
) -> torch.Tensor:
    """The intermediate, one row per slot (token*K + j): float32 [M*K, Dp] holding bf16 values
    unless ``bf16_intermediate`` is off."""
    dp = gate_up.rows // 2
    inter = torch.zeros((a1.shape[0] * k, dp), dtype=torch.float32, device=a1.device)
    for expert, slots in groups:
        gu = a1[slots // k] @ gate_up[expert].T
        act = torch.nn.functional.silu(gu[:, :dp]) * gu[:, dp:]
        if routing_stage == 1:
            act = act * weights[slots].unsqueeze(1)
        inter[slots] = act.to(torch.bfloat16).float() if bf16_intermediate else act
    return inter


def reference(
    data: Any, ties: str = "up", bf16_intermediate: bool = True, routing_stage: int = 2
) -> torch.Tensor:
    """bf16 [M, H]: what the leaderboard's ``fused_moe`` call computes.

    The options exist to show what a near miss does (the leaderboard's pipeline is the default):
    ``ties="even"`` quantizes the activations with round half to even; ``bf16_intermediate=False``
    re-quantizes ``silu(gate) * up`` from float32; ``routing_stage=1`` applies the routing weights
    to the stage-1 result instead of the stage-2 one."""
    if routing_stage not in ROUTING_STAGES:
        raise ProblemError(f"moe-mxfp4 reference: routing_stage must be 1 or 2, got {routing_stage!r}")
    hidden, _gu, _dn, _gus, _dns, gu_sh, dn_sh, gus_sh, dns_sh, topk_weights, topk_ids, _config = _unpack(
        data
    )
    m, h = hidden.shape
    k = topk_ids.shape[1]
    weights = topk_weights.reshape(-1).float()
    groups = _slots_by_expert(topk_ids)
    a1 = quant_dequant(hidden, ties)
    inter = _stage1(a1, ExpertWeights(gu_sh, gus_sh), groups, k, weights, routing_stage, bf16_intermediate)
    a2 = quant_dequant(inter, ties)
    del inter
    down = ExpertWeights(dn_sh, dns_sh)
    out = torch.zeros((m, h), dtype=torch.float32, device=hidden.device)
    for expert, slots in groups:
        y = a2[slots] @ down[expert].T
        if routing_stage == 2:
            y = y * weights[slots].unsqueeze(1)
        out.index_add_(0, slots // k, y)
    return out.to(torch.bfloat16)
