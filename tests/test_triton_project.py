"""A kernel project's TRITON table -> TritonSpecs: the shape of every entry is checked, sources
are read once from inside the project folder, and each mistake gets one PlanError line."""

from __future__ import annotations

import os

import pytest

from submitgen.errors import PlanError
from submitgen.project.triton_table import specs_from_launch

GOOD = {
    "source": "k.py", "kernel": "add_kernel",
    "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, "constexprs": {"BLOCK": 256},
}


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "k.py").write_text("import triton\n")
    return tmp_path


def test_entries_become_specs_sharing_one_read(proj):
    a, b = specs_from_launch({"small": GOOD, "big": {**GOOD, "constexprs": {"BLOCK": 1024}, "num_warps": 8,
                                                     "num_stages": 0, "options": {"waves_per_eu": 2}}}, proj)
    assert (a.name, a.kernel, a.num_warps, a.num_stages, a.options) == ("small", "add_kernel", 4, 2, ())
    assert a.source == (proj / "k.py").resolve() and a.source_bytes == b"import triton\n"
    assert a.signature == (("x_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr")) and a.constexprs == (
        ("BLOCK", 256),
    )
    assert (b.num_warps, b.num_stages, b.options, b.constexprs) == (
        8,
        0,
        (("waves_per_eu", 2),),
        (("BLOCK", 1024),),
    )
    assert a.source_bytes is b.source_bytes


@pytest.mark.parametrize(
    "table, message",
    [
        ([1], "launch.py: TRITON must be a dict of launch name -> specialization, got list"),
        ({"a b": GOOD}, "launch.py: TRITON['a b']: a launch name must be an identifier string"),
        ({"m": 5}, "launch.py: TRITON['m']: must be a dict, got int"),
        (
            {"m": {**GOOD, "warps": 4}},
            "launch.py: TRITON['m']: unknown key(s) 'warps' (expected source, kernel, "
            "signature, constexprs, num_warps, num_stages, options, plan)",
        ),
        ({"m": {"source": "k.py"}}, "launch.py: TRITON['m']: missing kernel, signature"),
        (
            {"m": {**GOOD, "source": "k.hip"}},
            "launch.py: TRITON['m']: 'source' must name a .py file in the project folder, got 'k.hip'",
        ),
        (
            {"m": {**GOOD, "source": "gone.py"}},
            "launch.py: TRITON['m']: 'source' 'gone.py' not found in {proj}",
        ),
        (
            {"m": {**GOOD, "source": "../k.py"}},
            "launch.py: TRITON['m']: 'source' '../k.py' is outside the project folder {proj}",
        ),
        (
            {"m": {**GOOD, "kernel": "a-b"}},
            "launch.py: TRITON['m']: 'kernel' must be a Python identifier, got 'a-b'",
        ),
        (
            {"m": {**GOOD, "signature": {"x": 1}}},
            "launch.py: TRITON['m']: 'signature' must be a dict of parameter "
            "name -> Triton type string, got {'x': 1}",
        ),
        (
            {"m": {**GOOD, "constexprs": {"BLOCK": float("nan")}}},
            "launch.py: TRITON['m']: constexprs['BLOCK'] must be "
            "a bool, int, finite float, str or None, got nan",
        ),
        (
            {"m": {**GOOD, "num_warps": 3}},
            "launch.py: TRITON['m']: 'num_warps' must be a power of two from 1 to 64, got 3",
        ),
        (
            {"m": {**GOOD, "num_stages": True}},
            "launch.py: TRITON['m']: 'num_stages' must be an int from 0 to 64, got True",
        ),
        ({"m": {**GOOD, "options": [1]}}, "launch.py: TRITON['m']: 'options' must be a dict, got list"),
        ({"m": {**GOOD, "signature": {"x_ptr": "*bf61", "n": "i32:16", "BLOCK": "constexpr"}}},
         "launch.py: TRITON['m']: signature['x_ptr'] is '*bf61', not a Triton type (a type of bf16, fp16, "
         "fp32, fp64, fp8e4nv, fp8e4b8, fp8e4b15, fp8e5, fp8e5b16, i1, i8, i16, i32, i64, u1, u8, u16, u32, "
         "u64, B, '*' before it for a pointer, ':16' after it for 16-byte alignment, or 'constexpr')"),
    ],
)
def test_each_mistake_is_one_plan_error(proj, table, message):
    with pytest.raises(PlanError) as e:
        specs_from_launch(table, proj)
    assert str(e.value) == message.replace("{proj}", str(proj))


def test_a_source_that_is_not_a_regular_file_is_refused(proj):
    os.mkfifo(proj / "pipe.py")
    with pytest.raises(PlanError) as e:
        specs_from_launch({"m": {**GOOD, "source": "pipe.py"}}, proj)
    assert str(e.value) == (
        f"launch.py: TRITON['m']: Triton source {(proj / 'pipe.py').resolve()}: not a regular file "
        "(a FIFO); sources and headers must be regular files"
    )


def test_a_triton_entry_that_is_not_a_literal_is_named(tmp_path):
    from submitgen.project.load import load_project

    (tmp_path / "k.py").write_text("import triton\n")
    (tmp_path / "launch.py").write_text(
        "import torch\n\nBLOCK = 256\nTRITON = {\n    'm': {\n"
        "        'source': 'k.py', 'kernel': 'add_kernel',\n"
        "        'signature': {'x_ptr': '*fp32', 'BLOCK': 'constexpr'},\n"
        "        'constexprs': {'BLOCK': BLOCK},\n    },\n}\n\n\ndef plan(data):\n    return None\n")
    with pytest.raises(PlanError) as e:
        load_project(tmp_path, arch="gfx950")
    assert str(e.value) == (f"{tmp_path / 'launch.py'}:8: TRITON['m']['constexprs']['BLOCK'] must be a "
                            "literal (plain data), not BLOCK")
