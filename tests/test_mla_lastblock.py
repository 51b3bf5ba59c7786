"""experiments/mla_lastblock, the one-launch candidate for the MLA decode (issue 24 item 3): its
outputs are bit-identical to the default project's (kernels/mixed_mla: decode, then mla_reduce)
under Triton's interpreter, with several splits (the last one merges) and with one (written
directly), and its arrival counters are back at zero after each call, so the next call's merge
happens once per sequence again. Its speed is not tested here (benchmarks/, on a GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="the [triton] extra runs the interpreter")

ROOT = Path(__file__).resolve().parent.parent

# Triton reads TRITON_INTERPRET when it is imported, so the comparison runs in its own process
DRIVER = r"""
import json, sys
import torch
from submitgen.evaluate.interpret import custom_kernel_for
from submitgen.problems import get_problem

mla = get_problem("mixed-mla")
default = custom_kernel_for(sys.argv[1], "gfx950")
candidate = custom_kernel_for(sys.argv[2], "gfx950")
rows = []
for bs, kv in json.loads(sys.argv[3]):
    data = mla.generate_input({"batchsize": bs, "qseqlen": 1, "kvseqlen": kv, "seed": 7 + bs + kv})
    a = default(data)
    rows.append({"bs": bs, "kv": kv, "calls": []})
    for _ in range(2):  # the second call sees the counters the first one left
        b = candidate(data)
        rows[-1]["calls"].append(bool(torch.equal(a.view(torch.int16), b.view(torch.int16))))
print(json.dumps(rows))
"""


@pytest.mark.slow
def test_the_one_launch_candidate_is_bit_identical_to_the_default_kernels():
    from submitgen.project.load import load_project

    sys.path.insert(0, str(ROOT / "experiments" / "mla_lastblock"))
    try:
        import launch as candidate_plan
    finally:
        sys.path.remove(str(ROOT / "experiments" / "mla_lastblock"))
        sys.modules.pop("launch", None)
    configs = [(2, 512), (3, 96)]  # 4 splits (merged by the last); 1 split (written directly)
    assert [candidate_plan.split_for(bs, kv)[0] for bs, kv in configs] == [4, 1]
    assert [s.name for s in load_project(ROOT / "experiments" / "mla_lastblock", arch="gfx950").triton] == [
        "mla_decode"]
    r = subprocess.run([sys.executable, "-c", DRIVER, str(ROOT / "kernels" / "mixed_mla"),
                        str(ROOT / "experiments" / "mla_lastblock"), json.dumps(configs)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT,
                       env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(r.stdout.splitlines()[-1])
    assert rows == [{"bs": bs, "kv": kv, "calls": [True, True]} for bs, kv in configs]
