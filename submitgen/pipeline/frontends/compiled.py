"""The project's device sources (HIP, CUDA, ...): compiled by the backend's toolchain into one
object, unless prebuilt ``--co`` objects stand in for them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from submitgen.backends import Image
from submitgen.errors import PlanError, ValidationError
from submitgen.pipeline.frontends.images import serving_kernels
from submitgen.pipeline.values import EmbeddedObject, Prepared


def _same_bytes(p: Prepared, image: Image) -> None:
    """The compiler compiled the bytes the project read (a source saved mid-build is refused)."""
    read = tuple(hashlib.sha256(b).hexdigest() for b in p.project.source_bytes)
    for path, want, got in zip(p.project.sources, read, image.source_sha256):
        if want != got:
            raise ValidationError(f"{path} changed during the build (it was read, then compiled with other "
                                  "bytes); build again")


@dataclass(frozen=True)
class Compiled:
    name: str = "compiled"
    order: int = 1

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]:
        if p.code_objects:
            return ()
        if not p.project.sources:
            if p.project.kernels:
                raise PlanError(f"{p.project.plan_path}: KERNELS names kernels, but {p.project.root} has no "
                                "device sources (and no --co object was given)")
            return ()
        image = p.backend.compile(p.project.sources, p.arch, label=f"{p.project.root.name} ({p.arch})",
                                  compiler=p.compiler, use_cache=p.use_cache)
        _same_bytes(p, image)
        return serving_kernels(p, [image])


FRONT_END = Compiled()
