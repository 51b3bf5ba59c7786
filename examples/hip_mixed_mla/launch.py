"""Launch plan of the default amd-mixed-mla kernels (mixed_mla.hip).

mla_decode_split takes one struct by value (MlaParams below mirrors the C struct mla_params field by
field); each block handles one (split, sequence) pair for all 16 heads. The number of splits is
picked per config so that batch * splits fills the GPU, with at least MIN_TILES_PER_SPLIT tiles of
16 tokens per split. mla_reduce then merges the splits into the bf16 output (T, 16, 512).
"""

import ctypes

import torch

SOURCES = ("mixed_mla.hip",)
KERNELS = ("mla_decode_split", "mla_reduce")

KV_FORMAT = "fp8"  # "fp8" (kv_data["fp8"], e4m3 + per-tensor scale) or "bf16" (kv_data["bf16"])
HEADS = 16
DK = 576
DV = 512
TILE = 16  # tokens per shared-memory tile (MLA_TILE)
THREADS = 128
TARGET_BLOCKS = 512  # two blocks per CU on MI355X (256 CUs)
MIN_TILES_PER_SPLIT = 2


class MlaParams(ctypes.Structure):
    """By-value argument of mla_decode_split (struct mla_params, natural alignment, 64 bytes)."""

    _fields_ = [
        ("q", ctypes.c_void_p),
        ("kv", ctypes.c_void_p),
        ("kv_scale", ctypes.c_void_p),
        ("part_o", ctypes.c_void_p),
        ("part_lse", ctypes.c_void_p),
        ("batch", ctypes.c_int32),
        ("kv_len", ctypes.c_int32),
        ("num_splits", ctypes.c_int32),
        ("split_len", ctypes.c_int32),
        ("kv_fp8", ctypes.c_int32),
        ("sm_scale", ctypes.c_float),
    ]


def split_for(batch, kv_len):
    """(num_splits, split_len in tokens) for one config."""
    tiles = -(-kv_len // TILE)
    want = max(1, -(-TARGET_BLOCKS // batch))
    splits = max(1, min(want, tiles // MIN_TILES_PER_SPLIT))
    tiles_per_split = -(-tiles // splits)
    splits = -(-tiles // tiles_per_split)  # no empty split
    return splits, tiles_per_split * TILE


def plan(data):
    q, kv_data, _qo_indptr, _kv_indptr, config = data
    batch = int(config["batch_size"])
    kv_len = int(config["kv_seq_len"])
    if int(config.get("q_seq_len", 1)) != 1 or q.shape[0] != batch:
        raise ValueError(f"mla plan: only q_seq_len 1 is supported, got q {tuple(q.shape)} for batch {batch}")
    if tuple(q.shape[1:]) != (HEADS, DK):
        raise ValueError(f"mla plan: q must be (T, {HEADS}, {DK}), got {tuple(q.shape)}")
    kv_fp8 = KV_FORMAT == "fp8"
    if kv_fp8:
        kv, kv_scale = kv_data["fp8"]
    else:
        kv = kv_data["bf16"]
        kv_scale = kv_data["fp8"][1]  # not read by the kernel when kv_fp8 = 0
    if kv.shape[0] != batch * kv_len or kv.shape[-1] != DK:
        raise ValueError(f"mla plan: kv must be ({batch * kv_len}, 1, {DK}), got {tuple(kv.shape)}")
    splits, split_len = split_for(batch, kv_len)
    dev = q.device
    out = torch.empty((batch, HEADS, DV), dtype=torch.bfloat16, device=dev)
    # workspaces, fully overwritten every call
    part_o = torch.empty((batch, splits, HEADS, DV), dtype=torch.float32, device=dev)
    part_lse = torch.empty((batch, splits, HEADS), dtype=torch.float32, device=dev)
    params = {
        "q": q,
        "kv": kv,
        "kv_scale": kv_scale,
        "part_o": part_o,
        "part_lse": part_lse,
        "batch": batch,
        "kv_len": kv_len,
        "num_splits": splits,
        "split_len": split_len,
        "kv_fp8": 1 if kv_fp8 else 0,
        "sm_scale": float(config["sm_scale"]),
    }
    return out, [
        ("mla_decode_split", (splits, batch, 1), (THREADS, 1, 1), 0, ((MlaParams, params),)),
        ("mla_reduce", (batch * HEADS, 1, 1), (DV // 4, 1, 1), 0, (part_o, part_lse, out, splits)),
    ]
