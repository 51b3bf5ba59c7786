"""The default mixed-mla plan's split rule (issue 24 item 3): the split counts the H200 sweep chose
per benchmark config, one launch where a sequence is one split (mla_decode writes the output), and
the three paths (no merge, mla_reduce, mla_reduce_wide) right under Triton's interpreter."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from submitgen.problems import mixed_mla as mla

ROOT = Path(__file__).resolve().parent.parent


def _plan():
    path = ROOT / "kernels" / "mixed_mla" / "launch.py"
    spec = importlib.util.spec_from_file_location("mla_default_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_configs_get_the_split_counts_the_sweep_chose():
    plan = _plan()
    got = [(s["batchsize"], s["kvseqlen"], plan.split_for(s["batchsize"], s["kvseqlen"])[0])
           for s in mla.BENCHMARKS]
    # 6dcc63c:benchmarks/results/h200-2026-12-02-f8-mla/sweep_mla.txt: the fastest count measured on each
    # config but 32/1024 (4 splits 22.0 us, these 8 23.3 us)
    assert got == [(4, 1024, 16), (4, 8192, 32), (32, 1024, 8), (32, 8192, 8), (64, 1024, 4), (64, 8192, 4),
                   (256, 1024, 1), (256, 8192, 1)]


@pytest.mark.parametrize("spec", mla.BENCHMARKS + mla.TESTS, ids=mla.shape_label)
def test_one_split_is_one_launch_and_more_are_merged_by_mla_reduce_or_the_wide_merge(spec):
    plan = _plan()
    splits = plan.split_for(spec["batchsize"], spec["kvseqlen"])[0]
    out, launches = plan.plan(mla.meta_input(spec))
    names = [name for name, *_ in launches]
    merge = "mla_reduce_wide" if spec["batchsize"] * plan.HEADS < plan.WIDE_BELOW else "mla_reduce"
    assert names == (["mla_decode"] if splits == 1 else ["mla_decode", merge])
    decode_args = launches[0][4]
    assert decode_args[5] is out  # the decode's out_ptr: written when there is one split
    if splits > 1:
        assert launches[1][4][2] is out and launches[1][4][3] == splits


@pytest.mark.slow
def test_both_paths_pass_under_the_interpreter():
    pytest.importorskip("triton", reason="the [triton] extra runs the interpreter")
    from click.testing import CliRunner

    from submitgen.cli import cli

    plan = _plan()
    # one split (no merge); 4 splits of 2 sequences (32 plain merge programs: the wide merge); 4
    # splits of 8 sequences (128: mla_reduce)
    one, wide, plain = (3, 96), (2, 256), (8, 256)
    assert [plan.split_for(*c)[0] for c in (one, wide, plain)] == [1, 4, 4]
    assert wide[0] * plan.HEADS < plan.WIDE_BELOW <= plain[0] * plan.HEADS
    result = CliRunner().invoke(cli, ["test", "--interpret", str(ROOT / "kernels" / "mixed_mla"),
                                      "--shape", "batchsize=3,qseqlen=1,kvseqlen=96,seed=11",
                                      "--shape", "batchsize=2,qseqlen=1,kvseqlen=256,seed=12",
                                      "--shape", "batchsize=8,qseqlen=1,kvseqlen=256,seed=13"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == ("kernel checked under the Triton interpreter: all 3 shapes "
                                               "passed")
