"""inspect's JSON text encodes each run of equal argument lists once (report._encode_object) and
gives exactly what encoding every object whole gives: on the third-party corpus (each object
twice, so every list is shared), and where a metadata string equals the mark it uses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType, SimpleNamespace

from submitgen.inspection import report

CORPUS = Path(__file__).parent / "corpus" / "aiter"


def _whole(items) -> str:
    doc = report.to_json(items)
    objs = ",\n    ".join(report._ENCODER.encode(o) for o in doc["code_objects"])
    return (f'{{\n  "format_version": {doc["format_version"]},\n  "code_objects": [\n    {objs}\n  ]'
            f',\n  "exit_status": {doc["exit_status"]}\n}}')


def test_json_text_equals_encoding_each_object_whole_on_the_corpus():
    paths = sorted(str(p) for p in CORPUS.rglob("*") if p.suffix in (".co", ".hsaco"))
    assert len(paths) > 5
    items = report.inspect_sources(paths + paths, disasm=False)
    assert report.json_text(items) == _whole(items)


def test_a_string_equal_to_the_mark_encodes_the_object_whole():
    key = (1, 2)
    kernel = SimpleNamespace(args_json_key=lambda: key)
    item = SimpleNamespace(kernels=[kernel, kernel])
    o = {"source": report._ARGS_MARK,
         "kernels": [{"name": "a", "args": [{"index": 0}, {"index": 1}]},
                     {"name": report._ARGS_MARK, "args": [{"index": 0}, {"index": 1}]}]}
    plain = report._ENCODER.encode(o)
    memo: dict = {}
    assert report._encode_object(o, item, memo) == plain
    del o["source"]
    o["kernels"][1]["name"] = "b"
    assert report._encode_object(o, item, memo) == report._ENCODER.encode(o)
    assert list(memo.values()) == ['[{"index": 0}, {"index": 1}]']  # the second kernel's list: from memo
    assert o["kernels"][0]["args"] == [{"index": 0}, {"index": 1}]  # the document is left as it was


def test_an_unknown_key_named_args_is_encoded_as_it_is():
    """A metadata key ``args`` (no dot) takes the list's place in the kernel's JSON: no memo."""
    path = next(p for p in sorted(CORPUS.rglob("*")) if p.suffix in (".co", ".hsaco"))
    items = report.inspect_sources([str(path), str(path)], disasm=False)
    k = items[0].kernels[0]
    assert k.args_json_key() == tuple(map(id, k.args)) and k.args
    odd = replace(k, unknown=MappingProxyType({"args": [[9]] * len(k.args)}))
    assert odd.args_json_key() is None and odd.to_json("x")["args"] == [[9]] * len(k.args)
    items[1] = replace(items[1], kernels=(odd, *items[1].kernels[1:]))
    text = report.json_text(items)
    assert text == _whole(items) and '"args": [[9], [9]' in text
