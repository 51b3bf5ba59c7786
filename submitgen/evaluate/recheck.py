"""``bench --mode leaderboard``: every timed call checked, as in the leaderboard's ranked run.

eval.py's ranked run (``recheck=True``) adds 13 to the case's seed before every timed call,
generates the inputs again and checks that call's output. Here the worker writes each timed
call's output (``out-<i>-r<j>.bin``) and the inputs that call changed; this module, in the parent,
regenerates the inputs of each call from the seed it computes itself and judges every output with
the problem's check. A file that is right on the first call and wrong afterwards fails the shape,
naming the call; one that writes into a timed call's inputs is named as modifying them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from submitgen.evaluate.check import Assessment, UnreadableOutput, device, read_output

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


def recheck_timed_calls(assessor: Any, spec: Mapping[str, Any], ev: Mapping[str, Any], out: Path,
                        first: Assessment) -> Assessment:
    """``first`` (the untimed call's assessment, without an error) with every timed call judged too:
    call ``j``'s inputs regenerated here from its seed and its output checked; an input the worker
    found changed by the call is named in ``mutated`` and, with the call, in the message. The first
    failing output fails the shape, naming the call; the output files are removed."""
    problem = assessor.problem
    mutated = list(first.mutated)
    fields = first.fields
    changes: list[str] = []  # each timed call's changed inputs, named with the call
    described = ev.get("rechecks")
    runs = ev.get("runs")
    if not isinstance(described, list) or not isinstance(runs, int) or len(described) != runs or runs < 1:
        count = len(described) if isinstance(described, list) else "no"
        return Assessment(None, f"leaderboard mode: the worker reported {runs!r} timed calls but {count} "
                                "outputs to check", tuple(mutated))
    message: str | None = None
    try:
        for j, desc in enumerate(described):
            call_spec = recheck_spec(spec, j)
            where = f"timed call {j + 1} of {runs}"
            if "seed" in call_spec:
                where += f" (seed {call_spec['seed']})"
            now = desc["mutated"]
            changes += [f"{where}: input '{m}' was changed by the call" for m in now if m not in mutated]
            mutated += [m for m in now if m not in mutated]
            if message is not None or not (fields and fields["passed"]):
                continue
            try:
                data = problem.generate_input(dict(call_spec), device=device())
                limit, expected = assessor.output_limit(call_spec, data)
                output = read_output(desc.get("output"), Path(recheck_path(str(out), j)), limit)
                result = assessor.fields_of(call_spec, output, data, expected)
            except UnreadableOutput as e:
                message = f"{where}: the worker's output cannot be read back: {e}"
                continue
            except Exception as e:  # noqa: BLE001 - e.g. the reference ran out of memory: the shape fails, named
                return Assessment(None, f"{where}: checking the output failed: {type(e).__name__}: {e}",
                                  tuple(mutated))
            if not result["passed"]:
                message = f"{where}: {result['message']}"
    finally:
        for j in range(len(described)):
            Path(recheck_path(str(out), j)).unlink(missing_ok=True)
    if message is not None:
        failed = {**(fields or {}), "passed": False, "message": "; ".join([message, *changes])}
        return Assessment(failed, None, tuple(mutated))
    if changes and fields is not None:
        fields = {**fields, "message": "; ".join([str(fields.get("message", "")), *changes])}
    return Assessment(fields, None, tuple(mutated))
