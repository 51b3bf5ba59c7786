"""NVIDIA GPUs (CUDA driver API): cubins built by nvcc from the same kernel sources, read by the
cubin reader. Used to check numerics on NVIDIA machines."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from submitgen import toolchain
from submitgen.backends.base import Image, Runtime
from submitgen.errors import ValidationError
from submitgen.options import Target
from submitgen.readers.containers import (
    read_input,  # the one bounded reader: a FIFO or device is refused
)
from submitgen.readers.cuda.cubin import CubinObject, parse_cubin_header, read_cubin
from submitgen.toolchain.triton import TARGETS, TritonTarget

if TYPE_CHECKING:
    from submitgen.readers.base import HeaderInfo, KernelInfo, ObjectInfo

CUDA = Runtime("cuda", "CUDA driver", after_load="_sg_allow_large_shared")  # runtime/cuda.py.j2


class CudaBackend:
    target = Target.CUDA
    summary = "a cubin for NVIDIA GPUs (same kernel sources)"
    arches: tuple[str, ...] = ("sm_90",)
    default_arch = "sm_90"
    runtime = CUDA
    image_kind = "cubin"
    e_machine = 190  # EM_CUDA (readers/cuda/cubin.py; tests/test_build_stages.py checks they agree)
    triton_arches: Mapping[str, TritonTarget] = MappingProxyType({"sm_90": TARGETS["sm_90"]})

    def compile(self, sources: tuple[Path, ...], arch: str, *, label: str, compiler: str | None,
                use_cache: bool) -> Image:
        from submitgen.toolchain.cuda import compile_cuda

        return Image(compile_cuda(sources, arch=arch), label)

    def load_prebuilt(self, path: Path, arch: str) -> Image:
        return Image(read_input(path), str(path))

    def read_header(self, data: bytes, source: str) -> HeaderInfo:
        return parse_cubin_header(data, source)

    def read(self, image: Image) -> ObjectInfo:
        return read_cubin(image.data, label=image.label)

    def lds_limit(self, code_object: ObjectInfo) -> int:
        if not isinstance(code_object, CubinObject):
            raise ValidationError(f"{code_object.label}: not a cubin; the cuda target reads only cubins")
        return code_object.max_shared_bytes

    def occupancy_text(self, code_object: ObjectInfo, kernel: KernelInfo, block: int,
                       dynamic_lds: int) -> str:
        return "n/a (NVIDIA)"


BACKEND = CudaBackend()
