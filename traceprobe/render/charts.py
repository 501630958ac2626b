"""Bar charts of a report: each step's breakdown and phases as a stacked bar, and each GPU's
idle time split by cause — as TensorBoard's overview drew them.

    charts = report_charts(report)      # -> [Chart], drawn by html (below) and plot.py
    html = charts_html(report)          # the HTML section: plain divs, no script

Only the report's own figures are drawn (``step_breakdown[].parts`` and ``.phases``,
``host.devices[].causes``); nothing is computed here but their sums. In a chart every bar is
drawn to one scale, the chart's longest bar (``scale_us``), so bar lengths compare across the
rows: a segment's length is ``us / scale_us`` of the chart's width. Each segment carries its
figure in ``data-us`` (µs) and a ``title``; the browser test measures the drawn lengths
against them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traceprobe.render.lanes import COLORS
from traceprobe.render.units import fmt_time
from traceprobe.render.units import us as _us

if TYPE_CHECKING:
    from traceprobe.metrics.steps import Part
    from traceprobe.report.model import Report

PALETTE = {  # a colour per part, phase and cause kind (lanes' colours where they mean the same)
    "kernel": COLORS["kernel"], "memcpy": COLORS["memcpy"], "memset": COLORS["memset"],
    "communication": COLORS["comm"], "runtime": COLORS["runtime"],
    "dataloader": COLORS["dataloader"], "cpu_exec": COLORS["cpu_op"], "other": "#d9d9d9",
    "forward": "#4c78a8", "backward": "#f58518", "optimizer": "#54a24b",
    "region": COLORS["annotation"], "wait": COLORS["comm"], "sync": COLORS["sync"],
    "cpu_op": COLORS["cpu_op"], "host_idle": "#d9d9d9",
}
CAUSE_NAMES = {"dataloader": "DataLoader", "optimizer": "optimizer", "region": "regions",
               "wait": "waiting on another GPU", "sync": "synchronization", "cpu_op": "CPU ops",
               "runtime": "runtime calls", "host_idle": "Python (untraced)"}
UNLISTED = "(not in the 5 listed causes)"


@dataclass(frozen=True)
class Bar:
    label: str
    total_us: float
    segments: tuple[tuple[str, float], ...]  # (name, µs), in drawing order


@dataclass(frozen=True)
class Chart:
    key: str  # "parts", "phases", "idle"
    title: str
    bars: tuple[Bar, ...]

    @property
    def scale_us(self) -> float:
        return max((b.total_us for b in self.bars), default=0.0)

    def names(self) -> list[str]:
        out: list[str] = []
        for b in self.bars:
            out += [n for n, us in b.segments if us > 0 and n not in out]
        return out


def report_charts(report: Report) -> list[Chart]:
    """The step-breakdown charts (one per device), the phases chart, and the idle causes
    (bar lengths in µs: each part's ``ns / 1000``, summed as floats)."""
    out: list[Chart] = []
    rows = list(report.step_breakdown or ())
    devices: list[Any] = []
    for r in rows:
        if r.device not in devices:
            devices.append(r.device)
    for d in devices:
        mine = [r for r in rows if r.device == d]
        where = "" if d is None else f" on GPU {d}"
        out.append(Chart("parts", f"Step-time breakdown{where}", tuple(
            _bar(r.step, r.parts) for r in mine)))
    if rows and any(r.phases for r in rows):
        first = [r for r in rows if r.device == devices[0]]
        out.append(Chart("phases", "Phases of each step (host)", tuple(
            _bar(r.step, r.phases) for r in first)))
    idle = []
    for dev in (report.host.devices if report.host is not None else None) or ():
        total = float(_us(dev.idle_ns) or 0.0)
        by_kind: dict[str, float] = {}
        for c in dev.causes or ():
            k = str(c.kind)
            by_kind[k] = by_kind.get(k, 0.0) + float(_us(c.ns) or 0.0)
        rest = total - sum(by_kind.values())
        segs = [(k, v) for k, v in by_kind.items()]
        if rest > 1e-6:
            segs.append((UNLISTED, rest))
        idle.append(Bar(f"GPU {dev.device}", total, tuple(segs)))
    if idle:
        out.append(Chart("idle", "GPU idle time by cause", tuple(idle)))
    return out


def _bar(step: int, parts: Sequence[Part]) -> Bar:
    segs = tuple((str(p.name), float(p.ns / 1000)) for p in parts or ())
    return Bar(f"#{step}", round(sum(v for _, v in segs), 3), segs)


def color(name: str) -> str:
    return PALETTE.get(name, "#bbbbbb")


def label(chart: Chart, name: str) -> str:
    return CAUSE_NAMES.get(name, name) if chart.key == "idle" else name


# ----------------------------------------------------------------------------- HTML


def charts_html(report: Report) -> str:
    """The charts as one HTML block ('' for a report without steps or idle time)."""
    charts = [c for c in report_charts(report) if c.bars and c.scale_us > 0]
    if not charts:
        return ""
    return "\n".join(_chart_html(c) for c in charts)


def _chart_html(c: Chart) -> str:
    out = [f'<div class="tp-chart" data-chart="{c.key}" data-scale-us="{c.scale_us!r}">',
           f"<h3>{_e(c.title)}</h3>"]
    for b in c.bars:
        segs = []
        for name, us in b.segments:
            if us <= 0:
                continue
            width = 100 * us / c.scale_us
            tip = f"{label(c, name)}: {fmt_time(us)} ({us / b.total_us:.1%})" if b.total_us \
                else label(c, name)
            segs.append(f'<span class="tp-seg" data-name="{_e(name)}" data-us="{us!r}" '
                        f'style="width:{width:.6f}%;background:{color(name)}" '
                        f'title="{_e(tip)}"></span>')
        out.append(f'<div class="tp-bar-row" data-total-us="{b.total_us!r}">'
                   f'<span class="tp-bar-label">{_e(b.label)}</span>'
                   f'<span class="tp-bar">{"".join(segs)}</span>'
                   f'<span class="tp-bar-total">{_e(fmt_time(b.total_us))}</span></div>')
    legend = "".join(f'<span><i style="background:{color(n)}"></i>{_e(label(c, n))}</span>'
                     for n in c.names())
    out.append(f'<div class="tp-legend">{legend}</div></div>')
    return "\n".join(out)


def _e(s: str) -> str:
    return html.escape(s, quote=True)
