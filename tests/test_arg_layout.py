"""The argument-layout findings of ``checks._arg_layout``: each still given with its exact text
now that an argument every check passes skips them (issue 26 item 16: ~80 arguments a kernel in
the aiter corpus, each one's label was built for nothing)."""

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


def test_the_kept_layout_checks_equal_the_checked_ones_per_kernel(monkeypatch):
    """checks._arg_layout keeps what it found per (argument objects, kernarg size): kernels that
    share their arguments get the same findings, each under its own name, as the full check."""
    from submitgen.readers.amd import checks
    from submitgen.readers.amd import metadata as md

    monkeypatch.setattr(checks, "_LAYOUTS", {})
    args = [{".offset": 0, ".size": 8, ".value_kind": "global_buffer", ".name": "a"},
            {".offset": 4, ".size": 4, ".value_kind": "by_value", ".name": "b"}]

    def kernel(name: str, size: int) -> dict:
        return {".name": name, ".symbol": name + ".kd", ".args": [dict(a) for a in args],
                ".kernarg_segment_size": size, ".kernarg_segment_align": 8,
                ".group_segment_fixed_size": 0, ".private_segment_fixed_size": 0, ".wavefront_size": 64,
                ".sgpr_count": 8, ".vgpr_count": 8, ".max_flat_workgroup_size": 256}

    doc = {"amdhsa.version": [1, 2], "amdhsa.kernels": [kernel("k1", 16), kernel("k2", 16), kernel("k3", 6)]}
    _, metas = md.parse_metadata(doc, "s")
    assert metas[0].args[0] is metas[1].args[0]  # shared argument objects
    for m in metas:
        kept: list = []
        full: list = []
        checks._arg_layout(m, lambda *f, out=kept: out.append(f))
        checks._arg_layout_checked(m, lambda *f, out=full: out.append(f))
        assert kept == full and full, m.name
    assert len(checks._LAYOUTS) == 2  # k1 and k2 share one entry; k3's size differs
