// The kernel project of the toy-mul plug-in: out = a * b on float32 vectors.
#include <submitgen/device.h>

extern "C" __global__ SG_LAUNCH_BOUNDS(256) void toy_mul(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i];
}
