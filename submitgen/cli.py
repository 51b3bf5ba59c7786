"""Command line. This module only parses options and calls the library; every command's
docstring is its help text. Domain errors (``SubmitgenError``) are printed as one line with
``Error:`` and exit code 1, never as a traceback."""

from __future__ import annotations

import json
import sys

import click

from . import __version__
from .errors import SubmitgenError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SubmitgenError as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="submitgen")
def cli() -> None:
    """Compile AMDGPU kernels, validate the code object, and emit a single-file GPU MODE
    leaderboard submission (MI355X, gfx950)."""


def emit_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False))


# --- section: inspect (issue 2) ---

# --- section: toolchain, compile (issue 3) ---

# --- section: build (issues 4, 5) ---

# --- section: lint, test, bench (issue 6) ---

# --- section: diff (issue 9) ---


def main() -> None:
    cli.main(prog_name="submitgen")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
