"""The report as GitHub-flavoured Markdown: headings, a headline list, pipe tables.

``render(report, top=10) -> str``; the same content as the text report (see
:mod:`traceprobe.render.tables`). Names go in code spans so ``<T>`` and ``*`` in
C++ kernel names survive; ``|`` is escaped everywhere so tables keep their shape.
"""

from __future__ import annotations

import re
from typing import Any

from traceprobe.render import ranks as rk
from traceprobe.render import tables as tb

NAME_WIDTH = 100

_SPECIAL = re.compile(r"([\\`*_<>\[\]|#])")


def render(report: Any, *, top: int | None = None, color: bool = False) -> str:
    del color  # Markdown has none
    top = 10 if top is None else top
    if rk.is_ranks(report):  # many ranks: the summary, and --rank R's report in full
        parts = [_document(rk.ranks_document(report, top=top), level=2)]
        if report.get("rank_report") is not None:
            doc = tb.trace_document(report["rank_report"], top=top, label="[--rank]")
            parts.append(_document(doc, level=2))
        return "\n".join(parts)
    if not tb.is_multi(report):
        return _document(tb.trace_document(report, top=top), level=2)
    traces = list(report.reports)
    out = [f"# traceprobe: {len(traces)} traces", ""]
    for i, t in enumerate(traces):
        out.append(f"- [{i}] {_code(str(t.trace), in_table=False)}")
    parts = ["\n".join(out) + "\n"]
    for i, t in enumerate(traces):
        parts.append(_document(tb.trace_document(t, top=top, label=f"[{i}]"), level=2))
    for extra in (tb.runs_table(report), tb.cross_trace_table(report)):
        if extra is not None:
            parts.append(_table(extra, level=2))
    return "\n".join(parts)


def _document(doc: tb.Document, level: int) -> str:
    heading = f"{doc.label} {_code(doc.trace, in_table=False)}".strip()
    lines = [f"{'#' * level} traceprobe: {heading}", ""]
    if doc.headlines:
        lines += [f"- {_escape(h)}" for h in doc.headlines]
        lines.append("")
    lines.append("<br>\n".join(_escape(f) for f in doc.facts))
    out = "\n".join(lines) + "\n"
    return out + "".join("\n" + _table(t, level + 1) for t in doc.tables)


def _table(t: tb.Table, level: int) -> str:
    lines = [f"{'#' * level} {_escape(t.title)}", ""]
    if t.headers:
        lines.append(_row(_escape(h) for h in t.headers))
        lines.append(_row("---:" if a == "r" else ":---" for a in t.align))
        for r in t.rows:
            lines.append(_row(_code(c) if i in t.code else _escape(c) for i, c in enumerate(r)))
        lines.append("")
    if t.notes:
        lines.append("<br>\n".join(_escape(n) for n in t.notes))
        lines.append("")
    return "\n".join(lines)


def _row(cells: Any) -> str:
    return "| " + " | ".join(cells) + " |"


def _escape(s: str) -> str:
    return _SPECIAL.sub(r"\\\1", " ".join(s.split()))


def _code(name: str, in_table: bool = True) -> str:
    """A name as a code span; in a table cell ``|`` is escaped (GFM honours that in code)."""
    name = " ".join(name.split()).replace("`", "'")
    if name == tb.DASH:
        return name
    if in_table and len(name) > NAME_WIDTH:
        name = name[: NAME_WIDTH - 1] + "…"
    return "`" + (name.replace("|", "\\|") if in_table else name) + "`"
