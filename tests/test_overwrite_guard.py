"""The build replaces -o only when it is this leaderboard's submitgen file, unchanged since it was
written (its content matches the digest in its provenance line); anything else needs --force.
Builds embed the golden code object (no compile)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.render import provenance

TESTS = Path(__file__).resolve().parent
PREBUILT = ["--kernels", str(TESTS / "projects" / "mm_basic"), "--co", str(TESTS / "golden" / "mm_basic.co")]
FORCE = "pass --force to replace it, or -o another file"


def build(*extra: str):
    return CliRunner().invoke(cli, ["build", "mxfp4-mm", *PREBUILT, "-o", "s.py", *extra])


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> bytes:
    """One build's file (a refusal happens before anything is built: each test copies this one)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("first"))
        r = build()
        assert r.exit_code == 0, r.output
        return Path("s.py").read_bytes()


@pytest.fixture
def built(first, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_bytes(first)
    return tmp_path / "s.py"


def refused(path: Path, why: str) -> None:
    before = path.read_bytes()
    r = build()
    assert (r.exit_code, r.output) == (1, f"Error: {why}\n")
    assert path.read_bytes() == before  # left as it was


@pytest.mark.slow
def test_force_replaces_a_file_the_guard_refuses(built):
    built.write_text("print('my notes')\n")
    r = build("--force")
    assert r.exit_code == 0, r.output
    assert provenance.read(built.read_text()) is not None


@pytest.mark.slow
def test_the_digest_covers_the_whole_file(built):
    text = built.read_text()
    prov = provenance.read(text)
    assert prov.value("digest") == provenance.content_digest(text)
    line = text.splitlines()[prov.line - 1]
    assert line.endswith(f" digest={prov.value('digest')}  # noqa: E501")
    edited = text.replace("custom_kernel", "custom_kernel ", 1)
    assert provenance.content_digest(edited) != prov.value("digest")


@pytest.mark.slow
def test_its_own_unchanged_file_is_replaced(built):
    r = build("--reuse-output")
    assert r.exit_code == 0, r.output
    line = "#   submitgen build mxfp4-mm --kernels mm_basic --co mm_basic.co --reuse-output"
    assert line in built.read_text()


@pytest.mark.slow
def test_a_hand_edited_file_is_refused(built):
    built.write_text(built.read_text().replace("\nimport torch\n", "\nimport torch  # mine\n", 1))
    refused(built,
            "-o s.py: was changed since submitgen built it (its content no longer matches the digest its "
            f"provenance line records: edited by hand?); refusing to overwrite it: {FORCE}")


@pytest.mark.slow
def test_another_leaderboards_file_is_refused(built):
    built.write_text(built.read_text().replace("#!POPCORN leaderboard amd-mxfp4-mm",
                                               "#!POPCORN leaderboard amd-mixed-mla", 1))
    refused(built,
            "-o s.py: is a submission for amd-mixed-mla, and this build is for amd-mxfp4-mm; refusing to "
            f"overwrite it: {FORCE}")


@pytest.mark.slow
def test_a_submission_submitgen_did_not_write_is_refused(built):
    built.write_text((TESTS / "submissions" / "mm_zeros.py").read_text())
    refused(built,
            "-o s.py: exists and carries no submitgen provenance line (a submission for amd-mxfp4-mm, not "
            f"written by submitgen); refusing to overwrite it: {FORCE}")


@pytest.mark.slow
def test_any_other_file_is_refused(built):
    built.write_text("print('my notes')\n")
    refused(built,
            "-o s.py: exists and carries no submitgen provenance line (a file with no #!POPCORN "
            f"leaderboard line, not written by submitgen); refusing to overwrite it: {FORCE}")
    built.write_bytes(b"\xff\xfe binary")
    refused(built,
            f"-o s.py: exists and is not a text file submitgen wrote; refusing to overwrite it: {FORCE}")


@pytest.mark.slow
def test_a_file_without_a_digest_is_refused(built):
    text = built.read_text()
    digest = provenance.read(text).value("digest")
    built.write_text(text.replace(f" digest={digest}", "", 1))
    refused(built,
            "-o s.py: carries no content digest in its provenance line (written by an older submitgen), "
            f"so an edit since cannot be ruled out; refusing to overwrite it: {FORCE}")


@pytest.mark.slow
def test_a_file_saved_at_o_while_the_build_runs_is_not_replaced(tmp_path, monkeypatch):
    """Issue 47: a hand edit saved at -o 14 s into a build was gone when the build ended. -o is
    checked again just before the rename; here the file is saved while the build checks its objects."""
    import submitgen.pipeline as pipeline

    monkeypatch.chdir(tmp_path)
    real = pipeline.verify

    def save_then_verify(*args, **kwargs):
        Path("s.py").write_text("# my hand edit\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "verify", save_then_verify)
    r = build()
    assert (r.exit_code, r.output) == (
        1, "Error: -o s.py: was saved while the build ran (there was no file when the build checked it); "
           f"refusing to overwrite it: {FORCE}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.py"]  # no temp file left
    assert Path("s.py").read_text() == "# my hand edit\n"


def test_a_file_changed_after_the_check_is_not_replaced(tmp_path):
    from submitgen.errors import OutputError
    from submitgen.files import write_output
    from submitgen.pipeline.guard import ABSENT, still_as_checked

    out = tmp_path / "s.py"
    write_output(out, "first\n", before_replace=lambda: still_as_checked(out, ABSENT))
    seen = hashlib.sha256(b"first\n").hexdigest()
    write_output(out, "second\n", before_replace=lambda: still_as_checked(out, seen))
    assert out.read_text() == "second\n"
    with pytest.raises(OutputError) as e:
        write_output(out, "third\n", before_replace=lambda: still_as_checked(out, seen))
    assert str(e.value) == (f"-o {out}: was changed while the build ran (after the build checked it); "
                            f"refusing to overwrite it: {FORCE}")
    out.unlink()  # removed during the build: nothing is lost by writing
    write_output(out, "fourth\n", before_replace=lambda: still_as_checked(out, seen))
    assert out.read_text() == "fourth\n" and sorted(tmp_path.iterdir()) == [out]
    write_output(out, "forced\n", before_replace=lambda: still_as_checked(out, None))  # --force: no check
    assert out.read_text() == "forced\n"
