"""render(): the typed context, the literal filters, and the earlier flat context."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

import submitgen.build as build_module
from submitgen.build import BuildOptions, build
from submitgen.errors import RenderError
from submitgen.render import RenderContext, SubmissionContext, comment_text, py_literal, render

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("value", [
    "plain", 'x"+str(__import__("os").getpid())+"', "a\\b", "new\nline", "tab\there", "caf\u00e9 \U0001f600",
    "\u2028\ufeff\x00", b"\x00\xff", 0, -7, 1.5, None, True, (), (1,), ((0, 8, "global_buffer", ""), (8, 4, "x", "y")),
])
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


def test_the_earlier_flat_context_renders_the_same_file(tmp_path, monkeypatch):
    seen: list[RenderContext] = []

    def spy(ctx):
        seen.append(ctx)
        return render(ctx)

    monkeypatch.setattr(build_module, "render", spy)
    built = build(BuildOptions(problem="mxfp4-mm", output=tmp_path / "s.py", kernels=TESTS / "projects" / "mm_basic",
                               code_objects=(TESTS / "golden" / "mm_basic.co",), launcher="aql", allow_own_queue=True))
    (ctx,) = seen
    flat = SubmissionContext(
        ctx.header_lines, ctx.provenance, ctx.version, ctx.project, ctx.command, ctx.leaderboard, ctx.target_id,
        ctx.arch, "hip", ctx.launcher, ctx.compress, ctx.blobs,
        tuple(SimpleNamespace(name=k.name, blob=k.image, explicit_bytes=k.explicit_bytes, layout=k.args)
              for k in ctx.kernels),
        ctx.pasted.leaves, ctx.pasted.fallback, ctx.pasted.plan_name, ctx.pasted.plan, ctx.allow_fallback,
        ctx.reuse_output, tuple(SimpleNamespace(**dataclasses.asdict(a)) for a in ctx.aql),
    )
    assert render(flat) == built.text


def test_a_launcher_renders_only_with_its_runtimes():
    with pytest.raises(RenderError, match="launcher cpp renders with runtime hip, got 'cuda'"):
        RenderContext(*(("",) * 8), runtime="cuda", launcher="cpp", compress="lzma", blobs=(), kernels=(),
                      pasted=None, allow_fallback=True)
