"""Triton kernels compiled with the installed triton for gfx950 (hsaco) and sm_90 (cubin), read
back with the project's readers; the content cache; and every way a specialization can be wrong."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import pytest

from submitgen.errors import TritonCompileError
from submitgen.readers.amd.reader import read_code_object
from submitgen.readers.cuda.cubin import read_cubin
from submitgen.toolchain.triton import TritonSpec, cache_key, compile_triton, triton_version

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="triton is not installed (pip install 'submitgen[triton]')")

REPO = Path(__file__).resolve().parent.parent
ADD = """\
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""
SIG = (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr"))
DOT = """\
import triton
import triton.language as tl


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def spec_of(tmp_path: Path, text: str = ADD, kernel: str = "add_kernel", signature=SIG,
            constexprs=(("BLOCK", 256),), name: str = "add", **kw) -> TritonSpec:
    path = tmp_path / f"{kernel}.py"
    path.write_text(text)
    return TritonSpec(
        name=name,
        source=path,
        source_bytes=path.read_bytes(),
        kernel=kernel,
        signature=signature,
        constexprs=constexprs,
        **{"num_warps": 4, "num_stages": 2, **kw},
    )


@pytest.mark.slow
def test_gfx950_hsaco_reads_back_with_the_launch_facts(tmp_path):
    art = compile_triton(spec_of(tmp_path), "gfx950")
    assert (art.kind, art.symbol, art.num_warps, art.warp_size, art.block) == (
        "hsaco",
        "add_kernel",
        4,
        64,
        256,
    )
    assert (art.shared, art.global_scratch, art.profile_scratch) == (0, 0, 0)
    co = read_code_object(art.image, label="add.hsaco")
    assert co.header.processor == "gfx950" and co.header.elf_type == "ET_DYN"
    (k,) = co.kernels
    assert k.name == "add_kernel" and k.descriptor is not None
    explicit = [(a.offset, a.size, a.value_kind) for a in k.args if not a.value_kind.startswith("hidden")]
    # the four runtime parameters, then Triton's global and profile scratch pointers
    assert explicit == [(0, 8, "global_buffer"), (8, 8, "global_buffer"), (16, 8, "global_buffer"),
                        (24, 4, "by_value"), (32, 8, "global_buffer"), (40, 8, "global_buffer")]
    assert art.triton_version == __import__("triton").__version__


@pytest.mark.slow
def test_dot_kernel_needs_dynamic_shared_memory_from_the_metadata(tmp_path):
    spec = spec_of(tmp_path, DOT, "dot_kernel", (("a_ptr", "*fp16"), ("b_ptr", "*fp16"), ("c_ptr", "*fp32"),
                   ("BM", "constexpr"), ("BN", "constexpr"), ("BK", "constexpr")),
                   (("BM", 64), ("BN", 64), ("BK", 64)), name="dot")
    art = compile_triton(spec, "gfx942")
    (k,) = read_code_object(art.image, label="dot").kernels
    assert art.shared > 0 and k.group_segment_fixed_size == 0  # all of it dynamic: the launch passes it


def test_sm90_cubin_reads_back(tmp_path):
    art = compile_triton(spec_of(tmp_path, num_warps=8), "sm_90")
    assert (art.kind, art.symbol, art.warp_size, art.block) == ("cubin", "add_kernel", 32, 256)
    cub = read_cubin(art.image, label="add.cubin")
    (k,) = cub.kernels
    assert k.name == "add_kernel" and len(k.args) == 6 and k.kernarg_segment_size == 48
    # no line info by default: Triton's -lineinfo would embed the whole PTX text in the cubin
    from elftools.elf.elffile import ELFFile
    sections = {s.name for s in ELFFile(io.BytesIO(art.image)).iter_sections()}
    assert ".nv_debug_ptx_txt" not in sections and ".nv_debug_line_sass" not in sections


def test_line_info_default_is_keyed_and_the_user_can_turn_it_on(tmp_path, monkeypatch):
    spec = spec_of(tmp_path)
    version, where = triton_version()
    default = cache_key(spec, "sm_90", version, where)
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    assert cache_key(spec, "sm_90", version, where) == default
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "0")
    assert cache_key(spec, "sm_90", version, where) != default


@pytest.mark.slow
def test_cache_hit_and_what_makes_a_miss(tmp_path, _cache):
    spec = spec_of(tmp_path)
    first = compile_triton(spec, "gfx950")
    again = compile_triton(spec, "gfx950")
    assert not first.cache_hit and again.cache_hit and again.image == first.image
    assert again == first.__class__(**{**first.__dict__, "cache_hit": True})
    other = compile_triton(spec_of(tmp_path, constexprs=(("BLOCK", 128),)), "gfx950")
    assert not other.cache_hit and other.image != first.image
    assert not compile_triton(spec, "gfx950", cache=False).cache_hit
    # the bytes in the spec are what is compiled and keyed, never the file as it is now
    spec.source.write_text(ADD.replace("add_kernel", "renamed"))
    assert compile_triton(spec, "gfx950").cache_hit
    (entry,) = [
        p for p in (_cache / "triton").iterdir() if p.suffix == ".bin" and p.read_bytes() == first.image
    ]
    entry.write_bytes(b"garbage")
    rebuilt = compile_triton(spec, "gfx950")
    assert not rebuilt.cache_hit and rebuilt.image == first.image


def test_syntax_error_names_file_line_and_kernel(tmp_path):
    text = ADD.replace("m = offs < n", "m = offs <")
    spec = spec_of(tmp_path, text)
    try:
        compile(text, "x", "exec")
    except SyntaxError as e:
        why = e.msg
    with pytest.raises(TritonCompileError) as e:
        compile_triton(spec, "gfx950")
    assert (
        str(e.value)
        == f"{spec.source}:8: Triton kernel 'add_kernel': cannot load the file: SyntaxError: {why}"
    )


def test_triton_compile_error_is_one_line_with_the_kernel_line(tmp_path):
    spec = spec_of(tmp_path, ADD.replace("mask=m) + tl.load", "mask=m) + undefined_thing + tl.load"))
    with pytest.raises(TritonCompileError) as e:
        compile_triton(spec, "gfx950")
    assert str(e.value) == (f"{spec.source}:9: Triton kernel 'add_kernel': compiling for gfx950 failed: "
                            "NameError('undefined_thing is not defined')")


@pytest.mark.slow
def test_missing_kernel_and_not_a_jit_function(tmp_path):
    spec = spec_of(tmp_path, ADD + "\n\ndef helper():\n    pass\n", kernel="add_kernel")
    with pytest.raises(TritonCompileError) as e:
        compile_triton(TritonSpec(**{**spec.__dict__, "kernel": "nope"}), "gfx950")
    assert str(e.value) == (f"{spec.source}: Triton kernel 'nope': no such function in the file "
                            "(its @triton.jit functions: add_kernel)")
    with pytest.raises(TritonCompileError) as e:
        compile_triton(TritonSpec(**{**spec.__dict__, "kernel": "helper"}), "gfx950")
    assert str(e.value) == f"{spec.source}: Triton kernel 'helper': is a function, not a @triton.jit function"
    bad_import = spec_of(tmp_path, "import triton\nimport no_such_module_here\n")
    with pytest.raises(TritonCompileError) as e:
        compile_triton(bad_import, "gfx950")
    assert str(e.value) == (f"{bad_import.source}:2: Triton kernel 'add_kernel': loading the file raised "
                            "ModuleNotFoundError: No module named 'no_such_module_here'")


def test_signature_mismatch_names_each_difference(tmp_path):
    sig = (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out", "*fp32"), ("n", "constexpr"), ("BLOCK", "i32"))
    spec = spec_of(tmp_path, signature=sig, constexprs=(("BLOCK", 256),), name="mm_64")
    with pytest.raises(TritonCompileError) as e:
        compile_triton(spec, "gfx950")
    assert str(e.value) == (
        f"{spec.source}: Triton kernel 'add_kernel': specialization 'mm_64': the signature does not match "
        "the "
        "kernel's parameters (x_ptr, y_ptr, out_ptr, n, BLOCK): missing from the signature: out_ptr; "
        "not parameters of the kernel: out; constexpr parameters not typed 'constexpr': BLOCK; "
        "'constexpr' entries without a value in constexprs: n; "
        "constexprs values for entries not typed 'constexpr': BLOCK"
    )
    with pytest.raises(TritonCompileError, match=r"unknown option\(s\) no_such_option for this backend"):
        compile_triton(spec_of(tmp_path, options=(("no_such_option", 1),)), "gfx950")
    with pytest.raises(TritonCompileError, match=r"arch 'gfx90a' is not one of gfx950, gfx942, sm_90"):
        compile_triton(spec_of(tmp_path), "gfx90a")


BLOCKED = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
from pathlib import Path
from submitgen.errors import TritonMissingError
from submitgen.toolchain.triton import TritonSpec, cache_key, compile_triton, triton_version
p = Path(sys.argv[1])
try:
    compile_triton(TritonSpec("add", p, p.read_bytes(), "add_kernel", (), ()), "gfx950")
except TritonMissingError as e:
    print(e)
"""


@pytest.mark.slow
def test_triton_not_installed_says_how_to_install(tmp_path):
    spec = spec_of(tmp_path)
    compile_triton(spec, "gfx950")  # a cached object does not help: the Triton version is part of the key
    r = subprocess.run([sys.executable, "-c", BLOCKED, str(spec.source)], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert r.stdout == ("Triton kernels need the triton package, which is not installed: "
                        "pip install 'submitgen[triton]'\n"), r.stderr


@pytest.mark.slow
def test_divisibility_hints_reach_the_compiler(tmp_path):
    plain = compile_triton(spec_of(tmp_path, constexprs=(("BLOCK", 1024),)), "gfx950")
    hinted_sig = tuple((n, t if t == "constexpr" else t + ":16") for n, t in SIG)
    hinted = compile_triton(spec_of(tmp_path, signature=hinted_sig, constexprs=(("BLOCK", 1024),)), "gfx950")
    assert hinted.image != plain.image  # 16-byte aligned pointers: Triton vectorises the loads (dwordx4)
    (k,) = read_code_object(hinted.image, label="hinted").kernels
    assert [a.size for a in k.args if not a.hidden] == [8, 8, 8, 4, 8, 8]
    bad = tuple((n, "i32:8" if n == "n" else t) for n, t in SIG)
    with pytest.raises(TritonCompileError) as e:
        compile_triton(spec_of(tmp_path, signature=bad), "gfx950")
    assert str(e.value).endswith(
        "specialization 'add': parameter n: type 'i32:8' has an unknown hint (only ':16' "
        "is accepted: a 16-byte aligned pointer or an integer divisible by 16)"
    )
