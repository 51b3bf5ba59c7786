"""Hostile inputs to the compiler side: device files and FIFOs as sources or headers, compilers
that read stdin or hang, edits during a compile, and an unusable cache folder."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.errors import CompileError, ToolchainError
from submitgen.system import run_tool
from submitgen.toolchain import discovery
from submitgen.toolchain.compile import compile_sources

KERNEL = """\
#include <submitgen/device.h>
extern "C" __global__ SG_LAUNCH_BOUNDS(64) void {name}(float* out) {{ out[threadIdx.x] = {value}; }}
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def kernel(name: str = "k_a", value: str = "1.0f") -> str:
    return KERNEL.format(name=name, value=value)


def test_compilers_run_with_stdin_closed_and_a_time_limit():
    assert run_tool(["sh", "-c", "cat; echo done"], timeout=120).stdout == "done\n"
    t0 = time.monotonic()
    with pytest.raises(ToolchainError, match=r"^sleeper ran past its time limit of 1 s and was stopped"):
        run_tool(["sh", "-c", "sleep 600 & sleep 600; wait"], timeout=1, what="sleeper")
    assert time.monotonic() - t0 < 120  # a hang catcher only: the sleeps would take 600 s


@pytest.mark.parametrize(
    "target, kind", [("/dev/zero", "a character device"), ("/dev/null", "a character device")]
)
def test_include_of_a_device_file_is_refused_before_compiling(tmp_path, target, kind):
    src = tmp_path / "k.hip"
    src.write_text(f'#include "{target}"\n' + kernel())
    with pytest.raises(CompileError) as e:
        compile_sources([src])
    assert str(e.value) == (f"{src} includes '{target}': header {target}: not a regular file ({kind}); "
                            "sources and headers must be regular files")


def test_include_of_dev_stdin_and_of_a_fifo_in_a_header_is_refused(tmp_path):
    src = tmp_path / "k.hip"
    src.write_text('#include "/dev/stdin"\n' + kernel())
    with pytest.raises(CompileError, match=r"includes '/dev/stdin': header /dev/stdin: not a regular file"):
        compile_sources([src])
    os.mkfifo(tmp_path / "pipe.h")
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "outer.h").write_text('#pragma once\n#include "../pipe.h"\n')
    src.write_text('#include "inc/outer.h"\n' + kernel())
    t0 = time.monotonic()
    with pytest.raises(CompileError) as e:
        compile_sources([src])
    assert time.monotonic() - t0 < 60  # a hang catcher only: an opened FIFO blocks for ever
    assert str(e.value) == (
        f"{tmp_path / 'inc' / 'outer.h'} includes '../pipe.h': header {tmp_path / 'pipe.h'}: "
        "not a regular file (a FIFO); sources and headers must be regular files"
    )


def test_a_fifo_or_device_as_the_source_is_refused(tmp_path):
    fifo = tmp_path / "k.hip"
    os.mkfifo(fifo)
    with pytest.raises(CompileError, match=r"k.hip: not a regular file \(a FIFO\)"):
        compile_sources([fifo])
    r = CliRunner().invoke(cli, ["compile", str(fifo), "-o", str(tmp_path / "k.co")])
    assert r.exit_code == 1 and r.output.startswith(f"Error: source {fifo}: not a regular file (a FIFO)")
    assert not (tmp_path / "k.co").exists()


def _editing_compiler(tmp_path: Path, action: str) -> str:
    """A compiler wrapper (the bundled clang) that runs ``action`` once, on the first real compile
    (not the discovery probe), before compiling."""
    zig = discovery.bundled_zig()
    assert zig is not None
    flag = tmp_path / "edit-once"
    flag.write_text("")
    script = tmp_path / "bin" / "clang"
    script.parent.mkdir()
    script.write_text(
        f'#!/bin/sh\ncase "$*" in *" -S s0/"*) if [ -e "{flag}" ]; then rm "{flag}"; {action}; fi;; esac\n'
        f'exec "{zig}" clang "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_editing_a_source_during_the_compile_never_poisons_the_cache(tmp_path):
    src = tmp_path / "k.hip"
    a, b = kernel("k_a"), kernel("k_b")
    (tmp_path / "b.txt").write_text(b)
    cc = _editing_compiler(tmp_path, f'cp "{tmp_path / "b.txt"}" "{src}"')
    src.write_text(a)
    first = compile_sources([src], compiler=cc)
    assert first.kernels == ("k_a",) and not first.cache_hit  # compiled from the bytes read at the start
    assert src.read_text() == b
    second = compile_sources([src], compiler=cc)
    assert second.kernels == ("k_b",) and not second.cache_hit
    src.write_text(a)
    third = compile_sources([src], compiler=cc)
    assert third.cache_hit and third.kernels == ("k_a",) and third.code_object == first.code_object


def test_editing_a_header_during_the_compile_is_not_cached(tmp_path):
    (tmp_path / "v.h").write_text("#define V 1.0f\n")
    src = tmp_path / "k.hip"
    src.write_text('#include "v.h"\n' + kernel(value="V"))
    cc = _editing_compiler(tmp_path, f'sleep 0.05; echo "#define V 2.0f" > "{tmp_path / "v.h"}"')
    first = compile_sources([src], compiler=cc)
    assert not first.cache_hit
    assert (
        first.cache_warning
        == f"header {tmp_path / 'v.h'} changed during the compile; the object was not cached"
    )
    again = compile_sources([src], compiler=cc)
    assert not again.cache_hit and again.cache_warning is None
    assert compile_sources([src], compiler=cc).cache_hit


def test_an_unusable_cache_folder_compiles_uncached(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(blocker / "cache"))
    src = tmp_path / "k.hip"
    src.write_text(kernel())
    r = compile_sources([src])
    assert r.kernels == ("k_a",) and not r.cache_hit
    assert r.cache_warning and r.cache_warning.startswith(f"cache folder {blocker / 'cache'}")
    assert r.cache_warning.endswith("is not writable (Not a directory); compiled without caching")
    out = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "k.co")])
    assert out.exit_code == 0 and "Warning: cache folder" in out.output and (tmp_path / "k.co").is_file()
    out = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "k2.co"), "--no-cache"])
    assert out.exit_code == 0 and "Warning" not in out.output
    assert (tmp_path / "k2.co").read_bytes() == (tmp_path / "k.co").read_bytes()


def test_a_device_file_included_through_a_macro_is_refused_after_the_compile(tmp_path):
    src = tmp_path / "k.hip"
    src.write_text('#define DEVICE "/dev/zero"\n#include DEVICE\n' + kernel())
    with pytest.raises(CompileError) as e:
        compile_sources([src])
    assert str(e.value) == (f"{src}: the compile read /dev/zero, which is not a regular file; sources and "
                            "headers must be regular files")


def test_a_fifo_included_through_a_macro_ends_at_the_time_limit(tmp_path):
    os.mkfifo(tmp_path / "pipe.h")
    src = tmp_path / "k.hip"
    src.write_text('#define PIPE "pipe.h"\n#include PIPE\n' + kernel())
    t0 = time.monotonic()
    with pytest.raises(ToolchainError) as e:
        compile_sources([src], timeout=3)
    assert time.monotonic() - t0 < 60
    assert str(e.value) == (
        f"compiling {src} for gfx950 ran past its time limit of 3 s and was stopped (does a "
        "source include a FIFO or a device file?)"
    )
