# Kernel-argument packing shared by the build (checks) and the emitted file (launches). The kernel
# table (_SG_KERNELS) is the code objects' metadata: a CUDA cubin does not tell pointers from
# values, so its parameters are "cuda_param": a tensor fits an 8-byte one, a value any size.
import ctypes
import struct
from dataclasses import dataclass

import torch

# Where a pointer slot of a packed launch gets its address (a slot's source); an input tensor's
# source is its index in the problem's leaves (>= 0).
SG_SLOT_OUT = -1  # the output tensor
SG_SLOT_WORKSPACE = -2  # a workspace the plan allocated, kept with the shape's launches


class SgPlanError(ValueError):
    """A launch in the plan does not match the kernel's metadata."""


class SgPacked:
    """One launch, packed once per shape: kernarg bytes with every non-pointer argument
    written, and the pointer slots that are filled on each call."""

    __slots__ = ("kernel", "grid", "block", "lds", "kernarg", "slots", "workspaces")

    def __init__(self, kernel, grid, block, lds, kernarg, slots, workspaces):
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.lds = lds
        self.kernarg = kernarg  # bytearray: explicit kernel arguments
        self.slots = slots  # ((byte offset, source), ...); source: leaf index or SG_SLOT_*
        self.workspaces = workspaces  # ((byte offset, tensor), ...): allocated by the plan, kept per shape


def _sg_dims(kernel, what, value):
    if isinstance(value, int):
        value = (value,)
    try:
        dims = tuple(int(v) for v in value)
    except TypeError:
        raise SgPlanError(f"kernel '{kernel}': {what} must be up to 3 ints, plan gives {value!r}") from None
    if not 1 <= len(dims) <= 3 or any(isinstance(v, bool) for v in value):
        raise SgPlanError(f"kernel '{kernel}': {what} must be up to 3 ints, plan gives {value!r}")
    if min(dims) < 1:
        raise SgPlanError(f"kernel '{kernel}': every {what} dimension must be >= 1, plan gives {dims}")
    return dims + (1,) * (3 - len(dims))


def _sg_source(kernel, where, t, leaves, out):
    if t is out:
        return SG_SLOT_OUT
    for i, leaf in enumerate(leaves):
        if t is leaf:
            return i
    base = t._base
    if base is not None:
        raise SgPlanError(
            f"kernel '{kernel}' {where}: a view of another tensor is passed; pass the input, the output "
            "or a workspace tensor itself and give offsets as integer arguments"
        )
    return SG_SLOT_WORKSPACE


def _sg_scalar(kernel, where, size, type_name, value):
    is_float = isinstance(value, float)
    tn = (type_name or "").replace("const", "").strip()
    if tn in ("float", "double", "half", "_Float16", "__fp16") and not is_float:
        raise SgPlanError(f"kernel '{kernel}' {where}: metadata says {tn}, plan passes int {value!r}")
    if is_float and tn and tn not in ("float", "double") and "*" not in tn:
        raise SgPlanError(f"kernel '{kernel}' {where}: metadata says {tn}, plan passes float {value!r}")
    if is_float:
        if size not in (4, 8):
            raise SgPlanError(
                f"kernel '{kernel}' {where}: metadata says by_value size {size}, plan passes a float"
            )
        return struct.pack("<f" if size == 4 else "<d", value)
    if size not in (1, 2, 4, 8):
        raise SgPlanError(
            f"kernel '{kernel}' {where}: metadata says by_value size {size}, plan passes an int"
        )
    bits = 8 * size
    if not -(1 << (bits - 1)) <= value < (1 << bits):
        raise SgPlanError(f"kernel '{kernel}' {where}: {value} does not fit the {size}-byte argument")
    return (value & ((1 << bits) - 1)).to_bytes(size, "little")


def _sg_ctypes_scalar(kernel, where, size, type_name, value):
    """A ctypes scalar (``ctypes.c_float(x)``, ``ctypes.c_int(n)``, ...): its own bytes, which say
    float or int where a prebuilt code object cannot."""
    code = getattr(type(value), "_type_", None)
    name = "ctypes." + type(value).__name__
    if not (isinstance(code, str) and len(code) == 1 and code in "bBhHiIlLqQfd"):
        raise SgPlanError(
            f"kernel '{kernel}' {where}: {name} cannot be passed by value; pass "
            "ctypes.c_float, ctypes.c_double or a ctypes integer"
        )
    if ctypes.sizeof(value) != size:
        raise SgPlanError(
            f"kernel '{kernel}' {where}: metadata says by_value size {size}, plan passes "
            f"{name} ({ctypes.sizeof(value)} bytes)"
        )
    tn = (type_name or "").replace("const", "").strip()
    is_float = code in "fd"
    if tn and "*" not in tn and is_float != (tn in ("float", "double", "half", "_Float16", "__fp16")):
        raise SgPlanError(
            f"kernel '{kernel}' {where}: metadata says {tn}, plan passes {name}({value.value!r})"
        )
    return bytes(value)


def _sg_struct(kernel, where, size, offset, cls, fields, leaves, out, slots, workspaces):
    if not (isinstance(cls, type) and issubclass(cls, ctypes.Structure)) or not isinstance(fields, dict):
        raise SgPlanError(
            f"kernel '{kernel}' {where}: a struct is passed as (ctypes.Structure subclass, dict of fields), "
            f"plan passes {type(cls).__name__}"
        )
    if ctypes.sizeof(cls) != size:
        raise SgPlanError(
            f"kernel '{kernel}' {where}: metadata says by_value size {size}, "
            f"plan's struct {cls.__name__} is {ctypes.sizeof(cls)} bytes"
        )
    align = ctypes.alignment(cls)
    if offset % align:
        raise SgPlanError(
            f"kernel '{kernel}' {where}: struct {cls.__name__} needs {align}-byte alignment, "
            f"metadata places it at offset {offset}"
        )
    known = {f[0] for f in cls._fields_}
    values = {}
    for name, value in fields.items():
        if name not in known:
            raise SgPlanError(f"kernel '{kernel}' {where}: struct {cls.__name__} has no field '{name}'")
        if hasattr(value, "data_ptr"):
            field = getattr(cls, name)
            if field.size != 8:
                raise SgPlanError(
                    f"kernel '{kernel}' {where}: field '{name}' gets a tensor but is {field.size} bytes, "
                    "not a pointer"
                )
            src = _sg_source(kernel, f"{where} field '{name}'", value, leaves, out)
            slots.append((offset + field.offset, src))
            if src == SG_SLOT_WORKSPACE:
                workspaces.append((offset + field.offset, value))
        else:
            values[name] = value
    try:
        inst = cls(**values)
    except (TypeError, ValueError) as e:
        raise SgPlanError(f"kernel '{kernel}' {where}: struct {cls.__name__}: {e}") from None
    return bytes(inst)


def _sg_pointer(kernel, where, value, offset, size, kind, leaves, out, slots, workspaces):
    """A tensor (its address, patched per call) or None (a null pointer: the bytes stay 0)."""
    if kind != "global_buffer" and not (kind == "cuda_param" and size == 8):
        what = "a tensor" if value is not None else "None"
        raise SgPlanError(f"kernel '{kernel}' {where}: metadata says {kind} size {size}, plan passes {what}")
    if value is None:
        return
    src = _sg_source(kernel, where, value, leaves, out)
    slots.append((offset, src))
    if src == SG_SLOT_WORKSPACE:
        workspaces.append((offset, value))


def sg_pack(table, launch, leaves, out, names=()):
    """Pack one plan launch ``(kernel, grid, block, dynamic_lds, args)`` against the kernel table;
    ``names``: the arguments' names for messages (a Triton signature's), else their positions."""
    try:
        kernel, grid, block, lds, args = launch
    except (TypeError, ValueError):
        raise SgPlanError(
            f"a launch must be (kernel, grid, block, dynamic_lds, args), plan gives {launch!r:.80}"
        ) from None
    if kernel not in table:
        raise SgPlanError(
            f"plan launches kernel '{kernel}', which the code object does not have "
            f"(it has: {', '.join(sorted(table))})"
        )
    explicit_bytes, layout = table[kernel]
    grid = _sg_dims(kernel, "grid", grid)
    block = _sg_dims(kernel, "block", block)
    if not isinstance(lds, int) or lds < 0:
        raise SgPlanError(f"kernel '{kernel}': dynamic LDS must be an int >= 0, plan gives {lds!r}")
    args = tuple(args)
    if len(args) != len(layout):
        raise SgPlanError(
            f"kernel '{kernel}': metadata has {len(layout)} explicit arguments, plan passes {len(args)}"
        )
    buf = bytearray(explicit_bytes)
    slots = []
    workspaces = []
    for i, (value, (offset, size, kind, type_name)) in enumerate(zip(args, layout)):
        where = f"arg {names[i]!r}" if i < len(names) else f"arg {i}"
        if value is None or hasattr(value, "data_ptr"):
            _sg_pointer(kernel, where, value, offset, size, kind, leaves, out, slots, workspaces)
            continue
        if kind == "global_buffer":
            raise SgPlanError(
                f"kernel '{kernel}' {where}: metadata says global_buffer size {size}, "
                f"plan passes {type(value).__name__}"
            )
        if kind not in ("by_value", "cuda_param"):
            raise SgPlanError(f"kernel '{kernel}' {where}: value_kind {kind} cannot be passed by a plan")
        if isinstance(value, tuple) and len(value) == 2:
            data = _sg_struct(kernel, where, size, offset, value[0], value[1], leaves, out, slots, workspaces)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            data = _sg_scalar(kernel, where, size, type_name, value)
        elif isinstance(value, ctypes._SimpleCData):
            data = _sg_ctypes_scalar(kernel, where, size, type_name, value)
        else:
            raise SgPlanError(
                f"kernel '{kernel}' {where}: metadata says by_value size {size}, "
                f"plan passes {type(value).__name__}"
            )
        buf[offset : offset + size] = data
    return SgPacked(kernel, grid, block, lds, buf, tuple(slots), tuple(workspaces))


@dataclass(frozen=True)
class SgLaunchDefaults:
    """What a kernel's compiler decided, which its launches leave to it (None in the plan)."""

    compiler: str  # who decided ("Triton"), for messages
    threads: int  # block (threads, 1, 1)
    shared: int  # the least dynamic LDS, bytes
    scratch: tuple[int, ...] = ()  # buffers appended to the arguments: bytes per block (0: None)
    names: tuple[str, ...] = ()  # the plan's arguments as the kernel's source names them


def sg_apply_defaults(launch, defaults, out):
    """A launch with what the compiler decided filled in: block None -> (threads, 1, 1) (another
    block is refused), dynamic LDS None -> ``shared`` (less is refused), and one buffer appended
    per ``scratch`` size: None (a null pointer) for 0, else a workspace of grid blocks x size bytes."""
    kernel, grid, block, lds, args = launch
    if block is None:
        block = (defaults.threads, 1, 1)
    elif _sg_dims(kernel, "block", block) != (defaults.threads, 1, 1):
        raise SgPlanError(
            f"kernel '{kernel}': {defaults.compiler} built it for blocks of {defaults.threads} threads "
            f"(pass None), plan gives block {block!r}"
        )
    if lds is None:
        lds = defaults.shared
    elif isinstance(lds, int) and lds < defaults.shared:
        raise SgPlanError(
            f"kernel '{kernel}': {defaults.compiler} built it for {defaults.shared} bytes of dynamic LDS "
            f"(pass None), plan gives {lds}"
        )
    gx, gy, gz = _sg_dims(kernel, "grid", grid)
    scratch = tuple(
        out.new_empty((gx * gy * gz * size,), dtype=torch.uint8) if size else None
        for size in defaults.scratch
    )
    return (kernel, grid, block, lds, tuple(args) + scratch)
