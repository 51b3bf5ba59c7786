"""Triton kernels (the plan's ``TRITON`` table): each specialization is compiled into one object
serving its launch name, with what Triton decided for its launches: the block (num_warps x wave
size), the dynamic LDS, and the global and profile scratch pointers appended to every launch.

Triton builds for every backend that declares ``triton_arches`` (toolchain/triton.py reads them);
the object must be of the backend's ``image_kind``. The files read and the parameters' kinds and
names are this front end's too (``inputs``, ``param_kinds``, ``param_names``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from submitgen.backends import Image
from submitgen.errors import TritonCompileError
from submitgen.pipeline.values import EmbeddedObject, KernelBinding, Prepared
from submitgen.project.param_kinds import TritonParams, triton_param_kinds, triton_params
from submitgen.runtime.pack import SgLaunchDefaults
from submitgen.toolchain.triton import TritonSpec, compile_triton


def _where(spec: TritonSpec) -> str:
    return f"{spec.source.name} ({spec.kernel}'s signature)"


@dataclass(frozen=True)
class Triton:
    name: str = "triton"
    order: int = 2

    def inputs(self, p: Prepared) -> tuple[Path, ...]:
        return tuple(s.source for s in p.project.triton)

    def param_kinds(self, p: Prepared) -> dict[str, tuple[str, tuple[object, ...]]]:
        """Each specialization's by-value parameters as int or float, from its signature."""
        return {spec.name: (_where(spec), triton_param_kinds(spec.signature)) for spec in p.project.triton}

    def param_names(self, p: Prepared) -> dict[str, TritonParams]:
        """Each specialization's parameters as the plan passes them, for counting and naming."""
        return {spec.name: triton_params(_where(spec), spec.signature) for spec in p.project.triton}

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]:
        objects = []
        for spec in p.project.triton:
            art = compile_triton(spec, p.arch, cache=p.use_cache)
            if art.kind != p.backend.image_kind:
                raise TritonCompileError(
                    f"{spec.source}: Triton kernel '{spec.kernel}' for {p.arch} gave a {art.kind}, "
                    f"this target loads a {p.backend.image_kind}"
                )
            image = Image(art.image, f"{spec.source.name}:{spec.kernel} as {spec.name} ({p.arch})")
            defaults = SgLaunchDefaults(
                "Triton", art.block, art.shared, (art.global_scratch, art.profile_scratch),
                tuple(name for name, kind in spec.signature if kind != "constexpr"),
            )
            objects.append(EmbeddedObject(image.data, image.label, p.backend.read(image),
                                          (KernelBinding(spec.name, art.symbol, defaults),),
                                          ("triton", art.triton_version)))
        return tuple(objects)


FRONT_END = Triton()
