"""docs/cli.md is what `python docs/make_cli.py` writes from the commands' `--help` (regenerate it
after changing an option or a help text); every command's short help fits `submitgen --help`'s
listing without click's `...`, and every example in a command's help names its options."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from submitgen.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _make_cli():
    spec = importlib.util.spec_from_file_location("make_cli", ROOT / "docs" / "make_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_is_what_make_cli_writes():
    made = _make_cli()
    assert (ROOT / "docs" / "cli.md").read_text() == made.render(), \
        "docs/cli.md is stale: run `python docs/make_cli.py`"
    assert all(f"## submitgen {name}\n" in made.render() for name in cli.commands)


@pytest.mark.parametrize("width", [80, 100])
def test_every_short_help_fits_the_listing(width):
    out = CliRunner().invoke(cli, ["--help"], terminal_width=width).output
    listing = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in listing] == sorted(cli.commands)  # one line each
    assert "..." not in "\n".join(listing)


def _examples(command: click.Command) -> list[list[str]]:
    lines = re.findall(r"^\s+submitgen (.+)$", command.epilog or "", re.M)
    return [shlex.split(line) for line in lines]


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_examples_that_name_its_options(name):
    command = cli.commands[name]
    examples = _examples(command)
    assert examples and all(args[0] == name for args in examples), name
    options = {o: p for p in command.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts}
    for args in examples:
        for i, token in enumerate(args[1:], 1):
            if token == "--":
                break
            flag = token.split("=", 1)[0]
            if re.fullmatch(r"--?[A-Za-z][\w-]*", flag) and not re.fullmatch(r"-[DIO]\w.*", token):
                assert flag in options, f"`{' '.join(args)}`: {name} has no option {flag}"
                param = options[flag]
                if isinstance(param.type, click.Choice) and not param.is_flag and i + 1 < len(args):
                    assert args[i + 1] in param.type.choices, (name, flag, args[i + 1])


def test_build_lists_its_options_in_sections():
    out = CliRunner().invoke(cli, ["build", "--help"], terminal_width=100).output
    heads = re.findall(r"^(\S[^:\n]*):$", out, re.M)
    assert heads[:4] == ["Output", "Kernels", "Target", "popcorn-cli's words"], heads
    section = out.split("\nOutput:\n", 1)[1].split("\n\n", 1)[0]
    assert "--compress [lzma|zlib]  How the embedded code objects are compressed" in section
