"""The fallback of toy-mul, pasted whole into every submission: pure torch, names prefixed _sg_."""
import torch


def _sg_fallback(data):
    a, b = data
    return torch.mul(a, b)
