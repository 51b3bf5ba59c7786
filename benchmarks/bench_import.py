"""An emitted file's own import cost, beyond `import torch`: decode, sha256 check, module load
and function lookup, against the stand-in HIP library (so no GPU is needed). Median of N fresh
processes per variant.

usage: python benchmarks/bench_import.py [--runs 20] [--json] [--cpp] [--runtime hip-stand-in|cuda]
--cpp also times the load_inline launcher (first import compiles; later imports hit the
torch extension cache, as on a runner after the compile pass). --runtime cuda builds the CUDA
target and imports it on a real NVIDIA GPU (cuModuleLoadData of the real driver)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import fake_hip, print_table

from submitgen.pipeline import BuildOptions, build

PROBE = """
import sys, time
t0 = time.perf_counter()
import torch
if sys.argv[2] == "cuda":
    # the CUDA context exists before the file is imported, as in eval.py's worker
    torch.empty(1, device="cuda")
t1 = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
t2 = time.perf_counter()
assert m.SUBMITGEN_BACKEND == sys.argv[2], m.SUBMITGEN_BACKEND
print(t1 - t0, t2 - t1)
"""


def measure(path: Path, env: dict, runs: int, backend: str) -> tuple[float, float]:
    torch_s, own_s = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PROBE, str(path), backend], env=env, check=True,
                             capture_output=True, text=True).stdout.split()
        torch_s.append(float(out[0]))
        own_s.append(float(out[1]))
    return statistics.median(torch_s), statistics.median(own_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cpp", action="store_true")
    ap.add_argument("--runtime", choices=["hip-stand-in", "cuda"], default="hip-stand-in")
    args = ap.parse_args()
    if args.runtime == "cuda":
        import torch

        arch = "sm_{}{}".format(*torch.cuda.get_device_capability())
        rows = []
        with tempfile.TemporaryDirectory() as d:
            for problem in ("mxfp4-mm", "mixed-mla"):
                path = Path(d) / f"{problem}-cuda.py"
                build(BuildOptions(problem=problem, output=path, target="cuda", arch=arch))
                t, own = measure(path, dict(os.environ), args.runs, "cuda")
                rows.append(
                    [
                        problem,
                        f"ctypes, CUDA driver ({arch})",
                        args.runs,
                        f"{own * 1e3:.1f}",
                        f"{t * 1e3:.0f}",
                    ]
                )
        print_table(
            "Import cost of emitted files beyond `import torch` (real CUDA driver)",
            ["problem", "launcher", "processes", "own import ms (median)", "import torch ms"],
            rows,
            args.json,
        )
        return
    lib = fake_hip()
    env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(lib))
    env.pop("SUBMITGEN_FAKEHIP_LOG", None)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        variants = [("mxfp4-mm", "ctypes"), ("mixed-mla", "ctypes")]
        if args.cpp:
            variants.append(("mxfp4-mm", "cpp"))
        for problem, launcher in variants:
            path = Path(d) / f"{problem}-{launcher}.py"
            build(BuildOptions(problem=problem, output=path, launcher=launcher))
            if launcher == "cpp":
                env_cpp = dict(env, TORCH_EXTENSIONS_DIR=str(Path(d) / "ext"))
                _, cold = measure(path, env_cpp, 1, "dry-run")
                t, own = measure(path, env_cpp, max(3, args.runs // 4), "dry-run")
                rows.append([problem, "cpp (first import: compiles)", 1, f"{cold * 1e3:.0f}", ""])
                rows.append(
                    [
                        problem,
                        "cpp (extension cached)",
                        max(3, args.runs // 4),
                        f"{own * 1e3:.1f}",
                        f"{t * 1e3:.0f}",
                    ]
                )
                continue
            t, own = measure(path, env, args.runs, "dry-run")
            rows.append([problem, launcher, args.runs, f"{own * 1e3:.1f}", f"{t * 1e3:.0f}"])
            t, own = measure(path, dict(os.environ), max(3, args.runs // 4), "fallback")
            rows.append(
                [
                    problem,
                    "fallback (no GPU: decode + notice)",
                    max(3, args.runs // 4),
                    f"{own * 1e3:.1f}",
                    f"{t * 1e3:.0f}",
                ]
            )
    print_table(
        "Import cost of emitted files beyond `import torch` (stand-in HIP library)",
        ["problem", "launcher", "processes", "own import ms (median)", "import torch ms"],
        rows,
        args.json,
    )


if __name__ == "__main__":
    main()
