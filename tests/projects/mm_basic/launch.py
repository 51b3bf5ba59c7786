"""Plan of the test project: a split-K tile kernel and a reduce taking a struct by value."""

import ctypes

import torch

SOURCES = ("mm.hip",)
KERNELS = ("mm_tile", "mm_reduce")


class ReduceArgs(ctypes.Structure):
    _fields_ = [
        ("partial", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("count", ctypes.c_longlong),
        ("splits", ctypes.c_int),
        ("scale", ctypes.c_float),
    ]


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, k = a.shape
    n = b.shape[0]
    splits = 2 if k >= 1024 else 1
    partial = torch.empty((splits, m, n), dtype=torch.float32, device=a.device)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    tiles = (m * n + 255) // 256
    return out, [
        ("mm_tile", (tiles, 1, splits), (256, 1, 1), 0, (a, b_q, b_scale, partial, m, n, k, 0.5)),
        (
            "mm_reduce",
            ((m * n + 127) // 128,),
            (128,),
            0,
            ((ReduceArgs, {"partial": partial, "out": out, "count": m * n, "splits": splits, "scale": 1.0}),),
        ),
    ]
