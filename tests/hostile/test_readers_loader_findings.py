"""Code objects a loader cannot run are error findings in ``inspect`` (exit status 1) and make
``require_loadable`` (the build's own check, in pipeline/check.py) refuse them: no program headers
or a table past the end of the file, a ``global_buffer`` of .size other than 8, 2^31 bytes of
scratch, 200 SGPRs, and a ``.kernarg_segment_align`` of 0 or 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from elfedit import E_PHNUM, E_PHOFF, kernel_edit, patch_header, with_metadata

from submitgen.cli import cli
from submitgen.errors import CodeObjectError
from submitgen.pipeline import BuildOptions, build
from submitgen.readers.amd.reader import read_code_object

SRC = r"""
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void k(float* out, int n) { if ((int)__builtin_amdgcn_workitem_id_x() < n) out[0] = 1.0f; }
"""


@pytest.fixture(scope="module")
def good(compile_co):
    return compile_co(SRC)


def _args_size4(doc):
    doc["amdhsa.kernels"][0][".args"][0][".size"] = 4


CASES = [
    (
        "no-phdrs",
        lambda d: patch_header(d, "<H", E_PHNUM, 0),
        None,
        "no-program-headers",
        "no program headers (e_phnum is 0): a loader has no segment to map",
    ),
    (
        "phdrs-past-eof",
        lambda d: patch_header(d, "<Q", E_PHOFF, len(d) + 64),
        None,
        "no-program-headers",
        "past the end of the file (",
    ),
    (
        "pointer-size-4",
        lambda d: with_metadata(d, _args_size4),
        "k",
        "arg-size",
        "arg 0 is a global_buffer of .size 4, expected 8 (a 64-bit address)",
    ),
    (
        "scratch-2g",
        lambda d: with_metadata(d, kernel_edit("k", private_segment_fixed_size=2**31)),
        "k",
        "scratch-over-limit",
        ".private_segment_fixed_size is 2147483648 bytes, expected at most 131056 per work-item",
    ),
    (
        "sgpr-200",
        lambda d: with_metadata(d, kernel_edit("k", sgpr_count=200)),
        "k",
        "sgpr-over-limit",
        ".sgpr_count is 200, expected at most 112 on gfx950",
    ),
    (
        "align-0",
        lambda d: with_metadata(d, kernel_edit("k", kernarg_segment_align=0)),
        "k",
        "kernarg-align",
        ".kernarg_segment_align is 0, expected a power of two",
    ),
    (
        "align-3",
        lambda d: with_metadata(d, kernel_edit("k", kernarg_segment_align=3)),
        "k",
        "kernarg-align",
        ".kernarg_segment_align is 3, expected a power of two",
    ),
]


def test_the_unedited_object_is_clean(good):
    assert read_code_object(good).errors == ()


@pytest.mark.parametrize("label,mutate,kernel,code,message", CASES, ids=[c[0] for c in CASES])
def test_unloadable_object_is_an_error_finding(good, tmp_path, label, mutate, kernel, code, message):
    data = mutate(good)
    co = read_code_object(data, label=label)
    found = [f for f in co.errors if f.code == code]
    assert found and found[0].kernel == kernel and message in found[0].message, co.findings
    with pytest.raises(CodeObjectError, match=f"^{label}: "):
        co.require_loadable()
    path = tmp_path / f"{label}.co"
    path.write_bytes(data)
    r = CliRunner().invoke(cli, ["inspect", str(path)], catch_exceptions=False)
    text = " ".join(r.output.split())
    assert r.exit_code == 1 and f"error: {found[0].message}" in text and message in text, r.output


def test_the_build_refuses_what_require_loadable_refuses(good, tmp_path, monkeypatch):
    """The build's check of the findings is ``require_loadable`` itself: an error finding stops a
    --co build with the very error, naming the object by the path it was given as; nothing is written."""
    path = tmp_path / "bad.co"
    path.write_bytes(with_metadata(good, kernel_edit("k", sgpr_count=200)))
    with pytest.raises(CodeObjectError) as want:
        read_code_object(path.read_bytes(), label=str(path)).require_loadable()
    calls = []
    real = type(read_code_object(good)).require_loadable

    def counted(self, label=None):
        calls.append(label)
        return real(self, label)

    monkeypatch.setattr(type(read_code_object(good)), "require_loadable", counted)
    out = tmp_path / "s.py"
    project = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"
    with pytest.raises(CodeObjectError) as got:
        build(BuildOptions(problem="mxfp4-mm", output=out, kernels=project, code_objects=(path,)))
    assert str(got.value) == str(want.value) == (
        f"{path}: kernel 'k': .sgpr_count is 200, expected at most 112 on gfx950")
    assert calls == [str(path)] and not out.exists()
