"""amd-moe-mxfp4 on any CUDA GPU: an emitted submission's time per benchmark shape against a plain-torch
baseline on the same inputs and the shape's floor, all measured in one run.

    PYTHONPATH=. python benchmarks/bench_moe.py moe-mxfp4.py [more files ...] [--reps 20]

For each of the problem's 7 benchmark shapes (inputs from submitgen's generator on the GPU):

- ``file``: ``custom_kernel(data)`` of each file given, GPU events around the call, a 1 GiB fill
  before every call (L2 flushed, as the leaderboard does), median of --reps calls. The output is
  checked against submitgen's reference first (mismatches at the leaderboard's 0.05 + 0.05 |ref|).
- ``torch``: the problem's pure-torch fallback (``_sg_fallback``: the same pipeline one expert at a
  time in plain torch ops), timed the same way.
- ``floor``: the larger of (a) the MXFP4 weights and scales of the experts the shape's routing
  touches, read once at the copy bandwidth, and (b) the shape's FLOPs (6 * slots * d_expert * H) at
  the bf16 matrix rate. Both ceilings are measured at the start of the run: a device-to-device copy
  of 2 GiB (bytes read plus written over its time) and an 8192^3 bf16 ``torch.matmul`` on random
  data (medians of 10).

The last lines are a table: time, floor, ratio, baseline per shape, and the geomeans.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import gpu_median_us  # noqa: E402

from submitgen.problems import moe_mxfp4 as moe  # noqa: E402
from submitgen.problems.fallbacks import moe_mxfp4 as fallback  # noqa: E402

FLUSH_BYTES = 1 << 30


def _events_median(fn, reps: int, flush: torch.Tensor) -> float:
    """Median seconds of fn() over reps calls, each after a fill of the flush buffer."""
    return gpu_median_us(fn, reps, flush) / 1e6


def ceilings(flush: torch.Tensor) -> tuple[float, float]:
    """(copy bandwidth in bytes/s counting read + write, bf16 matmul rate in FLOP/s)."""
    src = torch.empty(1 << 31, dtype=torch.uint8, device="cuda").fill_(3)
    dst = torch.empty_like(src)
    dst.copy_(src)
    copy = _events_median(lambda: dst.copy_(src), 10, flush)
    src = dst = None
    n = 8192
    a = torch.randn((n, n), dtype=torch.bfloat16, device="cuda")
    b = torch.randn((n, n), dtype=torch.bfloat16, device="cuda")
    torch.matmul(a, b)
    mm = _events_median(lambda: torch.matmul(a, b), 10, flush)
    return 2 * (1 << 31) / copy, 2 * n**3 / mm


def floor_seconds(data, bandwidth: float, rate: float) -> tuple[float, str]:
    """The shape's floor and which term sets it."""
    hidden_states, gate_up, down, gate_up_scale, down_scale = data[:5]
    topk_ids = data[10]
    experts = gate_up.shape[0]
    touched = int(torch.unique(topk_ids).numel())
    per_expert = (gate_up.numel() * gate_up.element_size() + down.numel() * down.element_size()
                  + gate_up_scale.numel() + down_scale.numel()) / experts
    read = touched * per_expert / bandwidth
    tokens, hidden = hidden_states.shape
    d_expert = gate_up.shape[1] // 2
    flops = 6 * topk_ids.numel() * d_expert * hidden
    math_t = flops / rate
    return (read, "DRAM") if read >= math_t else (math_t, "bf16 math")


def _load_file(path: Path):
    spec = importlib.util.spec_from_file_location(f"moe_sub_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mismatches(out: torch.Tensor, ref: torch.Tensor) -> tuple[int, float]:
    o, r = out.float(), ref.float()
    bad = (o - r).abs() > moe.ATOL + moe.RTOL * r.abs()
    bad |= torch.isnan(o)
    return int(bad.sum()), float((o - r).abs().max())


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="emitted moe-mxfp4 submissions to time")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--baseline-reps", type=int, default=5)
    ap.add_argument("--shapes", default="", help="comma-separated benchmark indices (1-7); default all")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_moe: needs a CUDA GPU", file=sys.stderr)
        return 2
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    bandwidth, rate = ceilings(flush)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print(f"measured: copy {bandwidth / 1e12:.2f} TB/s (read + write), bf16 matmul {rate / 1e12:.0f} TFLOP/s")
    modules = [(_load_file(p), p.name) for p in args.files]
    picks = [int(s) for s in args.shapes.split(",") if s] or list(range(1, len(moe.BENCHMARKS) + 1))
    rows = []
    for i in picks:
        spec = moe.BENCHMARKS[i - 1]
        data = moe.generate_input(spec, "cuda")
        ref = moe.reference(data)
        floor, term = floor_seconds(data, bandwidth, rate)
        times = []
        for module, name in modules:
            out = module.custom_kernel(data)
            torch.cuda.synchronize()
            bad, err = _mismatches(out, ref)
            t = _events_median(lambda m=module, x=data: m.custom_kernel(x), args.reps, flush)
            times.append(t)
            print(f"[{i}] {moe.shape_label(spec)} {name}: {_fmt(t)} us, {bad} mismatches, "
                  f"max abs err {err:.3g}", flush=True)
        base_out = fallback._sg_fallback(data)
        bad, _ = _mismatches(base_out, ref)
        base = _events_median(lambda x=data: fallback._sg_fallback(x), args.baseline_reps, flush)
        print(f"[{i}] torch fallback: {_fmt(base)} us ({bad} mismatches); floor {_fmt(floor)} us ({term})",
              flush=True)
        rows.append((i, spec, times, base, floor, term))
        data = ref = base_out = None
        torch.cuda.empty_cache()
    print()
    names = [name for _m, name in modules]
    head = "| benchmark | " + " | ".join(f"{n} (us) | {n} / floor" for n in names)
    print(head + " | torch baseline (us) | floor (us) |")
    print("|---" * (2 + 2 * len(names) + 1) + "|")
    for _i, spec, times, base, floor, term in rows:
        d = moe.dims(spec)
        cells = " | ".join(f"{_fmt(t)} | {t / floor:.2f}x" for t in times)
        print(f"| E {d.experts}, d_expert {d.expert}, bs {d.tokens} | {cells} | {_fmt(base)} | "
              f"{_fmt(floor)} ({term}) |")

    def geo(values):
        return math.exp(sum(math.log(v) for v in values) / len(values))

    cells = " | ".join(f"{_fmt(geo([r[2][k] for r in rows]))} | "
                       f"{geo([r[2][k] / r[4] for r in rows]):.2f}x" for k in range(len(names)))
    print(f"| geomean | {cells} | {_fmt(geo([r[3] for r in rows]))} | {_fmt(geo([r[4] for r in rows]))} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
