# aiter-free reference for the H200 run, built on submitgen (not upstream's file).
from utils import make_match_reference

from submitgen.problems import mxfp4_mm


def generate_input(m, n, k, seed):
    return mxfp4_mm.generate_input({"m": m, "n": n, "k": k, "seed": seed}, device="cuda")


def ref_kernel(data):
    return mxfp4_mm.reference(data)


check_implementation = make_match_reference(ref_kernel, rtol=1e-02, atol=1e-02)
