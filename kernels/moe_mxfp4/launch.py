# amd-moe-mxfp4: route -> gate_up -> down -> to_bf16. Row tiles: (expert, BM slots) pairs with
# slots; "s" (BM 16) below min_rows slots per expert, else "l" (BM 64); k split to "target".
# gfx950: e2m1 x e2m1 (v_mfma_scale). sm_90: A as bf16 values, B widened by LUT (no fp4 unit).
# H200 us (benchmarks/results/h200-*; launch.py's TRITON entries have their own): sm_90 min_rows 64,
# bs128/E33 (35 slots an expert) s 296 vs l 424, bs512/E33 (140) l 665 vs s 885 (2026-12-02).
# Stage-2 rows in work-list order (A2_TILES, moe-a2): bs16/E257 188.7 vs 197.6 us; by slot on the
# gfx950 "l" tiles (d_expert 2048 1573.2 vs 1613.9 before PAIRS). sm_90 "l" on PAIRS (moe-own):
# d_expert 2048 1503.0 vs 1588.6 without. Without PAIRS and with stage 1 split, bs128/E33 on "l"
# ran 241 vs 284 (sweep, 2026-12-04-moe-route), but the payload holds one down_l and one gate_up_l
# object, and SPLIT takes gate_up_l to 167 registers (d_expert 2048: 966 vs 926 us for it).

import torch

# Plain data: launch name -> Triton specialization (":16": 16-byte aligned / divisible by 16).
TRITON = {
    "route": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_route",
        "signature": {
            "topk_ids_ptr": "*i32:16",
            "hidden_ptr": "*bf16:16",
            "sorted_ptr": "*i32:16",
            "counts_ptr": "*i32:16",
            "acc_ptr": "*fp32:16",
            "aq_ptr": "*u8:16",
            "aq_scale_ptr": "*u8:16",
            "slots": "i32",
            "tokens": "i32",
            "hidden": "i32:16",
            "experts": "i32",
            "acc_size": "i32:16",
            "acc_chunk": "i32",
            "BLOCK": "constexpr",
            "QK": "constexpr",
            "A_BF16": "constexpr",
        },
        "constexprs": {"BLOCK": 1024, "QK": 256, "A_BF16": False},
        "num_warps": 4,
        "num_stages": 1,
        # sm_90 BLOCK 512: a smaller object, which frees the payload for gate_up_s's split (the
        # route times did not move: H200 bs512/E257 632.0 vs 633.0 us in all)
        "arch": {"sm_90": {"constexprs": {"A_BF16": True, "BLOCK": 512}}},
    },
    "gate_up_s": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_gate_up",
        "signature": {
            "aq_ptr": "*u8:16",
            "aq_scale_ptr": "*u8:16",
            "w_ptr": "*u8:16",
            "w_scale_ptr": "*u8:16",
            "sorted_ptr": "*i32:16",
            "counts_ptr": "*i32:16",
            "a2_ptr": "*u8:16",
            "a2_scale_ptr": "*u8:16",
            "part_ptr": "*fp32:16",
            "cnt_ptr": "*i32:16",
            "map_ptr": "*i32:16",
            "tokens": "i32",
            "hidden": "i32:16",
            "d_expert": "i32:16",
            "top_k": "i32",
            "experts": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "E_POW2": "constexpr",
            "A_BF16": "constexpr",
            "SPLIT": "constexpr",
            "LUT": "constexpr",
            "A2_TILES": "constexpr",
            "EVEN": "constexpr",
            "PF": "constexpr",
            "GU": "constexpr",
        },
        "constexprs": {
            "BM": 16, "BN": 64, "BK": 128, "E_POW2": 512, "A_BF16": False, "SPLIT": True, "LUT": False,
            "A2_TILES": True, "EVEN": False, "PF": False, "GU": False,
        },
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 1056, "min_rows": 24},
        # sm_90, target 800: H200 gate_up bs16/E257 113 vs 132 us (612 programs -> 2 splits),
        # bs16/E33 83 vs 101 (4 splits), but bs128/E33 (840 programs -> 1) 194 vs 182 with 4 splits.
        # Emitted file (benchmarks/results/h200-2026-12-03-moe-regs/call3): bs16/E257 199.2 vs
        # 212.2 us, bs16/E33 134.7 vs 154.8, the other shapes within 0.5 %
        # PF (the weight scales a k step ahead; Triton's pipeline does not stage their 2-byte loads),
        # emitted files 2026-12-03 (benchmarks/results/h200-2026-12-03-moe-pf): bs16/E257 180.7 vs
        # 187.0 us, bs128/E257 398.5 vs 414.9, bs512/E257 617.7 vs 630.4, bs16/E33 122.7 vs 128.4,
        # bs128/E33 280.9 vs 284.7. GU here was faster at bs16/E257 (173.7) but slower at bs512/E257
        # (636.1) and bs128/E33 (287.5)
        "arch": {
            "sm_90": {"constexprs": {"BK": 128, "A_BF16": True, "SPLIT": True, "LUT": True, "PF": True},
                      "num_stages": 3,
                      "plan": {"target": 800, "min_rows": 64}}
        },
    },
    "gate_up_l": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_gate_up",
        "signature": {
            "aq_ptr": "*u8:16",
            "aq_scale_ptr": "*u8:16",
            "w_ptr": "*u8:16",
            "w_scale_ptr": "*u8:16",
            "sorted_ptr": "*i32:16",
            "counts_ptr": "*i32:16",
            "a2_ptr": "*u8:16",
            "a2_scale_ptr": "*u8:16",
            "part_ptr": "*fp32:16",
            "cnt_ptr": "*i32:16",
            "map_ptr": "*i32:16",
            "tokens": "i32",
            "hidden": "i32:16",
            "d_expert": "i32:16",
            "top_k": "i32",
            "experts": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "E_POW2": "constexpr",
            "A_BF16": "constexpr",
            "SPLIT": "constexpr",
            "LUT": "constexpr",
            "A2_TILES": "constexpr",
            "EVEN": "constexpr",
            "PF": "constexpr",
            "GU": "constexpr",
        },
        "constexprs": {
            "BM": 64, "BN": 64, "BK": 128, "E_POW2": 512, "A_BF16": False, "SPLIT": False, "LUT": False,
            "A2_TILES": False, "EVEN": False, "PF": False, "GU": False,
        },
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 1},
        # sm_90, BK 64 on 3 stages: 127 registers (164 at BK 128), 41 KB, so 4 blocks an SM, not 3:
        # H200 gate_up bs512/E33 297 vs 345 us, d_expert 2048 1022 vs 1247 (JIT sweep, 2026-12-03).
        # Stage-2 rows in work-list order and EVEN tiles for down_l's PAIRS (below)
        # GU (gate and up as one 2 * BN product: one widening, barrier and MMA wait a k step) with PF,
        # and PF in down_l: emitted files 2026-12-03 (benchmarks/results/h200-2026-12-03-moe-pf):
        # d_expert 2048 1418.4 vs 1518.6 us, bs512/E33 465.6 vs 490.4; JIT at d_expert 2048 1393 us
        # against 1504 (neither), 1473 (PF only) and 1480 (GU only). BM 128 on 8 warps with GU and
        # PF (two warpgroups on one widened tile; down_l on the same tiles): 1457.2 and 489.5
        "arch": {
            "sm_90": {"constexprs": {"BK": 64, "A_BF16": True, "LUT": True, "A2_TILES": True, "EVEN": True,
                                     "GU": True, "PF": True},
                      "num_stages": 3}
        },
    },
    "down_s": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_down",
        "signature": {
            "a2_ptr": "*u8:16",
            "a2_scale_ptr": "*u8:16",
            "w_ptr": "*u8:16",
            "w_scale_ptr": "*u8:16",
            "sorted_ptr": "*i32:16",
            "map_ptr": "*i32:16",
            "topk_weights_ptr": "*fp32:16",
            "acc_ptr": "*fp32:16",
            "tokens": "i32",
            "hidden": "i32:16",
            "d_expert": "i32:16",
            "top_k": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "A_BF16": "constexpr",
            "LUT": "constexpr",
            "A2_TILES": "constexpr",
            "PAIRS": "constexpr",
            "PF": "constexpr",
        },
        "constexprs": {
            "BM": 16, "BN": 64, "BK": 128, "A_BF16": False, "LUT": False, "A2_TILES": True, "PAIRS": False,
            "PF": False,
        },
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 1},
        # sm_90, BN 128: H200 down bs128/E257 174 vs 213 us for BN 64, bs16/E257 71 vs 86 (2 stages:
        # 3 gave 153 and 64 but does not fit the payload). maxnreg 128 (138 registers uncapped, no
        # spills capped): 4 blocks an SM instead of 3; emitted file 429.4 vs 445.1 us geomean
        # (benchmarks/results/h200-2026-12-03-moe-regs)
        "arch": {
            "sm_90": {"constexprs": {"BN": 128, "BK": 128, "A_BF16": True, "LUT": True}, "num_stages": 2,
                      "options": {"maxnreg": 128}}
        },
    },
    "down_l": {
        "source": "moe_mxfp4.py",
        "kernel": "moe_down",
        "signature": {
            "a2_ptr": "*u8:16",
            "a2_scale_ptr": "*u8:16",
            "w_ptr": "*u8:16",
            "w_scale_ptr": "*u8:16",
            "sorted_ptr": "*i32:16",
            "map_ptr": "*i32:16",
            "topk_weights_ptr": "*fp32:16",
            "acc_ptr": "*fp32:16",
            "tokens": "i32",
            "hidden": "i32:16",
            "d_expert": "i32:16",
            "top_k": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "A_BF16": "constexpr",
            "LUT": "constexpr",
            "A2_TILES": "constexpr",
            "PAIRS": "constexpr",
            "PF": "constexpr",
        },
        "constexprs": {
            "BM": 64, "BN": 64, "BK": 128, "A_BF16": False, "LUT": False, "A2_TILES": False, "PAIRS": False,
            "PF": False,
        },
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 1},
        # sm_90, BN 128 on 8 warps: H200 down bs512/E33 200 vs 267 us, d_expert 2048 602 vs 656. BK 64
        # on 4 stages under maxnreg 80 (no spills, 3 blocks an SM, not 2): 179 vs 202, 584 vs 623
        # (2026-12-03); emitted file with both: bs512/E33 501.5 vs 553.8 us, d_expert 2048 1573.6 vs
        # 1803.9 (benchmarks/results/h200-2026-12-03-moe-lk64). PAIRS, BM 128 from gate_up_l's BM-64
        # tiles two at a time, in work-list order (8 warps, maxnreg 128): emitted files, same run
        # (benchmarks/results/h200-2026-12-03-moe-own/call3): d_expert 2048 1503.0 vs 1581.9 us,
        # bs512/E33 489.2 vs 501.5; by slot, or on tiles of its own numbered from the counts, slower
        # (JIT sweep at bs512/E33: 576 and 579 against 488)
        "arch": {
            "sm_90": {"constexprs": {"BM": 128, "BN": 128, "BK": 64, "A_BF16": True, "LUT": True,
                                     "A2_TILES": True, "PAIRS": True, "PF": True},
                      "num_warps": 8, "num_stages": 4, "options": {"maxnreg": 128}}
        },
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
ROUTE = TRITON["route"]["constexprs"]
A_BF16 = ROUTE["A_BF16"]  # the same in every entry of one arch
CAST_BLOCK = TRITON["to_bf16"]["constexprs"]["BLOCK"]
MIN_ROWS = TRITON["gate_up_s"]["plan"]["min_rows"]  # slots per expert from which the "l" tiles run
QK = ROUTE["QK"]
# route's grid at most, one program a QK chunk up to bs 512 (1,024 looped 14 times): H200 emitted file
# 373.2 vs 375.3 us geomean (benchmarks/results/h200-2026-12-04-moe-route)
ROUTE_PROGRAMS = 16384


def _check(hidden, d_expert, experts):
    if hidden % 256 or d_expert % 256:
        raise ValueError(
            f"moe_mxfp4 plan: need d_hidden and d_expert multiples of 256, got {hidden} and {d_expert}"
        )
    e_pow2 = TRITON["gate_up_s"]["constexprs"]["E_POW2"]
    if experts > e_pow2:
        raise ValueError(f"moe_mxfp4 plan: at most {e_pow2} experts, got {experts}")


def tile_class(tokens, top_k, experts):
    """'s' or 'l': the tile class of a shape (slots per expert on average against MIN_ROWS)."""
    return "l" if tokens * top_k >= MIN_ROWS * experts else "s"


def _splits(steps, programs, target):
    """The smallest divisor of the k steps that takes the programs to the target (at most all)."""
    for s in range(1, steps + 1):
        if steps % s == 0 and programs * s >= target:
            return s
    return steps


def plan(data):
    hidden_states, gate_up, down, gate_up_scale, down_scale = data[:5]
    topk_weights, topk_ids = data[9], data[10]
    tokens, hidden = hidden_states.shape
    experts, two_d_expert, _ = gate_up.shape
    d_expert = two_d_expert // 2
    top_k = topk_ids.shape[1]
    _check(hidden, d_expert, experts)
    dev = hidden_states.device
    cls = tile_class(tokens, top_k, experts)
    g_name, d_name = "gate_up_" + cls, "down_" + cls
    g, d = TRITON[g_name], TRITON[d_name]
    g_c, d_c = g["constexprs"], d["constexprs"]
    if g_c["A2_TILES"] != d_c["A2_TILES"]:
        got = f"{g_c['A2_TILES']} and {d_c['A2_TILES']}"
        raise ValueError(f"moe_mxfp4 plan: {g_name} and {d_name} need one A2_TILES, got {got}")
    # moe_down's row tiles are moe_gate_up's, or with PAIRS two of them (numbered EVEN) at a time
    pairs = d_c["PAIRS"]
    if d_c["BM"] != g_c["BM"] * (2 if pairs else 1) or pairs and not g_c["EVEN"]:
        need = f"BM {2 * g_c['BM']} and {g_name} EVEN" if pairs else f"BM {g_c['BM']}"
        got = f"BM {d_c['BM']} and EVEN {g_c['EVEN']}"
        raise ValueError(f"moe_mxfp4 plan: {d_name} (PAIRS {pairs}) needs {need}, got {got}")
    slots = tokens * top_k
    acc_size = tokens * hidden
    route_programs = max(experts, min(tokens * hidden // QK, ROUTE_PROGRAMS))
    acc_chunk = -(-acc_size // route_programs)
    # row tiles at most (the grid's rows): one partial tile an expert, and with EVEN one more, made even
    g_tiles = slots // g_c["BM"] + min(experts, slots) * (2 if g_c["EVEN"] else 1)
    g_tiles += g_tiles % 2 if g_c["EVEN"] else 0
    d_tiles = g_tiles // 2 if pairs else g_tiles
    g_nt, d_nt = d_expert // g_c["BN"], hidden // d_c["BN"]
    # programs, estimated from shapes by the row tiles at most
    g_split = 1
    if g_c["SPLIT"]:  # the "l" entries are built without the split-K epilogue (smaller objects)
        g_split = _splits(hidden // g_c["BK"], g_tiles * g_nt, g["plan"]["target"])
    d_split = _splits(d_expert // d_c["BK"], d_tiles * d_nt, d["plan"]["target"])
    # workspaces, rewritten before they are read on every call (a2: the rows of real slots; moe_down
    # also loads a tile's rows past its count and discards their products; cnt: the split
    # counters, zero here and re-armed to zero by the last split of each tile)
    sorted_slots = torch.empty((experts * tokens,), dtype=torch.int32, device=dev)
    counts = torch.empty((experts,), dtype=torch.int32, device=dev)
    tile_map = torch.empty((3 * g_tiles,), dtype=torch.int32, device=dev)
    acc = torch.empty((acc_size,), dtype=torch.float32, device=dev)
    # the stage-2 rows: BM a row tile in work-list order (A2_TILES), else one a slot
    a2_rows = g_tiles * g_c["BM"] if g_c["A2_TILES"] else slots
    if A_BF16:
        aq = torch.empty((tokens * hidden * 2,), dtype=torch.uint8, device=dev)
        aq_scale = torch.empty((16,), dtype=torch.uint8, device=dev)
        a2 = torch.empty((a2_rows * d_expert * 2,), dtype=torch.uint8, device=dev)
        a2_scale = torch.empty((16,), dtype=torch.uint8, device=dev)
    else:
        aq = torch.empty((tokens * hidden // 2,), dtype=torch.uint8, device=dev)
        aq_scale = torch.empty((tokens * hidden // 32,), dtype=torch.uint8, device=dev)
        a2 = torch.empty((a2_rows * d_expert // 2,), dtype=torch.uint8, device=dev)
        a2_scale = torch.empty((a2_rows * d_expert // 32,), dtype=torch.uint8, device=dev)
    if g_split > 1:
        part = torch.empty((g_split * slots * 2 * d_expert,), dtype=torch.float32, device=dev)
        cnt = torch.zeros((g_tiles * g_nt,), dtype=torch.int32, device=dev)
    else:
        part = torch.empty((4,), dtype=torch.float32, device=dev)
        cnt = torch.empty((4,), dtype=torch.int32, device=dev)
    out = torch.empty((tokens, hidden), dtype=torch.bfloat16, device=dev)
    return out, [
        (
            "route",
            (route_programs, 1, 1),
            None,
            None,
            (
                topk_ids,
                hidden_states,
                sorted_slots,
                counts,
                acc,
                aq,
                aq_scale,
                slots,
                tokens,
                hidden,
                experts,
                acc_size,
                acc_chunk,
            ),
        ),
        (
            g_name,
            (g_tiles, g_nt, g_split),
            None,
            None,
            (
                aq,
                aq_scale,
                gate_up,
                gate_up_scale,
                sorted_slots,
                counts,
                a2,
                a2_scale,
                part,
                cnt,
                tile_map,
                tokens,
                hidden,
                d_expert,
                top_k,
                experts,
                hidden // g_split,
            ),
        ),
        (
            d_name,
            (d_tiles, d_nt, d_split),
            None,
            None,
            (
                a2,
                a2_scale,
                down,
                down_scale,
                sorted_slots,
                tile_map,
                topk_weights,
                acc,
                tokens,
                hidden,
                d_expert,
                top_k,
                d_expert // d_split,
            ),
        ),
        ("to_bf16", (-(-acc_size // CAST_BLOCK), 1, 1), None, None, (acc, out, acc_size)),
    ]
