"""The provenance line a build writes is read back by `inspect` (text and JSON), and a file whose
embedded code object no longer matches it is called out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.pipeline import BuildOptions, build
from submitgen.render import provenance

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden" / "mm_basic_ctypes.py"


def test_read_golden_provenance():
    p = provenance.read(GOLDEN.read_text())
    assert p is not None and p.line == 3
    assert set(p.fields) == set(provenance.FIELDS) | {"lds", "digest"}  # no Triton object: no "triton"
    assert p.value("digest") == provenance.content_digest(GOLDEN.read_text())
    assert p.kernels == ("mm_tile", "mm_reduce") and len(p.code_objects) == 1
    assert p.items("lds") == ("0/mm_tile:0", "0/mm_reduce:0")


def test_only_the_first_comment_block_counts():
    assert provenance.read("import os\n" + provenance.format_line({"version": "1"}) + "\n") is None
    text = "#!POPCORN leaderboard x\n" + provenance.format_line({"co": ("ab", "cd")})
    assert provenance.read(text).code_objects == ("ab", "cd")


def test_inspect_reads_it_back(tmp_path):
    r = CliRunner().invoke(cli, ["inspect", str(GOLDEN)])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())  # the text is wrapped at 100 columns
    assert "submission for amd-mxfp4-mm on MI355X; built by submitgen" in flat
    assert "this code object is the one it records" in flat
    r = CliRunner().invoke(cli, ["inspect", "--json", str(GOLDEN)])
    sub = json.loads(r.output)["code_objects"][0]["submission"]
    assert sub["leaderboard"] == "amd-mxfp4-mm" and sub["gpus"] == ["MI355X"]
    assert sub["provenance"]["kernels"] == "mm_tile,mm_reduce" and sub["matches_provenance"] is True


@pytest.mark.slow
def test_inspect_flags_a_blob_swapped_after_the_build(tmp_path, compile_co):
    """Someone pastes another code object into a built file: the provenance no longer matches."""
    other = tmp_path / "other.co"
    other.write_bytes(compile_co('#include <submitgen/device.h>\n'
                                 'extern "C" __global__ void k(int* p) { *p = 1; }'))
    swapped = tmp_path / "swapped.py"
    built = build(BuildOptions(problem="mxfp4-mm", output=swapped, kernels=TESTS / "projects" / "mm_basic",
                               code_objects=(TESTS / "golden" / "mm_basic.co",)))
    from submitgen.render.embed import embed

    (blob,) = built.blobs
    swapped.write_text(swapped.read_text().replace(blob.text, embed(other.read_bytes()).text))
    r = CliRunner().invoke(cli, ["inspect", str(swapped)])
    assert r.exit_code == 0, r.output
    assert "WARNING: this code object's sha256 is not the one it records" in " ".join(r.output.split())
