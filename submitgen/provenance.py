"""The provenance line every emitted submission carries in its first comment block, written by
the build and read back by ``inspect``:

    # submitgen-provenance: version=0.1.0 arch=gfx950 target=... kernels=a,b sources=<sha256> co=<sha256>,...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .errors import ProvenanceError

PREFIX = "# submitgen-provenance: "
FIELDS = ("version", "arch", "target", "kernels", "sources", "co", "compress", "launcher")


@dataclass(frozen=True)
class Provenance:
    line: int  # 1-based line of the provenance comment
    fields: Mapping[str, str]

    @property
    def code_objects(self) -> tuple[str, ...]:
        """sha256 of every embedded code object, as the build recorded them."""
        return tuple(c for c in self.fields.get("co", "").split(",") if c)

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(k for k in self.fields.get("kernels", "").split(",") if k)


def format_line(fields: Mapping[str, str]) -> str:
    """The comment line (without a newline). Values must not contain spaces."""
    for key, value in fields.items():
        if " " in value or "=" in key:
            raise ProvenanceError(f"provenance field {key}={value!r} cannot hold a space")
    return PREFIX + " ".join(f"{k}={v}" for k, v in fields.items())


def read(text: str) -> Provenance | None:
    """The provenance of a submission's text, from its first comment block; None if it has none."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(PREFIX):
            pairs = (item.partition("=") for item in line[len(PREFIX):].split())
            return Provenance(number, MappingProxyType({k: v for k, sep, v in pairs if sep}))
        if not (line.startswith("#") or line.startswith("//")):
            return None
    return None
