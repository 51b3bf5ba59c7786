"""Golden files of rendered submissions. The inputs are fixed (a checked-in code object and the
test project's plan), so the output changes only when the template or the build changes; such a
change shows up in review as a diff of the golden file. Regenerate on purpose with:

    SUBMITGEN_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import ast
import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruffclean import order_problems, ruff_problems

from submitgen.inspection.source import TRITON_SCRATCH_NAMES, read_launch_table
from submitgen.options import Compress
from submitgen.pipeline import BuildOptions, build
from submitgen.render import embed

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"
CASES = {
    "mm_basic_ctypes.py": dict(launcher="ctypes"),
    "mm_basic_cpp_zlib.py": dict(launcher="cpp", compress="zlib"),
    "mm_basic_no_fallback.py": dict(allow_fallback=False),
    "mm_basic_aql.py": dict(launcher="aql", allow_own_queue=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_submission_matches_golden(name, tmp_path):
    out = tmp_path / name
    build(BuildOptions(problem="mxfp4-mm", output=out, kernels=TESTS / "projects" / "mm_basic",
                       code_objects=(GOLDEN / "mm_basic.co",), **CASES[name]))
    golden = GOLDEN / name
    if os.environ.get("SUBMITGEN_REGEN_GOLDEN"):
        golden.write_text(out.read_text())
    assert out.read_text() == golden.read_text(), f"{name} differs from its golden file"


def test_banned_word_in_base64_is_re_encoded(monkeypatch):
    """A setting whose base64 happens to spell the banned word is never used, however short."""
    unlucky = base64.b64decode("xxSTREAMxxxx")  # shorter than any real compression
    real = list(embed._attempts(Compress.LZMA))

    def attempts(compress):
        yield "unlucky", lambda data: unlucky
        yield from real

    monkeypatch.setattr(embed, "_attempts", attempts)
    blob = embed.embed(b"\x7fELF" + bytes(100))
    assert blob.setting != "unlucky" and blob.setting in {name for name, _ in real}
    assert "stream" not in blob.text.lower()


def test_goldens_pass_ruff():
    """Every golden submission passes ruff's pycodestyle, pyflakes, warning and import-order rules
    at the project's line length: the pasted code's imports are hoisted into one block."""
    goldens = sorted(str(p) for p in GOLDEN.glob("*.py"))
    assert len(goldens) == len(CASES)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--select",
            "E,F,W,I",
            "--output-format",
            "concise",
            *goldens,
        ],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", sorted(CASES))
def test_fresh_submission_is_ruff_format_and_blank_line_clean(name, tmp_path):
    """A freshly emitted file of each golden's problem and launcher is ruff-clean (tests/ruffclean.py;
    the default kernel projects' builds: tests/test_provenance_lds.py)."""
    out = tmp_path / name
    build(BuildOptions(problem="mxfp4-mm", output=out, kernels=TESTS / "projects" / "mm_basic",
                       code_objects=(GOLDEN / "mm_basic.co",), **CASES[name]))
    assert ruff_problems(out) == ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_reads_top_down(name):
    """Each launcher's file (the goldens are the fresh builds: test_rendered_submission_matches_golden)
    reads top-down: the header, the plan and def custom_kernel, the machinery, then the base64 and
    the import-time setup (tests/ruffclean.py: order_problems)."""
    assert order_problems((GOLDEN / name).read_text()) == ""


def test_goldens_run_no_code_they_build():
    """Decoded data is never exec'd: no golden (one per launcher) calls exec, eval, compile or a
    dynamic import anywhere in its tree; what it decodes is the code object for the loader."""
    for path in sorted(GOLDEN.glob("*.py")):
        calls = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                 for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}
        assert "b64decode" in calls, path.name  # the walk sees the calls
        assert not calls & {"exec", "eval", "compile", "__import__", "import_module"}, path.name


def test_order_problems_sees_each_misplaced_part():
    """The order check fails on each way a file can be out of order, not only on a missing part."""
    text = (GOLDEN / "mm_basic_ctypes.py").read_text()
    kernel = text[text.index("def custom_kernel(data):"):text.index("_sg_version = operator")]
    blobs = text[text.index("# ---- embedded code objects"):text.index("# ---- import-time setup")]
    pack = text[text.index("# ---- argument packing"):text.index("# ---- the problem's inputs")]
    moved = {
        "kernel last": text.replace(kernel, "") + "\n\n" + kernel,
        "blobs first": text.replace(blobs, "").replace("# ---- launch plan", blobs + "# ---- launch plan"),
        "pack first": text.replace(pack, "").replace("# ---- launch plan", pack + "# ---- launch plan"),
        "no header": text.replace("#!POPCORN leaderboard", "# leaderboard"),
    }
    found = {what: order_problems(t) for what, t in moved.items()}
    assert "custom_kernel" in found["kernel last"] and "after _SG_BLOBS" in found["kernel last"]
    assert "expected the setup" in found["blobs first"]
    assert "SgPlanError comes before def custom_kernel" in found["pack first"]
    assert found["no header"].startswith("header:")


def test_the_launch_table_reads_launch_defaults_by_position_and_by_keyword():
    """The emitted ``_SG_DEFAULTS`` writes SgLaunchDefaults by position where its line fits, by
    keyword where it does not; inspect's reader takes the names and the block from either."""
    text = (
        '_SG_KERNEL_IMAGE = {"a": (0, "k_a"), "b": (1, "k_b")}\n'
        '_SG_DEFAULTS = {\n'
        '    "a": SgLaunchDefaults("Triton", 256, 64, (0, 0), ("x_ptr", "n")),\n'
        '    "b": SgLaunchDefaults(compiler="Triton", threads=128, shared=0, scratch=(0,), names=("y",)),\n'
        '}\n'
    )
    table = read_launch_table(text)
    assert table is not None
    (a,), (b,) = table[0], table[1]
    assert (a.name, a.symbol, a.block) == ("a", "k_a", 256)
    assert a.arg_names == ("x_ptr", "n", *TRITON_SCRATCH_NAMES)
    assert (b.arg_names, b.block) == (("y", TRITON_SCRATCH_NAMES[0]), 128)
