"""Whether each by-value kernel parameter is an integer or a floating-point number, for the plan
checks. HIP code objects do not say (their metadata has no ``.type_name`` unless built as OpenCL),
so the build reads the parameter list of each ``extern "C"`` kernel from the device source it
compiled; Triton signatures say it directly (``i32`` vs ``fp32``)."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

INT = "int"
INT16 = "int divisible by 16"  # a Triton ``i32:16`` parameter: the kernel was compiled assuming it
FLOAT = "float"

_FLOAT_WORDS = re.compile(r"\b(float|double|half|_Float16|__fp16|__half|__bf16|bfloat16)\b")
_INT_WORDS = re.compile(
    r"\b(bool|char|short|int|long|unsigned|signed|size_t|ptrdiff_t|u?int(8|16|32|64)_t)\b"
)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _kind(param: str) -> str | None:
    """INT, FLOAT or None (a pointer, a reference, a struct, or unknown)."""
    if "*" in param or "&" in param or "[" in param:
        return None
    if _FLOAT_WORDS.search(param):
        return FLOAT
    if _INT_WORDS.search(param):
        return INT
    return None


def _params(source: str, name: str) -> list[str] | None:
    m = re.search(rf"\bvoid\s+{re.escape(name)}\s*\(", source)
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(source) and depth:
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        i += 1
    return _split_top(source[m.end():i - 1]) if depth == 0 else None


def hip_param_kinds(sources: Sequence[tuple[str, bytes]], names: Sequence[str]) -> dict[str, tuple]:
    """kernel name -> (source file name, kind of each parameter: INT, FLOAT or None), for the
    kernels whose definition is found in ``sources`` ((file name, bytes) pairs)."""
    found: dict[str, tuple] = {}
    texts = [(file, _COMMENTS.sub(" ", data.decode("utf-8", "replace"))) for file, data in sources]
    for name in names:
        for file, text in texts:
            params = _params(text, name)
            if params is not None and params != ["void"]:
                found[name] = (file, tuple(_kind(p) for p in params))
                break
    return found


def triton_param_kinds(signature: Sequence[tuple[str, str]]) -> tuple:
    """The kinds of a Triton specialization's non-constexpr parameters, in order."""
    kinds = []
    for _, ty in signature:
        if ty == "constexpr":
            continue
        if ty.startswith("*"):
            kinds.append(None)
        elif ty.startswith(("fp", "bf")):
            kinds.append(FLOAT)
        else:
            kinds.append(INT16 if ty.endswith(":16") else INT)
    return tuple(kinds)


@dataclass(frozen=True)
class TritonParams:
    """A Triton specialization's parameters as its author wrote them: those the plan passes (the
    signature without its constexprs, in order), the constexprs compiled in, and where they are
    declared. Messages count and name these, never the compiled kernel's explicit arguments
    (which add the two scratch pointers submitgen appends)."""

    origin: str  # "fill.py (fill_kernel's signature)"
    names: tuple[str, ...]
    constexprs: tuple[str, ...] = ()

    def arg(self, index: int) -> str:
        """``arg 'N'`` for the ``index``-th argument the plan passes."""
        return f"arg {self.names[index]!r}" if index < len(self.names) else f"arg {index}"

    def count_error(self, kernel: str, passed: int) -> str | None:
        """The error when the plan passes another number of arguments than the signature has."""
        n = len(self.names)
        if passed == n:
            return None
        listed = f" ({', '.join(self.names)})" if self.names else ""
        notes = []
        if self.constexprs:
            many = len(self.constexprs) > 1
            notes.append(f"constexpr{'s' if many else ''} {', '.join(self.constexprs)} "
                         f"{'are' if many else 'is'} compiled in")
        notes.append("submitgen appends the two scratch pointers")
        return (f"kernel '{kernel}': {self.origin} takes {n} argument{'s' if n != 1 else ''}{listed}, "
                f"plan passes {passed}; {' and '.join(notes)}")


def triton_params(origin: str, signature: Sequence[tuple[str, str]]) -> TritonParams:
    """The parameters of a Triton signature ((name, type) pairs) as the plan passes them."""
    return TritonParams(origin, tuple(n for n, ty in signature if ty != "constexpr"),
                        tuple(n for n, ty in signature if ty == "constexpr"))


def arg_label(names: Mapping[str, TritonParams] | None, kernel: str, index: int) -> str:
    """How messages name argument ``index`` of ``kernel``: by its signature name where known."""
    params = (names or {}).get(kernel)
    return params.arg(index) if params is not None else f"arg {index}"


def check_scalar(kinds: Mapping[str, tuple], kernel: str, index: int, value: object,
                 names: Mapping[str, TritonParams] | None = None) -> str | None:
    """The error for an int passed as a float parameter or the reverse, else None."""
    if kernel not in kinds or isinstance(value, bool):
        return None
    origin, params = kinds[kernel]
    if index >= len(params):
        return None
    want = params[index]
    where = f"kernel '{kernel}' {arg_label(names, kernel, index)}: {origin}"
    code = getattr(type(value), "_type_", None) if isinstance(value, ctypes._SimpleCData) else None
    shown = ""
    if isinstance(code, str) and code in "bBhHiIlLqQfd":  # ctypes.c_float(x), ctypes.c_int(n), ...
        shown = f"ctypes.{type(value).__name__}({value.value!r})"
        value = value.value
    if want == FLOAT and isinstance(value, int):
        return f"{where} declares a floating-point parameter, plan passes {shown or f'int {value!r}'}"
    if want in (INT, INT16) and isinstance(value, float):
        return f"{where} declares an integer parameter, plan passes {shown or f'float {value!r}'}"
    if want == INT16 and isinstance(value, int) and value % 16:
        return f"{where} hints it divisible by 16 (':16'), plan passes {value}"
    return None
