"""Stage 3: check the objects against the build's target and run the plan against them, for
every test and benchmark shape; nothing is rendered unless every launch fits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from submitgen.errors import ValidationError
from submitgen.pipeline.frontends import front_ends
from submitgen.pipeline.values import Checked, EmbeddedObject, KernelSummary, Prepared
from submitgen.project.launches import (
    KernelLayout,
    PlanCheck,
    aql_layouts,
    check_plan,
    kernel_layout,
    missing_kernels_error,
)
from submitgen.project.load import load_plan_module
from submitgen.project.param_kinds import TritonParams
from submitgen.project.run import run_plan
from submitgen.readers.base import KernelInfo


def check_target(objects: Sequence[EmbeddedObject], arch: str) -> str:
    """Every object is for ``arch`` and has no error finding (the reader's ``require_loadable``, as
    ``inspect`` sees it); the first one's target ID."""
    for obj in objects:
        co = obj.code_object
        if arch not in (co.processor, co.family):
            raise ValidationError(f"{obj.label}: code object is for {co.processor}, the build is for {arch}")
        co.require_loadable(obj.label)
    return objects[0].code_object.target_id


def object_warnings(objects: Sequence[EmbeddedObject]) -> tuple[str, ...]:
    """The warning findings ``inspect`` prints for the objects (their errors stop the build in
    ``check_target``), as the build summary shows them."""
    return tuple(f"{obj.label}: {f'kernel {f.kernel!r}: ' if f.kernel else ''}{f.message} ({f.code})"
                 for obj in objects for f in obj.code_object.findings if f.severity == "warning")


def layouts(objects: Sequence[EmbeddedObject], wanted: Sequence[str]) -> tuple[KernelLayout, ...]:
    """The layout of every name the plan may launch, from the object that serves it."""
    found: dict[str, KernelLayout] = {}
    for index, obj in enumerate(objects):
        for b in obj.kernels:
            kernel = next(k for k in obj.code_object.kernels if k.name == b.kernel)
            found.setdefault(b.name, kernel_layout(kernel, index, b.name, b.defaults))
    missing = [n for n in wanted if n not in found]
    if missing:
        raise missing_kernels_error(missing, [k.name for o in objects for k in o.code_object.kernels])
    return tuple(found[n] for n in wanted)


def _spills(kernel: KernelInfo) -> int | None:
    """VGPR + SGPR spills; None when the metadata records neither (absent is not zero)."""
    counts = [c for c in (kernel.vgpr_spill_count, kernel.sgpr_spill_count) if c is not None]
    return sum(counts) if counts else None


def _summaries(p: Prepared, objects: Sequence[EmbeddedObject], table: Sequence[KernelLayout],
               plan: PlanCheck) -> tuple[KernelSummary, ...]:
    blocks, dyn, out = plan.block_sizes(), plan.max_dynamic_lds(), []
    for layout in table:
        co = objects[layout.object_index].code_object
        kernel = next(k for k in co.kernels if k.name == layout.symbol_name)
        block = blocks.get(layout.name, 0)
        occupancy = (p.backend.occupancy_text(co, kernel, block, dyn.get(layout.name, 0)) if block
                     else "not launched by the plan")
        out.append(KernelSummary(layout.name, kernel.vgpr_count, kernel.agpr_count, kernel.sgpr_count,
                                 _spills(kernel), kernel.group_segment_fixed_size,
                                 kernel.private_segment_fixed_size, block, occupancy, dyn.get(layout.name, 0),
                                 kernel.name))
    return tuple(out)


def param_kinds(p: Prepared) -> dict[str, tuple[str, tuple[object, ...]]]:
    """Each launch name's by-value parameters as int or float, as its front end reads them (the
    device sources, also the ones a --co object stands in for; the Triton signatures)."""
    return {name: kinds for fe in front_ends() for name, kinds in fe.param_kinds(p).items()}


def param_names(p: Prepared) -> dict[str, TritonParams]:
    """Each launch name's parameters as the plan passes them, where its front end names them
    (Triton specializations), for counting and naming."""
    return {name: params for fe in front_ends() for name, params in fe.param_names(p).items()}


def _run_plan(
    p: Prepared, code_objects: Sequence[Any], table: Sequence[KernelLayout], lds_limit: int
) -> PlanCheck:
    """In the plan's child process: import the plan (from the text read once) and check every shape."""
    return check_plan(load_plan_module(p.project), p.problem, code_objects, table, lds_limit,
                      param_kinds=param_kinds(p), param_names=param_names(p))


def check(p: Prepared, objects: tuple[EmbeddedObject, ...]) -> Checked:
    target_id = check_target(objects, p.arch)
    table = layouts(objects, p.project.launch_names)
    code_objects = [o.code_object for o in objects]
    lds_limit = p.backend.lds_limit(code_objects[0])
    plan = run_plan(_run_plan, (p, code_objects, table, lds_limit), plan_path=p.project.plan_path,
                    timeout=p.plan_timeout)
    aql = aql_layouts(code_objects, table) if p.launcher.kernarg_segments else ()
    return Checked(target_id, table, plan, aql, _summaries(p, objects, table, plan), object_warnings(objects))
