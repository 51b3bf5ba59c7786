"""The launchers submitgen ships, in the order the CLI lists them (the first is the default)."""

from __future__ import annotations

from submitgen.backends import BACKENDS
from submitgen.launchers.spec import ImportCost, LauncherSpec, OwnQueue, Runtime
from submitgen.options import Target

# Import costs: `python benchmarks/bench_import.py --cpp` against the stand-in HIP library (the
# BENCHMARKS.md has the latest figures).
_MACHINE, _DATE = "a 2-core x86 machine", "2026-11-29"
# AQL packets go through the HSA runtime (AMD's), not the backend's own (HIP)
HSA = Runtime("hsa", "HSA")

CTYPES = LauncherSpec(
    name="ctypes",
    summary="load and launch through ctypes (fast import)",
    runtimes={target: backend.runtime for target, backend in BACKENDS.items()},  # each target's own
    import_cost=ImportCost("decodes and loads {objects}, nothing compiled", "~7 ms", _MACHINE, _DATE),
    template="launcher/ctypes.py.j2",
)

CPP = LauncherSpec(
    name="cpp",
    summary="a C++ extension built by load_inline at import (the common hand-written pattern; costs "
            "compile time)",
    runtimes={Target.AMD: BACKENDS[Target.AMD].runtime},
    import_cost=ImportCost("compiles a C++ extension with load_inline", "~34 s on first import", _MACHINE,
                           _DATE, "~0.16 s once torch's extension cache holds it; 10-90 s reported on the "
                           "runner"),
    template="launcher/cpp.py.j2",
    extra_sources=(("cpp_source", "launcher/cpp_host.cpp"),),
    needs="builds a HIP host extension",
)

AQL = LauncherSpec(
    name="aql",
    summary="AQL packets on an HSA queue of its own (local experiments only; needs --allow-own-queue)",
    runtimes={Target.AMD: HSA},
    import_cost=ImportCost("loads {objects} with the HSA executable API and creates a queue, kernarg "
                           "memory and a completion signal; each call then waits for its kernels"),
    template="launcher/aql.py.j2",
    submittable=False,
    needs="dispatches through the HSA runtime",
    reuse_output=False,
    kernarg_segments=True,
    own_queue=OwnQueue(
        refusal="--launcher aql dispatches AQL packets on an HSA queue of its own, outside torch's timing "
                "events: the leaderboard's events would time ~4 us regardless of what the kernel computes, "
                "and the organizers said they would disqualify such entries. {leaderboard} is a leaderboard "
                "problem, so this build is refused; pass --allow-own-queue to build it for local experiments "
                "only, and never submit the file",
        warning="!!! NOT FOR LEADERBOARD SUBMISSION (--allow-own-queue): this file dispatches on an HSA "
                "queue of its own, outside torch's timing events (~4 us whatever the kernel computes); the "
                "organizers disqualify such entries. Do not submit it to {leaderboard}.",
        lint_rule="hsa-queue",
    ),
)
