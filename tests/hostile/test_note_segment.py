"""The metadata is read from what the loader reads: the PT_NOTE segment's note first, the .note
section's only without one. A code object whose two copies disagree (the section says a 1024-thread
block and 6 arguments, the segment the real 256 and 7) is shown with the segment's values and an
error finding (which no longer names the first difference: a compiler writes one note twice, and
only a forged object differs); ``inspect`` exits 1 and ``build --co`` refuses it. The
object is compiled here and one copy patched (tests/hostile/elfedit.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from elfedit import kernel_edit, with_metadata

from submitgen.readers.amd.reader import read_code_object

SRC = r"""
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void k(float* out, const float* a, const float* b, int n, int m, float s, long long z) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n + m) out[i] = a[i] * s + b[i] + z;
}
"""
MISMATCH = ("note-mismatch", "the metadata note of the PT_NOTE segment (what the loader reads, shown here) "
            "and of the .note section differ")


def forge(doc: dict) -> None:
    k = doc["amdhsa.kernels"][0]
    k[".max_flat_workgroup_size"] = 1024
    k[".args"] = k[".args"][:6]


@pytest.fixture(scope="module")
def real(compile_co) -> bytes:
    return compile_co(SRC)


def errors(data: bytes) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in read_code_object(data).findings if f.severity == "error"]


def test_the_real_object_has_one_note_in_both_places(real):
    k = read_code_object(real).kernels[0]
    assert (k.max_flat_workgroup_size, len(k.args)) == (256, 7) and errors(real) == []


def test_a_forged_section_is_not_what_is_read_and_is_an_error(real):
    forged = with_metadata(real, forge, only="section")
    k = read_code_object(forged).kernels[0]
    assert (k.max_flat_workgroup_size, len(k.args)) == (256, 7)  # the segment's copy
    assert errors(forged) == [MISMATCH]


def test_a_forged_segment_is_what_is_read_and_is_an_error(real):
    forged = with_metadata(real, forge, only="segment")
    k = read_code_object(forged).kernels[0]
    assert (k.max_flat_workgroup_size, len(k.args)) == (1024, 6)
    assert errors(forged) == [MISMATCH]


def test_two_equal_copies_are_no_error(real):
    both = with_metadata(real, kernel_edit("k", max_flat_workgroup_size=1024))
    assert errors(both) == [] and read_code_object(both).kernels[0].max_flat_workgroup_size == 1024


def test_a_section_copy_that_is_not_msgpack_is_an_error(real):
    from elfedit import with_desc

    forged = with_desc(real, b"\xc1\xc1", only="section")
    assert errors(forged) == [MISMATCH]


@pytest.mark.slow
def test_inspect_exits_1_and_build_refuses(real, tmp_path):
    co = tmp_path / "forged.co"
    co.write_bytes(with_metadata(real, forge, only="section"))
    r = subprocess.run([sys.executable, "-m", "submitgen", "inspect", "--json", "--no-disasm", str(co)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    (obj,) = json.loads(r.stdout)["code_objects"]
    assert [f["code"] for f in obj["findings"]] == ["note-mismatch"]
    assert obj["kernels"][0]["max_flat_workgroup_size"] == 256
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "launch.py").write_text("KERNELS = ('k',)\n\ndef plan(data):\n    raise RuntimeError\n")
    b = subprocess.run([sys.executable, "-m", "submitgen", "build", "mxfp4-mm", "--kernels", str(proj),
                        "--co", str(co), "-o", str(tmp_path / "s.py")], capture_output=True, text=True,
                       timeout=300)
    assert b.returncode == 1
    assert b.stderr == f"Error: {co}: {MISMATCH[1]}\n"
    assert not (tmp_path / "s.py").exists()
