"""Triton specializations in a kernel project (TRITON in launch.py): each compiles to an object of
its own, launched under its TRITON key; block and dynamic LDS default to the compiler's, the two
scratch pointers are appended by submitgen, None passes a null pointer, and the usual argument
checks hold against the object's metadata. Mixed HIP + Triton projects embed both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import build_stub, embedded_triton
from mixed_project import mixed_project

from submitgen.cli import cli
from submitgen.pipeline import BuildOptions, build
from submitgen.pipeline.summary import format_summary
from submitgen.render import provenance
from submitgen.runtime.pack import SgLaunchDefaults, SgPlanError, sg_apply_defaults

pytest.importorskip("triton")

TESTS = Path(__file__).resolve().parent
FILL = TESTS / "projects" / "triton_fill"
MM = TESTS / "projects" / "mm_basic"
SHAPE = "m=8 n=2112 k=7168"
LAUNCH = '("fill_1024", ((m * n + 1023) // 1024,), None, None, (out, m * n, 0.0))'


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(BuildOptions(problem="mxfp4-mm", kernels=FILL, output=tmp_path_factory.mktemp("t") / "s.py"))


@pytest.mark.slow
def test_a_triton_project_builds_with_the_compilers_launch_facts(built):
    frozen = "\n# ---- TRITON's read-only copy (submitgen/runtime/frozen.py, verbatim) ----\n"
    plan = "\n# ---- launch plan (triton_fill/launch.py; its imports hoisted, its docstring as a comment)"
    assert frozen in built.text and built.text.index(frozen) < built.text.index(plan)
    assert [(k.name, k.symbol) for k in built.kernels] == [("fill_1024", "fill_kernel")]
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


@pytest.mark.slow
@pytest.mark.parametrize(
    ("new", "error"),
    [
        (
            LAUNCH.replace("None, None", "(128, 1, 1), None"),
            "kernel 'fill_1024': Triton built it for blocks of 256 threads (pass None), plan "
            f"gives block (128, 1, 1) ({SHAPE})",
        ),
        (
            LAUNCH.replace("m * n, 0.0", "m * n, 0"),
            "kernel 'fill_1024' arg 'value': fill.py (fill_kernel's signature) declares a floating-point "
            "parameter, plan "
            f"passes int 0 ({SHAPE})",
        ),
        (  # the scratch pointers passed too: counted as the user wrote the signature, not the compiler
            LAUNCH.replace("(out, m * n, 0.0)", "(out, m * n, 0.0, None, None)"),
            "kernel 'fill_1024': fill.py (fill_kernel's signature) takes 3 arguments (out_ptr, n_elements, "
            "value), plan passes 5; constexpr BLOCK is compiled in and submitgen appends the two scratch "
            f"pointers ({SHAPE})",
        ),
        (  # the constexpr passed too
            LAUNCH.replace("(out, m * n, 0.0)", "(out, m * n, 0.0, 1024)"),
            "kernel 'fill_1024': fill.py (fill_kernel's signature) takes 3 arguments (out_ptr, n_elements, "
            "value), plan passes 4; constexpr BLOCK is compiled in and submitgen appends the two scratch "
            f"pointers ({SHAPE})",
        ),
        (
            LAUNCH.replace("(out, m * n, 0.0)", "(out, None, 0.0)"),
            f"kernel 'fill_1024' arg 'n_elements': metadata says by_value size 4, plan passes None ({SHAPE})",
        ),
        (
            LAUNCH.replace("(out, m * n, 0.0)", "(m * n, m * n, 0.0)"),
            "kernel 'fill_1024' arg 'out_ptr': metadata says global_buffer size 8, plan passes int "
            f"({SHAPE})",
        ),
        (
            LAUNCH.replace("(out, m * n, 0.0)", "(out, m * n, float('nan'))"),
            f"kernel 'fill_1024' ({SHAPE}) arg 'value': expected a finite number, plan gives nan",
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
    error = ("kernel 'fill_1024' arg 'n_elements': fill.py (fill_kernel's signature) hints it divisible "
             "by 16 (':16'), "
             f"plan passes 16897 ({SHAPE})")
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")


@pytest.mark.slow
def test_per_arch_overrides_apply_to_the_build_arch(tmp_path):
    override = ('"num_warps": 4,\n        "arch": {"gfx950": {"num_warps": 8, "constexprs": {"BLOCK": 2048}},'
                ' "sm_90": {"num_stages": 3}},')
    name = _project(tmp_path, ('"num_warps": 4,', override))
    plan = tmp_path / name / "launch.py"
    plan.write_text(plan.read_text().replace("(m * n + 1023) // 1024", "(m * n + 2047) // 2048"))
    r = build(BuildOptions(problem="mxfp4-mm", kernels=tmp_path / name, output=tmp_path / "s.py"))
    assert {c.block for c in r.plan.launches} == {(512, 1, 1)}


@pytest.mark.slow
def test_none_is_a_null_pointer(tmp_path, monkeypatch, tmp_path_factory):
    """The file launches with 0 in the kernarg slot of a pointer argument the plan passes as None:
    run against the stand-in HIP library (tests/fakehip), every shape's first launch has a null
    out_ptr and its second the output's address."""
    from test_abi import run_dry

    from submitgen.readers.containers import load_code_objects

    null = LAUNCH.replace("(out, m * n, 0.0)", "(None, m * n, 0.0)")  # and a launch that writes out
    name = _project(tmp_path, (LAUNCH, null + ", " + LAUNCH))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", "s.py"])
    assert r.exit_code == 0, r.output
    (embedded,) = load_code_objects(tmp_path / "s.py")
    out_ptr = embedded.read().kernel("fill_kernel").explicit_args[0]
    assert (out_ptr.index, out_ptr.value_kind, out_ptr.size) == (0, "global_buffer", 8)  # out_ptr
    calls, result = run_dry(tmp_path / "s.py", "mxfp4-mm", build_stub(tmp_path_factory, "fakehip"), tmp_path)
    assert result["backend"] == "dry-run"
    slots = [int.from_bytes(bytes.fromhex(c["kernarg"])[out_ptr.offset:out_ptr.offset + 8], "little")
             for c in calls if c["call"] == "hipModuleLaunchKernel"]
    assert slots == [slot for shape in result["shapes"] for slot in (0, shape["out"])]
    assert all(shape["out"] for shape in result["shapes"])


@pytest.mark.slow
def test_mixed_hip_and_triton_project_embeds_both(tmp_path):
    project = mixed_project(tmp_path)
    r = build(BuildOptions(problem="mxfp4-mm", kernels=project, output=tmp_path / "s.py"))
    import triton

    p = provenance.read(r.text)
    assert p.kernels == ("mm_tile", "mm_reduce", "fill_1024")
    assert len(p.code_objects) == 2 and p.items("triton") == ("-", triton.__version__)
    fill = next(k for k in r.kernels if k.name == "fill_1024")
    assert (fill.block, fill.occupancy) == (0, "not launched by the plan")
    summary = format_summary(r)
    assert "import cost of this file's launcher: ctypes: decodes and loads the 2 code objects," in summary
    assert "for comparison, --launcher cpp" in summary
    # the file's own header counts code objects too, not the compressed texts that hold them
    assert "At import: decode the code objects (sha256-checked), load\n# them from memory" in r.text


class _Meta:
    """Stands in for the output tensor: new_empty records what the packer allocates."""

    def __init__(self):
        self.made = []

    def new_empty(self, shape, dtype):
        self.made.append((shape, dtype))
        return ("workspace", shape)


def test_sg_apply_defaults_fills_block_lds_scratch_and_refuses_less():
    out = _Meta()
    facts = SgLaunchDefaults("Triton", 256, 4096, (64, 0))
    launch = sg_apply_defaults(("k", (3, 2), None, None, (1, 2)), facts, out)
    assert launch[:4] == ("k", (3, 2), (256, 1, 1), 4096)
    assert launch[4] == (1, 2, ("workspace", (3 * 2 * 64,)), None)
    with pytest.raises(SgPlanError, match=r"^kernel 'k': Triton built it for 4096 bytes of dynamic LDS "
                                          r"\(pass None\), plan gives 1024$"):
        sg_apply_defaults(("k", 1, None, 1024, ()), SgLaunchDefaults("Triton", 256, 4096, (0, 0)), out)
    kept = sg_apply_defaults(("k", 1, (256,), 8192, ()), SgLaunchDefaults("Triton", 256, 4096, (0, 0)), out)
    assert kept[2:4] == ((256,), 8192)


@pytest.mark.slow
def test_the_plan_reads_the_triton_of_the_build_arch(tmp_path):
    """An entry's "arch" override reaches the plan: the build checks, and the file embeds, TRITON
    as compiled for the build's arch, so a plan that computes its grid from TRITON launches the
    grid of the kernel it was built with. The provenance's source digest is of launch.py as read."""
    override = ('"num_warps": 4,\n        "plan": {"per": 1024},\n'
                '        "arch": {"gfx950": {"constexprs": {"BLOCK": 2048}, "plan": {"per": 2048}}},')
    name = _project(tmp_path, ('"num_warps": 4,', override))
    plan = tmp_path / name / "launch.py"
    grid = '(m * n + TRITON["fill_1024"]["plan"]["per"] - 1) // TRITON["fill_1024"]["constexprs"]["BLOCK"]'
    plan.write_text(plan.read_text().replace("(m * n + 1023) // 1024", grid))
    builds = {}
    for arch, target in (("gfx950", "amd"), ("sm_90", "cuda")):
        opts = BuildOptions(problem="mxfp4-mm", kernels=tmp_path / name, target=target, arch=arch,
                            output=tmp_path / f"{arch}.py")
        builds[arch] = build(opts)
    per = {"gfx950": 2048, "sm_90": 1024}
    for arch, r in builds.items():
        first = r.plan.launches[0]  # m=8 n=2112: 16,896 outputs
        assert first.grid[0] == -(-8 * 2112 // per[arch]), arch
        table = embedded_triton(r.text)
        assert table["fill_1024"]["constexprs"] == {"BLOCK": per[arch]}
        assert table["fill_1024"]["plan"] == {"per": per[arch]} and "arch" not in table["fill_1024"]
        assert f'# TRITON as compiled for {arch}: its entries\' "arch" overrides applied' in r.text
        assert "# ---- TRITON's read-only copy (submitgen/runtime/frozen.py, verbatim) ----\n" in r.text
    assert len({provenance.read(r.text).items("sources") for r in builds.values()}) == 1


def test_a_plan_value_must_be_a_dict(tmp_path, monkeypatch):
    name = _project(tmp_path, ('"num_warps": 4,', '"num_warps": 4, "plan": 7,'))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", "s.py"])
    error = "launch.py: TRITON['fill_1024']: 'plan' must be a dict of values the plan reads, got int"
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")
    assert not (tmp_path / "s.py").exists()


@pytest.mark.slow
def test_the_default_mm_file_for_sm_90_launches_its_own_tiles(tmp_path_factory, tmp_path):
    """The default mxfp4-mm project built for sm_90, run against the stand-in runtime: every shape's
    launches are the ones the build checked, with the sm_90 tiles (BN 64 and a bf16 A pre-pass for
    m > 32, BN 128 for m <= 32), not the gfx950 ones that launch.py's entries spell out."""
    import shutil

    from conftest import build_stub
    from test_abi import run_dry

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed: the CUDA target cannot be built here")
    sub = tmp_path / "s.py"
    r = build(BuildOptions(problem="mxfp4-mm", output=sub, target="cuda", arch="sm_90"))
    table = embedded_triton(sub.read_text())
    assert table["mm_m64"]["constexprs"]["BN"] == 64 and table["mm_m64"]["constexprs"]["A_BF16"] is True
    assert table["mm_quant_a"]["constexprs"]["OUT_BF16"] is True
    assert table["mm_m32"]["constexprs"]["BN"] == 128
    # a file for checking on an H100/H200, not for the MI355X board: no submit line, and the note says so
    assert r.submit == "" and "submit it with" not in format_summary(r)
    assert r.warnings[-1] == (
        "built for sm_90: amd-mxfp4-mm runs on MI355X (gfx950), where this file's kernels do not load (it "
        "runs its pure-torch fallback, or fails with --no-fallback); it is for checking on a sm_90 GPU, so "
        "no submit line is printed; a build for gfx950 (the default target and arch) is the one to submit")
    calls, result = run_dry(sub, "mxfp4-mm", build_stub(tmp_path_factory, "fakehip"), tmp_path)
    launched = [c for c in calls if c["call"] == "hipModuleLaunchKernel"]
    planned = [la for shape in result["shapes"] for la in shape["launches"]]
    assert [c["grid"] for c in launched] == [list(la["grid"]) + [1] * (3 - len(la["grid"])) for la in planned]
    checked = {(c.shape, c.kernel): c.grid for c in r.plan.launches}
    for shape in result["shapes"]:
        for la in shape["launches"]:
            grid = tuple(la["grid"]) + (1,) * (3 - len(la["grid"]))
            assert grid == checked[(shape["label"], la["kernel"])], shape["label"]
    big = next(s for s in result["shapes"] if s["label"] == "m=256 n=3072 k=1536")
    assert [la["kernel"] for la in big["launches"]] == ["mm_quant_a", "mm_m64"]
    assert big["launches"][1]["grid"][:2] == [3072 // 64, 256 // 64]


@pytest.mark.slow
def test_the_table_is_rewritten_in_place_whatever_the_line_breaks(tmp_path):
    """The TRITON literal is found by ast's positions (lines at \\n, \\r\\n or \\r; columns in UTF-8
    bytes), so a plan with CRLF line breaks, a form feed, U+2028 and non-ASCII text before the
    table gets exactly its table replaced, and the rest of the text is kept as it was."""
    name = _project(tmp_path, ('"num_warps": 4,', '"num_warps": 4, "arch": {"gfx950": {"num_warps": 8}},'))
    plan = tmp_path / name / "launch.py"
    text = plan.read_text().replace("TRITON = {", "# \x0c é\u2028 ü\nTRITON = {  # ß\n", 1)
    plan.write_bytes(text.replace("\n", "\r\n").encode())
    r = build(BuildOptions(problem="mxfp4-mm", kernels=tmp_path / name, output=tmp_path / "s.py"))
    table = embedded_triton(r.text)
    assert "num_warps" not in table["fill_1024"] and "arch" not in table["fill_1024"]
    assert {c.block for c in r.plan.launches} == {(512, 1, 1)}
    assert "# \x0c é\u2028 ü" in r.text and "def plan(data):" in r.text


@pytest.mark.slow
@pytest.mark.parametrize("default_build", ["mxfp4-mm"], indirect=True)
def test_the_summary_shows_the_lds_each_kernel_launches_with(default_build):
    """A Triton kernel's LDS is dynamic (Triton's ``shared``): the summary's LDS column is the
    static amount plus the largest dynamic amount the plan launches it with, the figure the
    provenance records and occupancy is computed from, not the static 0."""
    r = default_build  # the session's build (conftest)
    p = provenance.read(r.text)
    items = p.items("lds")
    recorded = [v for i in range(len(p.code_objects)) for v in provenance.parse_lds(items, i).values()]
    assert sorted(k.lds for k in r.kernels) == sorted(recorded) and min(recorded) > 0
    assert all(k.static_lds == 0 and k.lds == k.dynamic_lds for k in r.kernels)
    rows = [line.split() for line in format_summary(r).splitlines()[3:7]]
    assert [int(row[5]) for row in rows] == [k.lds for k in r.kernels]
