"""``submitgen problems``: the registry as a table (problem, leaderboard, GPU, where it comes from),
the leaderboards lint knows without a problem, and the plug-ins that did not load; what a plug-in
gives is shown escaped (``textfmt.printable``): one row each, no terminal escape."""

from __future__ import annotations

from submitgen.problems.registry import REGISTRY, get_problem, leaderboards, problems
from submitgen.registry import BrokenPlugin
from submitgen.textfmt import printable


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    rows = [tuple(printable(c) for c in r) for r in rows]  # a plug-in's package name, shown as text
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def format_problems(folders: tuple[str, ...] = ()) -> tuple[list[str], tuple[BrokenPlugin, ...]]:
    """The listing's lines, and the broken plug-ins it names (the command exits 1 when any); with
    ``folders`` (problem folders), their rows only."""
    rows: list[tuple[str, ...]] = [("problem", "leaderboard", "gpu", "from")]
    for folder in folders:
        p = get_problem(folder)
        arch = p.arch or "none (build needs --target and --arch)"
        rows.append((p.name, p.leaderboard, p.gpu,
                     f"problem folder: {len(p.tests)} tests, {len(p.benchmarks)} benchmarks, arch {arch}"))
    if folders:
        return _table(rows), ()
    for p in problems():
        rows.append((p.name, p.leaderboard, p.gpu, REGISTRY.origin(p.name).describe()))
    others = [lb for lb in leaderboards().values() if lb.problem is None]
    for lb in others:
        rows.append(("-", lb.name, ",".join(lb.gpus), "lint only (no problem module)"))
    lines = _table(rows)
    broken = tuple(REGISTRY.broken)
    if broken:
        lines += ["", f"not loaded ({len(broken)}):"]
        lines += [f"  {printable(b.message())}" for b in broken]
    return lines, broken
