#!POPCORN leaderboard amd-mxfp4-mm
#!POPCORN gpu MI355X
"""Not a submission: torch's plain bf16 ``A @ B.T`` on the amd-mxfp4-mm inputs, the yardstick for
the default kernels' speed. It skips the MXFP4 quantization, so it fails the correctness check
(the timing is what counts). Time it beside a build, on the same GPU and in the same way:

    submitgen bench benchmarks/baselines/torch_bf16_mm.py --shapes all --no-lint
    submitgen bench submission.py --shapes all
"""


def custom_kernel(data):
    a, b = data[0], data[1]
    return a @ b.T
