"""How long `submitgen lint` takes on large and deep files (the taint analysis is linear; the
parser runs in a thread with a big stack for deep files).

Run: .venv/bin/python benchmarks/bench_lint.py

Measured on the 2-core development machine shared with other jobs (load average 5.5), CPython 3.11.7:
    first call (imports the registry and torch)            6.4 s
    1 MB taint chain (a quadratic analysis needs ~70,000 rounds)   wall  8.6 s, cpu 4.4 s
    1 MB of small functions                                 wall 11.4 s, cpu 4.8 s
    3,000-term 'a' + 'b' chain                              cpu 0.45 s (nesting warning)
    5,000-deep unary chain / 1,100 elifs / 990-long attribute chain   cpu <= 0.05 s each
    200,000-deep unary chain                                cpu 0.01 s (syntax finding: past the
                                                            parser's bound)
Before (quadratic taint propagation): 53 KB took 30 s and 110 KB ran past 120 s.
"""

from __future__ import annotations

import os
import time

from submitgen.lint import lint_report

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\nimport base64\n"
TARGET = 1_000_000


def taint_chain() -> str:
    """x_i = x_{i+1} + 1 for every i, the decoder at the bottom: each round of a fixed-point
    iteration would taint one more name, so a quadratic analysis needs ~70,000 rounds."""
    lines = []
    i = 0
    size = len(HEADER)
    while size < TARGET - 200:
        line = f"x{i} = x{i + 1} + 1\n"
        lines.append(line)
        size += len(line)
        i += 1
    tail = f"x{i} = base64.b64decode(b'eD0x')\nexec(x0)\n\n\ndef custom_kernel(data):\n    return data\n"
    return HEADER + "".join(lines) + tail


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


def main() -> None:
    t0 = time.perf_counter()
    lint_report("x = 1\n", problem="mxfp4-mm")  # imports the registry (and torch) once
    print(f"first call (imports the problem registry and torch): {time.perf_counter() - t0:.2f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    timed("1 MB taint chain (x_i = x_(i+1) + 1, decoder last)", taint_chain())
    timed("1 MB of small functions", functions())
    for label, body in deep().items():
        timed(label, HEADER + body + "\n\ndef custom_kernel(data):\n    return data\n")


if __name__ == "__main__":
    main()
