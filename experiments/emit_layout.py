"""Two checkouts' emitted files side by side (issue 46: the file reads top-down): the payload of the
four default builds and the per-call host cost of custom_kernel.

    payload OLD NEW [--reference-kernels DIR]   build mxfp4-mm, mixed-mla and moe-mxfp4 (gfx950) and
        moe-mxfp4 --target cuda --arch sm_90 with each checkout; print submitgen's payload estimate
        (the submission compressed alone) and, given a reference-kernels checkout, kernelbot's
        payload simulated: base64(zlib(json(config))) at zlib's default level with the problem's
        files (task.yml), in three orders of its ``files``: task.yml's (the submission first),
        sorted (LeaderboardTask.to_str's sort_keys) and Postgres jsonb's (shorter keys first).
    dispatch OLD NEW [--rounds N]   build examples/my_gemm (fresh output and --reuse-output) and the
        default mxfp4-mm with each checkout, load all six in one process against the stand-in HIP
        runtime and time each custom_kernel in turn (benchmarks/bench_dispatch.py's per_call_ns),
        the same tuple and a new tuple each call; print each shape's ns and the new/old ratios.

Run from the repository root: PYTHONPATH=. python3 experiments/emit_layout.py payload OLD NEW ...
(CPU only; OLD and NEW are checkouts, e.g. `git worktree add /tmp/old main`)."""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import yaml

BUILDS = {"mxfp4-mm": [], "mixed-mla": [], "moe-mxfp4": [],
          "moe-sm90": ["--target", "cuda", "--arch", "sm_90"]}


def _build(tree: str, args: list[str], out: Path) -> dict:
    command = [sys.executable, "-m", "submitgen", "build", *args, "-o", str(out), "--force", "--json"]
    env = {**os.environ, "PYTHONPATH": tree}
    r = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)  # -m puts cwd first
    return json.loads(r.stdout)


def _kernelbot(folder: Path, submission: str, order: str) -> int:
    task = yaml.safe_load((folder / "task.yml").read_text())
    files = {f["name"]: submission if f["source"] == "@SUBMISSION@" else (folder / f["source"]).read_text()
             for f in task["files"]}
    keys = {"task.yml": list(files), "sorted": sorted(files),
            "jsonb": sorted(files, key=lambda k: (len(k.encode()), k.encode()))}[order]
    config = {"main": task["config"]["main"], "sources": {k: files[k] for k in keys}, "lang": task["lang"],
              "arch": None, "benchmarks": task.get("benchmarks", []), "tests": task.get("tests", []),
              "mode": "leaderboard", "test_timeout": 180, "benchmark_timeout": 180, "ranked_timeout": 180,
              "ranking_by": task.get("ranking_by", "last"), "seed": None, "multi_gpu": False}
    return len(base64.b64encode(zlib.compress(json.dumps(config).encode("utf-8"))))


def payload(old: str, new: str, reference: Path | None) -> None:
    with tempfile.TemporaryDirectory() as d:
        for name, extra in BUILDS.items():
            problem = "moe-mxfp4" if name == "moe-sm90" else name
            row = [name]
            for tag, tree in (("old", old), ("new", new)):
                out = Path(d) / f"{tag}-{name}.py"
                result = _build(tree, [problem, *extra], out)
                row.append(f"{tag} {result['payload']['chars'] if result['ok'] else result['error']}")
                if reference is not None and result["ok"]:
                    folder = next(reference.glob(f"problems/*/{problem}"))
                    row += [f"{order} {_kernelbot(folder, out.read_text(), order)}"
                            for order in ("task.yml", "sorted", "jsonb")]
            print("  ".join(row), flush=True)


def dispatch(old: str, new: str, rounds: int) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "my_gemm"
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for tag, tree in (("old", old), ("new", new)):
            for name, args in (("fresh", ["--kernels", str(example)]),
                               ("reuse", ["--kernels", str(example), "--reuse-output"]), ("default", [])):
                paths[f"{tag} {name}"] = Path(d) / f"{tag}_{name}.py"
                _build(tree, ["mxfp4-mm", *args], paths[f"{tag} {name}"])
        sys.path.insert(0, str(Path(new) / "benchmarks"))
        from _common import fake_hip, load_module
        from bench_dispatch import per_call_ns

        from submitgen.problems import get_problem

        os.environ["SUBMITGEN_HIP_LIBRARY"] = str(fake_hip())
        kernels = {key: load_module(path).custom_kernel for key, path in paths.items()}
        problem = get_problem("mxfp4-mm")
        for spec in problem.benchmarks:
            fns = dict(kernels)
            for key, kernel in kernels.items():
                if "default" not in key:
                    fns[key + ", new tuple"] = lambda data, k=kernel: k((*data,))
            t = per_call_ns(fns, problem.empty_input(spec, "cpu"), 300, rounds)
            ratios = "  ".join(f"{k[4:]} {t['new' + k[3:]] / t[k]:.3f}" for k in t if k.startswith("old"))
            times = "  ".join(f"{k} {v:.0f}" for k, v in t.items())
            print(problem.shape_label(spec), "ns:", times, flush=True)
            print("  new/old:", ratios, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["payload", "dispatch"])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--reference-kernels", type=Path)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    if args.what == "payload":
        payload(args.old, args.new, args.reference_kernels)
    else:
        dispatch(args.old, args.new, args.rounds)


if __name__ == "__main__":
    main()
