"""Launch plans checked against code objects, before anything is written.

The plan runs on meta tensors for every test and benchmark shape of the problem. Each launch is
packed with the very packer the submission uses (``runtime/pack.py``) against the kernel's
metadata, then held to the hardware and runtime limits (block vs ``.max_flat_workgroup_size``,
static + dynamic LDS vs the target, grid limits of ``hipModuleLaunchKernel``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from submitgen.errors import ValidationError
from submitgen.project.form import (
    check_launch_form,
    check_outputs,
    check_result,
    check_workspaces,
    check_writes_output,
)
from submitgen.project.param_kinds import TritonParams
from submitgen.readers.amd.processors import MAX_GLOBAL_X, MAX_GRID_X, MAX_GRID_YZ, MAX_WORKGROUP_SIZE
from submitgen.runtime.pack import SG_SLOT_OUT, SgLaunchDefaults, SgPlanError, sg_apply_defaults, sg_pack


@dataclass(frozen=True)
class KernelLayout:
    """What the submission needs of one kernel: where it lives and its explicit arguments."""

    name: str  # the name the plan launches
    object_index: int  # index of the code object holding it (its place in the file's decode order)
    explicit_bytes: int
    layout: tuple[tuple[int, int, str, str], ...]  # (offset, size, value_kind, type_name)
    kernel: str = ""  # the kernel's name in its code object, when it differs from ``name``
    # What its compiler decided (block, dynamic LDS, appended buffers), which runtime/pack.py's
    # sg_apply_defaults applies; None for a kernel whose plan says everything itself.
    defaults: SgLaunchDefaults | None = None

    @property
    def symbol_name(self) -> str:
        """The kernel's name in its code object (what the loader looks up)."""
        return self.kernel or self.name


# Hidden (code object v5) arguments an AQL dispatcher of its own fills, and those it cannot honour
# (docs/launch.md): without HIP's hostcall/heap/multigrid machinery these get 0.
AQL_FILLED = frozenset({
    "hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z",
    "hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z",
    "hidden_remainder_x", "hidden_remainder_y", "hidden_remainder_z",
    "hidden_global_offset_x", "hidden_global_offset_y", "hidden_global_offset_z",
    "hidden_grid_dims", "hidden_dynamic_lds_size", "hidden_none",
})


@dataclass(frozen=True)
class AqlEntry:
    """What ``--launcher aql`` needs of one kernel beyond :class:`KernelEntry`: the whole kernarg
    segment and the hidden arguments at their metadata offsets."""

    name: str
    symbol: str  # NAME.kd
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    hidden: tuple[tuple[int, int, str], ...]  # (offset, size, value_kind)

    @property
    def zeroed(self) -> tuple[str, ...]:
        """Hidden arguments the AQL launcher cannot honour and passes as 0."""
        return tuple(kind for _, _, kind in self.hidden if kind not in AQL_FILLED)


def aql_layouts(code_objects: Sequence[Any], layouts: Sequence[KernelLayout]) -> tuple[AqlEntry, ...]:
    out = []
    for layout in layouts:
        kernel = _kernel_of(code_objects, layout)
        hidden = tuple((a.offset, a.size, a.value_kind) for a in kernel.args if a.hidden)
        end = max((o + s for o, s, _ in hidden), default=layout.explicit_bytes)
        if max(end, layout.explicit_bytes) > kernel.kernarg_segment_size:
            raise ValidationError(f"kernel '{layout.name}': arguments end at byte {end}, metadata "
                                  f".kernarg_segment_size is {kernel.kernarg_segment_size}")
        out.append(AqlEntry(  # keyed by the launch name: Triton specializations share a kernel name
            layout.name, kernel.symbol, kernel.kernarg_segment_size, kernel.kernarg_segment_align,
            kernel.group_segment_fixed_size, kernel.private_segment_fixed_size, hidden,
        ))
    return tuple(out)


@dataclass(frozen=True)
class CheckedLaunch:
    shape: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_lds: int
    total_lds: int
    kernarg_bytes: int


@dataclass(frozen=True)
class PlanCheck:
    launches: tuple[CheckedLaunch, ...]
    shapes: int

    def block_sizes(self) -> dict[str, int]:
        """The largest block each kernel is launched with (for occupancy)."""
        sizes: dict[str, int] = {}
        for launch in self.launches:
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            sizes[launch.kernel] = max(sizes.get(launch.kernel, 0), threads)
        return sizes

    def max_dynamic_lds(self) -> dict[str, int]:
        lds: dict[str, int] = {}
        for launch in self.launches:
            lds[launch.kernel] = max(lds.get(launch.kernel, 0), launch.dynamic_lds)
        return lds


def kernel_layout(kernel: Any, object_index: int, name: str | None = None,
                  defaults: SgLaunchDefaults | None = None) -> KernelLayout:
    """The layout of ``kernel`` (in code object ``object_index``), launched by the plan as ``name``
    (default: the kernel's own name), with what its compiler decided for its launches."""
    args = tuple(a for a in kernel.args if not a.hidden)
    layout = tuple((a.offset, a.size, a.value_kind, a.type_name or "") for a in args)
    explicit = max((a.offset + a.size for a in args), default=0)
    launched = name if name is not None else kernel.name
    symbol = "" if launched == kernel.name else kernel.name
    return KernelLayout(launched, object_index, explicit, layout, symbol, defaults)


def _mangled_as(name: str, have: Sequence[str]) -> str | None:
    """The C++-mangled symbol of ``have`` whose function name is ``name`` (``_Z8hip_gemmPKt...`` for
    ``hip_gemm``, also inside a namespace), or None."""
    tag = f"{len(name)}{name}"
    for symbol in sorted(set(have)):
        at = symbol.find(tag) if symbol.startswith("_Z") else -1
        if at >= 2 and not symbol[at - 1].isdigit():
            return symbol
    return None


def missing_kernels_error(missing: Sequence[str], have: Sequence[str]) -> ValidationError:
    """The error for plan names that no code object holds; a name the object has only as a
    C++-mangled symbol says so and suggests extern "C"."""
    hints = [f"{m!r} is there only as the C++-mangled symbol {symbol}" for m in missing
             if (symbol := _mangled_as(m, have)) is not None]
    hint = (f"; {', '.join(hints)}: declare the kernel extern \"C\" (extern \"C\" __global__ void ...) "
            "so that its symbol is its name") if hints else ""
    has = ", ".join(n if n.isprintable() else repr(n) for n in sorted(set(have))) or "no kernels"
    return ValidationError(f"KERNELS names {', '.join(repr(m) for m in missing)}, which the code object does "
                           f"not have (it has: {has}){hint}")


def _kernel_of(code_objects: Sequence[Any], layout: KernelLayout) -> Any:
    return next(k for k in code_objects[layout.object_index].kernels if k.name == layout.symbol_name)


def check_launch(kernel: Any, launch: CheckedLaunch, lds_limit: int) -> None:
    """Hardware and runtime limits of one launch; the message names kernel, shape, expected, actual."""
    where = f"kernel '{launch.kernel}' ({launch.shape})"
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    limit = kernel.max_flat_workgroup_size
    if threads > limit:
        raise ValidationError(f"{where}: block {launch.block} has {threads} threads, the kernel's "
                              f".max_flat_workgroup_size is {limit}")
    if threads > MAX_WORKGROUP_SIZE:
        raise ValidationError(
            f"{where}: block has {threads} threads, the hardware allows {MAX_WORKGROUP_SIZE}")
    required = tuple(getattr(kernel, "reqd_workgroup_size", None) or ())
    if required and any(required) and tuple(required) != launch.block:
        raise ValidationError(
            f"{where}: .reqd_workgroup_size is {tuple(required)}, plan launches block {launch.block}")
    if launch.total_lds > lds_limit:
        static = launch.total_lds - launch.dynamic_lds
        raise ValidationError(f"{where}: LDS {launch.total_lds} bytes (static {static} "
                              f"+ dynamic {launch.dynamic_lds}) exceeds the target's {lds_limit} bytes "
                              f"({lds_limit // 1024} KiB)")
    gx, gy, gz = launch.grid
    if gx > MAX_GRID_X or gy > MAX_GRID_YZ or gz > MAX_GRID_YZ:
        raise ValidationError(
            f"{where}: grid {launch.grid} exceeds ({MAX_GRID_X}, {MAX_GRID_YZ}, {MAX_GRID_YZ})")
    if gx * launch.block[0] > MAX_GLOBAL_X:
        raise ValidationError(
            f"{where}: grid x * block x = {gx * launch.block[0]} exceeds {MAX_GLOBAL_X}")


def _pack(table, layout: KernelLayout, launch: Any, leaves: Sequence[Any], out: Any, label: str,
          names: Sequence[str] = ()):
    leaves, out, like = _slots(out, leaves)
    try:
        if layout.defaults is not None:
            launch = sg_apply_defaults(launch, layout.defaults, like)
        return sg_pack(table, launch, leaves, out, tuple(names))
    except SgPlanError as e:
        raise ValidationError(f"{e} ({label})") from None


def _slots(out: Any, leaves: Sequence[Any]) -> tuple[tuple[Any, ...], Any, Any]:
    """(the leaves the packer sees, its out, the tensor scratch buffers are made like): a tuple
    output's tensors are packed as the slots after the inputs' (``len(leaves) + j``), as the
    emitted file packs them."""
    if isinstance(out, tuple):
        return (*leaves, *out), None, out[0]
    return tuple(leaves), out, out


def _run_shape(plan_module: ModuleType, problem: Any, spec: Mapping[str, Any], label: str):
    data = problem.meta_input(spec)
    try:
        result = plan_module.plan(data)
    except BaseException as e:  # noqa: BLE001 - the user's plan raised (or exited): one line, for this shape
        raise ValidationError(f"plan({label}) raised {type(e).__name__}: {e}") from None
    out, launches = check_result(result, label, getattr(problem, "tuple_output", 0))
    return data, out, launches


def check_plan(plan_module: ModuleType, problem: Any, code_objects: Sequence[Any],
               layouts: Sequence[KernelLayout], lds_limit: int,
               shapes: Sequence[Mapping[str, int]] | None = None,
               param_kinds: Mapping[str, tuple] | None = None,
               param_names: Mapping[str, TritonParams] | None = None) -> PlanCheck:
    """Run the plan on meta inputs of every shape and check every launch (``param_kinds``: each
    kernel's by-value parameters as int or float, where the sources say; ``param_names``: a
    Triton kernel's parameters as the plan passes them, which messages count and name)."""
    names = dict(param_names or {})
    by_name = {k.name: k for k in layouts}
    table = {k.name: (k.explicit_bytes, k.layout) for k in layouts}
    kernels = {k.name: _kernel_of(code_objects, k) for k in layouts}
    defaults = {k.name: k.defaults for k in layouts if k.defaults is not None}
    checked: list[CheckedLaunch] = []
    specs = tuple(shapes) if shapes is not None else tuple(problem.tests) + tuple(problem.benchmarks)
    for spec in specs:
        label = problem.shape_label(spec)
        data, out, launches = _run_shape(plan_module, problem, spec, label)
        leaves = problem.leaves(data)
        check_outputs(out, expected_output(problem, spec), leaves, label,
                      getattr(problem, "handed_output", None))
        shape_packed = []
        for launch in launches:
            named = isinstance(launch, (tuple, list)) and len(launch) == 5 and isinstance(launch[0], str)
            if named and launch[0] not in by_name:  # before its form: a typo's block may be None
                raise ValidationError(f"plan launches kernel '{launch[0]}', which the code object does not "
                                      f"have (it has: {', '.join(sorted(table))}) ({label})")
            check_launch_form(launch, label, defaults, param_kinds, names)
            layout = by_name[launch[0]]
            check_untyped_floats(layout, launch[4], param_kinds or {}, label)
            packed = _pack(table, layout, launch, leaves, out, label,
                           names[launch[0]].names if launch[0] in names else ())
            check_workspaces(packed.workspaces, out, f"kernel '{packed.kernel}' ({label})", leaves)
            shape_packed.append(packed)
            kernel = kernels[packed.kernel]
            c = CheckedLaunch(label, packed.kernel, packed.grid, packed.block, packed.lds,
                              kernel.group_segment_fixed_size + packed.lds, len(packed.kernarg))
            check_launch(kernel, c, lds_limit)
            checked.append(c)
        if isinstance(out, tuple):
            for j in range(len(out)):
                check_writes_output(shape_packed, len(leaves) + j, label, f"out[{j}]")
        else:
            check_writes_output(shape_packed, SG_SLOT_OUT, label)
        _check_devices(plan_module, problem, data, table, by_name, label)
    return PlanCheck(tuple(checked), len(specs))


_UNTYPED_HINT = {4: ("ctypes.c_float", "ctypes.c_int(n)"), 8: ("ctypes.c_double", "ctypes.c_int64(n)")}


def check_untyped_floats(layout: KernelLayout, args: Sequence[Any], kinds: Mapping[str, tuple],
                         label: str) -> None:
    """A plain float for a by-value argument whose type nothing says (a prebuilt object with no
    ``.type_name`` and no source the build compiled): the object cannot tell float from int, so
    the plan must say which, with a ctypes scalar."""
    if layout.name in kinds:
        return
    for i, (arg, (_, size, kind, type_name)) in enumerate(zip(args, layout.layout)):
        if isinstance(arg, float) and kind in ("by_value", "cuda_param") and not type_name:
            as_float, as_int = _UNTYPED_HINT.get(size, ("a ctypes float", "a ctypes integer"))
            raise ValidationError(
                f"kernel '{layout.name}' arg {i}: nothing says whether this {size}-byte argument is a float "
                f"or an int (a prebuilt code object, no source types known); pass {as_float}({arg!r}) for "
                f"a float or {as_int} for an int ({label})")


def _on_gpu(data: Any) -> Any:
    """``data`` with every tensor replaced by a fake one (no memory) on the GPU device ``cuda``."""
    import torch
    from torch.utils._pytree import tree_map

    def fake(t: Any) -> Any:
        if isinstance(t, torch.Tensor):
            return torch.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="cuda")
        return t

    return tree_map(fake, data)


def _check_devices(plan_module: ModuleType, problem: Any, meta_data: Any, table: Mapping[str, Any],
                   by_name: Mapping[str, KernelLayout], label: str) -> None:
    """The plan once more on the shape's inputs as fake GPU tensors (FakeTensorMode: shapes and
    devices, no memory): on meta inputs an output or workspace made on the meta device cannot be
    told from one made on the inputs' device, and at run time the kernel would get a null pointer."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    context = f"{label}, plan run on {{}} inputs"
    with FakeTensorMode(allow_non_fake_inputs=True):
        data = _on_gpu(meta_data)
        leaves = problem.leaves(data)
        device = leaves[0].device if leaves else None
        context = context.format(device)
        try:
            result = plan_module.plan(data)
        except BaseException as e:  # noqa: BLE001 - the user's plan raised: one line, for this shape
            raise ValidationError(f"plan({context}) raised {type(e).__name__}: {e}") from None
        out, launches = check_result(result, context, getattr(problem, "tuple_output", 0))
        named = [(f"out[{j}]", o) for j, o in enumerate(out)] if isinstance(out, tuple) else [("out", out)]
        for name, item in named:
            if device is not None and item.device != device:
                raise ValidationError(
                    f"plan({context}) {name}: expected device {device} (the inputs'), plan returns "
                    f"{item.device}")
        for launch in launches:
            name = launch[0] if isinstance(launch, (tuple, list)) and launch else None
            layout = by_name.get(name) if isinstance(name, str) else None
            if layout is None:
                continue  # the meta run checked every launch's form and kernel
            packed = _pack(table, layout, launch, leaves, out, context)
            check_workspaces(packed.workspaces, out, f"kernel '{packed.kernel}' ({context})", leaves)


def expected_output(problem: Any, spec: Mapping[str, Any]) -> Any:
    """The problem's output for ``spec`` as a meta tensor (shape and dtype), when it says."""
    fn = getattr(problem, "output_meta", None)
    return fn(spec) if fn is not None else None
