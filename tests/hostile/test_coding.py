"""A .py is decoded as Python decodes it (PEP 263: the UTF-8 BOM, then a coding line in the first
two lines) by lint, inspect and diff; a coding Python accepts but under which the code differs
from what the bytes show is refused everywhere, with its own error."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import HIP_ARGS, kernelguard_line

from submitgen.cli import cli
from submitgen.errors import ContainerError, SourceCodingError
from submitgen.readers.pycoding import decode_python

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n"
KERNEL = "def custom_kernel(data):\n    return data\n"
UTF7 = ("the coding declaration 'utf-7' on line 2 makes Python read other text than the file shows: "
        "under it ASCII bytes do not decode to themselves, so code can hide in what reads as a comment "
        "or a string")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _utf7_file(tmp_path: Path) -> tuple[Path, bytes]:
    """What reads as a comment is, in UTF-7, a newline and exec(base64.b64decode("...")). """
    hidden = base64.b64encode(b"print('hidden')").decode()
    raw = (HEADER + "# coding: utf-7\n#!POPCORN gpu MI355X\nimport base64\n"
           f"# note +AAo-exec(base64.b64decode(+ACI-{hidden}+ACI-))\n" + KERNEL).encode("ascii")
    path = tmp_path / "submission.py"
    path.write_bytes(raw)
    return path, raw


def test_utf7_file_hiding_exec_is_refused_by_inspect_diff_and_test_and_lint_warns(tmp_path: Path):
    """popcorn-cli sends the file (it is UTF-8) and the leaderboard runs it: hidden code is a
    reviewer's policy, so lint warns; inspect, diff and test never read or run such a file."""
    path, raw = _utf7_file(tmp_path)
    assert "exec" in compile(raw, "f", "exec").co_names  # what Python would run
    assert "exec" not in compile(raw.decode("utf-8"), "f", "exec").co_names  # what a reader sees
    result = run("lint", str(path))
    assert result.exit_code == 0
    assert result.output.splitlines()[:2] == [
        f"{path}:2: warning: coding [reviewer policy]: {UTF7}: the leaderboard runs it, and reviewers "
        "disqualify hidden code (fix: save the file as UTF-8 and remove the coding line)",
        kernelguard_line(path)]
    for args in (("inspect", str(path)), ("diff", str(path), str(path)), ("test", str(path))):
        result = run(*args)
        assert result.exit_code != 0, args
        want = f"Error: cannot read submission {str(path)!r}: {UTF7}" if args[0] == "test" else \
            f"Error: {path}: {UTF7}"
        assert result.output.splitlines() == [want], args


@pytest.mark.parametrize("coding", ["utf-16", "utf-32-be", "cp500", "utf_7"])
def test_codings_where_ascii_is_not_itself_are_refused(coding):
    raw = f"# coding: {coding}\nx = 1\n".encode("ascii")
    with pytest.raises(SourceCodingError) as e:
        decode_python(raw, "f.py")
    assert e.value.line == 1
    assert "under it ASCII bytes do not decode to themselves" in e.value.detail


def test_multibyte_coding_that_swallows_an_ascii_byte_is_refused(tmp_path: Path):
    """In shift_jis, 0x95 0x5c is one character: the backslash a reader sees ends no escape, so the
    quote after it closes the string and what follows runs."""
    raw = HEADER.encode() + b"# coding: shift_jis\nX = '\x95\\'; exec('1') #'\n" + KERNEL.encode()
    assert "exec" in compile(raw, "f", "exec").co_names
    path = tmp_path / "sjis.py"
    path.write_bytes(raw)
    result = run("lint", str(path))
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        f"{path}:2: coding [popcorn-cli]: the coding declaration 'shift_jis' on line 2 makes Python read "
        "other code than the file shows: it decodes some ASCII bytes as parts of other characters, so what "
        "reads as code, a comment or a string is not what runs; and popcorn-cli, which reads a submission "
        "as UTF-8, refuses it (fix: save the file as UTF-8 and remove the coding line)")


def test_codings_python_refuses():
    for raw, why in ((b"# coding: rot13\nx = 1\n", "'rot13' is not a text encoding"),
                     (b"# coding: nope\nx = 1\n", "unknown encoding: nope"),
                     (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n",
                      "a UTF-8 BOM and a coding declaration other than utf-8"),
                     (b"x = '\xff'\n", "byte 0xff at offset 5 is not valid utf-8")):
        with pytest.raises(ContainerError) as e:
            decode_python(raw, "f.py")
        assert str(e.value) == f"f.py: not valid Python: {why}"


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
        f"{path}:4: coding [popcorn-cli]: the file is iso-8859-1 (line 2) and not valid UTF-8 (byte 0xe9 "
        "here): Python reads it, but popcorn-cli reads a submission as UTF-8 and refuses it (fix: save "
        "the file as UTF-8 and remove the coding line)", kernelguard_line(path)]
    result = run("inspect", str(path))
    assert result.exit_code == 0, result.output
    assert "many_args" in result.output
