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
from traceprobe.cli.ranks import storage_option
from traceprobe.cli.window import window_option
from traceprobe.errors import UsageError

FORMATS = ["text", "json"]


HELP = """Compare two traces: speedup, per-GPU busy time, every overlap figure.

    A and B are trace files (.json or .json.gz), or directories holding one
    trace each. First the steps: B's median step against A's (--step-stat),
    with p90 and the shortest, and per sample with --batch-size; then the
    speedup over the whole window and the GPU span. Then the figures that
    changed most, ranked by the step time at stake (a breakdown part, phase
    or idle cause per step first), each judged against the step (a worse
    figure in a faster step is no regression), and every figure side by side.

    \b
    Example:
        traceprobe compare sequential.pt.trace.json.gz parallel.pt.trace.json.gz
        traceprobe compare out/two-devices/sequential out/two-devices/parallel --top 5
        traceprobe compare before.json.gz after.json.gz --step 3 -o diff.json
        traceprobe compare bs64.json.gz bs256.json.gz --batch-size 64,256 --step-stat p90

    \b
    Exit codes:
        0  the comparison was written
        2  usage error (bad option, a directory without exactly one trace, no such step)
        3  a trace could not be read or understood
        4  the output exists (use --force), is one of the traces, or cannot be written
"""


@click.command("compare", help=HELP)
@click.argument("trace_a", metavar="A")
@click.argument("trace_b", metavar="B")
@click.option("--step", type=click.IntRange(min=0), default=None, metavar="N",
              help="Compare ProfilerStep N of each trace.  [default: the whole traces]")
@window_option
@click.option("--step-stat", type=click.Choice(["median", "p90", "mean"]), default="median",
              show_default=True, help="The step statistic the step speedup and the verdicts "
              "use.")
@click.option("--batch-size", "batch", default=None, metavar="N[,M]",
              help="Samples per step of A (and of B, if it differs): adds per-sample figures.")
@output_options(FORMATS, what="the comparison")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Show the N largest changes (text).")
@storage_option
def compare(
    trace_a: str,
    trace_b: str,
    step: int | None,
    window: str,
    step_stat: str,
    batch: str | None,
    fmt: str | None,
    output_path: str,
    force: bool,
    top: int,
    storage_option: tuple[str, ...] = (),
) -> None:
    from traceprobe import report as rp
    from traceprobe.comparison import compare as compare_reports
    from traceprobe.comparison import format_text
    from traceprobe.load import pipeline as loader
    from traceprobe.urls import is_url, parse_options

    fmt = pick_format(fmt, output_path, FORMATS)
    sizes = _batch_sizes(batch)
    so = parse_options(storage_option) or None
    output.check_target(output_path, force=force, storage_options=so)
    files = [_one_trace(p, loader.find_traces, so) for p in (trace_a, trace_b)]
    output.check_outputs([output_path], files, force=force)  # never over an input
    from traceprobe.cli.notices import notices

    def same(f: Path | str) -> str:
        return str(f) if is_url(str(f)) else os.path.realpath(f)

    if same(files[0]) == same(files[1]):  # load_many loads each once
        tl = loader.load(files[0], so)
        notices([tl])
        a = b = rp.analyze(tl, step=step, window=window).to_dict()
    else:
        tls = loader.load_many(files, storage_options=so)
        notices(tls)
        a, b = (rp.analyze(t, step=step, window=window).to_dict() for t in tls)
    result = compare_reports(a, b, step_stat=step_stat, batch=sizes)
    if fmt == "json":
        text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        text = format_text(result, top=top)
    output.write_text(output_path, text, force=force, storage_options=so)


def _batch_sizes(text: str | None) -> tuple[int | None, int | None]:
    """``--batch-size N`` (both) or ``N,M`` (A, B)."""
    if text is None:
        return None, None
    parts = [p.strip() for p in text.split(",")]
    try:
        sizes = [int(p) for p in parts]
    except ValueError:
        sizes = []
    if len(sizes) not in (1, 2) or min(sizes) < 1:
        raise UsageError(f"--batch-size takes N or N,M (samples per step, 1 or more), "
                         f"not {text!r}")
    return sizes[0], sizes[-1]


def _one_trace(path: str, find_traces: object, storage_options: object = None) -> Path | str:
    """The one trace ``path`` names (a URL stays a string)."""
    found = list(find_traces(path, storage_options))  # type: ignore[operator]
    if len(found) != 1:
        names = ", ".join(str(f) for f in found[:5]) + (", ..." if len(found) > 5 else "")
        raise UsageError(
            f"{path} holds {len(found)} traces ({names}); compare one trace with one trace: "
            "give the file itself"
        )
    return found[0] if isinstance(found[0], str) else Path(found[0])
