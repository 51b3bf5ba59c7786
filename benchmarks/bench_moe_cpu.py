"""CPU cost of the amd-moe-mxfp4 problem on the real shapes: input generation, the reference, the
fallback, and (``--numpy``) the tests' independent float64 formulation, with the check between them.

Each shape runs in a fresh process so that its peak resident memory (ru_maxrss) is its own:

    python benchmarks/bench_moe_cpu.py                 # the 3 test shapes
    python benchmarks/bench_moe_cpu.py --shapes benchmark:0,3 --numpy --threads 1
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_one(kind: str, index: int, with_numpy: bool) -> dict:
    import torch

    from submitgen.problems import moe_mxfp4 as moe
    from submitgen.problems.compare import Tolerance, compare
    from submitgen.problems.fallbacks.moe_mxfp4 import _sg_fallback

    spec = (moe.TESTS if kind == "test" else moe.BENCHMARKS)[index]
    row: dict = {"shape": f"{kind} {index}: {moe.shape_label(spec)}"}
    t = time.perf_counter()
    data = moe.generate_input(spec)
    row["generate_s"], row["generate_rss_gib"] = time.perf_counter() - t, _rss_gib()
    t = time.perf_counter()
    ref = moe.reference(data)
    row["reference_s"], row["reference_rss_gib"] = time.perf_counter() - t, _rss_gib()
    tol = Tolerance(rtol=moe.RTOL, atol=moe.ATOL)
    t = time.perf_counter()
    out = _sg_fallback(data)
    row["fallback_s"] = time.perf_counter() - t
    row["fallback_check"] = compare(out, ref, tol).message
    row["fallback_equal"] = bool(torch.equal(out, ref))
    if with_numpy:
        sys.path.insert(0, str(ROOT / "tests"))
        import moe_numpy

        t = time.perf_counter()
        full = moe_numpy.moe(data)
        row["numpy_s"] = time.perf_counter() - t
        want = torch.from_numpy(moe_numpy.bf16_round(full)).to(torch.bfloat16)
        row["numpy_check"] = compare(ref, want, tol).message
        row["numpy_differing_tokens"] = int((ref != want).any(dim=1).sum())
    row["peak_rss_gib"] = _rss_gib()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="test", help="test, benchmark, or test:0,2 / benchmark:1")
    ap.add_argument("--numpy", action="store_true", help="also run the tests' float64 formulation")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        kind, index = args.one.split(":")
        print(json.dumps(run_one(kind, int(index), args.numpy)))
        return
    kind, _, subset = args.shapes.partition(":")
    sys.path.insert(0, str(ROOT))
    from submitgen.problems import moe_mxfp4 as moe

    count = len(moe.TESTS if kind == "test" else moe.BENCHMARKS)
    for index in [int(i) for i in subset.split(",")] if subset else range(count):
        cmd = [sys.executable, __file__, "--one", f"{kind}:{index}", "--threads", str(args.threads)]
        cmd += ["--numpy"] if args.numpy else []
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if res.returncode:
            print(f"{kind} {index}: failed\n{res.stderr[-2000:]}")
            continue
        row = json.loads(res.stdout.strip().splitlines()[-1])
        print(row.pop("shape"))
        for key, value in row.items():
            print(f"  {key}: {value:.1f}" if isinstance(value, float) else f"  {key}: {value}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
