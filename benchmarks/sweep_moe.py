"""Tile sweep of the default amd-moe-mxfp4 Triton kernels on a CUDA GPU, through Triton's JIT.

    PYTHONPATH=. python benchmarks/sweep_moe.py [--out DIR] [--reps 10]

Runs kernels/moe_mxfp4's own plan with its TRITON entries as the sm_90 build resolves them, then
each variant below laid over them; for each benchmark shape of a variant's tile class it checks
the output against submitgen's reference (mismatches at 0.05 + 0.05 |ref|) and times every launch
on its own and the four together (GPU events, a 1 GiB fill before each, median of --reps). The
JSON lines go to DIR/sweep_moe.jsonl, a table to stdout. Times through the JIT are for ranking
variants; the figures to report come from the emitted file (benchmarks/bench_moe.py).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from submitgen.problems import moe_mxfp4 as moe  # noqa: E402

PROJECT = ROOT / "kernels" / "moe_mxfp4"
ARCH = "sm_90"


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, PROJECT / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KERNELS = _load("moe_kernels_sweep", "moe_mxfp4.py")


def _resolved(entry: dict, arch: str) -> dict:
    e = copy.deepcopy(entry)
    over = e.pop("arch", {}).get(arch, {})
    e["constexprs"].update(over.get("constexprs", {}))
    e.setdefault("plan", {}).update(over.get("plan", {}))
    for key in ("num_warps", "num_stages", "options"):
        if key in over:
            e[key] = over[key]
    return e


def _launch_module(variant: dict):
    """launch.py with TRITON resolved for ARCH and the variant laid over it."""
    launch = _load("moe_launch_sweep", "launch.py")
    for name in list(launch.TRITON):
        launch.TRITON[name] = _resolved(launch.TRITON[name], ARCH)
    for name, over in variant.items():
        if name in launch.TRITON:
            entry = launch.TRITON[name]
            entry["constexprs"].update(over.get("constexprs", {}))
            entry["plan"].update(over.get("plan", {}))
            for key in ("num_warps", "num_stages"):
                if key in over:
                    entry[key] = over[key]
        else:
            setattr(launch, name, over)
    launch.A_BF16 = launch.TRITON["route"]["constexprs"]["A_BF16"]
    return launch


def _bytes(a):
    if isinstance(a, torch.Tensor) and a.dtype in (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu):
        return a.view(torch.uint8)
    return a


def _runner(launch, launches):
    calls = []
    for name, grid, _block, _lds, args in launches:
        e = launch.TRITON[name]
        kern = getattr(KERNELS, e["kernel"])
        args = [_bytes(a) for a in args]

        def call(kern=kern, grid=grid, args=args, e=e):
            kern[grid](*args, num_warps=e["num_warps"], num_stages=e["num_stages"], **e["constexprs"])
        calls.append((name, grid, call))
    return calls


def _median(fn, reps, flush):
    times = []
    for _ in range(reps):
        flush.fill_(1)
        s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        t.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(t) * 1e3)
    return statistics.median(times)


def _cfg(bm, bn, bk, warps, stages, target=None, split=None):
    c = {"constexprs": {"BM": bm, "BN": bn, "BK": bk}, "num_warps": warps, "num_stages": stages}
    if split is not None:
        c["constexprs"]["SPLIT"] = split
    if target is not None:
        c["plan"] = {"target": target}
    return c


# (gate_up config, down config) per variant (one BM for both); a class's shapes run every variant.
# sm_90 resolves LUT (the e2m1 -> bf16 byte-permute widening) on; s0 / l0 are the shipped tiles.
SMALL = [
    (_cfg(16, 64, 128, 4, 3, 1056, False), _cfg(16, 64, 128, 4, 3)),
    (_cfg(16, 64, 64, 4, 4, 1056, True), _cfg(16, 64, 64, 4, 3)),
    (_cfg(16, 64, 128, 4, 3, 1056, True), _cfg(16, 64, 128, 4, 3)),
    (_cfg(16, 128, 64, 4, 4, 1056, True), _cfg(16, 128, 64, 4, 3)),
    (_cfg(32, 64, 64, 4, 4, 1056, True), _cfg(32, 64, 64, 4, 4)),
]
LARGE = [
    (_cfg(64, 64, 128, 4, 3), _cfg(64, 64, 128, 4, 3)),
    (_cfg(64, 64, 64, 4, 4), _cfg(64, 64, 64, 4, 4)),
    (_cfg(64, 128, 64, 8, 4), _cfg(64, 128, 64, 8, 4)),
    (_cfg(128, 64, 64, 8, 4), _cfg(128, 64, 64, 8, 4)),
    (_cfg(32, 64, 64, 4, 4), _cfg(32, 64, 64, 4, 4)),
]
CLASS_SHAPES = {"s": (1, 2, 3, 4, 5), "l": (3, 5, 6, 7)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--classes", default="s,l")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "sweep_moe.jsonl").open("w")
    flush = torch.empty((1 << 30) // 4, dtype=torch.int32, device="cuda")
    table = []
    classes = args.classes.split(",")
    shapes = sorted({i for c in classes for i in CLASS_SHAPES[c]})
    for i in shapes:
        spec = moe.BENCHMARKS[i - 1]
        t0 = time.time()
        data = moe.generate_input(spec, "cuda")
        ref = moe.reference(data).float()
        print(f"[{i}] {moe.shape_label(spec)}: inputs + reference {time.time() - t0:.1f} s", flush=True)
        for cls in classes:
            if i not in CLASS_SHAPES[cls]:
                continue
            for vi, (g, d) in enumerate(SMALL if cls == "s" else LARGE):
                variant = {"MIN_ROWS": 0 if cls == "l" else 1 << 30, f"gate_up_{cls}": g, f"down_{cls}": d}
                rec = {"shape": i, "class": cls, "variant": vi, "gate_up": g, "down": d}
                try:
                    launch = _launch_module(variant)
                    out, launches = launch.plan(data)
                    calls = _runner(launch, launches)
                    for _n, _g, call in calls:
                        call()
                    torch.cuda.synchronize()
                    o = out.float()
                    bad = ((o - ref).abs() > moe.ATOL + moe.RTOL * ref.abs()).sum() + torch.isnan(o).sum()
                    bad = int(bad)
                    rec.update(mismatches=bad, max_abs_err=float((o - ref).abs().max()),
                               equal=bool(torch.equal(o, ref)),
                               grids={n: list(gr) for n, gr, _c in calls})
                    rec["us"] = {n: _median(c, args.reps, flush) for n, _g, c in calls}

                    def whole(calls=calls):
                        for _n, _g, c in calls:
                            c()
                    rec["total_us"] = _median(whole, args.reps, flush)
                except Exception as exc:  # a variant that does not compile or run is recorded
                    rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                log.write(json.dumps(rec) + "\n")
                log.flush()
                if "error" in rec:
                    line = f"[{i}] {cls}{vi}: ERROR {rec['error'][:150]}"
                else:
                    us = rec["us"]
                    line = (f"[{i}] {cls}{vi}: total {rec['total_us']:8.1f}  "
                            + "  ".join(f"{n} {v:7.1f}" for n, v in us.items())
                            + f"  bad {rec['mismatches']} eq {int(rec['equal'])} grids {rec['grids']}")
                print(line, flush=True)
                table.append(line)
        data = ref = None
        torch.cuda.empty_cache()
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
