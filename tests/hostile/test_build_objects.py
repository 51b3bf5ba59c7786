"""Code objects the loader cannot run are refused by the build: an error-severity finding of the
reader becomes the build's one Error line, and nothing is written."""

from __future__ import annotations

import shutil
import struct
from io import BytesIO
from pathlib import Path

import pytest
from click.testing import CliRunner
from elftools.elf.elffile import ELFFile

from submitgen.cli import cli
from submitgen.readers.containers import load_code_objects

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"


def _kd_offset(data: bytes, symbol: str) -> int:
    elf = ELFFile(BytesIO(data))
    sym = elf.get_section_by_name(".dynsym").get_symbol_by_name(symbol)[0]
    sec = elf.get_section(sym["st_shndx"])
    return sec["sh_offset"] + sym["st_value"] - sec["sh_addr"]


@pytest.mark.slow
def test_an_object_with_an_error_finding_is_refused(tmp_path, monkeypatch):
    shutil.copytree(PROJECT, tmp_path / "proj")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "-o", "good.py"])
    assert r.exit_code == 0, r.output
    data = bytearray(load_code_objects("good.py")[0].data)
    struct.pack_into("<I", data, _kd_offset(bytes(data), "mm_tile.kd"), 4096)  # group_segment_fixed_size
    Path("bad.co").write_bytes(bytes(data))
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "--co", "bad.co", "-o", "x.py"])
    want = ("Error: bad.co: kernel 'mm_tile': group_segment_fixed_size: metadata says 0, "
            "kernel descriptor says 4096")
    assert (r.exit_code, r.output) == (1, want + "\n")
    assert not Path("x.py").exists()
