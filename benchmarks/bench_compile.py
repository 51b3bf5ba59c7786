"""Cold vs warm (cached) compile time of realistic kernels: an MXFP4 GEMM tile loop with the
gfx950 scaled MFMA, fp4/e8m0 helpers and LDS staging from submitgen/device.h (HIP, bundled clang),
and, when triton is installed, a Triton MXFP4 GEMM (``tl.dot_scaled`` on e2m1) for gfx950 and sm_90.

    python benchmarks/bench_compile.py [--arch gfx950] [--repeat 5] [--no-triton]

Cold: an empty cache folder each time (for Triton, a compile process that imports triton). Warm:
the same inputs again (no compiler runs; for Triton, no process and no Triton import)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from submitgen.toolchain.compile import compile_sources  # noqa: E402
from submitgen.toolchain.triton import TritonSpec, compile_triton  # noqa: E402

KERNEL = r"""
#include <submitgen/device.h>
typedef float v4f __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));

extern "C" __global__ SG_LAUNCH_BOUNDS(256) void mxfp4_gemm(
    const uint8_t* __restrict__ A, const uint8_t* __restrict__ B, const uint8_t* __restrict__ SA,
    const uint8_t* __restrict__ SB, sg_bf16* __restrict__ C, int M, int N, int K) {
  __shared__ v8i As[4][64];
  __shared__ v8i Bs[4][64];
  const int wave = threadIdx.x / SG_WARP_SIZE, lane = threadIdx.x % SG_WARP_SIZE;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  v4f acc[4] = {};
  for (int k0 = 0; k0 < K; k0 += 128) {
    const v8i* ga = (const v8i*)(A + ((size_t)(row0 + wave * 16 + lane % 16) * K + k0) / 2);
    const v8i* gb = (const v8i*)(B + ((size_t)(col0 + wave * 16 + lane % 16) * K + k0) / 2);
    As[wave][lane] = ga[lane / 16];
    Bs[wave][lane] = gb[lane / 16];
    __syncthreads();
    int sa = SA[(row0 + wave * 16 + lane % 16) * (K / 32) + k0 / 32 + lane / 16];
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      int sb = SB[(col0 + j * 16 + lane % 16) * (K / 32) + k0 / 32 + lane / 16];
      acc[j] = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(As[wave][lane], Bs[j][lane], acc[j],
                                                                4, 4, 0, sa, 0, sb);
    }
    __syncthreads();
  }
  #pragma unroll
  for (int j = 0; j < 4; ++j)
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
      int row = row0 + wave * 16 + (lane / 16) * 4 + r, col = col0 + j * 16 + lane % 16;
      if (row < M && col < N) C[(size_t)row * N + col] = sg_float_to_bf16(acc[j][r]);
    }
}
"""


TRITON_KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def mxfp4_mm_kernel(a_ptr, b_ptr, as_ptr, bs_ptr, c_ptr, M, N, K,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 // 2 + tl.arange(0, BK // 2)
        ks = k0 // 32 + tl.arange(0, BK // 32)
        a = tl.load(a_ptr + rm[:, None] * (K // 2) + ka[None, :])
        b = tl.load(b_ptr + rn[None, :] * (K // 2) + ka[:, None])
        sa = tl.load(as_ptr + rm[:, None] * (K // 32) + ks[None, :])
        sb = tl.load(bs_ptr + rn[:, None] * (K // 32) + ks[None, :])
        acc = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1", acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=mask)
"""
TRITON_SIGNATURE = (
    ("a_ptr", "*u8"),
    ("b_ptr", "*u8"),
    ("as_ptr", "*u8"),
    ("bs_ptr", "*u8"),
    ("c_ptr", "*bf16"),
    ("M", "i32"),
    ("N", "i32"),
    ("K", "i32"),
    ("BM", "constexpr"),
    ("BN", "constexpr"),
    ("BK", "constexpr"),
)


def cold_and_warm(compile_once, repeat: int, cache_root: Path, prepare=None):
    """Median seconds of a cold compile (empty cache folder) and of the warm one after it, and
    the last cold result. ``compile_once()`` returns (result, cache_hit, image)."""
    cold, warm = [], []
    for i in range(repeat):
        os.environ["SUBMITGEN_CACHE_DIR"] = str(cache_root / f"cache{i}")
        if prepare:
            prepare(cache_root / f"cache{i}")
        t0 = time.perf_counter()
        first, hit, image = compile_once()
        cold.append(time.perf_counter() - t0)
        assert not hit
        t0 = time.perf_counter()
        _, hit2, image2 = compile_once()
        warm.append(time.perf_counter() - t0)
        assert hit2 and image2 == image
    return statistics.median(cold), statistics.median(warm), first


def report(c: float, w: float, repeat: int, note: str = "") -> None:
    print(f"  cold compile (median of {repeat}{note}): {c * 1000:8.1f} ms")
    print(f"  warm compile (cache hit, median): {w * 1000:8.2f} ms")
    print(f"  speed-up: {c / w:.0f}x  {'OK (>= 10x)' if c / w >= 10 else 'BELOW 10x'}")


def bench_triton(d: Path, repeat: int) -> None:
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        print("triton: not installed, skipped (pip install 'submitgen[triton]')")
        return
    src = d / "mxfp4_mm.py"
    src.write_text(TRITON_KERNEL)
    spec = TritonSpec("mm", src, src.read_bytes(), "mxfp4_mm_kernel", TRITON_SIGNATURE,
                      (("BM", 64), ("BN", 64), ("BK", 128)), 4, 2)
    for arch in ("gfx950", "sm_90"):
        def once(arch=arch):
            a = compile_triton(spec, arch)
            return a, a.cache_hit, a.image

        c, w, a = cold_and_warm(once, repeat, d / f"triton-{arch}")
        print(
            f"triton {a.triton_version} mxfp4_mm_kernel ({arch}, {a.kind} {len(a.image)} bytes, shared "
            f"{a.shared})"
        )
        report(c, w, repeat, "; each starts the compile process, which imports triton")


def bench_hip(d: Path, arch: str, repeat: int) -> None:
    src = d / "gemm.hip"
    src.write_text(KERNEL)

    def probe_then_empty(cache: Path) -> None:  # the toolchain probe is cached per folder: not timed
        compile_sources([src], arch=arch, use_cache=False)
        for p in cache.glob("objects/*"):
            p.unlink()

    def once():
        r = compile_sources([src], arch=arch)
        return r, r.cache_hit, r.code_object

    c, w, r = cold_and_warm(once, repeat, d / "hip", probe_then_empty)
    print(f"HIP mxfp4_gemm ({arch}, {len(r.code_object)} bytes, {r.toolchain.name} {r.toolchain.version})")
    report(c, w, repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="gfx950")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-triton", action="store_true", help="Skip the Triton kernel.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if not args.no_triton:
            bench_triton(Path(d), args.repeat)
        bench_hip(Path(d), args.arch, args.repeat)


if __name__ == "__main__":
    main()
