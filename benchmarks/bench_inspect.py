"""Time `submitgen inspect` (load + read + report, text and JSON) of a ~1 MB gfx950 code object.

Builds the object with the bundled clang (many kernels with unrolled bodies), then prints the
size and the best/median wall time of several runs. Target: < 0.5 s.

``--many DIR`` instead times one ``submitgen inspect --json`` (a fresh process, as a user runs it)
over every code object under DIR (``*.co``, ``*.hsaco``), e.g. the 2,613 objects of the
``amd-aiter`` wheel (``pip download --pre --no-deps amd-aiter``, unzip it):

    .venv/bin/python benchmarks/bench_inspect.py
    .venv/bin/python benchmarks/bench_inspect.py --many /tmp/aiter/x --repeat 3 [--disasm] [--readelf]

``--readelf`` also times ``llvm-readelf-22 --notes`` (one process over the same files) and prints
inspect's time as a multiple of it (issue 26's goal: within 5x with the instruction mix, 3x
without).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from submitgen.cli import cli

KERNEL = r"""
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void k{i}(float* __restrict__ out, const float* __restrict__ in, int n, float a) {{
  int t = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  float acc = 0.f;
#pragma unroll
  for (int j = 0; j < {unroll}; ++j) acc = acc * a + in[(t + j * {i}) % n];
  out[t] = acc;
}}
"""


def zig(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "ziglang", *args], cwd=cwd, check=True, capture_output=True)


def build(d: Path, kernels: int = 24, unroll: int = 400) -> bytes:
    (d / "big.hip").write_text("".join(KERNEL.format(i=i + 1, unroll=unroll) for i in range(kernels)))
    zig("clang", "-x", "hip", "--cuda-device-only", "--offload-arch=gfx950", "-nogpulib", "-nogpuinc", "-O3",
        "-S", "big.hip", "-o", "big.s", cwd=d)
    zig("clang", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx950", "-c", "big.s", "-o", "big.o", cwd=d)
    zig("ld.lld", "-shared", "big.o", "-o", "big.co", cwd=d)
    return (d / "big.co").read_bytes()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        data = build(d)
        path = d / "big.co"
        runner = CliRunner()
        for args in ([str(path)], [str(path), "--json"]):
            times = []
            for _ in range(7):
                t0 = time.perf_counter()
                r = runner.invoke(cli, ["inspect", *args])
                times.append(time.perf_counter() - t0)
                assert r.exit_code == 0, r.output
            print(f"inspect {' '.join(args[1:]) or '(text)':<8} {len(data):>9,} bytes  "
                  f"{r.output.count(chr(10)):>5} lines  best {min(times) * 1000:7.1f} ms  "
                  f"median {statistics.median(times) * 1000:7.1f} ms  (target < 500 ms)")
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "submitgen", "inspect", str(path)], check=True, capture_output=True
        )
        print(
            "inspect as a fresh process (python start-up included): "
            f"{(time.perf_counter() - t0) * 1000:.1f} ms"
        )


def _readelf(paths: list[str], repeat: int) -> float:
    """Best wall time of ``llvm-readelf-22 --notes`` over ``paths`` (one process)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(["llvm-readelf-22", "--notes", *paths], capture_output=True, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def many(root: Path, repeat: int, with_disasm: bool = False, readelf: bool = False) -> None:
    disasm = () if with_disasm else ("--no-disasm",)  # one llvm-objdump per object when asked
    paths = sorted(str(p) for ext in ("*.co", "*.hsaco") for p in root.rglob(ext))
    if not paths:
        raise SystemExit(f"no *.co or *.hsaco under {root}")
    times, cpus, out = [], [], b""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(
            [sys.executable, "-m", "submitgen", "inspect", "--json", *disasm, *paths],
            capture_output=True,
            env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(time.perf_counter() - t0)
        cpus.append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
        out = r.stdout
        if r.returncode not in (0, 1):
            raise SystemExit(r.stderr.decode()[-2000:])
    print(
        f"inspect --json over {len(paths)} objects under {root}: {len(out):,} bytes of JSON, "
        f"wall best {min(times):.2f} s, median {statistics.median(times):.2f} s; CPU (the process and every "
        f"child it ran, c++filt included) best {min(cpus):.2f} s ({repeat} runs, fresh process each)"
    )
    if readelf:
        base = _readelf(paths, repeat)
        print(f"llvm-readelf-22 --notes over the same objects: best {base:.2f} s; inspect --json"
              f"{'' if with_disasm else ' --no-disasm'} takes {min(times) / base:.1f}x that")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--many", type=Path, help="time inspect --json over every code object under this folder")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--disasm", action="store_true", help="with --many: include the instruction mix")
    ap.add_argument("--readelf", action="store_true",
                    help="with --many: compare with llvm-readelf-22 --notes")
    a = ap.parse_args()
    if a.many is not None:
        many(a.many, a.repeat, a.disasm, a.readelf)
    else:
        main()
