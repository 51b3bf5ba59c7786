"""Writing files so that a reader never sees half of one: write a temp file beside it, then rename.

Temp files and private folders carry the writing process's id in their names
(``.NAME.<pid>.<random>.tmp``, ``<tmp>/submitgen-<pid>-...``), so that those a killed process
left behind can be told from those of a process still running, and removed."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from submitgen.errors import OutputError

DEFAULT_NAME = "submission.py"
_PRIVATE_PREFIX = "submitgen-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _owner_pid(name: str, prefix: str) -> int | None:
    """The pid in a temp name made by this module (``<prefix><pid>.`` or ``<prefix><pid>-``)."""
    m = re.match(r"([0-9]+)[.-]", name[len(prefix):])
    return int(m.group(1)) if m else None


def clean_stale(folder: Path, prefix: str, *, dirs: bool = False) -> list[Path]:
    """Remove entries of ``folder`` named ``<prefix><pid>...`` whose process is gone (a kill -9
    leaves them); returns what was removed. Entries of live processes, and any other name, stay."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid = _owner_pid(entry.name, prefix)
        if pid is None or pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            if dirs and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            elif not dirs and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
            else:
                continue
            removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def private_dir(purpose: str) -> Iterator[str]:
    """A temporary folder ``<tmp>/submitgen-<pid>-<purpose>-XXXX`` (its path, as
    ``tempfile.TemporaryDirectory`` gives it), removed afterwards; folders of this kind that killed
    processes left are removed first."""
    tmp = Path(tempfile.gettempdir())
    clean_stale(tmp, _PRIVATE_PREFIX, dirs=True)
    path = tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-{purpose}-", dir=tmp)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_atomic(path: Path | str, data: bytes | str,
                 before_replace: Callable[[], None] | None = None) -> None:
    """Write ``data`` to ``path`` atomically, with the mode a plain ``open`` would give it
    (mkstemp makes 0600). Two processes writing the same path leave one whole file; a process
    killed midway leaves the old file whole and a temp file that the next write removes.
    ``before_replace()`` runs last before the rename: what it raises leaves ``path`` as it is."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}."
    clean_stale(path.parent, prefix)
    fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def output_path(raw: str | os.PathLike[str]) -> Path:
    """Where ``-o RAW`` writes: RAW itself, or RAW/submission.py when RAW names a folder (an
    existing one, or any path written with a trailing slash)."""
    path = file_path(raw)
    if os.fspath(raw).endswith(("/", os.sep)) or path.is_dir():
        return path / DEFAULT_NAME
    return path


def file_path(raw: str | os.PathLike[str], example: str = DEFAULT_NAME) -> Path:
    """``-o RAW`` as a path; an empty RAW is refused (``Path("")`` would be the current folder)."""
    if os.fspath(raw) == "":
        raise OutputError(f"-o: the output path is empty; name a file, e.g. -o {example}")
    return Path(raw)


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "not a regular file")


def check_output(path: Path, inputs: Sequence[Path], *, what: str = "the submission",
                 inputs_are: str = "the build's own inputs") -> None:
    """Refuse an output that is not (or could not become) a regular file (a folder, a FIFO, a
    device such as /dev/null, a socket), or that is one of the command's own inputs (the same
    file: same device and inode, whatever the path); ``what`` names what is written, ``inputs_are``
    the inputs, in the message. Every command that writes a file calls this before its work and
    again (through write_output) just before the rename."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputError(f"-o {path}: cannot use it: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"-o {path}: is {_kind(st.st_mode)}; {what} is written to a regular file")
    for source in inputs:
        try:
            other = os.stat(source)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            raise OutputError(f"-o {path}: is one of {inputs_are} ({source}); name another file")


def write_output(path: Path, data: bytes | str, inputs: Sequence[Path] = (), *, what: str = "the submission",
                 inputs_are: str = "the build's own inputs",
                 before_replace: Callable[[], None] | None = None) -> None:
    """The one writer of a command's output file: check_output again (the target may have been
    replaced by a FIFO or a device since the command started), then write_atomic (``before_replace``:
    the caller's last check), with any OS failure (read-only folder, full disk, /proc) as one
    OutputError and no temp file left."""
    check_output(path, inputs, what=what, inputs_are=inputs_are)
    try:
        write_atomic(path, data, before_replace)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None


_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The shipped folder ``name`` (``templates`` or ``kernels``)."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"submitgen's {name}/ folder is missing (looked in {_PKG / '_data'} and "
                            f"{_PKG.parent})")


def templates_dir() -> Path:
    return data_dir("templates")


def kernels_dir() -> Path:
    return data_dir("kernels")


def device_include_dir() -> Path:
    """Folder holding ``submitgen/device.h``, the portability header for HIP, bundled clang and CUDA."""
    return kernels_dir() / "include"
