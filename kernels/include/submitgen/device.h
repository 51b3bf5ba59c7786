/* submitgen/device.h: one kernel source, three compilers.
 *
 *   SG_BARE  clang -x hip -nogpuinc -nogpulib (the bundled clang of the ziglang wheel): no HIP
 *            headers, no device libraries. Everything below comes from clang builtins.
 *   SG_ROCM  hipcc / amdclang++ / ROCm clang with the real HIP headers.
 *   SG_CUDA  nvcc (or clang CUDA): the same names come from CUDA; used to check numerics on NVIDIA.
 *   SG_HOST  any plain C++ compiler: only types, conversions and math (for CPU tests of numerics).
 *
 * Kernels use `extern "C" __global__` entry points, SG_LAUNCH_BOUNDS(n), threadIdx/blockIdx/
 * blockDim/gridDim, __syncthreads(), __shared__ (and `extern __shared__ T name[];` for dynamic LDS)
 * and the sg_* helpers. Every helper is `static __device__ inline`.
 *
 * Contract for later additions: append only (below the last section), keep every helper
 * `static __device__ inline`, and keep each working in all four modes. */
#ifndef SUBMITGEN_DEVICE_H
#define SUBMITGEN_DEVICE_H

/* ---- mode ------------------------------------------------------------------------------------ */
#if defined(__HIP__) || defined(__HIPCC__) || defined(__AMDGCN__)
#  if defined(__HIP_PLATFORM_AMD__) || (!defined(SG_FORCE_BARE) && __has_include(<hip/hip_runtime.h>))
#    define SG_ROCM 1
#  else
#    define SG_BARE 1
#  endif
#  define SG_AMD 1
#elif defined(__CUDACC__)
#  define SG_CUDA 1
#else
#  define SG_HOST 1
#endif

/* ---- language keywords, indices, barriers ----------------------------------------------------- */
#if defined(SG_ROCM)
#  include <hip/hip_runtime.h>
#  include <stdint.h>
#elif defined(SG_CUDA)
#  include <stdint.h>
#elif defined(SG_HOST)
#  include <stdint.h>
#  include <string.h>
#  define __device__
#  define __host__
#  define __forceinline__ inline __attribute__((always_inline))
#elif defined(SG_BARE)
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#  define __global__ __attribute__((global))
#  define __device__ __attribute__((device))
#  define __host__ __attribute__((host))
#  define __shared__ __attribute__((shared))
#  define __constant__ __attribute__((constant))
#  define __forceinline__ inline __attribute__((always_inline))
#  define SG_FIRST_ARG_(a, ...) a
#  define __launch_bounds__(...) __attribute__((amdgpu_flat_work_group_size(1, SG_FIRST_ARG_(__VA_ARGS__, 0))))

/* threadIdx.x etc. read as unsigned int, as in HIP and CUDA (clang accepts __declspec(property)
   in HIP mode; the getters are the workitem/workgroup builtins, so nothing is stored). */
struct sg_thread_idx_t {
  static __device__ __forceinline__ unsigned int gx() { return __builtin_amdgcn_workitem_id_x(); }
  static __device__ __forceinline__ unsigned int gy() { return __builtin_amdgcn_workitem_id_y(); }
  static __device__ __forceinline__ unsigned int gz() { return __builtin_amdgcn_workitem_id_z(); }
  __declspec(property(get = gx)) unsigned int x;
  __declspec(property(get = gy)) unsigned int y;
  __declspec(property(get = gz)) unsigned int z;
};
struct sg_block_idx_t {
  static __device__ __forceinline__ unsigned int gx() { return __builtin_amdgcn_workgroup_id_x(); }
  static __device__ __forceinline__ unsigned int gy() { return __builtin_amdgcn_workgroup_id_y(); }
  static __device__ __forceinline__ unsigned int gz() { return __builtin_amdgcn_workgroup_id_z(); }
  __declspec(property(get = gx)) unsigned int x;
  __declspec(property(get = gy)) unsigned int y;
  __declspec(property(get = gz)) unsigned int z;
};
struct sg_block_dim_t {
  static __device__ __forceinline__ unsigned int gx() { return __builtin_amdgcn_workgroup_size_x(); }
  static __device__ __forceinline__ unsigned int gy() { return __builtin_amdgcn_workgroup_size_y(); }
  static __device__ __forceinline__ unsigned int gz() { return __builtin_amdgcn_workgroup_size_z(); }
  __declspec(property(get = gx)) unsigned int x;
  __declspec(property(get = gy)) unsigned int y;
  __declspec(property(get = gz)) unsigned int z;
};
/* gridDim counts blocks; the dispatch packet holds the grid in work-items. */
struct sg_grid_dim_t {
  static __device__ __forceinline__ unsigned int gx() {
    return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
  }
  static __device__ __forceinline__ unsigned int gy() {
    return __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y();
  }
  static __device__ __forceinline__ unsigned int gz() {
    return __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z();
  }
  __declspec(property(get = gx)) unsigned int x;
  __declspec(property(get = gy)) unsigned int y;
  __declspec(property(get = gz)) unsigned int z;
};
extern const __device__ sg_thread_idx_t threadIdx;
extern const __device__ sg_block_idx_t blockIdx;
extern const __device__ sg_block_dim_t blockDim;
extern const __device__ sg_grid_dim_t gridDim;

static __device__ inline void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#endif

/* SG_LAUNCH_BOUNDS(n): at most n threads per block. */
#if defined(SG_AMD)
#  define SG_LAUNCH_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, (n))))
#elif defined(SG_CUDA)
#  define SG_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#else
#  define SG_LAUNCH_BOUNDS(n)
#endif

/* SG_WARP_SIZE: lanes of a wave (64 on gfx9 CDNA) or a warp (32 on NVIDIA). */
#if defined(SG_AMD)
#  define SG_WARP_SIZE 64
#else
#  define SG_WARP_SIZE 32
#endif

/* ---- bit casts --------------------------------------------------------------------------------- */
#if defined(SG_AMD)
static __device__ inline uint32_t sg_f32_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
static __device__ inline float sg_f32_from_bits(uint32_t u) { return __builtin_bit_cast(float, u); }
#elif defined(SG_CUDA)
static __device__ inline uint32_t sg_f32_bits(float f) { return __float_as_uint(f); }
static __device__ inline float sg_f32_from_bits(uint32_t u) { return __uint_as_float(u); }
#else
static __device__ inline uint32_t sg_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static __device__ inline float sg_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
#endif

/* ---- bf16 (bit level, stored as uint16) ---------------------------------------------------------- */
typedef uint16_t sg_bf16;

static __device__ inline float sg_bf16_to_float(sg_bf16 b) { return sg_f32_from_bits((uint32_t)b << 16); }

/* Round to nearest, ties to even; NaN stays a (quiet) NaN. */
static __device__ inline sg_bf16 sg_float_to_bf16(float f) {
  uint32_t u = sg_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (sg_bf16)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (sg_bf16)(u >> 16);
}

/* ---- fp8 e4m3fn (bias 7, no infinities, S.1111.111 is NaN, max 448) ------------------------------ */
static __device__ inline float sg_fp8e4m3_to_float(uint8_t v) {
  uint32_t sign = (uint32_t)(v & 0x80u) << 24;
  uint32_t e = (v >> 3) & 0xfu, m = v & 0x7u;
  if (e == 0xfu && m == 0x7u) return sg_f32_from_bits(sign | 0x7fc00000u);
  if (e == 0) return sg_f32_from_bits(sign | sg_f32_bits((float)m * 0.001953125f)); /* m * 2^-9 */
  return sg_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
}

/* ---- fp4 e2m1 (values 0 0.5 1 1.5 2 3 4 6, sign in bit 3; the nibble is the low 4 bits) ------- */
static __device__ inline float sg_fp4e2m1_to_float(uint8_t nibble) {
  uint32_t e = (nibble >> 1) & 3u, m = nibble & 1u;
  float mag = (e == 0) ? 0.5f * (float)m : (float)((2u + m) << (e - 1u)) * 0.5f;
  return sg_f32_from_bits(sg_f32_bits(mag) | ((uint32_t)(nibble & 0x8u) << 28));
}

/* Round to nearest, ties to even; saturates at 6 (infinities and NaN give +-6). */
static __device__ inline uint8_t sg_float_to_fp4e2m1(float f) {
  uint8_t sign = (uint8_t)((sg_f32_bits(f) >> 28) & 0x8u);
  float a = sg_f32_from_bits(sg_f32_bits(f) & 0x7fffffffu);
  uint8_t c;
  if (a <= 0.25f) c = 0;
  else if (a < 0.75f) c = 1;
  else if (a <= 1.25f) c = 2;
  else if (a < 1.75f) c = 3;
  else if (a <= 2.5f) c = 4;
  else if (a < 3.5f) c = 5;
  else if (a <= 5.0f) c = 6;
  else c = 7;
  return (uint8_t)(sign | c);
}

/* ---- e8m0 block scales: 2^(b-127); 0xff is NaN ------------------------------------------------- */
static __device__ inline float sg_e8m0_to_float(uint8_t b) {
  if (b == 0xffu) return sg_f32_from_bits(0x7fc00000u);
  if (b == 0) return sg_f32_from_bits(0x00400000u); /* 2^-127, a float subnormal */
  return sg_f32_from_bits((uint32_t)b << 23);
}

/* ---- math ------------------------------------------------------------------------------------- */
#if defined(SG_AMD)
static __device__ inline float sg_fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static __device__ inline float sg_expf(float x) { return __builtin_expf(x); }
static __device__ inline float sg_exp2f(float x) { return __builtin_exp2f(x); }
static __device__ inline float sg_rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
#elif defined(SG_CUDA)
static __device__ inline float sg_fmaxf(float a, float b) { return fmaxf(a, b); }
static __device__ inline float sg_expf(float x) { return expf(x); }
static __device__ inline float sg_exp2f(float x) { return exp2f(x); }
static __device__ inline float sg_rsqrtf(float x) { return rsqrtf(x); }
#else
static __device__ inline float sg_fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static __device__ inline float sg_expf(float x) { return __builtin_expf(x); }
static __device__ inline float sg_exp2f(float x) { return __builtin_exp2f(x); }
static __device__ inline float sg_rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
#endif

/* ---- wave / warp ------------------------------------------------------------------------------- */
#if defined(SG_AMD)
/* This lane's index within its wave. */
static __device__ inline unsigned int sg_lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
/* The value of lane (this lane ^ lane_mask); lane_mask < SG_WARP_SIZE. */
static __device__ inline float sg_shfl_xor(float v, int lane_mask) {
  int src = (int)(sg_lane_id() ^ (unsigned int)lane_mask);
  return sg_f32_from_bits((uint32_t)__builtin_amdgcn_ds_bpermute(src << 2, (int)sg_f32_bits(v)));
}
/* Device-wide relaxed atomic add; returns the old value. */
static __device__ inline float sg_atomic_add_f32(float* p, float v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
#elif defined(SG_CUDA)
static __device__ inline unsigned int sg_lane_id() {
  unsigned int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}
static __device__ inline float sg_shfl_xor(float v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
static __device__ inline float sg_atomic_add_f32(float* p, float v) { return atomicAdd(p, v); }
#endif

#endif /* SUBMITGEN_DEVICE_H */

/* ==== helpers the default kernels use (kernels/mxfp4_mm, kernels/mixed_mla) ===================== */
#ifndef SG_DEFAULT_KERNELS_APPENDIX
#define SG_DEFAULT_KERNELS_APPENDIX
/* Natural logarithm (split-KV log-sum-exp). */
#if defined(SG_AMD)
static __device__ inline float sg_logf(float x) { return __builtin_logf(x); }
#elif defined(SG_CUDA)
static __device__ inline float sg_logf(float x) { return logf(x); }
#else
static __device__ inline float sg_logf(float x) { return __builtin_logf(x); }
#endif
#endif /* SG_DEFAULT_KERNELS_APPENDIX */
/* ==== end of the default-kernels appendix ====================================================== */
