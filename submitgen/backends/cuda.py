"""NVIDIA GPUs (CUDA driver API): cubins built by nvcc from the same kernel sources, read by the
cubin reader. Used to check numerics on NVIDIA machines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from submitgen.backends.base import Image, compile_triton
from submitgen.errors import ValidationError
from submitgen.options import Target

if TYPE_CHECKING:
    from submitgen.readers.base import KernelInfo, ObjectInfo
    from submitgen.toolchain.triton import TritonArtifact, TritonSpec


class CudaBackend:
    target = Target.CUDA
    default_arch = "sm_90"
    triton_kind = "cubin"

    def compile(self, sources: tuple[Path, ...], arch: str, *, label: str, compiler: str | None,
                use_cache: bool) -> Image:
        from submitgen import toolchain

        return Image(toolchain.compile_cuda(sources, arch=arch), label)

    def compile_triton(self, spec: TritonSpec, arch: str, *, use_cache: bool) -> TritonArtifact:
        return compile_triton(spec, arch, self.triton_kind, use_cache=use_cache)

    def load_prebuilt(self, path: Path, arch: str) -> Image:
        from submitgen.readers.containers import (
            read_input,  # the one bounded reader: a FIFO or device is refused
        )

        return Image(read_input(path), str(path))

    def read(self, image: Image) -> ObjectInfo:
        from submitgen.readers.cuda.cubin import read_cubin

        return read_cubin(image.data, source=image.label)

    def lds_limit(self, code_object: ObjectInfo) -> int:
        from submitgen.readers.cuda.cubin import CubinObject

        if not isinstance(code_object, CubinObject):
            raise ValidationError(f"{code_object.source}: not a cubin; the cuda target reads only cubins")
        return code_object.max_shared_bytes

    def occupancy_text(self, code_object: ObjectInfo, kernel: KernelInfo, block: int,
                       dynamic_lds: int) -> str:
        return "n/a (NVIDIA)"
