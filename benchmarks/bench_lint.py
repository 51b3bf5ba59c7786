"""How long `submitgen lint` takes on large and deep files.

Run: .venv/bin/python benchmarks/bench_lint.py

Measured on the 2-core development machine shared with other jobs, 2026-12-07 04:47 UTC,
CPython 3.11.7, load average 4.4-5.5 (the cpu figures of lint_report are this process's: they
leave out KernelGuard's forked child for files over 4,096 characters):
    fresh process, 997-line file, 'python -m submitgen lint': cpu median 0.82 s (5 runs), wall
        median 1.70 s; torch not imported
    first call (the problems' facts read from source)      0.14 s wall
    1 MB of small functions                                 cpu 0.95 s, wall 9.6 s
    3,000-term 'a' + 'b' chain / 5,000-deep unary chain / 200,000-deep unary chain
                                                            cpu <= 0.01 s each (syntax finding:
                                                            past Python's recursion limit)
    1,100 elifs / 990-long attribute chain                  cpu <= 0.03 s each
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from submitgen.lint import lint_report

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\nimport base64\n"
TARGET = 1_000_000


def functions() -> str:
    """1 MB of small functions calling each other: typical code, many names."""
    parts = [HEADER]
    size = len(HEADER)
    i = 0
    while size < TARGET - 100:
        part = (f"def f{i}(a, b):\n    c = a + b * {i}\n    d = f{i + 1}(c, a) if c > 0 else c\n"
                f"    return d\n\n\n")
        parts.append(part)
        size += len(part)
        i += 1
    parts.append(f"def f{i}(a, b):\n    return a\n\n\ndef custom_kernel(data):\n    return f0(data, 1)\n")
    return "".join(parts)


def deep() -> dict[str, str]:
    return {
        "3,000-term 'a' + 'b' chain": "x = " + " + ".join(["'a'"] * 3000) + "\n",
        "5,000-deep unary chain": "x = " + "-" * 5000 + "1\n",
        "1,100 elifs": "if x == 0:\n    y = 0\n"
        + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, 1101)),
        "990-long attribute chain": "x = a" + ".b" * 990 + "\n",
        "200,000-deep unary chain (past the parser's bound)": "x = " + "-" * 200_000 + "1\n",
    }


def timed(label: str, text: str) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    report = lint_report(text, problem="mxfp4-mm")
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    rules = sorted({f.rule for f in report.errors + report.warnings})
    print(
        f"{label:55s} {len(text):>9,} bytes  wall {dt:6.2f} s  cpu {dc:6.2f} s  rules: "
        f"{', '.join(rules) or '-'}"
    )


def thousand_lines() -> str:
    """A 1,003-line file of small functions, header and custom_kernel included."""
    parts = [HEADER]
    i = 0
    while sum(p.count("\n") for p in parts) < 990:
        parts.append(f"def f{i}(a, b):\n    c = a + b * {i}\n    return f{i + 1}(c, a) if c > 0 else c\n\n")
        i += 1
    parts.append(f"def f{i}(a, b):\n    return a\n\n\ndef custom_kernel(data):\n    return f0(data, 1)\n")
    return "".join(parts)


_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from submitgen.lint import lint_file_report
report = lint_file_report(sys.argv[1])
print(json.dumps([time.perf_counter() - t0, 'torch' in sys.modules, report.passed]))
"""


def fresh_process(text: str, runs: int = 5) -> None:
    """`submitgen lint` in a fresh interpreter: the whole command's wall time, and lint's own
    (imports included), and whether torch got imported."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "submission.py"
        path.write_text(text)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        walls, cpus, inner, torch_seen = [], [], [], set()
        for _ in range(runs):
            t0 = time.perf_counter()
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "submitgen", "lint", str(path)], env=env,
                           capture_output=True, check=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            walls.append(time.perf_counter() - t0)
            cpus.append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], env=env, capture_output=True,
                                 text=True, check=True).stdout
            spent, torch_loaded, _ = json.loads(out)
            inner.append(spent)
            torch_seen.add(torch_loaded)
    lines = text.count("\n")
    print(f"fresh process, {lines:,}-line file: 'python -m submitgen lint' wall median "
          f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), cpu median "
          f"{statistics.median(cpus):.2f} s; import + "
          f"lint_file_report median {statistics.median(inner):.2f} s; torch imported: "
          f"{sorted(torch_seen)}")


def main() -> None:
    fresh_process(thousand_lines())
    t0 = time.perf_counter()
    lint_report("x = 1\n", problem="mxfp4-mm")  # reads the problem registry once
    print(f"first call (reads the problems' facts from source, no torch): "
          f"{time.perf_counter() - t0:.2f} s; torch imported: {'torch' in sys.modules}; "
          f"load average {os.getloadavg()[0]:.1f}")
    timed("1 MB of small functions", functions())
    for label, body in deep().items():
        timed(label, HEADER + body + "\n\ndef custom_kernel(data):\n    return data\n")


if __name__ == "__main__":
    main()
