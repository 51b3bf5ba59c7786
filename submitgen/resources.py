"""Where the shipped templates/ and kernels/ live: inside the wheel (``submitgen/_data``) or,
for a checkout or an editable install, beside the package."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The shipped folder ``name`` (``templates`` or ``kernels``)."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"submitgen's {name}/ folder is missing (looked in {_PKG / '_data'} and {_PKG.parent})"
    )


def templates_dir() -> Path:
    return data_dir("templates")


def kernels_dir() -> Path:
    return data_dir("kernels")


def device_include_dir() -> Path:
    """Folder holding ``submitgen/device.h``, the portability header for HIP, bundled clang and CUDA."""
    return kernels_dir() / "include"
