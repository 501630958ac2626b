"""Renderers: a report (one trace's, or several traces') turned into text.

    from traceprobe.render import render, formats
    text = render(report, "markdown", top=10)

Every renderer has one signature (pyinstrument's ``Renderer.render(session)``) and takes
the report object itself, integer nanoseconds inside::

    fn(report: Report | MultiReport | RanksReport, *, top: int | None = None,
       color: bool = False) -> str

It reads the ns-exact fields and writes them in display units only in the cell
(:mod:`traceprobe.render.units`). Only the JSON renderer (:mod:`.jsonfmt`) turns a report
into the dict of docs/REPORT_SCHEMA.md (``to_dict``); ``tests/test_architecture.py`` fails
if another renderer does. ``top`` caps the top-kernel and top-op rows (None: the format's
default); ``color`` asks for terminal colour where the format has any. ``html`` also takes
``timelines`` (the traces' Timelines, in the report's order) to draw their timeline
picture: ``render(report, "html", timelines=[tl])``; without them the page has the tables
only. A ``RanksReport`` is the many-rank summary (``traceprobe.ranks/1``: plain data, as
the ranks engines reduce it) whose ``rank_report`` is a Report (or None).

:func:`render` also takes a list of Reports (side by side, not compared: a MultiReport
without cross-trace figures) and a saved report dict (read back by ``Report.from_dict``
/ ``MultiReport.from_dict``; the JSON renderer writes a dict as it is): :func:`as_report`.
Formats are imported only when used; :func:`register` adds one.
:mod:`traceprobe.render.csv` (the frames as CSV files) writes a directory, not a
string, so it is not a format here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from traceprobe.errors import UsageError

Renderer = Callable[..., str]

# name -> module holding `render`; imported on first use
_BUILTIN: dict[str, str] = {
    "text": "traceprobe.render.text",
    "json": "traceprobe.render.jsonfmt",
    "markdown": "traceprobe.render.markdown",
    "html": "traceprobe.render.html",
}
_registered: dict[str, Renderer] = {}


def register(name: str, fn: Renderer) -> None:
    """Make ``fn`` available as format ``name`` (replacing a format of that name)."""
    _registered[name] = fn


def formats() -> list[str]:
    """Format names: the built-in ones first, in a fixed order, then registered ones."""
    return list(_BUILTIN) + sorted(set(_registered) - set(_BUILTIN))


def get(fmt: str) -> Renderer:
    if fmt in _registered:
        return _registered[fmt]
    if fmt in _BUILTIN:
        fn: Renderer = importlib.import_module(_BUILTIN[fmt]).render
        return fn
    raise UsageError(f"Unknown format {fmt!r}; choose one of: {', '.join(formats())}")


def render(report: Any, fmt: str = "text", *, top: int | None = None, color: bool = False,
           timelines: Sequence[Any] | None = None) -> str:
    """Render a Report/MultiReport, a list of Reports, the many-rank summary or a report
    dict as format ``fmt``; ``timelines`` (for ``html``): the traces' Timelines."""
    fn = get(fmt)
    if fmt != "json":  # the JSON renderer writes a dict as it is, an object by its to_dict
        report = as_report(report)
    if timelines is not None:
        return fn(report, top=top, color=color, timelines=timelines)
    return fn(report, top=top, color=color)


def as_report(report: Any) -> Any:
    """What the renderers take: a Report or MultiReport as is; a list of them as one
    MultiReport (``cross_trace`` None); a report dict read back (``from_dict``); the
    many-rank summary with its ``rank_report`` read back."""
    from traceprobe.report.model import MultiReport, Report

    if isinstance(report, (Report, MultiReport)):
        return report
    if isinstance(report, Mapping):
        if "ranks" in report:
            rr = report.get("rank_report")
            return {**report, "rank_report": rr if rr is None or isinstance(rr, Report)
                    else Report.from_dict(rr)}
        if "traces" in report and "trace" not in report:
            return MultiReport.from_dict(report)
        return Report.from_dict(report)
    if isinstance(report, Sequence) and not isinstance(report, (str, bytes)):
        items = [as_report(r) for r in report]
        flat = [r for x in items for r in (x.reports if isinstance(x, MultiReport) else [x])]
        return MultiReport(tuple(flat), None)
    raise TypeError(f"not a report: {type(report).__name__}")
