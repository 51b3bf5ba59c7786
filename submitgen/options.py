"""The build's option values, each defined and checked here once. The CLI turns these enums into
its choices; the library accepts either the enum or its string value. ``--launcher``'s values are
the launchers' own names (submitgen/launchers/)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import TypeVar

from submitgen.errors import OptionError

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10

    class StrEnum(str, Enum):
        """enum.StrEnum for Python 3.10: members are their string values."""

        def __str__(self) -> str:
            return str(self.value)


class Target(StrEnum):
    """Which GPU family a build is for (``--target``)."""

    AMD = "amd"
    CUDA = "cuda"
    HIP = "amd"  # alias (Target.HIP is Target.AMD): the runtime's name for the same target


class Compress(StrEnum):
    """How the embedded code objects are compressed before base64 (``--compress``)."""

    LZMA = "lzma"
    ZLIB = "zlib"


class Mode(StrEnum):
    """popcorn-cli's ``--mode`` for the submit line a build prints (the file is the same in each)."""

    TEST = "test"
    BENCHMARK = "benchmark"
    LEADERBOARD = "leaderboard"


E = TypeVar("E", bound=StrEnum)

def choices(enum: type[StrEnum]) -> tuple[str, ...]:
    """The values of ``enum`` in definition order, aliases left out: the CLI's choices."""
    return tuple(member.value for member in enum)


def parse(enum: type[E], value: str | StrEnum, option: str) -> E:
    """``value`` as a member of ``enum``; OptionError naming the option, the choices and the value."""
    try:
        return enum(value)
    except ValueError:
        raise OptionError(f"{option} must be one of {', '.join(choices(enum))}, got {value!r}") from None


@dataclass(frozen=True)
class TritonTarget:
    """What Triton's ``GPUTarget`` takes for one arch: Triton's backend name, its arch (a name or a
    number) and the wave size; and the image it produces (a backend's ``image_kind``)."""

    backend: str  # "hip", "cuda"
    arch: str | int  # "gfx950", 90
    warp_size: int
    image_kind: str


TRITON_TARGETS: Mapping[str, TritonTarget] = MappingProxyType({
    "gfx950": TritonTarget("hip", "gfx950", 64, "hsaco"),
    "gfx942": TritonTarget("hip", "gfx942", 64, "hsaco"),
    "sm_90": TritonTarget("cuda", 90, 32, "cubin"),
})
"""The arches Triton builds for (toolchain/triton.py), in the backends' order; each backend's
``triton_arches`` are its rows (a new target adds its rows here)."""
