"""render(): the typed context, the literal filters, and the earlier flat context."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from submitgen.backends.cuda import CUDA
from submitgen.errors import RenderError
from submitgen.launchers.builtin import CPP
from submitgen.options import Compress
from submitgen.render.template import RenderContext, comment_text, py_literal

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'x"+str(__import__("os").getpid())+"',
        "a\\b",
        "new\nline",
        "tab\there",
        "caf\u00e9 \U0001f600",
        "\u2028\ufeff\x00",
        b"\x00\xff",
        0,
        -7,
        1.5,
        None,
        True,
        (),
        (1,),
        ((0, 8, "global_buffer", ""), (8, 4, "x", "y")),
    ],
)
def test_py_literal_evaluates_back_to_the_value(value):
    text = py_literal(value)
    assert ast.literal_eval(text) == value
    assert "\n" not in text


def test_py_literal_refuses_other_types():
    with pytest.raises(RenderError, match="cannot write a list into a submission as a literal"):
        py_literal([1])


def test_comment_text_stays_on_its_line():
    assert comment_text("mm_basic") == "mm_basic"
    assert comment_text("a\nimport os") == "'a\\nimport os'"


def test_a_launcher_renders_only_with_its_runtimes():
    with pytest.raises(RenderError, match="launcher cpp renders with runtime hip, got 'cuda'"):
        RenderContext(
            (),
            "# p",
            *(("",) * 6),
            runtime=CUDA,
            launcher=CPP,
            compress=Compress.LZMA,
            blobs=(),
            kernels=(),
            pasted=None,
            allow_fallback=True,
        )
