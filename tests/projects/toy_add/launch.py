"""Plan of the toy problem's kernel project: one launch of toy_add over the vector."""
import torch

SOURCES = ("add.hip",)
KERNELS = ("toy_add",)


def plan(data):
    a, b = data
    n = a.shape[0]
    out = torch.empty((n,), dtype=torch.float32, device=a.device)
    return out, [("toy_add", ((n + 255) // 256, 1, 1), (256, 1, 1), 0, (a, b, out, n))]
