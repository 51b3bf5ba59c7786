"""``inspect --json`` always prints strict JSON: a bytes map key, a msgpack Timestamp, an infinite
or NaN float and an ext type in the metadata come out as strings / null, never as a crash or as
``Infinity``."""

from __future__ import annotations

import json

import msgpack
import pytest
from click.testing import CliRunner
from elfedit import with_metadata

from submitgen.cli import cli

SRC = r"""
extern "C" __attribute__((global)) void k(float* out) { out[0] = 1.0f; }
"""


def _strict(text: str):
    def refuse(name: str):
        raise AssertionError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def _hostile(doc):
    k = doc["amdhsa.kernels"][0]
    k[b".raw_key"] = 1  # a bytes map key
    k[".when"] = msgpack.Timestamp(1_700_000_000, 5)
    k[".big"] = float("inf")
    k[".nan"] = float("nan")
    k[".ext"] = msgpack.ExtType(7, b"\x01\x02")
    doc[b"vendor.bytes"] = {b"\xff": -float("inf")}
    k[".args"][0][b".arg_bytes"] = b"\x00\x01"


@pytest.fixture(scope="module")
def hostile(compile_co, tmp_path_factory):
    path = tmp_path_factory.mktemp("json") / "hostile.co"
    path.write_bytes(with_metadata(compile_co(SRC), _hostile, packer=msgpack.Packer(datetime=False)))
    return path


def test_inspect_json_is_strict(hostile):
    r = CliRunner().invoke(cli, ["inspect", "--json", str(hostile)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = _strict(r.output)
    [co] = doc["code_objects"]
    k = co["kernels"][0]
    assert k["raw_key"] == 1 and k["big"] is None and k["nan"] is None
    assert k["when"] == "2023-11-14T22:13:20+00:00"
    assert k["ext"] == [7, "0102"]
    assert co["metadata"]["vendor.bytes"] == {"\\xff": None}
    assert k["args"][0]["arg_bytes"] == "0001"


def test_inspect_text_survives_the_same(hostile):
    r = CliRunner().invoke(cli, ["inspect", str(hostile)], catch_exceptions=False)
    assert r.exit_code == 0 and "kernel k" in r.output
