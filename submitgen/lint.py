"""Static checks of a single-file submission against the rules the leaderboard enforces.

The file is read, never imported or run. Each finding is one line::

    path:LINE: RULE: message (fix: ...)

Rules (their sources: docs/rules.md):

``header``
    ``#!POPCORN`` directives are read by the server only in the first comment block (lines that
    start with ``#`` or ``//``; the first other line, a blank one included, ends it). Names must be
    known (``leaderboard``, ``gpu``/``gpus``), each given once, with a value; the leaderboard must
    be a known AMD leaderboard and the GPU one it runs on; the leaderboard must agree with
    ``--problem``. Without ``--problem``, both directives are required. A directive after the
    block, or a near miss (``# !POPCORN``, ``#!popcorn``), is reported because the server ignores it.
``banned-word``
    the word the server greps for (``s-t-r-e-a-m``, any case, anywhere: comments, strings, kernel
    names, base64 blobs). One finding per line that holds it.
``size``
    at most 1,000,000 bytes (HTTP 413 above).
``payload``
    the estimated dispatch payload (:mod:`submitgen.payload`) within 65,535 characters.
``syntax``
    the file must parse; otherwise the AST rules below cannot run.
``exec-decoded``
    ``exec``/``eval``/``compile`` (also reached through ``builtins``, ``getattr`` or an alias),
    ``__import__``/``importlib.import_module``, ``marshal.loads`` or ``pickle.loads`` of data that
    flows from a decoder (base64/binascii/codecs decode, zlib/lzma/bz2/gzip decompress,
    ``bytes.fromhex``). This is kernelguard's auto-rejected ``OBFUSCATED_EXEC``. The flow analysis
    is by name across the whole file (assignments, function returns), so it errs towards flagging.
    ``marshal.loads`` is flagged whatever its argument (it makes code objects).
``exec-dynamic``
    Decision: *any* ``exec``/``eval``/``compile`` whose argument is not a string literal is a
    failure too, as are ``runpy`` and ``loader.exec_module``. A static check cannot prove that a
    computed string is not decoded data (the name-based flow analysis misses data passed through
    containers or attributes), kernelguard records these (``DYNAMIC_EXECUTION``), and a
    submission never needs them: write the code as code.
``import-dynamic``
    ``__import__``/``importlib.import_module`` of a computed name: reviewers and kernelguard
    cannot see what is imported. Import by name.
``custom-kernel``
    ``custom_kernel`` must be bound at module level: ``def``, ``class``, an assignment or
    ``from ... import custom_kernel``, also inside a module-level ``if``/``try``/``with``.
``hsa-queue``
    ``hsa_queue_create`` anywhere: a kernel dispatched on a queue of its own runs outside the
    leaderboard's timing events (the ~4 µs timing artefact), which the organizers disqualify.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import LintError
from .payload import PayloadEstimate, canonical_leaderboard, estimate_payload
from .rules import BANNED_RE, PAYLOAD_LIMIT, SIZE_LIMIT

_BANNED_RE = BANNED_RE
_BASE64_RUN_RE = re.compile(r"[A-Za-z0-9+/=_-]{40,}")


def known_leaderboards() -> dict[str, tuple[str, ...]]:
    """Every leaderboard the registry knows -> the GPUs it runs on (problems first)."""
    from .problems.registry import leaderboards

    return {name: row.gpus for name, row in leaderboards().items()}


def known_gpus() -> tuple[str, ...]:
    return tuple(sorted({g for gs in known_leaderboards().values() for g in gs}))


_DIRECTIVE_PREFIXES = ("#!POPCORN", "//!POPCORN")
_DIRECTIVE_NAMES = ("leaderboard", "gpus")  # "gpu" is read as "gpus"

RULES = ("header", "banned-word", "size", "payload", "syntax", "exec-decoded", "exec-dynamic",
         "import-dynamic", "custom-kernel", "hsa-queue")


@dataclass(frozen=True)
class LintFinding:
    """One failed rule at one line (1-based)."""

    rule: str
    line: int
    message: str
    fix: str

    def render(self, path: str) -> str:
        return f"{path}:{self.line}: {self.rule}: {self.message} (fix: {self.fix})"


@dataclass(frozen=True)
class Header:
    """The directives the server reads from the first comment block."""

    leaderboard: str | None
    gpus: tuple[str, ...]
    leaderboard_line: int | None
    gpus_line: int | None
    block_end: int  # number of lines in the first comment block


def resolve_leaderboard(name: str) -> str:
    """'mixed-mla' or 'amd-mixed-mla' -> 'amd-mixed-mla'; LintError for an unknown name."""
    canon = canonical_leaderboard(name)
    known = known_leaderboards()
    if canon not in known:
        raise LintError(f"unknown leaderboard {name!r}: expected one of {', '.join(known)}")
    return canon


# ---------------------------------------------------------------------------------------------
# header


def _parse_header(lines: list[str]) -> tuple[Header, list[LintFinding]]:
    found: list[LintFinding] = []
    values: dict[str, tuple[int, list[str]]] = {}
    block_end = len(lines)
    for no, line in enumerate(lines, 1):
        if not line.startswith(("#", "//")):
            block_end = no - 1
            break
        words = line.split()
        if not words or words[0] not in _DIRECTIVE_PREFIXES:
            if "!POPCORN" in line.upper():
                found.append(LintFinding(
                    "header", no, f"{line.strip()!r} is not read as a directive: the server wants "
                    "'#!POPCORN' (exactly, at the start of the line) as the first word",
                    "write it as '#!POPCORN <name> <value>'"))
            continue
        if len(words) < 3:
            found.append(LintFinding("header", no, f"directive {line.strip()!r} has no value",
                                     "write '#!POPCORN leaderboard <name>' or '#!POPCORN gpu MI355X'"))
            continue
        name = words[1].lower()
        name = "gpus" if name == "gpu" else name
        if name not in _DIRECTIVE_NAMES:
            found.append(LintFinding("header", no, f"unknown directive {words[1]!r}; the server "
                                     "knows 'leaderboard' and 'gpu' (or 'gpus')",
                                     "remove the line or correct the name"))
            continue
        if name in values:
            found.append(LintFinding("header", no, f"second {name!r} directive (the first is on line "
                                     f"{values[name][0]}); the server rejects duplicates",
                                     "keep one of them"))
            continue
        values[name] = (no, words[2:])

    # directives the server never reads
    for no in range(block_end + 1, len(lines) + 1):
        text = lines[no - 1].lstrip()
        if text.upper().startswith(("#!POPCORN", "//!POPCORN", "# !POPCORN")):
            found.append(LintFinding(
                "header", no, "this directive is after the first comment block (which ends at "
                f"line {block_end}), so the server ignores it",
                "move it to the top of the file, before any code or blank line"))

    lb = values.get("leaderboard")
    gp = values.get("gpus")
    header = Header(
        leaderboard=lb[1][0] if lb else None,
        gpus=tuple(gp[1]) if gp else (),
        leaderboard_line=lb[0] if lb else None,
        gpus_line=gp[0] if gp else None,
        block_end=block_end,
    )
    return header, found


def read_header(text: str) -> Header:
    """The directives of ``text`` as the server reads them (no checks)."""
    return _parse_header(text.splitlines())[0]


def _check_header(lines: list[str], problem: str | None) -> list[LintFinding]:
    header, found = _parse_header(lines)
    known = known_leaderboards()
    lb = header.leaderboard
    if lb is not None:
        if lb not in known:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"unknown leaderboard {lb!r}",
                f"use one of {', '.join(known)}"))
        elif problem is not None and lb != problem:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"the header names leaderboard {lb!r} but "
                f"--problem says {problem!r}; the server refuses a mismatch",
                f"change the header to '#!POPCORN leaderboard {problem}' or drop --problem"))
    elif problem is None:
        found.append(LintFinding(
            "header", 1, "no '#!POPCORN leaderboard <name>' directive in the first comment block",
            "add '#!POPCORN leaderboard amd-mxfp4-mm' (or your leaderboard) as the first line, "
            "or pass --problem"))
    target = lb if lb in known else problem
    allowed = known[target] if target else known_gpus()
    for gpu in header.gpus:
        if gpu not in allowed:
            near = [g for g in allowed if g.lower() == gpu.lower()]
            fix = f"write '{near[0]}' (exact case)" if near else f"use {' or '.join(allowed)}"
            where = f"leaderboard {target!r} runs on {', '.join(allowed)}" if target else \
                f"known AMD GPUs are {', '.join(known_gpus())}"
            found.append(LintFinding("header", header.gpus_line or 1,
                                     f"GPU {gpu!r} is not one this tool knows: {where}", fix))
    if header.gpus_line is None and problem is None:
        gpu = known[lb][0] if lb in known else "MI355X"
        found.append(LintFinding(
            "header", header.leaderboard_line or 1,
            "no '#!POPCORN gpu <GPU>' directive in the first comment block",
            f"add '#!POPCORN gpu {gpu}' after the leaderboard line"))
    return found


# ---------------------------------------------------------------------------------------------
# text rules


def _check_banned_word(lines: list[str]) -> list[LintFinding]:
    found = []
    for no, line in enumerate(lines, 1):
        hits = list(_BANNED_RE.finditer(line))
        if not hits:
            continue
        cols = ", ".join(f"{m.group(0)!r} at column {m.start() + 1}" for m in hits)
        in_blob = any(
            b.start() <= m.start() and m.end() <= b.end()
            for m in hits for b in _BASE64_RUN_RE.finditer(line))
        if in_blob:
            fix = ("re-encode the embedded blob (another compression level or setting) until its "
                   "text no longer spells the word")
        else:
            fix = ("reword or rename it (say 'queue'); pass 0 as the HIP queue argument instead of "
                   "naming the default one")
        found.append(LintFinding(
            "banned-word", no, f"{cols}: the server rejects any file containing this word in any "
            "case", fix))
    return found


def _check_hsa_queue(lines: list[str]) -> list[LintFinding]:
    found = []
    for no, line in enumerate(lines, 1):
        if "hsa_queue_create" in line.lower():
            found.append(LintFinding(
                "hsa-queue", no, "creates an HSA queue of its own: kernels dispatched on it run "
                "outside torch's timing events (the ~4 us timing artefact), which the organizers "
                "disqualify",
                "launch with hipModuleLaunchKernel on the default queue (0) so the leaderboard's "
                "events time the kernel"))
    return found


# ---------------------------------------------------------------------------------------------
# AST rules

_DECODERS = frozenset({
    "b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "decodebytes",
    "standard_b64decode", "urlsafe_b64decode", "decompress", "decompressobj", "fromhex",
    "unhexlify", "a2b_base64", "a2b_hex", "a2b_uu",
})
_EXEC_NAMES = frozenset({"exec", "eval", "compile"})
_BUILTINS_MODULES = frozenset({"builtins", "__builtins__"})


def _callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _is_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))


class _Analysis:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.shadowed = self._shadowed_names()
        self.exec_aliases = self._exec_aliases()
        self.tainted: set[str] = set()
        self.tainted_funcs: set[str] = set()
        self._propagate()

    def _shadowed_names(self) -> set[str]:
        """Builtin sink names that the file rebinds (e.g. ``from re import compile``)."""
        names: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    names.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
        return names & _EXEC_NAMES

    def is_decoder_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = _callee_name(node.func)
        if name in _DECODERS:
            return True
        if name == "decode" and isinstance(node.func, ast.Attribute) and \
                _dotted(node.func.value) == "codecs":
            return True
        return bool(isinstance(node.func, ast.Name) and node.func.id in self.tainted_funcs)

    def is_tainted(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if self.is_decoder_call(sub):
                return True
            if isinstance(sub, ast.Name) and sub.id in self.tainted:
                return True
        return False

    def _propagate(self) -> None:
        assigns: list[tuple[list[ast.expr], ast.AST]] = []
        funcs: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                assigns.append((node.targets, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                if node.value is not None:
                    assigns.append(([node.target], node.value))
            elif isinstance(node, (ast.For, ast.comprehension)):
                assigns.append(([node.target], node.iter))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        assigns.append(([item.optional_vars], item.context_expr))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs.append(node)
        changed = True
        while changed:
            changed = False
            for targets, value in assigns:
                if not self.is_tainted(value):
                    continue
                for t in targets:
                    for sub in ast.walk(t):
                        if isinstance(sub, ast.Name) and sub.id not in self.tainted:
                            self.tainted.add(sub.id)
                            changed = True
            for f in funcs:
                if f.name in self.tainted_funcs:
                    continue
                if any(isinstance(n, ast.Return) and n.value is not None and self.is_tainted(n.value)
                       for n in ast.walk(f)):
                    self.tainted_funcs.add(f.name)
                    changed = True

    def _exec_aliases(self) -> set[str]:
        aliases: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and self._sink_kind(node.value, aliases=frozenset()) == "exec":
                aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return aliases

    def _sink_kind(self, func: ast.expr, aliases: frozenset[str] | set[str] | None = None) -> str | None:
        """'exec' for exec/eval/compile reached any way, 'import' for dynamic import, None."""
        aliases = self.exec_aliases if aliases is None else aliases
        if isinstance(func, ast.Name):
            if func.id in _EXEC_NAMES and func.id not in self.shadowed:
                return "exec"
            if func.id in aliases:
                return "exec"
            if func.id == "__import__":
                return "import"
            if func.id == "import_module":
                return "import"
            return None
        if isinstance(func, ast.Attribute):
            base = _dotted(func.value)
            if func.attr in _EXEC_NAMES and base in _BUILTINS_MODULES:
                return "exec"
            if func.attr == "__import__" and base in _BUILTINS_MODULES:
                return "import"
            if func.attr == "import_module" and base.split(".")[-1] == "importlib":
                return "import"
            return None
        if isinstance(func, ast.Call) and _callee_name(func.func) == "getattr" and len(func.args) >= 2:
            attr = func.args[1]
            if isinstance(attr, ast.Constant) and attr.value in _EXEC_NAMES:
                return "exec"
            if isinstance(attr, ast.Constant) and attr.value == "__import__":
                return "import"
        if isinstance(func, ast.Subscript) and _dotted(func.value) in _BUILTINS_MODULES:
            key = func.slice
            if isinstance(key, ast.Constant) and key.value in _EXEC_NAMES:
                return "exec"
        return None

    def findings(self) -> list[LintFinding]:
        found: list[LintFinding] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            kind = self._sink_kind(node.func)
            what = _dotted(node.func) if not isinstance(node.func, ast.Call) else "getattr(...)"
            arg = node.args[0] if node.args else None
            if kind is not None:
                literal = arg is not None and _is_literal(arg)
                tainted = any(self.is_tainted(a) for a in node.args) or \
                    any(self.is_tainted(k.value) for k in node.keywords)
                if tainted:
                    found.append(LintFinding(
                        "exec-decoded", node.lineno,
                        f"{what}() of decoded data (base64/zlib/lzma/... decode flows into it): "
                        "kernelguard auto-rejects this as OBFUSCATED_EXEC",
                        "write the code in the file as plain Python; decode only binary data "
                        "(e.g. a code object for hipModuleLoadData)"))
                elif not literal and kind == "exec":
                    found.append(LintFinding(
                        "exec-dynamic", node.lineno,
                        f"{what}() of a computed argument: the checker cannot tell it from "
                        "decoded code, and kernelguard records it as DYNAMIC_EXECUTION",
                        "write the code in the file as plain Python"))
                elif not literal and kind == "import":
                    found.append(LintFinding(
                        "import-dynamic", node.lineno,
                        f"{what}() of a computed module name: what gets imported is hidden "
                        "from review",
                        "import the module by name ('import x')"))
                continue
            name = _callee_name(node.func)
            base = _dotted(node.func.value) if isinstance(node.func, ast.Attribute) else ""
            if name == "loads" and base.split(".")[-1] == "marshal":
                found.append(LintFinding(
                    "exec-decoded", node.lineno, "marshal.loads() builds code objects from bytes: "
                    "hidden code, which kernelguard auto-rejects as obfuscated execution",
                    "write the code in the file as plain Python"))
            elif name == "loads" and base.split(".")[-1] in ("pickle", "cPickle", "dill") and \
                    arg is not None and self.is_tainted(arg):
                found.append(LintFinding(
                    "exec-decoded", node.lineno, f"{base}.loads() of decoded data can run "
                    "arbitrary code: obfuscated execution",
                    "store plain data (numbers, shapes) as Python literals"))
            elif name == "exec_module" or (base.split(".")[-1] == "runpy" and name in
                                           ("run_path", "run_module")):
                found.append(LintFinding(
                    "exec-dynamic", node.lineno, f"{_dotted(node.func)}() runs code the checker "
                    "cannot see", "write the code in the file as plain Python"))
        return found


def _binds_custom_kernel(body: list[ast.stmt]) -> bool:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name == "custom_kernel":
                return True
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if any(isinstance(n, ast.Name) and n.id == "custom_kernel" for n in ast.walk(t)):
                    return True
        elif isinstance(stmt, ast.ImportFrom):
            if any((a.asname or a.name) == "custom_kernel" for a in stmt.names):
                return True
        elif isinstance(stmt, ast.If):
            if _binds_custom_kernel(stmt.body) or _binds_custom_kernel(stmt.orelse):
                return True
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            if _binds_custom_kernel(stmt.body):
                return True
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            blocks = [stmt.body, stmt.orelse, stmt.finalbody] + [h.body for h in stmt.handlers]
            if any(_binds_custom_kernel(b) for b in blocks):
                return True
    return False


def _check_ast(text: str) -> list[LintFinding]:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return [LintFinding("syntax", e.lineno or 1, f"the file does not parse: {e.msg}",
                            "fix the syntax error; the evaluator cannot import the file")]
    except ValueError as e:  # e.g. NUL bytes
        return [LintFinding("syntax", 1, f"the file does not parse: {e}",
                            "remove the offending bytes")]
    found = _Analysis(tree).findings()
    if not _binds_custom_kernel(tree.body):
        found.append(LintFinding(
            "custom-kernel", 1, "no module-level 'custom_kernel': the evaluator imports "
            "'custom_kernel' from the submission",
            "define 'def custom_kernel(data: input_t) -> output_t:' at module level"))
    return found


# ---------------------------------------------------------------------------------------------
# entry points


@dataclass(frozen=True)
class LintReport:
    """What one lint run found and measured: the failed rules (sorted by line) and the payload
    estimate it made (the build reports it instead of estimating again)."""

    findings: tuple[LintFinding, ...]
    payload: PayloadEstimate

    def failed(self, rule: str) -> tuple[LintFinding, ...]:
        return tuple(f for f in self.findings if f.rule == rule)


def lint_text(text: str, *, path: str = "<text>", problem: str | None = None,
              size_bytes: int | None = None) -> list[LintFinding]:
    """Check the submission ``text``; return the failed rules sorted by line (empty: all pass).

    ``problem`` ("mxfp4-mm" or "amd-mxfp4-mm") is what the user passes as --problem; an unknown
    name raises LintError. ``size_bytes`` is the file's size when it is known (lint_file);
    otherwise the UTF-8 length of ``text``. ``path`` is only used by callers to render lines."""
    del path  # rendering is the caller's job (LintFinding.render); kept for a uniform signature
    return list(lint_report(text, problem=problem, size_bytes=size_bytes).findings)


def lint_report(text: str, *, problem: str | None = None, size_bytes: int | None = None) -> LintReport:
    """:func:`lint_text`, with the payload estimate the ``payload`` rule was checked against."""
    canon = resolve_leaderboard(problem) if problem is not None else None
    lines = text.splitlines()
    found = _check_header(lines, canon)
    found += _check_banned_word(lines)
    size = len(text.encode("utf-8", "surrogateescape")) if size_bytes is None else size_bytes
    if size > SIZE_LIMIT:
        found.append(LintFinding(
            "size", 1, f"the file is {size:,} bytes; the limit is {SIZE_LIMIT:,}",
            "compress what the file embeds (lzma) or embed less"))
    header = read_header(text)
    target = canon or (header.leaderboard if header.leaderboard in known_leaderboards() else None)
    est = estimate_payload(text, target)
    if est.chars > PAYLOAD_LIMIT:
        longest = max(range(len(lines)), key=lambda i: len(lines[i])) + 1 if lines else 1
        found.append(LintFinding(
            "payload", longest, f"{est.summary()}: over GitHub's dispatch limit by "
            f"{-est.headroom:,} chars (the longest line is here)",
            "embed less: compress the code object with lzma before base64, drop unused "
            "kernels or sources"))
    found += _check_hsa_queue(lines)
    found += _check_ast(text)
    order = {r: i for i, r in enumerate(RULES)}
    return LintReport(tuple(sorted(found, key=lambda f: (f.line, order.get(f.rule, 99)))), est)


def read_submission(path: str | Path) -> tuple[str, int]:
    """(text, size in bytes) of a submission file; LintError when it cannot be read."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise LintError(f"cannot read submission {str(p)!r}: {e.strerror or e}") from None
    return raw.decode("utf-8", "surrogateescape"), len(raw)


def lint_file(path: str | Path, *, problem: str | None = None) -> list[LintFinding]:
    """lint_text of the file at ``path`` (read, never imported)."""
    text, size = read_submission(path)
    return lint_text(text, path=str(path), problem=problem, size_bytes=size)


def render_findings(findings: list[LintFinding], path: str) -> list[str]:
    """One line per finding: ``path:LINE: RULE: message (fix: ...)``."""
    return [f.render(path) for f in findings]


def payload_summary(path: str | Path, *, problem: str | None = None) -> str:
    """The payload estimate line for the file at ``path`` (problem from ``problem`` or its header)."""
    text, _ = read_submission(path)
    name = resolve_leaderboard(problem) if problem is not None else read_header(text).leaderboard
    return estimate_payload(text, name if name in known_leaderboards() else None).summary()
