"""The frozen values that cross the build's stages (prepare -> produce objects -> check ->
render -> verify -> write)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from submitgen.backends import Backend
from submitgen.launchers import DEFAULT, LauncherSpec, Runtime
from submitgen.lint.detector import Verdict
from submitgen.lint.payload import PayloadEstimate
from submitgen.options import Compress, Mode, Target
from submitgen.problems import Problem
from submitgen.project.launches import AqlEntry, KernelLayout, PlanCheck
from submitgen.project.load import KernelProject
from submitgen.readers.base import ObjectInfo
from submitgen.render.embed import Blob
from submitgen.render.template import RenderContext
from submitgen.runtime.pack import SgLaunchDefaults


@dataclass(frozen=True)
class BuildOptions:
    problem: str
    output: Path = Path("submission.py")
    kernels: Path | None = None  # kernel project folder; default: the shipped one for the problem
    code_objects: tuple[Path, ...] = ()  # prebuilt code objects instead of compiling
    arch: str | None = None  # default: the backend's (gfx950 for amd, sm_90 for cuda)
    target: Target | None = None  # default: the backend that builds the problem's arch
    compress: Compress = Compress.LZMA
    allow_fallback: bool = True
    reuse_output: bool = False  # return one output tensor per shape instead of a fresh one per call
    launcher: str = DEFAULT  # a name in launchers.REGISTRY
    allow_own_queue: bool = False  # --launcher aql for a leaderboard problem: build it anyway, warn loudly
    compiler: str | None = None
    use_cache: bool = True
    plan_timeout: float = 60.0  # seconds the plan (its import and every shape) may run
    gpu: str | None = None  # popcorn-cli's --gpu: checked against the problem's GPU
    mode: Mode = Mode.LEADERBOARD  # popcorn-cli's --mode, for the submit line the build prints
    leaderboard: str | None = None  # a problem folder's leaderboard (default: its round file's)
    fallback: Path | None = None  # a plain-torch custom_kernel to embed as the fallback
    force: bool = False  # overwrite an output that is not this build's to replace (build/guard.py)


@dataclass(frozen=True)
class Prepared:
    """Options checked and resolved once: the problem, the backend, the launcher, the compressor, the
    arch and the kernel project, and each plain option as the field of the stage that reads it. No
    later stage sees ``BuildOptions``."""

    problem: Problem
    backend: Backend
    launcher: LauncherSpec
    runtime: Runtime  # the one the launcher binds on the backend's target
    compress: Compress
    mode: Mode
    arch: str
    project: KernelProject
    output: Path  # where write puts the file
    code_objects: tuple[Path, ...]  # --co: the prebuilt front end's objects (none: compile the sources)
    compiler: str | None  # --compiler, for the compiled front end
    use_cache: bool  # the front ends' compile cache
    plan_timeout: float  # seconds the plan (its import and every shape) may run, in check
    allow_fallback: bool  # the emitted file may run the pure-torch fallback
    reuse_output: bool  # the emitted file returns one output tensor per shape
    rebuild: tuple[str, ...]  # the build command's flags that rebuild this file (prepare.rebuild_flags)
    output_seen: str | None = None  # -o as guard.check_overwrite saw it (None: --force, nothing checked)


@dataclass(frozen=True)
class KernelBinding:
    """A name the plan launches and the kernel (symbol name) that serves it in one object."""

    name: str
    kernel: str
    defaults: SgLaunchDefaults | None = None  # what its compiler decided for its launches


@dataclass(frozen=True)
class EmbeddedObject:
    """One code object the submission embeds: its bytes, parsed once, and the launch names it serves."""

    image: bytes
    label: str  # how messages name it
    code_object: ObjectInfo  # the backend reader's model (CodeObject, CubinObject)
    kernels: tuple[KernelBinding, ...]
    # (provenance field, value): the compiler that built it, when its front end records one
    # (("triton", "3.9.0")); objects of other front ends write "-" in that field
    built_by: tuple[str, str] | tuple[()] = ()


@dataclass(frozen=True)
class KernelSummary:
    name: str  # the name the plan launches (a Triton specialization's TRITON key)
    vgprs: int
    agprs: int | None  # None: the metadata does not say
    sgprs: int | None  # None: the target has no SGPRs (CUDA)
    spills: int | None
    static_lds: int
    scratch: int
    block: int
    occupancy: str  # "8 waves/SIMD (limited by vgpr)"
    dynamic_lds: int = 0  # the most the plan launches it with, over the shapes
    symbol: str = ""  # the kernel's .name in its code object

    @property
    def lds(self) -> int:
        """LDS per workgroup at launch: static plus the plan's largest dynamic amount."""
        return self.static_lds + self.dynamic_lds


@dataclass(frozen=True)
class Checked:
    """The objects checked against the target and the plan, for every shape."""

    target_id: str
    layouts: tuple[KernelLayout, ...]
    plan: PlanCheck
    aql: tuple[AqlEntry, ...]
    kernels: tuple[KernelSummary, ...]
    warnings: tuple[str, ...] = ()  # the objects' warning findings


@dataclass(frozen=True)
class Rendered:
    context: RenderContext
    text: str


@dataclass(frozen=True)
class Verified:
    """A rendered file that passed every check, with what lint measured."""

    rendered: Rendered
    checks: tuple[str, ...]
    payload: PayloadEstimate
    kernelguard: Verdict  # KernelGuard's verdict on the file (its version None: not installed)


@dataclass(frozen=True)
class BuildResult:
    output: Path
    text: str
    problem: Problem
    target_id: str
    blobs: tuple[Blob, ...]
    raw_base64_chars: int
    kernels: tuple[KernelSummary, ...]
    plan: PlanCheck
    payload: PayloadEstimate
    checks: tuple[str, ...]
    kernelguard: Verdict
    warnings: tuple[str, ...] = field(default=())
    submit: str = ""  # the popcorn-cli line that submits the file ("" for a file never to submit)

    @property
    def size(self) -> int:
        return len(self.text.encode())
