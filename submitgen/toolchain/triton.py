"""Triton kernels -> each backend's images (gfx950/gfx942 hsaco, sm_90 cubins), with the installed
``triton`` (the ``[triton]`` extra), on any machine; compiled in a child process from the bytes the
caller read (``triton_worker.py``). What a launch needs and how the file is loaded: docs/triton.md.
Cache: ``<cache folder>/triton/``, keyed on the source bytes and path, the specialization, the
options, the Triton version (and where it is installed), the target and Triton's ``TRITON_*``
settings; a hit imports no Triton at all."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import linecache
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

from submitgen import options
from submitgen.errors import TritonCompileError, TritonMissingError
from submitgen.system import DEFAULT_TIMEOUT_S
from submitgen.toolchain import cache

INSTALL_HINT = "pip install 'submitgen[triton]'"
_CACHE_FORMAT = "triton-1"
_UNKEYED_ENV = ("TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR")
# Embedded objects never use line info, and Triton's default -lineinfo puts the whole PTX text and
# line tables into every sm_90 cubin (60-70 % of its bytes): off unless the user's environment says
# otherwise. Applied to the compile child and to the cache key alike.
DEFAULT_ENV = {"TRITON_DISABLE_LINE_INFO": "1"}


def arches() -> dict[str, tuple[str, str | int, int, str]]:
    """arch -> GPUTarget(backend, arch, warp size) and the image Triton produces for it
    (``options.TRITON_TARGETS``)."""
    targets = options.TRITON_TARGETS
    return {arch: (t.backend, t.arch, t.warp_size, t.image_kind) for arch, t in targets.items()}


def triton_env() -> dict[str, str]:
    """The ``TRITON_*`` variables a compile runs with: the defaults, then the caller's environment."""
    return {**DEFAULT_ENV, **{k: v for k, v in os.environ.items() if k.startswith("TRITON_")}}


@dataclass(frozen=True)
class TritonSpec:
    """One specialization of a ``@triton.jit`` kernel, as a kernel project names it."""

    name: str  # the launch name the plan uses
    source: Path  # the .py file (for messages and line info)
    source_bytes: bytes  # its bytes, read once by the caller: what is compiled
    kernel: str  # the @triton.jit function in it
    signature: tuple[
        tuple[str, str], ...
    ]  # every parameter -> Triton type ("*bf16", "i32:16"...) or "constexpr"
    constexprs: tuple[tuple[str, object], ...]  # value of every "constexpr" entry
    num_warps: int = 4
    num_stages: int = 2
    options: tuple[tuple[str, object], ...] = ()  # any other backend option (waves_per_eu, ...)


@dataclass(frozen=True)
class TritonArtifact:
    """A compiled specialization and what launching it needs."""

    spec: TritonSpec
    image: bytes  # the hsaco (AMD) or cubin (NVIDIA)
    kind: str  # "hsaco" or "cubin"
    symbol: str  # the kernel's symbol (Triton's metadata name)
    shared: int  # dynamic shared memory (LDS) each block needs, bytes
    num_warps: int
    warp_size: int
    global_scratch: int  # bytes per block of the global scratch pointer (0: pass null)
    profile_scratch: int  # bytes of the profile scratch pointer (0: pass null)
    triton_version: str
    cache_hit: bool = False

    @property
    def block(self) -> int:
        """Threads per block: num_warps x the wave size."""
        return self.num_warps * self.warp_size


def triton_version() -> tuple[str, str]:
    """(version, where) of the ``triton`` package that would be imported, without importing it."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise TritonMissingError(
            f"Triton kernels need the triton package, which is not installed: {INSTALL_HINT}"
        )
    try:
        head = Path(spec.origin).read_text(errors="replace")[:4096]
    except OSError:
        head = ""
    m = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", head, re.MULTILINE)
    return (m.group(1) if m else "unknown"), str(Path(spec.origin).parent)


def compile_triton(spec: TritonSpec, arch: str, *, cache: bool = True,
                   timeout: float = DEFAULT_TIMEOUT_S) -> TritonArtifact:
    """Compile one specialization for ``arch`` (one of ``arches()``: "gfx950", "gfx942", "sm_90"): a
    cache hit here, else in a child process (the kernel's file runs there, under ``timeout``
    seconds, and Triton's own output stays there). Raises TritonMissingError (with how to install
    it) or TritonCompileError (file, kernel, Triton's message, on one line)."""
    known = arches()
    if arch not in known:
        raise TritonCompileError(f"{spec.source}: Triton kernel '{spec.kernel}': arch {arch!r} is not one of "
                                 f"{', '.join(known)}")
    version, where = triton_version()
    key = cache_key(spec, arch, version, where)
    art = _lookup(key, spec) if cache else None
    if art is None:
        from submitgen.toolchain.triton_worker import compile_in_child  # lazy: the worker imports this module

        art = compile_in_child(spec, arch, version, timeout)
        if cache:
            _store(key, art)
    return art


def cache_key(spec: TritonSpec, arch: str, version: str, where: str) -> str:
    env = {k: v for k, v in sorted(triton_env().items()) if k not in _UNKEYED_ENV}
    return cache.key_of({
        "format": _CACHE_FORMAT, "source": hashlib.sha256(spec.source_bytes).hexdigest(),
        "path": str(spec.source), "kernel": spec.kernel, "signature": [list(p) for p in spec.signature],
        "constexprs": [[k, repr(v)] for k, v in spec.constexprs], "num_warps": spec.num_warps,
        "num_stages": spec.num_stages, "options": [[k, repr(v)] for k, v in spec.options],
        "triton": version, "triton_at": where, "arch": arch, "env": env,
    })


_META_FIELDS = ("kind", "symbol", "shared", "num_warps", "warp_size", "global_scratch", "profile_scratch",
                "triton_version")


def _lookup(key: str, spec: TritonSpec) -> TritonArtifact | None:
    root = cache.cache_dir() / "triton"
    try:
        meta = json.loads(cache.read_entry(root / f"{key}.json"))
        image = cache.read_entry(root / f"{key}.bin")
        if hashlib.sha256(image).hexdigest() != meta["sha256"]:
            return None
        return TritonArtifact(spec=spec, image=image, cache_hit=True, **{f: meta[f] for f in _META_FIELDS})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(key: str, art: TritonArtifact) -> None:
    root = cache.cache_dir() / "triton"
    meta = {f: getattr(art, f) for f in _META_FIELDS}
    meta["sha256"] = hashlib.sha256(art.image).hexdigest()
    # an unusable cache folder only costs the next compile its speed
    if cache.write_cache_file(root / f"{key}.bin", art.image) is None:
        cache.write_cache_file(root / f"{key}.json", json.dumps(meta).encode())


def _fail(spec: TritonSpec, why: str, line: int | None = None) -> TritonCompileError:
    where = f"{spec.source}:{line}" if line else str(spec.source)
    flat = " ".join(ln.strip() for ln in why.splitlines() if ln.strip())
    return TritonCompileError(f"{where}: Triton kernel '{spec.kernel}': {flat}")


@contextlib.contextmanager
def _module_from_bytes(spec: TritonSpec):
    """Run the kernel's file from ``spec.source_bytes`` as a fresh module (registered while in
    use, so that Triton finds its globals); ``inspect`` reads those same bytes through linecache."""
    filename = str(spec.source)
    text = spec.source_bytes.decode("utf-8", "replace")
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    name = "submitgen_triton_" + hashlib.sha256(spec.source_bytes).hexdigest()[:16]
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    try:
        try:
            code = compile(spec.source_bytes, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            raise _fail(spec, f"cannot load the file: {type(e).__name__}: {getattr(e, 'msg', e)}",
                        getattr(e, "lineno", None)) from None
        try:
            exec(code, module.__dict__)
        except (Exception, SystemExit) as e:
            raise _fail(
                spec, f"loading the file raised {type(e).__name__}: {e}", _error_line(e, filename)
            ) from None
        yield module
    finally:
        sys.modules.pop(name, None)


def _error_line(e: BaseException, filename: str) -> int | None:
    tb, line = e.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _kernel_of(spec: TritonSpec, module: types.ModuleType, jit_type: type):
    fn = module.__dict__.get(spec.kernel)
    if fn is None:
        found = sorted(k for k, v in module.__dict__.items() if isinstance(v, jit_type))
        raise _fail(
            spec, f"no such function in the file (its @triton.jit functions: {', '.join(found) or 'none'})"
        )
    if not isinstance(fn, jit_type):
        raise _fail(spec, f"is a {type(fn).__name__}, not a @triton.jit function")
    return fn


def check_signature(spec: TritonSpec, fn) -> dict[str, str]:
    """The signature in the kernel's parameter order; a mismatch with the kernel's parameters is
    a TritonCompileError naming each difference."""
    params = [(p.name, bool(p.is_constexpr)) for p in fn.params]
    names = [n for n, _ in params]
    sig = {n: t.partition(":")[0] for n, t in spec.signature}
    problems = [
        f"{label}: {', '.join(bad)}" for label, bad in _signature_differences(params, sig, spec) if bad
    ]
    if problems:
        raise _fail(
            spec,
            f"specialization '{spec.name}': the signature does not match the kernel's parameters "
            f"({', '.join(names)}): {'; '.join(problems)}",
        )
    return {n: sig[n] for n in names}


def divisibility_attrs(spec: TritonSpec, order: list[str]) -> dict[tuple[int], list[list]]:
    """Triton's ahead-of-time hint spelling: a type ending in ``:16`` (``"*bf16:16"``, ``"i32:16"``)
    promises a 16-byte aligned pointer or an integer divisible by 16, which lets Triton vectorise;
    the launch must keep the promise."""
    attrs = {}
    for name, typ in spec.signature:
        _, colon, hint = typ.partition(":")
        if not colon:
            continue
        if hint != "16" or typ.startswith("constexpr"):
            raise _fail(
                spec,
                f"specialization '{spec.name}': parameter {name}: type {typ!r} has an unknown hint "
                "(only ':16' is accepted: a 16-byte aligned pointer or an integer divisible by 16)",
            )
        attrs[(order.index(name),)] = [["tt.divisibility", 16]]
    return attrs


def _signature_differences(params: list[tuple[str, bool]], sig: dict[str, str], spec: TritonSpec):
    names = {n for n, _ in params}
    typed = {n for n, t in sig.items() if t == "constexpr"}
    values = dict(spec.constexprs)
    return (
        ("missing from the signature", [n for n, _ in params if n not in sig]),
        ("not parameters of the kernel", [n for n in sig if n not in names]),
        (
            "constexpr parameters not typed 'constexpr'",
            [n for n, c in params if c and n in sig and n not in typed],
        ),
        (
            "'constexpr' entries without a value in constexprs",
            [n for n in sig if n in typed and n not in values],
        ),
        ("constexprs values for entries not typed 'constexpr'", [n for n in values if n not in typed]),
    )


def _check_options(spec: TritonSpec, backend, opts: dict) -> None:
    import dataclasses  # noqa: PLC0415

    known = {f.name for f in dataclasses.fields(backend.parse_options({}))}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise _fail(spec, f"specialization '{spec.name}': unknown option(s) {', '.join(unknown)} for this "
                          f"backend (known: {', '.join(sorted(known))})")


def compile_here(spec: TritonSpec, arch: str, version: str) -> TritonArtifact:
    """Compile in this process (the child's side of compile_triton)."""
    try:
        import triton  # noqa: PLC0415
        from triton.backends.compiler import GPUTarget  # noqa: PLC0415
        from triton.compiler import ASTSource  # noqa: PLC0415
        from triton.compiler.compiler import make_backend  # noqa: PLC0415
        from triton.runtime.jit import JITFunction  # noqa: PLC0415
    except ImportError as e:
        raise TritonMissingError(f"Triton kernels need the triton package, which cannot be imported ({e}): "
                                 f"{INSTALL_HINT}") from None

    backend_name, target_arch, warp, kind = arches()[arch]
    target = GPUTarget(backend_name, target_arch, warp)
    opts = {"num_warps": spec.num_warps, "num_stages": spec.num_stages, **dict(spec.options)}
    with _module_from_bytes(spec) as module, warnings.catch_warnings():
        # Triton 3.9 warns that its fp-fusion default changes in 3.10; the version is in the cache
        # key, and a specialization can set enable_fp_fusion itself
        warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION")
        fn = _kernel_of(spec, module, JITFunction)
        signature = check_signature(spec, fn)
        attrs = divisibility_attrs(spec, list(signature))
        _check_options(spec, make_backend(target), opts)
        src = ASTSource(fn=fn, signature=signature, constexprs=dict(spec.constexprs), attrs=attrs)
        try:
            compiled = triton.compile(src, target=target, options=opts)
        except Exception as e:  # Triton raises many kinds (CompilationError, RuntimeError from MLIR/LLVM...)
            raise _compile_error(spec, fn, arch, e) from None
    md = compiled.metadata
    image = compiled.asm[kind]
    art = TritonArtifact(
        spec=spec, image=bytes(image), kind=kind, symbol=md.name, shared=int(md.shared),
        num_warps=int(md.num_warps), warp_size=int(getattr(md, "warp_size", warp)),
        global_scratch=int(getattr(md, "global_scratch_size", 0)),
        profile_scratch=int(getattr(md, "profile_scratch_size", 0)), triton_version=version,
    )
    if kind == "hsaco":
        from submitgen.toolchain.compile import read_back  # lazy: compile imports this module

        co = read_back(art.image, arch, label=f"{spec.source.name}:{spec.kernel}")
        names = [k.name for k in co.kernels]
        if art.symbol not in names:
            raise _fail(spec, f"Triton's object for {arch} holds {', '.join(names)}, not {art.symbol}")
    return art


def _compile_error(spec: TritonSpec, fn, arch: str, e: Exception) -> TritonCompileError:
    node = getattr(e, "node", None)
    line = None
    if node is not None and getattr(node, "lineno", None):
        line = _def_line(spec, fn) + node.lineno - 1
    why = getattr(e, "error_message", None) or str(e) or type(e).__name__
    return _fail(spec, f"compiling for {arch} failed: {why}", line)


def _def_line(spec: TritonSpec, fn) -> int:
    """The file line of the kernel's ``def`` (Triton counts error lines from it)."""
    start = int(getattr(fn, "starting_line_number", 1) or 1)
    lines = spec.source_bytes.decode("utf-8", "replace").splitlines()
    pat = re.compile(rf"^\s*def\s+{re.escape(spec.kernel)}\b")
    for i in range(max(start - 1, 0), len(lines)):
        if pat.match(lines[i]):
            return i + 1
    return start
