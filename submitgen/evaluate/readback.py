"""The parent's own reading of a shape's inputs after the call, so that a changed input is seen
whatever the submission's process reports about it.

With the fingerprint it sends before the call (:mod:`.digest`), the worker sends a :data:`Region`
for each tensor of the inputs, in the order the fingerprint walks them: where that tensor's bytes
lie. It keeps the inputs alive after the call until the parent has read those bytes itself
(:func:`read_regions`) and hashed them as the fingerprint hashes a tensor's bytes. One reader per
kind of memory: a CPU tensor's bytes are read through ``/proc/PID/mem`` (here), a CUDA tensor's
through CUDA IPC (:mod:`.cudaipc`, whose torch is imported only when a CUDA region comes).

:func:`make_regions` binds every function it uses when it is called: the worker calls it before
importing the submission."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Region = list[int] | dict[str, Any] | None
"""Where one input tensor's bytes lie in the worker: ``[address, nbytes]`` of a contiguous CPU
tensor in the worker's memory (``[0, 0]`` for a CUDA tensor of no bytes), a dict for a CUDA tensor,
contiguous or not (:mod:`.cudaipc`: its storage's IPC handle and where the tensor lies in it, or
why torch could not share it), None for any other (a non-contiguous CPU tensor, another device):
for those the parent takes the worker's own fingerprint."""
MAX_REGION_BYTES = 1 << 40


class ReadBackError(Exception):
    """The parent could not read an input back from the worker: the shape fails (never the
    worker's own fingerprint instead)."""


def make_regions(export: Callable[[Any], Any] | None = None) -> Callable[[Any], list[Region]]:
    """A ``regions(data)`` function, everything it calls bound now: the :data:`Region` of each tensor
    of ``data``, in the order :func:`.digest.make_fingerprint` walks them. The worker sends them
    before the call, so the parent can read those bytes itself after it (:func:`read_regions`).
    ``export`` gives a CUDA tensor's region (:func:`.cudaipc.make_export`'s, unless a test gives
    another)."""
    import torch

    from submitgen.evaluate import cudaipc

    export_ = cudaipc.make_export() if export is None else export
    gpu = cudaipc.TORCH_GPU
    base = torch._C.TensorBase
    tensor_type = torch.Tensor
    data_ptr, is_contiguous, numel, element_size = (base.data_ptr, base.is_contiguous, base.numel,
                                                    base.element_size)
    get_device = base.__dict__["device"].__get__
    device_type = torch.device.__dict__["type"].__get__
    items = dict.items
    isinstance_, tuple_, list_, dict_ = isinstance, tuple, list, dict

    def walk(x: Any, out: list[Region]) -> None:
        if isinstance_(x, tensor_type):
            kind = device_type(get_device(x))
            if kind == "cpu":
                out.append([data_ptr(x), numel(x) * element_size(x)] if is_contiguous(x) else None)
            else:
                out.append(export_(x) if kind == gpu else None)
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


def regions_fault(value: Any, count: int) -> str | None:
    """What is wrong with ``value`` as the regions of ``count`` tensors, None when nothing is (the
    parent checks what the pipe carried)."""
    from submitgen.evaluate import cudaipc

    if not isinstance(value, list) or len(value) != count:
        what = f"{len(value)} regions" if isinstance(value, list) else f"regions {str(value)[:60]!r}"
        return f"{what} (expected a list of {count}, one for each tensor of the fingerprint)"
    for i, r in enumerate(value):
        if isinstance(r, dict):
            why = cudaipc.fault(r)
            if why is not None:
                return f"region {i}: {why}"
        elif not (r is None or (isinstance(r, list) and len(r) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64 for v in r)
                and r[1] <= MAX_REGION_BYTES)):
            return (f"region {i}: {str(r)[:60]!r} (expected [address, nbytes] of at most "
                    f"{MAX_REGION_BYTES:,} bytes, a CUDA region or null)")
    return None


def valid_regions(value: Any, count: int) -> bool:
    """Whether ``value`` is a list of ``count`` regions, each of its form and within its bounds
    (:func:`regions_fault`)."""
    return regions_fault(value, count) is None


def read_regions(pid: int, regions: Sequence[Region],
                 read_cuda: Callable[[dict[str, Any], int, str], str] | None = None) -> list[str | None]:
    """In the parent: the SHA-256 of each region's bytes, read from the memory of worker ``pid``
    (so nothing in the worker's process computes it), None where the region is None.
    :class:`ReadBackError` when the memory cannot be read (the worker is gone or made itself
    undumpable, the region is not mapped, a CUDA region cannot be opened): the inputs could not be
    checked. ``read_cuda`` reads a CUDA region (:func:`.cudaipc.read`, unless a test gives
    another)."""
    import hashlib

    out: list[str | None] = []
    mem = None
    read_ipc = read_cuda
    try:
        for i, region in enumerate(regions):
            if region is None:
                out.append(None)
            elif isinstance(region, dict):
                if read_ipc is None:
                    from submitgen.evaluate import cudaipc

                    read_ipc = cudaipc.read
                out.append(read_ipc(region, pid, f"input tensor {i}"))
            elif region[1] == 0:
                out.append(hashlib.sha256().hexdigest())
            else:
                if mem is None:
                    mem = open(f"/proc/{pid}/mem", "rb", buffering=0)  # noqa: SIM115 - closed below
                out.append(_read_memory(mem, *region))
    except OSError as e:
        raise ReadBackError(str(e.strerror or e)) from None
    finally:
        if mem is not None:
            mem.close()
    return out


def _read_memory(mem: Any, address: int, size: int) -> str:
    """The SHA-256 of ``size`` bytes at ``address`` of the worker's ``/proc/PID/mem``."""
    import hashlib

    h = hashlib.sha256()
    mem.seek(address)
    while size:
        chunk = mem.read(min(size, 1 << 24))
        if not chunk:
            raise OSError(f"the worker's memory ends at {address:#x}")
        h.update(chunk)
        size -= len(chunk)
        address += len(chunk)
    return h.hexdigest()


def overlaid(fingerprint: dict[str, Any], read: Sequence[str | None]) -> dict[str, Any]:
    """``fingerprint`` (the worker's, after a call) with each tensor's digest replaced by the one the
    parent read back itself (``read_regions``); the worker's stays only where the parent read none."""
    theirs = fingerprint["tensors"]
    return {**fingerprint, "tensors": [mine if mine is not None else theirs[i] if i < len(theirs) else ""
                                       for i, mine in enumerate(read)]}


def unread(why: str) -> str:
    """The verdict's text when the parent could not read the inputs back after a call."""
    return (f"the inputs could not be read back from the worker after the call ({why}), so whether "
            "custom_kernel changed them is unknown")

