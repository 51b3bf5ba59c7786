"""Running compilers: stdin closed, a time limit, and the whole process group ended on timeout
(a compiler driver starts children of its own)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from submitgen.errors import ToolchainError
from submitgen.processes.budgets import release_in_child

DEFAULT_TIMEOUT_S = 600.0
INSTALL_HINT = (
    "install the bundled clang with `pip install 'submitgen[toolchain]'` (the ziglang wheel), "
    "or install ROCm and set ROCM_PATH (default /opt/rocm), or pass --compiler PATH"
)


def run_tool(argv: Sequence[str], cwd: Path | None = None, timeout: float = DEFAULT_TIMEOUT_S,
             what: str | None = None, env: Mapping[str, str] | None = None,
             hint: str = "does a source include a FIFO or a device file?",
             stdout_to: Path | None = None) -> subprocess.CompletedProcess:
    """Run one tool to completion and capture its output. stdin is /dev/null, so that a source
    including ``/dev/stdin`` never reads the caller's input; past ``timeout`` seconds the tool and
    everything it started are killed and a ToolchainError names the command. With ``stdout_to``
    the tool's standard output goes to that new file instead (the result's stdout is empty): a
    disassembler's hundreds of MB cost a third of the system time through a file that they cost
    through a pipe."""
    out_file = open(stdout_to, "xb") if stdout_to is not None else None  # noqa: SIM115 (closed below)
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE if out_file is None else out_file,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
                                env=None if env is None else dict(env), preexec_fn=release_in_child)
    except FileNotFoundError as e:
        raise ToolchainError(f"cannot run {argv[0]}: {e.strerror}; {INSTALL_HINT}") from None
    except OSError as e:
        raise ToolchainError(f"cannot run {argv[0]}: {e.strerror or e}") from None
    finally:
        if out_file is not None:
            out_file.close()  # the child holds its own descriptor
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        label = what or " ".join(argv)
        raise ToolchainError(
            f"{label} ran past its time limit of {timeout:g} s and was stopped ({hint})"
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out or "", err)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        proc.communicate(timeout=10)
