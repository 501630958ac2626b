"""Renderers: a report (one trace's, or several traces') turned into text.

    from traceprobe.render import render, formats
    text = render(report, "markdown", top=10)

Every renderer has one signature and reads only the report dict of
docs/REPORT_SCHEMA.md (a ``Report``/``MultiReport`` is turned into it first)::

    fn(report: dict, *, top: int | None = None, color: bool = False) -> str

``top`` caps the top-kernel and top-op rows (None: the format's default); ``color``
asks for terminal colour where the format has any. ``html`` also takes ``timelines`` (the
traces' Timelines, in the report's order) to draw their timeline picture:
``render(report, "html", timelines=[tl])``; without them the page has the tables only.
A report of several traces is ``{"schema": ..., "traces": [...], "cross_trace": ...}``;
each renderer handles both.
Formats are imported only when used; :func:`register` adds one.
:mod:`traceprobe.render.csv` (the frames as CSV files) writes a directory, not a
string, so it is not a format here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from traceprobe.errors import UsageError
from traceprobe.report.model import MULTI_SCHEMA

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
    """Render a report dict, a Report/MultiReport, or a list of them, as format ``fmt``;
    ``timelines`` (for ``html``): the traces' Timelines, for the picture."""
    fn = get(fmt)
    if timelines is not None:
        return fn(as_dict(report), top=top, color=color, timelines=timelines)
    return fn(as_dict(report), top=top, color=color)


def as_dict(report: Any) -> dict[str, Any]:
    """The schema dict of ``report``: a dict as is, ``.to_dict()`` of an object, and a list
    of either as the several-traces object (without cross-trace figures)."""
    if isinstance(report, Mapping):
        return dict(report)
    to_dict = getattr(report, "to_dict", None)
    if callable(to_dict):
        return as_dict(to_dict())
    if isinstance(report, Sequence) and not isinstance(report, (str, bytes)):
        return {"schema": MULTI_SCHEMA, "traces": [as_dict(r) for r in report], "cross_trace": None}
    raise TypeError(f"not a report: {type(report).__name__}")
