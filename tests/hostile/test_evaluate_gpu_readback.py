"""GPU counterparts of test_evaluate_forging.py: on a CUDA device the parent reads each CUDA input
back itself after the call, through CUDA IPC (submitgen/evaluate/cudaipc.py), so a submission that
writes into a GPU input and forges the worker's own after-call fingerprint is still caught.

They run only where torch sees a CUDA device (skipped elsewhere): ``PYTHONPATH=. python3 -m pytest
-q -o addopts= tests/hostile/test_evaluate_gpu_readback.py``, or experiments/gpu_readback_check.py
for the same with a summary. Each wraps ``cudaipc.read`` in the parent (where ``run_test`` judges)
to record what it read, so a test also shows that the digest came from the IPC read and not from
the worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from submitgen.evaluate import cudaipc, format_bench_report, format_test_report, run_bench, run_test
from submitgen.evaluate.digest import make_fingerprint

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.usefixtures("toy_problems", "strided_problem"),
]

NOCLONE = "#!POPCORN leaderboard amd-toy-noclone\n#!POPCORN gpu MI355X\nimport os\n\nimport torch\n\n"
TOY = NOCLONE.replace("amd-toy-noclone", "amd-toy-add")
STRIDED = NOCLONE.replace("amd-toy-noclone", "amd-toy-strided")
# the forgery the parent's /proc read-back defeats on the CPU: the worker's after-call fingerprint
# cell replaced by the inputs' clean fingerprint, taken before the write
FORGE = ("import gc\nimport sys\n\n\n"
         "def _cells():\n"
         "    call = next(f for f in gc.get_referrers(sys._getframe(2).f_code) if callable(f))\n"
         "    return dict(zip(call.__code__.co_freevars, call.__closure__))\n\n\n")
SHAPES = ("n=64,seed=1", "n=300000,seed=2")  # a small-pool block and a large one


@pytest.fixture
def strided_problem():
    import toy_strided_problem

    from submitgen.problems import register, unregister

    register(toy_strided_problem.PROBLEM)
    yield
    unregister("toy-strided")


@pytest.fixture
def reads(monkeypatch):
    """Every CUDA read-back of the parent: (region, worker pid, digest or the ReadBackError)."""
    seen: list[tuple[dict, int, object]] = []
    real = cudaipc.read

    def read(region, pid, what, opener=cudaipc.open_storage):
        try:
            digest = real(region, pid, what, opener)
        except Exception as e:
            seen.append((region, pid, e))
            raise
        seen.append((region, pid, digest))
        return digest

    monkeypatch.setattr(cudaipc, "read", read)
    return seen


def expected(problem: str, *specs: str) -> list[str]:
    """The parent's own fingerprint of each shape's regenerated inputs, tensors in order."""
    from submitgen.problems import get_problem

    p, fp = get_problem(problem), make_fingerprint()
    out: list[str] = []
    for spec in specs:
        values = dict(kv.split("=") for kv in spec.split(","))
        out += fp(p.generate_input({k: int(v) for k, v in values.items()}, device="cuda"))["tensors"]
    return out


def leftover_ref_counters(pids: set[int]) -> list[str]:
    return sorted(n for n in os.listdir("/dev/shm") if any(n.startswith(f"torch_{p}_") for p in pids))


@pytest.mark.parametrize("header,problem", [(TOY, "toy-add"), (NOCLONE, "toy-noclone"),
                                            (STRIDED, "toy-strided")], ids=["add", "noclone", "strided"])
def test_gpu_honest_kernel_reads_back_equal(tmp_path, reads, header, problem):
    """An honest kernel passes, every input was read back by the parent through CUDA IPC (the
    strided problem's inputs are not contiguous), each digest equal to the parent's own of the
    regenerated inputs, and the worker's ref-counter files are gone from /dev/shm after it."""
    sub = tmp_path / "sub.py"
    sub.write_text(header + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    report = run_test(sub, custom=SHAPES, lint=False)
    assert report.passed, format_test_report(report)
    assert all(isinstance(d, str) for _, _, d in reads), reads
    assert [d for _, _, d in reads] == expected(problem, *SHAPES)
    assert all(r["kind"] == "cuda" and len(r["event"]) == 128 for r, _, _ in reads)
    if problem == "toy-strided":
        assert [r["strides"] for r, _, _ in reads] == [[2], [3], [2], [3]]
    assert leftover_ref_counters({pid for _, pid, _ in reads}) == []


def test_gpu_write_into_an_input_with_the_fingerprint_forged_is_mutated(tmp_path, reads):
    """The GPU case of the issue: b written into on the device, and the worker's after-call
    fingerprint replaced (from inside custom_kernel) by the clean one taken before the write. The
    worker reports b unchanged; the parent reads b's GPU memory itself and names it."""
    from test_evaluate_forging import PATCHES

    sub = tmp_path / "sub.py"
    sub.write_text(NOCLONE + PATCHES + FORGE + "def custom_kernel(data):\n"
                   "    cells = _cells()\n"
                   "    clean = cells['fingerprint'].cell_contents(data)\n"
                   "    out = data[0] + data[1]\n"
                   "    data[1].mul_(2)\n"
                   "    cells['fingerprint'].cell_contents = lambda d: clean\n"
                   "    return out\n")
    report = run_test(sub, custom=SHAPES, lint=False)
    first, second = report.results
    assert (first.passed, first.error, first.mutated) == (False, None, ("b",)), format_test_report(report)
    a, b = expected("toy-noclone", SHAPES[0])
    assert reads[0][2] == a and reads[1][2] != b  # the parent's own read saw the write
    # the patched cell also serves the fingerprint sent before the next call: other inputs, seen
    assert not second.passed and second.error.startswith("custom_kernel was given other inputs")


def test_gpu_write_on_a_side_stream_after_return_is_mutated(tmp_path, reads):
    """b written on a stream of the submission's own, after a sleep, with nothing waiting for it
    when custom_kernel returns, and the fingerprint forged: the worker synchronizes the device
    before its output event, so the memory the parent reads is the finished write."""
    sub = tmp_path / "sub.py"
    sub.write_text(NOCLONE + FORGE + "_SIDE = torch.cuda.Stream()\n\n\n"
                   "def custom_kernel(data):\n"
                   "    cells = _cells()\n"
                   "    clean = cells['fingerprint'].cell_contents(data)\n"
                   "    out = data[0] + data[1]\n"
                   "    _SIDE.wait_stream(torch.cuda.current_stream())\n"
                   "    with torch.cuda.stream(_SIDE):\n"
                   "        torch.cuda._sleep(200_000_000)\n"
                   "        data[1].mul_(2)\n"
                   "    cells['fingerprint'].cell_contents = lambda d: clean\n"
                   "    return out\n")
    report = run_test(sub, custom=SHAPES[:1], lint=False)
    [r] = report.results
    assert (r.passed, r.error, r.mutated) == (False, None, ("b",)), format_test_report(report)


def test_gpu_bench_reads_back_too(tmp_path, reads):
    """bench: the first call's inputs are read back through CUDA IPC after the timed calls, an
    honest kernel's equal to the parent's."""
    sub = tmp_path / "sub.py"
    sub.write_text(TOY + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    report = run_bench(sub, custom=SHAPES, iters=3, lint=False)
    assert report.passed, format_bench_report(report)
    assert [d for _, _, d in reads] == expected("toy-add", *SHAPES)


def test_gpu_bench_leaderboard_reads_every_timed_call_back(tmp_path, reads):
    """bench --mode leaderboard: each timed call's inputs (seed + 13 a call) are read back through
    CUDA IPC as that call ends, then the untimed call's, each equal to the parent's own."""
    sub = tmp_path / "sub.py"
    sub.write_text(TOY + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    report = run_bench(sub, custom=SHAPES[:1], iters=3, mode="leaderboard", lint=False)
    assert report.passed, format_bench_report(report)
    assert [d for _, _, d in reads] == expected("toy-add", "n=64,seed=14", "n=64,seed=27", "n=64,seed=40",
                                                SHAPES[0])
    assert leftover_ref_counters({pid for _, pid, _ in reads}) == []


def test_gpu_timed_write_with_the_fingerprint_forged_is_mutated(tmp_path, reads):
    """The GPU case of test_evaluate_timed_readback.py's forgery: b written into on the device on
    timed calls only, the timed loop's fingerprint cell forged so the worker reports every call's
    inputs unchanged; the parent's IPC read of the first timed call's b sees the write."""
    from test_evaluate_timed_readback import FORGE_TIMED

    sub = tmp_path / "sub.py"
    sub.write_text(TOY + FORGE_TIMED)
    report = run_bench(sub, custom=SHAPES[:1], iters=3, mode="leaderboard", lint=False)
    [r] = report.results
    assert r.error is None and r.correct is False, format_bench_report(report)
    assert ("; timed call 1 of 3 (seed 14): input 'b' was changed by the call (read back by submitgen)"
            in r.check_message), r.check_message
    a, b = expected("toy-add", "n=64,seed=14")
    assert reads[0][2] == a and reads[1][2] != b  # the parent's own read saw the write


def test_gpu_memory_the_parent_cannot_open_fails_the_shape(tmp_path, monkeypatch):
    """Where the parent cannot open the worker's memory (here its opener fails), the shape fails;
    the worker's own fingerprint, which says nothing changed, is not used instead."""
    real = cudaipc.read

    def cannot_open(region):
        raise RuntimeError("CUDA error: invalid resource handle (simulated)\nmore")

    monkeypatch.setattr(cudaipc, "read", lambda region, pid, what, opener=None: real(
        region, pid, what, cannot_open))
    sub = tmp_path / "sub.py"
    sub.write_text(TOY + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    report = run_test(sub, custom=SHAPES[:1], lint=False)
    [r] = report.results
    assert r.error == (
        "the inputs could not be read back from the worker after the call (cannot open input tensor 0 "
        "(cuda:0) in the worker's GPU memory: RuntimeError: CUDA error: invalid resource handle "
        "(simulated)), so whether custom_kernel changed them is unknown"), format_test_report(report)


OPEN_IN_A_CHILD = """
import json, sys
from submitgen.evaluate import cudaipc
regions, pid = json.loads(sys.argv[1]), int(sys.argv[2])
print(json.dumps([cudaipc.read(r, pid, f"tensor {i}") for i, r in enumerate(regions)]))
"""


def test_gpu_export_opens_in_another_process():
    """torch's IPC export, opened in another process by cudaipc.read: two tensors of one cached
    block (one handle, opened twice), a strided view and a large one each digest as the
    fingerprint here does; then this process can free them (the child released its counters)."""
    base = torch.randn(4096, device="cuda")
    tensors = [base[:1000], base[2048:], torch.randn(64, 48, device="cuda").t()[5:],
               torch.randn(1 << 20, device="cuda").to(torch.bfloat16)]
    export = cudaipc.make_export()
    regions = [export(t) for t in tensors]
    assert all(cudaipc.valid(r) for r in regions), regions
    assert regions[0]["handle"] == regions[1]["handle"]
    torch.cuda.synchronize()
    r = subprocess.run([sys.executable, "-c", OPEN_IN_A_CHILD, json.dumps(regions), str(os.getpid())],
                       capture_output=True, text=True, timeout=120, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == make_fingerprint()(tuple(tensors))["tensors"]
    counters = [(r["ref_counter"], r["ref_counter_offset"]) for r in regions]
    assert len(set(counters)) == len(counters)  # one counter a share
    del base, tensors
    torch.cuda.ipc_collect()
