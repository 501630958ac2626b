"""The HTML report's timeline in a real browser: Debian's chromium driven by Playwright.

No browser is downloaded: Playwright's Python API launches ``/usr/bin/chromium`` (or
``chromium`` on PATH) with a fresh profile and no network features. The tests skip with
a reason where chromium or the ``playwright`` package is absent (``pip install
'traceprobe[test]'``; ``scripts/bootstrap.sh`` installs chromium when run as root).

What is checked, against figures known independently of the page's code (the trace
builder's own numbers, or a pandas sweep over the loaded frames):
hovering a kernel names it with its duration and launching op; a copy shows bytes and
GB/s; an op lists its kernels; clicking pins the details; zooming in and out and the
level of detail; the regex search's counts and total time; host lanes of a CPU-only
trace; several traces on one axis; nothing fetched from the network; and the page of
the 98 MB transformer trace: <= 5 MB and first paint <= 2 s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import ARGS, CHROMIUM, sync_playwright
from tracebuild import TraceBuilder
from traceprobe.report import analyze

ROOT = Path(__file__).resolve().parents[2]
BIG = ROOT / "bench" / "transformer-h200.pt.trace.json.gz"
CPU_ONLY = ROOT / "sample_traces" / "cpu" / "mlp" / "single"

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None,
                       reason="chromium not found (CI installs Debian's 'chromium'; so does "
                              "scripts/bootstrap.sh as root)"),
    pytest.mark.skipif(sync_playwright is None,
                       reason="playwright is not installed (pip install 'traceprobe[test]')"),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=ARGS, headless=True,
            viewport={"width": 1400, "height": 1000})
        requests: list[str] = []

        def refuse(route: Any) -> None:
            requests.append(route.request.url)
            route.abort()

        ctx.route(re.compile(r"^(?!file:).*"), refuse)
        ctx.tp_requests = requests  # type: ignore[attr-defined]
        yield ctx
        ctx.close()


class Page:
    """One report page opened in the browser, with its errors collected."""

    def __init__(self, ctx: Any, path: Path) -> None:
        self.errors: list[str] = []
        self.page = ctx.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector(".tp-timeline[data-rendered]", timeout=30_000)

    def js(self, expr: str, arg: Any = None) -> Any:
        return self.page.evaluate(f"(arg) => {{ const tl = document.querySelector('.tp-timeline')"
                                  f".tpTimeline; return {expr}; }}", arg)

    def canvas_point(self, x: float, y: float) -> tuple[float, float]:
        box = self.page.query_selector(".tp-timeline canvas").bounding_box()
        return box["x"] + x, box["y"] + y

    def hover(self, x: float, y: float) -> str:
        self.page.mouse.move(*self.canvas_point(x, y))
        tip = self.page.query_selector(".tp-tip")
        assert tip.is_visible()
        return tip.inner_text()

    def clean(self) -> None:
        assert self.page.inner_text("#errors") == ""
        assert self.errors == []


def write_page(tmp_path: Path, traces: list[Path], name: str = "report.html",
               extra: dict[str, Any] | None = None) -> Path:
    """The HTML report of ``traces``; ``extra``: keys added to each report dict."""
    from traceprobe.load.pipeline import load
    from traceprobe.render.html import render_html
    from traceprobe.report import analyze

    tls = [LOADED.setdefault(t, load(t)) for t in traces]
    reports = [{**analyze(tl).to_dict(), **(extra or {})} for tl in tls]
    out = tmp_path / name
    out.write_text(render_html(reports, tls), encoding="utf-8")
    return out


LOADED: dict[Path, Any] = {}
GEMM = "void gemm_kernel<float, 128>(float const*, float*)"


def launch_trace(tmp_path: Path, name: str = "launch.json") -> Path:
    """aten::mm [0, 30) µs ⊃ cudaLaunchKernel [5, 9) -> GEMM on GPU 0 stream 7 at
    [12.345, 19.595); a 1 MiB HtoD copy on stream 20 at [40, 50); a tail kernel at 1000."""
    t = TraceBuilder()
    t.device_properties(0)
    t.op("aten::mm", ts=0, dur=30)
    t.runtime("cudaLaunchKernel", ts=5, dur=4, correlation=7)
    t.kernel(GEMM, ts=12.345, dur=7.25, correlation=7, device=0, stream=7)
    t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=40, dur=10, bytes=1 << 20, device=0,
             stream=20)
    t.kernel("tail_kernel", ts=1000, dur=5, device=0, stream=7)
    return t.write(tmp_path / name)


def gpu_row(p: Page, stream: int) -> dict[str, Any]:
    return p.js("(() => { const r = tl.rows.find(r => r.side === 'gpu' && r.src.stream === arg);"
                " return {y: r.y, h: r.h}; })()", stream)


def test_hover_a_kernel_names_it_with_duration_and_launching_op(browser: Any,
                                                                tmp_path: Path) -> None:
    p = Page(browser, write_page(tmp_path, [launch_trace(tmp_path)]))
    row = gpu_row(p, 7)
    x = p.js("tl.xAt(arg)", (12_345 + 19_595) / 2)
    tip = p.hover(x, row["y"] + row["h"] / 2)

    assert tip.splitlines() == [
        GEMM,
        "kernel · GPU 0 · stream 7",
        "start 12.345 µs · duration 7.250 µs · end 19.595 µs",
        "launched by cudaLaunchKernel ← aten::mm (5.000 µs)",
    ]
    # the copy: 1 MiB in 10 µs = 1048576 B / 10000 ns = 104.86 GB/s
    row = gpu_row(p, 20)
    tip = p.hover(p.js("tl.xAt(45000)"), row["y"] + row["h"] / 2)
    assert "1.00 MiB (1048576 bytes) · 104.86 GB/s" in tip.splitlines()
    assert "start 40.000 µs · duration 10.000 µs · end 50.000 µs" in tip.splitlines()
    p.clean()


def test_an_op_lists_its_kernels_and_a_click_pins_the_launch_link(browser: Any,
                                                                  tmp_path: Path) -> None:
    p = Page(browser, write_page(tmp_path, [launch_trace(tmp_path)]))
    host = p.js("(() => { const r = tl.rows.find(r => r.type === 'host'); return {y: r.y}; })()")
    tip = p.hover(p.js("tl.xAt(2000)"), host["y"] + 5)  # depth 0: aten::mm, before its launch
    assert tip.splitlines()[0] == "aten::mm"
    assert f"1 GPU activity launched, 7.250 µs in all: {GEMM}" in tip.splitlines()

    row = gpu_row(p, 7)
    p.page.mouse.click(*p.canvas_point(p.js("tl.xAt(16000)"), row["y"] + row["h"] / 2))
    details = p.page.inner_text(".tp-details")
    assert details.splitlines()[0] == GEMM
    assert "launched by cudaLaunchKernel ← aten::mm (5.000 µs)" in details
    # the link is drawn from the runtime call (host lane, depth 1) to the kernel
    ends = p.js("(() => { const s = tl.selected, l = tl.links(s.trace, s.side, s.i); return"
                " [tl.place(s.trace, 'cpu', l.launcher), tl.place(s.trace, 'gpu', s.i)]; })()")
    assert ends[0]["y"] == host["y"] + 13 and ends[1]["y"] == row["y"]
    assert ends[0]["x0"] == pytest.approx(p.js("tl.xAt(5000)"))
    p.clean()


def view(p: Page) -> tuple[float, float]:
    return tuple(p.js("[tl.v0, tl.v1]"))  # type: ignore[return-value]


def test_zoom_in_and_out_with_buttons_and_wheel(browser: Any, tmp_path: Path) -> None:
    p = Page(browser, write_page(tmp_path, [launch_trace(tmp_path)]))
    v0, v1 = view(p)
    span = v1 - v0
    assert v0 == 0 and span == 1_005_000  # aten::mm at 0 µs to the tail kernel's end at 1005 µs
    text = p.page.inner_text(".tp-view")
    assert text == "showing 0 – 1.0 ms of 1.00 ms"

    p.page.click(".tp-zoom-in")
    a, b = view(p)
    assert b - a == pytest.approx(span / 2)
    assert p.page.inner_text(".tp-view") != text
    p.page.click(".tp-zoom-out")
    a, b = view(p)
    assert b - a == pytest.approx(span)

    row = gpu_row(p, 7)
    p.page.mouse.move(*p.canvas_point(p.js("tl.xAt(16000)"), row["y"] + 4))
    for _ in range(6):
        p.page.mouse.wheel(0, -400)
    p.page.wait_for_function("document.querySelector('.tp-timeline').tpTimeline.v1 < 200000")
    a, b = view(p)
    assert a <= 16_000 <= b and b - a < span / 5  # zoomed in around the pointer
    # zoomed in, the GEMM is a box with its name in it
    assert p.js("tl.stats.boxes") >= 1
    p.page.dblclick(".tp-timeline canvas")
    assert view(p) == (0, span)
    p.clean()


def frames_sweep(trace: Path, pattern: str) -> tuple[int, int, int]:
    """(events, names, total ns) of the names matching ``pattern``, straight from the frames."""
    from traceprobe.load.pipeline import load

    tl = LOADED.setdefault(trace, load(trace))
    rx = re.compile(pattern, re.I)
    count = names = total = 0
    seen: set[str] = set()
    for df in (tl.gpu, tl.cpu):
        for name, s, e in zip(df["name"], df["start"], df["end"], strict=True):
            if rx.search(str(name)):
                count += 1
                total += int(e) - int(s)
                seen.add(str(name))
    names = len(seen)
    return count, names, total


def test_search_finds_ops_by_regex_and_totals_their_time(browser: Any, tmp_path: Path) -> None:
    (trace,) = sorted(CPU_ONLY.glob("*.pt.trace.json.gz"))
    p = Page(browser, write_page(tmp_path, [trace]))
    pattern = r"^aten::(add)?mm$"
    p.page.fill(".tp-search", pattern)
    total_line = p.page.inner_text(".tp-results-total")
    count, names, total = frames_sweep(trace, pattern)
    assert count > 0 and names == 2
    assert total_line == f"{count} matching events of {names} names, {total / 1000:,.3f} µs in all"
    rows = p.page.eval_on_selector_all(".tp-results tr", "rs => rs.map(r => r.innerText)")
    assert len(rows) == 1 + names and {r.split("\t")[0] for r in rows[1:]} == {"aten::mm",
                                                                               "aten::addmm"}
    assert p.js("tl.match[0].reduce((a, b) => a + b, 0)") == names  # names highlighted

    p.page.fill(".tp-search", "aten::(")
    assert p.page.inner_text(".tp-results").startswith("not a regular expression")
    p.page.fill(".tp-search", "")
    assert p.js("tl.match") is None
    p.clean()


def test_host_lanes_on_a_cpu_only_trace(browser: Any, tmp_path: Path) -> None:
    from traceprobe.load.pipeline import load

    (trace,) = sorted(CPU_ONLY.glob("*.pt.trace.json.gz"))
    tl = LOADED.setdefault(trace, load(trace))
    assert tl.gpu.empty
    threads = sorted(set(tl.cpu["tid"].tolist()))
    p = Page(browser, write_page(tmp_path, [trace]))
    labels = p.js("tl.rows.map(r => r.label)")
    hosts = [f"host · thread {t}" for t in threads]
    assert labels in (hosts, [*hosts, "critical path"])  # the host-side path, when computed
    depth = p.js("tl.rows[0].levels.length")
    assert depth >= 3  # step annotation ⊃ module op ⊃ aten ops: nesting is shown
    # the first op on the thread, hovered on its own level
    first = tl.cpu[tl.cpu["kind"] == "cpu_op"].sort_values(["start", "end"],
                                                            ascending=[True, False]).iloc[0]
    lo = tl.span[0]  # the report's window: the whole trace
    i = p.js("(() => { const t = tl.traces[0].ev.cpu; for (let i = 0; i < t.n; i++)"
             " if (t.s[i] === arg) return i; return -1; })()", int(first["start"]) - lo)
    assert i >= 0
    spot = p.js("tl.place(0, 'cpu', arg)", i)
    tip = p.hover((spot["x0"] + spot["x1"]) / 2, spot["y"] + 5)
    assert tip.splitlines()[0] == first["name"]
    assert tip.splitlines()[1] == f"op · host thread {first['tid']}"
    p.clean()


def test_several_traces_one_above_the_other_on_one_axis(browser: Any, tmp_path: Path) -> None:
    (cpu_trace,) = sorted(CPU_ONLY.glob("*.pt.trace.json.gz"))
    p = Page(browser, write_page(tmp_path, [launch_trace(tmp_path), cpu_trace]))
    groups = p.js("tl.rows.filter(r => r.type === 'group').map(r => [r.label, r.y])")
    assert [g[0] for g in groups] == [f"[0] {tmp_path / 'launch.json'}", f"[1] {cpu_trace}"]
    assert groups[0][1] < groups[1][1]
    assert p.js("tl.span") == max(p.js("tl.traces.map(t => t.lanes.span_ns)"))
    assert p.page.locator(".tp-timeline").count() == 1
    p.clean()


def test_critical_path_lane_when_the_report_has_one(browser: Any, tmp_path: Path) -> None:
    trace = launch_trace(tmp_path)
    from traceprobe.load.pipeline import load

    lo_us = LOADED.setdefault(trace, load(trace)).span[0] / 1000
    critical = {"length_us": 17.595, "breakdown": {"cpu": 10.345, "gpu": 7.25}, "segments": [
        {"start_us": lo_us + 2, "end_us": lo_us + 12.345, "kind": "cpu", "name": "aten::mm"},
        {"start_us": lo_us + 12.345, "end_us": lo_us + 19.595, "kind": "gpu", "name": GEMM}]}
    p = Page(browser, write_page(tmp_path, [trace], extra={"critical_path": critical}))
    labels = p.js("tl.rows.map(r => r.label)")
    assert labels[-1] == "critical path"
    row = p.js("(() => { const r = tl.rows[tl.rows.length - 1]; return {y: r.y, h: r.h}; })()")
    tip = p.hover(p.js("tl.xAt(16000)"), row["y"] + row["h"] / 2)
    assert tip.splitlines() == [GEMM, "critical path · gpu",
                                "start 12.345 µs · duration 7.250 µs"]
    p.clean()
    # without the key: no such row
    p = Page(browser, write_page(tmp_path, [trace], name="plain.html",
                                 extra={"critical_path": None}))
    assert "critical path" not in p.js("tl.rows.map(r => r.label)")


def test_nothing_is_fetched(browser: Any, tmp_path: Path) -> None:
    p = Page(browser, write_page(tmp_path, [launch_trace(tmp_path)]))
    p.page.click(".tp-zoom-in")
    p.clean()
    assert browser.tp_requests == []


@pytest.mark.skipif(not BIG.is_file(), reason=f"{BIG} not found")
def test_the_98_mb_trace_page_is_small_and_paints_fast(browser: Any, tmp_path: Path) -> None:
    page = write_page(tmp_path, [BIG], "big.html")
    assert page.stat().st_size <= 5_000_000
    p = Page(browser, page)
    first_paint_ms = int(p.page.get_attribute(".tp-timeline", "data-first-paint-ms"))
    assert first_paint_ms <= 2000, p.page.get_attribute(".tp-timeline", "data-timings-ms")
    events = p.js("tl.traces[0].ev.gpu.n + tl.traces[0].ev.cpu.n")
    tl = LOADED[BIG]
    w = analyze(tl).window  # the report's window: the profiled steps, start-up left out
    inside = 0
    for df in (tl.gpu, tl.cpu):  # as the page takes them: meeting the window, or 0-long in it
        s, e = df["start"], df["end"]
        inside += int((((s < w.end_ns) & (e > w.start_ns))
                       | ((s == e) & (s >= w.start_ns) & (s < w.end_ns))).sum())
    assert events == inside  # every event of the window is on the page
    # Zoomed out, most events are aggregated per pixel; zoomed in to 50 µs, nearly every
    # event is its own box (those under 3 px, ~130 ns here, still add to pixel coverage).
    assert p.js("tl.stats.aggregated") > 100_000
    p.js("tl.setView(300e6, 300.4e6)")  # labels keep the digits this view needs
    assert p.page.inner_text(".tp-view").startswith("showing 300.00 ms – 300.40 ms of ")
    p.js("tl.setView(300e6, 300.05e6)")
    stats = p.js("tl.stats")
    assert stats["boxes"] >= 10 and stats["aggregated"] <= stats["boxes"] / 10, stats
    p.clean()
