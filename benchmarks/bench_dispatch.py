"""Host cost of one custom_kernel call, in ns, for every mxfp4-mm benchmark shape, measured in
one process beside two baselines:

- hand-written: the pattern people write by hand today: a raw base64 code object, a ctypes
  launch function with declared argtypes, the kernel arguments packed with struct.pack_into on
  every call, a fresh output tensor;
- bare launch: one pre-converted ctypes call of the launch function (the floor for any
  Python-side launcher);
- (cuda only) a one-op torch call (torch.neg on A), for scale.

The same one-kernel project (examples/my_gemm) is used for submitgen and the hand-written
pattern, so the launches are identical; submitgen's default kernels (one or two launches per
shape) are listed too. Runtime "hip-stand-in" (default) uses the stand-in libamdhip64 and CPU
tensors; runtime "cuda" builds the cubin and launches on a real NVIDIA GPU.

usage: python benchmarks/bench_dispatch.py [--runtime hip-stand-in|cuda] [--calls 2000] [--json]"""

from __future__ import annotations

import argparse
import base64
import ctypes
import importlib.util
import os
import struct
import tempfile
import time
from pathlib import Path

import torch
from _common import REPO, fake_hip, print_table

from submitgen.build import BuildOptions, build
from submitgen.containers import load_code_objects
from submitgen.problems import get_problem

EXAMPLE = REPO / "examples" / "my_gemm"


class HandWritten:
    """custom_kernel the way it is written by hand (see the module docstring)."""

    def __init__(self, lib, image_b64: str, runtime: str):
        self.cuda = runtime == "cuda"
        self.library = lib._name
        image = base64.b64decode(image_b64)
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
        self.args = ctypes.create_string_buffer(48)
        self.size = ctypes.c_size_t(44)
        end = 0 if self.cuda else 3
        self.extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(self.args), 2, ctypes.addressof(self.size), end)

    def __call__(self, data):
        a, b, b_q, b_shuffle, b_scale = data
        m, k = a.shape
        n = b.shape[0]
        out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        struct.pack_into("<QQQQiii", self.args, 0, a.data_ptr(), b_q.data_ptr(), b_scale.data_ptr(),
                         out.data_ptr(), m, n, k)
        if self.launch(self.fn, (n + 255) // 256, m, 1, 256, 1, 1, 0, None, None, self.extra):
            raise RuntimeError("launch failed")
        return out

    def bare(self, data):
        """A single pre-converted ctypes call for this input (arguments packed once)."""
        # a separate handle of the same function without argtypes: every argument is already ctypes
        raw = getattr(ctypes.CDLL(self.library), self.launch.__name__)
        a, b = data[0], data[1]
        m, n = a.shape[0], b.shape[0]
        args = (self.fn, ctypes.c_uint((n + 255) // 256), ctypes.c_uint(m), ctypes.c_uint(1), ctypes.c_uint(256),
                ctypes.c_uint(1), ctypes.c_uint(1), ctypes.c_uint(0), None, None, self.extra)

        def call(_data):
            return raw(*args)

        return call


def per_call_ns(fn, data, calls: int, repeats: int = 5, sync=None) -> float:
    """Best, over ``repeats`` loops of ``calls`` calls, of the mean ns per call."""
    for _ in range(50):
        fn(data)
    best = float("inf")
    for _ in range(repeats):
        if sync:
            sync()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn(data)
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    if sync:
        sync()
    return best


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem.replace("-", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", choices=["hip-stand-in", "cuda"], default="hip-stand-in")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cuda = args.runtime == "cuda"
    device = "cuda" if cuda else "cpu"
    if cuda:
        torch.empty(1, device="cuda")
        lib = ctypes.CDLL("libcuda.so.1")
        sync = torch.cuda.synchronize
        calls = min(args.calls, 200)  # stay well inside the launch queue so the host never waits
        repeats = 25  # short loops: take the best of more of them
    else:
        os.environ["SUBMITGEN_HIP_LIBRARY"] = str(fake_hip())
        os.environ.pop("SUBMITGEN_FAKEHIP_LOG", None)
        lib = ctypes.CDLL(os.environ["SUBMITGEN_HIP_LIBRARY"])
        sync = None
        calls = args.calls
        repeats = 5
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
        hand = HandWritten(lib, base64.b64encode(image.data).decode(), "cuda" if cuda else "hip")
        backend = subs["fresh"].SUBMITGEN_BACKEND
        assert backend == ("cuda" if cuda else "dry-run"), backend
        rows = []
        for spec in problem.benchmarks:
            data = problem.empty_input(spec, device)
            hand_ns = per_call_ns(hand, data, calls, repeats, sync)
            fresh = per_call_ns(subs["fresh"].custom_kernel, data, calls, repeats, sync)
            reuse = per_call_ns(subs["reuse"].custom_kernel, data, calls, repeats, sync)
            bare = per_call_ns(hand.bare(data), data, calls, repeats, sync)
            dflt = per_call_ns(subs["default"].custom_kernel, data, calls, repeats, sync)
            launches = len(subs["default"].plan(data)[1])
            row = [problem.shape_label(spec), f"{hand_ns:.0f}", f"{fresh:.0f}", f"{fresh / hand_ns:.2f}",
                   f"{reuse:.0f}", f"{reuse / hand_ns:.2f}", f"{bare:.0f}", f"{dflt:.0f} ({launches})"]
            if cuda:
                a = data[0]
                row.append(f"{per_call_ns(lambda x: torch.neg(x[0]), data, calls, repeats, sync):.0f}")
                del a
            rows.append(row)
    header = ["shape", "hand-written", "submitgen", "ratio", "reuse-output", "ratio", "bare launch",
              "default kernels (launches)"]
    if cuda:
        header.append("torch.neg")
    print_table(f"Host ns per custom_kernel call, runtime {args.runtime} (best of {repeats} x {calls} calls)",
                header, rows, args.json)


if __name__ == "__main__":
    main()
