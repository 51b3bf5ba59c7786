"""`submitgen lint` on files written here, one per rule change, with the exact lines users see:
words built from constant pieces, the #!POPCORN header as popcorn-cli reads it, and lint without
torch."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import kernelguard_line

from submitgen.cli import cli
from submitgen.rules import BANNED_WORD

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
KERNEL = "\n\ndef custom_kernel(data):\n    return data\n"
WORD = BANNED_WORD.capitalize()
ROOT = Path(__file__).resolve().parent.parent


def lint(path: Path, *args: str):
    return CliRunner().invoke(cli, ["lint", str(path), *args], catch_exceptions=False)


def built(line: int, col: int, word: str) -> str:
    return (f"{line}: warning: banned-word [reviewer policy]: the expression at column {col} builds "
            f"{word!r}, built from constant pieces (chr(), concatenation, join, formatting, ...): the "
            "server's text check misses it, but the word is banned to keep kernels off queues of their "
            "own, and hiding it is grounds for disqualification (fix: use the default queue (pass 0 as "
            "the HIP queue argument); do not create or look up another queue)")


def test_queue_built_by_name_warns_as_a_reviewers_policy(tmp_path: Path):
    """The server's grep misses a word built at run time: no tool refuses the file, reviewers do."""
    sub = tmp_path / "submission.py"
    sub.write_text(HEADER + "import torch\n"
                   "q = getattr(torch.cuda, chr(83)+chr(116)+'ream')()\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 0
    assert result.output.splitlines()[:2] == [f"{sub}:" + built(4, 25, WORD), kernelguard_line(sub)]


def test_every_constant_form_is_folded(tmp_path: Path):
    forms = [
        "''.join(map(chr, [83, 116, 114, 101, 97, 109]))",
        "'maerts'[::-1]",
        "f\"{'St'}{'ream'}\"",
        "'%s%s' % ('St', 'ream')",
        "'{}{}'.format('St', 'ream')",
        "''.join(chr(c) for c in (83, 116, 114, 101, 97, 109))",
        "bytes([83, 116, 114, 101, 97, 109]).decode()",
        "'ST' 'REAM'.lower().capitalize()",
        "'S\\x74ream'",
        "codecs.decode('Fgernz', 'rot13')",
        "base64.b64decode('U3RyZWFt').decode()",
        "'S-t-r-e-a-m'.replace('-', '')",
    ]
    sub = tmp_path / "submission.py"
    sub.write_text(HEADER + "import base64, codecs\n" + "".join(f"x{i} = {f}\n" for i, f in enumerate(forms))
                   + "a = 'Str'\nb = a + 'eam'\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 0
    lines = [f"{sub}:" + built(4 + i, 6 if i < 10 else 7, BANNED_WORD if i == 1 else WORD)
             for i in range(len(forms))]
    assert result.output.splitlines()[:-1] == lines + [f"{sub}:" + built(4 + len(forms) + 1, 5, WORD),
                                                      kernelguard_line(sub)]


def test_hsa_queue_built_by_name(tmp_path: Path):
    sub = tmp_path / "submission.py"
    sub.write_text(HEADER + "import ctypes\nhsa = ctypes.CDLL('libhsa-runtime64.so')\n"
                   "make = getattr(hsa, 'hsa_queue_' + 'create')\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 0
    assert result.output.splitlines()[:-1] == [
        f"{sub}:5: warning: hsa-queue [reviewer policy]: the expression at column 21 builds "
        f"'hsa_queue_create', built from "
        "constant pieces (chr(), concatenation, join, formatting, ...): a call by that name creates an "
        "HSA queue of its own, outside torch's timing events, which the organizers disqualify (fix: "
        "launch with hipModuleLaunchKernel on the default queue (0) so the leaderboard's events time "
        "the kernel)", kernelguard_line(sub)]


def test_plain_strings_and_unknown_values_pass(tmp_path: Path):
    sub = tmp_path / "submission.py"
    sub.write_text(HEADER + "import os\nname = os.environ.get('X', 'S') + 'tr'\nq = 'que' + 'ue'\n"
                   "x = x + 'a'\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{kernelguard_line(sub)}\n{sub}: lint passed; estimated payload ")


def test_header_after_a_docstring_passes_with_warnings(tmp_path: Path):
    """popcorn-cli reads #!POPCORN from any comment line and sends the leaderboard itself."""
    sub = tmp_path / "submission.py"
    sub.write_text('"""MLA decode, torch only."""\nimport torch\n# notes\n'
                   "#!POPCORN leaderboard amd-mixed-mla\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[:2] == [
        f"{sub}:4: warning: header [kernelbot]: this directive is not in a comment block at the top of the "
        f"file "
        "(its first line is not a comment): popcorn-cli reads it and sends its value with the "
        "request, but the server reads directives only from the first comment block (fix: move "
        "'#!POPCORN leaderboard amd-mixed-mla' to the top of the file, before any code or blank line)",
        f"{sub}:4: warning: header [popcorn-cli]: no '#!POPCORN gpu <GPU>' directive: popcorn-cli then needs "
        f"--gpu "
        "(fix: add '#!POPCORN gpu MI355X' after the leaderboard line, or pass --gpu MI355X to "
        "popcorn-cli)"]
    assert out[2] == kernelguard_line(sub)
    assert out[3].startswith(f"{sub}: lint passed; estimated payload ")
    assert " chars for amd-mixed-mla " in out[3]
    assert len(out) == 4


def test_header_missing_names_the_files_own_leaderboard(tmp_path: Path):
    sub = tmp_path / "submission.py"
    sub.write_text("# !POPCORN leaderboard amd-moe-mxfp4\n#!POPCORN gpu MI355X\nimport torch\n" + KERNEL)
    result = lint(sub)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{sub}:1: header [popcorn-cli]: '# !POPCORN leaderboard amd-moe-mxfp4' is not read as a directive: "
        "popcorn-cli wants '#!POPCORN' (exactly, at the start of the line) as the first word (fix: "
        "write it as '#!POPCORN leaderboard amd-moe-mxfp4')",
        f"{sub}:1: header [popcorn-cli]: no '#!POPCORN leaderboard <name>' directive: popcorn-cli reads it "
        "from a comment line that starts with '#!POPCORN' (fix: add '#!POPCORN leaderboard amd-moe-mxfp4' as "
        "the first line, or pass --problem)", kernelguard_line(sub)]
