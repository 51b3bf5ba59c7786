"""The kernel project: its plan (``load``), its TRITON table, the plan's run at build time, the form of
what it returns, and its launches checked against the code objects."""
