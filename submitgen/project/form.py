"""The form of what a plan returns, checked before packing: ``(out, launches)`` with the output the
problem expects, and each launch a ``(kernel, grid, block, dynamic_lds, args)`` of plain ints and
a tuple. Every message names the shape, the kernel, the item, what was expected and what the
plan gave."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Mapping, Sequence
from typing import Any

from submitgen.errors import ValidationError
from submitgen.project.param_kinds import TritonParams, arg_label, check_scalar

_LAUNCH = "(kernel, grid, block, dynamic_lds, args)"


def _show(value: Any) -> str:
    """A short description of a plan's value: its type, and its repr when that is short."""
    if hasattr(value, "data_ptr"):
        return f"a tensor of shape {tuple(value.shape)}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _dims_ok(value: Any, allow_none: bool) -> bool:
    if value is None:
        return allow_none
    items = (value,) if isinstance(value, int) else value
    if not isinstance(items, (tuple, list)) or not 1 <= len(items) <= 3:
        return False
    return all(isinstance(v, int) and not isinstance(v, bool) for v in items)


def check_result(result: Any, label: str, outputs: int = 0) -> tuple[Any, Sequence[Any]]:
    """``(out, launches)`` as a plan must return it; ``outputs``: out is a tuple of that many
    tensors (0: one tensor)."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ValidationError(f"plan({label}) must return (out, launches), returned {_show(result)}")
    out, launches = result
    if outputs:
        many = isinstance(out, (tuple, list))
        if not many or len(out) != outputs:
            shown = f"a {type(out).__name__} of {len(out)}" if many else _show(out)
            raise ValidationError(f"plan({label}) out: expected a tuple of {outputs} tensors (as ref_kernel "
                                  f"returns), plan returns {shown}")
        for j, item in enumerate(out):
            if not hasattr(item, "data_ptr"):
                raise ValidationError(f"plan({label}) out[{j}]: expected a tensor, plan returns "
                                      f"{_show(item)}")
        out = tuple(out)
    elif not hasattr(out, "data_ptr"):
        raise ValidationError(f"plan({label}) must return a tensor as out, returned {_show(out)}")
    if not isinstance(launches, (list, tuple)):
        raise ValidationError(
            f"plan({label}): launches must be a list of {_LAUNCH}, returned {_show(launches)}"
        )
    if not launches:
        raise ValidationError(f"plan({label}) returned no launches")
    return out, launches


def check_launch_form(launch: Any, label: str, defaults: Mapping[str, Any],
                      kinds: Mapping[str, tuple] | None = None,
                      names: Mapping[str, TritonParams] | None = None) -> None:
    """One launch's form; ``defaults`` are the names whose block and dynamic LDS may be None,
    ``kinds`` each kernel's parameter kinds where known, ``names`` a Triton kernel's parameters
    as the plan passes them (kernel_params.py)."""
    if not (isinstance(launch, (tuple, list)) and len(launch) == 5):
        raise ValidationError(f"plan({label}): a launch must be {_LAUNCH}, plan gives {_show(launch)}")
    name, grid, block, lds, args = launch
    if not isinstance(name, str):
        raise ValidationError(
            f"plan({label}): a launch's kernel must be a name (str), plan gives {_show(name)}"
        )
    where = f"kernel '{name}' ({label})"
    if not _dims_ok(grid, False):
        raise ValidationError(f"{where}: grid must be up to 3 ints, plan gives {_show(grid)}")
    if not _dims_ok(block, name in defaults):
        raise ValidationError(f"{where}: block must be up to 3 ints, plan gives {_show(block)}")
    lds_ok = (lds is None and name in defaults) or (
        isinstance(lds, int) and not isinstance(lds, bool) and lds >= 0
    )
    if not lds_ok:
        raise ValidationError(f"{where}: dynamic LDS must be an int >= 0, plan gives {_show(lds)}")
    if not isinstance(args, (tuple, list)):
        raise ValidationError(f"{where}: args must be a tuple of arguments, plan gives {_show(args)}")
    params = (names or {}).get(name)
    wrong_count = params.count_error(name, len(args)) if params is not None else None
    if wrong_count:
        raise ValidationError(f"{wrong_count} ({label})")
    for i, arg in enumerate(args):
        if isinstance(arg, float) and not math.isfinite(arg):
            raise ValidationError(f"{where} {arg_label(names, name, i)}: expected a finite number, "
                                  f"plan gives {arg!r}")
        if isinstance(arg, (ctypes.c_float, ctypes.c_double)) and not math.isfinite(arg.value):
            shown = f"ctypes.{type(arg).__name__}({arg.value!r})"
            raise ValidationError(f"{where} {arg_label(names, name, i)}: expected a finite number, "
                                  f"plan gives {shown}")
        wrong = check_scalar(kinds or {}, name, i, arg, names)
        if wrong:
            raise ValidationError(f"{wrong} ({label})")
        if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[1], dict):
            _check_struct_fields(where, arg_label(names, name, i), arg[0], arg[1])


def _check_struct_fields(where: str, arg: str, cls: Any, fields: dict) -> None:
    """Integer fields must hold their values (ctypes would silently cut them)."""
    if not (isinstance(cls, type) and issubclass(cls, ctypes.Structure)):
        return  # the packer names this case
    types = {f[0]: f[1] for f in cls._fields_}
    for name, value in fields.items():
        ftype = types.get(name)
        if ftype is None or hasattr(value, "data_ptr") or isinstance(value, bool):
            continue
        code = getattr(ftype, "_type_", None)
        if isinstance(value, int) and isinstance(code, str) and len(code) == 1 and code in "bBhHiIlLqQ":
            bits = 8 * ctypes.sizeof(ftype)
            signed = code.islower()
            low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            if not low <= value <= high:
                raise ValidationError(
                    f"{where} {arg}: struct {cls.__name__} field '{name}' is {ftype.__name__} "
                    f"({low}..{high}), plan gives {value}"
                )
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(
                f"{where} {arg}: struct {cls.__name__} field '{name}': expected a finite number, "
                f"plan gives {value!r}")


def storage_id(tensor: Any) -> int:
    """Which storage a tensor's elements live in (views and ``set_`` share it; meta tensors too)."""
    return tensor.untyped_storage()._cdata


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def check_outputs(out: Any, expected: Any, leaves: Sequence[Any], label: str,
                  handed: int | None = None) -> None:
    """:func:`check_output_tensor` of the output, or of each tensor of a tuple output (``out[j]``
    against ``expected[j]``), no two of which share storage."""
    if not isinstance(out, tuple):
        return check_output_tensor(out, expected, leaves, label, handed)
    for j, item in enumerate(out):
        check_output_tensor(item, None if expected is None else expected[j], leaves, label, None, f"out[{j}]")
        other = next((k for k in range(j) if storage_id(out[k]) == storage_id(item)), None)
        if other is not None:
            raise ValidationError(f"plan({label}) out[{j}]: shares out[{other}]'s storage; return a tensor "
                                  "of its own")


def check_output_tensor(out: Any, expected: Any, leaves: Sequence[Any], label: str,
                        handed: int | None = None, name: str = "out") -> None:
    """The output has storage of its own (no input's, by storage: a view or ``set_`` of an input
    is one; the input the task hands in as the output, ``leaves[handed]`` itself, may be it), the
    problem's dtype, shape and device, and a contiguous row-major layout with a storage that holds
    every element (stride 0 or an ``expand`` of one element does not)."""
    where = f"plan({label}) {name}"
    own = storage_id(out)
    for i, leaf in enumerate(leaves):
        if (out is leaf or storage_id(leaf) == own) and not (i == handed and out is leaf):
            raise ValidationError(
                f"{where}: shares input {i}'s storage (it is the input, a view or a set_ of it); return a "
                "tensor of its own")
    if expected is not None:
        if out.dtype != expected.dtype:
            raise ValidationError(f"{where}: expected dtype {expected.dtype}, plan returns {out.dtype}")
        if tuple(out.shape) != tuple(expected.shape):
            raise ValidationError(
                f"{where}: expected shape {tuple(expected.shape)}, plan returns {tuple(out.shape)}")
    device = leaves[0].device if leaves else None
    if device is not None and out.device != device:
        raise ValidationError(f"{where}: expected device {device} (the inputs'), plan returns {out.device}")
    shape = tuple(out.shape)
    if out.numel() > 1 and not out.is_contiguous():
        raise ValidationError(
            f"{where}: expected a contiguous row-major tensor (strides {_row_major(shape)}), plan returns "
            f"strides {tuple(out.stride())}")
    need = (out.storage_offset() + out.numel()) * out.element_size()
    have = out.untyped_storage().nbytes()
    if have < need:
        raise ValidationError(
            f"{where}: its storage holds {have} bytes, its {out.numel()} elements need {need}")


def check_writes_output(packed: Sequence[Any], out_slot: int, label: str, name: str = "out") -> None:
    """Some launch receives the output's pointer (an argument or a struct field): else the
    output is returned unwritten."""
    if not any(source == out_slot for p in packed for _, source in p.slots):
        raise ValidationError(
            f"plan({label}) {name}: no launch receives it (as an argument or a struct field), so it would be "
            "returned unwritten; pass out itself to the kernel that writes it")


def check_workspaces(workspaces: Sequence[tuple[int, Any]], out: Any, where: str,
                     leaves: Sequence[Any] = ()) -> None:
    """Each workspace is on the output's device and has storage of its own (not the output's or
    an input's: the output is made fresh per call, and inputs are never written); ``out`` may be a
    tuple of tensors."""
    outs = out if isinstance(out, tuple) else (out,)
    owners = {storage_id(o): f"out[{j}]'s" if out is outs else "the output's" for j, o in enumerate(outs)}
    device = outs[0].device
    for i, leaf in enumerate(leaves):
        owners.setdefault(storage_id(leaf), f"input {i}'s")
    for offset, tensor in workspaces:
        if tensor.device != device:
            raise ValidationError(
                f"{where}: workspace at kernarg offset {offset}: expected device {device} (the "
                "output's), "
                f"plan allocates it on {tensor.device}"
            )
        owner = owners.get(storage_id(tensor))
        if owner is not None:
            raise ValidationError(
                f"{where}: workspace at kernarg offset {offset}: shares {owner} storage; pass that tensor "
                "itself, or a workspace of its own")
