"""The argument-layout findings of ``checks._arg_layout``, each with its exact text."""

from __future__ import annotations

from types import SimpleNamespace

from submitgen.readers.amd import checks
from submitgen.readers.amd.metadata import ArgMeta


def _findings(args: list[ArgMeta], kernarg: int = 64) -> list[tuple[str, str, str]]:
    got: list[tuple[str, str, str]] = []
    meta = SimpleNamespace(args=tuple(args), kernarg_segment_size=kernarg)
    checks._arg_layout(meta, lambda sev, code, msg: got.append((sev, code, msg)))  # type: ignore[arg-type]
    return got


def _arg(i: int, offset: int, size: int, kind: str = "by_value", name: str | None = None) -> ArgMeta:
    return ArgMeta(index=i, offset=offset, size=size, value_kind=kind, name=name)


def test_a_clean_layout_has_no_finding():
    assert _findings([_arg(0, 0, 8, "global_buffer", "out"), _arg(1, 8, 4, name="n"),
                      _arg(2, 16, 8, "hidden_block_count_x")]) == []


def test_each_layout_finding_is_still_given():
    args = [_arg(0, 0, 8, "global_buffer", "out"),
            _arg(1, 4, 4, name="n"),  # overlaps arg 0
            _arg(2, 10, 4),  # not aligned
            _arg(3, 16, 8, "hidden_block_count_x"),
            _arg(4, 24, 4, "by_value", "late"),  # explicit after hidden
            _arg(5, 28, 4, "mystery"),  # unknown kind (and after hidden)
            _arg(6, 32, 4, "global_buffer", "p"),  # a 4-byte pointer
            _arg(7, 64, 8, "hidden_x")]  # past the segment
    assert _findings(args) == [
        ("error", "arg-layout", "arg 1 'n' at offset 4 overlaps the previous argument ending at 8"),
        ("warning", "arg-layout", "arg 2 at offset 10 is not aligned to its size 4"),
        ("warning", "arg-layout", "arg 4 'late' is an explicit argument after hidden ones"),
        ("warning", "arg-layout", "arg 5 is an explicit argument after hidden ones"),
        ("warning", "arg-kind", "arg 5 has unknown .value_kind 'mystery'"),
        ("warning", "arg-layout", "arg 6 'p' is an explicit argument after hidden ones"),
        ("error", "arg-size", "arg 6 'p' is a global_buffer of .size 4, expected 8 (a 64-bit address)"),
        ("error", "arg-layout", "arg 7 ends at byte 72, beyond .kernarg_segment_size 64"),
    ]

