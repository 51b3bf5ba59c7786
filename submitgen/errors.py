"""Domain errors. Every error the user can cause is one of these: the CLI prints its message
on one line (no traceback) and exits non-zero. Messages name the thing, the expected and the
actual value, e.g. ``kernel 'gemm' arg 3: metadata says by_value size 4, plan passes a tensor``."""


class SubmitgenError(Exception):
    """An error shown to the user as one line."""


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


# Triton kernels and HIP headers without ROCm (submitgen/toolchain/triton.py, hipheaders.py)
class TritonMissingError(ToolchainError):
    """A Triton kernel was asked for and the ``triton`` package is not installed."""


class TritonCompileError(CompileError):
    """A Triton kernel could not be loaded or compiled: names the file, the kernel and why."""


class MissingHeaderError(CompileError):
    """A source includes a header that no installed toolchain or wheel provides."""
