"""Every size a reader accepts is bounded, from what real inputs need, and an input past a bound is
refused naming that bound, just above it, while one at the bound is read: the kernarg segment
(4 KiB, in the metadata and in the descriptor), the metadata note (1 MiB), a kernel's arguments
(1,024), the total that the blobs of one ``.py`` decode to (64 MiB), the size of a ``.py``
inspect and lint read (1,000,000 bytes, the leaderboard's cap: the costliest source under it fits
in their budgets, where a 3.9 MB one did not)."""

from __future__ import annotations

import base64
import zlib

import msgpack
import pytest
from elfedit import kernel_edit, with_desc, with_metadata

from submitgen.errors import CodeObjectError, ContainerError
from submitgen.readers.amd.checks import MAX_KERNARG_SEGMENT_SIZE
from submitgen.readers.amd.metadata import MAX_ARGS, MAX_NOTE_SIZE
from submitgen.readers.amd.reader import read_code_object
from submitgen.readers.containers import MAX_PY_FILE_SIZE, MAX_TOTAL_DECODED, load_code_objects

SRC = r"""
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void k(float* out, int n) { if ((int)__builtin_amdgcn_workitem_id_x() < n) out[0] = 1.0f; }
"""


@pytest.fixture(scope="module")
def good(compile_co) -> bytes:
    return compile_co(SRC)


def findings(data: bytes, code: str) -> list[str]:
    return [f.message for f in read_code_object(data).findings if f.code == code]


def _kd_kernarg(data: bytes, size: int) -> bytes:
    co = read_code_object(data)
    kd = co.kernels[0].descriptor
    head = b"".join(v.to_bytes(4, "little") for v in (kd.group_segment_fixed_size,
                                                      kd.private_segment_fixed_size, kd.kernarg_size))
    off = data.index(head)
    out = bytearray(data)
    out[off + 8:off + 12] = size.to_bytes(4, "little")
    return bytes(out)


def test_the_kernarg_segment_is_bounded_in_the_metadata(good):
    assert MAX_KERNARG_SEGMENT_SIZE == 4096
    at = with_metadata(good, kernel_edit("k", kernarg_segment_size=4096))
    assert findings(at, "kernarg-over-limit") == []
    over = with_metadata(good, kernel_edit("k", kernarg_segment_size=4097))
    want = ".kernarg_segment_size is 4097 bytes, expected at most 4096"
    assert findings(over, "kernarg-over-limit") == [want]
    huge = with_metadata(_kd_kernarg(good, 0), kernel_edit("k", kernarg_segment_size=2**32))
    assert findings(huge, "kernarg-over-limit") == [
        ".kernarg_segment_size is 4294967296 bytes, expected at most 4096"]
    with pytest.raises(CodeObjectError, match="kernarg-over-limit|expected at most 4096"):
        read_code_object(huge).require_loadable()


def test_the_kernarg_segment_is_bounded_in_the_descriptor(good):
    size = read_code_object(good).kernels[0].kernarg_segment_size
    assert findings(_kd_kernarg(good, size), "descriptor-mismatch") == []
    bad = _kd_kernarg(good, 256 * 1024 * 1024)
    want = "descriptor kernarg_size is 268435456 bytes, expected at most 4096"
    assert findings(bad, "kernarg-over-limit") == [want]
    assert findings(bad, "descriptor-mismatch") == [
        f"kernarg_segment_size: metadata says {size}, kernel descriptor says 268435456"]


def _padded_note(good: bytes, size: int) -> bytes:
    doc = msgpack.unpackb(read_note(good), raw=False)
    n = size
    while True:
        doc["sg.pad"] = "x" * n
        packed = msgpack.packb(doc)
        if len(packed) == size:
            return packed
        n -= len(packed) - size


def read_note(data: bytes) -> bytes:
    from elfedit import _metadata_note

    return _metadata_note(data)[2]


def test_the_metadata_note_is_bounded(good):
    at = with_desc(good, _padded_note(good, MAX_NOTE_SIZE))
    assert read_code_object(at).kernels[0].name == "k"
    over = with_desc(good, _padded_note(good, MAX_NOTE_SIZE + 1))
    with pytest.raises(CodeObjectError) as e:
        read_code_object(over, label="big.co")
    want = "big.co: NT_AMDGPU_METADATA note is 1048577 bytes, more than the 1048576-byte bound"
    assert str(e.value) == want


def _args(n: int):
    def edit(doc):
        k = doc["amdhsa.kernels"][0]
        k[".args"] = [{".offset": 4 * i, ".size": 4, ".value_kind": "by_value"} for i in range(n)]
        k[".kernarg_segment_size"] = 4 * n
    return edit


def test_the_argument_count_is_bounded(good):
    assert MAX_ARGS == 1024
    at = with_metadata(good, _args(1024))
    assert len(read_code_object(at).kernels[0].args) == 1024
    with pytest.raises(CodeObjectError) as e:
        read_code_object(with_metadata(good, _args(1025)), label="many.co")
    assert str(e.value) == "many.co: metadata kernel 'k' '.args': 1025 arguments, more than the bound of 1024"


def _py(blobs: list[int]) -> str:
    lines = ["import torch", ""]
    for i, size in enumerate(blobs):
        raw = zlib.compress(b"\x7fELF" + b"\0" * (size - 4), 9)
        lines.append(f"_B{i} = {base64.b64encode(raw).decode()!r}")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_the_total_a_python_file_decodes_to_is_bounded(tmp_path):
    assert MAX_TOTAL_DECODED == 64 * 1024 * 1024
    half = MAX_TOTAL_DECODED // 2
    at = tmp_path / "at.py"
    at.write_text(_py([half, half]))
    assert [len(o.data) for o in load_code_objects(at)] == [half, half]
    over = tmp_path / "over.py"
    over.write_text(_py([half, half, 1024]))
    assert over.stat().st_size < 1_000_000  # a file under the leaderboard's 1 MB
    with pytest.raises(ContainerError) as e:
        load_code_objects(over)
    assert str(e.value) == (f"{over}:5: the file's embedded blobs decode to more than 67108864 bytes "
                            "together (the bound on a .py's total)")


def test_the_size_of_a_python_file_is_bounded(tmp_path):
    body = "import torch\n"
    at = tmp_path / "at.py"
    at.write_text(body + "#" * (MAX_PY_FILE_SIZE - len(body) - 1) + "\n")
    with pytest.raises(ContainerError, match="no code object found"):
        load_code_objects(at)
    over = tmp_path / "over.py"
    over.write_text(body + "#" * (MAX_PY_FILE_SIZE - len(body)) + "\n")
    with pytest.raises(ContainerError) as e:
        load_code_objects(over)
    assert str(e.value) == f"{over}: 1000001 bytes is larger than the 1000000-byte limit"


def test_lint_reads_no_more_than_inspect(tmp_path):
    from submitgen.errors import LintError
    from submitgen.lint import READ_LIMIT, lint_file, read_submission

    assert READ_LIMIT == MAX_PY_FILE_SIZE == 1_000_000
    at = tmp_path / "at.py"
    at.write_bytes(b"#!POPCORN leaderboard amd-mxfp4-mm\n" + b"#" * (READ_LIMIT - 36) + b"\n")
    assert at.stat().st_size == READ_LIMIT
    assert [f.rule for f in lint_file(at)] == ["custom-kernel"]  # read and judged in full
    over = tmp_path / "over.py"
    over.write_bytes(b"#" * (READ_LIMIT + 1))
    with pytest.raises(LintError) as e:
        read_submission(over)
    assert str(e.value) == (f"cannot read submission {str(over)!r}: it is 1,000,001 bytes, more than the "
                            "1,000,000 a submission may have (the leaderboard's limit)")


def test_a_file_of_another_name_is_read_as_python_only_up_to_the_same_bound(tmp_path):
    """Before: a file not named .py was read up to 256 MB and parsed as Python (twice)."""
    at = tmp_path / "at.txt"
    at.write_text("import torch\n" + "#" * (MAX_PY_FILE_SIZE - 14) + "\n")
    assert at.stat().st_size == MAX_PY_FILE_SIZE
    with pytest.raises(ContainerError, match="no code object found"):
        load_code_objects(at)
    over = tmp_path / "over.txt"
    over.write_text("import torch\n" + "#" * (MAX_PY_FILE_SIZE - 13) + "\n")
    with pytest.raises(ContainerError) as e:
        load_code_objects(over)
    assert str(e.value) == (f"{over}: not an ELF code object or an offload bundle (starts with "
                            "696d706f72742074), and at 1,000,001 bytes too large to be read as a Python file "
                            "(at most 1,000,000, the leaderboard's limit)")

