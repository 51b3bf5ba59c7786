"""A toy submitgen problem plug-in: out = a * b on float32 vectors (problem.py binds PROBLEM)."""
