"""The emitted ctypes launcher's per-call paths, against the stand-in libamdhip64: the same tuple of
tensors twice in a row takes the fast path (no shape key), and nothing the caller can do to those
tensors in place gets past it: a new shape re-runs the plan, a new storage (``set_``, ``.data =``)
is launched at its new address, inference tensors and new tuples take the shape-key path. Every
launch's kernarg bytes are checked against the tensors' addresses and sizes at that call."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from conftest import build_stub, run_script

from submitgen.pipeline import BuildOptions, build

REPO = Path(__file__).resolve().parent.parent

DRIVER = r'''
import importlib.util, json, sys
import torch
from submitgen.problems import get_problem

spec = importlib.util.spec_from_file_location("sub", sys.argv[1])
sub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sub)
plans = []
original_plan = sub.plan
sub.plan = lambda data: plans.append(tuple(data[0].shape)) or original_plan(data)
problem = get_problem("mxfp4-mm")
bench = problem.benchmarks[0]
steps = []


def call(label, data):
    out = sub.custom_kernel(data)
    a, b, b_q, _, b_scale = data
    steps.append({"label": label, "armed": sub._SG_LAST[1] is not None and sub._SG_LAST[1][0] is data,
                  "expect": [a.data_ptr(), b_q.data_ptr(), b_scale.data_ptr(), out.data_ptr(),
                             a.shape[0], b.shape[0], a.shape[1]], "plans": len(plans)})
    return out


data = problem.empty_input(bench, "cpu")
for i in range(3):
    call(f"same tuple {i}", data)
a = data[0]
a.set_(torch.empty_like(a))                     # new storage, same shape: version bumped
call("after set_", data)
call("same tuple again", data)
m, k = a.shape
a.resize_(2 * m, k)                             # a new shape in place: version bumped
call("after resize_", data)
call("resized, same tuple again", data)
a.data = torch.zeros_like(a)                    # new storage without a version bump
call("after .data =", data)
call("new tuple", (*data,))
with torch.inference_mode():
    frozen = problem.empty_input(bench, "cpu")
for i in range(3):
    call(f"inference tensors {i}", frozen)
json.dump(steps, open(sys.argv[2], "w"))
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fastpath")
    fakehip = build_stub(tmp_path_factory, "fakehip")
    results = {}
    for name, reuse in (("fresh", False), ("reuse", True)):
        sub = tmp / f"{name}.py"
        build(BuildOptions(problem="mxfp4-mm", output=sub, kernels=REPO / "examples" / "my_gemm",
                           reuse_output=reuse))
        log, out = tmp / f"{name}.log", tmp / f"{name}.json"
        (tmp / "driver.py").write_text(DRIVER)
        env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(fakehip), SUBMITGEN_FAKEHIP_LOG=str(log))
        r = run_script(tmp / "driver.py", str(sub), str(out), env=env, cwd=tmp, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        launches = [json.loads(line) for line in log.read_text().splitlines()
                    if '"hipModuleLaunchKernel"' in line]
        results[name] = (json.loads(out.read_text()), launches)
    return results


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fresh", "reuse"])
def test_every_launch_has_the_tensors_of_its_call(run, mode):
    steps, launches = run[mode]
    assert len(launches) == len(steps) == 12
    for step, launch in zip(steps, launches):
        got = list(struct.unpack_from("<QQQQiii", bytes.fromhex(launch["kernarg"])))
        assert got == step["expect"], step["label"]
        assert launch["queue"] == 0 and launch["grid"][1] == step["expect"][4], step["label"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fresh", "reuse"])
def test_fast_path_only_while_nothing_changed(run, mode):
    steps, _ = run[mode]
    armed = {s["label"]: s["armed"] for s in steps}  # the next call of this tuple takes the fast path
    plans = {s["label"]: s["plans"] for s in steps}
    assert [armed[f"same tuple {i}"] for i in range(3)] == [False, True, True]  # armed by the second call
    assert armed["after set_"] and plans["after set_"] == 1  # key computed again: same shape, same plan
    assert plans["after resize_"] == 2 and plans["resized, same tuple again"] == 2  # the new shape's plan
    assert armed["after .data ="] and not armed["new tuple"]
    assert not any(armed[f"inference tensors {i}"] for i in range(3))
    assert plans["inference tensors 2"] == 2  # the benchmark shape's plan, from the cache
