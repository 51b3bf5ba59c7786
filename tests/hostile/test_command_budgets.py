"""The budgets of `build`, `test` and `bench` (issue 26 item 10): `build`'s own process is held to
its CPU and memory budget like `compile`'s, every program submitgen starts (the test worker and
its watchdog, eval.py's processes, the plan's forked child) gets the limits from before the budget
back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from submitgen.system import BUDGETS

REPO = Path(__file__).resolve().parents[2]


def submitgen(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SUBMITGEN_TEST_BUDGET")}
    full.update(env, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "submitgen", *args], capture_output=True, text=True,
                          cwd=cwd, env=full, timeout=300)


def test_build_has_a_budget_of_its_own():
    assert BUDGETS["build"].memory_mb >= 2 * 1024 and BUDGETS["build"].cpu_seconds >= 60


@pytest.mark.parametrize("env,bound", [({"SUBMITGEN_TEST_BUDGET_MB": "64"}, "memory budget of 64 MB"),
                                       ({"SUBMITGEN_TEST_BUDGET_S": "0"}, "CPU-time budget of 0 s")])
def test_build_past_its_budget_names_the_bound_and_writes_nothing(tmp_path, env, bound):
    r = submitgen("build", "mxfp4-mm", "-o", "sub.py", cwd=tmp_path, **env)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"Error: build: over its {bound} (docs/limits.md) building mxfp4-mm\n")
    assert sorted(os.listdir(tmp_path)) == []


CHILD_LIMITS = """
import os, resource, subprocess, sys
from pathlib import Path
from submitgen import system as budgets
from submitgen.evaluate import group
from submitgen.project.run import run_plan

SHOW = ("import resource; "
        "print(resource.getrlimit(resource.RLIMIT_DATA)[0], resource.getrlimit(resource.RLIMIT_CPU)[0])")

def limits():
    return f"{resource.getrlimit(resource.RLIMIT_DATA)[0]} {resource.getrlimit(resource.RLIMIT_CPU)[0]}"

before = limits()
budgets.own_process()
with budgets.enforced("compile", ("x",)):
    assert limits() != before
    with open("worker.out", "w") as out:
        g = group.start([sys.executable, "-c", SHOW], cwd=Path("."), env=dict(os.environ), stdout=out)
        g.proc.wait()
        group.end(g)
    worker = open("worker.out").read().strip()
    ref = worker  # eval.py's processes: refkernels starts them through group.start too
    plan = run_plan(limits, (), plan_path=Path("launch.py"), timeout=60)
print(before, worker, ref, plan, sep="|")
"""


def test_every_child_gets_the_limits_from_before_the_budget(tmp_path):
    """Before: the test worker, eval.py's processes and the plan's child ran under the budget of
    the command that started them (a data limit that kills a compiler or torch with SIGSEGV)."""
    r = subprocess.run([sys.executable, "-c", CHILD_LIMITS], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert r.returncode == 0, r.stderr
    before, worker, ref, plan = r.stdout.strip().split("|")
    assert worker == ref == plan == before
