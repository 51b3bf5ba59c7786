"""Host cost of one custom_kernel call, in ns, for every mxfp4-mm benchmark shape, measured in
one process beside baselines:

- seed replica: an honest replica of a hand-written seed's per-call path: a per-shape cache keyed
  by (m, n, k) from A's and B's shapes, the three input pointers written into the shape's prebuilt
  kernarg buffer with one struct.pack_into, one argtypes-declared hipModuleLaunchKernel call, and
  the shape's preallocated output returned (so it never allocates);
- submitgen (a fresh output per call) and submitgen --reuse-output (one output per shape, like the
  seed), with their ratio to the seed replica;
- the fresh output alone: torch.empty_like of the output, which a fresh-output launcher pays on
  every call and the seed never does;
- submitgen with a new input tuple on every call (the same tensors): the emitted file's slow path,
  which computes the shape key and looks the shape up; the same tuple again (the other columns)
  takes its fast path, which checks the inputs' version counters instead;
- the components, each alone: the problem's shape key (``_sg_key``: every input's shape) and its
  lookup, the fast path's guard (the sum of the inputs' version counters), writing the kernel's
  input addresses into its kernarg buffer (pack), and the bare launch: one pre-converted ctypes
  call of the launch function (the floor for any Python-side launcher);
- (cuda only) a one-op torch call (torch.neg on A), for scale.

The same one-kernel project (examples/my_gemm) is used for submitgen and the seed replica, so the
launches are identical; submitgen's default kernels (one or two launches per shape) are listed
too. Each figure is the best, over many short loops taken in turn (every variant once per round),
of the mean ns per call: other processes on the machine only ever add time. Runtime
"hip-stand-in" (default) uses the stand-in libamdhip64 and CPU tensors; runtime "cuda" builds
the cubin and launches on a real NVIDIA GPU.

usage: python benchmarks/bench_dispatch.py [--runtime hip-stand-in|cuda] [--calls 500] [--rounds 40]
       [--json]"""

from __future__ import annotations

import argparse
import ctypes
import os
import struct
import tempfile
import time
from pathlib import Path

import torch
from _common import REPO, fake_hip, load_module, print_table

from submitgen.pipeline import BuildOptions, build
from submitgen.problems import get_problem
from submitgen.readers.containers import load_code_objects

EXAMPLE = REPO / "examples" / "my_gemm"


class SeedReplica:
    """custom_kernel as a hand-written seed does it (see the module docstring)."""

    def __init__(self, lib, image: bytes, runtime: str):
        self.cuda = runtime == "cuda"
        self.library = lib._name
        self._image = image
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        load = lib.cuModuleLoadData if self.cuda else lib.hipModuleLoadData
        get = lib.cuModuleGetFunction if self.cuda else lib.hipModuleGetFunction
        assert load(ctypes.byref(module), image) == 0
        assert get(ctypes.byref(fn), module, b"my_gemm") == 0
        self.fn = fn
        self.launch = lib.cuLaunchKernel if self.cuda else lib.hipModuleLaunchKernel
        self.launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        self.launch.restype = ctypes.c_int
        self.end = 0 if self.cuda else 3
        self.cache = {}

    def _prepare(self, m, n, k, device):
        out = torch.empty((m, n), dtype=torch.bfloat16, device=device)
        args = ctypes.create_string_buffer(48)
        struct.pack_into("<QQQQiii", args, 0, 0, 0, 0, out.data_ptr(), m, n, k)
        size = ctypes.c_size_t(44)
        extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(args), 2, ctypes.addressof(size), self.end)
        return args, (n + 255) // 256, m, extra, out, size

    def __call__(self, data):
        a, b, b_q, b_shuffle, b_scale = data
        m, k = a.shape
        n = b.shape[0]
        entry = self.cache.get((m, n, k))
        if entry is None:
            entry = self.cache[(m, n, k)] = self._prepare(m, n, k, a.device)
        args, gx, gy, extra, out, _ = entry
        struct.pack_into("<QQQ", args, 0, a.data_ptr(), b_q.data_ptr(), b_scale.data_ptr())
        if self.launch(self.fn, gx, gy, 1, 256, 1, 1, 0, None, None, extra):
            raise RuntimeError("launch failed")
        return out

    def bare(self, data):
        """A single pre-converted ctypes call for this input (arguments packed once)."""
        # a separate handle of the same function without argtypes: every argument is already ctypes
        raw = getattr(ctypes.CDLL(self.library), self.launch.__name__)
        self(data)
        args, gx, gy, extra, _, _ = self.cache[(data[0].shape[0], data[1].shape[0], data[0].shape[1])]
        call = (self.fn, ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(1), ctypes.c_uint(256),
                ctypes.c_uint(1), ctypes.c_uint(1), ctypes.c_uint(0), None, None, extra)

        def launch(_data):
            return raw(*call)

        return launch


def _pack(module, data):
    """The emitted fast path's address writes alone, for ``data``'s shape (armed by two calls)."""
    module.custom_kernel(data)
    module.custom_kernel(data)
    addresses = module._SG_LAST[1][5]

    def pack(_data):
        for cell, address in addresses:
            cell.value = address()

    return pack


def per_call_ns(fns: dict, data, calls: int, rounds: int, sync=None) -> dict[str, float]:
    """For each function, the best over ``rounds`` loops of ``calls`` calls of the mean ns per
    call; every round times each function once, in turn."""
    for fn in fns.values():
        for _ in range(50):
            fn(data)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            if sync:
                sync()
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                fn(data)
            best[name] = min(best[name], (time.perf_counter_ns() - t0) / calls)
    if sync:
        sync()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", choices=["hip-stand-in", "cuda"], default="hip-stand-in")
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cuda = args.runtime == "cuda"
    device = "cuda" if cuda else "cpu"
    if cuda:
        torch.empty(1, device="cuda")
        lib = ctypes.CDLL("libcuda.so.1")
        sync = torch.cuda.synchronize
        calls = min(args.calls, 200)  # stay well inside the launch queue so the host never waits
    else:
        os.environ["SUBMITGEN_HIP_LIBRARY"] = str(fake_hip())
        os.environ.pop("SUBMITGEN_FAKEHIP_LOG", None)
        lib = ctypes.CDLL(os.environ["SUBMITGEN_HIP_LIBRARY"])
        sync = None
        calls = args.calls
    target = dict(target="cuda", arch="sm_{}{}".format(*torch.cuda.get_device_capability())) if cuda else {}
    problem = get_problem("mxfp4-mm")
    with tempfile.TemporaryDirectory() as d:
        subs = {}
        for name, opts in (("fresh", {}), ("reuse", {"reuse_output": True})):
            path = Path(d) / f"my_gemm_{name}.py"
            build(BuildOptions(problem="mxfp4-mm", output=path, kernels=EXAMPLE, **opts, **target))
            subs[name] = load_module(path)
        default_path = Path(d) / "default.py"
        build(BuildOptions(problem="mxfp4-mm", output=default_path, **target))
        subs["default"] = load_module(default_path)
        (image,) = load_code_objects(Path(d) / "my_gemm_fresh.py")
        seed = SeedReplica(lib, image.data, "cuda" if cuda else "hip")
        backend = subs["fresh"].SUBMITGEN_BACKEND
        assert backend == ("cuda" if cuda else "dry-run"), backend
        rows = []
        for spec in problem.benchmarks:
            data = problem.empty_input(spec, device)
            like = subs["fresh"].custom_kernel(data)
            fresh = subs["fresh"]
            fns = {"seed": seed, "fresh": fresh.custom_kernel, "reuse": subs["reuse"].custom_kernel,
                   "fresh new tuple": lambda d, k=fresh.custom_kernel: k((*d,)),
                   "reuse new tuple": lambda d, k=subs["reuse"].custom_kernel: k((*d,)),
                   "empty": lambda _d, like=like: torch.empty_like(like), "bare": seed.bare(data),
                   "key": lambda d, get=fresh._SG_PREPARED.get, key=fresh._sg_key: get(key(d)),
                   "guard": lambda d, v=fresh._sg_version: sum(map(v, d)),
                   "pack": _pack(fresh, data),
                   "default": subs["default"].custom_kernel}
            if cuda:
                fns["neg"] = lambda x: torch.neg(x[0])
            t = per_call_ns(fns, data, calls, args.rounds, sync)
            launches = len(subs["default"].plan(data)[1])
            row = [
                problem.shape_label(spec),
                f"{t['seed']:.0f}",
                f"{t['fresh']:.0f}",
                f"{t['fresh'] / t['seed']:.2f}",
                f"{t['reuse']:.0f}",
                f"{t['reuse'] / t['seed']:.2f}",
                f"{t['fresh new tuple'] / t['seed']:.2f} / {t['reuse new tuple'] / t['seed']:.2f}",
                f"{t['empty']:.0f} ({t['empty'] / t['seed']:.2f})",
                f"{(t['fresh'] - t['empty']) / t['seed']:.2f}",
                f"{t['key']:.0f}",
                f"{t['guard']:.0f}",
                f"{t['pack']:.0f}",
                f"{t['bare']:.0f}",
                f"{t['default']:.0f} ({launches})",
            ]
            if cuda:
                row.append(f"{t['neg']:.0f}")
            rows.append(row)
    header = ["shape", "seed replica", "submitgen", "ratio", "reuse-output", "ratio", "new tuple ratios",
              "torch.empty_like (ratio)", "ratio less empty", "key+lookup", "guard", "pack", "bare launch",
              "default kernels (launches)"]
    if cuda:
        header.append("torch.neg")
    print_table(
        f"Host ns per custom_kernel call, runtime {args.runtime} (best of {args.rounds} rounds x {calls} "
        "calls)",
        header,
        rows,
        args.json,
    )


if __name__ == "__main__":
    main()
