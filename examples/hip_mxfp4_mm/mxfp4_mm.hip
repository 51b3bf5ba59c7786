// amd-mxfp4-mm default kernels: out[m, n] = dequant(mxfp4(A)) @ dequant(B)^T, fp32 accumulation,
// bf16 output.
//
// Inputs (leaderboards.md section 2):
//   A           bf16 [m, k], row-major; quantized here to MXFP4 on the fly, exactly as the
//               reference does (per 32 elements: amax rounded by (bits + 0x200000) & 0xFF800000,
//               scale_exp = floor(log2(amax)) - 2 clamped to [-127, 127], x * 2^-scale_exp rounded
//               half-to-even onto the e2m1 grid, saturating at 6).
//   B_shuffle   fp4x2 [n, k/2]: aiter shuffle_weight(layout=(16, 16)); every 16-row x 32-byte tile
//               is stored contiguously as two [16 rows x 16 bytes] halves.
//   B_scale_sh  e8m0 [pad256(n), pad8(k/32)]: aiter e8m0_shuffle of the row-major scales.
//
// Kernels (launch.py picks one GEMM kernel per shape, plus the reduce when k is split):
//   mxfp4_mm_m16 / _m32 / _m64  one block of 256 threads per (64 columns, 16/32/64 rows, k split);
//                               grid (n/64, ceil(m/BM), splits). With splits == 1 the block writes
//                               bf16 to out, otherwise fp32 partial sums to partial[split][m][n].
//   mxfp4_mm_reduce             out = bf16(sum over splits of partial); grid ceil(m*n/256), 256.
//   mxfp4_mm_mfma_probe         gfx950 only (v_mfma_scale_f32_16x16x128_f8f6f4). It is compiled into
//                               the gfx950 code object but NOT launched by the default plan and has
//                               never run on hardware; see its comment below.
#include <submitgen/device.h>

#define MM_BN 64       // output columns per block
#define MM_KC 64       // k per chunk: two 32-element scale blocks
#define MM_THREADS 256

// Vector types of our own (the bare clang build has no HIP headers, so no uint4/float4).
struct __attribute__((aligned(16))) mm_u32x4 { uint32_t x, y, z, w; };
struct __attribute__((aligned(8))) mm_u32x2 { uint32_t x, y; };
struct __attribute__((aligned(16))) mm_f32x4 { float x, y, z, w; };

// ---- MXFP4 quantization of A, bit for bit the reference's rule --------------------------------

// Unbiased scale exponent of a 32-element block whose absolute maximum has the float bits amax_bits.
static __device__ inline int mm_scale_exp(uint32_t amax_bits) {
  uint32_t r = (amax_bits + 0x200000u) & 0xFF800000u;
  int e = (int)(r >> 23);            // biased exponent of the rounded amax (sign is 0)
  if (e == 0) return -127;           // amax 0 (or a subnormal): log2 -> below -127, clamped
  int s = e - 127 - 2;               // floor(log2(amax')) - 2
  if (s < -127) s = -127;
  if (s > 127) s = 127;
  return s;
}

// 2^p as a float for p in [-126, 127].
static __device__ inline float mm_pow2(int p) { return sg_f32_from_bits((uint32_t)(p + 127) << 23); }

// e2m1 magnitude (code 0..7) of |q|, q = x * 2^-scale_exp, rounded to nearest with ties to even,
// saturating at 6: the reference's bit arithmetic.
static __device__ inline uint32_t mm_e2m1_code(float q) {
  uint32_t a = sg_f32_bits(q) & 0x7fffffffu;
  float af = sg_f32_from_bits(a);
  if (af >= 6.0f) return 7u;
  if (af < 1.0f) {
    // add 2^22 (ulp 0.5) with round-to-nearest-even, take the integer bits: 0, 1 (0.5) or 2 (1.0)
    return sg_f32_bits(af + 4194304.0f) - 0x4A800000u;
  }
  uint32_t odd = (a >> 22) & 1u;
  a = a - (126u << 23) + (1u << 21) - 1u + odd;
  return (a >> 22) & 0xffu;
}

static __device__ inline float mm_e2m1_value(uint32_t code) {
  // 0, .5, 1, 1.5, 2, 3, 4, 6
  return code < 4u ? 0.5f * (float)code : (float)((2u + (code & 1u)) << ((code >> 1) - 1u)) * 0.5f;
}

// Offset of scale (row, col) inside aiter's e8m0_shuffle layout with `cols_pad` columns:
// view(rows/32, 2, 16, cols/8, 2, 4).permute(0, 3, 5, 2, 4, 1).
static __device__ inline uint32_t mm_scale_offset(uint32_t row, uint32_t col, uint32_t cols_pad) {
  uint32_t a = row >> 5, b = (row >> 4) & 1u, c = row & 15u;
  uint32_t d = col >> 3, e = (col >> 2) & 1u, f = col & 3u;
  return ((((a * (cols_pad >> 3) + d) * 4u + f) * 16u + c) * 2u + e) * 2u + b;
}

// ---- the GEMM body -----------------------------------------------------------------------------

template <int BM>
static __device__ inline void mm_body(const sg_bf16* __restrict__ A, const uint8_t* __restrict__ Bsh,
                                      const uint8_t* __restrict__ Ssh, sg_bf16* __restrict__ out,
                                      float* __restrict__ partial, int m, int n, int k, int chunks_per_split) {
  constexpr int RM = BM / 16;  // rows per thread
  __shared__ __attribute__((aligned(16))) float As[MM_KC][BM];    // dequantized A chunk, [k][row]
  __shared__ __attribute__((aligned(16))) float Bs[MM_KC][MM_BN];  // dequantized B chunk, [k][col]

  const int tid = (int)threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;
  const int n0 = (int)blockIdx.x * MM_BN;
  const int m0 = (int)blockIdx.y * BM;
  const int split = (int)blockIdx.z;
  const int nchunks = k / MM_KC;
  const int c_begin = split * chunks_per_split;
  int c_end = c_begin + chunks_per_split;
  if (c_end > nchunks) c_end = nchunks;

  const uint32_t kb = (uint32_t)k >> 1;                      // bytes per B row
  const uint32_t scale_cols = (((uint32_t)k >> 5) + 7u) & ~7u;  // pad8(k/32)

  float acc[RM][4];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

  // B loader role: 4 tiles of 16 rows x 32 bytes (512 contiguous bytes each); 8 bytes per thread.
  const int b_tile = tid >> 6;            // 0..3
  const int b_within = (tid & 63) * 8;    // byte offset inside the 512-byte tile
  const int b_half = b_within >> 8;       // 0/1: which 16-byte half = which 32-element scale block
  const int b_row = (b_within & 255) >> 4;
  const int b_col = b_within & 15;        // 0 or 8
  const int b_nrow = b_tile * 16 + b_row; // local column of the output
  const int b_grow = n0 + b_nrow;
  const int b_k = b_half * 32 + b_col * 2;  // local k of the first of 16 values

  // A quantizer role: TPB consecutive threads share one (row, 32-element block), EPT values each;
  // the block's amax is combined over those lanes with xor shuffles (all 256 threads take part).
  constexpr int TPB = MM_THREADS / (BM * 2);
  constexpr int EPT = 32 / TPB;
  const int a_qb = tid / TPB, a_sub = tid % TPB;
  const int a_row = a_qb >> 1, a_half = a_qb & 1;
  const int a_k = a_half * 32 + a_sub * EPT;  // local k of the first value
  const bool a_ok = m0 + a_row < m;
  const sg_bf16* a_src = A + (uint64_t)(a_ok ? m0 + a_row : 0) * (uint64_t)k + a_k;

  // Raw global data of one chunk, loaded one chunk ahead (software pipelining).
  uint32_t araw[EPT / 2];
  mm_u32x2 braw;
  uint8_t bsc = 0;
  auto load_raw = [&](int c) {
    const int k0 = c * MM_KC;
    if (a_ok) {
      if (EPT >= 8) {
#pragma unroll
        for (int v = 0; v < EPT / 8; ++v) {
          const mm_u32x4 w = ((const mm_u32x4*)(a_src + k0))[v];
          araw[(4 * v + 0) % (EPT / 2)] = w.x;
          araw[(4 * v + 1) % (EPT / 2)] = w.y;
          araw[(4 * v + 2) % (EPT / 2)] = w.z;
          araw[(4 * v + 3) % (EPT / 2)] = w.w;
        }
      } else {
        const mm_u32x2 w = *(const mm_u32x2*)(a_src + k0);
        araw[0] = w.x;
        araw[1 % (EPT / 2)] = w.y;
      }
    } else {
#pragma unroll
      for (int v = 0; v < EPT / 2; ++v) araw[v] = 0u;
    }
    if (b_grow < n) {
      const uint64_t tile_off = ((uint64_t)(b_grow >> 4) * (kb >> 5) + (uint64_t)(k0 >> 6)) * 512u;
      braw = *(const mm_u32x2*)(Bsh + tile_off + b_within);
      bsc = Ssh[mm_scale_offset((uint32_t)b_grow, (uint32_t)(k0 >> 5) + (uint32_t)b_half, scale_cols)];
    } else {
      braw.x = braw.y = 0u;
      bsc = 127;
    }
  };

  if (c_begin < c_end) load_raw(c_begin);
  for (int c = c_begin; c < c_end; ++c) {
    // A: quantize this thread's EPT values with the block's shared scale.
    {
      float x[EPT];
#pragma unroll
      for (int v = 0; v < EPT / 2; ++v) {
        x[2 * v] = sg_bf16_to_float((sg_bf16)(araw[v] & 0xffffu));
        x[2 * v + 1] = sg_bf16_to_float((sg_bf16)(araw[v] >> 16));
      }
      float amax = 0.0f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) amax = sg_fmaxf(amax, sg_f32_from_bits(sg_f32_bits(x[i]) & 0x7fffffffu));
#pragma unroll
      for (int mask = 1; mask < TPB; mask <<= 1) amax = sg_fmaxf(amax, sg_shfl_xor(amax, mask));
      const int se = mm_scale_exp(sg_f32_bits(amax));
      const float inv = mm_pow2(-se);  // -se in [-125, 127] for finite bf16 input
      const float scale = se >= -126 ? mm_pow2(se) : sg_f32_from_bits(0x00400000u);
#pragma unroll
      for (int i = 0; i < EPT; ++i) {
        const float q = x[i] * inv;
        const float v = mm_e2m1_value(mm_e2m1_code(q));
        As[a_k + i][a_row] = sg_f32_from_bits(sg_f32_bits(v * scale) | (sg_f32_bits(q) & 0x80000000u));
      }
    }
    // B: 16 fp4 values (8 bytes) per thread, dequantized with their e8m0 scale.
    {
      const float s = sg_e8m0_to_float(bsc);
      const uint32_t ws[2] = {braw.x, braw.y};
#pragma unroll
      for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int q = 0; q < 8; ++q)
          Bs[b_k + u * 8 + q][b_nrow] = sg_fp4e2m1_to_float((uint8_t)((ws[u] >> (4 * q)) & 0xfu)) * s;
    }
    __syncthreads();
    if (c + 1 < c_end) load_raw(c + 1);  // in flight during the FMAs below

#pragma unroll 8
    for (int kk = 0; kk < MM_KC; ++kk) {
      float a[RM];
#pragma unroll
      for (int i = 0; i < RM; ++i) a[i] = As[kk][ty * RM + i];
      const mm_f32x4 b = *(const mm_f32x4*)&Bs[kk][tx * 4];
#pragma unroll
      for (int i = 0; i < RM; ++i) {
        acc[i][0] += a[i] * b.x;
        acc[i][1] += a[i] * b.y;
        acc[i][2] += a[i] * b.z;
        acc[i][3] += a[i] * b.w;
      }
    }
    __syncthreads();
  }

  const int nsplit = (int)gridDim.z;
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int r = m0 + ty * RM + i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + tx * 4 + j;
      if (col >= n) continue;
      if (nsplit == 1)
        out[(uint64_t)r * (uint64_t)n + col] = sg_float_to_bf16(acc[i][j]);
      else
        partial[((uint64_t)split * (uint64_t)m + (uint64_t)r) * (uint64_t)n + col] = acc[i][j];
    }
  }
}

extern "C" __global__ SG_LAUNCH_BOUNDS(MM_THREADS) void mxfp4_mm_m16(
    const sg_bf16* A, const uint8_t* B_shuffle, const uint8_t* B_scale_sh, sg_bf16* out, float* partial,
    int m, int n, int k, int chunks_per_split) {
  mm_body<16>(A, B_shuffle, B_scale_sh, out, partial, m, n, k, chunks_per_split);
}

extern "C" __global__ SG_LAUNCH_BOUNDS(MM_THREADS) void mxfp4_mm_m32(
    const sg_bf16* A, const uint8_t* B_shuffle, const uint8_t* B_scale_sh, sg_bf16* out, float* partial,
    int m, int n, int k, int chunks_per_split) {
  mm_body<32>(A, B_shuffle, B_scale_sh, out, partial, m, n, k, chunks_per_split);
}

extern "C" __global__ SG_LAUNCH_BOUNDS(MM_THREADS) void mxfp4_mm_m64(
    const sg_bf16* A, const uint8_t* B_shuffle, const uint8_t* B_scale_sh, sg_bf16* out, float* partial,
    int m, int n, int k, int chunks_per_split) {
  mm_body<64>(A, B_shuffle, B_scale_sh, out, partial, m, n, k, chunks_per_split);
}

// out[i] = bf16(sum_s partial[s][i]) for i < mn (= m * n).
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void mxfp4_mm_reduce(const float* partial, sg_bf16* out, int mn,
                                                                int splits) {
  const int i = (int)(blockIdx.x * 256u + threadIdx.x);
  if (i >= mn) return;
  float s = 0.0f;
  for (int z = 0; z < splits; ++z) s += partial[(uint64_t)z * (uint64_t)mn + i];
  out[i] = sg_float_to_bf16(s);
}

// ---- gfx950 only: the MXFP4 matrix instruction ---------------------------------------------------
// mxfp4_mm_mfma_probe: one wave of 64 lanes per 16 x 16 output tile, k in steps of 128 through
// v_mfma_scale_f32_16x16x128_f8f6f4 (both operands e2m1, cbsz = blgp = 4, one e8m0 scale per lane).
// Assumed operand layout (CDNA4 ISA, 16x16x128 with 4-bit types): lane l holds A[l % 16][32 values
// from k = 32 * (l / 16)] and B[n = l % 16][the same 32 k] as 16 packed bytes, with the scale of
// those 32 values; the result lane l holds D[4 * (l / 16) + r][l % 16], r = 0..3.
// Grid (n / 16, ceil(m / 16)), block 64; arguments (A, B_shuffle, B_scale_sh, out, m, n, k).
// STATUS: compiled into the gfx950 code object only, NOT launched by launch.py, and never run on
// hardware (no MI355X is reachable from this project); its numerics are unverified.
#if defined(__gfx950__)
typedef int mm_v8i32 __attribute__((ext_vector_type(8)));
typedef float mm_v4f32 __attribute__((ext_vector_type(4)));

extern "C" __global__ SG_LAUNCH_BOUNDS(64) void mxfp4_mm_mfma_probe(
    const sg_bf16* A, const uint8_t* B_shuffle, const uint8_t* B_scale_sh, sg_bf16* out, int m, int n, int k) {
  const int lane = (int)threadIdx.x;
  const int i16 = lane & 15, kg = lane >> 4;
  const int n0 = (int)blockIdx.x * 16, m0 = (int)blockIdx.y * 16;
  const int arow = m0 + i16, brow = n0 + i16;
  const uint32_t kb = (uint32_t)k >> 1;
  const uint32_t scale_cols = (((uint32_t)k >> 5) + 7u) & ~7u;
  mm_v4f32 acc = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < k; k0 += 128) {
    uint32_t apk[4] = {0u, 0u, 0u, 0u};
    int se = 0;
    if (arow < m) {
      const mm_u32x4* src = (const mm_u32x4*)(A + (uint64_t)arow * (uint64_t)k + k0 + kg * 32);
      float x[32];
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const mm_u32x4 w = src[v];
        const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          x[v * 8 + u * 2] = sg_bf16_to_float((sg_bf16)(ws[u] & 0xffffu));
          x[v * 8 + u * 2 + 1] = sg_bf16_to_float((sg_bf16)(ws[u] >> 16));
        }
      }
      uint32_t amax = 0;
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const uint32_t b = sg_f32_bits(x[i]) & 0x7fffffffu;
        amax = b > amax ? b : amax;
      }
      se = mm_scale_exp(amax);
      const float inv = mm_pow2(-se);
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const float q = x[i] * inv;
        const uint32_t code = mm_e2m1_code(q) | ((sg_f32_bits(q) >> 28) & 8u);
        apk[i >> 3] |= code << (4 * (i & 7));
      }
    }
    const mm_v8i32 a = {(int)apk[0], (int)apk[1], (int)apk[2], (int)apk[3], 0, 0, 0, 0};
    const uint32_t kbyte = ((uint32_t)k0 >> 1) + (uint32_t)kg * 16u;
    const uint64_t off = (((uint64_t)(brow >> 4) * (kb >> 5) + (kbyte >> 5)) * 2u + ((kbyte >> 4) & 1u)) * 256u +
                         (uint64_t)(brow & 15) * 16u;
    const mm_u32x4 w = *(const mm_u32x4*)(B_shuffle + off);
    const mm_v8i32 b = {(int)w.x, (int)w.y, (int)w.z, (int)w.w, 0, 0, 0, 0};
    const int sa = se + 127;
    const int sb = (int)B_scale_sh[mm_scale_offset((uint32_t)brow, (uint32_t)(k0 >> 5) + (uint32_t)kg, scale_cols)];
    acc = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, b, acc, 4, 4, 0, sa, 0, sb);
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = m0 + kg * 4 + r;
    if (row < m) out[(uint64_t)row * (uint64_t)n + brow] = sg_float_to_bf16(acc[r]);
  }
}
#endif
