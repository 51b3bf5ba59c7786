"""A reference-kernels problem folder (``--reference-kernels DIR``): its ``task.yml`` read as
kernelbot reads it (docs/reference-kernels.md: files, config.main, tests/benchmarks, the timeouts,
ranking_by), and the cases file eval.py takes. Every check names the file and what is wrong;
nothing here runs anything."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from submitgen.errors import EvaluateError
from submitgen.system import Refused, read_regular

SUBMISSION = "@SUBMISSION@"
MODES = ("test", "benchmark", "leaderboard")
DEFAULT_TIMEOUT_S = 180
"""kernelbot's timeout of a mode that task.yml does not set (``LeaderboardTask``)."""
_TIMEOUT_KEYS = {"test": "test_timeout", "benchmark": "benchmark_timeout", "leaderboard": "ranked_timeout"}
# The bounds on task.yml (docs/limits.md): each listed file (and task.yml itself), the files listed,
# its values with each alias counted at each use (an alias bomb is refused before it is built), its
# nesting, an integer's characters (Python refuses to convert one of more than 4,300 digits)
MAX_FILE_BYTES, MAX_FILES, MAX_VALUES, MAX_DEPTH, MAX_INT_DIGITS = 16 << 20, 100, 100_000, 64, 100
# What eval.py's case parser accepts as a key and as a value (it exits 113 on anything else)
_KEY_RE, _VALUE_RE = re.compile(r"[a-zA-Z_]\w*"), re.compile(r"[a-zA-Z_]\w*|[+-]?[0-9]+")

Case = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class TaskFile:
    name: str  # where it goes in the run folder
    source: Path | None  # None: the submission


@dataclass(frozen=True)
class RefTask:
    folder: Path
    files: tuple[TaskFile, ...]
    main: str
    tests: tuple[Case, ...]
    benchmarks: tuple[Case, ...]
    timeouts: tuple[tuple[str, int], ...]  # mode -> seconds
    ranking_by: str
    multi_gpu: bool = False
    description: str = ""

    def cases(self, mode: str) -> tuple[Case, ...]:
        """What kernelbot writes to the cases file for ``mode``: the tests, or the benchmarks (only
        the last one when ranking_by is 'last')."""
        if mode == "test":
            return self.tests
        return self.benchmarks[-1:] if self.ranking_by == "last" else self.benchmarks

    def timeout(self, mode: str) -> int:
        return dict(self.timeouts)[mode]

    def modules(self) -> tuple[str, ...]:
        """The Python modules of the problem (every listed ``.py`` but the submission and the main
        script): what eval.py imports before it runs anything of the submission."""
        return tuple(f.name[:-3] for f in self.files
                     if f.source is not None and f.name.endswith(".py") and f.name != self.main
                     and "/" not in f.name)


def cases_text(cases: Sequence[Case]) -> str:
    """eval.py's cases file: one line per case, ``key: value`` pairs joined by ``; `` (as kernelbot's
    ``build_test_string`` writes them)."""
    return "".join("; ".join(f"{k}: {v}" for k, v in case) + "\n" for case in cases)


def read_bytes(path: Path, what: str) -> bytes:
    """A regular file of at most MAX_FILE_BYTES; EvaluateError naming ``what`` otherwise (the one
    bounded reader, :func:`submitgen.system.read_regular`)."""
    try:
        return read_regular(path, MAX_FILE_BYTES)
    except Refused as r:
        if r.reason in ("missing", "unreadable"):
            raise EvaluateError(f"{what} {str(path)!r} cannot be read: "
                                f"{r.detail or 'No such file or directory'}") from None
        if r.reason == "not-regular":
            raise EvaluateError(f"{what} {str(path)!r} is not a regular file") from None
        size = f"{r.size:,} bytes" if r.reason == "too-large" else "growing while read and"
        raise EvaluateError(f"{what} {str(path)!r} is {size}, more than the {MAX_FILE_BYTES:,} "
                            "read") from None


def _shown(value: Any, n: int = 80) -> str:
    """``value``'s repr, cut to ``n`` characters without building more of it than that."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxstring, r.maxother = 3, n, n
    return r.repr(value)[:n]


def _load_yaml(path: Path) -> Mapping[str, Any]:
    import yaml

    try:
        loader = yaml.SafeLoader(read_bytes(path, "task file").decode("utf-8"))
        try:
            node = loader.get_single_node()
            if node is not None:
                _bounded(path, node, 0, {})
            raw = loader.construct_document(node) if node is not None else None
        except (ValueError, IndexError, KeyError, TypeError, OverflowError) as e:  # an explicit tag: !!int ''
            raise EvaluateError(f"{path}: not valid YAML: a value does not fit its tag ({type(e).__name__}: "
                                f"{str(e)[:120]})") from None
        finally:
            loader.dispose()
    except UnicodeDecodeError as e:
        raise EvaluateError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        raise EvaluateError(f"{path}: not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise EvaluateError(f"{path}: not valid YAML: nested too deeply") from None
    if not isinstance(raw, Mapping):
        raise EvaluateError(f"{path}: expected a mapping of task keys, got {type(raw).__name__}")
    return raw


def _bounded(path: Path, node: Any, depth: int, seen: dict[int, tuple[int, int] | None]) -> tuple[int, int]:
    """(values, depth) of the composed ``node`` as it would be built, each alias counted at each
    use (``seen``: what each node already gave; None while it is being walked); EvaluateError past
    MAX_VALUES, MAX_DEPTH or MAX_INT_DIGITS, or on an alias inside the value it names."""
    import yaml

    if id(node) in seen:
        known = seen[id(node)]
        if known is None:
            raise EvaluateError(f"{path}: line {node.start_mark.line + 1}: an alias inside the value it "
                                "names (a value that holds itself); not read")
        values, height = known
    else:
        seen[id(node)] = None
        values, height = 1, 0
        if isinstance(node, yaml.ScalarNode):
            if node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_DIGITS:
                raise EvaluateError(f"{path}: line {node.start_mark.line + 1}: an integer of "
                                    f"{len(node.value):,} characters, more than the {MAX_INT_DIGITS} read")
        else:
            items = node.value if isinstance(node, yaml.SequenceNode) else \
                [n for pair in node.value for n in pair]
            for child in items:
                v, h = _bounded(path, child, depth + 1, seen)
                values, height = values + v, max(height, h + 1)
                if values > MAX_VALUES:
                    break
        seen[id(node)] = (values, height)
    if values > MAX_VALUES:
        raise EvaluateError(f"{path}: expands to more than {MAX_VALUES:,} values (each alias counted at "
                            "each use); not read")
    if depth + height > MAX_DEPTH:
        raise EvaluateError(f"{path}: nested more than {MAX_DEPTH} levels deep; not read")
    return values, height


def _files(path: Path, folder: Path, raw: Any) -> tuple[TaskFile, ...]:
    if not isinstance(raw, list) or not raw:
        raise EvaluateError(f"{path}: 'files' must be a list of {{name, source}} entries, got {_shown(raw)}")
    if len(raw) > MAX_FILES:
        raise EvaluateError(f"{path}: 'files' lists {len(raw):,} files, more than the {MAX_FILES} read")
    out: list[TaskFile] = []
    placed: list[tuple[tuple[str, ...], str]] = []  # each listed name's parts, and the name
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) \
                or not isinstance(entry.get("source"), str):
            raise EvaluateError(f"{path}: files[{i}] must have a 'name' and a 'source' string, "
                                f"got {_shown(entry)}")
        name, source = entry["name"], entry["source"]
        parts = Path(name).parts
        if not name or Path(name).is_absolute() or ".." in parts or "\x00" in name:
            raise EvaluateError(f"{path}: files[{i}] name {_shown(name)} must be a relative path inside "
                                "the run folder")
        if not parts:
            raise EvaluateError(f"{path}: files[{i}] name {_shown(name)} is the run folder itself, not a "
                                "file in it")
        for j, (other, other_name) in enumerate(placed):
            if other == parts:
                raise EvaluateError(f"{path}: files[{i}] name {_shown(name)} is listed twice")
            if other[:len(parts)] == parts or parts[:len(other)] == other:  # one is a folder of the other
                (f, file), (d, inside) = sorted(((j, other_name), (i, name)),
                                                key=lambda e: len(Path(e[1]).parts))
                raise EvaluateError(f"{path}: files[{d}] name {_shown(inside)} is inside {_shown(file)}, "
                                    f"which files[{f}] names as a file")
        placed.append((parts, name))
        out.append(TaskFile(name, None if source == SUBMISSION else folder / source))
    subs = [f.name for f in out if f.source is None]
    if len(subs) != 1:
        raise EvaluateError(f"{path}: 'files' must name the submission ({SUBMISSION}) once, "
                            f"found {len(subs)}")
    return tuple(out)


def _cases(path: Path, key: str, raw: Any) -> tuple[Case, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise EvaluateError(f"{path}: '{key}' must be a list of cases, got {type(raw).__name__}")
    out: list[Case] = []
    for i, case in enumerate(raw):
        if not isinstance(case, Mapping) or not case:
            raise EvaluateError(f"{path}: {key}[{i}] must be a mapping of arguments, got {_shown(case)}")
        for k, v in case.items():
            if not isinstance(k, str) or not _KEY_RE.fullmatch(k):
                raise EvaluateError(f"{path}: {key}[{i}] key {_shown(k)} is not a name eval.py reads")
            if not isinstance(v, (int, str)) or not _VALUE_RE.fullmatch(str(v)):
                raise EvaluateError(f"{path}: {key}[{i}] {k}: {_shown(v)} is not a value eval.py reads "
                                    "(an integer or a name)")
        out.append(tuple((str(k), v) for k, v in case.items()))
    return tuple(out)


def _timeout(path: Path, raw: Mapping[str, Any], mode: str) -> int:
    value = raw.get(_TIMEOUT_KEYS[mode], DEFAULT_TIMEOUT_S)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise EvaluateError(f"{path}: {_TIMEOUT_KEYS[mode]} must be a positive number of seconds, "
                            f"got {_shown(value)}")
    return value


def read_task(folder: str | Path) -> RefTask:
    """The problem folder ``folder`` (holding task.yml); EvaluateError naming what is missing or
    malformed: the folder, task.yml, a listed file, the main script, the cases."""
    folder = Path(folder)
    if not folder.is_dir():
        raise EvaluateError(f"--reference-kernels {str(folder)!r}: not a folder (expected a "
                            "reference-kernels problem folder holding task.yml)")
    path = folder / "task.yml"
    if not path.exists():
        raise EvaluateError(f"--reference-kernels {str(folder)!r}: no task.yml in it (expected a "
                            "reference-kernels problem folder, such as problems/amd_202602/mxfp4-mm)")
    raw = _load_yaml(path)
    lang = raw.get("lang")
    if lang != "py":
        raise EvaluateError(f"{path}: lang {_shown(lang)}: only Python tasks (lang: \"py\") can be run")
    files = _files(path, folder, raw.get("files"))
    config = raw.get("config")
    main = config.get("main") if isinstance(config, Mapping) else None
    if not isinstance(main, str) or main not in {f.name for f in files if f.source is not None}:
        raise EvaluateError(f"{path}: config.main {_shown(main)} must be one of the listed files "
                            f"({', '.join(f.name for f in files if f.source is not None)})")
    ranking = raw.get("ranking_by", "last")
    if not isinstance(ranking, str):
        raise EvaluateError(f"{path}: ranking_by must be a string, got {_shown(ranking)}")
    return RefTask(folder, files, main, _cases(path, "tests", raw.get("tests")),
                   _cases(path, "benchmarks", raw.get("benchmarks")),
                   tuple((m, _timeout(path, raw, m)) for m in MODES), ranking, raw.get("multi_gpu") is True,
                   str(raw.get("description") or ""))
