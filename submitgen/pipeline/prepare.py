"""Stage 1: check the options against each other and resolve each one once: the problem, the
backend, the launcher (its spec), the compressor, the arch and the kernel project. No later stage
reads an option's string."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from submitgen.backends import BACKENDS, get_backend
from submitgen.errors import OptionError
from submitgen.files import check_output
from submitgen.launchers import DEFAULT, LauncherSpec, get_launcher
from submitgen.options import Compress, Mode, Target, parse
from submitgen.pipeline.frontends import front_ends
from submitgen.pipeline.guard import check_overwrite
from submitgen.pipeline.values import BuildOptions, Prepared
from submitgen.problems import Problem, get_problem
from submitgen.problems.folder import GPU_ARCHES, fallback_source, for_build
from submitgen.project.load import load_project
from submitgen.project.run import check_timeout


def _check_launcher(opts: BuildOptions, launcher: LauncherSpec, leaderboard: str) -> None:
    if launcher.own_queue is not None and leaderboard and not opts.allow_own_queue:
        raise OptionError(launcher.own_queue.refusal.format(leaderboard=leaderboard))
    if opts.reuse_output and not launcher.reuse_output:
        raise OptionError(f"--launcher {launcher.name} returns a fresh output per call; drop --reuse-output")


def _target_arch(opts: BuildOptions, problem: Problem) -> tuple[Target, str]:
    """--target and --arch, else the problem's arch and the backend that builds it."""
    if opts.target is None and opts.arch is None and not problem.arch:
        table = ", ".join(f"{g} -> {a}" for g, a in GPU_ARCHES.items())
        raise OptionError(f"{problem.leaderboard} runs on {problem.gpu}, a GPU submitgen has no arch for "
                          f"({table}); pass --target and --arch")
    arch = opts.arch or problem.arch
    if opts.target is not None:
        target = parse(Target, opts.target, "--target")
        backend = get_backend(target)
        return target, opts.arch or (arch if arch in backend.arches else backend.default_arch)
    return next((Target(t) for t, b in BACKENDS.items() if arch in b.arches), next(iter(Target))), arch


def prepare(opts: BuildOptions) -> Prepared:
    problem = get_problem(opts.problem, leaderboard=opts.leaderboard, gpu=opts.gpu)
    plan_timeout = check_timeout(opts.plan_timeout)
    if problem.folder is not None:
        if opts.kernels is None:
            raise OptionError(f"{opts.problem}: a problem folder has no default kernels; pass --kernels "
                              "PROJECT")

        problem = for_build(problem, timeout=plan_timeout, fallback=opts.fallback)
    elif opts.fallback is not None:
        problem = replace(problem, fallback_text=fallback_source(opts.fallback))
    target, arch = _target_arch(opts, problem)
    launcher = get_launcher(opts.launcher)
    compress = parse(Compress, opts.compress, "--compress")
    mode = parse(Mode, opts.mode, "--mode")
    if opts.gpu is not None and opts.gpu.strip().lower() != problem.gpu.lower():
        raise OptionError(f"--gpu {opts.gpu}: {problem.leaderboard} runs on {problem.gpu}; pass --gpu "
                          f"{problem.gpu} or leave it out")
    backend = get_backend(target)
    runtime = launcher.runtime(backend.target)
    _check_launcher(opts, launcher, problem.leaderboard)
    if problem.tuple_output and launcher.name == "aql":
        raise OptionError(f"--launcher aql returns one output tensor; {problem.name}'s output is a tuple of "
                          f"{problem.tuple_output}: leave --launcher out")
    project = load_project(Path(opts.kernels) if opts.kernels else problem.kernel_project, arch)
    rebuild = rebuild_flags(opts, target=backend.target, arch=arch, compress=compress, launcher=launcher)
    prepared = Prepared(problem, backend, launcher, runtime, compress, mode, arch, project,
                        output=Path(opts.output), code_objects=tuple(map(Path, opts.code_objects)),
                        compiler=opts.compiler, use_cache=opts.use_cache,
                        plan_timeout=plan_timeout,
                        allow_fallback=opts.allow_fallback
                        and (problem.folder is None or opts.fallback is not None),
                        reuse_output=opts.reuse_output, rebuild=rebuild)
    check_output(prepared.output, build_inputs(prepared))
    return replace(prepared, output_seen=check_overwrite(prepared.output, problem.leaderboard, opts.force))


# BuildOptions fields the rebuild line leaves out: where the file goes, and what does not change its
# content (the cache, popcorn-cli's --gpu and --mode, --force).
NOT_REBUILT = frozenset({"problem", "output", "use_cache", "gpu", "mode", "force", "leaderboard"})


def rebuild_flags(opts: BuildOptions, *, target: Target, arch: str, compress: Compress,
                  launcher: LauncherSpec) -> tuple[str, ...]:
    """The options of the build written as the command line's flags, the target, arch, compressor
    and launcher as resolved here (the very values the provenance records): each option not at its
    default, paths by their name only (never paths on this machine). Every field of BuildOptions but
    ``NOT_REBUILT`` is here."""
    default = BuildOptions(problem=opts.problem)

    def name(path: object) -> str | None:
        return Path(path).name if path else None  # type: ignore[arg-type]

    pairs = [("--kernels", name(opts.kernels)), *(("--co", name(co)) for co in opts.code_objects),
             ("--fallback", name(opts.fallback)), ("--target", str(target) if opts.target else None),
             ("--arch", arch if opts.arch else None),
             ("--compress", str(compress) if compress != default.compress else None),
             ("--no-fallback", "" if not opts.allow_fallback else None),
             ("--reuse-output", "" if opts.reuse_output else None),
             ("--launcher", None if launcher.name == DEFAULT else launcher.name),
             ("--allow-own-queue", "" if opts.allow_own_queue else None), ("--compiler", name(opts.compiler)),
             ("--plan-timeout", f"{opts.plan_timeout:g}" if opts.plan_timeout != default.plan_timeout else
              None)]
    return tuple(word for flag, value in pairs if value is not None for word in (flag, value) if word)


def build_inputs(p: Prepared) -> tuple[Path, ...]:
    """Every file the build reads (launch.py, then each front end's inputs): the output may be none
    of them."""
    return (p.project.plan_path, *(path for fe in front_ends() for path in fe.inputs(p)))
