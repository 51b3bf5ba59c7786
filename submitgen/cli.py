"""Command line. This module only parses options and calls the library; every command's
docstring is its help text. Domain errors (``SubmitgenError``) are printed as one line with
``Error:`` and exit code 1, never as a traceback."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import click

from . import __version__
from .errors import SubmitgenError
from .options import Compress, Launcher, Target
from .problems.cli_param import PROBLEM_NAME
from .targets import MAX_WORKGROUP_SIZE

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SubmitgenError as e:
            if ctx.meta.get(_TRACEBACK):
                traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
            raise click.ClickException(str(e)) from None


_TRACEBACK = "submitgen.traceback"


def _choice(enum) -> click.Choice:
    """A click choice of an options enum's values (submitgen/options.py)."""
    from .options import choices

    return click.Choice(choices(enum))


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="submitgen")
@click.option("--traceback", "show_traceback", is_flag=True,
              help="On an error, print the stack behind the Error: line (for bug reports).")
@click.pass_context
def cli(ctx: click.Context, show_traceback: bool) -> None:
    """Compile AMDGPU kernels, validate the code object, and emit a single-file GPU MODE
    leaderboard submission (MI355X, gfx950)."""
    ctx.meta[_TRACEBACK] = show_traceback


def emit_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False, allow_nan=False))


@cli.command("inspect")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--json", "as_json", is_flag=True, help="Print the model as JSON (docs/inspect-json.md).")
@click.option("--kernel", "kernels", multiple=True, metavar="NAME",
              help="Show only this kernel (.name, .symbol or demangled name); repeatable.")
@click.option("--block", type=click.IntRange(1, MAX_WORKGROUP_SIZE), default=None, metavar="N",
              help="Block size for the occupancy estimate (default: the kernel's .reqd_workgroup_size, "
                   "else its max workgroup size).")
@click.option("--lds", type=click.IntRange(0), default=None, metavar="BYTES",
              help="Dynamic LDS per block for the occupancy estimate (default: the submission's "
                   "provenance or a Triton .json sidecar, else 0).")
@click.option("--arch", default=None, metavar="ARCH",
              help="Pick this arch's bundle entry, and use its facts for occupancy (e.g. gfx950).")
@click.option(
    "--disasm/--no-disasm",
    default=True,
    show_default=True,
    help="Count each AMD kernel's instructions (matrix, scratch, memory...) with llvm-objdump >= 20, "
    "where one is installed.",
)
def inspect_cmd(paths: tuple[str, ...], as_json: bool, kernels: tuple[str, ...], block: int | None,
                lds: int | None, arch: str | None, disasm: bool) -> None:
    """Show what code objects hold: kernels, argument layouts, resources, occupancy, warnings.

    PATH is a code object (.co/.hsaco), a clang offload bundle, or a Python submission that
    embeds one (read statically, never run). Exits 1 when any error-severity finding is shown
    (a loader would refuse the object, or the kernel cannot launch as estimated)."""
    from .report import exit_status, inspect_sources, render_text, to_json

    items = inspect_sources(paths, arch=arch, kernels=kernels, block=block, lds=lds, disasm=disasm)
    if as_json:
        emit_json(to_json(items))
    else:
        click.echo(render_text(items))
    if exit_status(items):
        raise SystemExit(exit_status(items))


@cli.command("toolchain")
@click.option("--json", "as_json", is_flag=True, help="Print the toolchains as JSON.")
@click.option("--compiler", default=None, metavar="PATH", help="Also probe this compiler (listed first).")
@click.option("--arch", "arches", multiple=True, metavar="ARCH",
              help="Arches to probe (default: gfx942 and gfx950); repeatable.")
def toolchain_cmd(as_json: bool, compiler: str | None, arches: tuple[str, ...]) -> None:
    """List the compilers found, in the order they are preferred, with their versions and the
    arches each can build (probed by compiling a tiny kernel)."""
    from . import toolchain

    found = toolchain.discover(compiler=compiler, arches=arches or toolchain.KNOWN_ARCHES)
    if as_json:
        emit_json({"cache_dir": str(toolchain.cache_dir()), "toolchains": toolchain.describe(found),
                   **toolchain.describe_extras()})
    else:
        click.echo(toolchain.format_table(found, arches or toolchain.KNOWN_ARCHES))


class _SplitExtraFlags(click.Command):
    """Everything after ``--`` goes to the compiler unchanged."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta["submitgen.extra_flags"] = tuple(args[i + 1:])
            args = args[:i]
        return super().parse_args(ctx, args)


@cli.command("compile", cls=_SplitExtraFlags)
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False),
                metavar="SRC...")
@click.option("--arch", default="gfx950", show_default=True, help="Target processor (gfx950, gfx942).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Code object to write (default: FIRST_SOURCE.co).")
@click.option("-O", "opt", default="3", show_default=True, metavar="LEVEL", help="Optimisation level.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Define a macro; repeatable.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add an include folder; repeatable.")
@click.option("--code-object-version", type=click.Choice(["4", "5", "6"]), default=None,
              help="Code object version (default: the compiler's).")
@click.option("--compiler", default=None, metavar="PATH", help="Use this compiler (hipcc, clang...).")
@click.option("--no-cache", is_flag=True, help="Always compile; neither read nor write the cache.")
@click.pass_context
def compile_cmd(ctx: click.Context, sources: tuple[str, ...], arch: str, output: str | None, opt: str,
                defines: tuple[str, ...], include_dirs: tuple[str, ...], code_object_version: str | None,
                compiler: str | None, no_cache: bool) -> None:
    """Compile HIP (.hip .cpp .cu), OpenCL C (.cl) or AMDGPU assembly (.s) sources into one
    code object. Flags after `--` are passed to the compiler."""
    from .files import write_atomic
    from .toolchain import CompileOptions, compile_sources

    options = CompileOptions(
        arch=arch, opt=opt, defines=defines, include_dirs=tuple(Path(d) for d in include_dirs),
        code_object_version=int(code_object_version) if code_object_version else None,
        extra_flags=ctx.meta.get("submitgen.extra_flags", ()), compiler=compiler, use_cache=not no_cache,
    )
    result = compile_sources([Path(s) for s in sources], options)
    if result.cache_warning:
        click.echo(f"Warning: {result.cache_warning}", err=True)
    out = Path(output) if output else Path(Path(sources[0]).stem + ".co")
    write_atomic(out, result.code_object)
    how = "cached" if result.cache_hit else "compiled"
    click.echo(f"wrote {out} ({len(result.code_object)} bytes, {arch}, {how} with {result.toolchain.name} "
               f"{result.toolchain.version}): kernels {', '.join(result.kernels)}")


@cli.command()
@click.argument("problem", type=PROBLEM_NAME)
@click.option("-o", "--output", default="submission.py", show_default=True, metavar="FILE",
              help="Where to write the submission (a folder, or a path ending in /: FOLDER/submission.py).")
@click.option("--kernels", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Kernel project folder (device sources + launch.py). Default: the bundled one.")
@click.option("--co", "code_objects", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Embed this prebuilt code object (or bundle) instead of compiling. Repeatable.")
@click.option("--arch", help="Target processor: gfx950 (default), gfx942; sm_90 with --target cuda.")
@click.option("--target", type=_choice(Target), default=Target.AMD.value, show_default=True,
              help="amd: HIP code object for MI355X. cuda: a cubin for NVIDIA GPUs (same kernel sources).")
@click.option("--compress", type=_choice(Compress), default=Compress.LZMA.value, show_default=True)
@click.option("--no-fallback", is_flag=True, help="Fail at import instead of running the torch fallback.")
@click.option("--reuse-output", is_flag=True,
              help="Opt-in: return one output tensor per shape instead of a fresh one per call (cheaper "
                   "calls; a caller that keeps an earlier result sees it overwritten).")
@click.option("--launcher", type=_choice(Launcher), default=Launcher.CTYPES.value, show_default=True,
              help="ctypes: load and launch through ctypes (fast import). cpp: a C++ extension built by "
                   "load_inline at import (the common hand-written pattern; costs compile time). aql: AQL "
                   "packets on an HSA queue of its own (local experiments only; needs --allow-own-queue).")
@click.option("--allow-own-queue", is_flag=True,
              help="Let --launcher aql build for a leaderboard problem. The file runs outside torch's timing "
                   "events (~4 us timing artefact) and must never be submitted.")
@click.option("--compiler", help="Compiler to use (default: discovered; see `submitgen toolchain`).")
@click.option("--no-cache", is_flag=True, help="Recompile even when the cache holds the result.")
@click.option("--plan-timeout", type=click.FloatRange(min=0, min_open=True, max=86400), default=60.0,
              show_default=True, metavar="SECONDS",
              help="Seconds launch.py may run (its import and every shape) before the build fails.")
def build(problem, output, kernels, code_objects, arch, target, compress, no_fallback, reuse_output, launcher,
          allow_own_queue, compiler, no_cache, plan_timeout):
    """Compile a kernel project, check it against the code object and the leaderboard rules, and
    write the single-file submission for PROBLEM (one of the problems in the usage line).

    \b
    Examples:
        submitgen build mxfp4-mm
        submitgen build mixed-mla -o mla.py --kernels my_kernels/
        submitgen build mxfp4-mm --co gemm.co --kernels my_kernels/
    """
    from .build import BuildOptions
    from .build import build as run_build
    from .files import output_path
    from .summary import format_summary

    result = run_build(BuildOptions(
        problem=problem, output=output_path(output), kernels=kernels, code_objects=tuple(code_objects),
        arch=arch, plan_timeout=plan_timeout, target=Target(target), compress=Compress(compress),
        allow_fallback=not no_fallback,
        reuse_output=reuse_output, launcher=Launcher(launcher), allow_own_queue=allow_own_queue,
        compiler=compiler, use_cache=not no_cache,
    ))
    click.echo(format_summary(result))



_PROBLEM_HELP = ("Leaderboard to check against (a problem above, or another leaderboard lint knows); "
                 "default: the file's header.")
_SHAPES_HELP = "test, benchmark, all, or a subset by index: 'test:0,2', 'benchmark:0-3'."
_SHAPE_HELP = "Run this shape instead of --shapes, e.g. 'm=8,n=256,k=512,seed=1'; repeatable."


def _lint_failed(e) -> None:
    for line in e.lines:
        click.echo(line)
    raise SystemExit(1)


def _warn_lint(file: str, problem: str | None, no_lint: bool) -> None:
    """With --no-lint, show the failed rules as warnings instead of stopping."""
    if not no_lint:
        return
    from .lint import lint_file, render_findings

    for line in render_findings(lint_file(file, problem=problem), file):
        click.echo(f"warning (--no-lint): {line}", err=True)


def _run_and_report(file: str, problem: str | None, no_lint: bool, fmt, run,
                    require_kernel: bool = False) -> None:
    """``test`` and ``bench``: warn (--no-lint) or stop on lint, ``run()``, print ``fmt(report)``,
    exit with the report's code (0 passed, 1 failed or, with --require-kernel, kernel not run,
    3 cannot run here)."""
    from .errors import LintFailed
    from .evaluate import require_kernel_line

    try:
        _warn_lint(file, problem, no_lint)
        report = run()
    except LintFailed as e:
        _lint_failed(e)
    for line in fmt(report):
        click.echo(line)
    why = require_kernel_line(report) if require_kernel and report.cannot_run is None else None
    if why:
        click.echo(why)
    code = report.exit_code(require_kernel)
    if code:
        raise SystemExit(code)


def _announce(line: str) -> None:
    click.echo(line, err=True)


def _progress(result, finished: int, count: int) -> None:
    from .evaluate import progress_line

    click.echo(progress_line(result, finished, count))


@cli.command("lint")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--problem", default=None, type=PROBLEM_NAME, help=_PROBLEM_HELP)
def lint_cmd(file: str, problem: str | None) -> None:
    """Check FILE against the leaderboard's rules without running it: the #!POPCORN header, the
    banned word (any case), size and payload budget, exec/eval of decoded data, a module-level
    custom_kernel, and kernels on an HSA queue of their own. Prints one line per failed rule
    (FILE:LINE: RULE: message (fix: ...)) and exits 1 if any fails."""
    from .lint import lint_file_report, payload_summary, render_findings

    report = lint_file_report(file, problem=problem)
    for line in render_findings(report.errors + report.warnings, file):
        click.echo(line)
    if report.errors:
        raise SystemExit(1)
    click.echo(f"{file}: lint passed; {payload_summary(file, problem=problem)}")


def _run_options(fn):
    """Options that `test` and `bench` share: the per-shape timeout, --no-lint, --require-kernel."""
    fn = click.option("--require-kernel", is_flag=True, help="Exit 1 unless the kernel itself ran (not "
                      "the pure-torch fallback, not a dry run, not a CPU-only run).")(fn)
    fn = click.option("--no-lint", is_flag=True, help="Run even if the file fails lint (local experiments, "
                      "e.g. an --launcher aql build); the failed rules are printed first as warnings.")(fn)
    return click.option("--timeout", type=click.FloatRange(min=1), default=900, show_default=True,
                        help="Seconds one shape may take (the import: at least 300).")(fn)


@cli.command("test")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--problem", default=None, type=PROBLEM_NAME, help=_PROBLEM_HELP)
@click.option("--shapes", default="test", show_default=True, metavar="WHICH", help=_SHAPES_HELP)
@click.option("--shape", "custom", multiple=True, metavar="K=V,...", help=_SHAPE_HELP)
@click.option("--seed", type=int, default=None, help="Mix this seed into every shape's seed, as the "
              "leaderboard does with its secret seed.")
@_run_options
def test_cmd(file: str, problem: str | None, shapes: str, custom: tuple[str, ...], seed: int | None,
             timeout: float, no_lint: bool, require_kernel: bool) -> None:
    """Lint FILE, then run its custom_kernel on every shape in a fresh process, the way the
    leaderboard's evaluator does, and check each output against the local reference at the
    leaderboard's tolerance (and that the inputs were not changed). Says which backend ran.
    Exits 1 on any failure, 3 when the file needs a module this machine lacks."""
    from .evaluate import format_test_report, run_test

    _run_and_report(file, problem, no_lint, format_test_report, lambda: run_test(
        file, problem=problem, shapes=shapes, custom=custom, seed=seed, timeout_s=timeout,
        lint=not no_lint, progress=_progress, announce=_announce), require_kernel)


@cli.command("bench")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--problem", default=None, type=PROBLEM_NAME, help=_PROBLEM_HELP)
@click.option("--shapes", default="benchmark", show_default=True, metavar="WHICH", help=_SHAPES_HELP)
@click.option("--shape", "custom", multiple=True, metavar="K=V,...", help=_SHAPE_HELP)
@click.option("--iters", type=click.IntRange(min=1), default=20, show_default=True,
              help="Timed calls per shape (fewer once --max-time has passed).")
@click.option("--max-time", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds of timing per shape before stopping early.")
@click.option("--flush-mib", type=click.IntRange(min=0), default=512, show_default=True,
              help="GPU only: MiB zeroed before each timed call to flush the caches.")
@click.option("--force", is_flag=True, help="Time the pure-torch fallback on a CPU too (by default it "
              "gets one checked call and no timing).")
@_run_options
def bench_cmd(file: str, problem: str | None, shapes: str, custom: tuple[str, ...], iters: int,
              max_time: float, flush_mib: int, force: bool, timeout: float, no_lint: bool,
              require_kernel: bool) -> None:
    """Lint FILE, then time its custom_kernel on every benchmark shape in a fresh process: mean,
    best and worst. With a GPU: device events, flushing the cache before each call like the
    leaderboard. Without one: host wall time, labelled host-only, and a submitgen file's pure-torch
    fallback is checked once but not timed (--force times it). Exits 1 if a shape errors or gives a
    wrong output, 3 when the file needs a module this machine lacks."""
    from .evaluate import format_bench_report, run_bench

    _run_and_report(file, problem, no_lint, format_bench_report, lambda: run_bench(
        file, problem=problem, shapes=shapes, custom=custom, iters=iters, max_time_s=max_time,
        flush_mib=flush_mib, timeout_s=timeout, lint=not no_lint, force=force, progress=_progress,
        announce=_announce), require_kernel)


def _fail_on_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    from .diff import parse_fail_on

    try:
        return parse_fail_on(value)
    except SubmitgenError as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1]) from None


@cli.command("diff")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option("--kernel", default=None, metavar="NAME",
              help="Compare only this kernel (.name, .symbol or demangled).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (structure: submitgen/diff.py docstring).")
@click.option("--all", "show_all", is_flag=True, help="Also show the fields that did not change.")
@click.option("--block", type=click.IntRange(1, MAX_WORKGROUP_SIZE), default=None, metavar="N",
              help="Block size for occupancy (default: the launch plan's, else the max workgroup size).")
@click.option("--arch", default=None, metavar="ARCH",
              help="Pick this arch's bundle entry, and use its facts for occupancy (e.g. gfx950).")
@click.option("--fail-on", "fail_on", default=None, callback=_fail_on_option, metavar="RULES",
              help="Exit 1 if a listed measure got worse (spills,scratch,occupancy,lds,args), "
                   "or if nothing was compared.")
@click.option("--pair", "pairs", multiple=True, metavar="OLD=NEW",
              help="Compare kernel OLD of the first input with kernel NEW of the second; repeatable.")
def diff_cmd(old: str, new: str, kernel: str | None, as_json: bool, show_all: bool, block: int | None,
             arch: str | None, fail_on: tuple[str, ...], pairs: tuple[str, ...]) -> None:
    """Show what changed between two builds: registers, spills, scratch, LDS, occupancy, code
    size, kernarg layout, max workgroup size, target. Kernels are paired by --pair, by name,
    else one-to-one when each side holds one kernel.

    OLD and NEW are each a code object, a clang offload bundle, or a Python submission (read
    statically, never run). With --fail-on, exits 1 when a listed measure got worse."""
    from .diff import diff_sources, parse_pairs, render_text, to_json

    result = diff_sources(old, new, kernel=kernel, block=block, arch=arch, fail_on=fail_on,
                          pairs=parse_pairs(pairs))
    if as_json:
        emit_json(to_json(result))
    else:
        click.echo(render_text(result, show_all=show_all))
    if result.exit_code:
        raise SystemExit(result.exit_code)


def main() -> None:
    cli.main(prog_name="submitgen")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
