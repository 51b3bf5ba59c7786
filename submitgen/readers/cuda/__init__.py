"""NVIDIA cubins: the reader, its kernel model and the ``.nv.info`` records."""
