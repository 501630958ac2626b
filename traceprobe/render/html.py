"""The report as one self-contained HTML page, with one zoomable timeline of its traces.

    html = render_html([report_a, report_b], [tl_a, tl_b])   # several traces: one section each
    html = render(report, timelines=[timeline])              # the registry's format "html"

The page holds everything inline (``assets/report.css``, ``assets/timeline.js`` and the
timeline data as JSON), fetches nothing and works offline. The tables are the text
report's (:func:`traceprobe.render.tables.trace_document`). The timeline, drawn by
``timeline.js``, shows every trace that has a Timeline one above the other on one time
axis (each from the start of its own window): overlap bands and GPU-idle time from
:meth:`traceprobe.render.lanes.Lanes.to_payload`, every GPU activity and host event
from :meth:`traceprobe.render.events.EventDetail.payload` (hover, launch links,
search) and the report's ``critical_path`` segments when it has them. Every string
that comes from a trace (kernel and op names, paths) is HTML-escaped, and the JSON is
escaped so that no ``</script>`` inside a name can end its script element.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from traceprobe.render import as_report
from traceprobe.render import ranks as rk
from traceprobe.render import tables as tb
from traceprobe.render.charts import charts_html
from traceprobe.render.events import event_detail
from traceprobe.render.lanes import COLORS, LEGEND, lanes_for_report
from traceprobe.render.roofline import roofline_svg
from traceprobe.report.model import MultiReport, Report
from traceprobe.timeline import Timeline

TOP = 10


def render_html(
    reports: Any,
    timelines: Sequence[Timeline | None] | None = None,
    *,
    top: int | None = None,
    title: str | None = None,
) -> str:
    """One page for the traces of ``reports`` (a Report, a MultiReport, a list of Reports,
    the many-rank summary; a report dict is read back first: :func:`~traceprobe.render.as_report`);
    ``timelines[i]`` (same order) gives trace i its picture, None skips it.
    ``top``: top-kernel and top-op rows (None: 10); ``title``: default names the trace(s)."""
    top = TOP if top is None else top
    one = as_report(reports)
    if rk.is_ranks(one):  # the summary names no trace
        title = "? — traceprobe" if title is None else title
        return _page(title, _ranks_body(one, title, top))
    multi: MultiReport | None = one if isinstance(one, MultiReport) else None
    items: list[Report] = list(multi.reports) if multi is not None else [one]
    if title is None:
        title = page_title(items)
    tls = list(timelines or [])
    if len(tls) > len(items):
        raise ValueError(f"{len(tls)} timelines for {len(items)} reports")
    tls += [None] * (len(items) - len(tls))

    body = [f"<h1>{_e(title)}</h1>"]
    if len(items) > 1:
        body.append(f'<p class="tp-sub">{len(items)} traces</p><ol start="0">')
        body += [
            f'<li><a href="#trace-{i}"><code>{_e(str(r.trace))}</code></a></li>'
            for i, r in enumerate(items)
        ]
        body.append("</ol>")
    body.append('<div id="errors" role="alert"></div>')
    drawn = [(i, r, tl) for i, (r, tl) in enumerate(zip(items, tls, strict=True))
             if tl is not None]
    multi_label = len(items) > 1
    if len(drawn) > 1:  # several traces: one picture, one above the other, before the sections
        body.append(_timeline(drawn, multi=True))
    for i, (r, tl) in enumerate(zip(items, tls, strict=True)):
        picture = (_timeline([(i, r, tl)], multi=False) if tl is not None and len(drawn) == 1
                   else "")
        body.append(_section(i, r, picture, top=top, label=f"[{i}]" if multi_label else ""))
    if multi is not None:
        cross = tb.cross_trace_table(multi)
        if cross is not None:
            body.append(_table(cross))
    return _page(title, "\n".join(body))


def render(report: Any, *, top: int | None = None, color: bool = False,
           timelines: Sequence[Timeline | None] | None = None) -> str:
    """The renderer signature of :mod:`traceprobe.render` (format ``html``): tables and
    headlines, and the timeline picture of the traces whose ``timelines`` are given."""
    del color
    return render_html(report, timelines, top=top)


def page_title(items: Sequence[Report]) -> str:
    """The page's title: the trace's file name (and step), or the count and first names."""
    names = [_short(str(r.trace or "?")) for r in items]
    if len(items) == 1:
        step = items[0].window.step if items[0].window is not None else None
        return f"{names[0]}{f' — ProfilerStep#{step}' if step is not None else ''} — traceprobe"
    shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
    return f"{len(items)} traces: {shown} — traceprobe"


def _short(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or path


# ----------------------------------------------------------------------------- parts


def _section(i: int, r: Report, picture: str | None, *, top: int, label: str) -> str:
    doc = tb.trace_document(r, top=top, label=label)
    out = [f'<section class="tp-trace" id="trace-{i}">']
    out.append(f"<h2>{_e(doc.label + ' ') if doc.label else ''}<code>{_e(doc.trace)}</code></h2>")
    facts = "".join(f"<span>{_e(f)}</span>" for f in doc.facts)
    out.append(f'<p class="tp-facts">{facts}</p>')
    if doc.headlines:
        out.append('<ul class="tp-headlines">')
        out += [f"<li>{_e(h)}</li>" for h in doc.headlines]
        out.append("</ul>")
    if picture:
        out.append(picture)
    charts = charts_html(r)  # the step breakdown, phases and idle causes as bars
    if charts:
        out.append(charts)
    roof = roofline_svg(r.efficiency)
    if roof:
        out.append(f'<figure class="tp-roofline-chart">{roof}<figcaption>Roofline: each op '
                   "shape's achieved TFLOP/s against its arithmetic intensity, under the "
                   "device's roof (area: kernel time)</figcaption></figure>")
    out += [_table(t) for t in doc.tables]
    out.append("</section>")
    return "\n".join(out)


def _ranks_body(report: Mapping[str, Any], title: str, top: int) -> str:
    """Many ranks: the summary's tables, then ``--rank R``'s report (no picture)."""
    doc = rk.ranks_document(report, top=top)
    body = [f"<h1>{_e(title)}</h1>",
            f'<section class="tp-trace" id="ranks"><h2>{_e(doc.trace)}</h2>']
    body.append('<p class="tp-facts">' + "".join(f"<span>{_e(f)}</span>" for f in doc.facts)
                + "</p>")
    if doc.headlines:
        body += ['<ul class="tp-headlines">', *(f"<li>{_e(h)}</li>" for h in doc.headlines),
                 "</ul>"]
    body += [_table(t) for t in doc.tables]
    body.append("</section>")
    if report.get("rank_report") is not None:
        body.append(_section(0, report["rank_report"], None, top=top, label="[--rank]"))
    return "\n".join(body)


def _timeline(drawn: Sequence[tuple[int, Report, Timeline]], *, multi: bool) -> str:
    """One picture of the traces ``drawn`` ((index, report, timeline) each)."""
    traces, kinds = [], set()
    for i, r, tl in drawn:
        lanes = lanes_for_report(r, tl, idle=True)
        detail = event_detail(tl, (lanes.lo, lanes.hi), devices=[d for d, _ in lanes.devices])
        critical = critical_segments(r, lanes.lo, lanes.hi)
        kinds.update(lanes.kinds())
        kinds.update(detail.kinds_present())
        if critical:
            kinds.add("critical")
        traces.append({
            "title": f"[{i}] {r.trace}" if multi else str(r.trace),
            "lanes": lanes.to_payload(),
            "events": detail.payload() if detail.events else None,
            "critical": critical,
        })
    payload = json.dumps({"traces": traces}, separators=(",", ":"), ensure_ascii=False)
    key = "all" if multi else str(drawn[0][0])
    legend = "".join(
        f'<span><i class="tp-dash"></i>{_e(LEGEND[k])}</span>'
        if k == "step"
        else f'<span><i style="background:var(--tp-{k})"></i>{_e(LEGEND[k])}</span>'
        for k in LEGEND if k in kinds
    )
    heading = f"<h2>Timeline of the {len(drawn)} traces</h2>\n" if multi else "<h3>Timeline</h3>\n"
    return (
        f'{heading}<div class="tp-timeline" id="timeline-{key}" data-payload="tp-data-{key}">'
        '<div class="tp-toolbar">'
        '<button type="button" class="tp-zoom-in" title="Zoom in">+</button>'
        '<button type="button" class="tp-zoom-out" title="Zoom out">−</button>'
        '<button type="button" class="tp-reset" title="Show the whole window">Reset zoom</button>'
        '<input type="search" class="tp-search" placeholder="search names (regex)" '
        'aria-label="Search event names (regular expression)" spellcheck="false">'
        '<span class="tp-view"></span></div>'
        '<div class="tp-canvas-wrap">'
        f'<canvas role="img" aria-label="Timeline of {len(drawn)} trace(s)"></canvas>'
        '<div class="tp-tip" role="tooltip" hidden></div></div>'
        '<div class="tp-results" aria-live="polite"></div>'
        '<div class="tp-details" aria-live="polite"></div>'
        f'<div class="tp-legend">{legend}</div>'
        '<p class="tp-hint">Wheel to zoom at the pointer, drag to pan, double-click to reset; '
        "hover an event for its details, click it to pin them and draw its launch links "
        "(runtime call → kernels). Times are from the start of each trace's analysed window.</p>"
        "</div>\n"
        f'<script type="application/json" id="tp-data-{key}">{_script_safe(payload)}</script>'
    )


def critical_segments(r: Report, lo: int, hi: int) -> list[list[Any]] | None:
    """The report's ``critical_path.segments`` as [start_ns, end_ns, kind, name] from the
    window start, or None when the report has none. Segment times are on the trace clock
    in µs (traceprobe.graph's plain data, as the report carries it)."""
    cp = r.critical_path
    segs = cp.get("segments") if isinstance(cp, Mapping) else None
    if not segs:
        return None
    out = []
    for seg in segs:
        try:
            a = round(float(seg["start_us"]) * 1000) - lo
            b = round(float(seg["end_us"]) * 1000) - lo
        except (KeyError, TypeError, ValueError):
            continue
        if b >= 0 and a <= hi - lo:
            out.append([a, b, str(seg.get("kind", "")), str(seg.get("name", ""))])
    return out or None


def _table(t: tb.Table) -> str:
    out = [f"<h3>{_e(t.title)}</h3>"]
    if t.headers:
        out.append('<div class="tp-table-wrap"><table><thead><tr>')
        out += [f'<th class="{a}">{_e(h)}</th>' for h, a in zip(t.headers, t.align, strict=True)]
        out.append("</tr></thead><tbody>")
        for row in t.rows:
            cells = []
            for j, (c, a) in enumerate(zip(row, t.align, strict=True)):
                if j in t.code and c != tb.DASH:
                    cells.append(f'<td class="tp-name"><code>{_e(c)}</code></td>')
                else:
                    cells.append(f'<td class="{a}">{_e(c)}</td>')
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</tbody></table></div>")
    out += [f'<p class="tp-note">{_e(n)}</p>' for n in t.notes]
    return "\n".join(out)


def _page(title: str, body: str) -> str:
    colors = ":root{" + "".join(f"--tp-{k}:{v};" for k, v in COLORS.items()) + "}"
    js = _asset("timeline.js")
    if "</script" in js.lower():  # pragma: no cover - guards the asset, not user data
        raise AssertionError("timeline.js must not contain '</script'")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="traceprobe">\n'
        f"<title>{_e(title)}</title>\n"
        f"<style>\n{colors}\n{_asset('report.css')}</style>\n</head>\n<body>\n"
        f"{body}\n<script>\n{js}</script>\n</body>\n</html>\n"
    )


def _asset(name: str) -> str:
    return resources.files("traceprobe.render").joinpath("assets", name).read_text("utf-8")


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _script_safe(payload: str) -> str:
    """JSON text that cannot close its <script>: the three HTML-special characters escaped
    (they occur only inside JSON strings, where ``\\u003c`` means the same)."""
    return payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
