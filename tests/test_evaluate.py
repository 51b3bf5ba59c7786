"""submitgen.evaluate: the test/bench runner on CPU, with small shapes (no timing assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from submitgen.errors import EvaluateError
from submitgen.evaluate import run_bench, run_test
from submitgen.evaluate.fmt import format_bench_report, format_test_report
from submitgen.evaluate.results import Execution
from submitgen.evaluate.shapes import combine_seed, parse_shape, select_shapes
from submitgen.evaluate.worker import clone_data, make_mutation_check
from submitgen.problems import get_problem

SUBMISSIONS = Path(__file__).parent / "submissions"
MLA_SMALL = ("batchsize=2,qseqlen=1,kvseqlen=256,seed=5", "batchsize=3,qseqlen=1,kvseqlen=128,seed=6")
MM_SMALL = ("m=8,n=256,k=512,seed=3",)
MLA_HEADER = "#!POPCORN leaderboard amd-mixed-mla\n#!POPCORN gpu MI355X\n"


def _mla_file(tmp_path: Path, body: str, name: str = "sub.py") -> Path:
    torch_impl = (SUBMISSIONS / "mla_torch.py").read_text().split("\n", 2)[2]
    path = tmp_path / name
    path.write_text(MLA_HEADER + torch_impl + "\n" + body)
    return path


def test_combine_seed_is_eval_cantor_pairing():
    assert combine_seed(124, 0) == 124 + 124 * 125 // 2
    assert combine_seed(3, 4) == 3 + 7 * 8 // 2
    mla = get_problem("mixed-mla")
    [shape] = select_shapes(mla, "test:0", seed=7)
    assert shape.spec_dict["seed"] == combine_seed(4220, 7)


def test_select_shapes():
    mm = get_problem("mxfp4-mm")
    assert [s.index for s in select_shapes(mm, "test")] == [0, 1, 2, 3]
    assert [(s.kind, s.index) for s in select_shapes(mm, "benchmark:0,2-3")] == \
        [("benchmark", 0), ("benchmark", 2), ("benchmark", 3)]
    assert len(select_shapes(mm, "all")) == len(mm.tests) + len(mm.benchmarks)
    [custom] = select_shapes(mm, "test", custom=MM_SMALL)
    assert (custom.kind, custom.spec_dict) == ("custom", {"m": 8, "n": 256, "k": 512, "seed": 3})
    with pytest.raises(EvaluateError, match="out of range"):
        select_shapes(mm, "test:9")
    with pytest.raises(EvaluateError, match="expected test, benchmark, all"):
        select_shapes(mm, "small")
    with pytest.raises(EvaluateError, match="this problem takes"):
        parse_shape("m=8,n=256", ("m", "n", "k", "seed"))


def test_mutation_detection_compares_bytes():
    mla = get_problem("mixed-mla")
    data = mla.generate_input(parse_shape(MLA_SMALL[0], mla.spec_keys))
    snapshot, changed = make_mutation_check(mla)  # the worker's own check, as eval.py's process makes it
    before = snapshot(data)
    copy = clone_data(data)
    assert changed(before, copy) == []
    copy[1]["mxfp4"][1].view(torch.uint8)[0, 0] += 1  # e8m0 scales: no equal kernel, bytes differ
    copy[0][0, 0, 0] += 1
    assert changed(before, copy) == ["q", "kv_data['mxfp4'][1]"]


@pytest.mark.slow
def test_correct_handwritten_passes():
    report = run_test(SUBMISSIONS / "mla_torch.py", custom=MLA_SMALL)
    assert report.passed, format_test_report(report)
    assert [r.shape.label for r in report.results] == \
        ["batchsize=2 qseqlen=1 kvseqlen=256", "batchsize=3 qseqlen=1 kvseqlen=128"]
    assert all(r.figures.mismatch_ratio == 0.0 and r.figures.max_abs_err is not None for r in report.results)
    assert report.backend.value is None
    if not torch.cuda.is_available():
        assert "without a GPU (CPU only)" in report.backend.describe()


@pytest.mark.slow
def test_zeros_fail_and_progress_is_reported():
    seen = []
    report = run_test(SUBMISSIONS / "mm_zeros.py", custom=MM_SMALL + ("m=4,n=128,k=256,seed=9",),
                      progress=lambda r, i, n: seen.append((r.shape.label, i, n)))
    assert not report.passed
    assert [r.passed for r in report.results] == [False, False]
    assert all(r.figures.mismatch_ratio > 0.9 for r in report.results)
    assert seen == [("m=8 n=256 k=512", 1, 2), ("m=4 n=128 k=256", 2, 2)]
    assert format_test_report(report)[-1] == "FAILED: 2 of 2 shapes failed"


@pytest.mark.slow
def test_mutated_inputs_fail():
    report = run_test(SUBMISSIONS / "mla_mutates.py", custom=MLA_SMALL[:1])
    [r] = report.results
    assert not r.passed and r.mutated == ("q",)
    assert (
        "batchsize=2 qseqlen=1 kvseqlen=256: input 'q' was modified by custom_kernel (the leaderboard's "
        "timed loop passes the inputs uncloned): write results into a fresh tensor instead"
        in format_test_report(report)
    )


def test_lint_runs_first(tmp_path: Path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "#!POPCORN leaderboard amd-mixed-mlaa\n#!POPCORN gpu MI355X\ndef custom_kernel(d):\n    return d\n"
    )
    with pytest.raises(EvaluateError) as e:  # lint only warns about a leaderboard it does not know
        run_test(bad)
    assert str(e.value) == (
        "leaderboard 'amd-mixed-mlaa' is not one submitgen knows, so the built-in harness has no problem to "
        "test against; pass --problem with its problem folder (its eval.py runs) or --reference-kernels DIR")
    known_without_problem = tmp_path / "fp8.py"
    known_without_problem.write_text("#!POPCORN leaderboard amd-fp8-mm\n#!POPCORN gpu MI300\n"
                                     "def custom_kernel(d):\n    return d\n")
    with pytest.raises(EvaluateError, match="'amd-fp8-mm' has no local problem"):
        run_test(known_without_problem)


@pytest.mark.slow
def test_backend_reported_and_crash_recovered(tmp_path: Path):
    # The file says it fell back, prints a notice, and kills its process on the first shape:
    # that shape fails with the exit code, a new process runs the second one.
    sub = _mla_file(tmp_path, (
        "import os, sys\n"
        "SUBMITGEN_BACKEND = 'fallback'\n"
        "print('submission: no HIP runtime, using the torch fallback', file=sys.stderr)\n"
        "_impl = custom_kernel\n"
        "def custom_kernel(data):\n"
        "    if data[4]['batch_size'] == 2:\n"
        "        os._exit(3)\n"
        "    return _impl(data)\n"))
    report = run_test(sub, custom=MLA_SMALL)
    first, second = report.results
    assert not first.passed and first.error.startswith("the worker process died (exit code 3)")
    assert second.passed
    assert report.backend.value == "fallback"
    assert report.backend.describe().startswith("backend: fallback - ran the torch fallback, not the kernel")
    assert report.backend.output[0] == "submission: no HIP runtime, using the torch fallback"


@pytest.mark.slow
def test_import_error_fails_every_shape(tmp_path: Path):
    sub = _mla_file(tmp_path, "raise RuntimeError('no such device')\n")
    report = run_test(sub, custom=MLA_SMALL)
    assert [r.passed for r in report.results] == [False, False]
    assert all("importing the submission failed" in r.error and "no such device" in r.error
               for r in report.results)


@pytest.mark.slow
def test_timeout_kills_the_shape_and_continues(tmp_path: Path):
    sub = _mla_file(tmp_path, (
        "import time\n_impl = custom_kernel\n"
        "def custom_kernel(data):\n"
        "    if data[4]['batch_size'] == 2:\n"
        "        time.sleep(120)\n"
        "    return _impl(data)\n"))
    report = run_test(sub, custom=MLA_SMALL, timeout_s=4)
    assert report.results[0].error.startswith(
        "timed out after 4 s of wall time waiting (asleep, not computing) "
        "(shape batchsize=2 qseqlen=1 kvseqlen=256); --timeout SECONDS sets the limit"
    )
    assert report.results[1].passed


@pytest.mark.slow
def test_bench_reports_stats_and_labels_host_time():
    report = run_bench(SUBMISSIONS / "mla_torch.py", custom=MLA_SMALL, iters=3)
    assert report.passed
    for r in report.results:
        t = r.timing
        assert t is not None and t.runs == 3 and t.best_ns <= t.mean_ns <= t.worst_ns and r.correct
    text = format_bench_report(report)
    if not torch.cuda.is_available():
        assert report.timing == "host"
        assert (
            "timing: host-only wall clock (no GPU here): not comparable with the leaderboard's device times"
            in text
        )
    assert ["shape", "runs", "mean", "std", "err", "best", "worst", "output"] in [ln.split() for ln in text]


@pytest.mark.slow
def test_bench_flags_wrong_output():
    report = run_bench(SUBMISSIONS / "mm_zeros.py", custom=MM_SMALL, iters=2)
    assert not report.passed and report.results[0].correct is False


def test_backend_descriptions():
    assert Execution("hip", True, "AMD Instinct MI355X").describe() == \
        "backend: hip - ran the kernel on AMD Instinct MI355X"
    assert "no kernel ran" in Execution("dry-run", False, "cpu").describe()
    assert Execution(None, True, "NVIDIA H200").describe() == "backend: the file's own code, on NVIDIA H200"
