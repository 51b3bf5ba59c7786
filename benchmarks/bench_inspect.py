"""Time `submitgen inspect` (load + read + report, text and JSON) of a ~1 MB gfx950 code object.

Builds the object with the bundled clang (many kernels with unrolled bodies), then prints the
size and the best/median wall time of several runs. Target: < 0.5 s.

``--many DIR`` instead times ``submitgen inspect --json`` (a fresh process, as a user runs it)
over every code object under DIR (``*.co``, ``*.hsaco``), e.g. the objects of the ``amd-aiter``
wheel (``pip download --pre --no-deps amd-aiter``, unzip it), against ``llvm-readelf-22 --notes``
(one process over the same files), run back to back in each of ``--repeat`` rounds, each run
after reading every file once (a warm page cache for both); it prints
both medians and inspect's time as a multiple of readelf's, without the instruction mix
(``--no-disasm``) and with it (issue 26's goal: within 3x without, 5x with):

    .venv/bin/python benchmarks/bench_inspect.py
    .venv/bin/python benchmarks/bench_inspect.py --many /tmp/aiter/x --repeat 3 [--mode no-disasm]
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


def _wall(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, bytes]:
    """Wall time, CPU time (user + system, of the process and everything it waited for: the
    disassembler's processes too) and stdout of one fresh process (exit status 0 or 1, inspect's
    findings; an exit status 1 with nothing on stdout is an ``Error:`` line, e.g. a budget, and no
    figure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, env=env)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode not in (0, 1) or not r.stdout:
        raise SystemExit(r.stderr.decode()[-2000:])
    return took, cpu, r.stdout


def _warm(paths: list[str]) -> None:
    """Read every file once, so that each timed run finds them in the page cache: this machine's
    kernel reclaims cold pages (DAMON), and the run that came first would otherwise pay the disk
    reads for the one after it (readelf ran first and measured 1.3-1.7 s against 0.55 s warm)."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def many(root: Path, repeat: int, modes: tuple[bool, ...] = (False, True)) -> None:
    """For each mode (without, then with the instruction mix): ``repeat`` rounds of
    ``llvm-readelf-22 --notes`` and ``inspect --json`` over the same files, back to back (on a
    loaded machine both see the same load); prints each median (wall and CPU), the ratio of the
    medians and the load average."""
    paths = sorted(str(p) for ext in ("*.co", "*.hsaco") for p in root.rglob(ext))
    if not paths:
        raise SystemExit(f"no *.co or *.hsaco under {root}")
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    for with_disasm in modes:
        flags = ["--json"] if with_disasm else ["--json", "--no-disasm"]
        base, ours, base_cpu, ours_cpu, ratios, out = [], [], [], [], [], b""
        load0 = os.getloadavg()[0]
        for _ in range(repeat):
            _warm(paths)
            r_t, r_c, _ = _wall(["llvm-readelf-22", "--notes", *paths])
            _warm(paths)
            i_t, i_c, out = _wall([sys.executable, "-m", "submitgen", "inspect", *flags, *paths], env)
            base.append(r_t)
            ours.append(i_t)
            base_cpu.append(r_c)
            ours_cpu.append(i_c)
            ratios.append(i_t / r_t)
        m_r, m_i = statistics.median(base), statistics.median(ours)
        c_r, c_i = statistics.median(base_cpu), statistics.median(ours_cpu)
        goal = 5 if with_disasm else 3
        print(f"inspect {' '.join(flags):<18} over {len(paths)} objects: median {m_i:7.2f} s "
              f"(runs {', '.join(f'{t:.2f}' for t in ours)}); llvm-readelf-22 --notes median {m_r:5.2f} s "
              f"(runs {', '.join(f'{t:.2f}' for t in base)}); ratio {m_i / m_r:5.1f}x "
              f"(median of per-round ratios {statistics.median(ratios):.1f}x; goal {goal}x); "
              f"CPU medians {c_i:.2f} s vs {c_r:.2f} s ({c_i / c_r:.1f}x); "
              f"load {load0:.2f} -> {os.getloadavg()[0]:.2f}; {len(out):,} bytes of JSON")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--many", type=Path, help="time inspect --json over every code object under this folder")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", choices=("both", "no-disasm", "disasm"), default="both",
                    help="with --many: without the instruction mix, with it, or both (default)")
    a = ap.parse_args()
    if a.many is not None:
        many(a.many, a.repeat, {"both": (False, True), "no-disasm": (False,), "disasm": (True,)}[a.mode])
    else:
        main()
