"""Tile sweep of the default amd-moe-mxfp4 Triton kernels on a CUDA GPU, through Triton's JIT.

    PYTHONPATH=. python benchmarks/sweep_moe.py [--out DIR] [--reps 10] [--variants a,b] [--shapes 1,5]

Runs kernels/moe_mxfp4's own plan with its TRITON entries as the sm_90 build resolves them, with
each variant below laid over the "s" entries (the plan's class forced to "s", BM set by the
variant), on every benchmark shape; the variant "shipped" runs the plan and tiles as they are. A
process pool first compiles every launch into Triton's cache (--workers; no data, no launch), so
the timed pass compiles nothing. Each output is checked against
submitgen's reference (mismatches at 0.05 + 0.05 |ref|) and every launch is timed on its own and
the four together (GPU events, a 1 GiB fill before each, median of --reps). The JSON lines go to
DIR/sweep_moe.jsonl, the lines and a table of totals (us) to stdout. Times through the JIT rank
variants; the figures to report come from the emitted file (benchmarks/bench_moe.py).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import gpu_median_us, resolved  # noqa: E402

from submitgen.problems import moe_mxfp4 as moe  # noqa: E402

PROJECT = ROOT / "kernels" / "moe_mxfp4"
ARCH = "sm_90"


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, PROJECT / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KERNELS = _load("moe_kernels_sweep", "moe_mxfp4.py")


def _launch_module(variant: dict):
    """launch.py with TRITON resolved for ARCH and the variant laid over it: its TRITON entries
    first, then the module names launch.py derives from them at import (from the entries as laid
    over, as the build resolves TRITON before they are derived), then the variant's module names."""
    launch = _load("moe_launch_sweep", "launch.py")
    for name in list(launch.TRITON):
        launch.TRITON[name] = resolved(launch.TRITON[name], ARCH)
    for name, over in variant.items():
        if name in launch.TRITON:
            entry = launch.TRITON[name]
            entry["constexprs"].update(over.get("constexprs", {}))
            entry["plan"].update(over.get("plan", {}))
            for key in ("num_warps", "num_stages"):
                if key in over:
                    entry[key] = over[key]
            entry.setdefault("options", {}).update(over.get("options", {}))
    launch.A_BF16 = launch.TRITON["route"]["constexprs"]["A_BF16"]
    launch.MIN_ROWS = launch.TRITON["gate_up_s"]["plan"]["min_rows"]
    launch.CAST_BLOCK = launch.TRITON["to_bf16"]["constexprs"]["BLOCK"]
    for name, over in variant.items():
        if name not in launch.TRITON:
            setattr(launch, name, over)
    return launch


def _bytes(a):
    if isinstance(a, torch.Tensor) and a.dtype in (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu):
        return a.view(torch.uint8)
    return a


def _kwargs(entry: dict) -> dict:
    """A TRITON entry's launch keywords besides warps and stages: its constexprs and backend options
    (Triton's JIT takes both as keywords, in a launch and in a warm-up)."""
    return {**entry["constexprs"], **entry.get("options", {})}


def _runner(launch, launches):
    calls = []
    for name, grid, _block, _lds, args in launches:
        e = launch.TRITON[name]
        kern = getattr(KERNELS, e["kernel"])
        args = [_bytes(a) for a in args]

        def call(kern=kern, grid=grid, args=args, e=e):
            kern[grid](*args, num_warps=e["num_warps"], num_stages=e["num_stages"], **_kwargs(e))
        calls.append((name, grid, call))
    return calls


def _cfg(bn, bk, warps, stages, target=None, split=None, maxnreg=None, **cx):
    c = {"constexprs": {"BN": bn, "BK": bk, **cx}, "num_warps": warps, "num_stages": stages}
    if maxnreg is not None:  # ptxas' register cap (a backend option): more blocks an SM
        c["options"] = {"maxnreg": maxnreg}
    if split is not None:
        c["constexprs"]["SPLIT"] = split
    if target is not None:
        c["plan"] = {"target": target}
    return c


def _paired(bm, g, d):
    """A variant whose stage 2 takes stage 1's row tiles two at a time: gate_up numbers each
    expert's tiles EVEN, down runs PAIRS on BM 2 * bm (the plan's rule for the two)."""
    g["constexprs"]["EVEN"] = True
    d["constexprs"].update(PAIRS=True, BM=2 * bm)
    return bm, g, d


# name -> (BM, gate_up config, down config). Every variant runs on every benchmark shape through the
# "s" entries (the plan's class forced to "s", its BM set by the variant). sm_90 resolves LUT (the
# e2m1 -> bf16 byte-permute widening) on; s16 and l64 are the shipped tiles of the two classes.
VARIANTS = {
    "s16": (16, _cfg(64, 128, 4, 3, 1056, False), _cfg(64, 128, 4, 3)),
    "s16split": (16, _cfg(64, 128, 4, 3, 1056, True), _cfg(64, 128, 4, 3)),
    "s16w8": (16, _cfg(64, 128, 8, 3, 1056, False), _cfg(64, 128, 8, 3)),
    "s16n128": (16, _cfg(128, 128, 4, 3, 1056, False), _cfg(128, 128, 4, 3)),
    "s16n128w8": (16, _cfg(128, 128, 8, 3, 1056, False), _cfg(128, 256, 8, 2)),
    "s16k256": (16, _cfg(64, 256, 4, 2, 1056, False), _cfg(64, 256, 4, 2)),
    "s16n32": (16, _cfg(32, 128, 4, 4, 1056, False), _cfg(32, 256, 4, 2)),
    "s32": (32, _cfg(64, 128, 4, 3, 1056, False), _cfg(64, 128, 4, 3)),
    "s32split": (32, _cfg(64, 128, 4, 3, 2112, True), _cfg(128, 128, 8, 3)),
    "l64": (64, _cfg(64, 128, 4, 3, 1, False), _cfg(64, 128, 4, 3)),
    "l64split": (64, _cfg(64, 128, 4, 3, 1056, True), _cfg(64, 128, 4, 3)),
    "l64split2": (64, _cfg(64, 128, 4, 3, 2112, True), _cfg(128, 128, 8, 3)),
    "l64n128w8": (64, _cfg(128, 128, 8, 3, 1, False), _cfg(128, 128, 8, 3)),
    "l64n128w8s": (64, _cfg(128, 128, 8, 3, 1056, True), _cfg(128, 128, 8, 3)),
    "l64w8": (64, _cfg(64, 128, 8, 3, 1, False), _cfg(64, 128, 8, 3)),
    "l128n64w8": (128, _cfg(64, 128, 8, 3, 1, False), _cfg(64, 128, 8, 3)),
    "l128n128w8": (128, _cfg(128, 64, 8, 3, 1, False), _cfg(128, 64, 8, 3)),
    "l128n128w8k128": (128, _cfg(128, 128, 8, 2, 1, False), _cfg(128, 128, 8, 2)),
    # second round: around the sm_90 entries the first round chose (s: down BN 128; l: down BN 128
    # on 8 warps), gate_up's pipeline depth and BK
    "s_d128st2": (16, _cfg(64, 128, 4, 3, 1056, False), _cfg(128, 128, 4, 2)),
    "s_d128st2g4": (16, _cfg(64, 128, 4, 4, 1056, False), _cfg(128, 128, 4, 2)),
    "s_d128st2g5": (16, _cfg(64, 128, 4, 5, 1056, False), _cfg(128, 128, 4, 2)),
    "s_d128st2k256": (16, _cfg(64, 256, 4, 3, 1056, False), _cfg(128, 128, 4, 2)),
    "l_g2d128w8": (64, _cfg(64, 128, 4, 2, 1, False), _cfg(128, 128, 8, 3)),
    "l_g3d128w8": (64, _cfg(64, 128, 4, 3, 1, False), _cfg(128, 128, 8, 3)),
    "l_g4d128w8": (64, _cfg(64, 128, 4, 4, 1, False), _cfg(128, 128, 8, 3)),
    # 2026-12-03: register caps for the "s" tiles (ncu on the H200: 128 and 138 registers hold
    # gate_up_s and down_s to 4 and 3 blocks an SM, 2.8 warps a scheduler). down 128: 4 blocks, no
    # spills; gate_up 96: 5 blocks, 9 spill loads in its loop (experiments/sass_count.py --opt)
    "s_r_d128": (16, _cfg(64, 128, 4, 3, 1056, False), _cfg(128, 128, 4, 2, maxnreg=128)),
    "s_r_g96": (16, _cfg(64, 128, 4, 3, 1056, False, maxnreg=96), _cfg(128, 128, 4, 2)),
    "s_r_g96d128": (16, _cfg(64, 128, 4, 3, 1056, False, maxnreg=96), _cfg(128, 128, 4, 2, maxnreg=128)),
    "s_r_k256d128": (16, _cfg(64, 256, 4, 3, 1056, False), _cfg(128, 128, 4, 2, maxnreg=128)),
    # 2026-12-03, second session: the sm_90 "s" tiles as shipped that day (stage 1 split to 800
    # programs; --variants shipped runs whatever the project ships now), and
    # BK 64 (about 87 registers instead of 128: a block a k step holds half the A fragments and
    # widened weights, so more warps fit an SM), with and without register caps
    "cur": (16, _cfg(64, 128, 4, 3, 800, True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "k64": (16, _cfg(64, 64, 4, 4, 800, True), _cfg(128, 64, 4, 3, maxnreg=128)),
    "k64st3": (16, _cfg(64, 64, 4, 3, 800, True), _cfg(128, 64, 4, 3, maxnreg=128)),
    "k64r80": (16, _cfg(64, 64, 4, 4, 800, True, maxnreg=80), _cfg(128, 64, 4, 3, maxnreg=96)),
    "k64d96": (16, _cfg(64, 64, 4, 4, 800, True), _cfg(128, 64, 4, 3, maxnreg=96)),
    "k64d128": (16, _cfg(64, 64, 4, 4, 800, True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "k64n32": (16, _cfg(32, 64, 4, 4, 800, True), _cfg(64, 64, 4, 3)),
    # the "l" tiles (BM 64, Hopper's warpgroup MMA): as shipped before lk64r was taken, and BK 64
    "lcur": (64, _cfg(64, 128, 4, 2, 1, False), _cfg(128, 128, 8, 3)),
    "lk64": (64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 4)),
    "lk64g4": (64, _cfg(64, 64, 4, 4, 1, False), _cfg(128, 128, 8, 3)),
    "lk64w8": (64, _cfg(128, 64, 8, 3, 1, False), _cfg(128, 64, 8, 4)),
    "lk64r": (64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 4, maxnreg=80)),
    "lk64d64": (64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 3, maxnreg=64)),
    "lk64dn64": (64, _cfg(64, 64, 4, 3, 1, False), _cfg(64, 64, 4, 4)),
    "lk32": (64, _cfg(64, 32, 4, 4, 1, False), _cfg(128, 64, 8, 4, maxnreg=80)),
    # lk64r with stage 1's split (gate_up_l then holds the split epilogue: 167 registers, or 128
    # with no spills under maxnreg 128)
    "lk64rs": (64, _cfg(64, 64, 4, 3, 1056, True), _cfg(128, 64, 8, 4, maxnreg=80)),
    "lk64rsr": (64, _cfg(64, 64, 4, 3, 1056, True, maxnreg=128), _cfg(128, 64, 8, 4, maxnreg=80)),
    "lk64rsr2": (64, _cfg(64, 64, 4, 3, 2112, True, maxnreg=128), _cfg(128, 64, 8, 4, maxnreg=80)),
    # lk64r with gate_up BN 32 (79 registers, 32 KB at 3 stages: 6 blocks an SM instead of 4)
    "lk64n32": (64, _cfg(32, 64, 4, 3, 1, False), _cfg(128, 64, 8, 4, maxnreg=80)),
    "lk64n32s4": (64, _cfg(32, 64, 4, 4, 1, False), _cfg(128, 64, 8, 4, maxnreg=80)),
    # the shipped "s" tiles with stage 1 split to more programs (bs 16: 3-7 splits instead of 2-4)
    "cur_t1200": (16, _cfg(64, 128, 4, 3, 1200, True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "cur_t1600": (16, _cfg(64, 128, 4, 3, 1600, True), _cfg(128, 128, 4, 2, maxnreg=128)),
    # (2026-12-03, fourth session) bs 128 / E 33's stage 1 (840 programs at most, about 650 real on
    # 528 places of 4 blocks an SM) in 1, 2 and 4 splits at targets 800 (cur), 1200 and 1700: 289,
    # 290 and 293 us (6dcc63c:benchmarks/results/h200-2026-12-03-moe-split5)
    "cur_t1700": (16, _cfg(64, 128, 4, 3, 1700, True), _cfg(128, 128, 4, 2, maxnreg=128)),
    # BM 32 on 8 warps with BN 128 (each weight widened once per 32 rows, not once per 16; 128
    # registers, no spills, 2 blocks an SM): one tile an expert at bs 512 / E 257 (18 slots an
    # expert) instead of two. Prepared 2026-12-03, not run yet (benchmarks/results/
    # h200-2026-12-03-moe-split5)
    "m32": (32, _cfg(128, 64, 8, 4, 800, True, maxnreg=128), _cfg(128, 64, 8, 4, maxnreg=128)),
    # (2026-12-03, fifth session) BM 32 on 4 warps with BN 64 (128 and 126 registers capped, no
    # spills; 4 blocks an SM, twice m32's programs), each kernel alone and both, and m32 split to
    # twice the programs (BM 32 halves the row tiles the plan counts)
    "m32n64": (32, _cfg(64, 64, 4, 4, 800, True, maxnreg=128), _cfg(64, 64, 4, 4, maxnreg=128)),
    "m32g64": (32, _cfg(64, 64, 4, 4, 800, True, maxnreg=128), _cfg(128, 64, 8, 4, maxnreg=128)),
    "m32d64": (32, _cfg(128, 64, 8, 4, 800, True, maxnreg=128), _cfg(64, 64, 4, 4, maxnreg=128)),
    "m32t1600": (32, _cfg(128, 64, 8, 4, 1600, True, maxnreg=128), _cfg(128, 64, 8, 4, maxnreg=128)),
    # (2026-12-03, fifth session) the weight scales loaded one k step ahead (PF: 1-2 bytes a thread
    # a step, which Triton's pipeline does not stage, so each step waited on its own scale load)
    # and gate and up as one product of 2 * BN columns (GU: one widening, barrier and MMA wait a
    # step), on the shipped "s" tiles (cur) and the shipped "l" tiles (pair128)
    "curpf": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "curgu": (16, _cfg(64, 128, 4, 3, 800, True, GU=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "curgupf": (16, _cfg(64, 128, 4, 3, 800, True, PF=True, GU=True),
                _cfg(128, 128, 4, 2, maxnreg=128)),
    "pair128pf": _paired(64, _cfg(64, 64, 4, 3, 1, False, PF=True),
                         _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    "pair128gu": _paired(64, _cfg(64, 64, 4, 3, 1, False, GU=True), _cfg(128, 64, 8, 4, maxnreg=128)),
    "pair128gupf": _paired(64, _cfg(64, 64, 4, 3, 1, False, GU=True, PF=True),
                           _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    "pair128gupf32": _paired(64, _cfg(32, 64, 4, 3, 1, False, GU=True, PF=True),
                             _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    # stage 1 on BM 128 (two warpgroups on one widened weight tile: 194 instructions a k step for
    # 128 x 128 sums against 306 for 64 x 128 at BM 64), stage 2 on the same tiles
    # (2026-12-03, fifth session: JIT [6] / [7] 496 / 1396 us against pair128gupf's 465 / 1400)
    # 2026-12-04: the "l" tiles with stage 1 split (the part workspace and arrival counters, as in
    # "s"): bs128/E33 runs 264 real programs of 112 k steps on 528 block slots; target 1056 splits
    # it 2 ways, 2112 4 ways (and bs512/E33 2 ways); without PAIRS (down on BM 64, lk64's tiles)
    "pair128gupfsp": _paired(64, _cfg(64, 64, 4, 3, 1056, True, GU=True, PF=True),
                             _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    "pair128gupfsp2": _paired(64, _cfg(64, 64, 4, 3, 2112, True, GU=True, PF=True),
                              _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    "l64gupfsp": (64, _cfg(64, 64, 4, 3, 1056, True, GU=True, PF=True, EVEN=False),
                  _cfg(128, 64, 8, 4, maxnreg=80, PF=True)),
    "l64gupfsp2": (64, _cfg(64, 64, 4, 3, 2112, True, GU=True, PF=True, EVEN=False),
                   _cfg(128, 64, 8, 4, maxnreg=80, PF=True)),
    "b128gupf": (128, _cfg(64, 64, 8, 3, 1, False, GU=True, PF=True),
                 _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    "b128gupfs4": (128, _cfg(64, 64, 8, 4, 1, False, GU=True, PF=True),
                   _cfg(128, 64, 8, 4, maxnreg=128, PF=True)),
    "b128gupfd": (128, _cfg(64, 64, 8, 3, 1, False, GU=True, PF=True), _cfg(128, 64, 8, 4, maxnreg=128)),
    # down_s on BK 64 with the shipped "s" gate_up (PF): 256 columns on 8 warps (125 registers,
    # half the programs), 128 on 8 warps under 80 registers (3 blocks an SM) and on 4 warps
    "pfd256": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(256, 64, 8, 3, maxnreg=128)),
    "pfd128w8": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(128, 64, 8, 3, maxnreg=80)),
    "pfd128k64": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(128, 64, 4, 3, maxnreg=128)),
    # 2026-12-04: down_s on one or two k steps of 256 at d_expert 256 / 512 (fewer pipeline fills
    # a program: bs512/E257 runs 28,784 programs of 2 steps of 128)
    "pfdk256": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(128, 256, 4, 1, maxnreg=128)),
    "pfdn64k256": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(64, 256, 4, 2, maxnreg=128)),
    "pfdn64k256s1": (16, _cfg(64, 128, 4, 3, 800, True, PF=True), _cfg(64, 256, 4, 1, maxnreg=128)),
    # 2026-12-04: gate_up_s on BN 32 as one gate + up product (GU; 102 registers, 5 blocks an SM,
    # 334 loop instructions for 64 columns against 634 for 128), splits to 800 / 1600 programs
    "s32gu": (16, _cfg(32, 128, 4, 3, 800, True, PF=True, GU=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "s32gut16": (16, _cfg(32, 128, 4, 3, 1600, True, PF=True, GU=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "s32gus4": (16, _cfg(32, 128, 4, 4, 800, True, PF=True, GU=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "s32gunopf": (16, _cfg(32, 128, 4, 3, 800, True, GU=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    "s32pf": (16, _cfg(32, 128, 4, 3, 800, True, PF=True), _cfg(128, 128, 4, 2, maxnreg=128)),
    # and stage 1's BK 256 on the shipped "s" tiles (split to 800 programs)
    "cur256": (16, _cfg(64, 256, 4, 3, 800, True), _cfg(128, 128, 4, 2, maxnreg=128)),
    # 2026-12-03, third session: stage 2 at BM 128 (the weights as the product's first operand,
    # SWAP, was measured too: slower on every shape, 6dcc63c:benchmarks/results/h200-2026-12-03-moe-own)
    "n128": (128, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 4, maxnreg=128)),
    # the "l" tiles with stage 2 on BM 128: moe_gate_up's BM-64 tiles two at a time (PAIRS; EVEN
    # rounds each expert's tiles up to even); lk64r's row order (work-list) and by slot
    "lk64rA0": (64, _cfg(64, 64, 4, 3, 1, False, A2_TILES=False),
                _cfg(128, 64, 8, 4, maxnreg=80, A2_TILES=False)),
    "pair128": _paired(64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 4, maxnreg=128)),
    "pair128r": _paired(64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 4, maxnreg=96)),
    "pair128A0": _paired(64, _cfg(64, 64, 4, 3, 1, False, A2_TILES=False),
                         _cfg(128, 64, 8, 4, maxnreg=128, A2_TILES=False)),
    "pair128s3": _paired(64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 64, 8, 3, maxnreg=128)),
    "pair128k128": _paired(64, _cfg(64, 64, 4, 3, 1, False), _cfg(128, 128, 8, 2, maxnreg=128)),
    "pair128n64": _paired(64, _cfg(64, 64, 4, 3, 1, False), _cfg(64, 64, 4, 4, maxnreg=168)),
    # the "s" tiles' stage 2 on pairs too (BM 32): capped at 128 registers it spills, so 168 and BN 64
    "spair": _paired(16, _cfg(64, 128, 4, 3, 800, True), _cfg(128, 128, 4, 2, maxnreg=168)),
    "spair64": _paired(16, _cfg(64, 128, 4, 3, 800, True), _cfg(64, 128, 4, 2, maxnreg=128)),
    "spair64s3": _paired(16, _cfg(64, 128, 4, 3, 800, True), _cfg(64, 128, 4, 3, maxnreg=128)),
}


SHIPPED = "shipped"  # a variant name: the project's own plan and tiles, each shape in its own class

# name -> overrides laid over the shipped plan (each shape in its own class): launch.py's module
# names (ROUTE_PROGRAMS, MIN_ROWS) or TRITON entries by launch name
PLAN_VARIANTS = {
    # 2026-12-04: route's grid up to one program a 256-column chunk of the activations (the shipped
    # 1,024 programs loop 14 times at bs 512, each step a 512-byte load), and its slot scan on
    # 1,024 or 2,048 slots a step (9 steps of 512 at bs 512 / top-k 9)
    "rp16k": {"ROUTE_PROGRAMS": 16384},
    "rp16kb1k": {"ROUTE_PROGRAMS": 16384, "route": {"constexprs": {"BLOCK": 1024}}},
    "rp16kb2k": {"ROUTE_PROGRAMS": 16384, "route": {"constexprs": {"BLOCK": 2048}}},
    "rp4k": {"ROUTE_PROGRAMS": 4096},
    # to_bf16 on 2,048 / 4,096 values a program (and 8 warps), route on 8 warps
    "tb2k": {"to_bf16": {"constexprs": {"BLOCK": 2048}}},
    "tb4k": {"to_bf16": {"constexprs": {"BLOCK": 4096}}},
    "tb4kw8": {"to_bf16": {"constexprs": {"BLOCK": 4096}, "num_warps": 8}},
    "rw8": {"route": {"num_warps": 8}},
    # the "l" class from 32 slots an expert (bs128/E33, 35 a expert, runs "l"), and gate_up_l with
    # stage 1 split: target 1056 splits bs128/E33 2 ways, 2112 4 ways and bs512/E33 2 ways
    "mr32": {"MIN_ROWS": 32},
    "mr32sp": {"MIN_ROWS": 32, "gate_up_l": {"constexprs": {"SPLIT": True}, "plan": {"target": 1056}}},
    "mr32sp2": {"MIN_ROWS": 32, "gate_up_l": {"constexprs": {"SPLIT": True}, "plan": {"target": 2112}}},
    "mr32sp3": {"MIN_ROWS": 32, "gate_up_l": {"constexprs": {"SPLIT": True}, "plan": {"target": 3168}}},
}


def _variant(name: str) -> dict:
    if name == SHIPPED:
        return {}
    if name in PLAN_VARIANTS:
        return copy.deepcopy(PLAN_VARIANTS[name])
    bm, g, d = VARIANTS[name]
    g, d = copy.deepcopy(g), copy.deepcopy(d)
    g["constexprs"]["BM"] = bm
    d["constexprs"].setdefault("BM", bm)  # a down config with PAIRS names its own
    return {"MIN_ROWS": 1 << 30, "gate_up_s": g, "down_s": d}


def _spec_of(a):
    """A launch argument as Triton specializes it: a tensor by dtype, an int by value."""
    if isinstance(a, torch.Tensor):
        return ("T", str(_bytes(a).dtype).removeprefix("torch."))
    return ("I", int(a))


def _warm(job) -> str:
    """Compile one launch into Triton's cache (worker process; no launch, no data)."""
    kname, specs, grid, warps, stages, kwargs = job
    try:
        kern = getattr(KERNELS, kname)
        args = [getattr(torch, v) if k == "T" else v for k, v in specs]
        kern.warmup(*args, grid=grid, num_warps=warps, num_stages=stages, **kwargs)
        return ""
    except Exception as exc:  # the timed pass compiles it again and records the error
        return f"{kname}: {type(exc).__name__}: {str(exc)[:200]}"


def _jobs(launch, launches) -> list:
    jobs = []
    for name, grid, _block, _lds, args in launches:
        e = launch.TRITON[name]
        specs = tuple(_spec_of(a) for a in args)
        jobs.append((e["kernel"], specs, tuple(grid), e["num_warps"], e["num_stages"],
                     tuple(sorted(_kwargs(e).items()))))
    return jobs


def _precompile(datas, names, workers: int) -> None:
    import concurrent.futures as cf
    import multiprocessing as mp

    jobs = {}
    for data in datas.values():
        for vn in names:
            try:
                launch = _launch_module(_variant(vn))
                _out, launches = launch.plan(data)
            except Exception:
                continue
            for j in _jobs(launch, launches):
                kname, specs, grid, warps, stages, cx = j
                key = (kname, tuple((k, v if k == "T" else (v == 1, v % 16 == 0)) for k, v in specs),
                       warps, stages, cx)
                jobs.setdefault(key, (kname, specs, grid, warps, stages, dict(cx)))
    t0 = time.time()
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        errors = [e for e in pool.map(_warm, jobs.values()) if e]
    print(f"precompiled {len(jobs)} launches in {time.time() - t0:.1f} s; {len(errors)} errors", flush=True)
    for e in errors[:5]:
        print("  " + e, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--shapes", default="1,2,3,4,5,6,7")
    ap.add_argument("--workers", type=int, default=14)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "sweep_moe.jsonl").open("w")
    flush = torch.empty((1 << 30) // 4, dtype=torch.int32, device="cuda")
    names = args.variants.split(",")
    shapes = [int(s) for s in args.shapes.split(",")]
    datas, refs = {}, {}
    for i in shapes:
        datas[i] = moe.generate_input(moe.BENCHMARKS[i - 1], "cuda")
        refs[i] = moe.reference(datas[i]).float()
    if args.workers > 0:
        _precompile(datas, names, args.workers)
    table = {}
    for i in shapes:
        data, ref = datas[i], refs[i]
        for vn in names:
            rec = {"shape": i, "variant": vn, "config": VARIANTS.get(vn, "the project's plan")}
            try:
                launch = _launch_module(_variant(vn))
                out, launches = launch.plan(data)
                calls = _runner(launch, launches)
                for _n, _g, call in calls:
                    call()
                torch.cuda.synchronize()
                o = out.float()
                bad = ((o - ref).abs() > moe.ATOL + moe.RTOL * ref.abs()).sum() + torch.isnan(o).sum()
                rec.update(mismatches=int(bad), equal=bool(torch.equal(o, ref)),
                           grids={n: list(gr) for n, gr, _c in calls})
                rec["us"] = {n: gpu_median_us(c, args.reps, flush) for n, _g, c in calls}

                def whole(calls=calls):
                    for _n, _g, c in calls:
                        c()
                rec["total_us"] = gpu_median_us(whole, args.reps, flush)
            except Exception as exc:  # a variant that does not compile or run is recorded
                rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if "error" in rec:
                cell = "ERR"
                print(f"[{i}] {vn}: ERROR {rec['error'][:200]}", flush=True)
            else:
                us = rec["us"]
                cell = f"{rec['total_us']:.0f}" + ("" if rec["mismatches"] == 0 else "!")
                print(f"[{i}] {vn}: total {rec['total_us']:8.1f}  "
                      + "  ".join(f"{n} {v:7.1f}" for n, v in us.items())
                      + f"  bad {rec['mismatches']} eq {int(rec['equal'])} grids {rec['grids']}", flush=True)
            table[(i, vn)] = cell
    print("| variant | " + " | ".join(f"[{i}]" for i in shapes) + " |")
    for vn in names:
        print(f"| {vn} | " + " | ".join(table.get((i, vn), "-") for i in shapes) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
