"""Writes docs/cli.md, the CLI reference, from the `--help` of submitgen and of every command:
`python docs/make_cli.py` (tests/test_cli_doc.py fails when docs/cli.md is not what this writes)."""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

from submitgen.cli import cli

OUT = Path(__file__).resolve().parent / "cli.md"
WIDTH = 100


def _help(*args: str) -> str:
    r = CliRunner().invoke(cli, [*args, "--help"], terminal_width=WIDTH, prog_name="submitgen")
    if r.exit_code != 0:
        raise SystemExit(f"submitgen {' '.join(args)} --help exited {r.exit_code}: {r.output}")
    return r.output.rstrip()


def render() -> str:
    parts = ["# Command reference", "",
             "Generated from `--help` by `python docs/make_cli.py`; do not edit by hand.",
             "Usage errors exit 2, other errors print one `Error:` line and exit 1.", "",
             "## submitgen", "", "```", _help(), "```"]
    for name in sorted(cli.commands):
        parts += ["", f"## submitgen {name}", "", "```", _help(name), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT}\n")
