"""Readers of what the build and inspect take in: ELF images, containers, Python submissions read
statically, and the AMD (``amd``) and NVIDIA (``cuda``) kernel models."""
