"""inspect's JSON text encodes each run of equal argument lists once (report._encode_object) and
gives exactly what encoding every object whole gives: on the third-party corpus (each object
twice, so every list is shared), and where a metadata string equals the mark it uses."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

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
    args = (object(), object())
    item = SimpleNamespace(kernels=[SimpleNamespace(args=args), SimpleNamespace(args=args)])
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
