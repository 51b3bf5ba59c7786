"""Domain errors: every exception class submitgen raises (HACKING.md, Style). The one outside is
``SgPlanError`` in ``runtime/pack.py``, which is pasted into submissions; the build turns it into a
ValidationError. Areas add their classes at the end, under a one-line comment naming the area."""

from __future__ import annotations

from collections.abc import Sequence


class SubmitgenError(Exception):
    """An error shown to the user as one line."""


class OptionError(SubmitgenError):
    """A command-line or BuildOptions value outside its choices, or options that cannot go together."""


class CodeObjectError(SubmitgenError):
    """A code object (ELF, note, descriptor) is malformed or not what a loader accepts."""


class ContainerError(CodeObjectError):
    """A bundle or Python file does not hold a usable code object."""


class ToolchainError(SubmitgenError):
    """No compiler is available, or it cannot build for the requested target."""


class CompileError(ToolchainError):
    """The compiler rejected a source; the message carries file:line and its own words."""


class ProblemError(SubmitgenError):
    """An unknown leaderboard problem, or inputs that do not fit it."""


class PlanError(SubmitgenError):
    """A kernel project's launch plan is malformed or failed to run."""


class ValidationError(SubmitgenError):
    """A launch plan or a rendered submission breaks a rule; nothing is written."""


class RenderError(SubmitgenError):
    """The submission could not be rendered."""


class OutputError(SubmitgenError):
    """The output path cannot be written (a folder, a device, one of the build's own inputs...)."""


class ProvenanceError(SubmitgenError):
    """A provenance field cannot be written on the one provenance line."""


class UnknownTargetError(SubmitgenError):
    """An architecture name submitgen has no facts for."""


class DiffError(SubmitgenError):
    """Bad ``diff`` options, or inputs that cannot be paired."""


class LintError(SubmitgenError):
    """A lint run could not start: unreadable file, unknown --problem."""


class EvaluateError(SubmitgenError):
    """A test/bench run could not start (no problem, bad shape selection)."""


class LintFailed(SubmitgenError):
    """The submission failed lint; ``lines`` are the rendered findings (``path:LINE: RULE: ...``)."""

    def __init__(self, path: str, findings: Sequence[object], lines: Sequence[str]) -> None:
        self.findings = tuple(findings)
        self.lines = tuple(lines)
        super().__init__(f"{path}: {len(self.findings)} lint failure(s)")


# Triton kernels and HIP headers without ROCm (submitgen/toolchain/triton.py, hipheaders.py)
class TritonMissingError(ToolchainError):
    """A Triton kernel was asked for and the ``triton`` package is not installed."""


class TritonCompileError(CompileError):
    """A Triton kernel could not be loaded or compiled: names the file, the kernel and why."""


class MissingHeaderError(CompileError):
    """A source includes a header that no installed toolchain or wheel provides."""


# Launchers (submitgen/launchers/)
class LauncherError(SubmitgenError):
    """A launcher spec that says too little (no target runs it, a figure without its machine and
    date) or a second launcher of one name."""


# budgets (submitgen/system.py)
class BudgetError(SubmitgenError):
    """A command went past its CPU-time or memory budget (docs/limits.md)."""
