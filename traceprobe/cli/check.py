"""`traceprobe check`: expectations on traces, for CI; exit 1 when one fails.

Thin: parse the expectations (before loading anything, so a typo costs nothing),
load and analyse each trace, hand the report dict to :func:`traceprobe.expect.evaluate`,
print one line per expectation and raise ExpectationFailed naming the failures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from traceprobe import expect
from traceprobe.cli.ranks import storage_option
from traceprobe.cli.window import window_option
from traceprobe.errors import ExpectationFailed, UsageError
from traceprobe.output import printable


def _help() -> str:
    names = "\n".join("        " + line for line in expect.names_help().splitlines())
    return f"""Fail (exit 1) when a trace misses an expectation; for CI.

    TRACE is a trace file (.json or .json.gz) or a directory of them; every
    expectation is checked on every trace (one trace per rank: all must pass).
    An expectation is NAME[DEVICE] OP VALUE with OP one of >= > <= < == !=;
    without [DEVICE] the aggregate below is used. VALUE is a number, a quoted
    word (bound_by), or [N *] baseline.NAME [+ N]: the same name read from the
    --baseline report. A value that is undefined (e.g. a copy fraction with no
    copies) fails. An expectations file holds one per line; '#' starts a comment.

    \b
    Example:
        traceprobe check run.pt.trace.json.gz --expect "cross_device_overlap >= 0.9"
        traceprobe check traces/ -e "utilization[0] >= 0.8" -e "hidden_copy_fraction > 0.5"
        traceprobe check run.json.gz --step 3 --expect-file ci.expect
        traceprobe check new.json.gz --baseline main.json.gz \\
            -e "step_p50_us <= 1.05 * baseline.step_p50_us" -e 'bound_by == "kernel"'

    \b
    Names (fractions are 0..1, times in µs):
{names}

    \b
    Exit codes:
        0  every expectation held on every trace
        1  an expectation failed (each is named with its measured value)
        2  usage error (bad expectation, unknown name, no such step, baseline. without --baseline)
        3  a trace (or the --baseline) could not be read or understood
    """


@click.command("check", help=_help())
@click.argument("paths", nargs=-1, required=True, metavar="TRACE...")
@click.option("-e", "--expect", "exprs", multiple=True, metavar="EXPR",
              help="An expectation, e.g. 'utilization[0] >= 0.8' (repeat for several).")
@click.option("--expect-file", "files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="FILE",
              help="Read expectations from FILE, one per line ('#' comments).")
@click.option("--step", type=click.IntRange(min=0), default=None, metavar="N",
              help="Check ProfilerStep N's window only.  [default: the whole trace]")
@window_option
@click.option("--baseline", "baseline_path", default=None, metavar="TRACE_OR_JSON",
              help="The report that 'baseline.NAME' reads: a trace (analysed with the same "
              "--step and --window) or a report JSON (traceprobe analyze -f json).")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Print the results as text lines or one JSON object.")
@storage_option
def check(
    paths: tuple[str, ...],
    exprs: tuple[str, ...],
    files: tuple[Path, ...],
    step: int | None,
    window: str,
    baseline_path: str | None,
    fmt: str,
    storage_option: tuple[str, ...] = (),
) -> None:
    expectations = [expect.parse(e, source=None) for e in exprs]
    for f in files:
        expectations += expect.parse_file(f)
    if not expectations:
        raise UsageError(
            "nothing to check: give --expect EXPR or --expect-file FILE, "
            "e.g. --expect 'cross_device_overlap >= 0.9'"
        )

    if expect.needs_baseline(expectations) and baseline_path is None:
        first = next(e for e in expectations if e.baseline is not None)
        raise UsageError(f"{first} reads the baseline: pass --baseline TRACE_OR_JSON "
                         "(a trace, or a report JSON of traceprobe analyze -f json)")

    from traceprobe import report as rp
    from traceprobe.cli.notices import input_lines, notices
    from traceprobe.expect.baseline import read_baseline
    from traceprobe.load import pipeline as loader
    from traceprobe.urls import parse_options

    so = parse_options(storage_option) or None
    traces = _resolve(paths, loader.find_traces, so)
    baseline = (None if baseline_path is None
                else read_baseline(baseline_path, step=step, window=window))
    outcomes = []
    timelines = loader.load_many(traces, storage_options=so)
    notices(timelines)
    for timeline in timelines:
        data = rp.analyze(timeline, step=step, window=window).to_dict()
        trace = str(data.get("trace") or timeline.source)
        outcomes.append((trace, expect.evaluate(data, expectations, baseline=baseline),
                         input_lines(timeline)))

    if fmt == "json":
        click.echo(printable(json.dumps(_as_json(outcomes, step), indent=2, ensure_ascii=False)))
    else:
        click.echo(printable(_as_text(outcomes, step)), nl=False)

    n_failed = sum(not r.passed for _, res, _ in outcomes for r in res)
    if n_failed:  # each failure is listed above, once: the error line only counts them
        n_all = sum(len(res) for _, res, _ in outcomes)
        bad = [t for t, res, _ in outcomes if not all(r.passed for r in res)]
        where = f", on {', '.join(bad)}" if len(outcomes) > 1 else ""
        raise ExpectationFailed(f"{n_failed} of {n_all} expectation"
                                f"{'' if n_all == 1 else 's'} failed{where} (listed above)")


def _resolve(paths: tuple[str, ...], find_traces: object,
             storage_options: object = None) -> list[Path | str]:
    """Every trace the paths name, each once (a URL stays a string)."""
    from traceprobe.urls import is_url

    seen: dict[str, Path | str] = {}
    for p in paths:
        for f in find_traces(p, storage_options):  # type: ignore[operator]
            seen.setdefault(str(f) if is_url(str(f)) else os.path.realpath(f),
                            f if isinstance(f, str) else Path(f))
    return list(seen.values())


def _as_text(outcomes: Outcomes, step: int | None) -> str:
    lines = []
    where = "" if step is None else f" (ProfilerStep#{step})"
    for trace, results, read in outcomes:
        lines.append(f"traceprobe check: {trace}{where}")
        lines += [f"  {line}" for line in read]  # what the loader salvaged or read leniently
        width = max(len(str(r.expectation)) for r in results)
        for r in results:
            src = f"  [{r.expectation.source}]" if r.expectation.source else ""
            lines.append(
                f"  {r.verdict}  {str(r.expectation):<{width}}  measured {r.measured_text()}{src}"
            )
        n_failed = sum(not r.passed for r in results)
        lines.append(f"  {len(results) - n_failed} passed, {n_failed} failed")
    return "\n".join(lines) + "\n"


Outcomes = list[tuple[str, list[expect.Result], list[str]]]  # trace, results, input notes


def _as_json(outcomes: Outcomes, step: int | None) -> dict[str, object]:
    return {
        "schema": "traceprobe.check/1",
        "passed": all(r.passed for _, res, _ in outcomes for r in res),
        "step": step,
        "traces": [
            {"trace": trace, "results": [r.to_dict() for r in res], "input_notes": read}
            for trace, res, read in outcomes
        ],
    }
