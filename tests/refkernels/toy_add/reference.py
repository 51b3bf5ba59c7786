"""out[i] = a[i] + b[i]; inputs from the case's seed."""

import random


def generate_input(n, seed):
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(n)], [rng.uniform(-1, 1) for _ in range(n)]


def ref_kernel(data):
    a, b = data
    return [x + y for x, y in zip(a, b)]


def check_implementation(data, output):
    expected = ref_kernel(data)
    if not isinstance(output, list) or len(output) != len(expected):
        return False, f"expected a list of {len(expected)} values, got {type(output).__name__}"
    bad = [i for i, (x, y) in enumerate(zip(output, expected)) if abs(x - y) > 1e-6]
    if bad:
        return False, (f"mismatch found! {len(bad)} of {len(expected)} elements differ\n"
                       f"first at index {bad[0]}: {output[bad[0]]!r} against {expected[bad[0]]!r}")
    return True, ""
