"""Numerics of the HIP kernel projects on an NVIDIA GPU, through the CUDA build of the same
device source (kernels/include/submitgen/device.h makes one source build for HIP and for CUDA).

For each project (examples/hip_mxfp4_mm, examples/hip_mixed_mla) this script:

1. builds the device source into a cubin with nvcc (``submitgen.toolchain.compile_cuda``);
2. loads it with the driver API through ctypes (``cuModuleLoadData`` from memory,
   ``cuModuleGetFunction`` per kernel);
3. for every test and benchmark shape of the problem: makes the inputs on the GPU with the problem's
   ``generate_input``, runs the project's own ``launch.py`` plan, launches each planned kernel with
   ``cuLaunchKernel`` on the default queue (handle 0, the one torch uses) with ``kernelParams``
   pointing at each argument's ctypes value (a by-value struct is a ctypes Structure instance whose
   pointer fields hold ``data_ptr()``), synchronises, and compares with the problem's torch
   reference at the leaderboard's tolerance;
4. times the planned launches with CUDA events (mean over ``--repeat`` back-to-back runs, warm L2).

The output buffer and every workspace are filled with NaN before the checked run, so an element
the kernels never write shows up as a mismatch. mixed-mla runs with the fp8 KV (the plan's default)
and again with the bf16 KV, to separate the kernel's arithmetic from the fp8 rounding.

    python experiments/cuda_numerics.py [--problem all|mxfp4-mm|mixed-mla] [--repeat 20] [--out DIR]

Prints a table per problem and writes numerics.txt and numerics.json to --out (default: $OUT or .).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path
from types import ModuleType

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from submitgen.problems import get_problem  # noqa: E402
from submitgen.toolchain.cuda import compile_cuda  # noqa: E402

PROJECTS = {"mxfp4-mm": "hip_mxfp4_mm", "mixed-mla": "hip_mixed_mla"}


class Driver:
    """The CUDA driver API, bound to the context torch made current."""

    def __init__(self) -> None:
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # makes torch's primary context current on this thread
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._check(self.lib.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        self._check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("no current CUDA context after torch initialised the device")
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError(f"{what} failed: CUresult {rc} ({(name.value or b'?').decode()})")

    def load(self, cubin: bytes, names: tuple[str, ...]) -> dict[str, ctypes.c_void_p]:
        module = ctypes.c_void_p()
        self._check(
            self.lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)), "cuModuleLoadData"
        )
        self._module = module  # keep it loaded
        funcs = {}
        for name in names:
            f = ctypes.c_void_p()
            self._check(self.lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()),
                        f"cuModuleGetFunction({name})")
            funcs[name] = f
        return funcs

    def launch(self, func: ctypes.c_void_p, grid: tuple[int, int, int], block: tuple[int, int, int],
               lds: int, args: tuple) -> None:
        values = [_ctypes_value(a) for a in args]
        params = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
        rc = self.lib.cuLaunchKernel(func, *grid, *block, lds, None, params, None)
        self._check(rc, "cuLaunchKernel")


def _ctypes_value(arg: object) -> ctypes._SimpleCData | ctypes.Structure:
    """One kernel argument as the ctypes object whose address goes into kernelParams. The default
    kernels take 4-byte ints and floats (their code objects' metadata says so)."""
    if isinstance(arg, torch.Tensor):
        return ctypes.c_void_p(arg.data_ptr())
    if isinstance(arg, bool):
        raise TypeError("bool kernel argument")
    if isinstance(arg, int):
        return ctypes.c_int32(arg)
    if isinstance(arg, float):
        return ctypes.c_float(arg)
    if (
        isinstance(arg, tuple)
        and len(arg) == 2
        and isinstance(arg[0], type)
        and issubclass(arg[0], ctypes.Structure)
    ):
        cls, fields = arg
        inst = cls()
        for key, value in fields.items():
            setattr(inst, key, value.data_ptr() if isinstance(value, torch.Tensor) else value)
        return inst
    raise TypeError(f"unsupported kernel argument {type(arg).__name__}")


def load_plan(kernel_dir: str) -> ModuleType:
    path = REPO / "examples" / kernel_dir / "launch.py"
    spec = importlib.util.spec_from_file_location(f"_plan_{kernel_dir}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensors(args: tuple) -> list[torch.Tensor]:
    found = []
    for a in args:
        if isinstance(a, torch.Tensor):
            found.append(a)
        elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], dict):
            found.extend(v for v in a[1].values() if isinstance(v, torch.Tensor))
    return found


def run_case(drv: Driver, funcs: dict, plan_mod: ModuleType, problem, spec: dict, repeat: int,
             ref_cache: dict, label_extra: str = "") -> dict:
    t0 = time.time()
    data = problem.generate_input(spec, device="cuda")
    key = tuple(sorted(spec.items()))
    if key not in ref_cache:
        ref_cache.clear()
        ref_cache[key] = problem.reference(data)
    ref = ref_cache[key]
    out, launches = plan_mod.plan(data)
    leaves = {t.data_ptr() for t in problem.leaves(data)}
    with torch.no_grad():
        out.fill_(float("nan"))
        for _name, _g, _b, _l, args in launches:
            for t in _tensors(args):
                if t.data_ptr() not in leaves and t.data_ptr() != out.data_ptr() and t.is_floating_point():
                    t.fill_(float("nan"))
    torch.cuda.synchronize()

    def run_all() -> None:
        for name, grid, block, lds, args in launches:
            drv.launch(funcs[name], tuple(grid), tuple(block), lds, args)

    run_all()
    torch.cuda.synchronize()
    res = problem.check(out, ref)
    # timing (warm L2, back to back)
    run_all()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        run_all()
    end.record()
    torch.cuda.synchronize()
    us = start.elapsed_time(end) * 1000.0 / repeat
    res2 = problem.check(out, ref)  # still right after the timed runs (workspaces reused)
    geometry = "; ".join(f"{n} grid={tuple(g)} block={tuple(b)[0]}" for n, g, b, _l, _a in launches)
    row = {
        "shape": problem.shape_label(spec) + label_extra,
        "seed": spec["seed"],
        "passed": bool(res.passed and res2.passed),
        "max_abs_err": res.max_abs_err,
        "mismatches": res.mismatches,
        "total": res.total,
        "mismatch_ratio": res.mismatch_ratio,
        "rel_l2_err": res.rel_l2_err,
        "time_us": us,
        "launches": geometry,
        "message": res.message,
        "wall_s": round(time.time() - t0, 2),
    }
    torch.cuda.empty_cache()
    return row


def fmt_table(title: str, rows: list[dict]) -> str:
    head = (f"{'shape':<44} {'seed':>5} {'max abs err':>11} {'mismatch':>16} {'ratio':>9} {'rel L2':>9} "
            f"{'time us':>9}  verdict")
    lines = [title, head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['shape']:<44} {r['seed']:>5} {r['max_abs_err']:>11.4g} "
            f"{r['mismatches']:>7}/{r['total']:<8} {r['mismatch_ratio']:>9.3%} {r['rel_l2_err']:>9.3g} "
            f"{r['time_us']:>9.1f}  {'pass' if r['passed'] else 'FAIL'}"
        )
    for r in rows:
        lines.append(f"  {r['shape']}: {r['launches']}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default="all", choices=["all", *PROJECTS])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    drv = Driver()
    report: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "problems": {}}
    texts = [f"device: {report['device']}, torch {report['torch']}"]
    all_ok = True
    names = list(PROJECTS) if a.problem == "all" else [a.problem]
    for pname in names:
        problem = get_problem(pname)
        kdir = PROJECTS[pname]
        plan_mod = load_plan(kdir)
        src = REPO / "examples" / kdir / plan_mod.SOURCES[0]
        t0 = time.time()
        cubin = compile_cuda([src], arch=a.arch)
        funcs = drv.load(cubin, tuple(plan_mod.KERNELS))
        texts.append(
            f"{pname}: built {src.relative_to(REPO)} for {a.arch} with nvcc in {time.time() - t0:.1f}s "
            f"({len(cubin)} bytes)"
        )
        specs, seen = [], set()
        for s in (*problem.tests, *problem.benchmarks):
            k = tuple(sorted(s.items()))
            if k not in seen:
                seen.add(k)
                specs.append(dict(s))
        variants = [("", None)]
        if pname == "mixed-mla":
            variants = [(" kv=fp8", "fp8"), (" kv=bf16", "bf16")]
        for suffix, kv in variants:
            if kv is not None:
                plan_mod.KV_FORMAT = kv
            rows, ref_cache = [], {}
            for s in specs:
                try:
                    row = run_case(drv, funcs, plan_mod, problem, s, a.repeat, ref_cache, suffix)
                except Exception as e:  # report and go on with the next shape
                    row = {"shape": problem.shape_label(s) + suffix, "seed": s["seed"], "passed": False,
                           "max_abs_err": math.nan, "mismatches": -1, "total": -1, "mismatch_ratio": math.nan,
                           "rel_l2_err": math.nan, "time_us": math.nan, "launches": f"error: {e!r}",
                           "message": repr(e), "wall_s": 0}
                print(json.dumps(row), flush=True)
                rows.append(row)
                all_ok &= row["passed"]
            report["problems"][pname + suffix] = rows
            tol = problem.tolerance
            title = (
                f"== {pname}{suffix}: rtol={tol.rtol:g} atol={tol.atol:g}"
                + (f", up to {tol.max_mismatch_ratio:.0%} mismatches" if tol.max_mismatch_ratio
                   else ", every element")
                + f"; time = mean of {a.repeat} back-to-back runs of the planned launches (warm L2)"
            )
            texts.append(fmt_table(title, rows))
    text = "\n\n".join(texts) + f"\n\nALL {'PASS' if all_ok else 'NOT ALL PASS'}\n"
    print(text)
    (out_dir / "numerics.txt").write_text(text)
    (out_dir / "numerics.json").write_text(json.dumps(report, indent=1))
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
