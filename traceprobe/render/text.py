"""The terminal report: headlines in plain words first, then aligned tables.

``render(report, top=10, color=False) -> str``. Colour (bold titles, dim notes) only
when asked for; the CLI asks only when writing to a terminal and NO_COLOR is unset.
"""

from __future__ import annotations

from typing import Any

from traceprobe.render import ranks as rk
from traceprobe.render import tables as tb

NAME_WIDTH = 60  # kernel and op names are cut to this many characters
INDENT = "  "

_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def render(report: Any, *, top: int | None = None, color: bool = False) -> str:
    top = 10 if top is None else top
    st = _Style(color)
    if rk.is_ranks(report):  # many ranks: the summary, and --rank R's report in full
        parts = [_document(rk.ranks_document(report, top=top), st)]
        if report.get("rank_report") is not None:
            doc = tb.trace_document(report["rank_report"], top=top, label="[--rank]")
            parts.append(_document(doc, st, rule=True))
        return "\n".join(parts)
    if not tb.is_multi(report):
        return _document(tb.trace_document(report, top=top), st)
    traces = list(report.reports)
    out = [st.bold(f"traceprobe: {len(traces)} traces"), ""]
    out += [f"{INDENT}[{i}] {t.trace}" for i, t in enumerate(traces)]
    parts = ["\n".join(out) + "\n"]
    for i, t in enumerate(traces):
        doc = tb.trace_document(t, top=top, label=f"[{i}]")
        parts.append(_document(doc, st, rule=True))
    for extra in (tb.runs_table(report), tb.cross_trace_table(report)):
        if extra is not None:
            parts.append(_table(extra, st))
    return "\n".join(parts)


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def bold(self, s: str) -> str:
        return f"{_BOLD}{s}{_RESET}" if self.color and s else s

    def dim(self, s: str) -> str:
        return f"{_DIM}{s}{_RESET}" if self.color and s else s


def _document(doc: tb.Document, st: _Style, rule: bool = False) -> str:
    title = f"== {doc.label} {doc.trace} ==" if rule else f"traceprobe: {doc.trace}"
    lines = [st.bold(title), ""]
    if doc.headlines:
        lines += [f"{INDENT}* {h}" for h in doc.headlines]
        lines.append("")
    lines += [f"{INDENT}{f}" for f in doc.facts]
    out = "\n".join(lines) + "\n"
    return out + "".join("\n" + _table(t, st) for t in doc.tables)


def _table(t: tb.Table, st: _Style) -> str:
    lines = [st.bold(t.title)]
    if t.headers:
        rows = [tuple(_cut(c) if i in t.code else c for i, c in enumerate(r)) for r in t.rows]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(t.headers)]
        lines.append(st.bold(_line(t.headers, widths, t.align)))
        lines.append(_line(tuple("-" * w for w in widths), widths, t.align))
        lines += [_line(r, widths, t.align) for r in rows]
    lines += [st.dim(f"{INDENT}{n}") for n in t.notes]
    return "\n".join(lines) + "\n"


def _line(cells: tuple[str, ...], widths: list[int], align: str) -> str:
    padded = [
        c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(cells, widths, align, strict=True)
    ]
    return (INDENT + "  ".join(padded)).rstrip()


def _cut(name: str, width: int = NAME_WIDTH) -> str:
    name = " ".join(name.split())  # newlines or tabs inside a name would break the table
    return name if len(name) <= width else name[: width - 1] + "…"
