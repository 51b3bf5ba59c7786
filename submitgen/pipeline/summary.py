"""The build's report to the user: the warnings a build carries (launcher import cost, the own
queue warning, --reuse-output) and the summary text the CLI prints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from submitgen import textfmt
from submitgen.launchers import LauncherSpec
from submitgen.project.launches import AqlEntry
from submitgen.textfmt import payload_json

if TYPE_CHECKING:
    from submitgen.lint.payload import PayloadEstimate
    from submitgen.pipeline.values import BuildResult

REUSE_OUTPUT_WARNING = (
    "--reuse-output: custom_kernel returns the same tensor for every call of a shape; "
    "an earlier result is overwritten by the next call"
)


def aql_zeroed_warnings(aql: Sequence[AqlEntry]) -> list[str]:
    """One warning per kernel whose metadata lists hidden arguments the AQL launcher passes as 0."""
    return [
        f"aql: kernel '{k.name}': {', '.join(k.zeroed)} cannot be honoured by a dispatcher of its own and "
        "are passed as 0 (printf, assert, malloc, grid sync or a queue pointer in the kernel would fault)"
        for k in aql if k.zeroed
    ]


def build_warnings(launcher: LauncherSpec, others: Sequence[LauncherSpec], leaderboard: str,
                   aql: Sequence[AqlEntry], reuse_output: bool, objects: int = 1) -> tuple[str, ...]:
    """The notes a build prints: its launcher's import cost (for ``objects`` embedded code objects)
    beside the ``others`` (the other submittable launchers the target runs), and the warnings of the
    options chosen."""
    what = "the code object" if objects == 1 else f"the {objects} code objects"
    warnings = [f"import cost of this file's launcher: {launcher.name}: {launcher.import_cost.text(what)}"]
    warnings += [f"for comparison, --launcher {n.name}: {n.import_cost.text(what)}" for n in others]
    if launcher.own_queue is not None:
        warnings.insert(0, launcher.own_queue.warning.format(leaderboard=leaderboard))
    warnings += aql_zeroed_warnings(aql)
    if reuse_output:
        warnings.append(REUSE_OUTPUT_WARNING)
    return tuple(warnings)


def foreign_arch_warning(leaderboard: str, gpu: str, board_arch: str, arch: str) -> tuple[str, ...]:
    """The note of a build for another arch than the leaderboard's GPU runs (``--target cuda --arch
    sm_90``, ``--arch gfx942``): a file whose kernels cannot run there, so the build prints no submit
    line for it. Empty when ``arch`` is the leaderboard's."""
    if arch == board_arch:
        return ()
    return (f"built for {arch}: {leaderboard} runs on {gpu} ({board_arch}), where this file's kernels do "
            f"not load (it runs its pure-torch fallback, or fails with --no-fallback); it is for checking "
            f"on a {arch} GPU, so no submit line is printed; a build for {board_arch} (the default target "
            f"and arch) is the one to submit",)


def payload_note(payload: PayloadEstimate, arch: str) -> tuple[str, ...]:
    """The note of a file for another arch whose payload is over the cap, which its build does not
    enforce (the file is not submitted); empty when it fits."""
    if payload.fits:
        return ()
    return (f"payload estimate {payload.chars:,} chars is {-payload.headroom:,} over the "
            f"{payload.limit:,}-char limit: not enforced for a file built for {arch}, which is not "
            "submitted",)


def submit_command(leaderboard: str, gpu: str, mode: str, output: object) -> str:
    """The popcorn-cli line that submits ``output`` (its own syntax: ``popcorn-cli submit --gpu GPU
    --leaderboard NAME --mode MODE FILE``)."""
    return f"popcorn-cli submit --gpu {gpu} --leaderboard {leaderboard} --mode {mode} {output}"


def _kernel_rows(r: BuildResult) -> list[str]:
    head = ("kernel", "VGPR", "AGPR", "SGPR", "spill", "LDS", "block")
    lines = ["  {:<28} {:>5} {:>5} {:>5} {:>5} {:>7} {:>5}  occupancy".format(*head)]
    for k in r.kernels:
        agprs, sgprs, spills = ("-" if v is None else v for v in (k.agprs, k.sgprs, k.spills))  # absent != 0
        name = textfmt.printable(k.name)[:28]
        lines.append(f"  {name:<28} {k.vgprs:>5} {agprs:>5} {sgprs:>5} {spills:>5} {k.lds:>7} {k.block:>5}  "
                     f"{k.occupancy}")
    return lines


def format_summary(r: BuildResult) -> str:
    """The text the CLI prints after a build (``r`` is a build.BuildResult)."""
    lines = [f"wrote {r.output} for {r.problem.leaderboard} ({r.target_id})", ""]
    loud = [w for w in r.warnings if w.startswith("!!!")]
    lines += [f"  {w}" for w in loud] + ([""] if loud else [])
    blob_chars, p = sum(b.chars for b in r.blobs), r.payload
    many = "s" if sum(len(b.images) for b in r.blobs) > 1 else ""
    ratio = blob_chars / max(1, r.raw_base64_chars)
    lines += [*_kernel_rows(r), "", *(f"  ok  {c}" for c in r.checks), "",
              f"  file {r.size:,} bytes; embedded code object{many} {sum(b.size for b in r.blobs):,} bytes "
              f"-> {blob_chars:,} chars {r.blobs[0].compress}+base64 ({ratio:.2f} x raw base64)",
              *(f"  {w}" if w.startswith("!!!") else f"  note: {w}" for w in r.warnings),
              f"  payload estimate {p.chars:,} / {p.limit:,} chars (problem files {p.baseline:,} + "
              f"submission {p.submission_chars:,}); headroom {p.headroom:,}", f"  {r.kernelguard.summary()}"]
    if r.submit:
        lines += [f"  not checked: the build ran no kernel, so its outputs were never compared with the "
                  f"reference: `submitgen test --interpret PROJECT_DIR` runs a Triton project's kernels on "
                  f"this CPU, `submitgen test {r.output}` runs the file on the leaderboard's GPU",
                  "", f"  submit it with: {r.submit}"]
    return textfmt.lines(lines)


def build_json(r: BuildResult) -> dict[str, Any]:
    """``build --json``'s fields (docs/json.md) for a build.BuildResult: the same facts as the text."""
    return {
        "output": str(r.output), "problem": r.problem.name, "leaderboard": r.problem.leaderboard,
        "gpu": r.problem.gpu, "target": r.target_id, "size": r.size,
        "kernels": [{"name": k.name, "symbol": k.symbol or k.name, "vgprs": k.vgprs, "agprs": k.agprs,
                     "sgprs": k.sgprs, "spills": k.spills, "static_lds": k.static_lds,
                     "dynamic_lds": k.dynamic_lds, "lds": k.lds, "scratch": k.scratch, "block": k.block,
                     "occupancy": k.occupancy} for k in r.kernels],
        "checks": list(r.checks), "warnings": list(r.warnings),
        "embedded": {"objects": sum(len(b.images) for b in r.blobs), "bytes": sum(b.size for b in r.blobs),
                     "chars": sum(b.chars for b in r.blobs),
                     "compress": r.blobs[0].compress if r.blobs else None},
        "payload": payload_json(r.payload), "kernelguard": r.kernelguard.as_json(),
        "submit": r.submit or None,
    }
