"""The project's device sources (HIP, CUDA, ...): compiled by the backend's toolchain into one
object, unless prebuilt ``--co`` objects stand in for them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from submitgen.backends import Image
from submitgen.errors import PlanError, ValidationError
from submitgen.pipeline.frontends.images import serving_kernels
from submitgen.pipeline.values import EmbeddedObject, Prepared
from submitgen.project.param_kinds import TritonParams, hip_param_kinds


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

    def inputs(self, p: Prepared) -> tuple[Path, ...]:
        return p.project.sources

    def param_kinds(self, p: Prepared) -> dict[str, tuple[str, tuple[object, ...]]]:
        """The KERNELS' by-value parameters as int or float, from the device sources that define
        them (also when --co objects stand in for them)."""
        files = [(path.name, data) for path, data in zip(p.project.sources, p.project.source_bytes)]
        return hip_param_kinds(files, p.project.kernels)

    def param_names(self, p: Prepared) -> dict[str, TritonParams]:
        return {}  # a C declaration's names are not the plan's

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
