"""The static ``.py`` literal reader folds ``"a" + "b" + ...`` chains without recursion: a
1,400-term chain (and a 20,000-term one) holding a real code object is found by ``inspect``,
``diff`` and ``load_code_objects``; a nesting Python itself cannot parse is one clear error."""

from __future__ import annotations

import base64

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.errors import ContainerError
from submitgen.readers.containers import load_code_objects

SRC = r"""
extern "C" __attribute__((global)) void k(float* out) { out[0] = 1.0f; }
"""


def chain(data: bytes, terms: int) -> str:
    b64 = base64.b64encode(data).decode()
    step = -(-len(b64) // terms)
    parts = [b64[i:i + step] for i in range(0, len(b64), step)]
    parts += [""] * (terms - len(parts))
    return "BLOB = " + " + ".join(f'"{p}"' for p in parts) + "\n"


@pytest.mark.parametrize("terms", [1400, 20000])
def test_long_plus_chain_is_read(compile_co, tmp_path, terms):
    co = compile_co(SRC)
    path = tmp_path / f"chain{terms}.py"
    path.write_text(chain(co, terms))
    [loaded] = load_code_objects(path)
    assert loaded.data == co and loaded.python_line == 1
    r = CliRunner().invoke(cli, ["inspect", str(path)], catch_exceptions=False)
    assert r.exit_code == 0 and "kernel k" in r.output
    r = CliRunner().invoke(cli, ["diff", str(path), str(path)], catch_exceptions=False)
    assert r.exit_code == 0 and "kernels: 1 paired, 0 changed" in r.output


def test_nesting_python_cannot_parse_is_one_error(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text("X = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    with pytest.raises(ContainerError) as e:
        load_code_objects(path)
    assert str(e.value).startswith(f"{path}: not valid Python")
    r = CliRunner().invoke(cli, ["inspect", str(path)], catch_exceptions=False)
    assert (
        r.exit_code == 1
        and r.output.startswith(f"Error: {path}: not valid Python")
        and r.output.count("\n") == 1
    )
