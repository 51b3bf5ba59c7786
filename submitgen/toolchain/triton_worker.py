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


def compile_in_child(
    specs: Sequence[TritonSpec], arch: str, version: str, timeout: float
) -> list[TritonArtifact]:
    """Compile ``specs`` in one child process; raises the first error it reports."""
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        **triton_env(),
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
    }
    names = ", ".join(s.name for s in specs)
    with tempfile.TemporaryDirectory(prefix="submitgen-triton-job-") as d:
        # Triton's own cache goes away with the job: a compile never depends on (or fills) ~/.triton
        env["TRITON_CACHE_DIR"] = str(Path(d) / "triton-cache")
        request, result = Path(d) / "request.pickle", Path(d) / "result.msgpack"
        request.write_bytes(pickle.dumps({"arch": arch, "version": version, "specs": list(specs)}))
        r = run_tool(
            [sys.executable, "-m", "submitgen.toolchain.triton_worker", str(request), str(result)],
            cwd=Path(d),
            timeout=timeout,
            env=env,
            what=f"compiling Triton kernels ({names}) for {arch}",
            hint="does a kernel's file loop when it is loaded?",
        )
        done = _read_result(result)
    out = []
    for spec, item in zip(specs, done):
        if "error" in item:
            raise _ERRORS.get(item["error"], TritonCompileError)(item["message"])
        out.append(TritonArtifact(spec=spec, **{f: item[f] for f in _FIELDS}))
    if len(out) < len(specs):
        spec = specs[len(out)]
        lines = [ln for ln in (r.stderr or "").splitlines() if ln.strip()]
        last = f": {lines[-1].strip()}" if lines else ""
        raise TritonCompileError(
            f"{spec.source}: Triton kernel '{spec.kernel}': the compile process ended without "
            f"a result (exit code {r.returncode}){last}"
        )
    return out


def _read_result(path: Path) -> list[dict]:
    try:
        if path.stat().st_size > _MAX_RESULT_BYTES:
            return []
        data = msgpack.unpackb(path.read_bytes(), raw=False)
    except (OSError, ValueError, msgpack.UnpackException):
        return []
    items = data.get("results") if isinstance(data, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _write(path: Path, results: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(msgpack.packb({"results": results}, use_bin_type=True))
    os.replace(tmp, path)


def main(argv: Sequence[str]) -> int:
    from submitgen.toolchain.triton import compile_here  # lazy: triton imports this module

    request, result = Path(argv[0]), Path(argv[1])
    job = pickle.loads(request.read_bytes())  # written by our own parent process
    results: list[dict] = []
    for spec in job["specs"]:
        try:
            art = compile_here(spec, job["arch"], job["version"])
        except SubmitgenError as e:
            results.append({"error": type(e).__name__, "message": str(e)})
            _write(result, results)
            return 1
        results.append({f: getattr(art, f) for f in _FIELDS})
        _write(result, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
