"""amd-mixed-mla: MLA decode attention, one query token per sequence (docs/rules.md).

Inputs, in order: ``q`` (T, 16, 576) bf16; ``kv_data`` = {"bf16": (T_kv, 1, 576) bf16, "fp8": (e4m3fn
(T_kv, 1, 576), float32 scale [1]), "mxfp4": (fp4x2 (T_kv, 1, 288), e8m0 scales [pad256(T_kv), 24]
row-major)}; ``qo_indptr`` and ``kv_indptr`` int32 [bs + 1]; ``config`` dict. Keys are the first 576
dims of a KV row, values the first 512. Output (T, 16, 512) bf16. The leaderboard's reference is
aiter's fp8-Q/fp8-KV asm kernel; its check passes with up to 5% of elements outside rtol = atol = 0.1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from submitgen.errors import ProblemError
from submitgen.problems import mxfp4
from submitgen.problems.compare import Tolerance
from submitgen.problems.spec import mi355x_problem

NAME = "mixed-mla"
LEADERBOARD = "amd-mixed-mla"
SPEC_KEYS = ("batchsize", "qseqlen", "kvseqlen", "seed")

NUM_HEADS = 16
NUM_KV_HEADS = 1
QK_HEAD_DIM = 576
KV_LORA_RANK = 512
QK_ROPE_HEAD_DIM = 64
V_HEAD_DIM = 512
SM_SCALE = 1.0 / math.sqrt(QK_HEAD_DIM)
FP8 = torch.float8_e4m3fn
"""aiter's ``dtypes.fp8`` on gfx950."""


def _spec(bs: int, kv: int, seed: int) -> dict[str, int]:
    return {"batchsize": bs, "qseqlen": 1, "kvseqlen": kv, "seed": seed}


TESTS = (_spec(4, 1024, 4220), _spec(32, 1024, 5412), _spec(64, 8192, 1360), _spec(256, 8192, 9826))
BENCHMARKS = (
    _spec(4, 1024, 4217), _spec(4, 8192, 4220), _spec(32, 1024, 5412), _spec(32, 8192, 5415),
    _spec(64, 1024, 1357), _spec(64, 8192, 1360), _spec(256, 1024, 9823), _spec(256, 8192, 9826),
)
RTOL = ATOL = 0.1
MAX_MISMATCH_RATIO = 0.05

_CHUNK_ROWS = 1 << 15
"""KV rows converted per step while generating: bounds the float32 temporaries to ~100 MB."""

TASK_SOURCE = '''\
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, dict, torch.Tensor, torch.Tensor, dict])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    batchsize: int
    qseqlen: int
    kvseqlen: int
    seed: int
'''


# _sg_leaves and _sg_key are pasted into every submission of this problem: builtins only.
def _sg_leaves(data):
    q, kv, qo_indptr, kv_indptr, _ = data
    return (q, kv["bf16"], kv["fp8"][0], kv["fp8"][1], kv["mxfp4"][0], kv["mxfp4"][1], qo_indptr, kv_indptr)


def _sg_key(data):
    q, kv, qo_indptr, kv_indptr, c = data
    return (
        q.shape,
        kv["bf16"].shape,
        kv["mxfp4"][1].shape,
        qo_indptr.shape,
        kv_indptr.shape,
        c["batch_size"],
        c["q_seq_len"],
        c["kv_seq_len"],
        c["sm_scale"],
    )


def _dims(spec: Mapping[str, Any]) -> tuple[int, int, int]:
    try:
        bs, qs, kvs = int(spec["batchsize"]), int(spec["qseqlen"]), int(spec["kvseqlen"])
    except KeyError as e:
        raise ProblemError(f"{NAME}: shape spec needs keys batchsize, qseqlen, kvseqlen (and seed), "
                           f"got {dict(spec)}") from e
    if bs <= 0 or kvs <= 0:
        raise ProblemError(f"{NAME}: need batchsize > 0 and kvseqlen > 0, got batchsize={bs} kvseqlen={kvs}")
    if qs != 1:
        raise ProblemError(f"{NAME}: every leaderboard config decodes one token (qseqlen=1), got "
                           f"qseqlen={qs}")
    return bs, qs, kvs


def shape_label(spec: Mapping[str, Any]) -> str:
    bs, qs, kvs = _dims(spec)
    return f"batchsize={bs} qseqlen={qs} kvseqlen={kvs}"


def make_config(bs: int, qs: int, kvs: int) -> dict[str, Any]:
    return {
        "batch_size": bs, "num_heads": NUM_HEADS, "num_kv_heads": NUM_KV_HEADS,
        "qk_head_dim": QK_HEAD_DIM, "kv_lora_rank": KV_LORA_RANK, "qk_rope_head_dim": QK_ROPE_HEAD_DIM,
        "v_head_dim": V_HEAD_DIM, "q_seq_len": qs, "kv_seq_len": kvs, "sm_scale": SM_SCALE,
    }


def fp8_scale(x: torch.Tensor) -> torch.Tensor:
    """Per-tensor scale ``amax / finfo(e4m3fn).max`` as float32 [1]; ``aminmax`` avoids an abs() copy."""
    lo, hi = torch.aminmax(x)
    amax = torch.maximum(hi.float(), -lo.float()).clamp(min=1e-12)
    return (amax / torch.finfo(FP8).max).reshape(1)


def quantize_fp8_rows(x: torch.Tensor, scale: torch.Tensor, out: torch.Tensor) -> None:
    """``out = (x / scale).clamp(±max).to(e4m3fn)`` for a 2-D ``x``, a chunk of rows at a time."""
    fmax = torch.finfo(FP8).max
    for i in range(0, x.shape[0], _CHUNK_ROWS):
        out[i:i + _CHUNK_ROWS] = (x[i:i + _CHUNK_ROWS].float() / scale).clamp_(-fmax, fmax).to(FP8)


def generate_input(spec: Mapping[str, Any], device: str | torch.device = "cpu") -> tuple[Any, ...]:
    """(q, kv_data, qo_indptr, kv_indptr, config) as reference-kernels' ``generate_input`` builds
    them: a ``torch.Generator`` on ``device`` seeded with ``spec["seed"]``, ``randn`` q then the bf16
    KV; the fp8 copy with a per-tensor scale; the mxfp4 copy with the ties-up rule of
    ``aiter.utility.fp4_utils``, whose scales are row-major [pad256(T_kv), 24].

    The leaderboard's generator lives on the GPU; a CPU generator with the same seed yields other
    numbers, so CPU inputs match the leaderboard's in distribution and layout, not bit for bit.
    fp4_utils leaves the scale padding uninitialised (``torch.empty``); here it is zero bytes.
    The quantized copies are made in chunks of rows, so the largest config (2M KV tokens, 4.2 GB of
    inputs) needs only ~0.3 GB of temporaries."""
    bs, qs, kvs = _dims(spec)
    t_q, t_kv = bs * qs, bs * kvs
    gen = torch.Generator(device=device)
    gen.manual_seed(int(spec["seed"]))
    q = torch.randn((t_q, NUM_HEADS, QK_HEAD_DIM), dtype=torch.bfloat16, device=device, generator=gen)
    kv = torch.randn((t_kv, NUM_KV_HEADS, QK_HEAD_DIM), dtype=torch.bfloat16, device=device, generator=gen)
    rows = kv.view(t_kv, QK_HEAD_DIM)

    scale = fp8_scale(rows)
    kv_fp8 = torch.empty((t_kv, NUM_KV_HEADS, QK_HEAD_DIM), dtype=FP8, device=device)
    quantize_fp8_rows(rows, scale, kv_fp8.view(t_kv, QK_HEAD_DIM))

    kv_fp4 = torch.empty((t_kv, NUM_KV_HEADS, QK_HEAD_DIM // 2), dtype=torch.uint8, device=device)
    fp4_scales = torch.zeros((mxfp4.pad_to(t_kv, 256), mxfp4.pad_to(QK_HEAD_DIM // 32, 8)),
                             dtype=torch.uint8, device=device)
    packed = kv_fp4.view(t_kv, QK_HEAD_DIM // 2)
    for i in range(0, t_kv, _CHUNK_ROWS):
        j = min(i + _CHUNK_ROWS, t_kv)
        mxfp4.quantize(rows[i:j], ties="up", out=(packed[i:j], fp4_scales[i:j, : QK_HEAD_DIM // 32]))

    kv_data = {
        "bf16": kv,
        "fp8": (kv_fp8, scale),
        "mxfp4": (kv_fp4.view(mxfp4.FP4X2), fp4_scales.view(mxfp4.E8M0)),
    }
    qo_indptr = torch.arange(bs + 1, dtype=torch.int32, device=device) * qs
    kv_indptr = torch.arange(bs + 1, dtype=torch.int32, device=device) * kvs
    return q, kv_data, qo_indptr, kv_indptr, make_config(bs, qs, kvs)


def output_meta(spec: Mapping[str, Any]) -> torch.Tensor:
    """One bf16 row of V_HEAD_DIM per query token and head, as a meta tensor."""
    bs, qs, _ = _dims(spec)
    return torch.empty((bs * qs, NUM_HEADS, V_HEAD_DIM), dtype=torch.bfloat16, device="meta")


def meta_input(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    bs, qs, kvs = _dims(spec)
    t_q, t_kv = bs * qs, bs * kvs

    def meta(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device="meta")

    kv_data = {
        "bf16": meta((t_kv, NUM_KV_HEADS, QK_HEAD_DIM), torch.bfloat16),
        "fp8": (meta((t_kv, NUM_KV_HEADS, QK_HEAD_DIM), FP8), meta((1,), torch.float32)),
        "mxfp4": (meta((t_kv, NUM_KV_HEADS, QK_HEAD_DIM // 2), mxfp4.FP4X2),
                  meta((mxfp4.pad_to(t_kv, 256), mxfp4.pad_to(QK_HEAD_DIM // 32, 8)), mxfp4.E8M0)),
    }
    return (meta((t_q, NUM_HEADS, QK_HEAD_DIM), torch.bfloat16), kv_data,
            meta((bs + 1,), torch.int32), meta((bs + 1,), torch.int32), make_config(bs, qs, kvs))


def _unpack(data: Any) -> tuple[Any, ...]:
    if (not isinstance(data, (tuple, list)) or len(data) != 5 or not isinstance(data[1], Mapping)
            or not isinstance(data[4], Mapping)):
        raise ProblemError(f"{NAME}: expected the 5-tuple (q, kv_data, qo_indptr, kv_indptr, config), "
                           f"got {type(data).__name__}")
    return tuple(data)


def kv_rows(kv_data: Mapping[str, Any], kv: str, start: int, stop: int) -> torch.Tensor:
    """float32 [stop - start, 576] KV rows decoded from the ``kv`` copy ("bf16", "fp8" or "mxfp4")."""
    if kv == "bf16":
        return kv_data["bf16"][start:stop, 0].float()
    if kv == "fp8":
        x, scale = kv_data["fp8"]
        return x[start:stop, 0].float() * scale.float()
    if kv == "mxfp4":
        x, scales = kv_data["mxfp4"]
        return mxfp4.dequantize(x[start:stop, 0], mxfp4.as_bytes(scales)[start:stop])
    raise ProblemError(f"{NAME}: kv must be 'bf16', 'fp8' or 'mxfp4', got {kv!r}")


def reference(data: Any, kv: str = "bf16") -> torch.Tensor:
    """Decode attention in float32, one sequence at a time (so the largest config needs ~50 MB of
    temporaries): for the queries ``q[qo_indptr[b]:qo_indptr[b+1]]`` and the KV rows
    ``kv_indptr[b]:kv_indptr[b+1]``, ``softmax(sm_scale * Q K^T) V`` with K = rows[:, :576],
    V = rows[:, :512], every query seeing every KV row of its sequence.

    ``kv`` picks the KV copy. "bf16" (the default) is the exact answer to the inputs. "fp8" also
    quantizes Q to fp8 with a per-tensor scale, which is what the leaderboard's a8w8 reference
    kernel consumes; "mxfp4" reads the fp4 KV copy. The latter two show what a quantized kernel may
    be expected to score."""
    q, kv_data, qo_indptr, kv_indptr, config = _unpack(data)
    sm_scale = float(config["sm_scale"])
    qf = q.float()
    if kv == "fp8":
        qscale = fp8_scale(q)
        q8 = torch.empty(q.shape, dtype=FP8, device=q.device)
        quantize_fp8_rows(q.reshape(-1, q.shape[-1]), qscale, q8.view(-1, q.shape[-1]))
        qf = q8.float() * qscale
    out = torch.empty((q.shape[0], q.shape[1], V_HEAD_DIM), dtype=torch.bfloat16, device=q.device)
    qo, kvp = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        rows = kv_rows(kv_data, kv, kvp[b], kvp[b + 1])                     # [S, 576]
        qb = qf[qo[b]:qo[b + 1]].reshape(-1, QK_HEAD_DIM)                    # [Tq*16, 576]
        p = torch.softmax((qb @ rows.T) * sm_scale, dim=-1)  # [Tq*16, S]
        out[qo[b] : qo[b + 1]] = (p @ rows[:, :V_HEAD_DIM]).reshape(-1, q.shape[1], V_HEAD_DIM).bfloat16()
    return out


PROBLEM = mi355x_problem(
    globals(), kernel="mixed_mla",
    tolerance=Tolerance(rtol=RTOL, atol=ATOL, max_mismatch_ratio=MAX_MISMATCH_RATIO),
    input_names=("q", "kv_data['bf16']", "kv_data['fp8'][0]", "kv_data['fp8'][1]", "kv_data['mxfp4'][0]",
                 "kv_data['mxfp4'][1]", "qo_indptr", "kv_indptr"),
)
