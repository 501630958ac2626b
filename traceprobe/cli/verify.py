"""`traceprobe verify`: verdicts on the claims of the recorded experiments.

Thin: resolve the folder and options, call :func:`traceprobe.verify.verify_dir`, render
with :mod:`traceprobe.render.verdicts`, write through :mod:`traceprobe.output`.
"""

from __future__ import annotations

from pathlib import Path

import click

from traceprobe import output
from traceprobe.cli.options import output_options, pick_format

DEFAULT_DIR = "traceprobe-out"
FORMATS = ["text", "json", "markdown"]


@click.command("verify")
@click.argument("directory", default=DEFAULT_DIR, required=False, metavar="[DIR]")
@output_options(FORMATS, what="the verdicts")
@click.option("--skip-bad", is_flag=True,
              help="Exit 0 when some variants cannot be read (each bad file is still named "
              "on stderr and its variant left out of the verdicts).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Load N traces at once.  [default: one per core]")
def verify(directory: str, fmt: str | None, output_path: str, force: bool,
           skip_bad: bool, jobs: int | None) -> None:
    """Say, for every recorded experiment, whether its claim holds, and why.

    DIR is the folder `traceprobe record` wrote (default traceprobe-out), or any folder
    above or inside it. For each variant: "holds", "partly holds" (the effect is there but
    short of the claim), "does not hold" or "cannot tell on this machine" (e.g. a two-GPU
    claim recorded on one GPU), one sentence with the
    figures behind it, and how the trace's spans compare with the wall-clock times the
    recording measured without the profiler. Thresholds: docs/FIGURES.md, "Verdicts".

    A variant whose metadata or traces cannot be read (a trace cut beyond salvage, a
    file that is no trace) is named on stderr, one line per bad file, and left out;
    the other variants get their verdicts (exit 3 unless --skip-bad).

    \b
    Example:
        traceprobe record --out runs/h200 && traceprobe verify runs/h200
        traceprobe verify runs/h200 --format markdown --output VERDICTS.md
        traceprobe verify sample_traces/h200x2 -o verdicts.json --force

    \b
    Exit codes:
        0  the verdicts were written (whatever they say)
        2  usage error (no such folder, or nothing recorded in it)
        3  a trace or metadata file could not be read (each is named on stderr; the
           verdicts of the other variants are still written unless none could be read);
           0 with --skip-bad when at least one variant was read
        4  the output exists (use --force), is a file of DIR, or cannot be written
    """
    from traceprobe.cli.notices import say
    from traceprobe.errors import TraceError
    from traceprobe.render.verdicts import render
    from traceprobe.verify import verify_dir

    fmt = pick_format(fmt, output_path, FORMATS)
    output.check_target(output_path, force=force)  # refuse before loading anything
    inputs: list[Path] = []
    if not output.is_stdout(output_path) and Path(directory).is_dir():
        # nothing under the recording is written over, whatever --force says
        inputs = [f for f in Path(directory).rglob("*") if f.is_file()]
    output.check_outputs([output_path], inputs, force=force)
    errors: list[TraceError] = []
    data = verify_dir(directory, jobs=jobs, errors=errors)
    for e in errors:
        say(f"traceprobe: error: {e}")
    for line in dict.fromkeys(n for v in data["verdicts"] for n in v.get("notices") or ()):
        say(f"traceprobe: {line}")  # salvaged or read leniently
    if not data["verdicts"] and errors:
        raise click.exceptions.Exit(TraceError.exit_code)  # nothing could be read
    output.write_text(output_path, render(data, fmt), force=force)
    if errors and not skip_bad:
        raise click.exceptions.Exit(TraceError.exit_code)
