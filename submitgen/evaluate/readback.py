"""The parent's own reading of a shape's inputs after the call, so that a changed input is seen
whatever the submission's process reports about it.

With the fingerprint it sends before the call (:mod:`.digest`), the worker sends a :data:`Region`
for each tensor of the inputs, in the order the fingerprint walks them: where that tensor's bytes
lie. It keeps the inputs alive after the call until the parent has read those bytes itself
(:func:`read_regions`) and hashed them as the fingerprint hashes a tensor's bytes.

:func:`make_regions` binds every function it uses when it is called: the worker calls it before
importing the submission."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Region = list[int] | None
"""Where one input tensor's bytes lie in the worker's memory: ``[address, nbytes]`` of a
contiguous CPU tensor, None for any other (on a GPU, or not contiguous)."""
MAX_REGION_BYTES = 1 << 40


def make_regions() -> Callable[[Any], list[Region]]:
    """A ``regions(data)`` function, everything it calls bound now: the :data:`Region` of each tensor
    of ``data``, in the order :func:`make_fingerprint` walks them. The worker sends them before the
    call, so the parent can read those bytes itself after it (:func:`read_regions`)."""
    import torch

    base = torch._C.TensorBase
    tensor_type = torch.Tensor
    data_ptr, is_contiguous, numel, element_size = (base.data_ptr, base.is_contiguous, base.numel,
                                                    base.element_size)
    get_device = base.__dict__["device"].__get__
    items = dict.items
    isinstance_, str_, tuple_, list_, dict_ = isinstance, str, tuple, list, dict

    def walk(x: Any, out: list[Region]) -> None:
        if isinstance_(x, tensor_type):
            cpu = str_(get_device(x)) == "cpu" and is_contiguous(x)
            out.append([data_ptr(x), numel(x) * element_size(x)] if cpu else None)
        elif isinstance_(x, (tuple_, list_)):
            for item in x:
                walk(item, out)
        elif isinstance_(x, dict_):
            for _, v in items(x):
                walk(v, out)

    def regions(data: Any) -> list[Region]:
        out: list[Region] = []
        walk(data, out)
        return out

    return regions


def valid_regions(value: Any, count: int) -> bool:
    """Whether ``value`` is a list of ``count`` regions (the parent checks what the pipe carried)."""
    def ok(r: Any) -> bool:
        return r is None or (isinstance(r, list) and len(r) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64 for v in r)
            and r[1] <= MAX_REGION_BYTES)
    return isinstance(value, list) and len(value) == count and all(ok(r) for r in value)


def read_regions(pid: int, regions: Sequence[Region]) -> list[str | None]:
    """In the parent: the SHA-256 of each region's bytes, read from the worker's memory through
    ``/proc/PID/mem`` (so nothing in the worker's process computes it), None where the region is
    None. OSError when the memory cannot be read (the worker is gone, made itself undumpable, or
    the region is not mapped): the inputs could not be checked."""
    import hashlib

    out: list[str | None] = []
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for region in regions:
            if region is None:
                out.append(None)
                continue
            address, size = region
            h = hashlib.sha256()
            mem.seek(address)
            while size:
                chunk = mem.read(min(size, 1 << 24))
                if not chunk:
                    raise OSError(f"the worker's memory ends at {address:#x}")
                h.update(chunk)
                size -= len(chunk)
                address += len(chunk)
            out.append(h.hexdigest())
    return out
