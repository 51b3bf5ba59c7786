"""Fingerprints of a problem's inputs, compared in the parent to tell whether custom_kernel changed
one (or received other inputs than the parent generates).

A fingerprint is ``{"structure": hex, "tensors": [hex, ...]}``: a SHA-256 of the inputs' nesting,
non-tensor values and each tensor's dtype, shape and device, and a SHA-256 of each tensor's bytes,
tensors in the order the nesting is walked. The worker takes one before the call and sends it up
before the call (so nothing the submission does afterwards can change it), and one after; the
parent takes the same of the inputs it regenerates from the shape's seed and compares the three.
The parent names a changed tensor by the problem's input names.

:func:`make_fingerprint` binds every function it uses when it is called (torch's C methods,
``hashlib.sha256``, the builtins): the worker calls it before importing the submission, so a
submission that later assigns to ``torch.equal``, ``torch.Tensor.numpy``, ``hashlib.sha256``,
a builtin or any name of this module or of the worker hashes nothing differently."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Fingerprint = dict[str, Any]
MAX_TENSORS = 4096
"""More tensors than this in one problem's inputs is not a problem's input: the parent refuses
a fingerprint that claims more."""
_REPR_CHARS = 200


def make_fingerprint() -> Callable[[Any], Fingerprint]:
    """A ``fingerprint(data)`` function with everything it calls bound now."""
    import hashlib

    import torch

    base = torch._C.TensorBase
    tensor_type = torch.Tensor
    detach, contiguous, cpu, reshape, view, to_numpy = (
        base.detach, base.contiguous, base.cpu, base.reshape, base.view, base.numpy)
    get_dtype, get_shape, get_device = (base.__dict__[k].__get__ for k in ("dtype", "shape", "device"))
    uint8 = torch.uint8
    items = dict.items
    sha256 = hashlib.sha256
    isinstance_, repr_, str_, tuple_, list_, dict_, len_, enumerate_ = (
        isinstance, repr, str, tuple, list, dict, len, enumerate)

    def tensor_bytes_digest(t: Any) -> str:
        flat = view(reshape(cpu(contiguous(detach(t))), (-1,)), uint8)
        return sha256(memoryview(to_numpy(flat))).hexdigest()

    def walk(x: Any, where: str, parts: list[str], tensors: list[str]) -> None:
        if isinstance_(x, tensor_type):
            parts.append(f"{where}=T({str_(get_dtype(x))},{tuple_(get_shape(x))},{str_(get_device(x))})")
            tensors.append(tensor_bytes_digest(x))
        elif isinstance_(x, (tuple_, list_)):
            parts.append(f"{where}={'tuple' if isinstance_(x, tuple_) else 'list'}[{len_(x)}]")
            for i, item in enumerate_(x):
                walk(item, f"{where}[{i}]", parts, tensors)
        elif isinstance_(x, dict_):
            parts.append(f"{where}=dict[{len_(x)}]")
            for k, v in items(x):
                walk(v, f"{where}[{repr_(k)[:_REPR_CHARS]}]", parts, tensors)
        else:
            parts.append(f"{where}={repr_(x)[:_REPR_CHARS]}")

    def fingerprint(data: Any) -> Fingerprint:
        parts: list[str] = []
        tensors: list[str] = []
        walk(data, "data", parts, tensors)
        return {"structure": sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest(),
                "tensors": tensors}

    return fingerprint


def tensor_paths(data: Any, leaves: Sequence[Any], names: Callable[[int], str]) -> list[str]:
    """The name of each tensor of ``data`` in the order :func:`make_fingerprint` walks them: the
    problem's input name where the tensor is one of ``leaves``, else its path (``data[4]['k']``)."""
    import torch

    out: list[str] = []

    def walk(x: Any, where: str) -> None:
        if isinstance(x, torch.Tensor):
            index = next((i for i, leaf in enumerate(leaves) if leaf is x), None)
            out.append(names(index) if index is not None else where)
        elif isinstance(x, (tuple, list)):
            for i, item in enumerate(x):
                walk(item, f"{where}[{i}]")
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{where}[{k!r}]")

    walk(data, "data")
    return out


def valid(value: Any) -> bool:
    """Whether ``value`` has the form of a fingerprint (the parent checks what the pipe carried)."""
    if not isinstance(value, Mapping) or set(value) != {"structure", "tensors"}:
        return False
    hexes = value["tensors"]
    return (_is_hex(value["structure"]) and isinstance(hexes, list) and len(hexes) <= MAX_TENSORS
            and all(_is_hex(h) for h in hexes))


def _is_hex(x: Any) -> bool:
    return isinstance(x, str) and len(x) == 64 and all(c in "0123456789abcdef" for c in x)


def changed(got: Mapping[str, Any], want: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The inputs that differ between fingerprint ``got`` and ``want`` (named by ``names``, the
    tensors of ``want`` in order); ``data (structure changed)`` when the nesting, a non-tensor
    value or a tensor's dtype, shape or device differs."""
    if got["structure"] != want["structure"] or len(got["tensors"]) != len(want["tensors"]):
        return ["data (structure changed)"]
    return [names[i] if i < len(names) else f"tensor {i}"
            for i, (a, b) in enumerate(zip(got["tensors"], want["tensors"])) if a != b]
