"""amd-mxfp4-mm: C[m, n] = A[m, k] @ B[n, k]^T with both operands in MXFP4 (docs/rules.md).

Inputs, in order: A bf16 [m, k]; B bf16 [n, k]; B_q fp4x2 [n, k/2] (B quantized with round-half-to-
even); B_shuffle, the 16x16 pre-shuffle of B_q; B_scale_sh, B's e8m0 scales shuffled and zero-padded
to [pad256(n), pad8(k/32)]. Output bf16 [m, n]. The leaderboard quantizes A the same way as B,
runs ``aiter.gemm_a4w4`` (exact fp4 products, fp32 accumulation) and requires every element
within rtol = atol = 1e-2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from submitgen.errors import ProblemError
from submitgen.problems import mxfp4
from submitgen.problems.compare import Tolerance
from submitgen.problems.spec import mi355x_problem

NAME = "mxfp4-mm"
LEADERBOARD = "amd-mxfp4-mm"
SPEC_KEYS = ("m", "n", "k", "seed")

# task.yml's tests and benchmarks as the leaderboard ran them (reference-kernels f83cb92, the same
# in a participant's copy from the competition; docs/rules.md "amd-mxfp4-mm's shapes" has the older
# 8-benchmark a3788554 and why it is not these).
TESTS = (
    {"m": 8, "n": 2112, "k": 7168, "seed": 124},
    {"m": 16, "n": 3072, "k": 1536, "seed": 6635},
    {"m": 64, "n": 3072, "k": 1536, "seed": 45},
    {"m": 256, "n": 2880, "k": 512, "seed": 78},
)
BENCHMARKS = (
    {"m": 4, "n": 2880, "k": 512, "seed": 4565},
    {"m": 16, "n": 2112, "k": 7168, "seed": 15},
    {"m": 32, "n": 4096, "k": 512, "seed": 457},
    {"m": 32, "n": 2880, "k": 512, "seed": 54},
    {"m": 64, "n": 7168, "k": 2048, "seed": 687},
    {"m": 256, "n": 3072, "k": 1536, "seed": 7856},
)
RTOL = ATOL = 1e-2

TASK_SOURCE = """\
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar(
    "input_t", bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
)
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    m: int
    n: int
    k: int
    seed: int
"""


# _sg_leaves and _sg_key are pasted into every submission of this problem: builtins only.
def _sg_leaves(data):
    return (data[0], data[1], data[2], data[3], data[4])


def _sg_key(data):
    return (data[0].shape, data[1].shape, data[2].shape, data[3].shape, data[4].shape)


def _dims(spec: Mapping[str, Any]) -> tuple[int, int, int]:
    try:
        m, n, k = int(spec["m"]), int(spec["n"]), int(spec["k"])
    except KeyError as e:
        raise ProblemError(f"{NAME}: shape spec needs keys m, n, k (and seed), got {dict(spec)}") from e
    if min(m, n, k) <= 0 or k % 64 or n % 16:
        raise ProblemError(f"{NAME}: need m, n, k > 0, k % 64 == 0 and n % 16 == 0, got m={m} n={n} k={k}")
    return m, n, k


def shape_label(spec: Mapping[str, Any]) -> str:
    m, n, k = _dims(spec)
    return f"m={m} n={n} k={k}"


def quantize_shuffled(x: torch.Tensor, ties: str = "even") -> tuple[torch.Tensor, torch.Tensor]:
    """(fp4x2 [r, c/2], e8m0 scales shuffled and padded) as the leaderboard makes B_q/B_scale_sh."""
    packed, scales = mxfp4.quantize(x, ties)
    return packed.view(mxfp4.FP4X2), mxfp4.shuffle_scales(scales)


def generate_input(spec: Mapping[str, Any], device: str | torch.device = "cpu") -> tuple[torch.Tensor, ...]:
    """(A, B, B_q, B_shuffle, B_scale_sh) built as reference-kernels' ``generate_input`` does: a
    ``torch.Generator`` on ``device`` seeded with ``spec["seed"]``, ``randn`` A then B.

    The leaderboard's generator lives on the GPU; a CPU generator with the same seed yields other
    numbers, so CPU inputs match the leaderboard's in distribution and layout, not bit for bit."""
    m, n, k = _dims(spec)
    gen = torch.Generator(device=device)
    gen.manual_seed(int(spec["seed"]))
    a = torch.randn((m, k), dtype=torch.bfloat16, device=device, generator=gen)
    b = torch.randn((n, k), dtype=torch.bfloat16, device=device, generator=gen)
    b_q, b_scale_sh = quantize_shuffled(b)
    return a, b, b_q, mxfp4.shuffle_weight(b_q), b_scale_sh


def output_meta(spec: Mapping[str, Any]) -> torch.Tensor:
    """C[m, n] in bf16, as a meta tensor."""
    m, n, _ = _dims(spec)
    return torch.empty((m, n), dtype=torch.bfloat16, device="meta")


def meta_input(spec: Mapping[str, Any]) -> tuple[torch.Tensor, ...]:
    m, n, k = _dims(spec)

    def meta(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device="meta")

    return (
        meta((m, k), torch.bfloat16),
        meta((n, k), torch.bfloat16),
        meta((n, k // 2), mxfp4.FP4X2),
        meta((n, k // 2), mxfp4.FP4X2),
        meta((mxfp4.pad_to(n, 256), mxfp4.pad_to(k // 32, 8)), mxfp4.E8M0),
    )


def _unpack(data: Any) -> tuple[torch.Tensor, ...]:
    if not isinstance(data, (tuple, list)) or len(data) != 5:
        raise ProblemError(
            f"{NAME}: expected the 5-tuple (A, B, B_q, B_shuffle, B_scale_sh), got {type(data).__name__}"
        )
    return tuple(data)


def reference(data: Any, ties: str = "even") -> torch.Tensor:
    """What ``aiter.gemm_a4w4`` computes: A quantized to MXFP4 (``ties`` selects the rounding rule;
    the leaderboard uses "even"), B taken from B_shuffle and B_scale_sh as the leaderboard's
    reference does, both dequantized to float32, multiplied, cast to bf16."""
    a, _b, _b_q, b_shuffle, b_scale_sh = _unpack(data)
    m, k = a.shape
    n = b_shuffle.shape[0]
    a_packed, a_scales = mxfp4.quantize(a, ties)
    a_deq = mxfp4.dequantize(a_packed, a_scales)
    b_deq = mxfp4.dequantize(
        mxfp4.unshuffle_weight(b_shuffle), mxfp4.unshuffle_scales(b_scale_sh, n, k // 32)
    )
    return (a_deq @ b_deq.T).to(torch.bfloat16)


PROBLEM = mi355x_problem(globals(), kernel="mxfp4_mm", tolerance=Tolerance(RTOL, ATOL, check_dtype=True),
                         input_names=("A", "B", "B_q", "B_shuffle", "B_scale_sh"))
