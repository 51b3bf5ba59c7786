"""Containers: bare ELF, offload bundles (plain and CCOB), and Python files read statically."""

from __future__ import annotations

import base64
import bz2
import lzma
import struct
import zlib

import pytest
from conftest import make_bundle

from submitgen.errors import ContainerError
from submitgen.readers import pysource
from submitgen.readers.containers import list_bundle, load_code_objects


def test_bare_elf(tmp_path, cos):
    p = tmp_path / "k.co"
    p.write_bytes(cos["args_v6"])
    [lo] = load_code_objects(p)
    assert lo.container == "elf" and lo.data == cos["args_v6"] and lo.provenance == str(p)
    assert [k.name for k in lo.read().kernels] == ["many_args", "_Z5scaleILi4EEvPfi"]
    assert load_code_objects(cos["args_v6"], arch="gfx950")[0].path == "<bytes>"
    with pytest.raises(ContainerError, match="code object is for gfx950, expected gfx942"):
        load_code_objects(p, arch="gfx942")


def test_bundle_list_and_pick(bundle, cos):
    ids = [e.id for e in list_bundle(bundle)]
    assert ids == ["host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx942",
                   "hipv4-amdgcn-amd-amdhsa--gfx950"]
    both = load_code_objects(bundle)
    assert [lo.bundle_entry for lo in both] == ids[1:]
    [lo] = load_code_objects(bundle, arch="gfx942:sramecc+")
    assert lo.data == cos["args_942"] and lo.read().processor == "gfx942"
    assert lo.provenance == "<bytes> > bundle entry hipv4-amdgcn-amd-amdhsa--gfx942"
    with pytest.raises(ContainerError) as e:
        load_code_objects(bundle, arch="gfx90a")
    assert str(e.value) == ("<bytes>: offload bundle has no entry for gfx90a; it has "
                            "hipv4-amdgcn-amd-amdhsa--gfx942, hipv4-amdgcn-amd-amdhsa--gfx950")


def test_compressed_bundle(bundle):
    payload = zlib.compress(bundle)
    ccob = b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(payload), len(bundle), 0) + payload
    assert [lo.bundle_entry for lo in load_code_objects(ccob, arch="gfx950")] == [
        "hipv4-amdgcn-amd-amdhsa--gfx950"
    ]


def _chunks(s: str, n: int = 76) -> list[str]:
    return [s[i:i + n] for i in range(0, len(s), n)]


def test_python_raw_base64_over_many_lines(tmp_path, cos):
    b64 = base64.b64encode(cos["args_v6"]).decode()
    src = (
        'open("SHOULD_NOT_EXIST", "w")\nraise SystemExit(3)\nCO = """\n' + "\n".join(_chunks(b64)) + '\n"""\n'
    )
    p = tmp_path / "sub.py"
    p.write_text(src)
    [lo] = load_code_objects(p)
    assert lo.container == "python" and lo.encoding == "base64" and lo.python_line == 3
    assert lo.data == cos["args_v6"]
    assert not (tmp_path / "SHOULD_NOT_EXIST").exists()


def test_python_implicit_concatenation(tmp_path, cos):
    b64 = base64.b64encode(cos["opencl"]).decode()
    implicit = "BLOB = (\n" + "\n".join(f'    "{c}"' for c in _chunks(b64)) + "\n)\n"
    p = tmp_path / "s.py"
    p.write_text("import torch\n" + implicit)
    [lo] = load_code_objects(p)
    assert lo.data == cos["opencl"] and lo.python_line == 3  # the literal's first line


@pytest.mark.parametrize(
    "name,compress",
    [
        ("zlib", zlib.compress),
        ("lzma", lzma.compress),
        ("bz2", bz2.compress),
        ("lzma", lambda b: lzma.compress(b, lzma.FORMAT_ALONE)),
    ],
)
def test_python_compressed(tmp_path, cos, name, compress):
    b64 = base64.b64encode(compress(cos["big"])).decode()
    p = tmp_path / "sub.py"
    p.write_text(f'import base64, zlib\n_CO = "{b64}"\n')
    [lo] = load_code_objects(p)
    assert lo.encoding == f"{name}+base64" and lo.data == cos["big"]
    assert lo.provenance == f"{p}:2 ({name}+base64)"


def test_python_bundle_and_urlsafe(tmp_path, bundle):
    b64 = base64.urlsafe_b64encode(zlib.compress(bundle)).decode()
    p = tmp_path / "sub.py"
    p.write_text(f'X = b"{b64}"\n')
    los = load_code_objects(p, arch="gfx950")
    assert [(lo.container, lo.bundle_entry) for lo in los] == [("python", "hipv4-amdgcn-amd-amdhsa--gfx950")]


def test_python_without_blob(tmp_path):
    p = tmp_path / "none.py"
    p.write_text('X = "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBjb2RlIG9iamVjdA=="\nY = 1\n')
    with pytest.raises(ContainerError) as e:
        load_code_objects(p)
    assert str(e.value) == (f"{p}: no code object found: none of its 1 string literals decodes from base64 "
                            "(or base64 of zlib/gzip/lzma/bz2) to an ELF code object or an offload bundle")


def test_decompression_bomb_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(pysource, "MAX_DECODED_SIZE", 1 << 20)
    b64 = base64.b64encode(zlib.compress(b"\0" * (4 << 20))).decode()
    p = tmp_path / "bomb.py"
    p.write_text(f'B = "{b64}"\n')
    with pytest.raises(ContainerError) as e:
        load_code_objects(p)
    assert str(e.value) == (f"{p}:1: zlib data decompresses to more than 1048576 bytes (the bound); "
                            "refusing a possible decompression bomb")


def test_bundle_without_device_entry():
    b = make_bundle([("host-x86_64-unknown-linux-gnu-", b"")])
    with pytest.raises(ContainerError, match="offload bundle has no AMDGPU code object entry"):
        load_code_objects(b)


def test_a_chain_deeper_than_the_parser_builds_is_one_error(tmp_path):
    p = tmp_path / "deep.py"
    p.write_text("x = " + " + ".join(['"a"'] * 3000) + "\n")
    with pytest.raises(ContainerError) as e:
        load_code_objects(p)
    assert str(e.value) == (f"{p}: not read: an expression nests deeper than Python's parser builds "
                            "(RecursionError)")
