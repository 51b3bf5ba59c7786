"""Run the default amd-moe-mxfp4 Triton project on the CPU with Triton's interpreter, through its own
launch plan, on each case of a JSON list of ``[shape, overrides of the plan's TRITON entries]``;
print one JSON line: for each case, its comparison with the reference (or the traceback it
raised). The cases share one process: torch, Triton and the kernels are imported once. The kernels are
imported and launched by `submitgen test --interpret`'s machinery (submitgen/evaluate/interpret.py);
the plan is loaded here as a plain module, so that the overrides can change it.

Triton reads TRITON_INTERPRET when it is imported (its own library functions are decorated then),
so this runs in a process of its own:
``TRITON_INTERPRET=1 python tests/moe_interpret.py '[[{...}, {...}], ...]'``."""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback

import torch

from submitgen.evaluate.interpret import byte_view, kernel_modules, launch_all
from submitgen.files import kernels_dir
from submitgen.problems import moe_mxfp4 as moe

PROJECT = kernels_dir() / "moe_mxfp4"


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, PROJECT / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _override(launch, overrides: dict) -> None:
    """Apply {"A_BF16": bool, "MIN_ROWS": int, "<entry>": {"constexprs": {...}, "plan": {...}}} to the
    loaded plan, the way a build arch's "arch" entry does (the sm_90 path on the CPU, say)."""
    for name, value in overrides.items():
        if name in launch.TRITON:
            launch.TRITON[name]["constexprs"].update(value.get("constexprs", {}))
            launch.TRITON[name].setdefault("plan", {}).update(value.get("plan", {}))
        elif name == "A_BF16":
            launch.A_BF16 = value
            for entry in launch.TRITON.values():
                if "A_BF16" in entry["constexprs"]:
                    entry["constexprs"]["A_BF16"] = value
        else:
            setattr(launch, name, value)


def main(spec: dict, overrides: dict | None = None) -> dict:
    torch.set_num_threads(1)
    launch = _load("moe_launch", "launch.py")
    kernels = kernel_modules(PROJECT, (entry["source"] for entry in launch.TRITON.values()))
    _override(launch, overrides or {})
    data = moe.generate_input(spec)
    before = [byte_view(t).clone() for t in data[:11]]
    out, launches = launch.plan(data)
    assert all(block is None and lds is None for _name, _grid, block, lds, _args in launches), launches
    launch_all(launch.TRITON, kernels, launches, out.device)
    ref = moe.reference(data)
    return {
        "launches": [name for name, *_ in launches],
        "equal": bool(torch.equal(out, ref)),
        "max_abs_err": float((out.float() - ref.float()).abs().max()),
        "inputs_unchanged": all(torch.equal(byte_view(a), b) for a, b in zip(data[:11], before)),
    }


def each(cases: list) -> list[dict]:
    out = []
    for spec, overrides in cases:
        try:
            out.append(main(spec, overrides))
        except Exception:
            out.append({"error": traceback.format_exc()})
    return out


if __name__ == "__main__":
    print(json.dumps(each(json.loads(sys.argv[1]))))
