// A small kernel project in the shape of amd-mxfp4-mm, for the build and ABI tests. The kernels
// compute nothing useful; what matters is their argument layout.
#include <submitgen/device.h>

extern "C" __global__ SG_LAUNCH_BOUNDS(256) void mm_tile(const sg_bf16* a, const uint8_t* b_q,
                                                         const uint8_t* b_scale, float* partial,
                                                         int m, int n, int k, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m * n) partial[i + blockIdx.z * m * n] = alpha * (float)(b_q[i % (n * k / 2)] + b_scale[0]) + sg_bf16_to_float(a[i % (m * k)]);
}

struct ReduceArgs {
    const float* partial;
    sg_bf16* out;
    long long count;
    int splits;
    float scale;
};

extern "C" __global__ SG_LAUNCH_BOUNDS(128) void mm_reduce(ReduceArgs p) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.count) return;
    float s = 0.f;
    for (int j = 0; j < p.splits; j++) s += p.partial[i + j * p.count];
    p.out[i] = sg_float_to_bf16(s * p.scale);
}
