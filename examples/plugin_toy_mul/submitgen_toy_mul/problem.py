"""The toy-mul problem: out[i] = a[i] * b[i] on float32 vectors of length n.

The module binds PROBLEM = ProblemSpec(...); the entry point `toy-mul` in pyproject.toml names it.
docs/plugins.md lists the fields a plug-in may rely on."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from submitgen.errors import ProblemError
from submitgen.problems import ProblemSpec, Tolerance
from submitgen.problems.spec import frozen_specs

# The leaderboard's task.py: what `submitgen test` gives the submission to import.
TASK_SOURCE = '''\
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    n: int
    seed: int
'''


# Pasted into every submission: builtins only.
def _sg_leaves(data):
    return (data[0], data[1])


def _sg_key(data):
    return (data[0].shape, data[1].shape)


def _n(spec: Mapping[str, Any]) -> int:
    n = int(spec["n"])
    if n <= 0:
        raise ProblemError(f"toy-mul: need n > 0, got n={n}")
    return n


def shape_label(spec: Mapping[str, Any]) -> str:
    return f"n={_n(spec)}"


def generate_input(spec: Mapping[str, Any], device: str | torch.device = "cpu") -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(spec["seed"]))
    n = _n(spec)
    return (torch.randn((n,), device=device, generator=gen), torch.randn((n,), device=device, generator=gen))


def meta_input(spec: Mapping[str, Any]) -> tuple[torch.Tensor, ...]:
    n = _n(spec)
    return (torch.empty((n,), device="meta"), torch.empty((n,), device="meta"))


def output_meta(spec: Mapping[str, Any]) -> torch.Tensor:
    return torch.empty((_n(spec),), dtype=torch.float32, device="meta")


def reference(data: Any) -> torch.Tensor:
    a, b = data
    return (a.double() * b.double()).float()


PROBLEM = ProblemSpec(
    name="toy-mul",
    leaderboard="example-toy-mul",
    gpu="MI355X",
    arch="gfx950",
    spec_keys=("n", "seed"),
    tests=frozen_specs(({"n": 256, "seed": 1}, {"n": 1000, "seed": 2})),
    benchmarks=frozen_specs(({"n": 4096, "seed": 3},)),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),
    payload_baseline=2_000,
    leaves=_sg_leaves,
    key=_sg_key,
    input_names=("a", "b"),
    fallback_module="submitgen_toy_mul.fallback",
    kernel_project=Path(__file__).resolve().parent / "kernels",
    task_source=TASK_SOURCE,
    shape_label=shape_label,
    generate_input=generate_input,
    meta_input=meta_input,
    output_meta=output_meta,
    reference=reference,
    module=__name__,
)
