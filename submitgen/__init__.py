"""submitgen: turn AMDGPU kernels into single-file GPU MODE leaderboard submissions."""

__version__ = "0.1.0"
