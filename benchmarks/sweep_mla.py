"""Variant sweep of the amd-mixed-mla decode on a CUDA GPU, through Triton's JIT.

    PYTHONPATH=. python benchmarks/sweep_mla.py [--out DIR] [--reps 20] [--variants a,b]
        [--project NAME=DIR ...] [--profile]

Each variant is the default kernel project (kernels/mixed_mla) with its plan's split constants and
its TRITON entries resolved for sm_90, some of them overridden (tile BN, warps, pipeline stages).
The 2026-12-02 run (6dcc63c:benchmarks/results/h200-2026-12-02-f8-mla/) also had "lb" variants: the
project experiments/mla_lastblock of 3f8df4e (the merge done by the last split to arrive at a
counter), removed after that run measured it slower (80.1 against 58.2 us geomean). For every benchmark config
of the problem, every variant's launches run through Triton's JIT on the problem's own inputs;
the output is checked against submitgen's float32 reference (mismatches at 0.1 + 0.1 |ref|, at
most 5 % allowed) and the launches are timed together as one CUDA graph (no host launch overhead
between them; the emitted file adds its own, a few us a launch): GPU events around a replay, a
1 GiB fill before each, median of --reps. Two calls of the plan are made first, so a plan's
per-(device, batch) state (lastblock's counters) is in place as in the emitted file. JSON lines go
to DIR/sweep_mla.jsonl, a table of medians (us) to stdout. Times through the JIT rank variants;
the figures to report come from the emitted files (`submitgen bench`).

A variant is a name of ``VARIANTS`` or a spec ``PROJECT[+KEY=VALUE...]``: a project (``base``, or
one given by ``--project NAME=DIR``, a folder with the default project's two files) with plan
constants (``base+TARGET_PROGRAMS=512``; ``MAX_SPLITS`` sets the merge's ``SPLITS`` too) and
decode options set (``num_warps``, ``num_stages``, a constexpr as ``c.BN=32``). With
``--profile``, each variant's replay also runs once under torch.profiler, and its kernels' own
GPU times (us, by kernel name) are recorded beside the median (``kernels`` in the JSON lines;
the rest of the median is launch gaps).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import gpu_median_us, resolved  # noqa: E402

from submitgen.problems import mixed_mla as mla  # noqa: E402

ARCH = "sm_90"
PROJECTS = {"base": ROOT / "kernels" / "mixed_mla"}


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# name -> (project, plan constants, decode overrides). "base" is the project as it builds for sm_90
# (BN 64, 4 warps, 3 stages; the plan's splits from BN 32); the 2026-12-02 run swept these over
# the plan of 3f8df4e (TARGET_PROGRAMS 512, MIN_TILES_PER_SPLIT 4, MAX_SPLITS 64), whose best
# per config the plan now takes.
VARIANTS = {
    "base": ("base", {}, {}),
    "base_t128": ("base", {"TARGET_PROGRAMS": 128}, {}),
    "base_t512": ("base", {"TARGET_PROGRAMS": 512}, {}),
    "base_m1": ("base", {"MIN_TILES_PER_SPLIT": 1}, {}),
    "base_m4": ("base", {"MIN_TILES_PER_SPLIT": 4}, {}),
    "base_st2": ("base", {}, {"num_stages": 2}),
    "base_bn128w8": ("base", {}, {"constexprs": {"BN": 128}, "num_warps": 8, "num_stages": 2}),
}


def _spec(name: str) -> tuple[str, dict, dict]:
    """A variant's (project, plan constants, decode overrides): VARIANTS' entry, or the parsed
    ``PROJECT[+KEY=VALUE...]``."""
    if name in VARIANTS:
        return VARIANTS[name]
    project, *pairs = name.split("+")
    if project not in PROJECTS:
        raise KeyError(f"{name}: no project {project!r} (known: {', '.join(PROJECTS)})")
    consts, over = {}, {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key.startswith("c."):
            over.setdefault("constexprs", {})[key[2:]] = int(value)
        elif key in ("num_warps", "num_stages"):
            over[key] = int(value)
        else:
            consts[key] = int(value)
    return project, consts, over


def _variant(name: str):
    project, consts, over = _spec(name)
    launch = _load(f"mla_launch_{name}", PROJECTS[project] / "launch.py")
    kernels = _load(f"mla_kernels_{project}", PROJECTS[project] / "mixed_mla.py")
    for key, value in consts.items():
        if not hasattr(launch, key):
            raise KeyError(f"{name}: {PROJECTS[project].name}/launch.py has no {key}")
        setattr(launch, key, value)
    if "MAX_SPLITS" in consts:  # the merges' SPLITS (a power of two >= every split count) follow
        for merge in ("mla_reduce", "mla_reduce_wide"):
            if merge in launch.TRITON:  # a project of before 2026-12-03 has no wide merge
                launch.TRITON[merge]["constexprs"]["SPLITS"] = consts["MAX_SPLITS"]
    for n in list(launch.TRITON):
        launch.TRITON[n] = resolved(launch.TRITON[n], ARCH)
    dec = launch.TRITON["mla_decode"]
    dec["constexprs"].update(over.get("constexprs", {}))
    for key in ("num_warps", "num_stages"):
        if key in over:
            dec[key] = over[key]
    return launch, kernels


def _calls(launch, kernels, data):
    out, launches = launch.plan(data)
    calls = []
    for name, grid, _block, _lds, args in launches:
        e = launch.TRITON[name]
        kern = getattr(kernels, e["kernel"])

        def call(kern=kern, grid=grid, args=args, e=e):
            kern[grid](*args, num_warps=e["num_warps"], num_stages=e["num_stages"], **e["constexprs"])
        calls.append(call)
    return out, calls


def _kernel_us(fn, flush: torch.Tensor) -> dict[str, float]:
    """Each kernel's own GPU time (us, summed by name) in one fn() after a fill, by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    flush.fill_(1)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    for ev in prof.events():
        if ev.device_type.name == "CUDA" and "fill" not in ev.name:
            short = ev.name.split("(")[0][:40]
            out[short] = out.get(short, 0.0) + ev.device_time
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--project", action="append", default=[], metavar="NAME=DIR",
                    help="a kernel project folder (launch.py, mixed_mla.py) that variants can name")
    ap.add_argument("--profile", action="store_true", help="also each kernel's own GPU time")
    args = ap.parse_args(argv)
    for item in args.project:
        pname, _, folder = item.partition("=")
        PROJECTS[pname] = Path(folder).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "sweep_mla.jsonl").open("w")
    flush = torch.empty((1 << 30) // 4, dtype=torch.int32, device="cuda")
    names = args.variants.split(",")
    table = {}
    for i, spec in enumerate(mla.BENCHMARKS):
        data = mla.generate_input(spec, "cuda")
        ref = mla.reference(data).float()
        for vn in names:
            rec = {"config": i, "batch": spec["batchsize"], "kv": spec["kvseqlen"], "variant": vn}
            try:
                launch, kernels = _variant(vn)
                for _ in range(2):  # two calls: a plan's cached state is armed as in the file
                    out, calls = _calls(launch, kernels, data)
                    for c in calls:
                        c()
                torch.cuda.synchronize()
                o = out.float()
                bad = int(((o - ref).abs() > mla.ATOL + mla.RTOL * ref.abs()).sum() + torch.isnan(o).sum())
                rec.update(mismatch_ratio=bad / o.numel(), launches=len(calls))

                # replayed as one CUDA graph, so that the host's launch overhead (Triton's JIT
                # launcher: tens of us) is not timed between the kernels
                try:
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        for c in calls:
                            c()
                    graph.replay()
                    torch.cuda.synchronize()
                    rec["replay_equal"] = bool(torch.equal(o, out.float()))
                    timed = graph.replay
                except Exception as exc:  # timed launch by launch instead, and said so
                    rec["graph_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"

                    def timed(calls=calls):
                        for c in calls:
                            c()
                rec["us"] = gpu_median_us(timed, args.reps, flush)
                if args.profile:
                    try:
                        rec["kernels"] = _kernel_us(timed, flush)
                    except Exception as exc:  # the median stands without the breakdown
                        rec["profile_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            except Exception as exc:  # a variant that does not compile or run is recorded
                rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            log.write(json.dumps(rec) + "\n")
            log.flush()
            ok = "error" not in rec and rec["mismatch_ratio"] <= mla.MAX_MISMATCH_RATIO
            cell = f"{rec['us']:.1f}" + ("" if ok else "!") if "us" in rec else "ERR"
            note = rec.get("error", "") or rec.get("graph_error", "")
            if "kernels" in rec:
                parts = " ".join(f"{k} {v:.1f}" for k, v in rec["kernels"].items())
                note = f"{parts} {note}".rstrip()
            print(f"[{spec['batchsize']}/{spec['kvseqlen']}] {vn}: {cell}  {note}", flush=True)
            table[(i, vn)] = rec.get("us") if ok else None
    heads = [f"{s['batchsize']}/{s['kvseqlen']}" for s in mla.BENCHMARKS]
    print("| variant | " + " | ".join(heads) + " | geomean |")
    for vn in names:
        cells = [table.get((i, vn)) for i in range(len(mla.BENCHMARKS))]
        gm = math.exp(sum(math.log(c) for c in cells) / len(cells)) if all(cells) else None
        row = " | ".join(f"{c:.1f}" if c else "-" for c in cells)
        print(f"| {vn} | {row} | " + (f"{gm:.1f}" if gm else "-") + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
