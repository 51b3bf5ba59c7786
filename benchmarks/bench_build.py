"""Cold and warm `submitgen build` of both problems' default kernels.

cold: an empty compile cache (SUBMITGEN_CACHE_DIR points at a new folder); warm: the same build
again. Each is timed as a whole command (python start, `import torch`, compile or cache hit,
plan checks on every shape, render, checks, write) and in-process (build() alone, torch already
imported), median of --runs.

usage: python benchmarks/bench_build.py [--runs 3] [--json]"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import print_table

from submitgen.pipeline import BuildOptions, build


def command_s(problem: str, out: Path, env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "submitgen", "build", problem, "-o", str(out)], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def in_process_s(problem: str, out: Path) -> float:
    t0 = time.perf_counter()
    build(BuildOptions(problem=problem, output=out))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    saved = os.environ.get("SUBMITGEN_CACHE_DIR")
    for problem in ("mxfp4-mm", "mixed-mla"):
        cold_cmd, warm_cmd, cold_lib, warm_lib = [], [], [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, SUBMITGEN_CACHE_DIR=str(Path(d) / "cache"))
                cold_cmd.append(command_s(problem, Path(d) / "s.py", env))
                warm_cmd.append(command_s(problem, Path(d) / "s.py", env))
            with tempfile.TemporaryDirectory() as d:
                os.environ["SUBMITGEN_CACHE_DIR"] = str(Path(d) / "cache")
                cold_lib.append(in_process_s(problem, Path(d) / "s.py"))
                warm_lib.append(in_process_s(problem, Path(d) / "s.py"))
        rows.append([problem, f"{statistics.median(cold_cmd):.2f}", f"{statistics.median(warm_cmd):.2f}",
                     f"{statistics.median(cold_lib):.2f}", f"{statistics.median(warm_lib):.2f}"])
    if saved is None:
        os.environ.pop("SUBMITGEN_CACHE_DIR", None)
    print_table(f"submitgen build, seconds (median of {args.runs})",
                ["problem", "cold command", "warm command", "cold build()", "warm build()"], rows, args.json)


if __name__ == "__main__":
    main()
