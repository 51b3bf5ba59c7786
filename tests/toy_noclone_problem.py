"""The toy problem (tests/toy_problem.py) under a second name whose evaluator, like amd-moe-mxfp4's,
passes the inputs to custom_kernel without cloning them."""

from __future__ import annotations

from dataclasses import replace

from toy_problem import PROBLEM as _TOY

PROBLEM = replace(_TOY, name="toy-noclone", leaderboard="amd-toy-noclone", eval_clones_inputs=False,
                  module=__name__)
