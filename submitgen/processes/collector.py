"""The cyclic garbage collector paused for a block that makes and keeps millions of objects with
no garbage cycles worth scanning for (lint's parse of a 1 MB file, inspect's read of a corpus):
without it the collector scans them again and again as they pile up."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off, then back as it was."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
