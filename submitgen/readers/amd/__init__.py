"""AMDGPU HSA code objects -> a frozen, typed model (``reader.read_code_object``); its modules and
sources: docs/readers.md."""
