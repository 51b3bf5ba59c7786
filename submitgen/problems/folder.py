"""A reference-kernels problem folder (task.yml, task.py, reference.py, eval.py, utils.py) as a
problem, with no code: wherever a command takes a problem name, a path to such a folder works.

- Shapes: task.yml's ``tests`` and ``benchmarks``, their keys in task.yml's order.
- Leaderboard and GPU: the round file beside the round's folder (``problems/amd.yaml`` for
  ``problems/amd/fp8-mm``: the ``problems`` entry whose ``directory`` is the folder), or
  ``--leaderboard``/``--gpu``; the arch from the GPU through :data:`GPU_ARCHES`.
- Inputs: the folder's own ``generate_input``, run with no memory (FakeTensorMode, its CUDA
  generator swapped for a CPU one), kept as meta tensors for the plan check; its ``ref_kernel`` run
  on those gives the output's form, and says when the output is handed in (an input it writes and
  returns). The folder's modules are imported only in the build's plan child (and its probe).
- Leaves: :func:`_sg_leaves` (pasted into the file): the tensors depth first, tuple and list items
  in order, dict values in insertion order, dataclass fields in declaration order; each named by
  its place (``data[4]``, ``data['q']``, ``data.cfg``).
- Payload baseline: :func:`payload_baseline` of the files task.yml lists, as kernelbot sends them.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import importlib.abc
import importlib.util
import json
import re
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from submitgen.errors import PlanError, ProblemError
from submitgen.problems.reftask import read_bytes, read_task
from submitgen.project.run import run_plan
from submitgen.system import over_budget

GPU_ARCHES = {"MI300": "gfx942", "MI300X": "gfx942", "MI355X": "gfx950", "H100": "sm_90"}
"""The one table of a round file's GPU -> the arch submitgen builds for it."""
NO_FALLBACK = "_sg_fallback = None  # built from a problem folder with no --fallback FILE\n"


def is_folder(name: str | Path) -> bool:
    """Whether ``name`` is a path to a folder holding task.yml."""
    path = Path(str(name).strip() or ".")
    return path.is_dir() and (path / "task.yml").is_file()


def payload_baseline(folder: str | Path) -> int:
    """The dispatch payload of the folder's files with an empty submission, as kernelbot sends it:
    ``base64(zlib(json(config)))`` with every file task.yml lists (the submission empty), the main
    script, the tests and the benchmarks."""
    task = read_task(folder)
    sources = {
        f.name: "" if f.source is None else read_bytes(f.source, "task.yml file").decode("utf-8", "replace")
        for f in task.files
    }
    config = {
        "lang": "py",
        "main": task.main,
        "sources": sources,
        "tests": [dict(c) for c in task.tests],
        "benchmarks": [dict(c) for c in task.benchmarks],
        "ranking_by": task.ranking_by,
    }
    return len(base64.b64encode(zlib.compress(json.dumps(config).encode("utf-8"), 9)))


def round_entry(folder: Path) -> tuple[str | None, tuple[str, ...]]:
    """(leaderboard, GPUs) of the round file one level above the folder's round folder whose
    ``problems`` entry names this folder; (None, ()) when none does."""
    import yaml

    top = folder.resolve().parent.parent
    for path in sorted((*top.glob("*.yaml"), *top.glob("*.yml"))):
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
            continue
        entries = raw.get("problems") if isinstance(raw, Mapping) else None
        for entry in entries if isinstance(entries, list) else ():
            if (
                isinstance(entry, Mapping)
                and isinstance(entry.get("directory"), str)
                and (top / entry["directory"]).resolve() == folder.resolve()
            ):
                gpus = entry.get("gpus")
                return (
                    str(entry["name"]) if entry.get("name") else None,
                    tuple(map(str, gpus)) if isinstance(gpus, list) else (),
                )
    return None, ()


# ---- pasted into every submission built from a folder: builtins only ----
def _sg_leaves(data):
    if hasattr(data, "data_ptr"):
        return (data,)
    if isinstance(data, dict):
        data = tuple(data.values())
    elif hasattr(type(data), "__dataclass_fields__"):
        data = tuple(getattr(data, name) for name in type(data).__dataclass_fields__)
    elif not isinstance(data, (tuple, list)):
        return ()
    return tuple(t for item in data for t in _sg_leaves(item))


def _sg_key(data):
    if hasattr(data, "data_ptr"):
        return (data.shape, data.stride(), data.dtype)
    if isinstance(data, dict):
        return tuple((k, _sg_key(v)) for k, v in data.items())
    if hasattr(type(data), "__dataclass_fields__"):
        return tuple(_sg_key(getattr(data, name)) for name in type(data).__dataclass_fields__)
    if isinstance(data, (tuple, list)):
        return tuple(_sg_key(v) for v in data)
    return data


def leaf_names(data: Any, where: str = "data") -> tuple[str, ...]:
    """Each leaf's place, in :func:`_sg_leaves`'s order: ``data[0]``, ``data['q']``, ``data.cfg``."""
    if hasattr(data, "data_ptr"):
        return (where,)
    if isinstance(data, dict):
        items = [(f"{where}[{k!r}]", v) for k, v in data.items()]
    elif hasattr(type(data), "__dataclass_fields__"):
        items = [(f"{where}.{n}", getattr(data, n)) for n in type(data).__dataclass_fields__]
    elif isinstance(data, (tuple, list)):
        items = [(f"{where}[{i}]", v) for i, v in enumerate(data)]
    else:
        return ()
    return tuple(name for w, v in items for name in leaf_names(v, w))


class _TaskFiles(importlib.abc.MetaPathFinder):
    """Imports the task's modules (``task``, ``utils``, ``reference``) from the files task.yml
    names, wherever they sit (``../utils.py``), with no copy."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = dict(files)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        source = self.files.get(name)
        return importlib.util.spec_from_file_location(name, source) if source is not None else None


@contextlib.contextmanager
def _no_memory():
    """FakeTensorMode, with ``torch.Generator(device="cuda")`` giving a CPU generator."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    real = torch.Generator

    class _CpuGenerator(real):  # type: ignore[misc, valid-type]
        def __new__(cls, device: Any = "cpu") -> Any:
            return real("cpu")

    torch.Generator = _CpuGenerator
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            yield
    finally:
        torch.Generator = real


@dataclasses.dataclass(frozen=True)
class FolderInputs:
    """The folder's own ``generate_input`` and ``ref_kernel``, imported on first use (in the
    process that runs them: the build's plan child), with their results as meta tensors."""

    folder: Path

    @functools.cached_property
    def task(self) -> Any:
        return read_task(self.folder)

    @functools.cached_property
    def module(self) -> Any:
        files = {f.name[:-3]: f.source for f in self.task.files
                 if f.source is not None and f.name.endswith(".py")}
        if not any(isinstance(f, _TaskFiles) for f in sys.meta_path):
            sys.meta_path.insert(0, _TaskFiles(files))
        try:
            return importlib.import_module("reference")
        except BaseException as e:  # noqa: BLE001 - the folder's code: one line
            if over_budget(e):  # the command's budget: enforced() names it
                raise
            raise ProblemError(
                f"{self.folder}: importing reference.py failed: {type(e).__name__}: {e}"
            ) from None

    def meta_input(self, spec: Mapping[str, Any]) -> Any:
        import torch

        from submitgen.problems.spec import map_tensors  # lazy: spec imports torch

        try:
            with _no_memory():
                data = self.module.generate_input(**spec)
        except ProblemError:
            raise
        except BaseException as e:  # noqa: BLE001
            if over_budget(e):  # the command's budget: enforced() names it
                raise
            raise ProblemError(
                f"{self.folder}: reference.py's generate_input({_label(spec)}) does not run "
                f"without memory: {type(e).__name__}: {e}"
            ) from None
        return map_tensors(
            data, lambda t: torch.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="meta")
        )

    def output(self, spec: Mapping[str, Any]) -> tuple[Any, Any]:
        """(meta input, ref_kernel's output on it); ProblemError when ref_kernel does not run so."""
        data = self.meta_input(spec)
        try:
            return data, self.module.ref_kernel(data)
        except BaseException as e:  # noqa: BLE001
            if over_budget(e):  # the command's budget: enforced() names it
                raise
            raise ProblemError(
                f"ref_kernel does not run on meta inputs ({type(e).__name__}: "
                f"{str(e).splitlines()[0] if str(e) else ''})"
            ) from None

    def output_meta(self, spec: Mapping[str, Any]) -> Any:
        try:
            out = self.output(spec)[1]
        except ProblemError:
            return None
        if isinstance(out, (tuple, list)) and all(hasattr(t, "dtype") for t in out):
            return tuple(out)
        return out if hasattr(out, "dtype") else None

    def generate_input(self, spec: Mapping[str, Any], device: Any = "cpu") -> Any:
        return self.module.generate_input(**spec)

    def reference(self, data: Any) -> Any:
        return self.module.ref_kernel(data)

    def probe(self, spec: Mapping[str, Any]) -> tuple[tuple[str, ...], int | None, tuple[str, ...], int]:
        """(the leaves' names, the leaf handed in as the output or None, the build's notes, the
        number of tensors of a tuple output or 0): what the build learns in a child process. The
        output is handed in where ref_kernel writes and returns an input, else where task.yml's
        description names one (:func:`described_output`)."""
        notes: list[str] = []
        try:
            data, out = self.output(spec)
        except ProblemError as e:
            data, out = self.meta_input(spec), None
            notes.append(f"{e}: the plan's output is checked for its device only")
        outputs = len(out) if isinstance(out, (tuple, list)) else 0
        if isinstance(out, (tuple, list)) and not (out and all(hasattr(t, "data_ptr") for t in out)):
            raise PlanError(
                f"{self.folder}: ref_kernel returns a {type(out).__name__} holding "
                f"{', '.join(type(t).__name__ for t in out) or 'nothing'}; a submitgen plan returns a "
                "tensor or a tuple of tensors"
            )
        leaves, names = _sg_leaves(data), leaf_names(data)
        handed = next((i for i, t in enumerate(leaves) if t is out), None)
        how = "ref_kernel writes and returns it"
        if handed is None and not outputs:
            named = described_output(self.task.description, data)
            if named is not None:
                handed = next(i for i, t in enumerate(leaves) if t is data[named[0]])
                how = f"task.yml's description names `{named[1]}` pre-allocated or the output"
        if handed is not None:
            notes.append(f"the output is handed in as {names[handed]} ({how}): the plan may return it")
        return names, handed, tuple(notes), outputs


_HANDED = re.compile(r"pre-?allocated|\bis the output\b", re.IGNORECASE)
_MENTION = re.compile(r"`(\w+)`|^[\s>]*[-*]\s*(\w+)\s*:")


def described_output(description: str, data: Any) -> tuple[int, str] | None:
    """(index, name) of the input tensor that task.yml's description names as the output it hands
    in, or None: the description lists the inputs as ``(a, b, c)`` (as many names as ``data`` has
    items), and exactly one of them is the first input a line mentions (in backticks, or as a
    ``- name:`` bullet) where that line says "pre-allocated" or "is the output" (fp8-mm: "`c` is
    the output matrix"; identity: "- output_tensor: Pre-allocated empty tensor")."""
    if not isinstance(data, (tuple, list)):
        return None
    groups = (re.split(r"\s*,\s*", g) for g in re.findall(r"\(\s*(\w+(?:\s*,\s*\w+)+)\s*\)", description))
    names = next((g for g in groups if len(g) == len(data)), None)
    if names is None:
        return None
    found = set()
    for line in description.splitlines():
        mentioned = [m.group(1) or m.group(2) for m in _MENTION.finditer(line)]
        first = next((n for n in mentioned if n in names), None)
        if first is not None and _HANDED.search(line):
            found.add(first)
    if len(found) != 1:
        return None
    index = names.index(found.pop())
    return (index, names[index]) if hasattr(data[index], "data_ptr") else None


def _label(spec: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in spec.items() if k != "seed")


def folder_problem(folder: str | Path, *, leaderboard: str | None = None, gpu: str | None = None) -> Any:
    """The problem of ``folder`` (no import of its code yet): leaderboard and GPU from the round file
    or the arguments, shapes from task.yml. ProblemError on a multi-GPU task, a folder no round file
    names with no --leaderboard/--gpu, or a round of several GPUs with no --gpu."""
    from submitgen.problems.compare import Tolerance  # lazy: compare imports torch
    from submitgen.problems.spec import ProblemSpec, frozen_specs  # lazy: spec imports torch

    path = Path(str(folder).strip())
    task = read_task(path)
    if task.multi_gpu:
        raise ProblemError(
            f"{path}: a multi-GPU task (task.yml says multi_gpu: true); submitgen builds "
            "single-GPU submissions only"
        )
    board, gpus = round_entry(path)
    board = leaderboard or board
    if gpu is not None:
        gpus = (gpu,)
    if board is None or not gpus:
        raise ProblemError(
            f"{path}: no round file beside {path.resolve().parent} names this folder; pass "
            "--leaderboard NAME and --gpu GPU"
        )
    if len(gpus) > 1:
        raise ProblemError(f"{path}: {board} runs on {', '.join(gpus)}; pass --gpu with one of them")
    if not task.tests:
        raise ProblemError(f"{path / 'task.yml'}: lists no tests")
    inputs = FolderInputs(path.resolve())
    keys = tuple(k for k, _ in task.tests[0])
    cases = [dict(c) for c in (*task.tests, *task.benchmarks)]
    task_py = next((f.source for f in task.files if f.name == "task.py" and f.source is not None), None)
    return ProblemSpec(
        name=str(folder),
        leaderboard=board,
        gpu=gpus[0],
        arch=GPU_ARCHES.get(gpus[0], ""),
        spec_keys=keys,
        tests=frozen_specs(cases[: len(task.tests)]),
        benchmarks=frozen_specs(cases[len(task.tests) :]),
        tolerance=Tolerance(rtol=0.0, atol=0.0),
        payload_baseline=payload_baseline(path),
        leaves=_sg_leaves,
        key=_sg_key,
        fallback_module="",
        kernel_project=path,
        task_source=read_bytes(task_py, "task file").decode("utf-8", "replace") if task_py else "",
        shape_label=_label,
        generate_input=inputs.generate_input,
        meta_input=inputs.meta_input,
        output_meta=inputs.output_meta,
        reference=inputs.reference,
        module=__name__,
        folder=path,
    )


CUDA_GRAPH_WORDS = ("torch.cuda.graph", "CUDAGraph")


def for_build(problem: Any, *, timeout: float, fallback: Path | None) -> Any:
    """``problem`` of a folder as the build checks it: its eval.py does not capture CUDA graphs; the
    leaves' names, the handed-in output and a note from its ``generate_input`` and ``ref_kernel``
    run once in a child process (where they cannot run here, a registered problem of the same
    leaderboard lends its inputs, and the summary says so); the fallback from ``fallback``."""
    from submitgen.problems.registry import problems  # lazy: the registry imports this module

    task = read_task(problem.folder)
    main = task.folder / task.main
    source = next(f.source for f in task.files if f.name == task.main)
    if any(w in read_bytes(source, "task.yml file").decode("utf-8", "replace") for w in CUDA_GRAPH_WORDS):
        raise ProblemError(
            f"{main}: times custom_kernel inside a captured CUDA graph; a submitgen file launches "
            "on queue 0, which cannot join a capture (torch gives the capturing queue only under "
            "the banned word; Triton's launcher takes it unnamed, but runs an embedded binary only "
            "through Triton's internal, version-specific CompiledKernel API from files written at "
            "run time, which submitgen does not do)"
        )
    extra: dict[str, Any] = {"fallback_text": fallback_source(fallback)} if fallback is not None else {}
    inputs = FolderInputs(problem.folder.resolve())
    try:
        names, handed, notes, outputs = run_plan(
            inputs.probe, (problem.tests[0],), plan_path=problem.folder / "reference.py", timeout=timeout
        )
    except ProblemError as e:
        lender = next(
            (p for p in problems() if p.leaderboard == problem.leaderboard and p.folder is None), None
        )
        if lender is None:
            raise ProblemError(f"{e}; the plan check runs it on every shape") from None
        return dataclasses.replace(
            lender,
            name=problem.name,
            tests=problem.tests,
            benchmarks=problem.benchmarks,
            gpu=problem.gpu,
            arch=problem.arch,
            payload_baseline=problem.payload_baseline,
            task_source=problem.task_source,
            folder=problem.folder,
            fallback_module="",
            kernel_project=problem.kernel_project,
            notes=(f"{e}: the plan is checked on the inputs of submitgen's own {lender.name} problem",),
            **extra,
        )
    return dataclasses.replace(
        problem, input_names=names, handed_output=handed, notes=notes, tuple_output=outputs, **extra
    )


def fallback_source(path: Path) -> str:
    """A plain-torch submission's text as the fallback: its ``custom_kernel`` renamed ``_sg_fallback``;
    none of its top-level names may be one of the file's own (``_sg``/``sg_`` prefixes, ``plan``)."""
    import ast


    text = read_bytes(path, "--fallback").decode("utf-8", "replace")
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise ProblemError(f"--fallback {path}: not Python (line {e.lineno}: {e.msg})") from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "custom_kernel"]
    if len(defs) != 1:
        raise ProblemError(
            f"--fallback {path}: expected one top-level def custom_kernel(data), found {len(defs)}"
        )
    for node in tree.body:
        targets = (
            [node] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else getattr(node, "targets", [])
        )
        for t in targets:
            name = getattr(t, "name", None) or getattr(t, "id", "")
            if name.lower().startswith(("_sg", "sg_")) or name in ("plan", "TRITON"):
                raise ProblemError(
                    f"--fallback {path}: line {node.lineno} binds {name!r}, a name of the "
                    "emitted file's own; rename it"
                )
    lines = text.splitlines(keepends=True)
    row = defs[0].lineno - 1
    lines[row] = lines[row].replace("def custom_kernel(", "def _sg_fallback(", 1)
    return "".join(lines)


def folder_board(folder: str | Path) -> tuple[str, int, tuple[str, ...]]:
    """(leaderboard, payload baseline, GPUs) of a problem folder for lint: no import, no torch."""
    board, gpus = round_entry(Path(str(folder).strip()))
    if board is None:
        raise ProblemError(
            f"{folder}: no round file beside {Path(folder).resolve().parent} names this folder; "
            "lint the file by its header instead (without --problem)"
        )
    return board, payload_baseline(folder), gpus
