"""Plan of the AQL test project: one 2-D launch of a kernel with a 336-byte kernarg segment."""
import torch

SOURCES = ("aql336.hip",)
KERNELS = ("aql336",)


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, k = a.shape
    n = b.shape[0]
    ws = torch.empty((m, n), dtype=torch.float32, device=a.device)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    tiles = (m * n + 255) // 256
    gx = min(tiles, 1024)
    return out, [
        ("aql336", (gx, (tiles + gx - 1) // gx), (256, 1, 1), 256 * 4,
         (a, b, b_q, b_shuffle, b_scale, out, ws, m, n, k, 1, tiles, 0)),
    ]
