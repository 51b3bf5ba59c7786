"""Shared helpers of the benchmarks: table printing, the stand-in HIP library, inputs."""

from __future__ import annotations

import copy
import importlib.util
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent


def load_module(path: Path, name: str | None = None):
    """The Python file at ``path`` as a module (registered in sys.modules under ``name``, default
    its stem), for the kernel projects' launch.py and Triton sources and for submissions."""
    name = name or path.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def resolved(entry: dict, arch: str) -> dict:
    """A copy of a TRITON entry with its "arch" overrides for ``arch`` applied (constexprs and plan
    merged, num_warps / num_stages / options replaced), as the build resolves it."""
    e = copy.deepcopy(entry)
    over = e.pop("arch", {}).get(arch, {})
    e["constexprs"].update(over.get("constexprs", {}))
    e.setdefault("plan", {}).update(over.get("plan", {}))
    for key in ("num_warps", "num_stages", "options"):
        if key in over:
            e[key] = over[key]
    return e


def gpu_median_us(fn, reps: int, flush: torch.Tensor) -> float:
    """Median microseconds of fn() by GPU events over reps calls, each after a fill of ``flush``."""
    times = []
    for _ in range(reps):
        flush.fill_(1)
        s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        t.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(t) * 1e3)
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}"


def fake_hip() -> Path:
    """Build the stand-in libamdhip64 (tests/fakehip/fakehip.c) into a temp folder."""
    out = Path(tempfile.mkdtemp(prefix="submitgen-bench-")) / "libfakehip.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(out), str(REPO / "tests" / "fakehip" / "fakehip.c")],
        check=True,
    )
    return out


def print_table(
    title: str, header: list[str], rows: list[list], as_json: bool, extra: dict | None = None
) -> None:
    if as_json:
        print(json.dumps({"title": title, "machine": machine(), **(extra or {}),
                          "rows": [dict(zip(header, r)) for r in rows]}, indent=2))
        return
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"{title}\n({machine()})")
    for extra_line in (extra or {}).get("notes", []):
        print(extra_line)
    for i, r in enumerate(cells):
        print("  " + "  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            print("  " + "  ".join("-" * w for w in widths))


def python() -> str:
    return sys.executable
