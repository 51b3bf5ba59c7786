"""Prebuilt code objects (``--co``): one object each, in place of compiling the device sources."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.pipeline.frontends.images import serving_kernels
from submitgen.pipeline.values import EmbeddedObject, Prepared


@dataclass(frozen=True)
class Prebuilt:
    name: str = "prebuilt"
    order: int = 0

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]:
        return serving_kernels(p, [p.backend.load_prebuilt(path, p.arch) for path in p.code_objects])


FRONT_END = Prebuilt()
