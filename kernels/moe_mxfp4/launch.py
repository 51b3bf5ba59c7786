"""Launch plan of the default amd-moe-mxfp4 kernels (moe_mxfp4.py, Triton).

Per call, four launches in order on the same queue, none of which waits for the host:
route (slots grouped by expert, counts, accumulator zeroed) -> gate_up (stage 1, re-quantized
intermediate) -> down (stage 2, routing weight, atomic sum per token) -> to_bf16.

Grids depend on shapes only: gate_up and down have one program per (expert, column tile, row
split); a program loops over the row tiles (BM = 16 slots) of its expert that its split owns and
returns at once for an expert no slot routes to. One row-tile size keeps the code objects small:
the payload limit counts every byte of them.
"""

import torch

# Plain data (submitgen reads it without running the plan): launch name -> Triton specialization.
# ":16" promises 16-byte aligned pointers (whole tensors) and integers divisible by 16 (H and
# d_expert are multiples of 256), as Triton's JIT would find them: it lets Triton vectorise.
TRITON = {
    "route": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_route",
        "signature": {
            "topk_ids_ptr": "*i32:16",
            "sorted_ptr": "*i32:16",
            "counts_ptr": "*i32:16",
            "acc_ptr": "*fp32:16",
            "slots": "i32",
            "tokens": "i32",
            "acc_size": "i32:16",
            "acc_chunk": "i32",
            "BLOCK": "constexpr",
        },
        "constexprs": {"BLOCK": 1024},
        "num_warps": 4,
        "num_stages": 1,
    },
    "gate_up": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_gate_up",
        "signature": {
            "hidden_ptr": "*bf16:16",
            "w_ptr": "*u8:16",
            "w_scale_ptr": "*u8:16",
            "sorted_ptr": "*i32:16",
            "counts_ptr": "*i32:16",
            "a2_ptr": "*u8:16",
            "a2_scale_ptr": "*u8:16",
            "tokens": "i32",
            "hidden": "i32:16",
            "d_expert": "i32:16",
            "top_k": "i32",
            "row_splits": "i32",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
        },
        "constexprs": {"BM": 16, "BN": 64, "BK": 128},
        "num_warps": 4,
        "num_stages": 2,
    },
    "down": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_down",
        "signature": {
            "a2_ptr": "*u8:16",
            "a2_scale_ptr": "*u8:16",
            "w_ptr": "*u8:16",
            "w_scale_ptr": "*u8:16",
            "sorted_ptr": "*i32:16",
            "counts_ptr": "*i32:16",
            "topk_weights_ptr": "*fp32:16",
            "acc_ptr": "*fp32:16",
            "tokens": "i32",
            "hidden": "i32:16",
            "d_expert": "i32:16",
            "top_k": "i32",
            "row_splits": "i32",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
        },
        "constexprs": {"BM": 16, "BN": 64, "BK": 128},
        "num_warps": 4,
        "num_stages": 2,
    },
    "to_bf16": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_to_bf16",
        "signature": {"acc_ptr": "*fp32:16", "out_ptr": "*bf16:16", "size": "i32:16", "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 1024},
        "num_warps": 4,
        "num_stages": 1,
    },
}
BM = TRITON["gate_up"]["constexprs"]["BM"]  # slots per row tile (the same in down)
BN_GATE_UP = TRITON["gate_up"]["constexprs"]["BN"]  # d_expert columns per gate_up program
BN_DOWN = TRITON["down"]["constexprs"]["BN"]  # hidden columns per down program
CAST_BLOCK = TRITON["to_bf16"]["constexprs"]["BLOCK"]
MAX_ROW_SPLITS = 8


def _check(hidden, d_expert):
    if hidden % 256 or d_expert % 256:
        raise ValueError(
            f"moe_mxfp4 plan: need d_hidden and d_expert multiples of 256, got {hidden} and {d_expert}"
        )


def plan(data):
    hidden_states, gate_up, down, gate_up_scale, down_scale = data[:5]
    topk_weights, topk_ids = data[9], data[10]
    tokens, hidden = hidden_states.shape
    experts, two_d_expert, _ = gate_up.shape
    d_expert = two_d_expert // 2
    top_k = topk_ids.shape[1]
    _check(hidden, d_expert)
    dev = hidden_states.device
    splits = min(MAX_ROW_SPLITS, -(-tokens // BM))
    slots = tokens * top_k
    acc_size = tokens * hidden
    acc_chunk = -(-acc_size // experts)
    # workspaces, fully rewritten before they are read on every call
    sorted_slots = torch.empty((experts * tokens,), dtype=torch.int32, device=dev)
    counts = torch.empty((experts,), dtype=torch.int32, device=dev)
    acc = torch.empty((acc_size,), dtype=torch.float32, device=dev)
    a2 = torch.empty((slots, d_expert // 2), dtype=torch.uint8, device=dev)
    a2_scale = torch.empty((slots, d_expert // 32), dtype=torch.uint8, device=dev)
    out = torch.empty((tokens, hidden), dtype=torch.bfloat16, device=dev)
    return out, [
        (
            "route",
            (experts, 1, 1),
            None,
            None,
            (topk_ids, sorted_slots, counts, acc, slots, tokens, acc_size, acc_chunk),
        ),
        (
            "gate_up",
            (experts, d_expert // BN_GATE_UP, splits),
            None,
            None,
            (
                hidden_states,
                gate_up,
                gate_up_scale,
                sorted_slots,
                counts,
                a2,
                a2_scale,
                tokens,
                hidden,
                d_expert,
                top_k,
                splits,
            ),
        ),
        (
            "down",
            (experts, hidden // BN_DOWN, splits),
            None,
            None,
            (
                a2,
                a2_scale,
                down,
                down_scale,
                sorted_slots,
                counts,
                topk_weights,
                acc,
                tokens,
                hidden,
                d_expert,
                top_k,
                splits,
            ),
        ),
        ("to_bf16", (-(-acc_size // CAST_BLOCK), 1, 1), None, None, (acc, out, acc_size)),
    ]
