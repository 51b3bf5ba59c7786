"""A name is data, never code: kernel names (and project and file names) that carry quotes,
backslashes, line breaks, spaces, tabs and non-ASCII reach the emitted file only as Python
literals or escaped comments. Each case builds a real code object whose kernel carries the name
(a compiled kernel with a placeholder name of the same byte length, the name then written over
it in the string tables and the msgpack metadata), checks that the file holds no call the
template did not write, that the provenance line reads the name back exactly, and that the file,
run against the stand-in HIP runtime, asks for exactly that symbol (four names, one of each kind of
escape: RUN)."""

from __future__ import annotations

import ast
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from conftest import build_stub, run_script

from submitgen.errors import PlanError
from submitgen.pipeline import BuildOptions, build
from submitgen.render import provenance

TESTS = Path(__file__).resolve().parent.parent
WIDTH = 64  # bytes of every name below (each padded with "_")
PLACEHOLDER = "k" * WIDTH
KERNEL = """\
#include <submitgen/device.h>
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void NAME(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i];
}
"""
PLAN = """\
import torch

KERNELS = ({name!r},)


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, n = a.shape[0], b.shape[0]
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [({name!r}, ((m * n + 255) // 256,), (256,), 0, (a, out, m * n))]
"""
NAMES = {
    "injection": 'x"+str(__import__("os").getpid())+"',
    "single-quote-injection": "x'+str(__import__('os').getpid())+'",
    "backslash": "a\\b\\\\c\\",
    "newline": "k\nimport os\nos.getpid()\n#",
    "carriage-return": "k\rimport os",
    "space": "my kernel",
    "tab": "my\tkernel",
    "non-ascii": "noyau_\u00e9t\u00e9_\u03bb_\U0001f600",
    "triple-quote": 'k"""; import os; """',
}


# the names the file is also run with against the stand-in runtime (a process each, torch
# imported): a quote, a backslash, a line break and non-ASCII, one of each way a literal is
# escaped; every name is built and read back from the file's literals and provenance
RUN = {"injection", "backslash", "newline", "non-ascii"}


def named(name: str) -> str:
    pad = WIDTH - len(name.encode())
    assert pad >= 0, name
    return name + "_" * pad


@pytest.fixture(scope="module")
def placeholder_co(compile_co) -> bytes:
    return compile_co(KERNEL.replace("NAME", PLACEHOLDER))


def project(root: Path, name: str, co: bytes, folder: str = "proj") -> tuple[Path, Path]:
    proj = root / folder
    proj.mkdir()
    (proj / "launch.py").write_text(PLAN.format(name=name), encoding="utf-8")
    image = co.replace(PLACEHOLDER.encode(), name.encode())
    assert image.count(name.encode()) >= 3  # string tables and metadata
    path = root / "k.co"
    path.write_bytes(image)
    return proj, path


def calls(text: str) -> Counter:
    """Every call in the file, by the expression it calls."""
    return Counter(ast.dump(n.func) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call))


@pytest.fixture(scope="module")
def clean(placeholder_co, tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("clean")
    proj, co = project(root, PLACEHOLDER, placeholder_co)
    return build(
        BuildOptions(problem="mxfp4-mm", output=root / "s.py", kernels=proj, code_objects=(co,))
    ).text


@pytest.fixture(scope="module")
def fakehip(tmp_path_factory) -> Path:
    return build_stub(tmp_path_factory, "fakehip")


def run_dry(sub: Path, fakehip: Path, tmp: Path) -> list[dict]:
    log = tmp / "hip.log"
    env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(fakehip), SUBMITGEN_FAKEHIP_LOG=str(log))
    r = run_script(TESTS / "abi_driver.py", str(sub), "mxfp4-mm", str(tmp / "r.json"), env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(NAMES))
def test_a_hostile_kernel_name_stays_data(case, placeholder_co, clean, fakehip, tmp_path):
    name = named(NAMES[case])
    proj, co = project(tmp_path, name, placeholder_co)
    sub = tmp_path / "s.py"
    text = build(BuildOptions(problem="mxfp4-mm", output=sub, kernels=proj, code_objects=(co,))).text
    assert calls(text) == calls(clean), "the emitted file calls something the template did not write"
    tree = ast.parse(text)
    tables = {
        n.targets[0].id: ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign)
        and getattr(n.targets[0], "id", "") in ("_SG_KERNELS", "_SG_KERNEL_IMAGE")
    }
    assert tables["_SG_KERNEL_IMAGE"] == {name: (0, name)} and list(tables["_SG_KERNELS"]) == [name]
    prov = provenance.read(text)
    assert prov is not None and prov.line == 3 and prov.kernels == (name,)
    if case in RUN:
        got = [c for c in run_dry(sub, fakehip, tmp_path) if c["call"] == "hipModuleGetFunction"]
        assert [(c["name"], c["found"]) for c in got] == [(name, True)]


@pytest.mark.slow
def test_hostile_project_and_file_names_stay_in_their_comments(placeholder_co, clean, tmp_path):
    folder = named('p"r\to\nj\\ \u00e9')
    proj, co = project(tmp_path, PLACEHOLDER, placeholder_co, folder=folder)
    odd_co = co.with_name("k\nimport os.co")
    co.rename(odd_co)
    text = build(
        BuildOptions(problem="mxfp4-mm", output=tmp_path / "s.py", kernels=proj, code_objects=(odd_co,))
    ).text
    assert calls(text) == calls(clean)
    assert f"# Generated by submitgen 0.1.0 from {ascii(folder)} for " in text
    command = f"submitgen build mxfp4-mm --kernels {folder} --co {odd_co.name}"
    assert f"# Rebuild it with:\n#   {ascii(command)}\n" in text


def test_a_name_spelling_the_banned_word_is_refused(placeholder_co, tmp_path):
    banned = "s" + "tream"
    proj, co = project(tmp_path, named("my_" + banned.upper()), placeholder_co)
    with pytest.raises(
        PlanError,
        match=f"launch.py:3: the plan contains the word '{banned.upper()}', which the leaderboard rejects",
    ):
        build(BuildOptions(problem="mxfp4-mm", output=tmp_path / "s.py", kernels=proj, code_objects=(co,)))
    assert not (tmp_path / "s.py").exists()


def test_provenance_values_read_back_exactly():
    line = provenance.format_line(
        {"kernels": ("a b", "c,d", "e\tf\ng", "\u00e9%20"), "target": "amdgcn--gfx950:xnack-"}
    )
    assert line.isprintable() and " " not in line[len(provenance.PREFIX):].replace(" target=", "")
    prov = provenance.read("#!POPCORN leaderboard x\n" + line + "\n")
    assert prov.kernels == ("a b", "c,d", "e\tf\ng", "\u00e9%20")
    assert prov.value("target") == prov.fields["target"] == "amdgcn--gfx950:xnack-"
