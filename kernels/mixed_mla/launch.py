"""Launch plan of the default amd-mixed-mla kernels (mixed_mla.py, Triton).

mla_decode reads the fp8 KV copy (e4m3fn + per-tensor scale): each program decodes one
(split, sequence) pair for all 16 heads in tiles of BN tokens, Q.K^T and P.V on the matrix units.
mla_reduce (mla_reduce_wide for a small batch, below) merges the splits' normalised outputs by
their log-sum-exp into the bf16 output; a config with one split per sequence is one launch, its
output written by mla_decode.

Splits per config: enough (split, sequence) programs for about TARGET_PROGRAMS, each split at
least MIN_TILES_PER_SPLIT tiles long, at most MAX_SPLITS. H200 graph-replay medians of the decode
and its merge (benchmarks/sweep_mla.py, 2026-12-02; docs/default-kernels.md has the table): 256
programs beat 512 from 32/8192 up (70.9 against 78.0 us at 32/8192, 30.3 against 38.0 at 64/1024);
2-tile splits beat 4 at 4/1024 (13.7 against 14.6), and 32 splits beat 64 at 4/8192 (24.3 against
28.2); one split written directly beat one split through mla_reduce at bs 256 (66.7 against 72.5 us
at kv 1024, 420.5 against 447.3 at kv 8192).
"""

import torch

HEADS = 16
DK = 576
DV = 512
BN = 32  # KV tokens per tile (mla_decode's BN)
TARGET_PROGRAMS = 256
MIN_TILES_PER_SPLIT = 2
MAX_SPLITS = 32  # mla_reduce's SPLITS (a power of two)
# The merge: mla_reduce runs one program a (sequence, head), a loop over the splits. Where that is
# fewer than WIDE_BELOW programs, mla_reduce_wide runs 512 // WIDE_BV a (sequence, head), each
# loading all splits at once. H200, emitted sm_90 files, submitgen bench --iters 20: wide for
# every config (benchmarks/results/h200-2026-12-03-mla-reduce/call1) won at bs 4, 12.80 against
# 13.62 us (kv 1024, 16 splits) and 21.52 against 23.65 (kv 8192, 32 splits), and lost at bs 32
# and 64 (512 and 1,024 plain programs), 24.11 against 22.95 and 32.68 against 29.18 at kv 1024;
# this rule (benchmarks/results/h200-2026-12-03-mla-wide): 48.75 against 49.56 us geomean. The merge
# inside the decode's launch (merge programs by start ticket) was slower on every split config,
# 14.07 against 12.53 us at bs 4 / kv 1024, 52.5 against 48.6 geomean (h200-2026-12-03-mla-merge).
WIDE_BELOW = 128

TRITON = {
    "mla_decode": {
        "source": "mixed_mla.py",
        "kernel": "mla_decode_kernel",
        "signature": {
            "q_ptr": "*bf16:16",
            "kv_ptr": "*fp8e4nv:16",
            "kv_scale_ptr": "*fp32:16",
            "po_ptr": "*fp32:16",
            "plse_ptr": "*fp32:16",
            "out_ptr": "*bf16:16",
            "kv_len": "i32",
            "split_len": "i32:16",
            "sm_scale": "fp32",
            "BN": "constexpr",
        },
        "constexprs": {"BN": 32},
        "num_warps": 4,
        "num_stages": 1,
        # Hopper's wgmma wants 64-token tiles and a 3-stage pipeline; on gfx950 that config needs
        # 431 VGPRs (1 wave/SIMD), so it applies to sm_90 only. Tiles are masked at the split's end,
        # so split_len (a multiple of 32) stays valid.
        "arch": {"sm_90": {"num_stages": 3, "constexprs": {"BN": 64}}},
    },
    "mla_reduce": {
        "source": "mixed_mla.py",
        "kernel": "mla_reduce_kernel",
        "signature": {
            "po_ptr": "*fp32:16",
            "plse_ptr": "*fp32:16",
            "out_ptr": "*bf16:16",
            "n_splits": "i32",
            "SPLITS": "constexpr",
        },
        "constexprs": {"SPLITS": 32},
        "num_warps": 4,
        "num_stages": 1,
    },
    "mla_reduce_wide": {
        "source": "mixed_mla.py",
        "kernel": "mla_reduce_wide_kernel",
        "signature": {
            "po_ptr": "*fp32:16",
            "plse_ptr": "*fp32:16",
            "out_ptr": "*bf16:16",
            "n_splits": "i32",
            "SPLITS": "constexpr",
            "BV": "constexpr",
        },
        "constexprs": {"SPLITS": 32, "BV": 128},
        "num_warps": 4,
        "num_stages": 1,
    },
}
WIDE_BV = TRITON["mla_reduce_wide"]["constexprs"]["BV"]
KERNELS = ()


def _cdiv(a, b):
    return (a + b - 1) // b


def split_for(batch, kv_len):
    """(splits, split_len in tokens, a multiple of BN) for one config; no split is empty."""
    tiles = _cdiv(kv_len, BN)
    splits = max(1, min(_cdiv(TARGET_PROGRAMS, batch), tiles // MIN_TILES_PER_SPLIT, MAX_SPLITS))
    split_len = _cdiv(tiles, splits) * BN
    return _cdiv(kv_len, split_len), split_len


def plan(data):
    q, kv_data, _qo_indptr, _kv_indptr, config = data
    batch = int(config["batch_size"])
    kv_len = int(config["kv_seq_len"])
    if int(config.get("q_seq_len", 1)) != 1 or q.shape[0] != batch:
        raise ValueError(f"mla plan: only q_seq_len 1 is supported, got q {tuple(q.shape)} for batch {batch}")
    if tuple(q.shape[1:]) != (HEADS, DK):
        raise ValueError(f"mla plan: q must be (T, {HEADS}, {DK}), got {tuple(q.shape)}")
    kv, kv_scale = kv_data["fp8"]
    if kv.shape[0] != batch * kv_len or kv.shape[-1] != DK:
        raise ValueError(f"mla plan: kv must be ({batch * kv_len}, 1, {DK}), got {tuple(kv.shape)}")
    splits, split_len = split_for(batch, kv_len)
    dev = q.device
    out = torch.empty((batch, HEADS, DV), dtype=torch.bfloat16, device=dev)
    # workspaces, fully overwritten every call (one split: none, the output is written directly)
    if splits > 1:
        part_o = torch.empty((batch, splits, HEADS, DV), dtype=torch.float32, device=dev)
        part_lse = torch.empty((batch, splits, HEADS), dtype=torch.float32, device=dev)
    else:
        part_o = torch.empty((1,), dtype=torch.float32, device=dev)
        part_lse = torch.empty((1,), dtype=torch.float32, device=dev)
    sm_scale = float(config["sm_scale"])
    decode = (
        "mla_decode",
        (splits, batch, 1),
        None,
        None,
        (q, kv, kv_scale, part_o, part_lse, out, kv_len, split_len, sm_scale),
    )
    if splits == 1:
        return out, [decode]
    if batch * HEADS < WIDE_BELOW:
        name, grid = "mla_reduce_wide", (batch, HEADS, DV // WIDE_BV)
    else:
        name, grid = "mla_reduce", (batch, HEADS, 1)
    most = TRITON[name]["constexprs"]["SPLITS"]
    if splits > most:
        raise ValueError(f"mla plan: {name} merges at most {most} splits, the plan made {splits}")
    return out, [decode, (name, grid, None, None, (part_o, part_lse, out, splits))]
