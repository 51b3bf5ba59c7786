"""A CUDA input tensor's bytes, read by the parent itself through CUDA IPC (torch's own, as
``torch.multiprocessing`` shares a CUDA tensor; the same calls on a ROCm build of torch).

In the worker, :func:`make_export` describes the tensor's storage by
``UntypedStorage._share_cuda_()`` (the IPC handle of the allocation that holds it, where the storage
lies in that allocation, torch's ref counter of the share and an IPC event), plus where the tensor
lies in the storage: byte offset, shape, strides (in elements) and element size. That is the
:data:`.readback.Region` of a CUDA tensor, sent with the ``inputs`` event before the call. In the
parent, :func:`read` opens that storage with ``UntypedStorage._new_shared_cuda`` (the call
``torch.multiprocessing.reductions.rebuild_cuda_tensor`` makes), rebuilds the tensor's bytes from
it with the same shape and strides, non-contiguous ones too, and takes their SHA-256 exactly as
:func:`.digest.make_fingerprint` hashes a tensor's bytes: the two digests of an unchanged input
are equal. Nothing of the worker's process computes it.

This module imports torch only inside its functions: the parent imports it only when a CUDA region
comes, and :func:`valid` (the check of what the pipe carried) needs no torch at all."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from submitgen.evaluate.readback import MAX_REGION_BYTES, ReadBackError

TORCH_GPU = "cuda"
"""torch's device type of a GPU tensor on either runtime (a ROCm build of torch names its GPUs
"cuda" too): the kind of a region this module makes, whatever target the submission was built for."""
MAX_HANDLE_BYTES = 1 << 16
"""The longest memory handle accepted: torch's is 66 bytes for an allocation of ``cudaMalloc``
(a version, a type and the 64-byte ``cudaIpcMemHandle_t``), longer for an expandable segment."""
EVENT_HANDLE_BYTES = 64
"""``CUDA_IPC_HANDLE_SIZE``: torch sends a ``cudaIpcEventHandle_t`` of this size, zeros when no
event is to be waited on (always on ROCm, where the worker synchronizes its device instead)."""
REF_COUNTER_SLOTS = 10_000
"""``torch::CUDA_IPC_REF_COUNTER_FILE_SIZE``: the int64 counters in one of torch's ref-counter
files. The parent decrements the one at the region's ``ref_counter_offset`` when it lets go of the
storage, so an offset outside the file is refused (it would be a write outside the mapping)."""
MAX_DEVICES = 1 << 10
MAX_DIMS = 64
MAX_ITEMSIZE = 16
MAX_ERROR_CHARS = 300
_REF_COUNTER = re.compile(r"/torch_([0-9]{1,10})_[0-9]{1,20}(?:_[0-9]{1,20})?")
"""The name torch gives a ref-counter file in ``/dev/shm``: ``/torch_<pid>_<random>[_<count>]``
(``at::NewProcessWideShmHandle``); the pid must be the worker's."""
_CHUNK = 1 << 26

_KEYS = frozenset({"kind", "device", "handle", "storage_nbytes", "storage_offset", "ref_counter",
                   "ref_counter_offset", "event", "event_sync", "offset", "shape", "strides", "itemsize"})
_ERROR_KEYS = frozenset({"kind", "device", "error"})


def make_export(share: Callable[[Any], tuple[Any, ...]] | None = None) -> Callable[[Any], Any]:
    """In the worker: ``export(t)``, the region of CUDA tensor ``t`` (``[0, 0]`` when it has no
    bytes; ``{"kind": "cuda", "device": d, "error": text}`` when torch cannot share its storage,
    which fails the shape in the parent). Everything it calls is bound now. ``share`` stands for
    ``UntypedStorage._share_cuda_`` (tests give a stand-in: it needs a CUDA device)."""
    import torch

    base = torch._C.TensorBase
    share_ = torch.UntypedStorage._share_cuda_ if share is None else share  # torch._C.StorageBase's
    untyped_storage, storage_offset, stride, element_size, numel = (
        base.untyped_storage, base.storage_offset, base.stride, base.element_size, base.numel)
    get_shape, get_device = (base.__dict__[k].__get__ for k in ("shape", "device"))
    device_index = torch.device.__dict__["index"].__get__
    hex_, list_, bool_, type_, partition = bytes.hex, list, bool, type, str.partition

    def export(t: Any) -> Any:
        itemsize = element_size(t)
        if numel(t) == 0:
            return [0, 0]  # no bytes: nothing to share, the parent hashes nothing
        try:
            device, handle, nbytes, offset, counter, counter_offset, event, event_sync = share_(
                untyped_storage(t))
            if handle is None:
                raise ValueError("its storage has no memory")
            return {"kind": TORCH_GPU, "device": device, "handle": hex_(handle), "storage_nbytes": nbytes,
                    "storage_offset": offset, "ref_counter": hex_(counter),
                    "ref_counter_offset": counter_offset, "event": hex_(event),
                    "event_sync": bool_(event_sync), "offset": storage_offset(t) * itemsize,
                    "shape": list_(get_shape(t)), "strides": list_(stride(t)), "itemsize": itemsize}
        except Exception as e:  # noqa: BLE001 - the parent fails the shape, naming this
            text = partition(f"{type_(e).__name__}: {e}", "\n")[0][:MAX_ERROR_CHARS]
            return {"kind": TORCH_GPU, "device": device_index(get_device(t)), "error": text}

    return export


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v < hi


def _hex(v: Any, lo: int, hi: int) -> bool:
    """Lowercase hex (as ``bytes.hex`` writes it) of ``lo`` to ``hi`` bytes."""
    return (isinstance(v, str) and len(v) % 2 == 0 and lo <= len(v) // 2 <= hi
            and all(c in "0123456789abcdef" for c in v))


def ref_counter_pid(region: Mapping[str, Any]) -> int | None:
    """The pid in the name of the region's ref-counter file, None when it is not torch's form."""
    try:
        name = bytes.fromhex(region["ref_counter"]).decode("ascii")
    except (KeyError, TypeError, ValueError):
        return None
    m = _REF_COUNTER.fullmatch(name)
    if m is None:
        return None
    pid: int = int(m.group(1))
    return pid


def ref_counter_names(regions: Any, pid: int) -> set[str]:
    """The names of worker ``pid``'s ref-counter files that ``regions`` (valid ones) name."""
    out: set[str] = set()
    for r in regions if isinstance(regions, list) else ():
        if isinstance(r, dict) and "ref_counter" in r and ref_counter_pid(r) == pid:
            out.add(bytes.fromhex(r["ref_counter"]).decode("ascii"))
    return out


def remove_ref_counters(names: Any, shm: str = "/dev/shm") -> None:
    """Remove the ref-counter files of a worker that has ended. Torch unlinks one when its process
    closes it, but the worker ends by ``os._exit`` (or SIGKILL), so each file it made would stay in
    ``/dev/shm``; only names of the worker's pid (:func:`ref_counter_names`) are given."""
    import contextlib

    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(shm + name)


def span(region: Mapping[str, Any]) -> int:
    """How many bytes of the storage, from the region's offset on, its tensor reaches."""
    reach = sum((n - 1) * s for n, s in zip(region["shape"], region["strides"]))
    return int(region["itemsize"] * (1 + reach))


def _ints(lo: int, hi: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and len(v) <= MAX_DIMS and all(_int(n, lo, hi) for n in v)


_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "device": (lambda v: _int(v, 0, MAX_DEVICES), f"an int from 0 to {MAX_DEVICES - 1}"),
    "error": (lambda v: isinstance(v, str) and len(v) <= MAX_ERROR_CHARS,
              f"a text of at most {MAX_ERROR_CHARS} characters"),
    "handle": (lambda v: _hex(v, 1, MAX_HANDLE_BYTES), f"lowercase hex of 1 to {MAX_HANDLE_BYTES:,} bytes"),
    "storage_nbytes": (lambda v: _int(v, 1, MAX_REGION_BYTES + 1), f"an int from 1 to {MAX_REGION_BYTES:,}"),
    "storage_offset": (lambda v: _int(v, 0, 1 << 48), f"an int from 0 to {(1 << 48) - 1:,}"),
    "ref_counter": (lambda v: _hex(v, 1, 64) and ref_counter_pid({"ref_counter": v}) is not None,
                    "the hex of torch's /torch_<pid>_<n>[_<n>]"),
    "ref_counter_offset": (lambda v: _int(v, 0, REF_COUNTER_SLOTS),
                           f"an int from 0 to {REF_COUNTER_SLOTS - 1}"),
    "event": (lambda v: _hex(v, EVENT_HANDLE_BYTES, EVENT_HANDLE_BYTES),
              f"lowercase hex of {EVENT_HANDLE_BYTES} bytes"),
    "event_sync": (lambda v: isinstance(v, bool), "true or false"),
    "offset": (lambda v: _int(v, 0, MAX_REGION_BYTES), f"an int from 0 to {MAX_REGION_BYTES - 1:,}"),
    "shape": (_ints(1, MAX_REGION_BYTES + 1),
              f"a list of at most {MAX_DIMS} ints from 1 to {MAX_REGION_BYTES:,}"),
    "strides": (_ints(0, MAX_REGION_BYTES + 1),
                f"a list of at most {MAX_DIMS} ints from 0 to {MAX_REGION_BYTES:,}"),
    "itemsize": (lambda v: _int(v, 1, MAX_ITEMSIZE + 1), f"an int from 1 to {MAX_ITEMSIZE}"),
}


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def fault(region: Any) -> str | None:
    """What is wrong with ``region`` as a CUDA region (its form, a field out of its bounds, the
    tensor outside its storage), None when nothing is (the parent checks what the pipe carried: a
    submission can write it too)."""
    if not isinstance(region, dict) or region.get("kind") != TORCH_GPU:
        return f"{_short(region)} (expected a CUDA region, kind 'cuda')"
    keys = _ERROR_KEYS if "error" in region else _KEYS
    if set(region) != keys:
        extra, missing = sorted(set(region) - keys), sorted(keys - set(region))
        return "a CUDA region " + " and ".join(
            ([f"with the extra keys {extra}"] if extra else []) + ([f"without {missing}"] if missing else []))
    for key in sorted(keys - {"kind"}):
        ok, what = _FIELDS[key]
        if not ok(region[key]):
            return f"a CUDA region with {key} {_short(region[key])} (expected {what})"
    if "error" in region:
        return None
    shape, strides, itemsize = region["shape"], region["strides"], region["itemsize"]
    if len(shape) != len(strides):
        return f"a CUDA region with {len(shape)} dims in its shape and {len(strides)} in its strides"
    numel = 1
    for n in shape:
        numel *= n
    if numel * itemsize > MAX_REGION_BYTES:
        return (f"a CUDA region of shape {_short(shape)} and itemsize {itemsize}: more than "
                f"{MAX_REGION_BYTES:,} bytes")
    end = region["offset"] + span(region)
    if end > region["storage_nbytes"]:
        return (f"a CUDA region whose tensor reaches byte {end:,} of a storage of "
                f"{region['storage_nbytes']:,}")
    return None


def valid(region: Any) -> bool:
    """Whether ``region`` is a CUDA region with nothing wrong (:func:`fault`)."""
    return fault(region) is None


def storage_digest(storage: Any, region: Mapping[str, Any]) -> str:
    """The SHA-256 of the bytes of the tensor ``region`` places in ``storage`` (a torch
    ``UntypedStorage``), in the order :func:`.digest.make_fingerprint` hashes them: its elements
    in row-major order, each element's bytes as they lie."""
    import hashlib

    import torch

    itemsize = region["itemsize"]
    view = torch.empty((0,), dtype=torch.uint8, device=storage.device).set_(
        storage, region["offset"], (*region["shape"], itemsize),
        (*(s * itemsize for s in region["strides"]), 1))
    flat = view.contiguous().reshape(-1)
    h = hashlib.sha256()
    for start in range(0, flat.numel(), _CHUNK):
        h.update(flat[start:start + _CHUNK].cpu().numpy().data)
    return h.hexdigest()


def open_storage(region: Mapping[str, Any]) -> Any:
    """In the parent: the worker's storage that ``region`` describes, opened through CUDA IPC
    (``UntypedStorage._new_shared_cuda``, as torch.multiprocessing does). When it is let go of,
    torch decrements the worker's ref counter of the share (so the worker may free the memory)."""
    import torch

    if not torch.cuda.is_available():
        raise ReadBackError("torch in submitgen's own process sees no CUDA device")
    torch.cuda.init()  # type: ignore[no-untyped-call]  # as rebuild_cuda_tensor's _lazy_init
    return torch.UntypedStorage._new_shared_cuda(
        region["device"], bytes.fromhex(region["handle"]), region["storage_nbytes"],
        region["storage_offset"], bytes.fromhex(region["ref_counter"]), region["ref_counter_offset"],
        bytes.fromhex(region["event"]), region["event_sync"])


def _release(region: Mapping[str, Any]) -> None:
    """Decrement the worker's ref counter of a share the parent could not open, as torch's
    ``rebuild_cuda_tensor`` does for a storage it has already, so the worker can free the memory
    (best effort: without CUDA in torch nothing is done)."""
    try:
        import torch

        torch.UntypedStorage._release_ipc_counter_cuda(bytes.fromhex(region["ref_counter"]),
                                                       region["ref_counter_offset"])
    except Exception:  # noqa: BLE001 - the worker keeps the memory a little longer
        pass


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")[:MAX_ERROR_CHARS]


def read(region: Mapping[str, Any], pid: int, what: str,
         opener: Callable[[Mapping[str, Any]], Any] = open_storage) -> str:
    """In the parent: the SHA-256 of the bytes of the CUDA tensor ``region`` describes (a
    :func:`valid` one), read from the memory of worker ``pid``; ``what`` names the tensor in the
    errors. :class:`ReadBackError` when it cannot be read: the worker could not share it, the
    region's ref counter is not the worker's, or the memory cannot be opened (no CUDA here, a handle
    that opens nothing, the worker gone) or copied."""
    what = f"{what} (cuda:{region['device']})"
    if "error" in region:
        raise ReadBackError(f"the worker could not share {what} through CUDA IPC: {region['error']}")
    owner = ref_counter_pid(region)
    if owner != pid:
        raise ReadBackError(f"the region of {what} names the ref counter of process {owner}, not the "
                            f"worker's (process {pid})")
    try:
        storage = opener(region)
    except ReadBackError as e:
        _release(region)
        raise ReadBackError(f"cannot open {what} in the worker's GPU memory: {e}") from None
    except Exception as e:  # noqa: BLE001 - torch's errors of a handle that opens nothing
        _release(region)
        raise ReadBackError(f"cannot open {what} in the worker's GPU memory: {_first_line(e)}") from None
    try:
        return storage_digest(storage, region)
    except Exception as e:  # noqa: BLE001 - e.g. the copy faulted
        raise ReadBackError(f"cannot copy {what} from the worker's GPU memory: {_first_line(e)}") from None
    finally:
        del storage
