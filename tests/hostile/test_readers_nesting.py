"""The static ``.py`` literal reader on a nesting Python itself cannot parse: one clear error."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.errors import ContainerError
from submitgen.readers.containers import load_code_objects


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
