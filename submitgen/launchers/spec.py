"""What a launcher is: the one frozen value (:class:`LauncherSpec`) that says everything the build,
the renderer and the summary need to know of one way an emitted file loads and launches its
kernels (``--launcher``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from submitgen.backends.base import Runtime
from submitgen.errors import LauncherError, OptionError
from submitgen.options import Target

__all__ = ["ImportCost", "LauncherSpec", "OwnQueue", "Runtime"]


@dataclass(frozen=True)
class ImportCost:
    """What a launcher's file does at import beyond ``import torch`` (``{objects}``: what it embeds),
    and what that cost where measured (benchmarks/bench_import.py), always with machine and date."""

    what: str
    figure: str = ""  # "~7 ms"; "" when it was never measured
    machine: str = ""  # "a 2-core x86 machine"
    date: str = ""  # "2026-11-29"
    note: str = ""  # more figures after the measured one ("~0.16 s once the cache holds it")

    def __post_init__(self) -> None:
        if self.figure and not (self.machine and self.date):
            raise LauncherError(f"import cost {self.figure!r}: expected the machine and the date it was "
                              f"measured on, got machine={self.machine!r} date={self.date!r}")

    def text(self, objects: str) -> str:
        what = self.what.format(objects=objects)
        if not self.figure:
            return what
        return f"{what} ({self.figure} on {self.machine}, {self.date}{'; ' + self.note if self.note else ''})"


@dataclass(frozen=True)
class OwnQueue:
    """A launcher that dispatches on a queue of its own, outside torch's timing events: a leaderboard
    build is refused without ``--allow-own-queue`` and carries a loud warning, and its file fails
    one lint rule by design. ``{leaderboard}`` in the texts is the problem's leaderboard."""

    refusal: str
    warning: str
    lint_rule: str


@dataclass(frozen=True)
class LauncherSpec:
    """One launcher: everything that differs between launchers is a field here."""

    name: str  # the --launcher value; the provenance's launcher=
    summary: str  # one phrase for --launcher's help
    # the runtime it binds on each target whose GPUs run its emitted code (a MappingProxy after init)
    runtimes: Mapping[Target, Runtime] = field(hash=False)
    import_cost: ImportCost
    template: str  # its template, under templates/: "launcher/<name>.py.j2"
    # (template variable, file under templates/) of each source pasted into its file as a string
    extra_sources: tuple[tuple[str, str], ...] = ()
    submittable: bool = True  # a leaderboard file may use it: the build prints its submit line
    needs: str = ""  # what its emitted code needs of a target, for the refusal on a target without it
    reuse_output: bool = True  # --reuse-output applies (False: it returns a fresh output per call)
    kernarg_segments: bool = False  # it writes each kernel's whole kernarg segment (hidden arguments too)
    own_queue: OwnQueue | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "runtimes", MappingProxyType(dict(self.runtimes)))
        if not self.runtimes:
            raise LauncherError(f"launcher {self.name!r}: expected at least one target that runs it, "
                                "got none")

    @property
    def targets(self) -> tuple[Target, ...]:
        """The targets whose GPUs run its emitted code."""
        return tuple(self.runtimes)

    def runtime(self, target: Target) -> Runtime:
        """The runtime its file binds on ``target``; OptionError when that target cannot run it."""
        if target not in self.runtimes:
            allowed = ", ".join(f"--target {t}" for t in self.targets)
            needs = self.needs or f"does not run on --target {target}"
            raise OptionError(f"--launcher {self.name} {needs}; it is for {allowed} only")
        return self.runtimes[target]
