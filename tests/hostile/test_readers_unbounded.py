"""The readers refuse what is not a regular file before reading it, and bound every read: a FIFO
(which would block), ``/dev/zero`` (endless), ``/dev/stdin`` and a folder give one ``Error:`` line,
at once, from ``inspect``, ``inspect --json`` and ``diff``; a Python file's second reads (its
provenance, its launch plan) go through the same bounded reader."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from submitgen.errors import ContainerError
from submitgen.readers import containers
from submitgen.readers.containers import load_code_objects, read_input


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "submitgen", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.fixture()
def fifo(tmp_path):
    path = tmp_path / "pipe.co"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", [("inspect",), ("inspect", "--json"), ("diff",)])
def test_fifo_is_refused_without_blocking(fifo, command):
    args = [*command, str(fifo)] + ([str(fifo)] if command == ("diff",) else [])
    r = cli(*args)
    assert r.returncode == 1
    assert r.stderr + r.stdout == (f"Error: {fifo}: not a regular file (a FIFO): expected a code object, an "
                                   "offload bundle or a Python file\n")


@pytest.mark.parametrize(
    "path,kind", [("/dev/zero", "a character device"), ("/dev/stdin", None), ("/", "a folder")]
)
def test_devices_and_folders_are_refused(path, kind):
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    with pytest.raises(ContainerError) as e:
        load_code_objects(path)
    assert str(e.value).startswith(f"{path}: not a regular file (")
    if kind:
        assert f"({kind})" in str(e.value)
    r = cli("inspect", path)
    assert r.returncode == 1 and r.stderr.startswith(f"Error: {path}: not a regular file (")


def test_size_is_checked_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.co"
    big.write_bytes(b"\x7fELF" + b"\0" * 5000)
    with pytest.raises(ContainerError) as e:
        read_input(big, limit=4096)
    assert str(e.value) == f"{big}: 5004 bytes is larger than the 4096-byte limit"
    monkeypatch.setattr(containers, "MAX_FILE_SIZE", 4096)
    with pytest.raises(ContainerError, match="larger than the 4096-byte limit"):
        load_code_objects(str(big))
