"""Stage 1: check the options against each other and resolve the problem, backend, arch and
kernel project."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from submitgen.backends import get_backend, targets_allowing
from submitgen.errors import OptionError
from submitgen.files import check_output
from submitgen.options import Compress, Launcher, Mode, Target, parse
from submitgen.pipeline.guard import check_overwrite
from submitgen.pipeline.values import BuildOptions, Prepared
from submitgen.problems import get_problem
from submitgen.project.load import load_project

OWN_QUEUE_REFUSAL = (
    "--launcher aql dispatches AQL packets on an HSA queue of its own, outside torch's timing events: "
    "the leaderboard's events would time ~4 us regardless of what the kernel computes, and the "
    "organizers said they would disqualify such entries. {leaderboard} is a leaderboard problem, so "
    "this build is refused; pass --allow-own-queue to build it for local experiments only, and never "
    "submit the file"
)
# What each launcher's emitted code needs of the target, for the refusal when a target lacks it.
LAUNCHER_NEEDS = {
    Launcher.CPP: "builds a HIP host extension",
    Launcher.AQL: "dispatches through the HSA runtime",
}


def _check_launcher(opts: BuildOptions, launchers: frozenset[Launcher], leaderboard: str) -> None:
    if opts.launcher not in launchers:
        allowed = ", ".join(f"--target {t}" for t in targets_allowing(opts.launcher))
        needs = LAUNCHER_NEEDS[opts.launcher]
        raise OptionError(f"--launcher {opts.launcher} {needs}; it is for {allowed} only")
    if opts.launcher == Launcher.AQL:
        if leaderboard and not opts.allow_own_queue:
            raise OptionError(OWN_QUEUE_REFUSAL.format(leaderboard=leaderboard))
        if opts.reuse_output:
            raise OptionError("--launcher aql returns a fresh output per call; drop --reuse-output")


def prepare(opts: BuildOptions) -> Prepared:
    problem = get_problem(opts.problem)
    opts = replace(
        opts,
        target=parse(Target, opts.target, "--target"),
        launcher=parse(Launcher, opts.launcher, "--launcher"),
        compress=parse(Compress, opts.compress, "--compress"),
        mode=parse(Mode, opts.mode, "--mode"),
    )
    if opts.gpu is not None and opts.gpu.strip().lower() != problem.gpu.lower():
        raise OptionError(f"--gpu {opts.gpu}: {problem.leaderboard} runs on {problem.gpu}; pass --gpu "
                          f"{problem.gpu} or leave it out")
    backend = get_backend(opts.target)
    _check_launcher(opts, backend.launchers, problem.leaderboard)
    arch = opts.arch or backend.default_arch
    project = load_project(Path(opts.kernels) if opts.kernels else problem.kernel_project, arch)
    prepared = Prepared(opts, problem, backend, arch, project)
    check_output(Path(opts.output), build_inputs(prepared))
    check_overwrite(Path(opts.output), problem.leaderboard, opts.force)
    return prepared


def build_inputs(p: Prepared) -> tuple[Path, ...]:
    """Every file the build reads: the output may be none of them."""
    project = p.project
    return (project.plan_path, *project.sources, *(s.source for s in project.triton),
            *map(Path, p.options.code_objects))
