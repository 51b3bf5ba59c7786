"""Each command's wall time and peak memory (max RSS of the process and the children it waited
for) on its largest legitimate input, for the budgets table in BENCHMARKS.md ("Each command's budget").

    PYTHONPATH=. .venv/bin/python benchmarks/bench_budgets.py [--only lint,build,...]

Inputs: lint a 1,000,000-byte submission (the leaderboard's cap: the problem's fallback plus a
base64 literal filling the file); lint and inspect the costliest 1,000,000-byte source to parse
(500,000 one-name lines, `lint-costliest`, `inspect-costliest`); inspect --json and diff the
largest code object of tests/corpus (and of DIR with --corpus DIR); compile examples/hip_mxfp4_mm/mxfp4_mm.hip
(--no-cache); build mxfp4-mm (default kernels, cold cache); test and bench the file that build
wrote (every shape of the problem). Each is one fresh process, as a user runs it."""

from __future__ import annotations

import argparse
import base64
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, peak MB, exit code) of one command."""
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "submitgen", *argv], cwd=cwd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - t0, usage.ru_maxrss / 1024, p.returncode


def one_mb_submission(path: Path) -> None:
    from submitgen.problems import get_problem

    head = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\nimport torch\n\n"
    body = (get_problem("mxfp4-mm").fallback_source
            + "\n\ndef custom_kernel(data):\n    return _sg_fallback(data)\n")
    room = 1_000_000 - len(head) - len(body) - len("_PAD = ''\n")
    pad = base64.b64encode(random.Random(0).randbytes(room * 3 // 4 + 3)).decode()[:room]
    path.write_text(head + f"_PAD = '{pad}'\n" + body)
    assert path.stat().st_size == 1_000_000, path.stat().st_size


def costliest_source(path: Path) -> None:
    """The costliest source per byte for ast.parse of the shapes tried: one name a line."""
    head = "#!POPCORN leaderboard amd-mxfp4-mm\n"
    body = "a\n" * ((1_000_000 - len(head)) // 2)
    path.write_text(head + body + "#" * (1_000_000 - len(head) - len(body) - 1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only",
                    default="lint,lint-costliest,inspect,inspect-costliest,diff,compile,build,test,bench")
    ap.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus")
    ap.add_argument("--make-input", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make_input:
        one_mb_submission(args.make_input)
        return
    only = set(args.only.split(","))
    objs = sorted((p for p in args.corpus.rglob("*") if p.suffix in (".co", ".hsaco")),
                  key=lambda p: p.stat().st_size)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        env = dict(os.environ, PYTHONPATH=str(REPO), SUBMITGEN_CACHE_DIR=str(d / "cache"))
        # made in a child: this process stays small (a child's peak RSS starts from its parent's)
        subprocess.run([sys.executable, __file__, "--make-input", str(d / "big.py")], env=env, check=True)
        costliest_source(d / "names.py")
        cases = {
            "lint": ["lint", str(d / "big.py")],
            "lint-costliest": ["lint", str(d / "names.py")],
            "inspect-costliest": ["inspect", str(d / "names.py")],
            "inspect": ["inspect", "--json", str(objs[-1])],
            "diff": ["diff", str(objs[-2]), str(objs[-1])],
            "compile": ["compile", str(REPO / "examples/hip_mxfp4_mm/mxfp4_mm.hip"), "--no-cache",
                        "-o", str(d / "mm.co")],
            "build": ["build", "mxfp4-mm", "-o", str(d / "sub.py")],
            "test": ["test", str(d / "sub.py")],
            "bench": ["bench", str(d / "sub.py")],
        }
        for name, argv in cases.items():
            if name not in only and not (name == "build" and only & {"test", "bench"}):
                continue
            wall, mb, code = run(argv, d, env)
            print(f"{name:8} {wall:7.2f} s {mb:8.0f} MB  exit {code}  submitgen {' '.join(argv)}", flush=True)


if __name__ == "__main__":
    main()
