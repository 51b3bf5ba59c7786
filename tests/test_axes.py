"""Each axis of change is one seam (issue 25, HACKING.md's axis table): a GPU target is its backend
(submitgen/backends/, listed once in BACKENDS after its options.Target member), which the CLI's
help, the launchers' runtimes, the container reader and Triton's arches read; a source language is
its front end (submitgen/pipeline/frontends/), which the build's inputs and the plan checks ask."""

from __future__ import annotations

import ast
from pathlib import Path
from types import MappingProxyType

import pytest

import submitgen.backends
from submitgen import options
from submitgen.backends import BACKENDS, Image, Runtime, TritonTarget
from submitgen.cli import cli
from submitgen.errors import TritonCompileError
from submitgen.files import templates_dir
from submitgen.launchers.builtin import CTYPES
from submitgen.options import Target
from submitgen.pipeline import BuildOptions, build_inputs, prepare
from submitgen.pipeline.check import param_kinds, param_names
from submitgen.pipeline.frontends import front_ends
from submitgen.readers.amd.header import EM_AMDGPU
from submitgen.readers.containers import LoadedCodeObject, load_code_objects
from submitgen.readers.cuda.cubin import EM_CUDA
from submitgen.toolchain import triton

PACKAGE = Path(__file__).resolve().parent.parent / "submitgen"
TESTS = Path(__file__).resolve().parent


def test_the_backends_are_the_targets():
    assert tuple(BACKENDS) == tuple(Target)
    assert {t: b.e_machine for t, b in BACKENDS.items()} == {Target.AMD: EM_AMDGPU, Target.CUDA: EM_CUDA}
    for backend in BACKENDS.values():
        assert backend.arches[0] == backend.default_arch
        assert (templates_dir() / "runtime" / f"{backend.runtime}.py.j2").is_file()
    assert CTYPES.runtimes == {t: b.runtime for t, b in BACKENDS.items()}
    assert list(triton.arches()) == ["gfx950", "gfx942", "sm_90"]


def test_the_cli_help_of_target_and_arch_comes_from_the_backends():
    params = {p.name: p for p in cli.commands["build"].params}
    assert params["target"].help == ("amd: HIP code object for MI355X. cuda: a cubin for NVIDIA GPUs (same "
                                     "kernel sources). Default: the one that builds the problem GPU's arch.")
    assert params["arch"].help == "Target processor: gfx950 (default), gfx942; sm_90 with --target cuda."
    assert params["target"].default is None  # the problem's arch picks it (pipeline/prepare.py)


class _ToyBackend:
    """A third target, as its backend module would declare it (only what the readers and Triton ask)."""

    target = "toy"
    e_machine = 0x4242
    image_kind = "toybin"
    runtime = Runtime("toy", "Toy runtime")
    triton_arches = MappingProxyType({"toy1": TritonTarget("toy", 1, 16, "toybin")})

    def __init__(self) -> None:
        self.read_images: list[str] = []

    def read_header(self, data, source):
        return type("H", (), {"processor": "toy1", "target_id": "toy1"})()

    def read(self, image: Image):
        self.read_images.append(image.label)
        return "the toy reader's model"


def _toy_elf() -> bytes:
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4:6] = b"\x02\x01"  # ELF64, little-endian
    header[18:20] = (0x4242).to_bytes(2, "little")
    return bytes(header)


def test_a_new_target_is_read_and_built_for_through_its_backend(monkeypatch):
    """A backend added to BACKENDS: the containers load its objects, and Triton needs its rows in
    options.TRITON_TARGETS."""
    toy = _ToyBackend()
    monkeypatch.setattr(submitgen.backends, "BACKENDS", MappingProxyType({**BACKENDS, "toy": toy}))
    (found,) = load_code_objects(_toy_elf(), arch="toy1")
    assert isinstance(found, LoadedCodeObject) and found.data == _toy_elf()
    monkeypatch.setattr(options, "TRITON_TARGETS", {**options.TRITON_TARGETS, **toy.triton_arches})
    assert triton.arches()["toy1"] == ("toy", 1, 16, "toybin")
    with pytest.raises(TritonCompileError) as e:
        triton.compile_triton(triton.TritonSpec("k", Path("k.py"), b"", "k", (), ()), "gfx90a")
    assert str(e.value) == "k.py: Triton kernel 'k': arch 'gfx90a' is not one of gfx950, gfx942, sm_90, toy1"


# Files that belong to one target (or name targets for another reason): only they may name a target's
# arch, its --target value or its runtime in a table or a comparison, or a Target member.
TARGET_OWNED = (
    "options.py",  # the Target enum
    "backends/",  # the targets themselves
    "readers/amd/", "readers/cuda/",  # each target's reader
    # the targets' compilers: clang/ROCm (AMD) and nvcc (CUDA)
    "toolchain/compile.py", "toolchain/discovery.py", "toolchain/hipheaders.py", "toolchain/cuda.py",
    "launchers/builtin.py",  # the AMD-only launchers (cpp, aql) name the target they run on
    "evaluate/results.py",  # the runtime a submission says it ran on ("hip", "cuda"), in test's report
)


def _named_targets(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each target's arch, --target value or runtime in a collection literal or a
    comparison, and of each ``Target.MEMBER``."""
    words = {m.value for m in Target} | {str(b.runtime) for b in BACKENDS.values()}
    words |= {a for b in BACKENDS.values() for a in (*b.arches, *b.triton_arches)}
    found = []
    for node in ast.walk(tree):
        sides: list[ast.AST] = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            sides = list(node.elts)
        elif isinstance(node, ast.Dict):
            sides = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
        found += [(s.lineno, s.value) for s in sides if isinstance(s, ast.Constant) and s.value in words]
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Target"
                and node.attr in Target.__members__):
            found.append((node.lineno, f"Target.{node.attr}"))
    return found


def test_only_a_targets_own_files_name_it():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(TARGET_OWNED):
            continue
        found += [f"{rel}:{line}: {what}" for line, what in _named_targets(ast.parse(path.read_text()))]
    assert found == []


def test_the_target_scan_finds_each_kind_of_naming():
    code = 'ARCHES = ("gfx950", "x")\nif arch == "sm_90":\n    pass\nt = Target.CUDA\nd = {"hip": 1}\n'
    assert _named_targets(ast.parse(code)) == [(1, "gfx950"), (2, "sm_90"), (4, "Target.CUDA"), (5, "hip")]


def test_no_template_but_a_runtimes_own_names_a_runtime():
    """A launcher template reads what a runtime declares (``ctx.runtime.after_load``), never which
    runtime it is: a new target's runtime template needs no launcher template edit (aql's own HSA
    runtime excepted: it is that launcher's)."""
    names = [str(b.runtime) for b in BACKENDS.values()]
    for path in sorted((templates_dir() / "launcher").glob("*.j2")) + [templates_dir() / "skeleton.py.j2"]:
        text = path.read_text()
        assert not [n for n in names if f'== "{n}"' in text or f"== '{n}'" in text], path.name


PROJECT = TESTS / "projects" / "mm_basic"


def test_the_front_ends_say_what_the_build_reads_and_how_their_parameters_are_typed(tmp_path):
    """prepare's input list and check's parameter kinds are the front ends' own, in their order."""
    assert [f.name for f in front_ends()] == ["prebuilt", "compiled", "triton"]
    p = prepare(BuildOptions(problem="mxfp4-mm", kernels=PROJECT, output=tmp_path / "s.py"))
    assert build_inputs(p) == (p.project.plan_path, *p.project.sources)
    assert set(param_kinds(p)) == {"mm_tile", "mm_reduce"} and param_names(p) == {}
    q = prepare(BuildOptions(problem="mxfp4-mm", kernels=TESTS / "projects" / "triton_fill",
                             output=tmp_path / "t.py"))
    assert q.project.triton and build_inputs(q) == (q.project.plan_path, *q.project.sources,
                                                    *(s.source for s in q.project.triton))
    assert set(param_names(q)) == set(param_kinds(q)) == {s.name for s in q.project.triton}


# load_code_objects' `source` is what it reads (a path or bytes), not a label


def _source_names(tree: ast.AST) -> list[str]:
    """Functions with a parameter named ``source`` and fields named ``source`` of the tree."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "load_code_objects":
            args = node.args
            if any(a.arg == "source" for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)):
                found.append(f"{node.name}(source)")
        elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
              and node.target.id == "source"):
            found.append(f"field source at line {node.lineno}")
    return found


def test_the_readers_call_a_message_label_label():
    """One name per meaning (issue 25): what prefixes a reader's messages is its ``label``, as an
    Image's and an EmbeddedObject's is (inspect's JSON keeps the key ``source``: docs/inspect-json.md)."""
    found = []
    for path in sorted((PACKAGE / "readers").rglob("*.py")):
        found += [f"{path.relative_to(PACKAGE)}: {n}" for n in _source_names(ast.parse(path.read_text()))]
    assert found == []
    assert _source_names(ast.parse("def f(data, *, source=''):\n    pass\nclass C:\n    source: str\n")) == [
        "f(source)", "field source at line 4"]
