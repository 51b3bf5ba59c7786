"""The click parameter type for a problem name: usage lines list the registry's problems when they
are shown, so a problem added by a module appears without touching the CLI (a
plug-in by its entry point's name: nothing is imported to show them)."""

from __future__ import annotations

from typing import Any

import click

from submitgen.problems.registry import usage_names


class ProblemName(click.ParamType):
    """A problem or leaderboard name, passed through as typed: the command resolves it, so an
    unknown name gets the registry's own error (which lists the known problems)."""

    name = "problem"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "{" + "|".join(usage_names()) + "}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value)


PROBLEM_NAME = ProblemName()
