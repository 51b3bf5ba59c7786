"""Shared helpers of the test problems (the role of reference-kernels' utils.py)."""

import random


def set_seed(seed=42):
    random.seed(seed)
