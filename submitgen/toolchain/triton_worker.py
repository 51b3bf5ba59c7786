"""Triton compiles in a child process, under a time limit (why: docs/triton.md, "Loading the kernel's
file"). The parent passes the specializations in a pickle it wrote itself; the child answers with
msgpack (plain data), which the parent decodes without running anything."""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgpack

from submitgen.errors import SubmitgenError, TritonCompileError, TritonMissingError
from submitgen.system import run_tool
from submitgen.toolchain.triton import _META_FIELDS, TritonArtifact, TritonSpec, triton_env

_FIELDS = ("image", *_META_FIELDS)
_ERRORS = {"TritonMissingError": TritonMissingError}
_MAX_RESULT_BYTES = 1 << 30


def compile_in_child(spec: TritonSpec, arch: str, version: str, timeout: float) -> TritonArtifact:
    """Compile ``spec`` in a child process; raises the error it reports."""
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        **triton_env(),
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
    }
    with tempfile.TemporaryDirectory(prefix="submitgen-triton-job-") as d:
        # Triton's own cache goes away with the job: a compile never depends on (or fills) ~/.triton
        env["TRITON_CACHE_DIR"] = str(Path(d) / "triton-cache")
        request, result = Path(d) / "request.pickle", Path(d) / "result.msgpack"
        request.write_bytes(pickle.dumps({"arch": arch, "version": version, "spec": spec}))
        r = run_tool(
            [sys.executable, "-m", "submitgen.toolchain.triton_worker", str(request), str(result)],
            cwd=Path(d),
            timeout=timeout,
            env=env,
            what=f"compiling Triton kernels ({spec.name}) for {arch}",
            hint="does a kernel's file loop when it is loaded?",
        )
        item = _read_result(result)
    if item is not None and "error" in item:
        raise _ERRORS.get(item["error"], TritonCompileError)(item["message"])
    if item is None:
        lines = [ln for ln in (r.stderr or "").splitlines() if ln.strip()]
        last = f": {lines[-1].strip()}" if lines else ""
        raise TritonCompileError(
            f"{spec.source}: Triton kernel '{spec.kernel}': the compile process ended without "
            f"a result (exit code {r.returncode}){last}"
        )
    return TritonArtifact(spec=spec, **{f: item[f] for f in _FIELDS})


def _read_result(path: Path) -> dict | None:
    try:
        if path.stat().st_size > _MAX_RESULT_BYTES:
            return None
        item = msgpack.unpackb(path.read_bytes(), raw=False)
    except (OSError, ValueError, msgpack.UnpackException):
        return None
    ok = isinstance(item, dict) and ("error" in item or all(f in item for f in _FIELDS))
    return item if ok else None


def main(argv: Sequence[str]) -> int:
    from submitgen.toolchain.triton import compile_here  # lazy: triton imports this module

    request, result = Path(argv[0]), Path(argv[1])
    job = pickle.loads(request.read_bytes())  # written by our own parent process
    try:
        art = compile_here(job["spec"], job["arch"], job["version"])
        item: dict = {f: getattr(art, f) for f in _FIELDS}
    except SubmitgenError as e:
        item = {"error": type(e).__name__, "message": str(e)}
    tmp = result.with_suffix(".tmp")
    tmp.write_bytes(msgpack.packb(item, use_bin_type=True))
    os.replace(tmp, result)
    return 1 if "error" in item else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
