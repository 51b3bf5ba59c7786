"""Check an emitted amd-moe-mxfp4 file on a CUDA GPU without submitgen's CLI (no pyelftools needed):
every test and benchmark shape against submitgen's reference, two calls each.

    PYTHONPATH=. python benchmarks/check_moe_file.py moe-mxfp4.py

Per shape: mismatches at the leaderboard's 0.05 + 0.05 |ref|, max abs error, whether the output
equals the reference bit for bit, whether two calls give the same output, and whether every
input byte is unchanged afterwards.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from submitgen.problems import moe_mxfp4 as moe  # noqa: E402

_BYTES = (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu)


def _raw(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype in _BYTES else t


def main(path: str) -> int:
    spec = importlib.util.spec_from_file_location("moe_sub", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed = 0
    for shape in (*moe.TESTS, *moe.BENCHMARKS):
        data = moe.generate_input(shape, "cuda")
        before = [_raw(t).clone() for t in data[:11]]
        out = module.custom_kernel(data)
        out2 = module.custom_kernel(data)
        torch.cuda.synchronize()
        ref = moe.reference(data).float()
        o = out.float()
        bad = int(((o - ref).abs() > moe.ATOL + moe.RTOL * ref.abs()).sum() + torch.isnan(o).sum())
        same = all(torch.equal(_raw(a), b) for a, b in zip(data[:11], before))
        failed += bool(bad) or not same
        print(moe.shape_label(shape), "mismatches", bad, "max abs err", float((o - ref).abs().max()),
              "equal", bool(torch.equal(o, ref)), "repeat-identical", bool(torch.equal(out, out2)),
              "inputs unchanged", same, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
