#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Hand-written mixed-mla submission that writes into its query input (test input: mutation)."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    q.mul_(2.0)
    return torch.zeros(q.shape[0], q.shape[1], 512, dtype=torch.bfloat16, device=q.device)
