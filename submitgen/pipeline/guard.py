"""Whether the build may replace the file at ``-o``: only one that submitgen wrote for this
build's leaderboard and that nobody changed since (its bytes match the ``digest`` its provenance
line records). Anything else - another leaderboard's submission, a file submitgen did not write,
one edited by hand - is refused before anything is built, unless ``--force``. Just before the
rename, ``-o`` must still be what was checked: a file saved there during the build is refused too."""

from __future__ import annotations

import hashlib
from pathlib import Path

from submitgen.errors import ContainerError, OutputError
from submitgen.lint import read_header
from submitgen.readers.containers import read_input
from submitgen.render import provenance

_FORCE = "pass --force to replace it, or -o another file"


def _what(leaderboard: str | None) -> str:
    return f"a submission for {leaderboard}" if leaderboard else "a file with no #!POPCORN leaderboard line"


def refusal(path: Path, text: str | None, leaderboard: str) -> str | None:
    """Why the build must not replace ``path`` (whose content is ``text``; None: not UTF-8 text),
    for a build for ``leaderboard``; None when it may."""
    if text is None:
        return f"-o {path}: exists and is not a text file submitgen wrote; refusing to overwrite it: {_FORCE}"
    theirs = read_header(text).leaderboard
    prov = provenance.read(text)
    if prov is None:
        return (f"-o {path}: exists and carries no submitgen provenance line ({_what(theirs)}, not written "
                f"by submitgen); refusing to overwrite it: {_FORCE}")
    if theirs != leaderboard:
        return (f"-o {path}: is {_what(theirs)}, and this build is for {leaderboard}; refusing to overwrite "
                f"it: {_FORCE}")
    recorded = prov.value(provenance.DIGEST)
    if not recorded:
        return (f"-o {path}: carries no content digest in its provenance line (written by an older "
                f"submitgen), so an edit since cannot be ruled out; refusing to overwrite it: {_FORCE}")
    if recorded != provenance.content_digest(text):
        return (f"-o {path}: was changed since submitgen built it (its content no longer matches the digest "
                f"its provenance line records: edited by hand?); refusing to overwrite it: {_FORCE}")
    return None


ABSENT = "absent"
"""What check_overwrite saw when nothing was at ``-o``."""


def _read(path: Path) -> bytes:
    try:
        return read_input(path)
    except ContainerError as e:
        raise OutputError(f"-o {path}: exists and cannot be read ({e}); {_FORCE}") from None


def check_overwrite(path: Path, leaderboard: str, force: bool) -> str | None:
    """Raise OutputError when ``path`` exists and may not be replaced (see ``refusal``); else what
    was checked, for ``still_as_checked``: the sha256 of its bytes, ABSENT, or None with ``force``."""
    if force:
        return None
    if not path.exists():
        return ABSENT
    data = _read(path)
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    why = refusal(path, text, leaderboard)
    if why:
        raise OutputError(why)
    return hashlib.sha256(data).hexdigest()


def still_as_checked(path: Path, seen: str | None) -> None:
    """Raise OutputError when ``path`` is no longer what check_overwrite saw (``seen``): a file
    saved there while the build ran was never checked, so it is not replaced. A file removed since
    loses nothing."""
    if seen is None or not path.exists():
        return
    if seen == ABSENT:
        raise OutputError(f"-o {path}: was saved while the build ran (there was no file when the build "
                          f"checked it); refusing to overwrite it: {_FORCE}")
    if hashlib.sha256(_read(path)).hexdigest() != seen:
        raise OutputError(f"-o {path}: was changed while the build ran (after the build checked it); "
                          f"refusing to overwrite it: {_FORCE}")
