"""Prebuilt code objects (``--co``): one object each, in place of compiling the device sources."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from submitgen.pipeline.frontends.images import serving_kernels
from submitgen.pipeline.values import EmbeddedObject, Prepared
from submitgen.project.param_kinds import TritonParams


@dataclass(frozen=True)
class Prebuilt:
    name: str = "prebuilt"
    order: int = 0

    def inputs(self, p: Prepared) -> tuple[Path, ...]:
        return p.code_objects

    def param_kinds(self, p: Prepared) -> dict[str, tuple[str, tuple[object, ...]]]:
        return {}  # an object's metadata gives sizes only (the compiled front end reads the sources)

    def param_names(self, p: Prepared) -> dict[str, TritonParams]:
        return {}

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]:
        return serving_kernels(p, [p.backend.load_prebuilt(path, p.arch) for path in p.code_objects])


FRONT_END = Prebuilt()
