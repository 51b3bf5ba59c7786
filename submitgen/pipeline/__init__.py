"""The build as stages over frozen values (``values.py``; HACKING.md, layout): prepare -> produce
objects -> check -> render -> verify -> write. Nothing is written unless every check passes; the
file is written atomically."""

from __future__ import annotations

from pathlib import Path

from submitgen.files import write_output
from submitgen.launchers import comparable
from submitgen.pipeline.check import check
from submitgen.pipeline.emit import render_submission
from submitgen.pipeline.guard import still_as_checked
from submitgen.pipeline.prepare import build_inputs, prepare
from submitgen.pipeline.produce import produce_objects
from submitgen.pipeline.summary import build_warnings, foreign_arch_warning, payload_note, submit_command
from submitgen.pipeline.values import BuildOptions, BuildResult, Prepared, Verified
from submitgen.pipeline.verify import verify
from submitgen.render.embed import raw_base64_chars


def write(p: Prepared, verified: Verified) -> Path:
    """Stage 6: the file, atomically (an earlier good output stays whole until the rename), and
    only over what prepare checked: -o is checked again just before the rename."""
    output = p.output
    write_output(output, verified.rendered.text, build_inputs(p),
                 before_replace=lambda: still_as_checked(output, p.output_seen))
    return output


def build(opts: BuildOptions) -> BuildResult:
    p = prepare(opts)
    objects = produce_objects(p)
    checked = check(p, objects)
    rendered = render_submission(p, objects, checked)
    images = tuple(o.image for o in objects)
    verified = verify(p, rendered, images)
    plan = checked.plan
    warnings = build_warnings(p.launcher, comparable(p.launcher, p.backend.target), p.problem.leaderboard,
                              checked.aql, p.reuse_output, len(objects)) + checked.warnings
    foreign = foreign_arch_warning(p.problem.leaderboard, p.problem.gpu, p.problem.arch or p.arch, p.arch)
    foreign += payload_note(verified.payload, p.arch)
    if p.problem.folder is not None and not p.allow_fallback:
        warnings += ("no fallback: a build from a problem folder has none unless --fallback FILE names a "
                     "plain-torch custom_kernel (e.g. the folder's submission.py), so the file fails at "
                     "import where its kernels cannot load",)
    output = write(p, verified)
    return BuildResult(
        output=output, text=rendered.text, problem=p.problem, target_id=checked.target_id,
        blobs=rendered.context.blobs, raw_base64_chars=sum(raw_base64_chars(i) for i in images),
        kernels=checked.kernels, plan=plan, payload=verified.payload, kernelguard=verified.kernelguard,
        checks=(f"plan: {len(plan.launches)} launches over {plan.shapes} shapes match the metadata and "
                "limits", *verified.checks),
        warnings=warnings + p.problem.notes + foreign,
        submit=submit_command(p.problem.leaderboard, p.problem.gpu, str(p.mode), output)
        if p.launcher.submittable and not foreign else "",
    )
