"""Triton kernels (the plan's ``TRITON`` table): each specialization is compiled into one object
serving its launch name, with what Triton decided for its launches: the block (num_warps x wave
size), the dynamic LDS, and the global and profile scratch pointers appended to every launch."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.backends import Image
from submitgen.pipeline.values import EmbeddedObject, KernelBinding, Prepared
from submitgen.runtime.pack import SgLaunchDefaults


@dataclass(frozen=True)
class Triton:
    name: str = "triton"
    order: int = 2

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]:
        objects = []
        for spec in p.project.triton:
            art = p.backend.compile_triton(spec, p.arch, use_cache=p.use_cache)
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
