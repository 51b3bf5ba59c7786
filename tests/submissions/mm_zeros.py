#!POPCORN leaderboard amd-mxfp4-mm
#!POPCORN gpu MI355X
"""Hand-written mxfp4-mm submission that returns zeros (test input: must fail every shape)."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data[0], data[1]
    return torch.zeros(a.shape[0], b.shape[0], dtype=torch.bfloat16, device=a.device)
