"""`traceprobe verify`: verdicts on the claims of the recorded experiments.

Thin: resolve the folder and options, call :func:`traceprobe.verify.verify_dir`, render
with :mod:`traceprobe.render.verdicts`, write through :mod:`traceprobe.output`.
"""

from __future__ import annotations

from pathlib import Path

import click

from traceprobe import output

DEFAULT_DIR = "traceprobe-out"
_SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown"}


@click.command("verify")
@click.argument("directory", default=DEFAULT_DIR, required=False, metavar="[DIR]")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default=None,
              help="Output format.  [default: from the --output suffix (.json, .md), else text]")
@click.option("-o", "--output", "output_path", default=output.STDOUT, metavar="FILE",
              show_default=True, help="Write the verdicts to FILE ('-': standard output).")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Load N traces at once.  [default: one per core]")
def verify(directory: str, fmt: str | None, output_path: str, force: bool,
           jobs: int | None) -> None:
    """Say, for every recorded experiment, whether its claim holds, and why.

    DIR is the folder `traceprobe record` wrote (default traceprobe-out), or any folder
    above or inside it. For each variant: "holds", "partly holds" (the effect is there but
    short of the claim), "does not hold" or "cannot tell on this machine" (e.g. a two-GPU
    claim recorded on one GPU), one sentence with the
    figures behind it, and how the trace's spans compare with the wall-clock times the
    recording measured without the profiler. Thresholds: docs/FIGURES.md, "Verdicts".

    \b
    Example:
        traceprobe record --out runs/h200 && traceprobe verify runs/h200
        traceprobe verify runs/h200 --format markdown --output VERDICTS.md
        traceprobe verify sample_traces/h200x2 -o verdicts.json --force

    \b
    Exit codes:
        0  the verdicts were written (whatever they say)
        2  usage error (no such folder, or nothing recorded in it)
        3  a trace or metadata file could not be read (the message names it)
        4  the output exists (use --force), is a file of DIR, or cannot be written
    """
    from traceprobe.render.verdicts import render
    from traceprobe.verify import verify_dir

    fmt = fmt or _SUFFIX_FORMATS.get(Path(output_path).suffix.lower(), "text")
    output.check_target(output_path, force=force)  # refuse before loading anything
    if not output.is_stdout(output_path) and Path(directory).is_dir():
        # nothing under the recording is written over, whatever --force says
        output.check_not_input(output_path, (f for f in Path(directory).rglob("*") if f.is_file()))
    data = verify_dir(directory, jobs=jobs)
    output.write_text(output_path, render(data, fmt), force=force)
