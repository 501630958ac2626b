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
from traceprobe.errors import ExpectationFailed, UsageError
from traceprobe.output import printable


def _help() -> str:
    names = "\n".join("        " + line for line in expect.names_help().splitlines())
    return f"""Fail (exit 1) when a trace misses an expectation; for CI.

    TRACE is a trace file (.json or .json.gz) or a directory of them; every
    expectation is checked on every trace (one trace per rank: all must pass).
    An expectation is NAME[DEVICE] OP NUMBER with OP one of >= > <= < == !=;
    without [DEVICE] the aggregate below is used. A value that is undefined
    (e.g. a copy fraction with no copies) fails. An expectations file holds one
    per line; '#' starts a comment.

    \b
    Example:
        traceprobe check run.pt.trace.json.gz --expect "cross_device_overlap >= 0.9"
        traceprobe check traces/ -e "utilization[0] >= 0.8" -e "hidden_copy_fraction > 0.5"
        traceprobe check run.json.gz --step 3 --expect-file ci.expect

    \b
    Names (fractions are 0..1, times in µs):
{names}

    \b
    Exit codes:
        0  every expectation held on every trace
        1  an expectation failed (each is named with its measured value)
        2  usage error (bad expectation, unknown name, no such step)
        3  a trace could not be read or understood
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
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Print the results as text lines or one JSON object.")
def check(
    paths: tuple[str, ...],
    exprs: tuple[str, ...],
    files: tuple[Path, ...],
    step: int | None,
    fmt: str,
) -> None:
    expectations = [expect.parse(e, source=None) for e in exprs]
    for f in files:
        expectations += expect.parse_file(f)
    if not expectations:
        raise UsageError(
            "nothing to check: give --expect EXPR or --expect-file FILE, "
            "e.g. --expect 'cross_device_overlap >= 0.9'"
        )

    from traceprobe import report as rp
    from traceprobe.cli.notices import notices
    from traceprobe.load import pipeline as loader

    traces = _resolve(paths, loader.find_traces)
    outcomes = []
    timelines = loader.load_many(traces)
    notices(timelines)
    for timeline in timelines:
        data = rp.analyze(timeline, step=step).to_dict()
        trace = str(data.get("trace") or timeline.source)
        outcomes.append((trace, expect.evaluate(data, expectations)))

    if fmt == "json":
        click.echo(printable(json.dumps(_as_json(outcomes, step), indent=2, ensure_ascii=False)))
    else:
        click.echo(printable(_as_text(outcomes, step)), nl=False)

    failed = [(t, [r for r in res if not r.passed]) for t, res in outcomes]
    failed = [(t, res) for t, res in failed if res]
    if failed:
        label = (lambda t: t) if len(outcomes) > 1 else (lambda t: "")
        raise ExpectationFailed(
            "; ".join(expect.failure_message(res, label=label(t)) for t, res in failed)
        )


def _resolve(paths: tuple[str, ...], find_traces: object) -> list[Path]:
    seen: dict[str, Path] = {}
    for p in paths:
        for f in find_traces(p):  # type: ignore[operator]
            seen.setdefault(os.path.realpath(f), Path(f))
    return list(seen.values())


def _as_text(outcomes: Outcomes, step: int | None) -> str:
    lines = []
    where = "" if step is None else f" (ProfilerStep#{step})"
    for trace, results in outcomes:
        lines.append(f"traceprobe check: {trace}{where}")
        width = max(len(str(r.expectation)) for r in results)
        for r in results:
            src = f"  [{r.expectation.source}]" if r.expectation.source else ""
            lines.append(
                f"  {r.verdict}  {str(r.expectation):<{width}}  measured {r.measured_text()}{src}"
            )
        n_failed = sum(not r.passed for r in results)
        lines.append(f"  {len(results) - n_failed} passed, {n_failed} failed")
    return "\n".join(lines) + "\n"


Outcomes = list[tuple[str, list[expect.Result]]]


def _as_json(outcomes: Outcomes, step: int | None) -> dict[str, object]:
    return {
        "schema": "traceprobe.check/1",
        "passed": all(r.passed for _, res in outcomes for r in res),
        "step": step,
        "traces": [
            {"trace": trace, "results": [r.to_dict() for r in res]} for trace, res in outcomes
        ],
    }
