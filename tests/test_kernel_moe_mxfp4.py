"""The default amd-moe-mxfp4 Triton project run on the CPU by Triton's interpreter
(tests/moe_interpret.py, one process of its own for all the cases of this module), through its
own launch plan, against the reference: bit-identical."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from submitgen.files import kernels_dir
from submitgen.problems import moe_mxfp4 as moe

pytest.importorskip("triton")

HERE = Path(__file__).resolve().parent


# the sm_90 build's path (bf16 activation values), with k split in both stages
SM_90_PATH = {"A_BF16": True, "gate_up_s": {"plan": {"target": 10**5}}, "down_s": {"plan": {"target": 10**5}}}


KERNEL_CASES = dict(zip(
    ["small-tiles-split-k", "large-tiles", "bf16-activations-split-k", "small-tiles-by-slot",
     "large-tiles-work-list-order", "scales-ahead-split-k", "scales-ahead-pairs", "route-scan-steps"],
    [
        (256, 256, 8, 2, 8, {}, "s"),
        (256, 512, 4, 2, 40, {}, "l"),
        (512, 256, 4, 2, 40, {**SM_90_PATH, "MIN_ROWS": 100}, "s"),
        # the other stage-2 row order of each class (the plan runs "s" in work-list order, "l" by slot)
        (256, 256, 8, 2, 8, {"gate_up_s": {"constexprs": {"A2_TILES": False}},
                             "down_s": {"constexprs": {"A2_TILES": False}}}, "s"),
        (256, 512, 4, 2, 40, {"gate_up_l": {"constexprs": {"A2_TILES": True}},
                              "down_l": {"constexprs": {"A2_TILES": True}}}, "l"),
        # the scales a k step ahead (PF, sm_90's), with k split in both stages: each split's last
        # step loads its own scales again, so a wrong clamp reads another split's (or another row's)
        (512, 256, 4, 2, 40, {**SM_90_PATH, "MIN_ROWS": 100,
                              "gate_up_s": {"constexprs": {"PF": True, "BK": 64},
                                            "plan": {"target": 10**5}},
                              "down_s": {"constexprs": {"PF": True, "BK": 64},
                                         "plan": {"target": 10**5}}}, "s"),
        (512, 512, 4, 2, 40, {"A_BF16": True,
                              "gate_up_l": {"constexprs": {"PF": True, "EVEN": True, "A2_TILES": True,
                                                           "BM": 16, "BK": 64}},
                              "down_l": {"constexprs": {"PF": True, "PAIRS": True, "A2_TILES": True, "BM": 32,
                                                        "BK": 64}}}, "l"),
        # route's slot scan in steps of 32 (120 slots: 3 full steps and a partial one), each step's
        # ids loaded in the step before: a wrong look-ahead drops or repeats slots
        (256, 256, 8, 2, 40, {"route": {"constexprs": {"BLOCK": 32}}}, "s"),
    ],
))


# stage 2 on two stage-1 tiles at a time (PAIRS, the sm_90 "l" entries' way); seed 5 routes 22, 22,
# 16, 20 and 40 slots to the 5 experts: at BM 16 the third expert has one tile, so its even
# rounding is what keeps the later pairs on one expert each
PAIRS_AT_16 = {"gate_up_l": {"constexprs": {"EVEN": True, "A2_TILES": True, "BM": 16}},
               "down_l": {"constexprs": {"PAIRS": True, "A2_TILES": True, "BM": 32}}}


PAIRS_CASES = {
    "work-list-order": PAIRS_AT_16,
    "bf16-activations": {**SM_90_PATH, **PAIRS_AT_16},
    "by-slot": {"gate_up_l": {"constexprs": {"EVEN": True, "BM": 16}},
                "down_l": {"constexprs": {"PAIRS": True, "BM": 32}}},
}


def _spec(h, d, routed, top_k, bs, seed):
    return {"dhidden": h, "dexpert": d, "nroutedexperts": routed, "nexpertspertoken": top_k,
            "nsharedexperts": 1, "bs": bs, "seed": seed}


@pytest.mark.slow
def test_interpreted_kernels_match_the_reference_exactly():
    """Every case above in one interpreter process (one test, not a parametrized one: pytest-xdist
    would run a shared fixture once in each of its workers); a failure names its cases."""
    cases = {name: (_spec(h, d, routed, top_k, bs, seed=17), overrides, tiles)
             for name, (h, d, routed, top_k, bs, overrides, tiles) in KERNEL_CASES.items()}
    cases |= {f"pairs-{name}": (_spec(256, 512, 4, 2, 40, seed=5), overrides, "l")
              for name, overrides in PAIRS_CASES.items()}
    env = dict(os.environ, TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent), env.get("PYTHONPATH")) if p)
    r = subprocess.run(
        [sys.executable, str(HERE / "moe_interpret.py"), json.dumps([c[:2] for c in cases.values()])],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    results = dict(zip(cases, json.loads(r.stdout.strip().splitlines()[-1]), strict=True))
    def exact(tiles: str) -> dict:
        return {"launches": ["route", f"gate_up_{tiles}", f"down_{tiles}", "to_bf16"], "equal": True,
                "max_abs_err": 0.0, "inputs_unchanged": True}

    wrong = {name: result.get("error", result) for name, result in results.items()
             if result != exact(cases[name][2])}
    assert not wrong, wrong


def _launch_module():
    spec = importlib.util.spec_from_file_location("moe_launch", kernels_dir() / "moe_mxfp4" / "launch.py")
    launch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch)
    return launch


def test_plan_grids_and_launch_names_on_every_listed_shape():
    launch = _launch_module()
    seen = set()
    for shape in (*moe.TESTS, *moe.BENCHMARKS):
        d = moe.dims(shape)
        slots = d.tokens * d.total_top_k
        _out, launches = launch.plan(moe.meta_input(shape))
        cls = "l" if slots >= launch.MIN_ROWS * d.experts else "s"
        seen.add(cls)
        assert [name for name, *_ in launches] == ["route", f"gate_up_{cls}", f"down_{cls}", "to_bf16"]
        g, dn = launch.TRITON[f"gate_up_{cls}"]["constexprs"], launch.TRITON[f"down_{cls}"]["constexprs"]
        tiles = slots // g["BM"] + min(d.experts, slots)
        assert launches[0][1] == (max(d.experts, min(d.tokens * d.hidden // launch.QK, 16384)), 1, 1)
        (gx, gy, gz), (dx, dy, dz) = launches[1][1], launches[2][1]
        assert (gx, gy, dx, dy) == (tiles, d.expert // g["BN"], tiles, d.hidden // dn["BN"])
        # the k splits divide the k steps, and each split's k range is what the kernels are passed
        assert (d.hidden // g["BK"]) % gz == 0 and (d.expert // dn["BK"]) % dz == 0
        assert launches[1][4][-1] * gz == d.hidden and launches[2][4][-1] * dz == d.expert
        assert gz == 1 or g["SPLIT"]
    assert seen == {"s", "l"}


def test_plan_refuses_tile_classes_of_two_row_heights():
    launch = _launch_module()
    launch.TRITON["down_s"]["constexprs"]["BM"] = 32
    with pytest.raises(ValueError, match=r"down_s \(PAIRS False\) needs BM 16, got BM 32 and EVEN False"):
        launch.plan(moe.meta_input(moe.BENCHMARKS[0]))


def test_plan_refuses_pairs_of_stage_1_tiles_not_numbered_even_or_of_another_height():
    launch = _launch_module()
    launch.TRITON["down_l"]["constexprs"].update(PAIRS=True, BM=128)
    with pytest.raises(ValueError, match=r"down_l \(PAIRS True\) needs BM 128 and gate_up_l EVEN, got BM 128 "
                                         r"and EVEN False"):
        launch.plan(moe.meta_input(moe.BENCHMARKS[-1]))
    launch.TRITON["gate_up_l"]["constexprs"]["EVEN"] = True
    launch.TRITON["down_l"]["constexprs"]["BM"] = 64
    with pytest.raises(ValueError, match=r"down_l \(PAIRS True\) needs BM 128 and gate_up_l EVEN, got BM 64"):
        launch.plan(moe.meta_input(moe.BENCHMARKS[-1]))


def test_sm_90_plan_runs_stage_2_on_pairs_of_the_large_tiles_on_every_listed_shape():
    from submitgen.project.load import _for_arch

    launch = _launch_module()
    launch.TRITON = _for_arch(launch.TRITON, "sm_90", Path("launch.py"))
    launch.A_BF16 = True
    g, dn = launch.TRITON["gate_up_l"]["constexprs"], launch.TRITON["down_l"]["constexprs"]
    assert dn["PAIRS"] and g["EVEN"] and dn["BM"] == 2 * g["BM"] and g["A2_TILES"] and dn["A2_TILES"]
    seen = 0
    for shape in (*moe.TESTS, *moe.BENCHMARKS):
        d = moe.dims(shape)
        slots = d.tokens * d.total_top_k
        _out, launches = launch.plan(moe.meta_input(shape))
        if launches[1][0] != "gate_up_l":
            continue
        seen += 1
        tiles = slots // g["BM"] + 2 * min(d.experts, slots)  # a partial and a padding tile an expert
        tiles += tiles % 2
        assert (launches[1][1][0], launches[2][1][0]) == (tiles, tiles // 2)
        assert launches[1][4][10].numel() == 3 * tiles  # the map moe_down reads at 2r
        # the stage-2 rows moe_down reads (its tiles' BM rows each, in work-list order) exist
        a2_bytes = launches[2][4][0].numel()
        assert a2_bytes == tiles * g["BM"] * d.expert * 2 >= tiles // 2 * dn["BM"] * d.expert * 2
    assert seen >= 2


def test_plan_refuses_tile_classes_of_two_stage_2_row_orders():
    launch = _launch_module()
    launch.TRITON["down_s"]["constexprs"]["A2_TILES"] = False
    with pytest.raises(ValueError, match="gate_up_s and down_s need one A2_TILES, got True and False"):
        launch.plan(moe.meta_input(moe.BENCHMARKS[0]))


def test_stage_2_workspace_holds_a_row_tile_of_rows_in_work_list_order_else_a_row_a_slot():
    launch = _launch_module()
    for shape in (*moe.TESTS, *moe.BENCHMARKS):
        d = moe.dims(shape)
        slots = d.tokens * d.total_top_k
        _out, launches = launch.plan(moe.meta_input(shape))
        name = launches[1][0]
        c = launch.TRITON[name]["constexprs"]
        a2 = launches[1][4][6]
        assert a2 is launches[2][4][0]  # what gate_up writes is what down reads
        rows = launches[1][1][0] * c["BM"] if c["A2_TILES"] else slots
        per_row = d.expert * 2 if launch.A_BF16 else d.expert // 2
        assert a2.numel() == rows * per_row, (name, a2.numel(), rows * per_row)


def test_jit_submission_writer_renders_a_file_that_lints_clean(tmp_path):
    from submitgen.lint import lint_text

    sys.path.insert(0, str(HERE.parent / "experiments"))
    try:
        import moe_jit_submission
    finally:
        sys.path.remove(str(HERE.parent / "experiments"))
    text = moe_jit_submission.render()
    assert text.startswith("#!POPCORN leaderboard amd-moe-mxfp4\n#!POPCORN gpu MI355X\n")
    assert lint_text(text, path="moe_jit.py") == []
    path = tmp_path / "moe_jit.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("moe_jit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # @triton.jit reads the kernels' source from the file
    assert {"moe_gate_up", "moe_down", "plan", "_sg_fallback", "custom_kernel"} <= set(vars(module))
