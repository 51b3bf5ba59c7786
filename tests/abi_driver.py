"""Run as a script in a child process (tests/test_abi.py and others), with SUBMITGEN_HIP_LIBRARY
pointing at the stand-in HIP library. Imports the submission like the evaluator does, then for each benchmark
shape calls custom_kernel on real CPU tensors of the problem's shapes, and writes what the test
needs to rebuild the expected launches independently: the leaves' addresses, the output's
address, and the plan's launches with each argument described. With ``all``, the test shapes
are called too (first), then the benchmark shapes.

usage: python abi_driver.py SUBMISSION PROBLEM OUT.json [all]"""

import ctypes
import importlib.util
import json
import sys

import torch

from submitgen.problems import get_problem


def describe(value, leaves, out, workspaces):
    if value is None:
        return {"none": True}
    if isinstance(value, torch.Tensor):
        for i, leaf in enumerate(leaves):
            if value is leaf:
                return {"tensor": i}
        if value is out:
            return {"tensor": "out"}
        for i, w in enumerate(workspaces):
            if value is w:
                return {"tensor": "workspace", "id": i}
        workspaces.append(value)
        return {"tensor": "workspace", "id": len(workspaces) - 1}
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], type):
        cls, fields = value
        plain = {k: v for k, v in fields.items() if not isinstance(v, torch.Tensor)}
        pointers = {getattr(cls, k).offset: describe(v, leaves, out, workspaces)
                    for k, v in fields.items() if isinstance(v, torch.Tensor)}
        return {"struct": bytes(cls(**plain)).hex(), "size": ctypes.sizeof(cls), "pointers": pointers}
    if isinstance(value, ctypes._SimpleCData):  # ctypes.c_float(x), ctypes.c_int(n): their value
        value = value.value
    if isinstance(value, float):
        return {"float": value}
    return {"int": value}


def main(path, problem_name, result_path, which="benchmarks"):
    spec = importlib.util.spec_from_file_location("submission", path)
    sub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sub)
    problem = get_problem(problem_name)
    shapes = []
    specs = (*problem.tests, *problem.benchmarks) if which == "all" else problem.benchmarks
    for shape in specs:
        data = problem.empty_input(shape)
        leaves = problem.leaves(data)
        out = sub.custom_kernel(data)
        plan_out, launches = sub.plan(data)
        workspaces = []
        shapes.append({
            "label": problem.shape_label(shape),
            "leaves": [t.data_ptr() for t in leaves],
            "out": out.data_ptr(),
            "out_shape": list(out.shape),
            "launches": [
                {"kernel": k, "grid": list(g) if not isinstance(g, int) else [g],
                 "block": b if b is None else list(b) if not isinstance(b, int) else [b], "lds": lds,
                 "args": [describe(a, leaves, plan_out, workspaces) for a in args]}
                for k, g, b, lds, args in launches
            ],
        })
    with open(result_path, "w") as f:
        json.dump({"backend": sub.SUBMITGEN_BACKEND, "shapes": shapes}, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
