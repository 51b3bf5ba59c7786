"""Command line. This module only parses options and calls the library; every command's
docstring is its help text. Domain errors (``SubmitgenError``) are printed as one line with
``Error:`` and exit code 1, never as a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
@cli.command()
@click.argument("problem")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("submission.py"),
              show_default=True, help="Where to write the submission.")
@click.option("--kernels", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Kernel project folder (device sources + launch.py). Default: the bundled one.")
@click.option("--co", "code_objects", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Embed this prebuilt code object (or bundle) instead of compiling. Repeatable.")
@click.option("--arch", help="Target processor: gfx950 (default), gfx942; sm_90 with --target cuda.")
@click.option("--target", type=click.Choice(["amd", "cuda"]), default="amd", show_default=True,
              help="amd: HIP code object for MI355X. cuda: a cubin for NVIDIA GPUs (same kernel sources).")
@click.option("--compress", type=click.Choice(["lzma", "zlib"]), default="lzma", show_default=True)
@click.option("--no-fallback", is_flag=True, help="Fail at import instead of running the torch fallback.")
@click.option("--launcher", type=click.Choice(["ctypes"]), default="ctypes", show_default=True)
@click.option("--compiler", help="Compiler to use (default: discovered; see `submitgen toolchain`).")
@click.option("--no-cache", is_flag=True, help="Recompile even when the cache holds the result.")
def build(problem, output, kernels, code_objects, arch, target, compress, no_fallback, launcher, compiler, no_cache):
    """Compile a kernel project, check it against the code object and the leaderboard rules, and
    write the single-file submission for PROBLEM (mxfp4-mm or mixed-mla).

    \b
    Examples:
        submitgen build mxfp4-mm
        submitgen build mixed-mla -o mla.py --kernels my_kernels/
        submitgen build mxfp4-mm --co gemm.co --kernels my_kernels/
    """
    from .build import BuildOptions, format_summary
    from .build import build as run_build

    result = run_build(BuildOptions(
        problem=problem, output=output, kernels=kernels, code_objects=tuple(code_objects), arch=arch,
        target=target, compress=compress, allow_fallback=not no_fallback, launcher=launcher,
        compiler=compiler, use_cache=not no_cache,
    ))
    click.echo(format_summary(result))



# --- section: lint, test, bench (issue 6) ---

# --- section: diff (issue 9) ---


def main() -> None:
    cli.main(prog_name="submitgen")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
