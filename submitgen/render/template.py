"""Rendering submissions from the Jinja templates in templates/.

A launcher's template (its ``LauncherSpec.template``, ``launcher/<name>.py.j2``) extends
``skeleton.py.j2`` and includes ``runtime/<runtime>.py.j2``;
the template gets the typed :class:`RenderContext` whole, and writes every value taken from an
input through the ``py`` filter (a Python literal: a name is data, never code) or the ``comment``
filter. The code pasted in (the packer, the problem's inputs and fallback, the plan) and the
templates' own blocks each import what they use; :func:`submitgen.render.hoist.assemble` then gathers
every import into one block under the header."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

import jinja2

from submitgen.errors import RenderError
from submitgen.files import templates_dir
from submitgen.render.context import AqlEntry, KernelEntry, Pasted, RenderContext
from submitgen.render.hoist import assemble
from submitgen.runtime import frozen, pack
from submitgen.textfmt import py_string

__all__ = ["AqlEntry", "KernelEntry", "Pasted", "RenderContext", "render", "py_literal"]

def py_literal(value: object) -> str:
    """``value`` (str, int, float, bool, None, bytes or a tuple of these) as Python source that
    evaluates to it: repr() of the plain types, which escapes quotes, backslashes, line breaks and
    every character that is not printable."""
    if isinstance(value, tuple):
        items = [py_literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, str):
        return py_string(value)
    if value is None or isinstance(value, (bool, int, float, bytes)):
        return repr(value)
    raise RenderError(f"cannot write a {type(value).__name__} into a submission as a literal: {value!r:.80}")


def comment_text(value: object) -> str:
    """``value`` for a ``#`` comment: as it is when it is printable text, else its repr (a line
    break in a name must not end the comment and start code)."""
    text = str(value)
    return text if text.isprintable() else ascii(text)


@dataclass(frozen=True)
class _PastedCode:
    """The pasted sections as the template writes them (stripped; imports hoisted later)."""

    frozen: str
    pack: str
    leaves: str
    fallback: str
    plan: str


def docstring_as_comment(source: str) -> str:
    """``source`` with its module docstring, if it has one, written as ``#`` comment lines in its
    place (the plan's text is otherwise pasted as it is)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source  # never expected: the build parsed it
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return source
    lines = source.split("\n")
    start, end = first.lineno - 1, (first.end_lineno or first.lineno) - 1
    rest = lines[end].encode()[first.end_col_offset or 0:].decode(errors="replace").strip()  # a byte offset
    if first.col_offset or (rest and not rest.startswith("#")):
        return source
    text = inspect.cleandoc(first.value.value)
    comment = [("# " + comment_text(line)).rstrip() for line in text.split("\n")]
    return "\n".join([*lines[:start], *comment, *lines[end + 1:]])


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, autoescape=False)
    env.filters["py"] = py_literal
    env.filters["comment"] = comment_text
    return env


def _pasted_source(env: jinja2.Environment, name: str) -> str:
    """A launcher's extra source (under templates/), for pasting into a triple-quoted string."""
    assert env.loader is not None
    source = env.loader.get_source(env, name)[0]
    if '"""' in source:
        raise RenderError(f'{name} holds """, which would end the Python string it is pasted into')
    return source


def render(ctx: RenderContext) -> str:
    env = _environment()
    template = env.get_template(ctx.launcher.template)
    pasted = _PastedCode(
        frozen=inspect.getsource(frozen).strip(),
        pack=inspect.getsource(pack).strip(),
        leaves=ctx.pasted.leaves.strip(),
        fallback=ctx.pasted.fallback.strip(),
        plan=docstring_as_comment(ctx.pasted.plan.strip()),
    )
    extra = {name: _pasted_source(env, path) for name, path in ctx.launcher.extra_sources}
    return assemble(template.render(ctx=ctx, pasted=pasted, **extra), "rendered submission")
