"""Code pasted verbatim into emitted submissions (standard library and torch only) and imported by
the build itself, so the rules checked at build time are the ones that run on the GPU (HACKING.md:
pack.py, frozen.py)."""
