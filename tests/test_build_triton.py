"""Triton specializations in a kernel project (TRITON in launch.py): each compiles to an object of
its own, launched under its TRITON key; block and dynamic LDS default to the compiler's, the two
scratch pointers are appended by submitgen, None passes a null pointer, and the usual argument
checks hold against the object's metadata. Mixed HIP + Triton projects embed both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from mixed_project import mixed_project

from submitgen import provenance
from submitgen.build import BuildOptions, build, format_summary
from submitgen.cli import cli
from submitgen.runtime.pack import SgPlanError, sg_triton_launch

pytest.importorskip("triton")

TESTS = Path(__file__).resolve().parent
FILL = TESTS / "projects" / "triton_fill"
MM = TESTS / "projects" / "mm_basic"
SHAPE = "m=8 n=2112 k=7168"
LAUNCH = '("fill_1024", ((m * n + 1023) // 1024,), None, None, (out, m * n, 0.0))'


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(BuildOptions(problem="mxfp4-mm", kernels=FILL, output=tmp_path_factory.mktemp("t") / "s.py"))


def test_a_triton_project_builds_with_the_compilers_launch_facts(built):
    assert [k.name for k in built.kernels] == ["fill_kernel"]
    launches = built.plan.launches
    assert len(launches) == 10 and {(c.block, c.dynamic_lds) for c in launches} == {((256, 1, 1), 0)}
    # out, n_elements, value, then the global and profile scratch pointers submitgen appends
    assert {c.kernarg_bytes for c in launches} == {32}
    import triton

    p = provenance.read(built.text)
    assert p.kernels == ("fill_1024",) and p.items("triton") == (triton.__version__,)
    assert "ctypes: decodes and loads the code object, nothing compiled" in format_summary(built)


def _project(tmp_path, plan_edit=None, extra=None) -> str:
    project = tmp_path / "proj"
    shutil.copytree(FILL, project)
    if plan_edit:
        plan = project / "launch.py"
        old, new = plan_edit
        assert plan.read_text().count(old) == 1
        plan.write_text(plan.read_text().replace(old, new))
    return "proj"


@pytest.mark.parametrize(
    ("new", "error"),
    [
        (
            LAUNCH.replace("None, None", "(128, 1, 1), None"),
            "kernel 'fill_1024': a Triton kernel runs blocks of num_warps x wave size = 256 threads (pass "
            "None), plan "
            f"gives block (128, 1, 1) ({SHAPE})",
        ),
        (
            LAUNCH.replace("m * n, 0.0", "m * n, 0"),
            "kernel 'fill_1024' arg 2: fill.py (fill_kernel's signature) declares a floating-point "
            "parameter, plan "
            f"passes int 0 ({SHAPE})",
        ),
        (
            LAUNCH.replace("(out, m * n, 0.0)", "(out, m * n, 0.0, None, None)"),
            f"kernel 'fill_1024': metadata has 5 explicit arguments, plan passes 7 ({SHAPE})",
        ),
        (
            LAUNCH.replace("(out, m * n, 0.0)", "(out, None, 0.0)"),
            f"kernel 'fill_1024' arg 1: metadata says by_value size 4, plan passes None ({SHAPE})",
        ),
    ],
)
def test_triton_launch_contract_is_checked(tmp_path, monkeypatch, new, error):
    name = _project(tmp_path, (LAUNCH, new))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", "s.py"])
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")


def test_a_divisible_by_16_hint_is_held_to(tmp_path, monkeypatch):
    name = _project(tmp_path, ('"n_elements": "i32"', '"n_elements": "i32:16"'))
    plan = tmp_path / name / "launch.py"
    plan.write_text(plan.read_text().replace("(out, m * n, 0.0)", "(out, m * n + 1, 0.0)"))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", "s.py"])
    error = ("kernel 'fill_1024' arg 1: fill.py (fill_kernel's signature) hints it divisible by 16 (':16'), "
             f"plan passes 16897 ({SHAPE})")
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")


def test_per_arch_overrides_apply_to_the_build_arch(tmp_path):
    override = ('"num_warps": 4,\n        "arch": {"gfx950": {"num_warps": 8, "constexprs": {"BLOCK": 2048}},'
                ' "sm_90": {"num_stages": 3}},')
    name = _project(tmp_path, ('"num_warps": 4,', override))
    plan = tmp_path / name / "launch.py"
    plan.write_text(plan.read_text().replace("(m * n + 1023) // 1024", "(m * n + 2047) // 2048"))
    r = build(BuildOptions(problem="mxfp4-mm", kernels=tmp_path / name, output=tmp_path / "s.py"))
    assert {c.block for c in r.plan.launches} == {(512, 1, 1)}


def test_none_is_a_null_pointer(tmp_path, monkeypatch):
    name = _project(tmp_path, (LAUNCH, LAUNCH.replace("(out, m * n, 0.0)", "(None, m * n, 0.0)")))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", "s.py"])
    assert r.exit_code == 0, r.output


def test_mixed_hip_and_triton_project_embeds_both(tmp_path):
    project = mixed_project(tmp_path)
    r = build(BuildOptions(problem="mxfp4-mm", kernels=project, output=tmp_path / "s.py"))
    import triton

    p = provenance.read(r.text)
    assert p.kernels == ("mm_tile", "mm_reduce", "fill_1024")
    assert len(p.code_objects) == 2 and p.items("triton") == ("-", triton.__version__)
    fill = next(k for k in r.kernels if k.name == "fill_kernel")
    assert (fill.block, fill.occupancy) == (0, "not launched by the plan")
    summary = format_summary(r)
    assert "import cost of this file's launcher: ctypes: decodes and loads the 2 code objects," in summary
    assert "for comparison, --launcher cpp" in summary
    # the file's own header counts code objects too, not the compressed texts that hold them
    assert "# At import: decode the embedded code objects (sha256-checked), load them from memory" in r.text


class _Meta:
    """Stands in for the output tensor: new_empty records what the packer allocates."""

    def __init__(self):
        self.made = []

    def new_empty(self, shape, dtype):
        self.made.append((shape, dtype))
        return ("workspace", shape)


def test_sg_triton_launch_defaults_scratch_and_refusals():
    out = _Meta()
    launch = sg_triton_launch(("k", (3, 2), None, None, (1, 2)), (256, 4096, 64, 0), out)
    assert launch[:4] == ("k", (3, 2), (256, 1, 1), 4096)
    assert launch[4] == (1, 2, ("workspace", (3 * 2 * 64,)), None)
    with pytest.raises(SgPlanError, match=r"^kernel 'k': the Triton kernel needs 4096 bytes of dynamic LDS "
                                          r"\(pass None\), plan gives 1024$"):
        sg_triton_launch(("k", 1, None, 1024, ()), (256, 4096, 0, 0), out)
    assert sg_triton_launch(("k", 1, (256,), 8192, ()), (256, 4096, 0, 0), out)[2:4] == ((256,), 8192)
