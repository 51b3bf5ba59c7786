"""The run folder of ``submitgen test``/``bench``: ``submission.py`` beside the problem's
``task.py`` and a ``reference.py`` and ``utils.py`` written here from the problem spec, with the
names and arguments of the leaderboard's (docs/evaluate.md, "What runs"). The verdict never reads
them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_REFERENCE = '''"""reference.py for {leaderboard}, written by `submitgen test` from its problem spec
({module}); not the leaderboard's own file. Same names and arguments."""

import torch

from submitgen.problems.registry import load as _load

_PROBLEM = _load({module!r}, {name!r}, {root!r})


def _device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def generate_input({args}):
    return _PROBLEM.generate_input({spec}, device=_device())


def ref_kernel(data):
    return _PROBLEM.reference(data)


def check_implementation(data, output):
    result = _PROBLEM.check(output, data)
    return (True, "") if result.passed else (False, str(result.message))
'''

_UTILS = '''"""utils.py as `submitgen test` lays it out beside a submission: the helpers the leaderboard's
utils.py offers, written by submitgen (not the leaderboard's own file)."""

import random

import torch


def set_seed(seed=42):
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def get_device(use_cuda=True):
    return torch.device("cuda" if use_cuda and torch.cuda.is_available() else "cpu")


def _mismatch_lines(received, expected, bad, max_print):
    index = bad.nonzero()
    lines = [f"Number of mismatched elements: {{index.shape[0]}}"]
    for i in index[:max_print]:
        at = tuple(int(x) for x in i)
        lines.append(f"ERROR at {{at}}: {{received[at]}} {{expected[at]}}")
    if index.shape[0] > max_print:
        lines.append(f"... and {{index.shape[0] - max_print}} more mismatched elements.")
    return lines


@torch.no_grad()
def verbose_allclose(received, expected, rtol=1e-05, atol=1e-08, max_print=5):
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    r, e = received.float(), expected.float()
    close = (r - e).abs() <= atol + rtol * e.abs()
    both_nan = torch.isnan(r) & torch.isnan(e)
    same_inf = torch.isinf(r) & torch.isinf(e) & (torch.sign(r) == torch.sign(e))
    bad = ~(close | both_nan | same_inf)
    return _mismatch_lines(received, expected, bad, max_print) if bool(bad.any()) else []


@torch.no_grad()
def verbose_allequal(received, expected, max_print=5):
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    bad = received != expected
    return _mismatch_lines(received, expected, bad, max_print) if bool(bad.any()) else []


def match_reference(data, output, reference, rtol=1e-05, atol=1e-08):
    expected = reference(data)
    reasons = verbose_allclose(output, expected, rtol=rtol, atol=atol)
    if reasons:
        return False, "mismatch found! custom implementation doesn't match reference: " + " ".join(reasons)
    return True, ""


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        return match_reference(data, output, reference=reference, **kwargs)

    return wrapped


def clear_l2_cache():
    if torch.cuda.is_available():
        torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda").zero_()


clear_l2_cache_large = clear_l2_cache
'''


def reference_source(problem: Any, root: str | None) -> str:
    """``reference.py`` for ``problem`` (``root``: the folder its module imports from, or None)."""
    keys = tuple(problem.spec_keys)
    spec = "{" + ", ".join(f"{k!r}: {k}" for k in keys) + "}"
    return _REFERENCE.format(leaderboard=problem.leaderboard, module=problem.module, name=problem.name,
                             root=root, args=", ".join(keys), spec=spec)


def lay_out(run: Path, text: str, problem: Any, root: str | None) -> None:
    """Write the run folder's four files."""
    run.mkdir()
    (run / "submission.py").write_text(text, encoding="utf-8", errors="surrogateescape")
    (run / "task.py").write_text(problem.task_source)
    (run / "reference.py").write_text(reference_source(problem, root))
    (run / "utils.py").write_text(_UTILS.format())
