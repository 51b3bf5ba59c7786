"""Compile kernel sources into one AMDGPU code object, through the content cache.

Every source is read once and compiled from a copy of those bytes in a private work folder, so
the object always matches the bytes the cache key and the provenance hash name, even when the
file is edited during the compile. Each source becomes an object on its own (HIP through
assembly, since the bundled clang driver cannot link device code itself), then ``ld.lld
-shared`` links them. A bare toolchain (no HIP headers or device libraries) gets ``-nogpuinc
-nogpulib``; kernels then take what they need from ``submitgen/device.h`` (always on the include
path), or from the HIP headers of the ``[hipheaders]`` extra (see ``hipheaders.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from submitgen.errors import CompileError
from submitgen.files import device_include_dir, private_dir
from submitgen.readers.amd.reader import read_code_object
from submitgen.system import run_tool
from submitgen.toolchain import cache, hipheaders
from submitgen.toolchain.diagnostics import compile_failure, unmap_paths
from submitgen.toolchain.discovery import Toolchain, select_toolchain
from submitgen.toolchain.inputs import check_includes, file_sha, read_input
from submitgen.toolchain.options import CompileOptions, source_kind


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
    cache_warning: str | None = None  # why the result was not cached, when the cache was asked for
    source_sha256: tuple[str, ...] = ()  # of the exact bytes compiled, one per source
    # The code object reader's model from the read-back of a fresh compile (None on a cache hit):
    # the build reuses it instead of parsing the object again.
    parsed: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class _Source:
    path: Path  # the user's file
    data: bytes  # its bytes, read once
    snap: Path  # the copy the compiler reads, relative to the work folder
    index: int


def compile_sources(sources: Sequence[Path | str], options: CompileOptions | None = None, /,
                    **kwargs) -> CompileResult:
    """Compile HIP (.hip .cpp .cu), OpenCL C (.cl) and AMDGPU assembly (.s) sources into one
    code object for ``options.arch``, read it back, and return it. Keyword arguments are
    CompileOptions fields (they override ``options``). Compiler errors raise CompileError with
    file:line and the compiler's own message."""
    opts = replace(options, **kwargs) if options is not None else CompileOptions(**kwargs)
    srcs = _check_sources(sources)
    tc = select_toolchain(opts.arch, compiler=opts.compiler)
    inputs = tuple(_Source(p, read_input(p), Path(f"s{i}") / p.name, i) for i, p in enumerate(srcs))
    check_includes([(s.path, s.data) for s in inputs], (*opts.include_dirs, device_include_dir()))
    hh = _hip_headers(tc, inputs)
    key1 = cache.key_of({**_key_fields(tc, opts, inputs), "hipheaders": hh.identity if hh else None})
    root = cache.cache_dir()
    digests = tuple(hashlib.sha256(s.data).hexdigest() for s in inputs)
    if opts.use_cache:
        hit = cache.lookup(root, key1)
        if hit is not None:
            return CompileResult(
                code_object=hit.data, sha256=hit.meta["sha256"], arch=opts.arch, toolchain=tc,
                commands=tuple(tuple(c) for c in hit.meta["commands"]), cache_hit=True, sources=srcs,
                headers=tuple(Path(h) for h in hit.meta["headers"]), kernels=tuple(hit.meta["kernels"]),
                source_sha256=digests,
            )
    started = time.time_ns()
    data, commands, headers = _build(tc, opts, inputs, hh)
    label = srcs[0].name if len(srcs) == 1 else f"{srcs[0].name} (+{len(srcs) - 1})"
    parsed = read_back(data, opts.arch, label=label)
    kernels = tuple(k.name for k in parsed.kernels)
    digest = hashlib.sha256(data).hexdigest()
    warning = None
    if opts.use_cache:
        warning = _store(root, key1, data, digest, commands, headers, kernels, opts.arch, tc, started)
    return CompileResult(
        code_object=data, sha256=digest, arch=opts.arch, toolchain=tc, commands=commands, cache_hit=False,
        sources=srcs, headers=tuple(Path(h) for h in headers), kernels=kernels, cache_warning=warning,
        parsed=parsed,
        source_sha256=digests,
    )


def _hip_headers(tc: Toolchain, inputs: Sequence[_Source]) -> hipheaders.HipHeaders | None:
    """HIP headers for a bare toolchain when a source includes one (None: none needed, or none
    installed, in which case the compile fails on the missing header with a clear error)."""
    if not tc.bare or not hipheaders.wants_hip_headers([s.data for s in inputs]):
        return None
    hh = hipheaders.find_hip_headers()
    if hh is not None:
        hipheaders.check_compiler(hh, tc.version)
    return hh


def _check_sources(sources: Sequence[Path | str]) -> tuple[Path, ...]:
    if not sources:
        raise CompileError("no sources to compile")
    srcs = tuple(Path(s).absolute() for s in sources)
    for s in srcs:
        source_kind(s)
        if not os.path.exists(s):
            raise CompileError(f"source {s} not found")
    asm = [s.name for s in srcs if source_kind(s) == "asm"]
    if len(srcs) > 1 and asm:
        raise CompileError(
            f"{', '.join(asm)}: an assembly source carries its own metadata note and cannot be linked with "
            "other sources into one code object (the loader reads one note); build it on its own"
        )
    return srcs


def _key_fields(tc: Toolchain, opts: CompileOptions, inputs: Sequence[_Source]) -> dict:
    return {
        "format": cache.CACHE_FORMAT,
        "toolchain": tc.identity,
        "arch": opts.arch,
        "opt": opts.opt,
        "defines": list(opts.defines),
        "include_dirs": [str(d) for d in opts.include_dirs],
        "device_include": str(device_include_dir()),
        "cov": opts.code_object_version,
        "extra": list(opts.extra_flags),
        "sources": [[str(s.path), hashlib.sha256(s.data).hexdigest()] for s in inputs],
    }


def _store(root: Path, key1: str, data: bytes, digest: str, commands, headers: Sequence[str],
           kernels: Sequence[str], arch: str, tc: Toolchain, started_ns: int) -> str | None:
    """Cache the object, unless a header changed while it was compiled (its bytes at the end are
    then not the bytes the compiler read)."""
    digests = [(h, file_sha(Path(h))) for h in headers]
    for h, d in digests:
        try:
            changed = d is None or os.stat(h).st_mtime_ns >= started_ns
        except OSError:
            changed = True
        if changed:
            return f"header {h} changed during the compile; the object was not cached"
    meta = {"sha256": digest, "commands": [list(c) for c in commands], "headers": list(headers),
            "kernels": list(kernels), "arch": arch, "toolchain": tc.version}
    return cache.store(root, key1, data, meta, digests)


def compile_commands(
    tc: Toolchain, src: _Source, opts: CompileOptions, lto: bool, hip_extra: Sequence[str] = ()
) -> tuple[list[list[str]], Path, Path | None]:
    """Commands turning one source into an object: (commands, object path, dependency file).
    With ``lto`` (several sources) HIP and OpenCL become LLVM bitcode, so that the link makes one
    module and one metadata note; alone, HIP goes through assembly."""
    kind = source_kind(src.path)
    # Names relative to the work folder (the cwd): the command lines, and so the cuid clang derives
    # from them, do not depend on where the temporary folder is.
    stem = f"{src.index}_{src.path.stem}"
    obj = Path(f"{stem}.{'bc' if lto and kind != 'asm' else 'o'}")
    cov = [f"-mcode-object-version={opts.code_object_version}"] if opts.code_object_version else []
    incs = [f"-I{d}" for d in (*opts.include_dirs, device_include_dir())]
    defs = [f"-D{d}" for d in opts.defines]
    amd = ["-target", "amdgcn-amd-amdhsa", f"-mcpu={opts.arch}"]
    if kind == "asm":
        return (
            [[*tc.clang, *amd, *cov, *incs, *defs, *opts.extra_flags, "-c", str(src.snap), "-o", str(obj)]],
            obj,
            None,
        )
    # the copy is compiled: quoted includes and __FILE__ still resolve against the user's folder
    here = ["-iquote", str(src.path.parent), f"-ffile-prefix-map={src.snap.parent}={src.path.parent}"]
    dep = Path(f"{stem}.d")
    deps = ["-Xclang", "-dependency-file", "-Xclang", str(dep), "-Xclang", "-MT", "-Xclang", str(obj)]
    if kind == "cl":
        cmd = [
            *tc.clang,
            "-x",
            "cl",
            *amd,
            # a bare toolchain: no ROCm device libraries, submitgen's OpenCL header instead
            *(["-cl-no-stdinc", "-nogpulib", "-include", str(device_include_dir() / "submitgen" / "opencl.h")]
              if tc.bare else []),
            f"-O{opts.opt}",
            *cov,
            *(["-flto"] if lto else []),
            *here,
            *incs,
            *defs,
            *deps,
            *opts.extra_flags,
            "-c",
            str(src.snap),
            "-o",
            str(obj),
        ]
        return [cmd], obj, dep
    bare = ["-nogpuinc", "-nogpulib", *hip_extra] if tc.bare else []
    # clang derives the HIP compilation-unit id (a symbol in the object) from the input's path unless
    # given one: derive it from the bytes, so the object does not depend on where the project lives
    cuid = "-cuid=" + hashlib.sha256(b"%d\0" % src.index + src.data).hexdigest()[:16]
    hip = [*tc.hip, "-x", "hip", "--cuda-device-only", f"--offload-arch={opts.arch}", *bare, f"-O{opts.opt}",
           *cov, cuid, *here, *incs, *defs, *deps, *opts.extra_flags]
    if lto:
        return [[*hip, "-fgpu-rdc", "-c", str(src.snap), "-o", str(obj)]], obj, dep
    asm = Path(f"{stem}.s")
    # target options (-mwavefrontsize64, -mcumode, -mxnack...) change how the assembly is encoded
    target_opts = [f for f in opts.extra_flags if f.startswith("-m") and not f.startswith("-mllvm")]
    assemble = [*tc.clang, *amd, *cov, *target_opts, "-c", str(asm), "-o", str(obj)]
    return [[*hip, "-S", str(src.snap), "-o", str(asm)], assemble], obj, dep


def _build(tc: Toolchain, opts: CompileOptions, inputs: Sequence[_Source], hh: hipheaders.HipHeaders | None
           ) -> tuple[bytes, tuple[tuple[str, ...], ...], list[str]]:
    """Run the compiler on snapshot copies and link: (object bytes, commands, headers read)."""
    commands: list[tuple[str, ...]] = []
    headers: dict[str, None] = {}
    lto = len(inputs) > 1
    names = {str(s.snap): str(s.path) for s in inputs}
    with private_dir("build") as d:
        work = Path(d)
        snaps = set()
        for s in inputs:
            (work / s.snap).parent.mkdir(parents=True, exist_ok=True)
            (work / s.snap).write_bytes(s.data)
            snaps.add(Path(os.path.abspath(work / s.snap)))
        hip_extra = _oclc_library(tc, opts, work, hh, commands) if hh else []
        objects = []
        for s in inputs:
            cmds, obj, dep = compile_commands(tc, s, opts, lto, hip_extra)
            for step, argv in enumerate(cmds):
                r = run_tool(argv, cwd=work, timeout=opts.timeout, what=f"compiling {s.path} for {opts.arch}")
                commands.append(tuple(argv))
                if r.returncode != 0:
                    output = unmap_paths((r.stderr or "") + (r.stdout or ""), names)
                    raise (
                        hipheaders.missing_header(output, hh is not None)
                        or compile_failure(
                            "compile" if step == 0 else "assemble", argv, r, opts.arch, s.path, names
                        )
                    )
            if dep is not None:
                found = [h for h in parse_deps(work, work / dep) if h not in snaps]
                _check_regular(s.path, found)
                headers.update(dict.fromkeys(str(h) for h in found))
            objects.append(obj)
        data = _link(tc, opts, work, objects, commands)
    return data, tuple(commands), sorted(headers)


def _check_regular(src: Path, headers: Sequence[Path]) -> None:
    """A header the compiler read that is not a regular file (an include the scan before the
    compile could not see, e.g. through a macro) cannot be hashed: refuse it by name."""
    for h in headers:
        try:
            regular = stat.S_ISREG(os.stat(h).st_mode)
        except OSError:
            continue  # gone since: the cache lookup then misses
        if not regular:
            raise CompileError(
                f"{src}: the compile read {h}, which is not a regular file; sources and headers "
                "must be regular files"
            )


def _oclc_library(tc: Toolchain, opts: CompileOptions, work: Path, hh: hipheaders.HipHeaders,
                  commands: list[tuple[str, ...]]) -> list[str]:
    """Build the device-library control constants for this target and flags; returns the HIP
    compile flags that use the headers and libraries."""
    src, out = work / "oclc.cl", Path("oclc.bc")
    src.write_text(hipheaders.oclc_source(opts.arch, opts.code_object_version, opts.extra_flags))
    argv = hipheaders.oclc_command(tc.clang, opts.arch, opts.code_object_version, Path(src.name), out)
    r = run_tool(
        argv, cwd=work, timeout=opts.timeout, what=f"compiling the device-library constants for {opts.arch}"
    )
    commands.append(tuple(argv))
    if r.returncode != 0:
        raise compile_failure("compile", argv, r, opts.arch, None)
    return hipheaders.compile_flags(hh, out)


def _link(tc: Toolchain, opts: CompileOptions, work: Path, objects: Sequence[Path],
          commands: list[tuple[str, ...]]) -> bytes:
    out = Path("out.co")
    opt = opts.opt if opts.opt in "0123" else "3"
    lto_opts = [f"-plugin-opt=mcpu={opts.arch}", f"-plugin-opt=O{opt}"] if len(objects) > 1 else []
    link = [*tc.linker, "-shared", *lto_opts, *map(str, objects), "-o", str(out)]
    r = run_tool(link, cwd=work, timeout=opts.timeout, what=f"linking the code object for {opts.arch}")
    commands.append(tuple(link))
    if r.returncode != 0:
        raise compile_failure("link", link, r, opts.arch, None)
    return read_input(work / out, "linked code object")


def parse_deps(work: Path, dep: Path) -> list[Path]:
    """Absolute paths of the files named by a Make-style dependency file (first target only)."""
    try:
        text = dep.read_text()
    except OSError:
        return []
    text = text.replace("\\\n", " ")
    _, _, rest = text.partition(": ")
    names = re.findall(r"(?:\\ |[^\s])+", rest)
    return [Path(os.path.abspath(work / n.replace("\\ ", " "))) for n in names]


def read_back(data: bytes, arch: str, *, label: str = "<compiled>") -> Any:
    """A linked code object read back with the code object reader: it must be for ``arch`` and hold
    at least one kernel, each with its ``NAME.kd`` descriptor. The build reuses the model (one parse)."""
    co = read_code_object(data, label=label)
    if co.header.processor != arch:
        raise CompileError(f"{label}: the code object is for {co.header.processor}, expected {arch}")
    names = tuple(k.name for k in co.kernels)
    if not names:
        raise CompileError(f"{label}: the code object for {arch} has no kernels")
    missing = [k.name for k in co.kernels if k.descriptor is None]
    if missing:
        raise CompileError(f"{label}: kernel(s) without a NAME.kd descriptor: {', '.join(missing)}")
    return co
