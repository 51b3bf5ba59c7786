"""Shared fixtures. Code objects are compiled by the tests themselves with the bundled clang
(the ``ziglang`` wheel), through ``toolchain.compile_sources``, so every test reads real, current
gfx950/gfx942 output built by the product's own path."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _zig(*args: str, cwd: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "ziglang", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{r.stderr}")


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``submitgen ARGS`` in this process, through click's runner (no interpreter of its own, no
    torch import: ~2-5 s of CPU less than ``python -m submitgen``), as a CompletedProcess: the exit
    status, stdout and stderr. For tests that need no fresh process (not budgets, signals or
    imports); an exception other than the CLI's exit is raised here, as the traceback it would be."""
    from click.testing import CliRunner

    from submitgen.cli import cli

    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        r = CliRunner().invoke(cli, list(args), prog_name="submitgen")
    finally:
        os.chdir(before)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return subprocess.CompletedProcess(["submitgen", *args], r.exit_code, r.stdout, r.stderr)


class Forked:
    """``target()`` in a child forked from this test process, which has torch and submitgen imported
    already (~2-4 s of CPU less than a fresh interpreter): its stdout and stderr go to files, ``env``
    replaces its environment, ``argv`` its sys.argv. For what needs a process of its own but no fresh
    interpreter (not budgets, signals or what a first import does); a library the child loads is
    loaded there only, so a stand-in runtime's log starts empty in it. ``wait()`` gives a
    CompletedProcess: the exit status (SystemExit's code; 1 with the traceback on stderr when
    ``target`` raised), stdout and stderr."""

    def __init__(self, target: Callable[[], object], argv: list[str], *, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        import tempfile
        import traceback

        self.argv = argv
        self.files = (tempfile.TemporaryFile(), tempfile.TemporaryFile())  # noqa: SIM115 - closed by wait()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.dup2(self.files[0].fileno(), 1)
                os.dup2(self.files[1].fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's own streams
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                if cwd is not None:
                    os.chdir(cwd)
                sys.argv = list(argv)
                try:
                    target()
                    code = 0
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
                except BaseException:  # noqa: BLE001 - reported as python reports it
                    traceback.print_exc()
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    def wait(self, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """The child's CompletedProcess; with ``timeout`` (wall-clock seconds, a hang catcher only),
        it is killed past it and TimeoutExpired raised."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (done := os.waitpid(self.pid, 0 if deadline is None else os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise subprocess.TimeoutExpired(self.argv, timeout)
            time.sleep(0.05)
        texts = []
        for f in self.files:
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
            f.close()
        return subprocess.CompletedProcess(self.argv, os.waitstatus_to_exitcode(done[1]), *texts)


def run_script(script: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``python SCRIPT ARGS`` in a :class:`Forked` child."""
    import runpy

    return Forked(lambda: runpy.run_path(str(script), run_name="__main__"), [str(script), *args], env=env,
                  cwd=cwd).wait(timeout)


def forked_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Forked:
    """``submitgen ARGS`` started in a :class:`Forked` child (a process of its own, as
    ``python -m submitgen`` is); ``.wait()`` for its CompletedProcess."""
    from submitgen.cli import cli

    return Forked(lambda: cli.main(list(args), prog_name="submitgen"), ["submitgen", *args], env=env, cwd=cwd)


@pytest.fixture(scope="session", autouse=True)
def _fake_tensor_mode_imported() -> None:
    """A build checks its plan once more under torch's FakeTensorMode, in a child it forks; the
    mode's first use imports torch._dynamo (~1.7 s of CPU). Used once here, in each test process,
    so every build it runs or forks (build(), the CLI through click's runner, test_build_kill9's
    forked builds) inherits the import instead of paying it again."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    FakeTensorMode()


@pytest.fixture(scope="session")
def compile_co(tmp_path_factory):
    """compile_co(source_text, arch="gfx950", name="k.hip", flags=()) -> bytes of a linked ET_DYN
    code object."""
    from submitgen.toolchain.compile import compile_sources

    cache: dict[tuple, bytes] = {}
    cache_root = tmp_path_factory.mktemp("compile-cache")

    def build(source: str, arch: str = "gfx950", name: str = "k.hip", flags: tuple[str, ...] = ()) -> bytes:
        key = (source, arch, name, flags)
        if key in cache:
            return cache[key]
        d = tmp_path_factory.mktemp("co")
        (d / name).write_text(source)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SUBMITGEN_CACHE_DIR", str(cache_root))
            result = compile_sources([d / name], arch=arch, extra_flags=flags)
        cache[key] = result.code_object
        return cache[key]

    return build


# --------------------------------------------------------------------------- issue 2: inspect
# Kernels of known shapes, compiled by the tests (see tests/test_codeobject.py for what each
# one must report), and a writer of clang offload bundles.

HIP_ARGS = r"""
struct Params { int a; float b; long long c; };  // 16 bytes, align 8
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void many_args(float* __restrict__ out, const float* __restrict__ in, int n, Params p, double d,
               char c, unsigned long long big, const short* s) {
  int i = __builtin_amdgcn_workitem_id_x()
        + __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x();
  if (i < n) out[i] = in[i] * p.b + p.a + p.c + d + c + big + s[i];
}
template <int N> __attribute__((global, amdgpu_flat_work_group_size(1, 128)))
void scale(float* x, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] *= N;
}
template __attribute__((global)) void scale<4>(float*, int);
"""

HIP_BIG = r"""
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void big_lds(float* out, int n) {
  __attribute__((shared)) static float lds[40000];  // 160000 bytes: over 150 KiB, under gfx950's 160 KiB
  int t = __builtin_amdgcn_workitem_id_x();
  for (int i = t; i < 40000; i += 256) lds[i] = i * 0.5f;
  __builtin_amdgcn_s_barrier();
  out[t] = lds[(t * 97 + n) % 40000];
}
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 64)))
void hi_vgpr(float* out) {
  asm volatile("v_mov_b32 v255, 0" ::: "v255");
  asm volatile("v_accvgpr_write_b32 a31, 0" ::: "a31");
  out[0] = 1.0f;
}
"""

OPENCL = r"""
kernel void cl_axpy(global float* restrict y, global const float* x, float a, int n, local float* tile) {
  int l = __builtin_amdgcn_workitem_id_x();
  int i = l + __builtin_amdgcn_workgroup_id_x() * 64;
  tile[l] = x[i];
  __builtin_amdgcn_s_barrier();
  if (i < n) y[i] += a * tile[l];
}
"""


def compile_opencl(source: str, arch: str, tmp: Path) -> bytes:
    """OpenCL C without the default header (the ziglang wheel has none), with arg info."""
    (tmp / "k.cl").write_text(source)
    _zig(
        "clang",
        "-x",
        "cl",
        "-cl-std=CL2.0",
        "-cl-no-stdinc",
        "-cl-kernel-arg-info",
        "-target",
        "amdgcn-amd-amdhsa",
        f"-mcpu={arch}",
        "-nogpulib",
        "-O3",
        "-S",
        "k.cl",
        "-o",
        "k.s",
        cwd=tmp,
    )
    _zig("clang", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-c", "k.s", "-o", "k.o", cwd=tmp)
    _zig("ld.lld", "-shared", "k.o", "-o", "k.co", cwd=tmp)
    return (tmp / "k.co").read_bytes()


def make_bundle(entries: list[tuple[str, bytes]], align: int = 4096) -> bytes:
    """An uncompressed clang offload bundle (ClangOffloadBundler.rst layout)."""
    import struct as _struct

    header = b"__CLANG_OFFLOAD_BUNDLE__" + _struct.pack("<Q", len(entries))
    table_size = len(header) + sum(24 + len(eid) for eid, _ in entries)
    offsets, pos = [], table_size
    for _, blob in entries:
        pos = -(-pos // align) * align if blob else pos
        offsets.append(pos)
        pos += len(blob)
    out = bytearray(header)
    for (eid, blob), off in zip(entries, offsets):
        out += _struct.pack("<QQQ", off, len(blob), len(eid)) + eid.encode()
    for (_, blob), off in zip(entries, offsets):
        out += b"\0" * (off - len(out)) + blob
    return bytes(out)


@pytest.fixture(scope="session")
def cos(compile_co, tmp_path_factory):
    """Named code objects of known shapes (bytes)."""
    return {
        "args_v6": compile_co(HIP_ARGS, "gfx950"),
        "args_v5": compile_co(HIP_ARGS, "gfx950", flags=("-mcode-object-version=5",)),
        "args_v4_942": compile_co(HIP_ARGS, "gfx942", flags=("-mcode-object-version=4",)),
        "args_942": compile_co(HIP_ARGS, "gfx942"),
        "big": compile_co(HIP_BIG, "gfx950", flags=("-mcode-object-version=5",)),
        "opencl": compile_opencl(OPENCL, "gfx950", tmp_path_factory.mktemp("cl")),
    }


@pytest.fixture(scope="session")
def bundle(cos):
    """Host + gfx942 + gfx950 entries."""
    return make_bundle([
        ("host-x86_64-unknown-linux-gnu-", b""),
        ("hipv4-amdgcn-amd-amdhsa--gfx942", cos["args_942"]),
        ("hipv4-amdgcn-amd-amdhsa--gfx950", cos["args_v6"]),
    ])


def build_stub(tmp_path_factory, name: str) -> Path:
    """Compile a stand-in runtime, tests/<name>/<name>.c, into lib<name>.so (gcc, warnings as errors)."""
    lib = tmp_path_factory.mktemp(name) / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(lib),
                    str(REPO / "tests" / name / f"{name}.c")], check=True)
    return lib


def embedded_triton(text: str) -> dict:
    """The TRITON literal of an emitted file (as compiled for its arch), read as data."""
    (node,) = [n for n in ast.parse(text).body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TRITON"]
    value = node.value  # sg_frozen({...}): read-only in the file, its argument is the table
    return ast.literal_eval(value.args[0] if isinstance(value, ast.Call) else value)


@pytest.fixture(scope="module")
def toy_problems():
    """The toy problems (toy-add, and toy-noclone whose eval hands the very inputs over) registered
    for one test module: ``pytestmark = pytest.mark.usefixtures("toy_problems")``."""
    import toy_noclone_problem
    import toy_problem

    from submitgen.problems import register, unregister

    register(toy_problem.PROBLEM)
    register(toy_noclone_problem.PROBLEM)
    yield
    unregister("toy-add")
    unregister("toy-noclone")


DEFAULT_PROBLEMS = ("mxfp4-mm", "mixed-mla", "moe-mxfp4")


@pytest.fixture(scope="session", params=DEFAULT_PROBLEMS)
def default_build(request, tmp_path_factory):
    """Each problem's default build for its leaderboard's GPU (gfx950), built once per session
    (each is seconds of Triton compiles): the BuildResult, its file at ``.output``."""
    pytest.importorskip("triton", reason="the default projects are Triton")
    from submitgen.pipeline import BuildOptions, build

    out = tmp_path_factory.mktemp(request.param) / "submission.py"
    return build(BuildOptions(problem=request.param, output=out))


@pytest.fixture(scope="session", params=DEFAULT_PROBLEMS)
def default_build_sm90(request, tmp_path_factory):
    """Each problem's default build for sm_90 (--target cuda --arch sm_90), built once per session."""
    pytest.importorskip("triton", reason="the default projects are Triton")
    from submitgen.options import Target
    from submitgen.pipeline import BuildOptions, build

    out = tmp_path_factory.mktemp(f"{request.param}-sm90") / "submission.py"
    return build(BuildOptions(problem=request.param, output=out, target=Target.CUDA, arch="sm_90"))


def kernelguard_line(path: object, verdict: str = "valid") -> str:
    """The line lint prints about KernelGuard for ``path``: its verdict with its version, or that it is
    not installed (CI installs it: the [kernelguard] extra)."""
    import importlib.metadata

    try:
        return f"{path}: KernelGuard {importlib.metadata.version('kernelguard')}: {verdict}"
    except importlib.metadata.PackageNotFoundError:
        return (f"{path}: KernelGuard: not installed, so its check did not run (pip install "
                "'submitgen[kernelguard]')")
