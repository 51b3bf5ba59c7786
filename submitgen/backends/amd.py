"""AMD GPUs (HIP runtime): code objects built by clang/ROCm, read by the code-object reader,
with the hardware facts of ``processors.py``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from submitgen.backends.base import Image, Runtime
from submitgen.errors import ValidationError
from submitgen.options import TRITON_TARGETS, Target, TritonTarget

if TYPE_CHECKING:
    from submitgen.readers.base import HeaderInfo, KernelInfo, ObjectInfo

HIP = Runtime("hip", "HIP")


class AmdBackend:
    target = Target.AMD
    summary = "HIP code object for MI355X"
    arches: tuple[str, ...] = ("gfx950", "gfx942")
    default_arch = "gfx950"
    runtime = HIP
    image_kind = "hsaco"
    e_machine = 224  # EM_AMDGPU (readers/amd/header.py; tests/test_build_stages.py checks they agree)
    triton_arches: Mapping[str, TritonTarget] = MappingProxyType(
        {arch: TRITON_TARGETS[arch] for arch in arches})

    def compile(self, sources: tuple[Path, ...], arch: str, *, label: str, compiler: str | None,
                use_cache: bool) -> Image:
        from submitgen.toolchain.compile import compile_sources  # lazy: the CLI starts without them

        result = compile_sources(sources, arch=arch, compiler=compiler, use_cache=use_cache)
        # the model the toolchain's read-back made, if it keeps one: the build need not parse again
        return Image(result.code_object, label, getattr(result, "parsed", None), result.source_sha256)

    def load_prebuilt(self, path: Path, arch: str) -> Image:
        from submitgen.readers.containers import load_code_objects  # lazy: the CLI starts without them

        found = load_code_objects(Path(path), arch=arch)
        if len(found) > 1:
            raise ValidationError(f"{path} holds {len(found)} code objects for {arch}; pass one")
        return Image(found[0].data, str(path))

    def read_header(self, data: bytes, source: str) -> HeaderInfo:
        from submitgen.readers.amd.header import parse_header  # lazy: the CLI starts without them

        return parse_header(data, source)

    def read(self, image: Image) -> ObjectInfo:
        from submitgen.readers.amd.reader import read_code_object  # lazy: the CLI starts without them

        if image.parsed is not None:
            return image.parsed
        return read_code_object(image.data, label=image.label)

    def lds_limit(self, code_object: ObjectInfo) -> int:
        t = code_object.processor_facts()
        if t is None:
            raise ValidationError(f"{code_object.label}: no hardware facts for {code_object.processor}; "
                                  "cannot check LDS")
        return t.lds_per_workgroup

    def occupancy_text(self, code_object: ObjectInfo, kernel: KernelInfo, block: int,
                       dynamic_lds: int) -> str:
        from submitgen.readers.amd.model import Kernel  # lazy: the CLI starts without them
        from submitgen.readers.amd.processors import occupancy  # lazy: the CLI starts without them

        if not isinstance(kernel, Kernel):
            raise ValidationError(f"{code_object.label}: kernel {kernel.name!r} is not an AMD code object's")
        o = occupancy(kernel, code_object.processor, block, dynamic_lds=dynamic_lds)
        return f"{o.waves_per_simd} waves/SIMD (limited by {', '.join(o.limited_by)})"


BACKEND = AmdBackend()
