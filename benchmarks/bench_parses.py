"""How many times one `submitgen build PROBLEM` parses a code object (the readers' entry points
``read_code_object`` and ``read_cubin`` are wrapped with a counter), cold (empty compile cache)
and warm, plus the payload estimates and lint runs it makes.

usage: python benchmarks/bench_parses.py [PROBLEM ...]   (default: mxfp4-mm mixed-mla)"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from submitgen.pipeline import BuildOptions, build

COUNTED = (
    ("submitgen.readers.amd", "read_code_object", "code-object parses"),
    ("submitgen.readers.cuda.cubin", "read_cubin", "cubin parses"),
    ("submitgen.lint.payload", "estimate_payload", "payload estimates"),
    ("submitgen.lint", "lint_text", "lint_text runs"),
    ("submitgen.lint", "lint_report", "lint_report runs"),
)


def _wrap(counts: Counter, label: str, fn):
    def counted(*args, **kwargs):
        counts[label] += 1
        return fn(*args, **kwargs)

    return counted


def _instrument(counts: Counter) -> None:
    """Wrap each counted function in its module and in every submitgen module that imported it."""
    for module_name, attr, label in COUNTED:
        module = importlib.import_module(module_name)
        original = getattr(module, attr)
        wrapped = _wrap(counts, label, original)
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("submitgen") and getattr(mod, attr, None) is original:
                setattr(mod, attr, wrapped)


def main() -> None:
    problems = sys.argv[1:] or ["mxfp4-mm", "mixed-mla"]
    counts: Counter = Counter()
    _instrument(counts)
    for problem in problems:
        with tempfile.TemporaryDirectory() as d:
            os.environ["SUBMITGEN_CACHE_DIR"] = str(Path(d) / "cache")
            for run in ("cold", "warm"):
                counts.clear()
                build(BuildOptions(problem=problem, output=Path(d) / "s.py"))
                print(f"{problem} {run}: " + ", ".join(f"{label} {counts[label]}" for *_, label in COUNTED))


if __name__ == "__main__":
    main()
