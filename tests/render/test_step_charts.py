"""The step breakdown, the phases and the idle causes as bars: in the HTML page (measured in a
real browser: Debian's chromium driven by Playwright, as tests/render/test_browser.py) and in
--plot.

GIVEN the H200 mnist loop (workers 1: 3 steps, the DataLoader most of each) WHEN the HTML page
is drawn, THEN every segment's drawn length over its chart's width is the report's figure over
the chart's longest bar (to a pixel), the segments of a step sum to that step, and the idle
bar's segments are the idle causes; and the PNG grows by the charts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from browser import ARGS, CHROMIUM, sync_playwright
from traceprobe import report as rp
from traceprobe.load import load
from traceprobe.render import as_report
from traceprobe.render.charts import UNLISTED, charts_html, report_charts
from traceprobe.render.html import render_html

ROOT = Path(__file__).resolve().parents[2]
LOOP = next((ROOT / "sample_traces/h200/real-loops/mnist-workers1").glob("*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def loop() -> tuple[Any, Any]:
    tl = load(LOOP)
    return tl, rp.analyze(tl)


def test_the_charts_hold_the_reports_figures(loop: tuple[Any, Any]) -> None:
    _, report = loop
    rep = report.to_dict()  # the figures to hold the charts to: the JSON's
    parts, phases, idle = report_charts(report)
    assert (parts.key, phases.key, idle.key) == ("parts", "phases", "idle")
    for chart, key in ((parts, "parts"), (phases, "phases")):
        assert len(chart.bars) == 3
        for bar, row in zip(chart.bars, rep["step_breakdown"], strict=True):
            assert bar.segments == tuple((p["name"], p["us"]) for p in row[key])
            assert bar.total_us == pytest.approx(sum(p["us"] for p in row["parts"]), abs=1e-3)
        assert chart.scale_us == max(b.total_us for b in chart.bars)
    [dev] = rep["host"]["devices"]
    [bar] = idle.bars
    assert bar.total_us == dev["idle_us"]
    listed = sum(c["us"] for c in dev["causes"])
    assert dict(bar.segments)["dataloader"] == pytest.approx(
        sum(c["us"] for c in dev["causes"] if c["kind"] == "dataloader"))
    assert dict(bar.segments).get(UNLISTED, 0) == pytest.approx(dev["idle_us"] - listed)
    assert charts_html(as_report({"step_breakdown": [], "host": {"devices": []}})) == ""


def test_the_plot_grows_by_the_charts(loop: tuple[Any, Any]) -> None:
    pytest.importorskip("matplotlib")
    from traceprobe.render.plot import plot_figure

    tl, report = loop
    rep = report.to_dict()
    with_charts = plot_figure(tl, report)
    without = plot_figure(tl, {**rep, "step_breakdown": [], "host": {"devices": []}})
    assert with_charts.get_figheight() > without.get_figheight()
    titles = [a.get_title(loc="left") for a in with_charts.axes]
    assert any(t.startswith("Step-time breakdown on GPU 0") for t in titles)
    assert any(t.startswith("Phases of each step") for t in titles)
    assert any(t.startswith("GPU idle time by cause") for t in titles)
    [ax] = [a for a in with_charts.axes if a.get_title(loc="left").startswith("Step-time")]
    widths = sorted(round(p.get_width(), 9) for p in ax.patches)
    row0 = rep["step_breakdown"][0]["parts"]
    scale = 1e3  # ms: the chart's unit for steps of ~25 ms
    for p in row0:
        if p["us"] > 0:
            assert round(p["us"] / scale, 9) in widths


@pytest.mark.skipif(CHROMIUM is None or sync_playwright is None,
                    reason="chromium or playwright not installed "
                    "(see tests/render/test_browser.py)")
def test_bars_in_the_browser_are_as_long_as_the_figures(
        loop: tuple[Any, Any], tmp_path: Path) -> None:
    tl, report = loop
    rep = report.to_dict()
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html([report], [tl]), encoding="utf-8")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=ARGS, headless=True,
            viewport={"width": 1400, "height": 1000})
        ctx.route(re.compile(r"^(?!file:).*"), lambda route: route.abort())
        page = ctx.new_page()
        page.goto(page_file.as_uri())
        drawn = page.evaluate("""() => [...document.querySelectorAll('.tp-chart')].map(c => ({
            key: c.dataset.chart, scale: parseFloat(c.dataset.scaleUs),
            rows: [...c.querySelectorAll('.tp-bar-row')].map(r => ({
                total: parseFloat(r.dataset.totalUs),
                width: r.querySelector('.tp-bar').getBoundingClientRect().width,
                segs: [...r.querySelectorAll('.tp-seg')].map(s => ({
                    name: s.dataset.name, us: parseFloat(s.dataset.us),
                    px: s.getBoundingClientRect().width}))}))}))""")
        ctx.close()
    by_key = {c["key"]: c for c in drawn}
    assert set(by_key) == {"parts", "phases", "idle"}
    for key in ("parts", "phases"):
        chart = by_key[key]
        assert len(chart["rows"]) == 3
        for row, step in zip(chart["rows"], rep["step_breakdown"], strict=True):
            figures = {p["name"]: p["us"] for p in step[key] if p["us"] > 0}
            assert {s["name"]: s["us"] for s in row["segs"]} == pytest.approx(figures)
            for s in row["segs"]:  # the drawn length is the figure, to the chart's scale
                assert s["px"] == pytest.approx(row["width"] * s["us"] / chart["scale"], abs=1.0)
            longest = row["total"] == chart["scale"]
            used = sum(s["px"] for s in row["segs"])
            assert used == pytest.approx(row["width"] * row["total"] / chart["scale"], abs=1.5)
            assert longest is (abs(used - row["width"]) <= 1.5)
    [idle] = by_key["idle"]["rows"]
    [dev] = rep["host"]["devices"]
    assert idle["total"] == dev["idle_us"]
    loader = next(s for s in idle["segs"] if s["name"] == "dataloader")
    want = sum(c["us"] for c in dev["causes"] if c["kind"] == "dataloader")
    assert loader["px"] == pytest.approx(idle["width"] * want / dev["idle_us"], abs=1.0)
