"""`traceprobe whatif`: replay a trace under what-if scenarios and predict each step.

Thin: load the trace, hand it to :func:`traceprobe.graph.whatif`, render (text, JSON or
Markdown) and write through :mod:`traceprobe.output`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

from traceprobe import output
from traceprobe.cli.options import output_options, pick_format
from traceprobe.cli.ranks import storage_option
from traceprobe.errors import UsageError

if TYPE_CHECKING:
    from traceprobe.timeline import Timeline

FORMATS = ["text", "json", "markdown"]
WINDOW_HELP = ("'steps': a prediction per ProfilerStep (the whole trace when it has none); "
               "'profiler' or 'events': one prediction of the whole replayed trace (the "
               "replay covers every event).  [default: steps]")


@click.command("whatif")
@click.argument("trace")
@click.option("-s", "--scenario", "scenarios", multiple=True, metavar="S",
              help="A change to replay; repeat to compose (in order). One of: "
                   "copies-on-side-stream, no-host-sync, comm-overlap, no-launch-overhead, "
                   "cuda-graph, dataloader, dataloader:workers=N, no-profiler, "
                   "no-profiler:NS, kernels:REGEX=F, spread:REGEX=N, precision:tf32, "
                   "precision:bf16, roof:REGEX=S.")
@click.option("--keep-profiler", is_flag=True,
              help="Keep the profiler's own host cost in the prediction (by default the "
                   "no-profiler scenario, calibrated or estimated, is applied to both the "
                   "measured and the predicted step: both as if run unprofiled).")
@click.option("--step", default="all", show_default=True, metavar="N|all",
              help="ProfilerStep N, or every step (the whole trace when it has none).")
@click.option("--window", type=click.Choice(["steps", "profiler", "events"]), default="steps",
              metavar="steps|profiler|events", help=WINDOW_HELP)
@output_options(FORMATS, what="the prediction")
@storage_option
def whatif(trace: str, scenarios: tuple[str, ...], keep_profiler: bool, step: str, window: str,
           fmt: str | None, output_path: str, force: bool,
           storage_option: tuple[str, ...] = ()) -> None:
    """Predict each step's time if the trace's program changed: replay its dependency
    graph with the measured durations, under the scenarios given.

    The prediction is for the loop run without the profiler: no-profiler removes the
    profiler's host cost per CPU event (calibrated on the loop's measured host time if the
    trace has it, else estimated; the notes say how much) from both the measured step and the
    changed one, so the speedup is the change's alone; --keep-profiler keeps it (to compare
    with another profiled trace), as does giving no-profiler[:NS] yourself.
    With no --scenario and --keep-profiler it replays the trace unchanged (which
    reproduces it) and shows the critical path. The JSON is schema traceprobe.whatif/1
    (docs/WHATIF.md).

    \b
    Example:
        traceprobe whatif seq.pt.trace.json.gz --scenario no-host-sync
        traceprobe whatif t.json.gz -s copies-on-side-stream -s 'kernels:gemm=2' --step 3
        traceprobe whatif t.json.gz -s 'spread:elementwise=2' -o whatif.json
        traceprobe whatif t.json.gz --keep-profiler   # the profiled step, replayed
        traceprobe whatif s3://bucket/run/rank0.pt.trace.json.gz -s cuda-graph \
            --storage-option endpoint_url=http://127.0.0.1:9000

    \b
    Exit codes:
        0  the prediction was written
        2  usage error (unknown scenario, bad regex or factor, no such step)
        3  the trace could not be read or understood
        4  the output exists (use --force), is the trace, or cannot be written
    """
    from traceprobe.cli.notices import input_lines, notices
    from traceprobe.graph import whatif as run_whatif
    from traceprobe.graph.scenarios import PROFILER, parse, unprofiled
    from traceprobe.render.whatif import render
    from traceprobe.urls import parse_options

    fmt = pick_format(fmt, output_path, FORMATS)
    for s in scenarios:
        parse(s)  # usage errors before the (slow) load
    if step != "all" and not step.strip().isdigit():
        raise UsageError(f"--step must be a ProfilerStep number or 'all', not {step!r}")
    so = parse_options(storage_option) or None
    tl = _load_one(trace, output_path, force, so)
    notices([tl])
    which: str | None = None if step == "all" and window != "steps" else step
    base = unprofiled([], keep_profiler) if unprofiled(scenarios, keep_profiler) != list(
        scenarios) else []  # no-profiler on both sides, unless kept or asked for as the change
    result = run_whatif(tl, list(scenarios), step=which, baseline=base).to_dict()
    default = [f"{PROFILER} applied to both sides by default: the measured and the predicted "
               "step as if run unprofiled, the speedup the change's alone (--keep-profiler "
               "keeps the profiler's cost)"] if base else []
    result["notes"] = [*input_lines(tl), *default, *(result.get("notes") or [])]
    if fmt == "json":  # json.dumps's text, written as it is made (--step all's is ~30 MB)
        chunks = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False).iterencode(
            result)
        output.write_pieces(output_path, _batches([chunks, ["\n"]]), force=force,
                            storage_options=so)
        return
    output.write_text(output_path, render(result, fmt), force=force, storage_options=so)


def _load_one(trace: str, output_path: str, force: bool,
              so: dict[str, Any] | None) -> Timeline:
    """The one trace ``trace`` names, loaded, after the output is checked (never the trace)."""
    from traceprobe.load import pipeline as loader

    output.check_target(output_path, force=force, storage_options=so)
    found = loader.find_traces(trace, so)
    if len(found) != 1:
        raise UsageError(f"{trace} holds {len(found)} traces; give one trace file")
    output.check_outputs([output_path], found, force=force)  # never over the trace
    return loader.load(found[0], so)


def _batches(parts: list[Iterable[str]], size: int = 1 << 20) -> Iterator[bytes]:
    """The strings of ``parts`` concatenated, as UTF-8 pieces of about ``size`` characters."""
    buf: list[str] = []
    held = 0
    for part in parts:
        for chunk in part:
            buf.append(chunk)
            held += len(chunk)
            if held >= size:
                yield "".join(buf).encode("utf-8")
                buf, held = [], 0
    if buf:
        yield "".join(buf).encode("utf-8")
