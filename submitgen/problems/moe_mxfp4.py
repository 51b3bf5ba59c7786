"""amd-moe-mxfp4: a two-stage fused mixture-of-experts layer with MXFP4 weights (docs/moe-mxfp4.md).

Inputs, a 12-tuple in this order: ``hidden_states`` bf16 [M, H]; ``gate_up_weight`` fp4x2
[E, 2*Dp, Hp/2]; ``down_weight`` fp4x2 [E, Hp, Dp/2]; their e8m0 scales as 2-D tensors
``gate_up_weight_scale`` [E*2*Dp, Hp/32] and ``down_weight_scale`` [E*Hp, Dp/32]; the four
aiter-shuffled copies of those (same shapes); ``topk_weights`` float32 [M, K]; ``topk_ids`` int32
[M, K]; the ``config`` dict. E counts the routed experts plus the shared ones (ids E_routed..E-1,
weight 1.0, in every token's last columns); K = routed top-k + shared. Output bf16 [M, H].

The leaderboard's check: every element within ``0.05 + 0.05 * |ref|`` (no mismatch allowed). Its
eval.py does not clone the inputs: the reference runs on the very tensors the submission received.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from submitgen.errors import ProblemError
from submitgen.problems import mxfp4
from submitgen.problems.compare import Tolerance
from submitgen.problems.moe_mxfp4_ref import reference as run
from submitgen.problems.spec import mi355x_problem

NAME = "moe-mxfp4"
LEADERBOARD = "amd-moe-mxfp4"
SPEC_KEYS = ("dhidden", "dexpert", "nroutedexperts", "nexpertspertoken", "nsharedexperts", "bs", "seed")
RTOL = ATOL = 5e-2


def _spec(h: int, d: int, routed: int, top_k: int, bs: int, seed: int) -> dict[str, int]:
    return dict(zip(SPEC_KEYS, (h, d, routed, top_k, 1, bs, seed)))


TESTS = (
    _spec(4096, 1024, 256, 8, 8, 9371),
    _spec(7168, 2048, 32, 8, 32, 2291),
    _spec(4096, 1536, 64, 6, 128, 81934),
)
BENCHMARKS = (
    _spec(7168, 256, 256, 8, 16, 9371),
    _spec(7168, 256, 256, 8, 128, 2291),
    _spec(7168, 256, 256, 8, 512, 81934),
    _spec(7168, 512, 32, 8, 16, 2291),
    _spec(7168, 512, 32, 8, 128, 81934),
    _spec(7168, 512, 32, 8, 512, 81934),
    _spec(7168, 2048, 32, 8, 512, 81934),
)
REFERENCE_TIMES_US = (152.7, 239.0, 336.5, 106.2, 141.1, 225.0, 380.4)
"""aiter's times on MI355X for the benchmarks, as the leaderboard's task.yml quotes them."""

INPUT_NAMES = ("hidden_states", "gate_up_weight", "down_weight", "gate_up_weight_scale", "down_weight_scale",
               "gate_up_weight_shuffled", "down_weight_shuffled", "gate_up_weight_scale_shuffled",
               "down_weight_scale_shuffled", "topk_weights", "topk_ids")

TASK_SOURCE = """\
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                         torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                         torch.Tensor, dict])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    dhidden: int
    dexpert: int
    nroutedexperts: int
    nexpertspertoken: int
    nsharedexperts: int
    bs: int
    seed: int
"""


# _sg_leaves and _sg_key are pasted into every submission of this problem: builtins only.
def _sg_leaves(data):
    return tuple(data[:11])


def _sg_key(data):
    return (data[0].shape, data[1].shape, data[2].shape, data[10].shape)


@dataclass(frozen=True)
class Dims:
    """The sizes a spec implies (the reference's names in comments)."""

    hidden: int  # d_hidden = H
    expert: int  # d_expert
    routed: int  # n_routed_experts
    top_k: int  # n_experts_per_token (routed only)
    shared: int  # n_shared_experts
    tokens: int  # bs = M

    @property
    def hidden_pad(self) -> int:
        return mxfp4.pad_to(self.hidden, 256)

    @property
    def expert_pad(self) -> int:
        return mxfp4.pad_to(self.expert, 256)

    @property
    def experts(self) -> int:
        """E: routed plus shared."""
        return self.routed + self.shared

    @property
    def total_top_k(self) -> int:
        return self.top_k + self.shared

    def config(self) -> dict[str, int]:
        return {"d_hidden": self.hidden, "d_expert": self.expert, "d_hidden_pad": self.hidden_pad,
                "d_expert_pad": self.expert_pad, "n_routed_experts": self.routed,
                "n_shared_experts": self.shared, "n_experts_per_token": self.top_k,
                "total_top_k": self.total_top_k, "bs": self.tokens}


def dims(spec: Mapping[str, Any]) -> Dims:
    try:
        d = Dims(*(int(spec[key]) for key in SPEC_KEYS[:-1]))
    except KeyError as e:
        raise ProblemError(f"{NAME}: shape spec needs keys {', '.join(SPEC_KEYS)}, got {dict(spec)}") from e
    if min(d.hidden, d.expert, d.routed, d.top_k, d.tokens) <= 0 or d.shared < 0:
        raise ProblemError(f"{NAME}: sizes must be positive, got {dict(spec)}")
    # Every listed shape has H and d_expert multiples of 256, so the reference's padding is zero;
    # other sizes would need a padded hidden_states that the leaderboard never builds.
    if d.hidden % 256 or d.expert % 256:
        raise ProblemError(f"{NAME}: dhidden and dexpert must be multiples of 256, got dhidden={d.hidden} "
                           f"dexpert={d.expert}")
    if d.top_k > d.routed:
        raise ProblemError(f"{NAME}: nexpertspertoken={d.top_k} exceeds nroutedexperts={d.routed}")
    return d


def shape_label(spec: Mapping[str, Any]) -> str:
    d = dims(spec)
    return (f"bs={d.tokens} dhidden={d.hidden} dexpert={d.expert} experts={d.routed}+{d.shared} "
            f"topk={d.top_k}+{d.shared}")


def _routing(d: Dims, hidden: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(topk_weights float32 [M, K], topk_ids int32 [M, K]): softmax over the routed experts' logits,
    the top-k probabilities kept as they are (no renormalisation), then the shared experts at 1.0."""
    dev = hidden.device
    router = torch.randn((d.routed, d.hidden), dtype=torch.bfloat16, device=dev, generator=gen)
    router = router / math.sqrt(d.hidden)
    scores = torch.nn.functional.linear(hidden, router).softmax(dim=-1)
    weights, ids = torch.topk(scores, k=d.top_k, dim=-1, sorted=False)
    shared_ids = torch.arange(d.routed, d.experts, dtype=torch.int32, device=dev).expand(d.tokens, d.shared)
    shared_w = torch.ones((d.tokens, d.shared), dtype=torch.float32, device=dev)
    return torch.cat([weights.float(), shared_w], -1), torch.cat([ids.to(torch.int32), shared_ids], -1)


def _weights(
    d: Dims, rows: int, cols: int, divisor: float, gen: torch.Generator, device: str | torch.device
) -> tuple[torch.Tensor, ...]:
    """One weight tensor ``randn(E, rows, cols) / divisor`` in bf16, quantized as aiter's
    ``per_1x32_f4_quant`` does: (fp4x2 [E, rows, cols/2], e8m0 [E*rows, cols/32], the 16x16-shuffled
    fp4x2, the shuffled e8m0). Drawn and quantized one expert at a time so that the bf16 tensor
    (4.3 GB for the first test) never exists whole."""
    e = d.experts
    packed = torch.empty((e, rows, cols // 2), dtype=torch.uint8, device=device)
    scales = torch.empty((e * rows, cols // mxfp4.BLOCK), dtype=torch.uint8, device=device)
    shuffled = torch.empty_like(packed)
    for i in range(e):
        w = torch.randn((rows, cols), dtype=torch.bfloat16, device=device, generator=gen) / divisor
        mxfp4.quantize(w, "even", out=(packed[i], scales[i * rows : (i + 1) * rows]), scale_rule="per_1x32")
        del w
        # The shuffle's 16-row tiles never straddle two experts (rows % 256 == 0): per expert it is
        # the same permutation aiter applies to the whole 3-D tensor.
        shuffled[i] = mxfp4.shuffle_weight(packed[i])
    packed, shuffled = packed.view(mxfp4.FP4X2), shuffled.view(mxfp4.FP4X2)
    shuffled.is_shuffled = True  # aiter's shuffle_weight sets this attribute too
    return packed, scales.view(mxfp4.E8M0), shuffled, mxfp4.shuffle_scales(scales)


def generate_input(spec: Mapping[str, Any], device: str | torch.device = "cpu") -> tuple[Any, ...]:
    """The 12-tuple as reference-kernels' ``generate_input`` builds it: one ``torch.Generator`` on
    ``device`` seeded with ``spec["seed"]``, drawing hidden_states, the router weight, gate_up, down
    (bf16, in that order); weights quantized per 1x32 block (scale from ``amax / 4``, data rounded
    to nearest even), then aiter's weight and scale shuffles.

    The leaderboard draws on a CUDA generator; a CPU generator with the same seed yields other
    numbers (and the weights are drawn here one expert at a time), so CPU inputs match the
    leaderboard's in shapes, dtypes, layouts and distributions, not bit for bit.

    Memory: the fp4 tensors and their shuffled copies plus one expert's bf16 and float32
    temporaries. Largest case, the first test (E=257, H=4096, d_expert=1024): about 3.3 GB, so
    every test and benchmark shape fits a 24 GiB machine (figures in docs/moe-mxfp4.md)."""
    d = dims(spec)
    gen = torch.Generator(device=device)
    gen.manual_seed(int(spec["seed"]))
    hidden = torch.randn((d.tokens, d.hidden), dtype=torch.bfloat16, device=device, generator=gen)
    topk_weights, topk_ids = _routing(d, hidden, gen)
    hp, dp = d.hidden_pad, d.expert_pad
    gu, gu_s, gu_sh, gu_s_sh = _weights(d, 2 * dp, hp, math.sqrt(d.hidden), gen, device)
    dn, dn_s, dn_sh, dn_s_sh = _weights(d, hp, dp, math.sqrt(d.expert), gen, device)
    return (hidden, gu, dn, gu_s, dn_s, gu_sh, dn_sh, gu_s_sh, dn_s_sh, topk_weights, topk_ids, d.config())


def meta_input(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    d = dims(spec)
    e, hp, dp, m, k = d.experts, d.hidden_pad, d.expert_pad, d.tokens, d.total_top_k

    def meta(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device="meta")

    gu, dn = meta((e, 2 * dp, hp // 2), mxfp4.FP4X2), meta((e, hp, dp // 2), mxfp4.FP4X2)
    gu_s, dn_s = meta((e * 2 * dp, hp // 32), mxfp4.E8M0), meta((e * hp, dp // 32), mxfp4.E8M0)
    return (meta((m, d.hidden), torch.bfloat16), gu, dn, gu_s, dn_s, meta(gu.shape, gu.dtype),
            meta(dn.shape, dn.dtype), meta(gu_s.shape, gu_s.dtype), meta(dn_s.shape, dn_s.dtype),
            meta((m, k), torch.float32), meta((m, k), torch.int32), d.config())


def reference(data: Any, **options: Any) -> torch.Tensor:
    """The leaderboard's ``fused_moe`` pipeline on the CPU (or any device); see
    :func:`submitgen.problems.moe_mxfp4_ref.reference` for the options."""
    return run(data, **options)


PROBLEM = mi355x_problem(globals(), kernel="moe_mxfp4", tolerance=Tolerance(rtol=RTOL, atol=ATOL),
                         input_names=INPUT_NAMES)
