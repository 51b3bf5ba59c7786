"""The one-pass read of an argument's metadata gives exactly what the checked read gives, on every
argument of the third-party corpus, and leaves every irregular entry to the checked read (which
names the key and the value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from submitgen.errors import CodeObjectError
from submitgen.readers.amd import metadata as md
from submitgen.readers.amd import read_code_object

CORPUS = Path(__file__).parent / "corpus" / "aiter"


def _raw_args(monkeypatch) -> list[dict]:
    docs = []
    decode = md.decode_metadata_note

    def keep(desc, label="<bytes>"):
        docs.append(decode(desc, label))
        return docs[-1]

    import submitgen.readers.amd.reader as reader
    monkeypatch.setattr(md, "decode_metadata_note", keep)
    for name in dir(reader):
        if getattr(reader, name) is decode:
            monkeypatch.setattr(reader, name, keep)
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix in (".co", ".hsaco"):
            read_code_object(path.read_bytes(), label=str(path))
    return [a for d in docs for k in d.get("amdhsa.kernels", []) for a in k.get(".args", [])]


def test_one_pass_equals_the_checked_read_on_the_corpus(monkeypatch):
    args = _raw_args(monkeypatch)
    assert len(args) > 1000
    for i, raw in enumerate(args):
        fast, checked = md._parse_arg(raw, i, "k", "s"), md._parse_arg_checked(raw, i, "k", "s")
        assert fast == checked and dict(fast.unknown) == dict(checked.unknown), raw


@pytest.mark.parametrize("raw,error", [
    ({".offset": -1, ".size": 8, ".value_kind": "by_value"},
     "s: metadata kernel 'k' arg 0 '.offset': expected a non-negative integer, got int -1"),
    ({".offset": True, ".size": 8, ".value_kind": "by_value"},
     "s: metadata kernel 'k' arg 0 '.offset': expected an integer, got bool True"),
    ({".offset": 0, ".size": "8", ".value_kind": "by_value"},
     "s: metadata kernel 'k' arg 0 '.size': expected an integer, got str '8'"),
    ({".offset": 0, ".size": 8}, "s: metadata kernel 'k' arg 0: required key '.value_kind' is missing"),
    ([1, 2], "s: metadata kernel 'k' arg 0: expected a map, got list"),
])
def test_irregular_entries_get_the_checked_errors(raw, error):
    with pytest.raises(CodeObjectError) as e:
        md._parse_arg(raw, 0, "k", "s")
    assert str(e.value) == error


def test_loose_but_valid_entries_match_the_checked_read():
    for raw in ({".offset": 0, ".size": 8, ".value_kind": "by_value", ".is_const": 1},
                {".offset": 0, ".size": 8, ".value_kind": "by_value", ".vendor": [1, {"a": 2}]}):
        fast, checked = md._parse_arg(raw, 0, "k", "s"), md._parse_arg_checked(raw, 0, "k", "s")
        assert fast == checked and dict(fast.unknown) == dict(checked.unknown)


def test_equal_entries_share_one_argument_and_values_of_another_type_are_not_confused(monkeypatch):
    monkeypatch.setattr(md, "_ARG_CACHE", {})
    good = {".offset": 8, ".size": 8, ".value_kind": "by_value", ".is_const": True}
    first, again = md._parse_arg(dict(good), 3, "k", "s"), md._parse_arg(dict(good), 3, "k", "s")
    assert again is first and first == md._parse_arg_checked(good, 3, "k", "s")
    assert md._parse_arg(dict(good), 4, "k", "s").index == 4  # the index is part of the key
    # 1 == True == 1.0 as dict keys: the types are in the key, so each gets its own read
    as_int = md._parse_arg({**good, ".is_const": 1}, 3, "k", "s")
    assert as_int is not first and as_int == md._parse_arg_checked({**good, ".is_const": 1}, 3, "k", "s")
    with pytest.raises(CodeObjectError) as e:
        md._parse_arg({**good, ".offset": 8.0}, 3, "k", "s")
    assert str(e.value) == "s: metadata kernel 'k' arg 3 '.offset': expected an integer, got float 8.0"
    with pytest.raises(CodeObjectError) as e:
        md._parse_arg({**good, ".offset": [8]}, 3, "k", "s")  # not hashable: the checked read
    assert str(e.value) == "s: metadata kernel 'k' arg 3 '.offset': expected an integer, got list [8]"


def test_the_argument_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(md, "_ARG_CACHE", {})
    monkeypatch.setattr(md, "_ARG_CACHE_SIZE", 4)
    for i in range(10):
        md._parse_arg({".offset": i, ".size": 8, ".value_kind": "by_value"}, 0, "k", "s")
        assert len(md._ARG_CACHE) <= 4


def _note(kernels, **root) -> bytes:
    import msgpack
    return msgpack.packb({"amdhsa.version": [1, 2], **root, "amdhsa.kernels": kernels})


def _kernel(name: str, args: list[dict]) -> dict:
    return {".name": name, ".symbol": name + ".kd", ".args": args, ".kernarg_segment_size": 16,
            ".kernarg_segment_align": 8, ".group_segment_fixed_size": 0, ".private_segment_fixed_size": 0,
            ".wavefront_size": 64, ".sgpr_count": 8, ".vgpr_count": 8, ".max_flat_workgroup_size": 256}


ARGS = [{".offset": 0, ".size": 8, ".value_kind": "global_buffer", ".address_space": "global"},
        {".offset": 8, ".size": 4, ".value_kind": "by_value"}]


def test_equal_argument_lists_are_read_once_from_their_bytes(monkeypatch):
    """args_spans gives each kernel's .args bytes; kernels with equal bytes share one tuple, read
    once, equal to what the entry-by-entry read gives."""
    monkeypatch.setattr(md, "_ARGS_CACHE", {})
    other = [dict(ARGS[0]), {**ARGS[1], ".size": 8}]
    desc = _note([_kernel("a", ARGS), _kernel("b", ARGS), _kernel("c", other)])
    spans = md.args_spans(desc)
    assert spans is not None and spans[0] == spans[1] != spans[2]
    calls = []
    real = md._parse_arg
    monkeypatch.setattr(md, "_parse_arg", lambda *a: calls.append(a[1]) or real(*a))
    doc = md.decode_metadata_note(desc)
    _, ks = md.parse_metadata(doc, "s", spans)
    assert ks[0].args is ks[1].args and ks[2].args is not ks[0].args
    assert calls == [0, 1, 0, 1]  # a's list and c's; b's from the cache
    _, plain = md.parse_metadata(doc, "s")
    assert [k.args for k in plain] == [k.args for k in ks]


@pytest.mark.parametrize("desc", [
    b"",
    b"\xc1",  # a byte msgpack never uses
    __import__("msgpack").packb([1, 2]),  # a root that is not a map
    __import__("msgpack").packb({"amdhsa.kernels": [[1]]}),  # a kernel that is not a map
    # .args given twice in one kernel: which one the decoded map keeps is msgpack's choice
    b"\x81\xaeamdhsa.kernels\x91\x82\xa5.args\x90\xa5.args\x91\x80",
    # amdhsa.kernels given twice
    b"\x82\xaeamdhsa.kernels\x90\xaeamdhsa.kernels\x90",
    __import__("msgpack").packb({"amdhsa.kernels": []}) + b"\x00",  # bytes after the note
])
def test_a_note_not_laid_out_plainly_has_no_spans(desc):
    assert md.args_spans(desc) is None


def test_a_kernel_without_args_has_no_span():
    k = _kernel("a", [])
    del k[".args"]
    assert md.args_spans(_note([k, _kernel("b", ARGS)])) == (None, __import__("msgpack").packb(ARGS))


def test_the_argument_list_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(md, "_ARGS_CACHE", {})
    monkeypatch.setattr(md, "_ARGS_CACHE_SIZE", 3)
    for i in range(7):
        args = [{**ARGS[0], ".offset": 8 * i}]
        desc = _note([_kernel("a", args)])
        md.parse_metadata(md.decode_metadata_note(desc), "s", md.args_spans(desc))
        assert len(md._ARGS_CACHE) <= 3
    big = [{**ARGS[1], ".offset": 4 * i, ".name": "x" * 200} for i in range(400)]  # > 64 KiB of bytes
    desc = _note([_kernel("a", big)])
    md._ARGS_CACHE.clear()
    md.parse_metadata(md.decode_metadata_note(desc), "s", md.args_spans(desc))
    assert md._ARGS_CACHE == {}
