"""Stage 2: produce the code objects the submission embeds, each read (parsed) once.

A project's device sources give one object (or the ``--co`` files give one each); each object
serves the plan's names it holds (the first object holding a name wins). Further front ends (one
object per Triton specialization) add their objects here."""

from __future__ import annotations

from ..backends import Image
from .values import EmbeddedObject, KernelBinding, Prepared


def _images(p: Prepared) -> tuple[Image, ...]:
    opts = p.options
    if opts.code_objects:
        return tuple(p.backend.load_prebuilt(path, p.arch) for path in opts.code_objects)
    image = p.backend.compile(p.project.sources, p.arch, label=f"{p.project.root.name} ({p.arch})",
                              compiler=opts.compiler, use_cache=opts.use_cache)
    return (image,)


def produce_objects(p: Prepared) -> tuple[EmbeddedObject, ...]:
    objects = []
    served: set[str] = set()
    for image in _images(p):
        co = p.backend.read(image)
        names = tuple(k.name for k in co.kernels if k.name in p.project.kernels and k.name not in served)
        served.update(names)
        bindings = tuple(KernelBinding(n, n) for n in p.project.kernels if n in names)
        objects.append(EmbeddedObject(image.data, image.source, co, bindings))
    return tuple(objects)
