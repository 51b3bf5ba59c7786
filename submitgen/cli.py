"""Command line. This module only parses options and calls the library; every command's
docstring is its help text. Domain errors (``SubmitgenError``) are printed as one line with
``Error:`` and exit code 1, never as a traceback."""

from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path

import click

from submitgen import __version__
from submitgen.backends import BACKENDS
from submitgen.errors import SubmitgenError
from submitgen.launchers import DEFAULT as DEFAULT_LAUNCHER
from submitgen.launchers import REGISTRY as LAUNCHERS
from submitgen.options import Compress, Mode, Target, choices
from submitgen.problems.cli_param import PROBLEM_NAME
from submitgen.readers.amd.processors import MAX_WORKGROUP_SIZE
from submitgen.system import enforced, own_process
from submitgen.textfmt import dumps, envelope, error_envelope, printable

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        error = ""
        try:
            return super().invoke(ctx)
        except SubmitgenError as e:
            error = str(e)
            if ctx.meta.get(_TRACEBACK):
                traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
            raise click.ClickException(printable(str(e), keep="\n")) from None
        finally:
            _warn_broken_plugins(ctx, error)


def _warn_broken_plugins(ctx: click.Context, error: str) -> None:
    """After a command that read the problem registry: one stderr line per plug-in that did not load
    (`problems` lists them itself; an Error line already naming it is not repeated)."""
    registry = sys.modules.get("submitgen.problems.registry")
    if registry is None or not registry.REGISTRY.loaded or ctx.invoked_subcommand == "problems":
        return
    for broken in registry.REGISTRY.broken:
        if broken.message() != error:
            click.echo(printable(f"Warning: {broken.message()}; not loaded (submitgen problems lists the "
                                 "problems)"), err=True)


_TRACEBACK = "submitgen.traceback"


# --target and --arch follow the backends (submitgen/backends/): the first is the default target,
# each names its arches, its default first
_DEFAULT_TARGET, *_OTHER_TARGETS = BACKENDS.values()
_ARCH_HELP = (f"Target processor: {_DEFAULT_TARGET.default_arch} (default), "
              + ", ".join(a for a in _DEFAULT_TARGET.arches if a != _DEFAULT_TARGET.default_arch)
              + "".join(f"; {', '.join(b.arches)} with --target {b.target}" for b in _OTHER_TARGETS) + ".")


class _Sectioned(click.Command):
    """A command whose --help lists its options in sections (``sections``: title -> parameter
    names, in order); an option no section names is listed last, under "Other options"."""

    def __init__(self, *args, sections: dict[str, tuple[str, ...]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sections = sections

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        options = [p for p in self.get_params(ctx) if isinstance(p, click.Option)]
        records = {p.name: p.get_help_record(ctx) for p in options}
        named = {n for names in self.sections.values() for n in names}
        rest = tuple(n for n in records if n not in named)
        for title, names in (*self.sections.items(), ("Other options", rest)):
            rows = [records[n] for n in names if records.get(n)]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _examples(command: str, *args: str) -> str:
    """A command's epilog: its examples, `submitgen COMMAND ARGS` one a line."""
    return "\b\nExamples:\n" + "\n".join(f"  submitgen {command} {a}".rstrip() for a in args)


_PICK_ARCH = click.option("--arch", metavar="ARCH", help="Pick this arch's bundle entry, and use its facts "
                          "for occupancy (e.g. gfx950).")


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS,
             epilog="\b\nExamples:\n  submitgen build mxfp4-mm\n  submitgen test submission.py\n"
                    "  submitgen bench submission.py\n  submitgen COMMAND --help")
@click.version_option(__version__, prog_name="submitgen")
@click.option("--traceback", "show_traceback", is_flag=True,
              help="On an error, print the stack behind the Error: line (for bug reports).")
@click.pass_context
def cli(ctx: click.Context, show_traceback: bool) -> None:
    """Turn GPU kernels into the single Python file that the GPU MODE leaderboards for AMD
    Instinct MI355X (gfx950) accept: build it, check it, run it and time it."""
    ctx.meta[_TRACEBACK] = show_traceback


@cli.command("inspect", short_help="Show what code objects and submissions hold.",
             epilog=_examples("inspect", "kernel.co", "submission.py --json",
                              "bundle.hsaco --arch gfx950 --kernel gemm"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--json", "as_json", is_flag=True, help="Print the model as JSON (docs/inspect-json.md).")
@click.option("--kernel", "kernels", multiple=True, metavar="NAME",
              help="Show only this kernel (launch name, .name, .symbol or demangled name); repeatable.")
@click.option("--block", type=click.IntRange(1, MAX_WORKGROUP_SIZE), default=None, metavar="N",
              help="Block size for the occupancy estimate (default: the kernel's .reqd_workgroup_size, "
                   "else its max workgroup size).")
@click.option("--lds", type=click.IntRange(0), default=None, metavar="BYTES",
              help="Dynamic LDS per block for the occupancy estimate (default: the submission's "
                   "provenance or a Triton .json sidecar, else 0).")
@_PICK_ARCH
@click.option("--disasm/--no-disasm", default=True, show_default=True,
              help="Count each AMD kernel's instructions (matrix, scratch, memory...) as llvm-objdump >= 20 "
              "lists them, where one is installed (gfx9 code is decoded without running it).")
def inspect_cmd(paths: tuple[str, ...], as_json: bool, kernels: tuple[str, ...], block: int | None,
                lds: int | None, arch: str | None, disasm: bool) -> None:
    """Show what code objects hold: kernels, argument layouts, resources, occupancy, warnings.

    PATH is a code object (.co/.hsaco), a clang offload bundle, or a Python submission that
    embeds one (read statically, never run). Exits 1 when any error-severity finding is shown
    (a loader would refuse the object, or the kernel cannot launch as estimated)."""
    from submitgen.inspection.report import exit_status, inspect_sources, json_text, render_text

    with enforced("inspect", paths):
        items = inspect_sources(paths, arch=arch, kernels=kernels, block=block, lds=lds, disasm=disasm)
        text = json_text(items) if as_json else render_text(items)
    click.echo(text)
    if exit_status(items):
        raise SystemExit(exit_status(items))


@cli.command("toolchain", short_help="List the compilers found and the arches each builds.",
             epilog=_examples("toolchain", "", "--json --compiler /opt/rocm/bin/hipcc"))
@click.option("--json", "as_json", is_flag=True, help="Print the toolchains as JSON.")
@click.option("--compiler", default=None, metavar="PATH", help="Also probe this compiler (listed first).")
@click.option("--arch", "arches", multiple=True, metavar="ARCH",
              help="Arches to probe (default: gfx942 and gfx950); repeatable.")
def toolchain_cmd(as_json: bool, compiler: str | None, arches: tuple[str, ...]) -> None:
    """List the compilers found, in the order they are preferred, with their versions and the
    arches each can build (probed by compiling a tiny kernel)."""
    from submitgen.toolchain.cache import cache_dir
    from submitgen.toolchain.discovery import KNOWN_ARCHES, describe_extras, discover, format_table

    found = discover(compiler=compiler, arches=arches or KNOWN_ARCHES)
    if as_json:
        click.echo(dumps({"cache_dir": str(cache_dir()), "toolchains": [tc.to_json() for tc in found],
                   **describe_extras()}))
    else:
        click.echo(format_table(found, arches or KNOWN_ARCHES))


class _SplitExtraFlags(click.Command):
    """Everything after ``--`` goes to the compiler unchanged."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta["submitgen.extra_flags"] = tuple(args[i + 1:])
            args = args[:i]
        return super().parse_args(ctx, args)


@cli.command("compile", cls=_SplitExtraFlags, short_help="Compile device sources into one code object.",
             epilog=_examples("compile", "gemm.hip -o gemm.co",
                              "gemm.hip --arch gfx942 -D TILE=64 -- -ffast-math"))
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False),
                metavar="SRC...")
@click.option("--arch", default="gfx950", show_default=True, help="Target processor (gfx950, gfx942).")
@click.option("-o", "--output", default=None, metavar="FILE",
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
    from submitgen.files import check_output, file_path, write_output
    from submitgen.toolchain.compile import compile_sources
    from submitgen.toolchain.options import CompileOptions

    paths = [Path(s) for s in sources]
    out = file_path(output if output is not None else Path(sources[0]).stem + ".co", "kernel.co")
    checks = {"what": "the code object", "inputs_are": "the sources"}
    check_output(out, paths, **checks)

    options = CompileOptions(
        arch=arch, opt=opt, defines=defines, include_dirs=tuple(Path(d) for d in include_dirs),
        code_object_version=int(code_object_version) if code_object_version else None,
        extra_flags=ctx.meta.get("submitgen.extra_flags", ()), compiler=compiler, use_cache=not no_cache,
    )
    with enforced("compile", sources):
        result = compile_sources(paths, options)
    if result.cache_warning:
        click.echo(f"Warning: {result.cache_warning}", err=True)
    write_output(out, result.code_object, paths, **checks)
    how = "cached" if result.cache_hit else "compiled"
    click.echo(f"wrote {out} ({len(result.code_object)} bytes, {arch}, {how} with {result.toolchain.name} "
               f"{result.toolchain.version}): kernels {', '.join(result.kernels)}")


_BUILD_SECTIONS = {
    "Output": ("output", "force", "json", "as_json", "compress", "fallback", "no_fallback", "reuse_output"),
    "Kernels": ("kernels", "code_objects", "compiler", "no_cache", "plan_timeout"),
    "Target": ("target", "arch", "launcher", "allow_own_queue"),
    "popcorn-cli's words": ("leaderboard", "gpu", "mode"),
}


@cli.command(cls=_Sectioned, sections=_BUILD_SECTIONS,
             short_help="Build a kernel project into a submission file.",
             epilog=_examples("build", "mxfp4-mm", "--leaderboard amd-mxfp4-mm --gpu MI355X",
                              "mixed-mla -o mla.py --kernels my_kernels/",
                              "mxfp4-mm --co gemm.co --kernels my_kernels/",
                              "mxfp4-mm --target cuda --arch sm_90 -o mm_sm90.py",
                              "reference-kernels/problems/amd/fp8-mm --kernels my_kernels/"))
@click.argument("problem", type=PROBLEM_NAME, required=False)
@click.option("--leaderboard", "leaderboard", type=PROBLEM_NAME, default=None, metavar="NAME",
              help="popcorn-cli's word for PROBLEM: a leaderboard name (amd-mxfp4-mm) or a problem name; "
              "for a problem folder, its leaderboard (default: the round file's).")
@click.option("--gpu", default=None, metavar="GPU",
              help="popcorn-cli's --gpu: checked against the problem's GPU (MI355X); for a problem folder, "
              "which of its round's GPUs (one must be named when the round lists several).")
@click.option("--mode", type=click.Choice(choices(Mode)), default=Mode.LEADERBOARD.value, show_default=True,
              help="popcorn-cli's --mode in the submit line printed after the build (the file is the same).")
@click.option("-o", "--output", default="submission.py", show_default=True, metavar="FILE",
              help="Where to write the submission (a folder, or a path ending in /: FOLDER/submission.py).")
@click.option("--kernels", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Kernel project folder (device sources + launch.py). Default: the bundled one.")
@click.option("--co", "code_objects", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Embed this prebuilt code object (or bundle) instead of compiling. Repeatable.")
@click.option("--arch", help=_ARCH_HELP)
@click.option("--target", type=click.Choice(choices(Target)), default=None,
              help=" ".join(f"{b.target}: {b.summary}." for b in BACKENDS.values())
              + " Default: the one that builds the problem GPU's arch.")
@click.option("--compress", type=click.Choice(choices(Compress)), default=Compress.LZMA.value,
              show_default=True,
              help="How the embedded code objects are compressed before base64 (lzma: the smaller).")
@click.option("--no-fallback", is_flag=True, help="Fail at import instead of running the torch fallback.")
@click.option("--fallback", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              metavar="FILE", help="Embed FILE's plain-torch custom_kernel as the fallback (a problem "
              "folder's build has none without it), e.g. the folder's own submission.py.")
@click.option("--reuse-output", is_flag=True,
              help="Opt-in: return one output tensor per shape instead of a fresh one per call (cheaper "
                   "calls; a caller that keeps an earlier result sees it overwritten).")
@click.option("--launcher", type=click.Choice(tuple(LAUNCHERS)), default=DEFAULT_LAUNCHER, show_default=True,
              help=" ".join(f"{s.name}: {s.summary}." for s in LAUNCHERS.values()))
@click.option("--allow-own-queue", is_flag=True,
              help="Let --launcher aql build for a leaderboard problem. The file runs outside torch's timing "
                   "events (~4 us timing artefact) and must never be submitted.")
@click.option("--compiler", help="Compiler to use (default: discovered; see `submitgen toolchain`).")
@click.option("--no-cache", is_flag=True, help="Recompile even when the cache holds the result.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the result as JSON (docs/json.md) instead of the table.")
@click.option("--force", is_flag=True,
              help="Overwrite -o even when it is not this leaderboard's submitgen file, or was edited since.")
@click.option("--plan-timeout", type=click.FloatRange(min=0, min_open=True, max=86400), default=60.0,
              show_default=True, metavar="SECONDS",
              help="Seconds launch.py may run (its import and every shape) before the build fails.")
def build(problem, leaderboard, gpu, mode, output, kernels, code_objects, arch, target, compress, no_fallback,
          fallback, reuse_output, launcher, allow_own_queue, compiler, no_cache, force, plan_timeout,
          as_json):
    """Compile a kernel project, check it against the code object and the leaderboard rules, and
    write the single-file submission for PROBLEM (one of the problems in the usage line, or its
    leaderboard's amd-* name, also as --leaderboard, or a reference-kernels problem folder holding
    task.yml: its leaderboard and GPU from the round file, or --leaderboard and --gpu), then print
    the popcorn-cli line that submits it."""
    from submitgen.problems.folder import is_folder

    folder = problem is not None and is_folder(problem)
    problem = problem if folder else _one_problem(problem, leaderboard)  # before torch is imported
    from submitgen.files import output_path
    from submitgen.pipeline import BuildOptions
    from submitgen.pipeline import build as run_build
    from submitgen.pipeline.summary import format_summary

    with _json_errors("build", as_json), enforced("build", (problem,), verb="building"):
        result = run_build(BuildOptions(
            problem=problem, gpu=gpu, mode=Mode(mode), output=output_path(output), kernels=kernels,
            code_objects=tuple(code_objects), arch=arch, plan_timeout=plan_timeout,
            target=Target(target) if target else None, leaderboard=leaderboard if folder else None,
            fallback=fallback, compress=Compress(compress), allow_fallback=not no_fallback,
            reuse_output=reuse_output,
            launcher=launcher, allow_own_queue=allow_own_queue, compiler=compiler,
            use_cache=not no_cache, force=force,
        ))
    if as_json:
        from submitgen.pipeline.summary import build_json
        click.echo(dumps(envelope("build", True, build_json(result))))
    else:
        click.echo(format_summary(result))


@contextlib.contextmanager
def _json_errors(command: str, as_json: bool):
    """With --json, a domain error is the error envelope on stdout (exit 1), not an Error: line."""
    try:
        yield
    except SubmitgenError as e:
        if not as_json:
            raise
        click.echo(dumps(error_envelope(command, str(e))))
        raise SystemExit(1) from None



def _one_problem(problem: str | None, leaderboard: str | None) -> str:
    """PROBLEM or --leaderboard (popcorn-cli's word), naming one problem (an unknown name is refused
    before anything imports torch)."""
    from submitgen.problems.registry import check_name, get_problem

    if problem is None and leaderboard is None:
        raise click.UsageError("name the problem: PROBLEM or --leaderboard NAME")
    for name in (problem, leaderboard):
        if name is not None:
            check_name(name)
    if problem is not None and leaderboard is not None and \
            get_problem(problem) is not get_problem(leaderboard):
        raise click.UsageError(f"PROBLEM {problem} and --leaderboard {leaderboard} name different problems")
    return problem if problem is not None else leaderboard  # type: ignore[return-value]


_PROBLEM_HELP = ("Leaderboard to check against (a problem above, its amd-* leaderboard name, or another "
                 "leaderboard lint knows); default: the file's header.")


def _shapes_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--shapes checked for its form before anything heavy is imported (a usage error, exit 2)."""
    from submitgen.evaluate.shapes import check_selection

    if value is not None:
        try:
            check_selection(value)
        except SubmitgenError as e:
            raise click.BadParameter(str(e).removeprefix("--shapes ")) from None
    return value




def _run_and_report(file: str, problem: str | None, no_lint: bool, fmt, run,
                    require_kernel: bool = False, json_fields=None) -> None:
    """``test`` and ``bench``: warn (--no-lint) or stop on lint, ``run()``, print ``fmt(report)``
    (with --json, the envelope of ``json_fields(report, require_kernel)``), exit with the report's
    code (0 passed, 1 failed or, with --require-kernel, kernel not run, 3 cannot run here)."""
    from submitgen.errors import LintFailed
    from submitgen.evaluate.fmt import require_kernel_line

    command = click.get_current_context().command.name
    with _json_errors(command, json_fields is not None):
        try:
            if no_lint:  # the failed rules as warnings instead of stopping
                from submitgen.lint import lint_file, render_findings

                for line in render_findings(lint_file(file, problem=problem), file):
                    click.echo(f"warning (--no-lint): {line}", err=True)
            report = run()
        except LintFailed as e:  # the failed rules (with --json on stderr), then one Error: line
            for line in e.lines:
                click.echo(line, err=json_fields is not None)
            raise SubmitgenError(f"{e}: not run, because it fails lint (the leaderboard would refuse it); "
                                 "pass --no-lint to run it anyway for a local experiment") from None
    if json_fields is not None:
        fields = json_fields(report, require_kernel)
        click.echo(dumps(envelope(command, fields["exit_code"] == 0, fields)))
        if fields["exit_code"]:
            raise SystemExit(fields["exit_code"])
        return
    for line in fmt(report):  # a submission's exception text, eval.py's output: escapes shown as text
        click.echo(printable(line, keep="\n"))
    why = require_kernel_line(report) if require_kernel and report.cannot_run is None else None
    if why:
        click.echo(why)
    exit_code = report.exit_code  # a method of the built-in harness's reports, eval.py's a number
    code = exit_code(require_kernel) if callable(exit_code) else exit_code
    if code:
        raise SystemExit(code)


def _stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def _progress_text(line: str) -> None:
    """Progress goes to stderr, and only when it is a terminal; results go to stdout."""
    if _stderr_is_terminal():
        click.echo(printable(line), err=True)


def _announce(line: str) -> None:
    click.echo(printable(line), err=True)


def _progress(result, finished: int, count: int) -> None:
    from submitgen.evaluate.fmt import progress_line

    _progress_text(progress_line(result, finished, count))


_MODE_HELP = "eval.py's mode: test, benchmark or leaderboard (the ranked run)."


def _given(ctx: click.Context, *names: str) -> list[str]:
    """The options among ``names`` that the command line (or the environment) set."""
    from click.core import ParameterSource

    return [f"--{n.replace('_', '-')}" for n in names
            if ctx.get_parameter_source(n) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)]


def _run_reference(ctx: click.Context, file: str, folder: str | None, mode: str, problem: str | None,
                   seed: int | None, timeout: float, no_lint: bool, as_json: bool,
                   builtin_only: tuple[str, ...]) -> bool:
    """With --reference-kernels DIR (or --problem DIR, a problem folder): run DIR's own eval.py and
    return True; False when neither names one."""
    from submitgen.errors import EvaluateError
    from submitgen.evaluate.fmt import format_reference_report
    from submitgen.evaluate.refkernels import run_reference
    from submitgen.problems.folder import is_folder

    if folder is None and problem is not None and is_folder(problem):
        folder = problem
    if folder is None:
        return False
    if as_json:
        raise EvaluateError("--json does not apply with --reference-kernels: eval.py's own report is "
                            "printed as it gives it")
    extra = _given(ctx, *builtin_only)
    if extra:
        raise EvaluateError(f"{', '.join(extra)} do(es) not apply with --reference-kernels: eval.py runs "
                            "task.yml's cases of the mode, with its own timing")
    limit = timeout if _given(ctx, "timeout") else None
    _run_and_report(file, problem, no_lint, format_reference_report, lambda: run_reference(
        file, folder, mode=mode, problem=problem, seed=seed, timeout_s=limit, lint=not no_lint,
        progress=_progress_text))
    return True


@cli.command("lint", short_help="Check a submission against the leaderboard's rules.",
             epilog=_examples("lint", "submission.py", "my_file.py --leaderboard amd-mxfp4-mm --json"))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--problem", "--leaderboard", "problem", default=None, type=PROBLEM_NAME, help=_PROBLEM_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON (docs/json.md).")
def lint_cmd(file: str, problem: str | None, as_json: bool) -> None:
    """Check FILE against the leaderboard's rules without running it: the #!POPCORN header as
    popcorn-cli reads it, the banned word (any case), size and payload budget, KernelGuard's verdict
    (when the kernelguard package is installed), a module-level custom_kernel and kernels on an HSA
    queue of their own. Prints one line per finding (FILE:LINE: RULE
    [SOURCE]: message (fix: ...)), then KernelGuard's verdict and version, and exits 1 if any rule
    of popcorn-cli, kernelbot, KernelGuard or eval.py fails (a reviewer's policy only warns)."""
    from submitgen.lint import lint_file_report, render_findings

    with _json_errors("lint", as_json), enforced("lint", (file,)):
        report = lint_file_report(file, problem=problem)
    if as_json:
        from submitgen.textfmt import lint_fields

        click.echo(dumps(envelope("lint", report.passed, lint_fields(file, report.payload.problem, report))))
        raise SystemExit(0 if report.passed else 1)
    for line in render_findings(report.errors + report.warnings, file):
        click.echo(line)
    click.echo(f"{file}: {report.kernelguard.summary()}")
    if report.errors:
        raise SystemExit(1)
    click.echo(f"{file}: lint passed; {report.payload.summary()}")


def _run_options(shapes: str):
    """Options that `test` and `bench` share (``shapes``: the default of --shapes)."""
    options = (
        click.option("--problem", "--leaderboard", "problem", type=PROBLEM_NAME, help=_PROBLEM_HELP),
        click.option("--shapes", default=shapes, show_default=True, metavar="WHICH", callback=_shapes_option,
                     help="test, benchmark, all, or a subset by index: 'test:0,2', 'benchmark:0-3'."),
        click.option("--shape", "custom", multiple=True, metavar="K=V,...", help="Run this shape instead of "
                     "--shapes, e.g. 'm=8,n=256,k=512,seed=1'; repeatable."),
        click.option("--seed", type=int, default=None, help="Mix this seed into every shape's seed, as the "
                     "leaderboard does with its secret seed."),
        click.option("--reference-kernels", "reference_kernels", default=None, metavar="DIR", help="Run the "
                     "leaderboard's own eval.py of this reference-kernels problem folder (holding task.yml) "
                     "instead of the built-in harness (docs/reference-kernels.md)."),
        click.option("--timeout", type=click.FloatRange(min=1), default=900, show_default=True,
                     help="CPU seconds one shape's process may use (a loaded machine does not count against "
                     "it), or wall seconds in which it waits, asleep (the import: at least 300); with "
                     "--reference-kernels, the whole eval.py run (default: task.yml's limit)."),
        click.option("--no-lint", is_flag=True, help="Run even if the file fails lint (local experiments, "
                     "e.g. an --launcher aql build); the failed rules are printed first as warnings."),
        click.option("--require-kernel", is_flag=True, help="Exit 1 unless the kernel itself ran (not the "
                     "pure-torch fallback, not a dry run, not a CPU-only run)."),
        click.option("--json", "as_json", is_flag=True, help="Print the results as JSON (docs/json.md) "
                     "instead of the table; progress stays on stderr."),
    )

    def apply(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn
    return apply


@cli.command("test", short_help="Run a submission on every shape and check its outputs.",
             epilog=_examples("test", "submission.py", "submission.py --shapes all --require-kernel",
                              "submission.py --shape m=8,n=2112,k=7168,seed=1",
                              "submission.py --reference-kernels ../problems/amd_202602/mxfp4-mm",
                              "--interpret kernels/mxfp4_mm --problem mxfp4-mm"))
@click.argument("file", type=click.Path(dir_okay=False), required=False, metavar="FILE")
@click.option("--interpret", default=None, metavar="PROJECT_DIR", type=click.Path(file_okay=False),
              help="Instead of FILE: run this Triton kernel project's own plan and kernels on the CPU under "
                   "Triton's interpreter and check them against the reference (default: the problem's "
                   "smallest or a small shape; --timeout default 300 s).")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard"]), default="test",
              show_default=True, help=_MODE_HELP + " Other than test: with --reference-kernels only.")
@_run_options("test")
@click.pass_context
def test_cmd(ctx: click.Context, file: str, problem: str | None, shapes: str, custom: tuple[str, ...],
             seed: int | None, reference_kernels: str | None, mode: str, timeout: float,
             no_lint: bool, require_kernel: bool, as_json: bool, interpret: str | None) -> None:
    """Lint FILE, then run its custom_kernel on every shape in a fresh process, the way the
    leaderboard's evaluator does, and check each output against the local reference at the
    leaderboard's tolerance (and that the inputs were not changed). Says which backend ran.
    Exits 1 on any failure, 3 when the file needs a module this machine lacks. With
    --reference-kernels DIR: runs DIR's own eval.py instead; exits 3 when its reference cannot
    run on this machine. With --interpret PROJECT_DIR instead of FILE: runs a Triton project's own
    plan and kernels under Triton's interpreter on the CPU, checked the same way (docs/evaluate.md)."""
    from submitgen.errors import EvaluateError
    from submitgen.evaluate import run_test
    from submitgen.evaluate.fmt import format_test_report, test_fields

    if interpret is not None and file is not None:
        raise click.UsageError("give FILE or --interpret PROJECT_DIR, not both")
    if interpret is None and file is None:
        raise click.MissingParameter(ctx=ctx, param=next(p for p in ctx.command.params if p.name == "file"))
    with _json_errors("test", as_json):
        if interpret is not None and (reference_kernels is not None or no_lint):
            raise EvaluateError("--interpret runs a kernel project, not a file: --reference-kernels and "
                                "--no-lint do not apply")
        if interpret is None:
            if _run_reference(ctx, file, reference_kernels, mode, problem, seed, timeout, no_lint, as_json,
                              ("shapes", "custom", "require_kernel")):
                return
            if mode != "test":
                bench = "submitgen bench" + (f" --mode {mode}" if mode == "leaderboard" else "")
                raise EvaluateError(f"test --mode {mode} needs --reference-kernels DIR; the built-in harness "
                                    f"times with `{bench}`")
        own = interpret is not None  # --interpret picks its own shapes and time limit unless given
        _run_and_report(interpret or file, problem, no_lint, format_test_report, lambda: run_test(
            interpret or file, problem=problem, shapes=None if own and not _given(ctx, "shapes") else shapes,
            custom=custom, seed=seed, timeout_s=None if own and not _given(ctx, "timeout") else timeout,
            lint=not no_lint, progress=_progress, announce=_announce, interpret=interpret is not None),
            require_kernel, test_fields if as_json else None)


@cli.command("bench", short_help="Time a submission on every benchmark shape.",
             epilog=_examples("bench", "submission.py", "submission.py --mode leaderboard",
                              "submission.py --shapes benchmark:0-2 --iters 20 --json"))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--iters", type=click.IntRange(min=1), default=None,
              help="A fixed number of timed calls per shape (default: eval.py's rule, see --mode).")
@click.option("--max-time", type=click.FloatRange(min=0), default=120.0, show_default=True,
              help="Seconds of wall time per shape after which timing stops (eval.py's limit).")
@click.option("--flush-mib", type=click.IntRange(min=0), default=None,
              help="GPU only: MiB filled by torch.randn in a fresh tensor before each timed call to "
                   "flush the caches (default: eval.py's 64000 MiB, 62.5 GiB; on a GPU whose memory "
                   "cannot hold it, the largest that fits, said on stderr and in --json). A size given "
                   "here that does not fit fails the shape.")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard"]), default="benchmark",
              show_default=True, help=_MODE_HELP + " leaderboard: fresh inputs (seed += 13) for every "
              "timed call and every output checked. test: with --reference-kernels only.")
@click.option("--force", is_flag=True, help="Time the pure-torch fallback on a CPU too (by default it "
              "gets one checked call and no timing).")
@_run_options("benchmark")
@click.pass_context
def bench_cmd(ctx: click.Context, file: str, problem: str | None, shapes: str, custom: tuple[str, ...],
              iters: int | None, max_time: float, flush_mib: int | None, seed: int | None,
              reference_kernels: str | None, mode: str, force: bool, timeout: float, no_lint: bool,
              require_kernel: bool, as_json: bool) -> None:
    """Lint FILE, then time its custom_kernel on every benchmark shape in a fresh process: runs,
    mean, std, err, best and worst, stopping as eval.py does (at least 3 runs, until the error of
    the mean is below 0.1 %, the time budget or 120 s is spent). With a GPU: device events,
    flushing the cache before each call like the leaderboard. Without one: host wall time,
    labelled host-only, and a submitgen file's pure-torch fallback is checked once but not timed
    (--force times it). Exits 1 if a shape errors or gives a wrong output, 3 when the file needs a
    module this machine lacks. With --reference-kernels DIR: runs DIR's own eval.py instead;
    exits 3 when its reference cannot run on this machine."""
    from submitgen.errors import EvaluateError
    from submitgen.evaluate import run_bench
    from submitgen.evaluate.fmt import bench_fields, format_bench_report

    with _json_errors("bench", as_json):
        if _run_reference(ctx, file, reference_kernels, mode, problem, seed, timeout, no_lint, as_json,
                          ("shapes", "custom", "iters", "max_time", "flush_mib", "force", "require_kernel")):
            return
        if mode == "test":
            raise EvaluateError("bench --mode test needs --reference-kernels DIR; the built-in harness "
                                "checks with `submitgen test`")
        _run_and_report(file, problem, no_lint, format_bench_report, lambda: run_bench(
            file, problem=problem, shapes=shapes, custom=custom, seed=seed, iters=iters,
            max_time_s=max_time, flush_mib=flush_mib, mode=mode, timeout_s=timeout, lint=not no_lint,
            force=force, progress=_progress, announce=_announce), require_kernel,
            bench_fields if as_json else None)


@cli.command("problems", short_help="List the problems and where each comes from.",
             epilog=_examples("problems", "", "reference-kernels/problems/amd/fp8-mm"))
@click.argument("folders", nargs=-1, metavar="[FOLDER]...")
def problems_cmd(folders: tuple[str, ...]) -> None:
    """List the problems every command knows: leaderboard, GPU, and where each comes from (built
    in, or a plug-in of the `submitgen.problems` entry point group and its package; docs/plugins.md),
    then the leaderboards lint knows without a problem. A plug-in that did not load is listed with
    the reason, and the exit status is 1. With FOLDER (a reference-kernels problem folder): its
    row only, as build reads it (leaderboard and GPU from the round file, shapes, arch)."""
    from submitgen.problems.listing import format_problems

    lines, broken = format_problems(folders)
    for line in lines:
        click.echo(line)
    if broken:
        raise SystemExit(1)


def _fail_on_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    from submitgen.diff.compare import parse_fail_on

    try:
        return parse_fail_on(value)
    except SubmitgenError as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1]) from None


@cli.command("diff", short_help="Show what changed between two builds.",
             epilog=_examples("diff", "old.py new.py", "old.co new.co --fail-on spills,occupancy",
                              "old.py new.py --pair mm_m16=mm_m32 --json"))
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option("--kernel", default=None, metavar="NAME",
              help="Compare only this kernel (launch name, .name, .symbol or demangled).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (structure: docs/diff-json.md).")
@click.option("--all", "show_all", is_flag=True, help="Also show the fields that did not change.")
@click.option("--block", type=click.IntRange(1, MAX_WORKGROUP_SIZE), default=None, metavar="N",
              help="Block size for occupancy (default: the launch plan's, else the max workgroup size).")
@_PICK_ARCH
@click.option("--fail-on", "fail_on", default=None, callback=_fail_on_option, metavar="RULES",
              help="Exit 1 if a listed measure got worse (spills,scratch,occupancy,lds,args), "
                   "or if nothing was compared.")
@click.option("--pair", "pairs", multiple=True, metavar="OLD=NEW",
              help="Compare kernel OLD of the first input with kernel NEW of the second; repeatable.")
def diff_cmd(old: str, new: str, kernel: str | None, as_json: bool, show_all: bool, block: int | None,
             arch: str | None, fail_on: tuple[str, ...], pairs: tuple[str, ...]) -> None:
    """Show what changed between two builds: registers, spills, scratch, LDS, occupancy, code
    size, kernarg layout, max workgroup size, target. Kernels are paired by --pair, by launch
    name (a submission's Triton specializations: mm_m16, mm_m32...; else the kernel's name),
    else one-to-one when each side holds one kernel.

    OLD and NEW are each a code object, a clang offload bundle, or a Python submission (read
    statically, never run). With --fail-on, exits 1 when a listed measure got worse."""
    from submitgen.diff.compare import diff_sources, parse_pairs
    from submitgen.diff.text import render_text, to_json

    with enforced("diff", (old, new)):
        result = diff_sources(old, new, kernel=kernel, block=block, arch=arch, fail_on=fail_on,
                              pairs=parse_pairs(pairs))
        shown = to_json(result) if as_json else render_text(result, show_all=show_all)
    click.echo(dumps(shown) if as_json else shown)
    if result.exit_code:
        raise SystemExit(result.exit_code)


def main() -> None:
    own_process()
    cli.main(prog_name="submitgen")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
