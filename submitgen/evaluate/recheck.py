"""``bench --mode leaderboard``: every timed call checked, as in the leaderboard's ranked run.

eval.py's ranked run (``recheck=True``) adds 13 to the case's seed before every timed call,
generates the inputs again and checks that call's output. Here the worker writes each timed
call's output (``out-<i>-r<j>.bin``) and this module, in the parent, regenerates the inputs of
each call from the seed it computes itself, and judges every output with the problem's check. A
file that is right on the first call and wrong afterwards fails the shape, naming the call."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

RECHECK_SEED_STEP = 13
"""eval.py's ranked run adds this to the case's seed before every timed call."""


def recheck_path(out_path: str, j: int) -> str:
    """Where the worker writes the output of timed call ``j`` (from 0) in leaderboard mode."""
    stem = out_path[:-4] if out_path.endswith(".bin") else out_path
    return f"{stem}-r{j}.bin"


def recheck_spec(spec: Mapping[str, Any], j: int) -> dict[str, Any]:
    """The spec of timed call ``j`` (from 0) in leaderboard mode: seed + 13 * (j + 1)."""
    out = dict(spec)
    if "seed" in out:
        out["seed"] = int(out["seed"]) + RECHECK_SEED_STEP * (j + 1)
    return out


def recheck_fields(problem: Any, spec: Mapping[str, Any], ev: Mapping[str, Any], out: Path,
                   fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` (the first call's check, passed) with ``passed`` False and the message naming the
    first timed call whose output fails, or that cannot be read back; unchanged when all pass."""
    from .check import OutputError, judge, read_output

    def failed(message: str) -> dict[str, Any]:
        return {**fields, "passed": False, "message": message}

    described = ev.get("rechecks")
    runs = ev.get("runs")
    if not isinstance(described, list) or not isinstance(runs, int) or len(described) != runs or runs < 1:
        count = len(described) if isinstance(described, list) else "no"
        return failed(f"leaderboard mode: the worker reported {runs!r} timed calls but {count} outputs "
                      "to check")
    for j, desc in enumerate(described):
        path = Path(recheck_path(str(out), j))
        call_spec = recheck_spec(spec, j)
        where = f"timed call {j + 1} of {runs}"
        if "seed" in call_spec:
            where += f" (seed {call_spec['seed']})"
        try:
            output = read_output(desc, path)
            result = judge(problem, call_spec, output)
        except OutputError as e:
            return failed(f"{where}: the worker's output cannot be read back: {e}")
        finally:
            path.unlink(missing_ok=True)
        if not result.passed:
            return failed(f"{where}: {result.message}")
    return fields
