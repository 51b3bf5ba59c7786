"""Stage 1: check the options against each other and resolve each one once: the problem, the
backend, the launcher (its spec), the compressor, the arch and the kernel project. No later stage
reads an option's string."""

from __future__ import annotations

from pathlib import Path

from submitgen.backends import get_backend
from submitgen.errors import OptionError
from submitgen.files import check_output
from submitgen.launchers import LauncherSpec, get_launcher
from submitgen.options import Compress, Mode, Target, parse
from submitgen.pipeline.guard import check_overwrite
from submitgen.pipeline.values import BuildOptions, Prepared
from submitgen.problems import get_problem
from submitgen.project.load import load_project


def _check_launcher(opts: BuildOptions, launcher: LauncherSpec, leaderboard: str) -> None:
    if launcher.own_queue is not None and leaderboard and not opts.allow_own_queue:
        raise OptionError(launcher.own_queue.refusal.format(leaderboard=leaderboard))
    if opts.reuse_output and not launcher.reuse_output:
        raise OptionError(f"--launcher {launcher.name} returns a fresh output per call; drop --reuse-output")


def prepare(opts: BuildOptions) -> Prepared:
    problem = get_problem(opts.problem)
    target = parse(Target, opts.target, "--target")
    launcher = get_launcher(opts.launcher)
    compress = parse(Compress, opts.compress, "--compress")
    mode = parse(Mode, opts.mode, "--mode")
    if opts.gpu is not None and opts.gpu.strip().lower() != problem.gpu.lower():
        raise OptionError(f"--gpu {opts.gpu}: {problem.leaderboard} runs on {problem.gpu}; pass --gpu "
                          f"{problem.gpu} or leave it out")
    backend = get_backend(target)
    runtime = launcher.runtime(backend.target)
    _check_launcher(opts, launcher, problem.leaderboard)
    arch = opts.arch or backend.default_arch
    project = load_project(Path(opts.kernels) if opts.kernels else problem.kernel_project, arch)
    prepared = Prepared(opts, problem, backend, launcher, runtime, compress, mode, arch, project)
    check_output(Path(opts.output), build_inputs(prepared))
    check_overwrite(Path(opts.output), problem.leaderboard, opts.force)
    return prepared


def build_inputs(p: Prepared) -> tuple[Path, ...]:
    """Every file the build reads: the output may be none of them."""
    project = p.project
    return (project.plan_path, *project.sources, *(s.source for s in project.triton),
            *map(Path, p.options.code_objects))
