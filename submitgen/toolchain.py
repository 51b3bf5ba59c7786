"""Find a compiler that can build AMDGPU code objects, compile kernel sources into one code
object, and keep the results in a content-addressed cache.

Discovery order (the first toolchain that can build the requested arch wins):

1. an explicit ``compiler`` (a path or a name on PATH);
2. ROCm at ``$ROCM_PATH`` and ``/opt/rocm``: ``bin/hipcc``, ``bin/amdclang++``, ``llvm/bin/clang``;
3. a ``clang`` on PATH, kept only if it really compiles a tiny kernel for the arch;
4. the clang and ``ld.lld`` bundled in the ``ziglang`` wheel (``pip install 'submitgen[toolchain]'``).

Every source is compiled to an object on its own (HIP through assembly, since the bundled clang
driver cannot link device code itself), then ``ld.lld -shared`` links them into one code object.
The bundled clang has no HIP headers and no device libraries: it gets ``-nogpuinc -nogpulib`` and
kernels take what they need from ``submitgen/device.h`` (always on the include path).

Cache: ``SUBMITGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/submitgen``, else ``~/.cache/submitgen``.
A manifest keyed on the sources, flags, arch and compiler identity lists the headers the last
compile read (from the compiler's dependency output); the object is stored under a key that adds
those headers' contents. A rebuild of unchanged inputs therefore runs no compiler at all.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CompileError, ToolchainError
from .files import write_atomic
from .resources import device_include_dir

KNOWN_ARCHES: tuple[str, ...] = ("gfx942", "gfx950")
HIP_SUFFIXES = (".hip", ".cpp", ".cu", ".cc", ".cxx")
CL_SUFFIXES = (".cl",)
ASM_SUFFIXES = (".s", ".S")
SOURCE_SUFFIXES = HIP_SUFFIXES + CL_SUFFIXES + ASM_SUFFIXES
CODE_OBJECT_VERSIONS = (4, 5, 6)
INSTALL_HINT = (
    "install the bundled clang with `pip install 'submitgen[toolchain]'` (the ziglang wheel), "
    "or install ROCm and set ROCM_PATH (default /opt/rocm), or pass --compiler PATH"
)
ROCM_DEFAULT = Path("/opt/rocm")
_CACHE_FORMAT = "1"
_MAX_ERRORS = 3
_PROBE_SOURCE = 'extern "C" __attribute__((global)) void submitgen_probe(int* p) { *p = 1; }\n'


# ---------------------------------------------------------------------------------------------
# toolchains


@dataclass(frozen=True)
class Toolchain:
    """One way of building code objects. ``hip`` runs HIP sources, ``clang`` OpenCL C and
    assembly, ``linker`` links objects; each is an argv prefix."""

    origin: str  # "explicit", "rocm", "path" or "bundled"
    hip: tuple[str, ...]
    clang: tuple[str, ...]
    linker: tuple[str, ...]
    version: str  # first line of the compiler's --version
    bare: bool  # no HIP headers/device libraries: builds with -nogpuinc -nogpulib
    arches: tuple[str, ...]  # of the probed arches, those it built a kernel for
    identity: str = field(repr=False)  # sha256 of the tools' paths and full version output
    probe_errors: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (arch, why not)

    @property
    def name(self) -> str:
        return " ".join(Path(a).name if i == 0 else a for i, a in enumerate(self.hip))

    def can_build(self, arch: str) -> bool:
        return arch in self.arches

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


def cache_dir() -> Path:
    """The user's submitgen cache folder (not created here)."""
    env = os.environ.get("SUBMITGEN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "submitgen"


def _bundled_zig() -> Path | None:
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


def _exe(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _rocm_roots() -> list[Path]:
    roots = []
    env = os.environ.get("ROCM_PATH")
    if env:
        roots.append(Path(env))
    roots.append(ROCM_DEFAULT)
    seen, out = set(), []
    for r in roots:
        key = str(r)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _rocm_candidates(root: Path) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """(hip, clang, linker) argv prefixes found under one ROCm root, best first."""
    llvm = root / "llvm" / "bin"
    clang = llvm / "clang"
    lld = llvm / "ld.lld"
    if not _exe(lld):
        return []
    cl = (str(clang),) if _exe(clang) else ()
    out = []
    for hip in (root / "bin" / "hipcc", root / "bin" / "amdclang++", clang):
        if _exe(hip):
            out.append(((str(hip),), cl or (str(hip),), (str(lld),)))
    return out


def _explicit(compiler: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]:
    """(hip, clang, linker, bare) for a compiler given by the user."""
    found = shutil.which(compiler) if os.sep not in compiler else compiler
    path = Path(found) if found else Path(compiler)
    if not _exe(path):
        raise ToolchainError(f"compiler '{compiler}' not found or not executable; {INSTALL_HINT}")
    path = path.absolute()
    here = path.parent
    # ROCm layouts: <root>/bin/hipcc, <root>/bin/amdclang++, <root>/llvm/bin/clang
    for root in (here.parent, here.parent.parent):
        if (root / "include" / "hip" / "hip_runtime.h").is_file():
            lld = root / "llvm" / "bin" / "ld.lld"
            clang = root / "llvm" / "bin" / "clang"
            linker = (str(lld),) if _exe(lld) else _linker_beside(path)
            return (str(path),), ((str(clang),) if _exe(clang) else (str(path),)), linker, False
    return (str(path),), (str(path),), _linker_beside(path), True


def _linker_beside(path: Path) -> tuple[str, ...]:
    for cand in (path.parent / "ld.lld", path.parent / "lld"):
        if _exe(cand):
            return (str(cand),) if cand.name == "ld.lld" else (str(cand), "-flavor", "gnu")
    on_path = shutil.which("ld.lld")
    if on_path:
        return (on_path,)
    zig = _bundled_zig()
    if zig is not None:
        return (str(zig), "ld.lld")
    raise ToolchainError(f"no ld.lld next to {path} or on PATH to link code objects; {INSTALL_HINT}")


def _stat_key(argvs: Sequence[tuple[str, ...]]) -> str:
    h = hashlib.sha256(_CACHE_FORMAT.encode())
    for argv in argvs:
        p = Path(argv[0])
        try:
            st = p.stat()
            h.update(f"{p.resolve()}\0{st.st_mtime_ns}\0{st.st_size}\0{' '.join(argv[1:])}\n".encode())
        except OSError:
            h.update(f"{p}\0missing\n".encode())
    return h.hexdigest()


def _run(argv: Sequence[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise ToolchainError(f"cannot run {argv[0]}: {e.strerror}; {INSTALL_HINT}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{' '.join(argv)} ran past {timeout:.0f} s") from None


def _make_toolchain(
    origin: str,
    hip: tuple[str, ...],
    clang: tuple[str, ...],
    linker: tuple[str, ...],
    bare: bool,
    arches: Sequence[str],
) -> Toolchain:
    """Ask the tools for their versions and probe each arch; the answers are cached per tool
    file (path, mtime, size) so that later runs start no process."""
    tools_dir = cache_dir() / "tools"
    key = _stat_key((hip, clang, linker))
    info_path = tools_dir / f"{key}.json"
    info: dict = {}
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError):
        info = {}
    changed = False
    if "version" not in info:
        r = _run([*hip, "--version"], timeout=120)
        text = (r.stdout or r.stderr).strip()
        lr = _run([*linker, "--version"], timeout=120)
        info["version"] = text
        info["linker_version"] = (lr.stdout or lr.stderr).strip()
        changed = True
    probes: dict = info.setdefault("probes", {})
    for arch in arches:
        if arch not in probes:
            probes[arch] = _probe(hip, bare, arch)
            changed = True
    if changed:
        write_atomic(info_path, json.dumps(info, indent=1).encode())
    version = info["version"].splitlines()[0] if info["version"] else "unknown version"
    identity = hashlib.sha256(
        "\0".join([*hip, *clang, *linker, info["version"], info.get("linker_version", ""), str(bare)]).encode()
    ).hexdigest()
    ok = tuple(a for a in arches if probes[a] == "")
    errs = tuple((a, probes[a]) for a in arches if probes[a])
    return Toolchain(origin, hip, clang, linker, version, bare, ok, identity, errs)


def _probe(hip: tuple[str, ...], bare: bool, arch: str) -> str:
    """Compile a tiny kernel for ``arch``: '' if it worked, else the compiler's first error."""
    with tempfile.TemporaryDirectory(prefix="submitgen-probe-") as d:
        src = Path(d) / "probe.hip"
        src.write_text(_PROBE_SOURCE)
        argv = [*hip, "-x", "hip", "--cuda-device-only", f"--offload-arch={arch}", "-nogpuinc", "-nogpulib",
                "-O1", "-S", str(src), "-o", str(Path(d) / "probe.s")]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e) or "failed to run"
        if r.returncode == 0 and (Path(d) / "probe.s").is_file():
            return ""
        lines = [ln.strip() for ln in (r.stderr or r.stdout).splitlines() if "error" in ln]
        return (lines[0] if lines else f"exit code {r.returncode}")[:300]


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
    zig = _bundled_zig()
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
        if not tc.can_build(arch):
            why = dict(tc.probe_errors).get(arch, "")
            raise ToolchainError(f"compiler {compiler} ({tc.version}) cannot build for {arch}: {why}")
        return tc
    found = discover(arches=(arch,))
    for tc in found:
        if tc.can_build(arch):
            return tc
    if found:
        tried = "; ".join(f"{t.name} ({t.version}): {dict(t.probe_errors).get(arch, '?')}" for t in found)
        raise ToolchainError(f"no compiler found can build for {arch} (tried {tried}); {INSTALL_HINT}")
    raise ToolchainError(f"no AMDGPU compiler found; {INSTALL_HINT}")


# ---------------------------------------------------------------------------------------------
# compiling


@dataclass(frozen=True)
class CompileResult:
    """A linked code object and how it was made."""

    code_object: bytes
    sha256: str
    arch: str
    toolchain: Toolchain
    commands: tuple[tuple[str, ...], ...]  # the command lines that built it (recorded ones on a cache hit)
    cache_hit: bool
    sources: tuple[Path, ...]
    headers: tuple[Path, ...]  # headers the compiler read (from its dependency output)
    kernels: tuple[str, ...]


_DIAG_RE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$")


def _source_kind(path: Path) -> str:
    s = path.suffix
    if s in HIP_SUFFIXES:
        return "hip"
    if s in CL_SUFFIXES:
        return "cl"
    if s in ASM_SUFFIXES:
        return "asm"
    raise CompileError(f"{path}: unknown source type '{s}', expected one of {' '.join(SOURCE_SUFFIXES)}")


def _compile_commands(
    tc: Toolchain,
    src: Path,
    workdir: Path,
    index: int,
    arch: str,
    opt: str,
    defines: Sequence[str],
    include_dirs: Sequence[Path],
    cov: int | None,
    extra: Sequence[str],
    lto: bool,
) -> tuple[list[list[str]], Path, Path | None]:
    """Commands turning one source into an object: (commands, object path, dependency file).
    With ``lto`` (several sources) HIP and OpenCL become LLVM bitcode, so that the link makes one
    module and one metadata note; alone, HIP goes through assembly."""
    kind = _source_kind(src)
    # Names relative to the work folder (the cwd): the command lines, and so the cuid clang derives
    # from them, are the same on every build, so the output is reproducible.
    obj = Path(f"{index}_{src.stem}.{'bc' if lto and kind != 'asm' else 'o'}")
    cov_flag = [f"-mcode-object-version={cov}"] if cov else []
    incs = [f"-I{d}" for d in (*include_dirs, device_include_dir())]
    defs = [f"-D{d}" for d in defines]
    amd = ["-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}"]
    if kind == "asm":
        return [[*tc.clang, *amd, *cov_flag, *incs, *defs, *extra, "-c", str(src), "-o", str(obj)]], obj, None
    dep = Path(f"{index}_{src.stem}.d")
    deps = ["-Xclang", "-dependency-file", "-Xclang", str(dep), "-Xclang", "-MT", "-Xclang", str(obj)]
    bare = ["-nogpuinc", "-nogpulib"] if tc.bare else []
    if kind == "cl":
        lang = ["-x", "cl", *amd]
        if tc.bare:
            lang += ["-cl-no-stdinc", "-nogpulib", "-include", str(device_include_dir() / "submitgen" / "opencl.h")]
        flto = ["-flto"] if lto else []
        cmd = [*tc.clang, *lang, f"-O{opt}", *cov_flag, *flto, *incs, *defs, *deps, *extra, "-c", str(src),
               "-o", str(obj)]
        return [cmd], obj, dep
    hip = [*tc.hip, "-x", "hip", "--cuda-device-only", f"--offload-arch={arch}", *bare, f"-O{opt}", *cov_flag,
           *incs, *defs, *deps, *extra]
    if lto:
        return [[*hip, "-fgpu-rdc", "-c", str(src), "-o", str(obj)]], obj, dep
    asm = Path(f"{index}_{src.stem}.s")
    # target options (-mwavefrontsize64, -mcumode, -mxnack...) change how the assembly is encoded
    target_opts = [f for f in extra if f.startswith("-m") and not f.startswith("-mllvm")]
    assemble = [*tc.clang, *amd, *cov_flag, *target_opts, "-c", str(asm), "-o", str(obj)]
    return [[*hip, "-S", str(src), "-o", str(asm)], assemble], obj, dep


def _parse_deps(dep: Path) -> list[Path]:
    """Files named by a Make-style dependency file (first target only)."""
    try:
        text = dep.read_text()
    except OSError:
        return []
    text = text.replace("\\\n", " ")
    _, _, rest = text.partition(": ")
    names = re.findall(r"(?:\\ |[^\s])+", rest)
    return [Path(n.replace("\\ ", " ")) for n in names]


def _diagnostics(stderr: str) -> list[tuple[str, str, str]]:
    """(file, line, text) of each error in clang's output; text keeps the source excerpt and
    caret lines that follow it, drops notes and warnings."""
    out: list[tuple[str, str, list[str]]] = []
    open_block = False
    for ln in stderr.splitlines():
        m = _DIAG_RE.match(ln)
        if m:
            open_block = m.group("sev") in ("error", "fatal error")
            if open_block:
                out.append((m.group("file"), m.group("line"), [ln]))
        elif open_block and ln.startswith(" ") and len(out[-1][2]) < 4:
            out[-1][2].append(ln)
        else:
            open_block = False
    return [(f, n, "\n".join(block)) for f, n, block in out]


def _fail(step: str, argv: Sequence[str], r: subprocess.CompletedProcess, arch: str, src: Path | None) -> CompileError:
    text = (r.stderr or "") + (r.stdout or "")
    diags = _diagnostics(text)
    what = f"compiling {src} for {arch}" if src else f"linking the code object for {arch}"
    if diags:
        file, line, _ = diags[0]
        shown = "\n".join(block for _, _, block in diags[:_MAX_ERRORS])
        more = f"\n... and {len(diags) - _MAX_ERRORS} more errors" if len(diags) > _MAX_ERRORS else ""
        msg = f"{what} failed at {file}:{line}:\n{shown}{more}"
    else:
        lines = [ln for ln in text.splitlines() if ln.strip() and "generated" not in ln]
        file, line = (str(src) if src else None), None
        msg = f"{what} failed ({step}, exit code {r.returncode}):\n" + "\n".join(lines[:8])
    err = CompileError(msg)
    err.file = file
    err.line = int(line) if line else None
    err.arch = arch
    err.command = tuple(argv)
    err.compiler_output = text
    return err


def check_code_object(data: bytes, arch: str, *, source: str = "<compiled>") -> tuple[str, ...]:
    """Read a linked code object back: it must be an AMDGPU ELF for ``arch`` with at least one
    kernel, each with its ``NAME.kd`` descriptor. Returns the kernel names."""
    try:
        from .codeobject import read_code_object  # noqa: PLC0415  (written in parallel; optional)
    except ImportError:
        read_code_object = None
    if read_code_object is not None:
        co = read_code_object(data, source=source)
        target = _co_processor(co)
        if target is not None and target != arch:
            raise CompileError(f"{source}: the code object is for {target}, expected {arch}")
        names = tuple(k.name for k in co.kernels)
        if not names:
            raise CompileError(f"{source}: the code object for {arch} has no kernels")
        missing = [k.name for k in co.kernels if getattr(k, "descriptor", True) is None]
        if missing:
            raise CompileError(f"{source}: kernel(s) without a NAME.kd descriptor: {', '.join(missing)}")
        return names
    return _minimal_check(data, arch, source)


def _co_processor(co) -> str | None:
    for obj in (getattr(co, "header", None), co):
        for attr in ("processor", "arch"):
            v = getattr(obj, attr, None) if obj is not None else None
            if isinstance(v, str):
                return v
    return None


_MACH = {"gfx90a": 0x3F, "gfx940": 0x40, "gfx941": 0x4B, "gfx942": 0x4C, "gfx950": 0x4F}


def _minimal_check(data: bytes, arch: str, source: str) -> tuple[str, ...]:
    """ELF magic, EM_AMDGPU, the arch's e_flags mach, and NAME + NAME.kd dynamic symbols."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    if data[:4] != b"\x7fELF":
        raise CompileError(f"{source}: not an ELF file")
    try:
        elf = ELFFile(io.BytesIO(data))
        if elf["e_machine"] not in ("EM_AMDGPU", 224):
            raise CompileError(f"{source}: e_machine is {elf['e_machine']}, expected EM_AMDGPU (224)")
        mach = elf["e_flags"] & 0xFF
        if arch in _MACH and mach != _MACH[arch]:
            raise CompileError(f"{source}: e_flags mach 0x{mach:x}, expected 0x{_MACH[arch]:x} ({arch})")
        dynsym = elf.get_section_by_name(".dynsym")
        names = {s.name for s in dynsym.iter_symbols()} if dynsym is not None else set()
    except ELFError as e:
        raise CompileError(f"{source}: unreadable ELF: {e}") from None
    kernels = tuple(sorted(n[:-3] for n in names if n.endswith(".kd")))
    missing = [k for k in kernels if k not in names]
    if missing:
        raise CompileError(f"{source}: descriptor without kernel symbol: {', '.join(missing)}")
    if not kernels:
        raise CompileError(f"{source}: the code object for {arch} has no kernels (no NAME.kd symbols)")
    return kernels


def _file_sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _object_key(key1: str, headers: Sequence[tuple[str, str | None]]) -> str:
    h = hashlib.sha256(key1.encode())
    for name, digest in headers:
        h.update(f"{name}\0{digest}\n".encode())
    return h.hexdigest()


def _cache_lookup(root: Path, key1: str) -> tuple[bytes, dict] | None:
    try:
        manifest = json.loads((root / "manifests" / f"{key1}.json").read_text())
        headers = [(h, _file_sha(Path(h))) for h in manifest["headers"]]
        key2 = _object_key(key1, headers)
        meta = json.loads((root / "objects" / f"{key2}.json").read_text())
        data = (root / "objects" / f"{key2}.co").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        return None
    return data, meta


def compile_sources(
    sources: Sequence[Path | str],
    *,
    arch: str = "gfx950",
    opt: str = "3",
    defines: Sequence[str] = (),
    include_dirs: Sequence[Path | str] = (),
    code_object_version: int | None = None,
    extra_flags: Sequence[str] = (),
    compiler: str | None = None,
    use_cache: bool = True,
) -> CompileResult:
    """Compile HIP (.hip .cpp .cu), OpenCL C (.cl) and AMDGPU assembly (.s) sources into one
    code object for ``arch``, read it back, and return it. Compiler errors raise CompileError
    with file:line and the compiler's own message."""
    if not sources:
        raise CompileError("no sources to compile")
    srcs = tuple(Path(s).absolute() for s in sources)
    for s in srcs:
        _source_kind(s)
        if not s.is_file():
            raise CompileError(f"source {s} not found")
    if code_object_version is not None and code_object_version not in CODE_OBJECT_VERSIONS:
        raise CompileError(
            f"code object version {code_object_version} is not supported, expected one of "
            f"{', '.join(map(str, CODE_OBJECT_VERSIONS))}"
        )
    opt = str(opt).removeprefix("-O")
    if opt not in ("0", "1", "2", "3", "s", "z", "g", "fast"):
        raise CompileError(f"optimisation level '-O{opt}' is not one of -O0 -O1 -O2 -O3 -Os -Oz")
    incs = tuple(Path(d).absolute() for d in include_dirs)
    lto = len(srcs) > 1
    asm = [s.name for s in srcs if _source_kind(s) == "asm"]
    if lto and asm:
        raise CompileError(
            f"{', '.join(asm)}: an assembly source carries its own metadata note and cannot be linked with "
            "other sources into one code object (the loader reads one note); build it on its own"
        )
    tc = select_toolchain(arch, compiler=compiler)

    source_bytes = [s.read_bytes() for s in srcs]
    key1 = hashlib.sha256(
        json.dumps(
            {
                "format": _CACHE_FORMAT,
                "toolchain": tc.identity,
                "arch": arch,
                "opt": opt,
                "defines": list(defines),
                "include_dirs": [str(d) for d in incs],
                "device_include": str(device_include_dir()),
                "cov": code_object_version,
                "extra": list(extra_flags),
                "sources": [[str(s), hashlib.sha256(b).hexdigest()] for s, b in zip(srcs, source_bytes)],
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()
    root = cache_dir()
    if use_cache:
        hit = _cache_lookup(root, key1)
        if hit is not None:
            data, meta = hit
            return CompileResult(
                code_object=data,
                sha256=meta["sha256"],
                arch=arch,
                toolchain=tc,
                commands=tuple(tuple(c) for c in meta["commands"]),
                cache_hit=True,
                sources=srcs,
                headers=tuple(Path(h) for h in meta["headers"]),
                kernels=tuple(meta["kernels"]),
            )

    commands: list[tuple[str, ...]] = []
    headers: dict[str, None] = {}
    with tempfile.TemporaryDirectory(prefix="submitgen-build-") as d:
        work = Path(d)
        objects = []
        for i, src in enumerate(srcs):
            cmds, obj, dep = _compile_commands(
                tc, src, work, i, arch, opt, defines, incs, code_object_version, extra_flags, lto
            )
            for step, argv in enumerate(cmds):
                r = _run(argv, cwd=work)
                commands.append(tuple(argv))
                if r.returncode != 0:
                    raise _fail("compile" if step == 0 else "assemble", argv, r, arch, src)
            if dep is not None:
                for h in _parse_deps(work / dep):
                    hp = h if h.is_absolute() else (work / h)
                    hp = Path(os.path.abspath(hp))
                    if hp not in srcs:
                        headers[str(hp)] = None
            objects.append(obj)
        out = Path("out.co")
        lto_opts = [f"-plugin-opt=mcpu={arch}", f"-plugin-opt=O{opt if opt in '0123' else '3'}"] if lto else []
        link = [*tc.linker, "-shared", *lto_opts, *map(str, objects), "-o", str(out)]
        r = _run(link, cwd=work)
        commands.append(tuple(link))
        if r.returncode != 0:
            raise _fail("link", link, r, arch, None)
        data = (work / out).read_bytes()

    label = srcs[0].name if len(srcs) == 1 else f"{srcs[0].name} (+{len(srcs) - 1})"
    kernels = check_code_object(data, arch, source=label)
    digest = hashlib.sha256(data).hexdigest()
    header_list = sorted(headers)
    if use_cache:
        key2 = _object_key(key1, [(h, _file_sha(Path(h))) for h in header_list])
        meta = {"sha256": digest, "commands": commands, "headers": header_list, "kernels": list(kernels),
                "arch": arch, "toolchain": tc.version}
        write_atomic(root / "objects" / f"{key2}.co", data)
        write_atomic(root / "objects" / f"{key2}.json", json.dumps(meta).encode())
        write_atomic(root / "manifests" / f"{key1}.json", json.dumps({"headers": header_list}).encode())
    return CompileResult(
        code_object=data,
        sha256=digest,
        arch=arch,
        toolchain=tc,
        commands=tuple(commands),
        cache_hit=False,
        sources=srcs,
        headers=tuple(Path(h) for h in header_list),
        kernels=kernels,
    )


# ---------------------------------------------------------------------------------------------
# CUDA (numerics checks on NVIDIA)


def find_nvcc() -> Path | None:
    env = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if env and _exe(Path(env) / "bin" / "nvcc"):
        return Path(env) / "bin" / "nvcc"
    found = shutil.which("nvcc")
    return Path(found) if found else None


def compile_cuda(
    sources: Sequence[Path | str],
    *,
    arch: str = "sm_90",
    opt: str = "3",
    defines: Sequence[str] = (),
    include_dirs: Sequence[Path | str] = (),
    extra_flags: Sequence[str] = (),
    nvcc: str | None = None,
) -> bytes:
    """Build a CUDA source (using the same submitgen/device.h) into a cubin with nvcc."""
    found = find_nvcc()
    exe = nvcc or (str(found) if found else None)
    if not exe:
        raise ToolchainError("nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
    srcs = [Path(s).absolute() for s in sources]
    if not srcs:
        raise CompileError("no sources to compile")
    incs = [f"-I{Path(d).absolute()}" for d in (*include_dirs, device_include_dir())]
    if len(srcs) != 1:
        raise CompileError(f"compile_cuda builds one source (#include the others), got {len(srcs)}")
    with tempfile.TemporaryDirectory(prefix="submitgen-cuda-") as d:
        out = Path(d) / "out.cubin"
        argv = [exe, "-x", "cu", f"-arch={arch}", "-cubin", f"-O{opt}", *incs, *[f"-D{x}" for x in defines],
                *extra_flags, str(srcs[0]), "-o", str(out)]
        r = _run(argv, cwd=Path(d))
        if r.returncode != 0:
            raise _fail("compile", argv, r, arch, srcs[0])
        return out.read_bytes()


def describe(found: Sequence[Toolchain]) -> list[dict]:
    """Plain data of discovered toolchains, for ``submitgen toolchain --json``."""
    return [tc.to_json() for tc in found]


__all__ = [
    "CODE_OBJECT_VERSIONS",
    "KNOWN_ARCHES",
    "CompileResult",
    "Toolchain",
    "cache_dir",
    "check_code_object",
    "compile_cuda",
    "compile_sources",
    "describe",
    "discover",
    "find_nvcc",
    "select_toolchain",
]


def format_table(found: Sequence[Toolchain], arches: Sequence[str] = KNOWN_ARCHES) -> str:
    """The ``submitgen toolchain`` table: one row per toolchain, preferred first."""
    if not found:
        return f"no AMDGPU compiler found; {INSTALL_HINT}"
    rows = [("#", "origin", "compiler", "version", "headers", *arches)]
    for i, tc in enumerate(found, 1):
        marks = tuple("yes" if a in tc.arches else "no" for a in arches)
        rows.append((str(i), tc.origin, " ".join(tc.hip), tc.version, "none" if tc.bare else "HIP", *marks))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    notes = [f"{tc.origin} {a}: {why}" for tc in found for a, why in tc.probe_errors]
    return "\n".join(lines + ([""] + notes if notes else []))
