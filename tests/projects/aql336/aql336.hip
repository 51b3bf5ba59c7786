// A kernel for the AQL launcher test (tests/test_aql.py): 80 bytes of explicit arguments plus the
// 256-byte code object v5 hidden block, so its metadata asks for a 336-byte kernarg segment. It
// reads blockDim/gridDim (hidden group sizes and block counts) and uses dynamic LDS
// (hidden_dynamic_lds_size). It computes nothing useful; what matters is its argument layout.
#include <submitgen/device.h>

extern "C" __global__ SG_LAUNCH_BOUNDS(256) void aql336(const sg_bf16* a, const sg_bf16* b, const uint8_t* b_q,
                                                        const uint8_t* b_shuffle, const uint8_t* b_scale,
                                                        sg_bf16* out, float* ws, int m, int n, int k,
                                                        int splits, int tiles, int flags) {
    extern __shared__ float scratch[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    scratch[threadIdx.x] = sg_bf16_to_float(a[i % (m * k)]) + sg_bf16_to_float(b[i % (n * k)]) +
                           (float)(b_q[0] + b_shuffle[0] + b_scale[0] + splits + tiles + flags);
    __syncthreads();
    float s = scratch[(threadIdx.x + 1) % blockDim.x] + (float)(gridDim.x * blockDim.y + gridDim.y);
    if (i < m * n) {
        ws[i] = s;
        out[i] = sg_float_to_bf16(s);
    }
}
