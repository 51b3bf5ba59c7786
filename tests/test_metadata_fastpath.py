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
