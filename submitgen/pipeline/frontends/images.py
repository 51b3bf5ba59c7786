"""What the two front ends of device-code images share: the project's KERNELS names bound to the
images that hold them (the first image holding a name serves it)."""

from __future__ import annotations

from collections.abc import Sequence

from submitgen.backends import Image
from submitgen.pipeline.values import EmbeddedObject, KernelBinding, Prepared


def serving_kernels(p: Prepared, images: Sequence[Image]) -> tuple[EmbeddedObject, ...]:
    objects = []
    served: set[str] = set()
    for image in images:
        co = p.backend.read(image)
        names = {k.name for k in co.kernels if k.name in p.project.kernels and k.name not in served}
        served.update(names)
        bindings = tuple(KernelBinding(n, n) for n in p.project.kernels if n in names)
        objects.append(EmbeddedObject(image.data, image.label, co, bindings))
    return tuple(objects)
