"""Stage 4: render the submission text from the checked objects (embed, provenance, template)."""

from __future__ import annotations

from collections.abc import Sequence

from submitgen import __version__
from submitgen.pipeline.values import Checked, EmbeddedObject, Prepared, Rendered
from submitgen.render.embed import Blob, embed_images
from submitgen.render.provenance import format_line, lds_item, seal
from submitgen.render.template import KernelEntry, Pasted, RenderContext, render


def provenance_line(p: Prepared, objects: Sequence[EmbeddedObject], checked: Checked,
                    blobs: Sequence[Blob]) -> str:
    fields = {
        "version": __version__,
        "arch": p.arch,
        "target": checked.target_id,
        "kernels": tuple(k.name for k in checked.layouts),
        "sources": p.project.digest(),
        "co": tuple(sha for b in blobs for sha, _ in b.images),
        "compress": str(p.compress),
        "launcher": p.launcher.name,
    }
    for name in dict.fromkeys(o.built_by[0] for o in objects if o.built_by):  # per object, in "co" order
        fields[name] = tuple(o.built_by[1] if o.built_by and o.built_by[0] == name else "-" for o in objects)
    lds = dynamic_lds(checked)
    if lds:
        fields["lds"] = tuple(lds_item(index, name, n) for (index, name), n in lds.items())
    return format_line(fields)


def dynamic_lds(checked: Checked) -> dict[tuple[int, str], int]:
    """(object index, kernel name) -> the dynamic LDS it is launched with: the plan's largest over
    the shapes, else (a kernel the plan never launches) its compiler's ``shared``."""
    launched = checked.plan.max_dynamic_lds()
    out: dict[tuple[int, str], int] = {}
    for k in checked.layouts:
        n = launched.get(k.name, k.defaults.shared if k.defaults is not None else None)
        if n is not None:
            key = (k.object_index, k.symbol_name)
            out[key] = max(out.get(key, 0), n)
    return out


def kernel_entries(checked: Checked) -> tuple[KernelEntry, ...]:
    """What the templates need of each name the plan launches: its object and symbol, its explicit
    arguments, what its compiler decided for its launches, and its largest dynamic LDS."""
    dynamic = checked.plan.max_dynamic_lds()
    return tuple(
        KernelEntry(k.name, k.object_index, k.symbol_name, k.explicit_bytes, k.layout, defaults=k.defaults,
                    dynamic_shared=dynamic.get(k.name, 0))
        for k in checked.layouts
    )


def render_submission(p: Prepared, objects: Sequence[EmbeddedObject], checked: Checked) -> Rendered:
    blobs = embed_images([o.image for o in objects], p.compress).blobs
    ctx = RenderContext(
        header_lines=tuple(p.problem.header_lines()),
        provenance=provenance_line(p, objects, checked, blobs),
        version=__version__,
        project=p.project.root.name,
        command=" ".join(("submitgen", "build", p.problem.name, *p.rebuild)),  # prepare.rebuild_flags
        leaderboard=p.problem.leaderboard,
        target_id=checked.target_id,
        arch=p.arch,
        runtime=p.runtime,
        launcher=p.launcher,
        compress=p.compress,
        blobs=blobs,
        kernels=kernel_entries(checked),
        pasted=Pasted(
            leaves=p.problem.leaves_source,
            fallback=p.problem.fallback_source,
            plan=p.project.plan_source,
            plan_name=f"{p.project.root.name}/{p.project.plan_path.name}",
            plan_triton_resolved=bool(p.project.plan_read),
        ),
        allow_fallback=p.allow_fallback,
        reuse_output=p.reuse_output,
        outputs=p.problem.tuple_output,
        aql=checked.aql,
    )
    return Rendered(ctx, seal(render(ctx)))
