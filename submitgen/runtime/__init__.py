"""Code that runs inside emitted submissions. Each module here is plain Python that imports only
the standard library and torch; its source is pasted verbatim into the rendered file, and the
build imports the very same module to check launch plans on meta tensors, so the packing rules
checked at build time are the ones that run on the GPU. pack.py packs the launches' arguments;
frozen.py is the read-only TRITON table (``sg_frozen``), pasted before a plan whose TRITON literal
the build rewrote (project/load.py) and given to that plan at build time."""
