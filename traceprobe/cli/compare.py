"""`traceprobe compare`: two traces side by side.

Thin: resolve the two traces, analyse each, hand the report dicts to
:func:`traceprobe.comparison.compare`, render (text or JSON) and write through
:mod:`traceprobe.output`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from traceprobe import output
from traceprobe.cli.options import output_options, pick_format
from traceprobe.errors import UsageError

FORMATS = ["text", "json"]


@click.command("compare")
@click.argument("trace_a", metavar="A")
@click.argument("trace_b", metavar="B")
@click.option("--step", type=click.IntRange(min=0), default=None, metavar="N",
              help="Compare ProfilerStep N of each trace.  [default: the whole traces]")
@output_options(FORMATS, what="the comparison")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Show the N largest changes (text).")
def compare(
    trace_a: str,
    trace_b: str,
    step: int | None,
    fmt: str | None,
    output_path: str,
    force: bool,
    top: int,
) -> None:
    """Compare two traces: speedup, per-GPU busy time, every overlap figure.

    A and B are trace files (.json or .json.gz), or directories holding one
    trace each. Speedup is A's span / B's span (above 1: B is faster), for the
    whole window and for the GPU span. Then the figures that changed most,
    ranked by fold change (halving and doubling rank alike), in plain words,
    and a table of every figure side by side.

    \b
    Example:
        traceprobe compare sequential.pt.trace.json.gz parallel.pt.trace.json.gz
        traceprobe compare out/two-devices/sequential out/two-devices/parallel --top 5
        traceprobe compare before.json.gz after.json.gz --step 3 -o diff.json

    \b
    Exit codes:
        0  the comparison was written
        2  usage error (bad option, a directory without exactly one trace, no such step)
        3  a trace could not be read or understood
        4  the output exists (use --force), is one of the traces, or cannot be written
    """
    from traceprobe import report as rp
    from traceprobe.comparison import compare as compare_reports
    from traceprobe.comparison import format_text
    from traceprobe.load import pipeline as loader

    fmt = pick_format(fmt, output_path, FORMATS)
    output.check_target(output_path, force=force)
    files = [_one_trace(p, loader.find_traces) for p in (trace_a, trace_b)]
    output.check_outputs([output_path], files, force=force)  # never over an input
    from traceprobe.cli.notices import notices

    if os.path.realpath(files[0]) == os.path.realpath(files[1]):  # load_many loads each once
        tl = loader.load(files[0])
        notices([tl])
        a = b = rp.analyze(tl, step=step).to_dict()
    else:
        tls = loader.load_many(files)
        notices(tls)
        a, b = (rp.analyze(t, step=step).to_dict() for t in tls)
    result = compare_reports(a, b)
    if fmt == "json":
        text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        text = format_text(result, top=top)
    output.write_text(output_path, text, force=force)


def _one_trace(path: str, find_traces: object) -> Path:
    found = list(find_traces(path))  # type: ignore[operator]
    if len(found) != 1:
        names = ", ".join(str(f) for f in found[:5]) + (", ..." if len(found) > 5 else "")
        raise UsageError(
            f"{path} holds {len(found)} traces ({names}); compare one trace with one trace: "
            "give the file itself"
        )
    return Path(found[0])
