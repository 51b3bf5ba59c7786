from typing import TypedDict

input_t = tuple[list, list]
output_t = list


class TestSpec(TypedDict):
    n: int
    seed: int
