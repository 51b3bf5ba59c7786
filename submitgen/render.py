"""Rendering submissions from the Jinja templates in templates/."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import jinja2

from .embed import Blob
from .resources import templates_dir
from .runtime import pack
from .validate import AqlLayout, KernelLayout

TEMPLATE = "submission.py.j2"


@dataclass(frozen=True)
class SubmissionContext:
    """Everything the submission template reads; nothing else reaches it."""

    header_lines: tuple[str, ...]
    provenance: str
    version: str
    project: str
    command: str
    leaderboard: str
    target_id: str
    arch: str
    runtime: str  # "hip" | "cuda"
    launcher: str  # "ctypes" | "cpp" | "aql"
    compress: str
    blobs: tuple[Blob, ...]
    kernels: tuple[KernelLayout, ...]
    leaves_source: str
    fallback_source: str
    plan_name: str
    plan_source: str
    allow_fallback: bool
    reuse_output: bool = False
    aql: tuple[AqlLayout, ...] = ()  # --launcher aql only: kernarg segment and hidden args

    @property
    def runtime_name(self) -> str:
        return {"hip": "HIP", "cuda": "CUDA driver"}[self.runtime]


def pack_source() -> str:
    return inspect.getsource(pack).strip()


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(ctx: SubmissionContext) -> str:
    template = _environment().get_template(TEMPLATE)
    values = {name: getattr(ctx, name) for name in ctx.__dataclass_fields__}
    values["runtime_name"] = ctx.runtime_name
    values["pack_source"] = pack_source()
    values["kernels"] = [
        {"name": k.name, "blob": k.blob, "explicit_bytes": k.explicit_bytes, "layout": repr(k.layout)}
        for k in ctx.kernels
    ]
    values["aql"] = [
        {"name": k.name, "symbol": k.symbol, "kernarg_segment_size": k.kernarg_segment_size,
         "kernarg_segment_align": k.kernarg_segment_align, "group": k.group_segment_fixed_size,
         "private": k.private_segment_fixed_size, "hidden": repr(k.hidden)}
        for k in ctx.aql
    ]
    values["blobs"] = [{"sha256": b.sha256, "size": b.size, "lines": b.lines} for b in ctx.blobs]
    for key in ("leaves_source", "fallback_source", "plan_source"):
        values[key] = values[key].strip()
    return template.render(**values)
