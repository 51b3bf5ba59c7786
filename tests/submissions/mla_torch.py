#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Hand-written mixed-mla submission: plain torch attention over the bf16 KV copy (test input)."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"][:, 0].float()
    out = torch.empty(q.shape[0], q.shape[1], config["v_head_dim"], dtype=torch.bfloat16, device=q.device)
    qo = qo_indptr.tolist()
    ko = kv_indptr.tolist()
    for b in range(config["batch_size"]):
        qb = q[qo[b]:qo[b + 1]].float()
        kb = kv[ko[b]:ko[b + 1]]
        scores = torch.einsum("qhd,kd->qhk", qb, kb) * config["sm_scale"]
        out[qo[b]:qo[b + 1]] = torch.einsum("qhk,kd->qhd", scores.softmax(-1), kb[:, :512]).to(torch.bfloat16)
    return out
