"""Compilers and compiling: find a toolchain (``discovery``), compile sources into one AMDGPU
code object (``compile``) through the content cache (``cache``), CUDA cubins with nvcc
(``cuda``), and Triton kernels (``triton``)."""
