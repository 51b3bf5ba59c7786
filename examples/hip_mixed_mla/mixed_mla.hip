// amd-mixed-mla default kernels: MLA decode (DeepSeek style, MQA: 16 query heads share one KV head
// of 576 = 512 (kv_lora) + 64 (rope) dims; K = kv[:, :576], V = kv[:, :512]), split over the KV
// sequence, then a reduce (leaderboards.md section 3).
//
//   mla_decode_split(mla_params p)   grid (num_splits, batch), block 128. Block (s, b) runs an
//       online softmax over tokens [s * split_len, min(kv_len, (s + 1) * split_len)) of sequence b
//       for all 16 heads and writes the normalised partial output part_o[b][s][h][512] (fp32) and
//       its log-sum-exp part_lse[b][s][h] (natural log, scores already multiplied by sm_scale).
//       KV is fp8 e4m3 with a per-tensor scale (kv_fp8 = 1) or bf16 (kv_fp8 = 0). Q stays bf16.
//   mla_reduce(part_o, part_lse, out, num_splits)   grid (batch * 16), block 128: combines the
//       splits of one (sequence, head) into out[b][h][512] (bf16).
//
// Thread layout of mla_decode_split: thread t serves heads (t / 16) and (t / 16 + 8) and, as lane
// j = t % 16, the dims 64 * i + 4 * j + {0..3} (i = 0..8 for the 576 score dims, 0..7 for the 512
// output dims). Q lives in registers; a tile of 16 tokens is converted to fp32 in shared memory
// and serves both Q.K and P.V. A score is summed over the 16 lanes of its head with xor shuffles
// (the 16 lanes of a head are 16 consecutive threads, inside one warp of 32 or wave of 64).
#include <submitgen/device.h>

#define MLA_HEADS 16
#define MLA_DK 576
#define MLA_DV 512
#define MLA_TILE 16      // tokens per shared-memory tile
#define MLA_THREADS 128  // 8 head pairs x 16 lanes

struct __attribute__((aligned(16))) mla_u32x4 { uint32_t x, y, z, w; };
struct __attribute__((aligned(8))) mla_u32x2 { uint32_t x, y; };
struct __attribute__((aligned(16))) mla_f32x4 { float x, y, z, w; };

// The by-value argument of mla_decode_split; launch.py mirrors it field by field as a
// ctypes.Structure (natural alignment, 64 bytes).
struct mla_params {
  const sg_bf16* q;      // [batch, 16, 576] bf16
  const void* kv;        // [batch * kv_len, 576]: fp8 e4m3 (kv_fp8 = 1) or bf16 (kv_fp8 = 0)
  const float* kv_scale; // [1] per-tensor scale of the fp8 KV (read only when kv_fp8 = 1)
  float* part_o;         // [batch, num_splits, 16, 512] fp32 workspace
  float* part_lse;       // [batch, num_splits, 16] fp32 workspace
  int32_t batch;
  int32_t kv_len;        // tokens per sequence (all sequences have the same length)
  int32_t num_splits;
  int32_t split_len;     // tokens per split, a multiple of MLA_TILE
  int32_t kv_fp8;
  float sm_scale;
};

static __device__ inline void mla_unpack_bf16x2(uint32_t w, float* dst) {
  dst[0] = sg_bf16_to_float((sg_bf16)(w & 0xffffu));
  dst[1] = sg_bf16_to_float((sg_bf16)(w >> 16));
}

// Four fp8 e4m3fn bytes to float without branches: the 7 magnitude bits placed at float bits
// 20..26 read as a float 2^-120 times the e4m3 value (subnormals included, since e4m3's subnormals
// land on float subnormals), so one multiply by 2^120 rebiases. The NaN code (0x7f) is not
// special-cased: the per-tensor quantizer clamps to +-448 and never produces it.
static __device__ inline void mla_unpack_fp8x4(uint32_t w, float* dst) {
  const float rebias = sg_f32_from_bits((127u + 120u) << 23);  // 2^120
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const uint32_t byte = (w >> (8 * e)) & 0xffu;
    const uint32_t bits = ((byte & 0x7fu) << 20) | ((byte & 0x80u) << 24);
    dst[e] = sg_f32_from_bits(bits) * rebias;
  }
}

extern "C" __global__ SG_LAUNCH_BOUNDS(MLA_THREADS) void mla_decode_split(mla_params p) {
  __shared__ __attribute__((aligned(16))) float kt[MLA_TILE][MLA_DK];  // K/V tile, fp32
  __shared__ float sc[MLA_HEADS][MLA_TILE];  // scores of the tile
  __shared__ float pr[MLA_HEADS][MLA_TILE];  // exp(score - running max)

  const int tid = (int)threadIdx.x;
  const int hp = tid >> 4;  // heads hp and hp + 8
  const int j = tid & 15;
  const int s = (int)blockIdx.x;
  const int b = (int)blockIdx.y;
  const int t0 = s * p.split_len;
  int t1 = t0 + p.split_len;
  if (t1 > p.kv_len) t1 = p.kv_len;

  const float kv_scale = p.kv_fp8 ? p.kv_scale[0] : 1.0f;
  const float qs = p.sm_scale * kv_scale;  // scores = sm_scale * q . (kv_scale * k_raw)

  float q0[9][4], q1[9][4];
  {
    const sg_bf16* qa = p.q + ((uint64_t)b * MLA_HEADS + (uint64_t)hp) * MLA_DK;
    const sg_bf16* qb = qa + 8 * MLA_DK;
#pragma unroll
    for (int i = 0; i < 9; ++i) {
      const int d = 64 * i + 4 * j;
      const mla_u32x2 wa = *(const mla_u32x2*)(qa + d);
      const mla_u32x2 wb = *(const mla_u32x2*)(qb + d);
      mla_unpack_bf16x2(wa.x, &q0[i][0]);
      mla_unpack_bf16x2(wa.y, &q0[i][2]);
      mla_unpack_bf16x2(wb.x, &q1[i][0]);
      mla_unpack_bf16x2(wb.y, &q1[i][2]);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        q0[i][e] *= qs;
        q1[i][e] *= qs;
      }
    }
  }

  float o0[8][4], o1[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) o0[i][e] = o1[i][e] = 0.0f;
  const float neg_inf = sg_f32_from_bits(0xff800000u);
  float m0 = neg_inf, m1 = neg_inf, l0 = 0.0f, l1 = 0.0f;

  const uint64_t row0 = (uint64_t)b * (uint64_t)p.kv_len;
  for (int tb = t0; tb < t1; tb += MLA_TILE) {
    __syncthreads();  // the previous tile is no longer read
    // 16 tokens x 36 pieces of 16 dims.
    for (int w = tid; w < MLA_TILE * (MLA_DK / 16); w += MLA_THREADS) {
      const int tl = w / (MLA_DK / 16), c16 = w % (MLA_DK / 16);
      const int t = tb + tl;
      float v[16];
      if (t < t1) {
        const uint64_t e0 = (row0 + (uint64_t)t) * MLA_DK + (uint64_t)c16 * 16u;
        if (p.kv_fp8) {
          const mla_u32x4 x = *(const mla_u32x4*)((const uint8_t*)p.kv + e0);
          mla_unpack_fp8x4(x.x, v + 0);
          mla_unpack_fp8x4(x.y, v + 4);
          mla_unpack_fp8x4(x.z, v + 8);
          mla_unpack_fp8x4(x.w, v + 12);
        } else {
          const mla_u32x4* src = (const mla_u32x4*)((const sg_bf16*)p.kv + e0);
          const mla_u32x4 x = src[0], y = src[1];
          mla_unpack_bf16x2(x.x, v + 0);
          mla_unpack_bf16x2(x.y, v + 2);
          mla_unpack_bf16x2(x.z, v + 4);
          mla_unpack_bf16x2(x.w, v + 6);
          mla_unpack_bf16x2(y.x, v + 8);
          mla_unpack_bf16x2(y.y, v + 10);
          mla_unpack_bf16x2(y.z, v + 12);
          mla_unpack_bf16x2(y.w, v + 14);
        }
      } else {
#pragma unroll
        for (int e = 0; e < 16; ++e) v[e] = 0.0f;
      }
      mla_f32x4* dst = (mla_f32x4*)&kt[tl][c16 * 16];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        mla_f32x4 f;
        f.x = v[4 * e];
        f.y = v[4 * e + 1];
        f.z = v[4 * e + 2];
        f.w = v[4 * e + 3];
        dst[e] = f;
      }
    }
    __syncthreads();

    // Scores of the 16 tokens for both heads: partial sums over this lane's 36 dims, summed over
    // the 16 lanes of the head with xor shuffles; lane 0 stores them.
#pragma unroll 2
    for (int tl = 0; tl < MLA_TILE; ++tl) {
      float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
      for (int i = 0; i < 9; ++i) {
        const mla_f32x4 k4 = *(const mla_f32x4*)&kt[tl][64 * i + 4 * j];
        a0 += q0[i][0] * k4.x + q0[i][1] * k4.y + q0[i][2] * k4.z + q0[i][3] * k4.w;
        a1 += q1[i][0] * k4.x + q1[i][1] * k4.y + q1[i][2] * k4.z + q1[i][3] * k4.w;
      }
#pragma unroll
      for (int mask = 8; mask >= 1; mask >>= 1) {
        a0 += sg_shfl_xor(a0, mask);
        a1 += sg_shfl_xor(a1, mask);
      }
      if (j == 0) {
        const bool valid = tb + tl < t1;
        sc[hp][tl] = valid ? a0 : neg_inf;
        sc[hp + 8][tl] = valid ? a1 : neg_inf;
      }
    }
    __syncthreads();

    // Online softmax: every lane of a head keeps the same running max and sum; lane j computes
    // the probability of token j.
    {
      float mx0 = m0, mx1 = m1;
#pragma unroll
      for (int tl = 0; tl < MLA_TILE; ++tl) {
        mx0 = sg_fmaxf(mx0, sc[hp][tl]);
        mx1 = sg_fmaxf(mx1, sc[hp + 8][tl]);
      }
      const float al0 = sg_expf(m0 - mx0), al1 = sg_expf(m1 - mx1);  // 0 on the first tile
      m0 = mx0;
      m1 = mx1;
      float p0 = sg_expf(sc[hp][j] - mx0), p1 = sg_expf(sc[hp + 8][j] - mx1);
      pr[hp][j] = p0;
      pr[hp + 8][j] = p1;
#pragma unroll
      for (int mask = 8; mask >= 1; mask >>= 1) {
        p0 += sg_shfl_xor(p0, mask);
        p1 += sg_shfl_xor(p1, mask);
      }
      l0 = l0 * al0 + p0;
      l1 = l1 * al1 + p1;
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          o0[i][e] *= al0;
          o1[i][e] *= al1;
        }
    }
    __syncthreads();

    // P.V over the first 512 dims of the same tile.
#pragma unroll 2
    for (int tl = 0; tl < MLA_TILE; ++tl) {
      const float pa = pr[hp][tl], pb = pr[hp + 8][tl];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const mla_f32x4 v4 = *(const mla_f32x4*)&kt[tl][64 * i + 4 * j];
        o0[i][0] += pa * v4.x;
        o0[i][1] += pa * v4.y;
        o0[i][2] += pa * v4.z;
        o0[i][3] += pa * v4.w;
        o1[i][0] += pb * v4.x;
        o1[i][1] += pb * v4.y;
        o1[i][2] += pb * v4.z;
        o1[i][3] += pb * v4.w;
      }
    }
  }

  // Normalised partial output (V scale applied) and log-sum-exp; an empty split gives 0 and -inf.
  const uint64_t base = ((uint64_t)b * (uint64_t)p.num_splits + (uint64_t)s) * MLA_HEADS;
  const float f0 = l0 > 0.0f ? kv_scale / l0 : 0.0f;
  const float f1 = l1 > 0.0f ? kv_scale / l1 : 0.0f;
  float* oa = p.part_o + (base + (uint64_t)hp) * MLA_DV;
  float* ob = p.part_o + (base + (uint64_t)hp + 8) * MLA_DV;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    mla_f32x4 x, y;
    x.x = o0[i][0] * f0;
    x.y = o0[i][1] * f0;
    x.z = o0[i][2] * f0;
    x.w = o0[i][3] * f0;
    y.x = o1[i][0] * f1;
    y.y = o1[i][1] * f1;
    y.z = o1[i][2] * f1;
    y.w = o1[i][3] * f1;
    *(mla_f32x4*)(oa + 64 * i + 4 * j) = x;
    *(mla_f32x4*)(ob + 64 * i + 4 * j) = y;
  }
  if (j == 0) {
    p.part_lse[base + (uint64_t)hp] = l0 > 0.0f ? m0 + sg_logf(l0) : neg_inf;
    p.part_lse[base + (uint64_t)hp + 8] = l1 > 0.0f ? m1 + sg_logf(l1) : neg_inf;
  }
}

// out[b][h][:] = sum_s w_s * part_o[b][s][h][:] / sum_s w_s, w_s = exp(lse_s - max lse).
extern "C" __global__ SG_LAUNCH_BOUNDS(128) void mla_reduce(const float* part_o, const float* part_lse,
                                                            sg_bf16* out, int num_splits) {
  const int bh = (int)blockIdx.x;  // b * 16 + h
  const int b = bh >> 4, h = bh & 15;
  const int d = (int)threadIdx.x * 4;
  const float* lse = part_lse + (uint64_t)b * (uint64_t)num_splits * MLA_HEADS + h;
  float mx = sg_f32_from_bits(0xff800000u);
  for (int s = 0; s < num_splits; ++s) mx = sg_fmaxf(mx, lse[s * MLA_HEADS]);
  float den = 0.0f, a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (int s = 0; s < num_splits; ++s) {
    const float l = lse[s * MLA_HEADS];
    if (!(l > mx - 1e30f)) continue;  // empty split (-inf)
    const float w = sg_expf(l - mx);
    const mla_f32x4 o = *(const mla_f32x4*)(part_o + (((uint64_t)b * (uint64_t)num_splits + (uint64_t)s) *
                                                          MLA_HEADS + (uint64_t)h) * MLA_DV + d);
    den += w;
    a0 += w * o.x;
    a1 += w * o.y;
    a2 += w * o.z;
    a3 += w * o.w;
  }
  const float inv = den > 0.0f ? 1.0f / den : 0.0f;
  sg_bf16* dst = out + (uint64_t)bh * MLA_DV + d;
  mla_u32x2 packed;
  packed.x = (uint32_t)sg_float_to_bf16(a0 * inv) | ((uint32_t)sg_float_to_bf16(a1 * inv) << 16);
  packed.y = (uint32_t)sg_float_to_bf16(a2 * inv) | ((uint32_t)sg_float_to_bf16(a3 * inv) << 16);
  *(mla_u32x2*)dst = packed;
}
