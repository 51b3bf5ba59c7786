import triton
import triton.language as tl


@triton.jit
def fill_kernel(out_ptr, n_elements, value, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, value, mask=offsets < n_elements)
