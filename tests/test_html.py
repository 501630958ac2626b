"""The HTML report: lane data (render/lanes.py), the page (render/html.py), the page in a browser.

The lane tests use a hand-built two-GPU timeline with figures worked out by hand (ns):

    GPU 0 stream 7   kernels [0, 100) [150, 250)
    GPU 0 stream 20  copy    [50, 200)
    GPU 1 stream 7   kernel  [80, 180), memset [200, 220)
    steps #1 [0, 120), #2 [120, 260)

so ≥2 GPUs busy = [80, 180) ∪ [200, 220); GPU 0's copy under kernels and its two
streams at once are both [50, 100) ∪ [150, 200).

The browser tests open the page in headless Chromium (skipped where `chromium` is
not on PATH; CI installs Debian's `chromium`): the canvas must draw (the timeline
element gets ``data-rendered="N lanes"``), nothing may reach ``#errors`` or the
console, zooming and hovering must work, and the screenshot must show the lanes.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import frames  # tests/frames.py
from tracebuild import TraceBuilder
from traceprobe.intervals import Spans, difference, spans
from traceprobe.render.html import render, render_html
from traceprobe.render.lanes import (
    MAX_PIECES,
    Band,
    Lane,
    build_lanes,
    lanes_for_report,
    merge_close,
    raster,
)
from traceprobe.timeline import GPU_COLUMNS

NASTY = '</script><script>alert("x")</script> & <T>'


def two_gpus(kernel_name: str = "k") -> Any:
    return frames.timeline(
        gpu=[
            frames.kernel(0, 100, kernel_name, device=0, stream=7),
            frames.kernel(150, 250, kernel_name, device=0, stream=7),
            frames.copy(50, 200, "HtoD", device=0, stream=20),
            frames.kernel(80, 180, device=1, stream=7),
            frames.memset(200, 220, device=1, stream=7),
        ],
        steps=[(1, 0, 120), (2, 120, 260)],
        names={0: "NVIDIA H200", 1: "NVIDIA H200"},
    )


def pairs(s: Spans) -> list[tuple[int, int]]:
    return list(zip(s.starts.tolist(), s.ends.tolist(), strict=True))


# ----------------------------------------------------------------------------- lanes


def test_lanes_rows_and_bands_by_hand() -> None:
    lanes = build_lanes(two_gpus())

    assert (lanes.lo, lanes.hi, lanes.merge_ns) == (0, 260, 0)
    assert [r.label for r in lanes.rows()] == [
        "≥2 GPUs busy",
        "GPU 0 copy hidden under kernels",
        "GPU 0 ≥2 streams busy",
        "GPU 0 · stream 7",
        "GPU 0 · stream 20",
        "GPU 1 · stream 7",
    ]
    by_label = {r.label: r for r in lanes.rows()}
    assert pairs(by_label["≥2 GPUs busy"].pieces["multi_device"]) == [(80, 180), (200, 220)]
    assert pairs(by_label["GPU 0 copy hidden under kernels"].pieces["copy_hidden"]) == [
        (50, 100), (150, 200)]
    assert pairs(by_label["GPU 0 ≥2 streams busy"].pieces["streams_concurrent"]) == [
        (50, 100), (150, 200)]
    gpu1 = by_label["GPU 1 · stream 7"]
    assert isinstance(gpu1, Lane) and gpu1.events == 2
    assert pairs(gpu1.pieces["kernel"]) == [(80, 180)]
    assert pairs(gpu1.pieces["memset"]) == [(200, 220)]
    assert [b.total_ns for b in lanes.bands] == [120, 100, 100]
    assert lanes.steps == ((1, 0, 120), (2, 120, 260))
    assert lanes.kinds() == ["kernel", "memcpy", "memset", "multi_device", "copy_hidden",
                             "streams_concurrent", "step"]


def test_payload_is_delta_coded_relative_to_the_window() -> None:
    lanes = build_lanes(two_gpus(), (40, 260))
    payload = lanes.to_payload()

    rows = {r["label"]: r for r in payload["rows"]}
    assert payload["span_ns"] == 220 and payload["lanes"] == 3
    # kernels [40, 100) (clipped) and [150, 250): gaps from the window start / previous end
    assert rows["GPU 0 · stream 7"]["kinds"] == {"kernel": [0, 60, 50, 100]}
    assert rows["≥2 GPUs busy"]["kinds"] == {"multi_device": [40, 100, 20, 20]}
    assert rows["≥2 GPUs busy"]["type"] == "band" and rows["≥2 GPUs busy"]["device"] is None
    assert payload["steps"] == [[1, 0, 80], [2, 80, 220]]  # clipped to the window
    json.dumps(payload)  # plain JSON types only


def test_merge_close_joins_gaps_up_to_the_step() -> None:
    a = spans([0, 12, 30], [10, 20, 40])
    assert pairs(merge_close(a, 1)) == pairs(a)
    assert pairs(merge_close(a, 2)) == [(0, 20), (30, 40)]
    assert pairs(merge_close(a, 10)) == [(0, 40)]


def test_merged_lanes_keep_each_piece_busy_fraction() -> None:
    tl = frames.timeline(gpu=[frames.kernel(0, 10), frames.kernel(12, 20), frames.kernel(30, 40)])
    merged = build_lanes(tl).merged(2)
    (lane,) = merged.lanes

    assert pairs(lane.pieces["kernel"]) == [(0, 20), (30, 40)]
    np.testing.assert_allclose(lane.density["kernel"], [18 / 20, 1.0])
    assert merged.to_payload()["rows"][0]["density"] == {"kernel": [900, 1000]}


def big_timeline(n: int = 300_000, seed: int = 0) -> Any:
    """``n`` activities on 2 GPUs x 4 streams, back to back with short random gaps."""
    rng = np.random.default_rng(seed)
    dev = rng.integers(0, 2, n)
    stream = rng.integers(7, 11, n)
    dur = rng.integers(1_000, 20_000, n)
    gap = rng.integers(500, 5_000, n)
    key = pd.DataFrame({"d": dev, "s": stream, "step": dur + gap})
    end = key.groupby(["d", "s"])["step"].cumsum().to_numpy() - gap
    kind = np.where(rng.random(n) < 0.1, "memcpy", "kernel")
    gpu = pd.DataFrame({
        "kind": kind, "name": "k", "device": dev, "stream": stream, "start": end - dur,
        "end": end, "correlation": -1, "external_id": -1, "bytes": -1,
        "copy_kind": np.where(kind == "memcpy", "HtoD", ""), "src_kind": "", "dst_kind": "",
        "peer": -1, "comm": False,
    }).astype({c: t for c, t in GPU_COLUMNS.items() if t in ("int64", "bool")})
    base = frames.timeline()
    return type(base)(gpu=gpu, cpu=base.cpu, steps=base.steps, meta=base.meta)


def test_a_300k_event_trace_is_downsampled_under_2_mb() -> None:
    tl = big_timeline()
    lanes = build_lanes(tl)
    payload = json.dumps(lanes.to_payload(), separators=(",", ":"))

    assert lanes.merge_ns > 0
    assert lanes.size <= MAX_PIECES
    assert len(payload) < 2_000_000
    # Merging only joins: every exact piece lies inside a merged one, ends stay exact.
    exact = build_lanes(tl, max_pieces=10**9)
    assert exact.merge_ns == 0
    for x, m in zip(exact.rows(), lanes.rows(), strict=True):
        assert x.label == m.label
        for kind, p in x.pieces.items():
            assert difference(p, m.pieces[kind]).empty
            assert set(m.pieces[kind].ends.tolist()) <= set(p.ends.tolist())


def test_width_px_merges_below_a_pixel() -> None:
    tl = frames.timeline(gpu=[frames.kernel(0, 10), frames.kernel(12, 20), frames.kernel(60, 100)])
    lanes = build_lanes(tl, width_px=10)  # 10 ns per pixel
    assert lanes.merge_ns == 10
    assert pairs(lanes.lanes[0].pieces["kernel"]) == [(0, 20), (60, 100)]


def test_raster_shows_the_longest_kind_per_pixel() -> None:
    row = Lane({"kernel": spans([0], [55]), "memcpy": spans([55], [62])}, device=0, stream=7)
    kinds, dominant, busy = raster(row, 0, 100, 10)

    assert kinds == ["kernel", "memcpy"]
    assert dominant.tolist() == [0, 0, 0, 0, 0, 0, 1, -1, -1, -1]  # pixel 5: 5 ns each: kernel
    np.testing.assert_allclose(busy, [1, 1, 1, 1, 1, 1, 0.2, 0, 0, 0])
    with pytest.raises(ValueError):
        raster(Band({"copy_hidden": spans([0], [5])}, density={"copy_hidden": np.ones(1)}),
               0, 10, 2)


def test_lanes_for_report_uses_the_report_step_and_devices() -> None:
    tl = two_gpus()
    report = {"window": {"start_us": 0.12, "end_us": 0.26, "step": 2}, "devices": [{"device": 1}]}
    lanes = lanes_for_report(report, tl)

    assert (lanes.lo, lanes.hi) == (120, 260)
    assert [x.label for x in lanes.rows()] == ["GPU 1 · stream 7"]


def test_no_gpu_activity_gives_no_rows() -> None:
    tl = frames.timeline(cpu=[frames.op(0, 100)])
    lanes = build_lanes(tl)
    assert list(lanes.rows()) == [] and lanes.to_payload()["lanes"] == 0


# ----------------------------------------------------------------------------- the page


def report_for(tl: Any, trace: str = "runs/a.json") -> dict[str, Any]:
    from traceprobe.report import analyze

    d = analyze(tl).to_dict()
    d["trace"] = trace
    return d


def payloads(html: str) -> list[dict[str, Any]]:
    found = re.findall(r'<script type="application/json" id="tp-data-\d+">(.*?)</script>', html,
                       re.S)
    return [json.loads(x) for x in found]


def test_trace_strings_are_escaped() -> None:
    tl = two_gpus(kernel_name=NASTY)
    html = render_html([report_for(tl, trace=f"runs/{NASTY}.json")], [tl])

    assert NASTY not in html
    escaped = "&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;T&gt;"
    assert escaped in html
    # Only our own script elements: one JSON payload and the inlined timeline.js.
    assert html.count("<script") == 2 and html.count("</script>") == 2
    (payload,) = payloads(html)
    assert payload["lanes"] == 3


def test_one_section_per_trace_and_nothing_external() -> None:
    a, b = two_gpus(), frames.timeline(gpu=[frames.kernel(0, 50)])
    html = render_html([report_for(a, "a.json"), report_for(b, "b.json")], [a, b])

    assert html.count('<section class="tp-trace"') == 2
    assert 'id="trace-0"' in html and 'id="trace-1"' in html
    assert [p["lanes"] for p in payloads(html)] == [3, 1]
    assert html.count('class="tp-timeline"') == 2
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "fetch(" not in html


def test_tables_and_headlines_are_there() -> None:
    tl = two_gpus()
    r = report_for(tl)
    html = render_html([r], [tl])

    for headline in r["headlines"]:
        assert f"<li>{headline}</li>".replace("&", "&amp;") in html
    for title in ("GPUs", "Streams", "GPU vs GPU", "Copies vs compute", "Stream vs stream"):
        assert f"<h3>{title}</h3>" in html


def test_render_signature_without_timelines() -> None:
    r = report_for(two_gpus())
    html = render(r, top=3)
    assert html.startswith("<!DOCTYPE html>") and 'class="tp-timeline"' not in html
    multi = {"schema": "traceprobe.reports/1", "traces": [r, r], "cross_trace": None}
    assert render_html(multi).count('<section class="tp-trace"') == 2


# ----------------------------------------------------------------------------- the browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not on PATH (CI installs Debian's 'chromium'; so does make setup)",
)

# After the page drew, zoom with the wheel at x=700, drag, hover a lane; report into #probe.
INTERACT = """
<div id="probe"></div>
<script>
document.addEventListener("DOMContentLoaded", function () {  // after timeline.js's own handler
  var el = document.querySelector(".tp-timeline"), c = el.querySelector("canvas");
  var r = c.getBoundingClientRect(), y = r.top + 60;
  var before = el.querySelector(".tp-view").textContent;
  c.dispatchEvent(new WheelEvent("wheel", {deltaY: -600, clientX: r.left + 700, clientY: y,
                                           bubbles: true, cancelable: true}));
  c.dispatchEvent(new MouseEvent("mousedown", {clientX: r.left + 700, clientY: y, bubbles: true}));
  window.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + 650, clientY: y}));
  window.dispatchEvent(new MouseEvent("mouseup", {}));
  var lane = el.tpTimeline.rows[el.tpTimeline.rows.length - 1];
  c.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + 700,
                                               clientY: r.top + lane.y + 4, bubbles: true}));
  var zoomed = el.querySelector(".tp-view").textContent;
  var readout = el.querySelector(".tp-readout").textContent;
  el.querySelector(".tp-reset").click();
  var reset = el.querySelector(".tp-view").textContent;
  document.getElementById("probe").textContent = JSON.stringify(
    {before: before, zoomed: zoomed, readout: readout, reset: reset});
});
</script>
"""


def chromium(tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-quic", "--no-first-run", f"--user-data-dir={profile}",
        "--enable-logging=stderr", "--v=0", "--window-size=1400,900", *args, page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def browser_page(tmp_path: Path, extra: str = "") -> tuple[Path, int]:
    """A two-GPU trace through the whole pipeline (builder → loader → report → HTML)."""
    from traceprobe.load.pipeline import load
    from traceprobe.report import analyze

    t = TraceBuilder()
    t.device_properties(0, 1)
    t.step(1, 0, 100)
    t.step(2, 100, 100)
    for i in range(20):
        t.launch(f"void gemm<{NASTY}>(#{i % 3})", cpu_ts=i * 10, cpu_dur=3, gpu_ts=i * 10 + 4,
                 gpu_dur=7, device=0, stream=7)
        t.kernel("k1", ts=i * 10 + 2, dur=8, device=1, stream=7)
        if i % 4 == 0:
            t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=i * 10 + 1, dur=12, device=0,
                     stream=20)
            t.memset(ts=i * 10 + 3, dur=2, device=1, stream=21)
    tl = load(t.write(tmp_path / "two.json"))
    html = render_html([analyze(tl).to_dict()], [tl])
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", extra + "</body>"), encoding="utf-8")
    return page, 4


@needs_chromium
def test_page_renders_in_chromium_without_errors(tmp_path: Path) -> None:
    page, lanes = browser_page(tmp_path)
    run = chromium(tmp_path, page, "--dump-dom")

    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    drawn = rf'<div class="tp-timeline"[^>]*data-rendered="{lanes} lanes"'
    assert re.search(drawn, dom), dom[:3000]
    assert re.search(r'<div id="errors" role="alert"></div>', dom), dom
    assert console_lines(run.stderr) == []


@needs_chromium
def test_zoom_pan_hover_and_reset_work(tmp_path: Path) -> None:
    page, _ = browser_page(tmp_path, INTERACT)
    run = chromium(tmp_path, page, "--dump-dom")

    m = re.search(r'<div id="probe">(.*?)</div>', run.stdout, re.S)
    assert m, run.stdout[-3000:]
    probe = json.loads(m.group(1).replace("&amp;", "&").replace("&quot;", '"'))
    assert re.fullmatch(r"showing 0 – (\S+ µs) of \1", probe["before"]), probe
    assert probe["zoomed"] != probe["before"]  # the wheel zoomed in
    assert "GPU 1 · stream 21" in probe["readout"]  # hovering the last lane names it
    assert probe["reset"] == probe["before"]
    assert re.search(r'<div id="errors" role="alert"></div>', run.stdout)
    assert console_lines(run.stderr) == []


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@needs_chromium
def test_screenshot_shows_the_lanes(tmp_path: Path) -> None:
    page, _ = browser_page(tmp_path)
    shot = tmp_path / "shot.png"
    run = chromium(tmp_path, page, f"--screenshot={shot}")

    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    data = shot.read_bytes()
    assert png_size(data) == (1400, 900)
    assert len(data) > 20_000  # a blank page is a few kB
    assert console_lines(run.stderr) == []
    image = pytest.importorskip("matplotlib.image")
    px = (image.imread(shot)[:, :, :3] * 255).round().astype(int)
    kernel_blue = np.all(np.abs(px - [0x4C, 0x78, 0xA8]) <= 2, axis=-1).sum()
    copy_orange = np.all(np.abs(px - [0xF5, 0x85, 0x18]) <= 2, axis=-1).sum()
    # The legend swatches are 140 px each; the lanes are thousands.
    assert kernel_blue > 2000 and copy_orange > 500
