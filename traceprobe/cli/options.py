"""The options every command that writes shares, and their one check.

    @output_options(["text", "json", "markdown"])      # -f/--format, -o/--output, --force
    def cmd(..., fmt, output_path, force): ...
        fmt = pick_format(fmt, output_path, ["text", "json", "markdown"])
        output.check_outputs([output_path, *others], inputs, force=force)

:func:`traceprobe.output.check_outputs` is the one output check (exists without
--force, writable, never one of the inputs by name, symbolic or hard link; a
character device such as ``/dev/null`` is written as a stream, without --force).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from traceprobe import output

F = TypeVar("F", bound=Callable[..., Any])

SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html"}


def output_options(formats: Sequence[str] | None, *, what: str = "the report",
                   force_help: str = "Overwrite an existing --output file.",
                   required: bool = False) -> Callable[[F], F]:
    """``-f/--format`` (when ``formats``), ``-o/--output`` and ``--force``, in that order;
    ``required``: there is no standard output default (``annotate``)."""

    def decorate(f: F) -> F:
        f = click.option("--force", is_flag=True, help=force_help)(f)
        where = "FILE" if required else "FILE ('-': standard output"
        f = click.option(
            "-o", "--output", "output_path", metavar="FILE", required=required,
            default=None if required else output.STDOUT, show_default=not required,
            help=f"Write {what} to {where}; a device such as /dev/null is written in "
                 "place" + ("." if required else ")."))(f)
        if formats:
            suffixes = ", ".join(s for s, v in SUFFIX_FORMATS.items() if v in formats)
            f = click.option(
                "-f", "--format", "fmt", type=click.Choice(list(formats)), default=None,
                help=f"Output format.  [default: from the --output suffix ({suffixes}), "
                     "else text]")(f)
        return f

    return decorate


def pick_format(fmt: str | None, output_path: str, formats: Sequence[str]) -> str:
    """``--format`` as given, else the one the output's suffix names, else text."""
    if fmt:
        return fmt
    guess = SUFFIX_FORMATS.get(Path(output_path).suffix.lower(), "text")
    return guess if guess in formats else "text"
