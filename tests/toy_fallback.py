# Pure-torch path of the toy problem (tests/toy_problem.py): pasted whole into its submissions.
import torch


def _sg_fallback(data):
    a, b = data
    return torch.add(a, b)
