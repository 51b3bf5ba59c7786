"""Find a compiler that can build AMDGPU code objects.

Discovery order (the first toolchain that can build the requested arch wins):

1. an explicit ``compiler`` (a path or a name on PATH);
2. ROCm at ``$ROCM_PATH`` and ``/opt/rocm``: ``bin/hipcc``, ``bin/amdclang++``, ``llvm/bin/clang``;
3. a ``clang`` on PATH, kept only if it really compiles a tiny kernel for the arch;
4. the clang and ``ld.lld`` bundled in the ``ziglang`` wheel (``pip install 'submitgen[toolchain]'``).

Each tool's version and the arches it can build are probed once and remembered per tool file
(path, mtime, size) in the cache folder, so that later runs start no process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from submitgen.errors import ToolchainError, TritonMissingError
from submitgen.files import private_dir
from submitgen.system import INSTALL_HINT, run_tool
from submitgen.toolchain import hipheaders, triton
from submitgen.toolchain.cache import CACHE_FORMAT, cache_dir, write_cache_file

KNOWN_ARCHES: tuple[str, ...] = ("gfx942", "gfx950")
ROCM_DEFAULT = Path("/opt/rocm")
PROBE_TIMEOUT_S = 120.0
_PROBE_SOURCE = 'extern "C" __attribute__((global)) void submitgen_probe(int* p) { *p = 1; }\n'

Argv = tuple[str, ...]


@dataclass(frozen=True)
class Toolchain:
    """One way of building code objects. ``hip`` runs HIP sources, ``clang`` OpenCL C and
    assembly, ``linker`` links objects; each is an argv prefix."""

    origin: str  # "explicit", "rocm", "path" or "bundled"
    hip: Argv
    clang: Argv
    linker: Argv
    version: str  # first line of the compiler's --version
    bare: bool  # no HIP headers/device libraries: builds with -nogpuinc -nogpulib
    arches: tuple[str, ...]  # of the probed arches, those it built a kernel for
    identity: str = field(repr=False)  # sha256 of the tools' paths and full version output
    probe_errors: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (arch, why not)

    @property
    def name(self) -> str:
        return " ".join(Path(a).name if i == 0 else a for i, a in enumerate(self.hip))

    def to_json(self) -> dict:
        return {
            "origin": self.origin,
            "compiler": list(self.hip),
            "clang": list(self.clang),
            "linker": list(self.linker),
            "version": self.version,
            "headers": "none (-nogpuinc -nogpulib)" if self.bare else "HIP (ROCm)",
            "arches": list(self.arches),
        }


def bundled_zig() -> Path | None:
    """The zig executable of the ziglang wheel, or None when the wheel is not installed."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        for exe in ("zig", "zig.exe"):
            p = Path(loc) / exe
            if p.is_file():
                return p
    return None


def is_executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _rocm_roots() -> list[Path]:
    env = os.environ.get("ROCM_PATH")
    roots = [Path(env)] if env else []
    roots.append(ROCM_DEFAULT)
    return list({str(r): r for r in roots}.values())


def _rocm_candidates(root: Path) -> list[tuple[Argv, Argv, Argv]]:
    """(hip, clang, linker) argv prefixes found under one ROCm root, best first."""
    llvm = root / "llvm" / "bin"
    clang = llvm / "clang"
    lld = llvm / "ld.lld"
    if not is_executable(lld):
        return []
    cl = (str(clang),) if is_executable(clang) else ()
    return [((str(hip),), cl or (str(hip),), (str(lld),))
            for hip in (root / "bin" / "hipcc", root / "bin" / "amdclang++", clang) if is_executable(hip)]


def _explicit(compiler: str) -> tuple[Argv, Argv, Argv, bool]:
    """(hip, clang, linker, bare) for a compiler given by the user."""
    found = shutil.which(compiler) if os.sep not in compiler else compiler
    path = Path(found) if found else Path(compiler)
    if not is_executable(path):
        raise ToolchainError(f"compiler '{compiler}' not found or not executable; {INSTALL_HINT}")
    path = path.absolute()
    # ROCm layouts: <root>/bin/hipcc, <root>/bin/amdclang++, <root>/llvm/bin/clang
    for root in (path.parent.parent, path.parent.parent.parent):
        if (root / "include" / "hip" / "hip_runtime.h").is_file():
            lld = root / "llvm" / "bin" / "ld.lld"
            clang = root / "llvm" / "bin" / "clang"
            linker = (str(lld),) if is_executable(lld) else _linker_beside(path)
            return (str(path),), ((str(clang),) if is_executable(clang) else (str(path),)), linker, False
    return (str(path),), (str(path),), _linker_beside(path), True


def _linker_beside(path: Path) -> Argv:
    for cand in (path.parent / "ld.lld", path.parent / "lld"):
        if is_executable(cand):
            return (str(cand),) if cand.name == "ld.lld" else (str(cand), "-flavor", "gnu")
    on_path = shutil.which("ld.lld")
    if on_path:
        return (on_path,)
    zig = bundled_zig()
    if zig is not None:
        return (str(zig), "ld.lld")
    raise ToolchainError(f"no ld.lld next to {path} or on PATH to link code objects; {INSTALL_HINT}")


# Part of the tools cache's key: "2" since entries stopped holding a tool's crash as its answer
# (an older entry may, and is not read).
_TOOLS_FORMAT = "2"


def _stat_key(argvs: Sequence[Argv]) -> str:
    h = hashlib.sha256(f"{CACHE_FORMAT}\0tools-{_TOOLS_FORMAT}".encode())
    for argv in argvs:
        p = Path(argv[0])
        try:
            st = p.stat()
            h.update(f"{p.resolve()}\0{st.st_mtime_ns}\0{st.st_size}\0{' '.join(argv[1:])}\n".encode())
        except OSError:
            h.update(f"{p}\0missing\n".encode())
    return h.hexdigest()


def _tool_info(hip: Argv, clang: Argv, linker: Argv, arches: Sequence[str]) -> dict:
    """Versions and per-arch probe results, read from (and written back to) the tools cache."""
    info_path = cache_dir() / "tools" / f"{_stat_key((hip, clang, linker))}.json"
    try:
        info = json.loads(info_path.read_text())
        if not isinstance(info, dict):
            info = {}
    except (OSError, ValueError):
        info = {}
    changed = False
    # What is written back is only what a tool answered: a tool that died by a signal or ran out of
    # time (a crash under a memory limit, a loaded machine) is answered again on the next run.
    lasting = True
    if not isinstance(info.get("version"), str):
        r = run_tool([*hip, "--version"], timeout=PROBE_TIMEOUT_S)
        lr = run_tool([*linker, "--version"], timeout=PROBE_TIMEOUT_S)
        info["version"] = (r.stdout or r.stderr).strip()
        info["linker_version"] = (lr.stdout or lr.stderr).strip()
        lasting = r.returncode >= 0 and lr.returncode >= 0
        changed = True
    probes = info.setdefault("probes", {})
    for arch in arches:
        if not isinstance(probes.get(arch), str):
            probes[arch], answered = _probe(hip, arch)
            lasting = lasting and answered
            changed = True
    if changed and lasting:
        write_cache_file(info_path, json.dumps(info, indent=1).encode())
    return info


def _make_toolchain(origin: str, hip: Argv, clang: Argv, linker: Argv, bare: bool,
                    arches: Sequence[str]) -> Toolchain:
    """Ask the tools for their versions and probe each arch (answers cached per tool file)."""
    info = _tool_info(hip, clang, linker, arches)
    probes = info["probes"]
    version = info["version"].splitlines()[0] if info["version"] else "unknown version"
    identity = hashlib.sha256(
        "\0".join(
            [*hip, *clang, *linker, info["version"], str(info.get("linker_version", "")), str(bare)]
        ).encode()
    ).hexdigest()
    ok = tuple(a for a in arches if probes[a] == "")
    errs = tuple((a, probes[a]) for a in arches if probes[a])
    return Toolchain(origin, hip, clang, linker, version, bare, ok, identity, errs)


def _probe(hip: Argv, arch: str) -> tuple[str, bool]:
    """Compile a tiny kernel for ``arch``: '' if it worked, else the compiler's first error; and
    whether that is the compiler's answer (False when it died by a signal or ran out of time)."""
    with private_dir("probe") as d:
        src = Path(d) / "probe.hip"
        src.write_text(_PROBE_SOURCE)
        argv = [*hip, "-x", "hip", "--cuda-device-only", f"--offload-arch={arch}", "-nogpuinc", "-nogpulib",
                "-O1", "-S", str(src), "-o", str(Path(d) / "probe.s")]
        try:
            r = run_tool(argv, timeout=PROBE_TIMEOUT_S)
        except ToolchainError as e:
            return str(e)[:300], False
        if r.returncode == 0 and (Path(d) / "probe.s").is_file():
            return "", True
        if r.returncode < 0:
            return f"killed by signal {-r.returncode}", False
        lines = [ln.strip() for ln in (r.stderr or r.stdout).splitlines() if "error" in ln]
        return (lines[0] if lines else f"exit code {r.returncode}")[:300], True


def discover(*, compiler: str | None = None, arches: Sequence[str] = KNOWN_ARCHES) -> tuple[Toolchain, ...]:
    """Every toolchain found, in the order they are preferred, each probed for ``arches``."""
    arches = tuple(dict.fromkeys([*arches]))
    found: list[Toolchain] = []
    if compiler:
        hip, clang, linker, bare = _explicit(compiler)
        found.append(_make_toolchain("explicit", hip, clang, linker, bare, arches))
    for root in _rocm_roots():
        for hip, clang, linker in _rocm_candidates(root):
            found.append(_make_toolchain("rocm", hip, clang, linker, False, arches))
    path_clang = shutil.which("clang")
    if path_clang:
        p = Path(path_clang).absolute()
        try:
            linker = _linker_beside(p)
        except ToolchainError:
            linker = ()
        if linker:
            found.append(_make_toolchain("path", (str(p),), (str(p),), linker, True, arches))
    zig = bundled_zig()
    if zig is not None:
        z = str(zig)
        found.append(_make_toolchain("bundled", (z, "clang"), (z, "clang"), (z, "ld.lld"), True, arches))
    return tuple(found)


def select_toolchain(arch: str = "gfx950", *, compiler: str | None = None) -> Toolchain:
    """The first toolchain (in discovery order) that builds ``arch``. An explicit compiler that
    cannot build it is an error, never silently replaced."""
    if compiler:
        hip, clang, linker, bare = _explicit(compiler)
        tc = _make_toolchain("explicit", hip, clang, linker, bare, (arch,))
        if arch not in tc.arches:
            why = dict(tc.probe_errors).get(arch, "")
            raise ToolchainError(f"compiler {compiler} ({tc.version}) cannot build for {arch}: {why}")
        return tc
    found = discover(arches=(arch,))
    for tc in found:
        if arch in tc.arches:
            return tc
    if found:
        tried = "; ".join(f"{t.name} ({t.version}): {dict(t.probe_errors).get(arch, '?')}" for t in found)
        raise ToolchainError(f"no compiler found can build for {arch} (tried {tried}); {INSTALL_HINT}")
    raise ToolchainError(f"no AMDGPU compiler found; {INSTALL_HINT}")


def describe_extras() -> dict:
    """The optional front ends: Triton (``[triton]``) and HIP headers without ROCm (``[hipheaders]``);
    None for one not installed."""
    try:
        version, where = triton.triton_version()
        tri: dict | None = {"version": version, "path": where, "arches": list(triton.arches())}
    except TritonMissingError:
        tri = None
    hh = hipheaders.find_hip_headers()
    hip = (
        None
        if hh is None
        else {
            "clang_resource_dir": str(hh.resource_dir),
            "hip_include": str(hh.hip_include),
            "device_libraries": [str(p) for p in hh.bitcode],
        }
    )
    return {"triton": tri, "hipheaders": hip}


def _extras_lines() -> list[str]:
    ex = describe_extras()
    tri, hip = ex["triton"], ex["hipheaders"]
    return [
        f"triton: {tri['version']} ({', '.join(tri['arches'])})" if tri
        else "triton: not installed (pip install 'submitgen[triton]')",
        f"HIP headers without ROCm: {hip['hip_include']}" if hip
        else "HIP headers without ROCm: not installed (pip install 'submitgen[hipheaders]')",
    ]


def format_table(found: Sequence[Toolchain], arches: Sequence[str] = KNOWN_ARCHES) -> str:
    """The ``submitgen toolchain`` table: one row per toolchain, preferred first, then the
    optional front ends."""
    if not found:
        return "\n".join([f"no AMDGPU compiler found; {INSTALL_HINT}", *_extras_lines()])
    rows = [("#", "origin", "compiler", "version", "headers", *arches)]
    for i, tc in enumerate(found, 1):
        marks = tuple("yes" if a in tc.arches else "no" for a in arches)
        rows.append((str(i), tc.origin, " ".join(tc.hip), tc.version, "none" if tc.bare else "HIP", *marks))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    notes = [f"{tc.origin} {a}: {why}" for tc in found for a, why in tc.probe_errors]
    return "\n".join(lines + ([""] + notes if notes else []) + ["", *_extras_lines()])
