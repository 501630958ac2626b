"""A static PNG of the timeline picture: the lanes, overlap bands, host threads and steps, under
the trace's name and every headline of its report.

    write_plot(timeline, report, "run.png")          # --plot run.png (report: a Report)
    write_plots(timelines, reports, "run.png")       # several: run-0.png, run-1.png
    data = plot_png(timeline, report)                # the PNG bytes

matplotlib is imported here, lazily, and only its object-oriented API is used
(``Figure`` + the Agg canvas): no pyplot, no global backend switch, no windows.
The rows, colours and drawing rule are those of :mod:`traceprobe.render.lanes`
(the HTML canvas's): each row is rastered exactly, one image column per pixel, by
:func:`~traceprobe.render.lanes.raster`, so a 300k-event trace costs one image. Each host
thread is one lane showing, per pixel, the kind of event (op, runtime call, annotation,
DataLoader) that was innermost for longest (:class:`~traceprobe.render.lanes.HostLane`).
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from traceprobe import output
from traceprobe.errors import UsageError
from traceprobe.render import as_report
from traceprobe.render.charts import Chart, report_charts
from traceprobe.render.charts import color as chart_color
from traceprobe.render.charts import label as chart_label
from traceprobe.render.lanes import COLORS, LEGEND, Band, lanes_for_report, raster
from traceprobe.render.roofline import chart_data, draw_roofline
from traceprobe.timeline import Timeline

if TYPE_CHECKING:
    from traceprobe.report.model import Report

DPI = 100
WIDTH_PX = 1600  # the whole picture
LEFT_PX = 210  # row labels
PLOT_PX = 1350  # the timeline: one image column per pixel
LANE_PX, BAND_PX, ROW_GAP_PX, STEP_PX = 22, 12, 3, 18
BACKGROUND = np.array([0.98, 0.98, 0.98])
ROOF_PX = 380  # the roofline chart under the legend, when the report has rates
WRAP = 190  # characters of a headline line
LEGEND_COLUMNS = 7


def write_plot(
    timeline: Timeline,
    report: Report | None,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
) -> None:
    """Draw ``timeline`` (in the report's window) and write it to ``path`` as PNG, atomically.

    An existing ``path`` is refused unless ``force``.
    """
    output.check_target(path, force=force)
    output.write_bytes(path, plot_png(timeline, report), force=force)


def plot_targets(path: str | os.PathLike[str], n: int) -> list[Path]:
    """Where :func:`write_plots` puts ``n`` pictures: ``path`` for one, else
    ``NAME-0.png``, ``NAME-1.png``, ... beside it (trace i of the report)."""
    p = Path(path)
    if n == 1:
        return [p]
    return [p.with_name(f"{p.stem}-{i}{p.suffix or '.png'}") for i in range(n)]


def write_plots(
    timelines: Sequence[Timeline],
    reports: Sequence[Report],
    path: str | os.PathLike[str],
    *,
    force: bool = False,
) -> list[Path]:
    """One PNG per trace (see :func:`plot_targets`); every target is checked before any is
    written. Returns the paths written."""
    if len(timelines) != len(reports):
        raise ValueError(f"{len(timelines)} timelines for {len(reports)} reports")
    targets = plot_targets(path, len(timelines))
    for t in targets:
        output.check_target(t, force=force)
    for tl, r, t in zip(timelines, reports, targets, strict=True):
        write_plot(tl, r, t, force=force)
    return targets


def plot_png(timeline: Timeline, report: Report | None = None) -> bytes:
    """The picture as PNG bytes."""
    fig = plot_figure(timeline, report)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": "traceprobe"})
    return buf.getvalue()


def plot_figure(timeline: Timeline, report: Report | None = None) -> Any:
    """The picture as a matplotlib ``Figure`` (Agg canvas attached)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.colors import to_rgb
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        raise UsageError(
            "--plot needs matplotlib, which is not installed; pip install 'traceprobe[plot]'"
        ) from None

    r = None if report is None else as_report(report)  # a saved report dict is read back
    # exact (raster needs no budget), with one lane per host thread
    lanes = lanes_for_report(r, timeline, max_pieces=sys.maxsize, hosts=True, idle=True)
    rows = list(lanes.rows())
    headlines = [
        textwrap.wrap(f"• {h}", WRAP, subsequent_indent="   ") or ["•"]
        for h in (r.headlines if r is not None else ())
    ]
    n_lines = sum(len(h) for h in headlines)

    # One RGB image: a band of pixel rows per row, each pixel as timeline.js draws it.
    heights = [BAND_PX if isinstance(x, Band) else LANE_PX for x in rows]
    tops = np.concatenate([[0], np.cumsum(np.array(heights) + ROW_GAP_PX)])[:-1].astype(int)
    img_h = int(tops[-1] + heights[-1]) if rows else 40
    img = np.full((img_h, PLOT_PX, 3), 1.0)
    for row, top, h in zip(rows, tops, heights, strict=True):
        img[top : top + h] = BACKGROUND
        if lanes.hi <= lanes.lo:
            continue
        kinds, dominant, busy = raster(row, lanes.lo, lanes.hi, PLOT_PX)
        if not kinds:
            continue
        colors = np.array([to_rgb(COLORS[k]) for k in kinds])
        alpha = np.where(dominant >= 0, 0.2 + 0.8 * np.minimum(busy, 1.0), 0.0)[:, None]
        line = BACKGROUND * (1 - alpha) + colors[np.maximum(dominant, 0)] * alpha
        img[top + 1 : top + h - 1] = line[None, :, :]

    step_px = STEP_PX if lanes.steps else 0
    n_kinds = len(lanes.kinds())
    head_px = 40 + 16 * n_lines + 6 * len(headlines)
    charts = [c for c in (report_charts(r) if r is not None else []) if c.bars
              and c.scale_us > 0]
    chart_px = sum(_chart_px(c) for c in charts)
    eff = r.efficiency if r is not None else None
    roof_px = ROOF_PX if chart_data(eff) is not None else 0  # the roofline, at the bottom
    foot_px = 52 + 18 * max(1, -(-n_kinds // LEGEND_COLUMNS)) + chart_px + roof_px
    fig_h = (head_px + step_px + img_h + foot_px) / DPI
    fig = Figure(figsize=(WIDTH_PX / DPI, fig_h), dpi=DPI)
    FigureCanvasAgg(fig)
    left = LEFT_PX / WIDTH_PX
    ax = fig.add_axes((left, foot_px / DPI / fig_h, PLOT_PX / WIDTH_PX,
                       (img_h + step_px) / DPI / fig_h))
    bottom = roof_px
    for c in reversed(charts):  # the bar charts under the timeline, first chart on top
        _draw_chart(fig, c, bottom, fig_h)
        bottom += _chart_px(c)
    span = max(1, lanes.hi - lanes.lo)
    scale, unit = _unit(span)
    x1 = span / scale
    ax.imshow(img, extent=(0, x1, img_h, 0), aspect="auto", interpolation="nearest")
    ax.set_xlim(0, x1)
    ax.set_ylim(img_h, -step_px)
    ax.set_yticks([t + h / 2 for t, h in zip(tops, heights, strict=True)],
                  [x.label for x in rows], fontsize=8)
    for tick, row in zip(ax.get_yticklabels(), rows, strict=True):
        if isinstance(row, Band):
            tick.set_color(COLORS[row.kind])
            tick.set_fontstyle("italic")
    if lanes.steps:
        marks = [s for _, s, _ in lanes.steps] + [lanes.steps[-1][2]]
        for m in marks:
            ax.axvline((m - lanes.lo) / scale, color=COLORS["step"], linestyle="--", linewidth=0.7)
        min_label = 0.025 * span
        for n, s, e in lanes.steps:
            if e - s >= min_label:
                ax.text(((s + e) / 2 - lanes.lo) / scale, -step_px / 2, f"#{n}", ha="center",
                        va="center", fontsize=7, color=COLORS["step"])
    ax.set_xlabel(f"time from the start of the window ({unit})", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if not rows:
        ax.text(0.5, 0.5, "No GPU or host activity in this window.", transform=ax.transAxes,
                ha="center", va="center", color="#666")

    kinds = lanes.kinds()
    handles = [
        Line2D([], [], color=COLORS[k], linestyle="--") if k == "step"
        else Patch(facecolor=COLORS[k])
        for k in kinds
    ]
    if handles:
        fig.legend(handles, [LEGEND[k] for k in kinds], loc="lower center",
                   ncol=min(len(handles), LEGEND_COLUMNS),
                   fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, (chart_px + roof_px) / DPI / fig_h))
    if roof_px:
        rax = fig.add_axes((left, 40 / DPI / fig_h, 0.45, (roof_px - 80) / DPI / fig_h))
        draw_roofline(rax, eff)

    title = str((r.trace if r is not None else None) or timeline.source)
    step = r.window.step if r is not None else None
    if step is not None:
        title += f" — ProfilerStep#{step}"
    fig.text(0.01, 1 - 12 / DPI / fig_h, title, fontsize=11, weight="bold", va="top")
    y = 38
    for lines in headlines:
        for line in lines:
            fig.text(0.01, 1 - y / DPI / fig_h, line, fontsize=9, va="top")
            y += 16
        y += 6
    return fig


CHART_BAR_PX, CHART_HEAD_PX, CHART_FOOT_PX = 16, 26, 34


def _chart_px(c: Chart) -> int:
    return CHART_HEAD_PX + _bars_px(c) + CHART_FOOT_PX


def _bars_px(c: Chart) -> int:
    """The bars' height: a row per bar, and room for the legend beside them."""
    return max(CHART_BAR_PX * len(c.bars), 12 * len(c.names()))


def _draw_chart(fig: Any, c: Chart, bottom_px: int, fig_h: float) -> Any:
    """One chart of :mod:`traceprobe.render.charts` as horizontal stacked bars, every bar to
    the chart's scale (its longest bar spans the axis), its legend under it."""
    from matplotlib.patches import Patch

    h_px = _bars_px(c)
    ax = fig.add_axes((LEFT_PX / WIDTH_PX, (bottom_px + CHART_FOOT_PX) / DPI / fig_h,
                       PLOT_PX / WIDTH_PX * 0.8, h_px / DPI / fig_h))
    scale, unit = _unit(int(c.scale_us * 1000))
    for i, b in enumerate(c.bars):
        x = 0.0
        for name, us in b.segments:
            if us > 0:
                ax.barh(i, us * 1000 / scale, left=x, height=0.8, color=chart_color(name),
                        linewidth=0)
                x += us * 1000 / scale
    ax.set_xlim(0, c.scale_us * 1000 / scale)
    ax.set_ylim(len(c.bars) - 0.5, -0.5)
    ax.set_yticks(range(len(c.bars)), [b.label for b in c.bars], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"{c.title} ({unit})", fontsize=9, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    names = c.names()
    ax.legend([Patch(facecolor=chart_color(n)) for n in names],
              [chart_label(c, n) for n in names], loc="center left",
              bbox_to_anchor=(1.01, 0.5), fontsize=7, frameon=False)
    return ax


def _unit(span_ns: int) -> tuple[float, str]:
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if span_ns >= 2 * scale:
            return scale, unit
    return 1.0, "ns"
