"""`traceprobe annotate`: a copy of a trace with overlap and idle tracks, for trace viewers.

Thin: it checks the output before any work, then calls
:func:`traceprobe.annotate.annotate_file` (load → tracks → write) and says what it wrote.
"""

from __future__ import annotations

from pathlib import Path

import click

from traceprobe.cli.options import output_options


@click.command("annotate")
@click.argument("trace", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@output_options(None, what="the annotated copy (*.json, or *.json.gz for gzip)",
                force_help="Overwrite an existing --output file (never TRACE itself).",
                required=True)
def annotate(trace: Path, output_path: str, force: bool) -> None:
    """Copy TRACE with traceprobe's findings added as tracks.

    The copy holds every original event unchanged plus two new processes:
    "traceprobe: overlap" (both GPUs busy, copy hidden under kernels, two or
    more streams busy) and "traceprobe: GPU idle" (each idle gap, named after
    the host call that covered most of it). Open it in Perfetto
    (ui.perfetto.dev), chrome://tracing or TensorBoard's profiler trace view.

    \b
    Example:
        traceprobe annotate run.pt.trace.json.gz --output run.annotated.json.gz
        traceprobe annotate trace.json -o annotated.json --force

    \b
    Exit codes:
        0  the copy was written
        2  usage error (bad option or argument)
        3  the trace could not be read or understood
        4  the output exists (use --force), is TRACE itself, or cannot be written
    """
    from traceprobe.annotate import annotate_file, check_output
    from traceprobe.cli.notices import notices, say

    out = Path(output_path)
    check_output(out, trace, force=force)  # refuse before loading anything
    summary = annotate_file(trace, out, force=force)
    if summary.timeline is not None:
        notices([summary.timeline])
    say(
        f"wrote {summary.output}: {summary.events:,} events on {summary.tracks} new tracks "
        f"({summary.bytes:,} bytes)"
    )
