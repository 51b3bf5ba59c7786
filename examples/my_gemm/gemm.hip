// examples/my_gemm: the smallest correct amd-mxfp4-mm kernel project to start from.
//
// One thread per output element. A is quantized to MXFP4 on the fly, block by block, with the
// leaderboard's rule (amax rounded up at bit 21, scale 2^(floor(log2 amax) - 2), values rounded
// half-to-even onto the e2m1 grid); B comes from B_q (fp4x2, row-major) and its e8m0 scales from
// the shuffled, padded B_scale_sh. Slow on purpose: the point is the project's shape.
#include <submitgen/device.h>

// Position of scale (row, col) in aiter's e8m0_shuffle layout of a [pad256(rows), cols8] tensor.
static __device__ inline int shuffled_scale_index(int row, int col, int cols8) {
    int a = row / 32, b = (row / 16) % 2, c = row % 16;
    int d = col / 8, e = (col / 4) % 2, f = col % 4;
    return ((((a * (cols8 / 8) + d) * 4 + f) * 16 + c) * 2 + e) * 2 + b;
}

static __device__ inline int mx_scale_exponent(float amax) {
    uint32_t bits = (sg_f32_bits(amax) + 0x200000u) & 0xFF800000u;
    int e = (int)((bits >> 23) & 0xFF) - 127 - 2;
    if (amax == 0.0f) e = -127;
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}

extern "C" __global__ SG_LAUNCH_BOUNDS(256) void my_gemm(const sg_bf16* a, const uint8_t* b_q,
                                                        const uint8_t* b_scale, sg_bf16* out,
                                                        int m, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y;
    if (col >= n || row >= m) return;
    int blocks = k / 32;
    int cols8 = (blocks + 7) / 8 * 8;
    float acc = 0.0f;
    for (int kb = 0; kb < blocks; kb++) {
        const sg_bf16* ab = a + (size_t)row * k + kb * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = sg_fmaxf(amax, sg_f32_from_bits(sg_f32_bits(sg_bf16_to_float(ab[i])) & 0x7fffffffu));
        int e = mx_scale_exponent(amax);
        float down = sg_e8m0_to_float((uint8_t)(127 - e)), up = sg_e8m0_to_float((uint8_t)(127 + e));
        float b_s = sg_e8m0_to_float(b_scale[shuffled_scale_index(col, kb, cols8)]);
        const uint8_t* bb = b_q + (size_t)col * (k / 2) + kb * 16;
        float part = 0.0f;
        for (int i = 0; i < 32; i += 2) {
            uint8_t pair = bb[i / 2];
            float a0 = sg_fp4e2m1_to_float(sg_float_to_fp4e2m1(sg_bf16_to_float(ab[i]) * down));
            float a1 = sg_fp4e2m1_to_float(sg_float_to_fp4e2m1(sg_bf16_to_float(ab[i + 1]) * down));
            part += a0 * sg_fp4e2m1_to_float(pair & 15) + a1 * sg_fp4e2m1_to_float(pair >> 4);
        }
        acc += part * up * b_s;
    }
    out[(size_t)row * n + col] = sg_float_to_bf16(acc);
}
