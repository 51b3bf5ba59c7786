import torch

KERNEL = "not a blob"
DATA = "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBjb2RlIG9iamVjdA=="
