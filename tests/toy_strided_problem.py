"""The toy problem (tests/toy_problem.py) under a third name whose inputs are not contiguous: a
every second element of an (n, 2) tensor from its second column on, b a row of a transposed
(n, 3) tensor. Its evaluator hands the very inputs over, as toy-noclone's does; the GPU read-back
tests (tests/hostile/test_evaluate_gpu_readback.py) use it to read strided inputs back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch
from toy_problem import PROBLEM as _TOY
from toy_problem import _n


def generate_input(spec: Mapping[str, Any], device: str | torch.device = "cpu") -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(spec["seed"]))
    n = _n(spec)
    a = torch.randn((n, 2), device=device, generator=gen)[:, 1]
    b = torch.randn((n, 3), device=device, generator=gen).t()[2]
    return (a, b)


PROBLEM = replace(_TOY, name="toy-strided", leaderboard="amd-toy-strided", eval_clones_inputs=False,
                  generate_input=generate_input, module=__name__)
