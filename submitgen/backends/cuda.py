"""NVIDIA GPUs (CUDA driver API): cubins built by nvcc from the same kernel sources, read by the
cubin reader. Used to check numerics on NVIDIA machines."""

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

CUDA = Runtime("cuda", "CUDA driver", after_load="_sg_allow_large_shared")  # runtime/cuda.py.j2


class CudaBackend:
    target = Target.CUDA
    summary = "a cubin for NVIDIA GPUs (same kernel sources)"
    arches: tuple[str, ...] = ("sm_90",)
    default_arch = "sm_90"
    runtime = CUDA
    image_kind = "cubin"
    e_machine = 190  # EM_CUDA (readers/cuda/cubin.py; tests/test_build_stages.py checks they agree)
    triton_arches: Mapping[str, TritonTarget] = MappingProxyType({"sm_90": TRITON_TARGETS["sm_90"]})

    def compile(self, sources: tuple[Path, ...], arch: str, *, label: str, compiler: str | None,
                use_cache: bool) -> Image:
        from submitgen.toolchain.cuda import compile_cuda  # lazy: the CLI starts without them

        return Image(compile_cuda(sources, arch=arch), label)

    def load_prebuilt(self, path: Path, arch: str) -> Image:
        from submitgen.readers.containers import read_input  # lazy: the CLI starts without them

        return Image(read_input(path), str(path))

    def read_header(self, data: bytes, source: str) -> HeaderInfo:
        from submitgen.readers.cuda.cubin import parse_cubin_header  # lazy: the CLI starts without them

        return parse_cubin_header(data, source)

    def read(self, image: Image) -> ObjectInfo:
        from submitgen.readers.cuda.cubin import read_cubin  # lazy: the CLI starts without them

        return read_cubin(image.data, label=image.label)

    def lds_limit(self, code_object: ObjectInfo) -> int:
        from submitgen.readers.cuda.cubin import CubinObject  # lazy: the CLI starts without them

        if not isinstance(code_object, CubinObject):
            raise ValidationError(f"{code_object.label}: not a cubin; the cuda target reads only cubins")
        return code_object.max_shared_bytes

    def occupancy_text(self, code_object: ObjectInfo, kernel: KernelInfo, block: int,
                       dynamic_lds: int) -> str:
        return "n/a (NVIDIA)"


BACKEND = CudaBackend()
