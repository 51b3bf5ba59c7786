"""A .py is decoded as Python decodes it (PEP 263: the UTF-8 BOM, then a coding line in the first
two lines) by lint, inspect and diff; lint refuses a file that popcorn-cli (UTF-8 only) or Python
would refuse."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import HIP_ARGS, kernelguard_line

from submitgen.cli import cli
from submitgen.errors import ContainerError
from submitgen.readers.pycoding import decode_python

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n"
KERNEL = "def custom_kernel(data):\n    return data\n"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_codings_python_refuses():
    for raw, why in ((b"# coding: rot13\nx = 1\n", "'rot13' is not a text encoding"),
                     (b"# coding: nope\nx = 1\n", "unknown encoding: nope"),
                     (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n",
                      "a UTF-8 BOM and a coding declaration other than utf-8"),
                     (b"x = '\xff'\n", "byte 0xff at offset 5 is not valid utf-8")):
        with pytest.raises(ContainerError) as e:
            decode_python(raw, "f.py")
        assert str(e.value) == f"f.py: not valid Python: {why}"


def test_lint_refuses_a_coding_python_refuses(tmp_path: Path):
    path = tmp_path / "submission.py"
    path.write_bytes((HEADER + "# coding: nope\n" + KERNEL).encode())
    result = run("lint", str(path))
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        f"{path}:1: coding [eval.py]: Python refuses the file's coding (unknown encoding: nope) (fix: save "
        "the file as UTF-8 and remove the coding line)")


def _blob_file(path: Path, co: bytes, prefix: bytes) -> Path:
    path.write_bytes(prefix + b"import ctypes\nCO = \"" + base64.b64encode(co) + b"\"\n" + KERNEL.encode())
    return path


def test_bom_file_is_valid_python_for_inspect_and_lint(tmp_path: Path, compile_co):
    co = compile_co(HIP_ARGS, "gfx950")
    path = _blob_file(tmp_path / "bom.py", co, b"\xef\xbb\xbf" + HEADER.encode() + b"#!POPCORN gpu MI355X\n")
    compile(path.read_bytes(), "f", "exec")  # Python accepts it
    result = run("inspect", str(path))
    assert result.exit_code == 0, result.output
    assert "many_args" in result.output and "not valid Python" not in result.output
    result = run("lint", str(path))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"{path}:1: warning: header [popcorn-cli]: the file starts with a UTF-8 BOM: Python skips it, but "
        f"popcorn-cli "
        "and the server read the first line as the BOM and then '#!POPCORN ...', not as a directive "
        "(fix: save the file without the BOM (or pass --leaderboard and --gpu to popcorn-cli))")
    assert result.output.splitlines()[1] == kernelguard_line(path)
    assert result.output.splitlines()[2].startswith(f"{path}: lint passed; estimated payload ")


def test_latin1_coding_line_is_read_as_latin1(tmp_path: Path, compile_co):
    co = compile_co(HIP_ARGS, "gfx950")
    prefix = (HEADER + "# -*- coding: latin-1 -*-\n#!POPCORN gpu MI355X\nNAME = 'caf\xe9'\n")
    prefix = prefix.encode("latin-1")
    path = _blob_file(tmp_path / "latin1.py", co, prefix)
    assert decode_python(path.read_bytes()).text.splitlines()[3] == "NAME = 'caf\u00e9'"
    result = run("lint", str(path))
    assert result.exit_code == 1, result.output  # popcorn-cli refuses it: the leaderboard never sees it
    assert result.output.splitlines() == [
        f"{path}:4: coding [popcorn-cli]: the file is not valid UTF-8 (byte 0xe9 here): popcorn-cli reads "
        "a submission as UTF-8 and refuses it (fix: save the file as UTF-8 and remove the coding line)",
        kernelguard_line(path)]
    result = run("inspect", str(path))
    assert result.exit_code == 0, result.output
    assert "many_args" in result.output
