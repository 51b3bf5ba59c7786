"""Stage 2: produce the code objects the submission embeds, each read (parsed) once.

A project's device sources give one object (or the ``--co`` files give one each), serving the
KERNELS names it holds (the first object holding a name wins); each Triton specialization gives
one object serving its launch name."""

from __future__ import annotations

import hashlib

from submitgen.backends import Image
from submitgen.errors import PlanError, ValidationError
from submitgen.pipeline.values import EmbeddedObject, KernelBinding, Prepared


def _images(p: Prepared) -> tuple[Image, ...]:
    opts = p.options
    if opts.code_objects:
        return tuple(p.backend.load_prebuilt(path, p.arch) for path in opts.code_objects)
    if not p.project.sources:
        if p.project.kernels:
            raise PlanError(f"{p.project.plan_path}: KERNELS names kernels, but {p.project.root} has no "
                            "device sources (and no --co object was given)")
        return ()
    image = p.backend.compile(p.project.sources, p.arch, label=f"{p.project.root.name} ({p.arch})",
                              compiler=opts.compiler, use_cache=opts.use_cache)
    _same_bytes(p, image)
    return (image,)


def _same_bytes(p: Prepared, image: Image) -> None:
    """The compiler compiled the bytes the project read (a source saved mid-build is refused)."""
    read = tuple(hashlib.sha256(b).hexdigest() for b in p.project.source_bytes)
    for path, want, got in zip(p.project.sources, read, image.source_sha256):
        if want != got:
            raise ValidationError(f"{path} changed during the build (it was read, then compiled with other "
                                  "bytes); build again")


def _hip_objects(p: Prepared) -> list[EmbeddedObject]:
    objects = []
    served: set[str] = set()
    for image in _images(p):
        co = p.backend.read(image)
        names = {k.name for k in co.kernels if k.name in p.project.kernels and k.name not in served}
        served.update(names)
        bindings = tuple(KernelBinding(n, n) for n in p.project.kernels if n in names)
        objects.append(EmbeddedObject(image.data, image.source, co, bindings))
    return objects


def _triton_objects(p: Prepared) -> list[EmbeddedObject]:
    objects = []
    for spec in p.project.triton:
        art = p.backend.compile_triton(spec, p.arch, use_cache=p.options.use_cache)
        image = Image(art.image, f"{spec.source.name}:{spec.kernel} as {spec.name} ({p.arch})")
        facts = (art.block, art.shared, art.global_scratch, art.profile_scratch)
        objects.append(EmbeddedObject(image.data, image.source, p.backend.read(image),
                                      (KernelBinding(spec.name, art.symbol, facts),), art.triton_version))
    return objects


def produce_objects(p: Prepared) -> tuple[EmbeddedObject, ...]:
    return (*_hip_objects(p), *_triton_objects(p))
