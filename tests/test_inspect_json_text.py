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
    """The kernels' "args" come as the mark (code_object_to_json(item, _ARGS_MARK)); a metadata
    string equal to the mark elsewhere makes the lists and encodes the object whole."""
    key = (1, 2)
    args = [{"index": 0}, {"index": 1}]
    kernel = SimpleNamespace(args_json_key=lambda: key, args_json=lambda: [dict(a) for a in args])
    item = SimpleNamespace(kernels=[kernel, kernel])

    def doc(name: str, source: str | None) -> dict:
        o = {"kernels": [{"name": "a", "args": report._ARGS_MARK}, {"name": name, "args": report._ARGS_MARK}]}
        return {"source": source, **o} if source is not None else o

    def plain(o: dict) -> str:
        return report._ENCODER.encode({**o, "kernels": [{**kd, "args": args} for kd in o["kernels"]]})

    memo: dict = {}
    hostile = doc(report._ARGS_MARK, report._ARGS_MARK)
    assert report._encode_object(doc(report._ARGS_MARK, report._ARGS_MARK), item, memo) == plain(hostile)
    assert memo == {}
    o = doc("b", None)
    assert report._encode_object(o, item, memo) == plain(o)
    assert list(memo.values()) == ['[{"index": 0}, {"index": 1}]']  # the second kernel's list: from memo
    # an equal string that is not the mark object put there is data, not a place for a list
    o = {"kernels": [{"name": "a", "args": "".join(["\ue000", "args"])}]}
    assert report._encode_object(o, SimpleNamespace(kernels=[kernel]), {}) == report._ENCODER.encode(o)


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
