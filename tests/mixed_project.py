"""A mixed kernel project for the tests: tests/projects/mm_basic (HIP) with the Triton fill
specialization of tests/projects/triton_fill added to its plan (never launched by it)."""

from __future__ import annotations

import shutil
from pathlib import Path

PROJECTS = Path(__file__).parent / "projects"


def mixed_project(tmp_path: Path) -> Path:
    project = tmp_path / "mixed"
    shutil.copytree(PROJECTS / "mm_basic", project)
    fill = PROJECTS / "triton_fill"
    shutil.copy(fill / "fill.py", project / "fill.py")
    plan = project / "launch.py"
    table = (fill / "launch.py").read_text().split("TRITON = ", 1)[1].split("\n\n\n", 1)[0]
    plan.write_text(plan.read_text().replace('KERNELS = ("mm_tile", "mm_reduce")\n',
                                             f'KERNELS = ("mm_tile", "mm_reduce")\nTRITON = {table}\n'))
    return project
