"""The HTML report: lane data (render/lanes.py), the page (render/html.py), the page in a browser.

The lane tests use a hand-built two-GPU timeline with figures worked out by hand (ns):

    GPU 0 stream 7   kernels [0, 100) [150, 250)
    GPU 0 stream 20  copy    [50, 200)
    GPU 1 stream 7   kernel  [80, 180), memset [200, 220)
    steps #1 [0, 120), #2 [120, 260)

so ≥2 GPUs busy = [80, 180) ∪ [200, 220); GPU 0's copy under kernels and its two
streams at once are both [50, 100) ∪ [150, 200); GPU 0 is busy over [0, 250), so idle
[250, 260); GPU 1 is idle [0, 80) ∪ [180, 200) ∪ [220, 260).

The event tables of the page (render/events.py) are unpacked here with an independent
decoder (``unpack``) and compared with the frames they came from. The page in a real
browser is tested in tests/render/test_browser.py.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from dataclasses import replace
from html import escape as html_escape
from typing import Any

import numpy as np
import pandas as pd
import pytest

import frames  # tests/frames.py
from traceprobe.intervals import Spans, difference, spans
from traceprobe.render import as_report
from traceprobe.render.events import EVENT_KINDS, event_detail, nesting
from traceprobe.render.html import critical_segments, page_title, render, render_html
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
    lanes = build_lanes(two_gpus(), idle=True)

    assert (lanes.lo, lanes.hi, lanes.merge_ns) == (0, 260, 0)
    assert [r.label for r in lanes.rows()] == [
        "≥2 GPUs busy",
        "GPU 0 copy hidden under kernels",
        "GPU 0 ≥2 streams busy",
        "GPU 0 idle",
        "GPU 0 · stream 7",
        "GPU 0 · stream 20",
        "GPU 1 idle",
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
    assert pairs(by_label["GPU 0 idle"].pieces["gpu_idle"]) == [(250, 260)]
    assert pairs(by_label["GPU 1 idle"].pieces["gpu_idle"]) == [(0, 80), (180, 200), (220, 260)]
    assert [b.total_ns for b in lanes.bands] == [120, 100, 100, 10, 140]
    assert lanes.steps == ((1, 0, 120), (2, 120, 260))
    assert lanes.kinds() == ["kernel", "memcpy", "memset", "multi_device", "copy_hidden",
                             "streams_concurrent", "gpu_idle", "step"]
    # without idle=True (annotate's overlap tracks), no idle bands
    assert [b.kind for b in build_lanes(two_gpus()).bands] == [
        "multi_device", "copy_hidden", "streams_concurrent"]


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
    rows = {r["label"]: r for r in merged.to_payload()["rows"]}
    assert rows["GPU 0 · stream 7"]["density"] == {"kernel": [900, 1000]}


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
    from traceprobe.report import analyze

    tl = two_gpus()
    report = analyze(tl, step=2, devices=[1])
    lanes = lanes_for_report(report, tl)

    assert (lanes.lo, lanes.hi) == (120, 260)
    assert [x.label for x in lanes.rows()] == ["GPU 1 · stream 7"]


def test_host_lanes_show_the_innermost_event_by_kind() -> None:
    lanes = build_lanes(launches(), hosts=True)
    one, two = lanes.hosts
    assert (one.label, one.events, two.label) == ("host thread 1", 5, "host thread 2")
    # step [0,100) ⊃ linear [10,60) ⊃ addmm [12,40) ⊃ launch [14,18); linear ⊃ memcpy [45,48)
    assert pairs(one.pieces["annotation"]) == [(0, 10), (60, 100)]
    assert pairs(one.pieces["cpu_op"]) == [(10, 14), (18, 45), (48, 60)]
    assert pairs(one.pieces["runtime"]) == [(14, 18), (45, 48)]
    assert list(two.pieces) == ["dataloader"] and pairs(two.pieces["dataloader"]) == [(0, 30)]
    assert list(lanes.rows())[-2:] == [one, two]
    assert all(r["label"] != one.label for r in lanes.to_payload()["rows"])  # events carry them
    assert build_lanes(launches()).hosts == ()


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
    found = re.findall(r'<script type="application/json" id="tp-data-\w+">(.*?)</script>', html,
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
    (trace,) = payload["traces"]
    assert trace["lanes"]["lanes"] == 3
    assert NASTY in trace["events"]["names"]  # the JSON still carries the name itself
    (title,) = re.findall(r"<title>(.*?)</title>", html)
    assert title == html_escape(page_title([as_report({"trace": f"runs/{NASTY}.json"})]))


def test_one_section_per_trace_and_one_time_axis() -> None:
    a, b = two_gpus(), frames.timeline(gpu=[frames.kernel(0, 50)])
    html = render_html([report_for(a, "runs/a.json"), report_for(b, "runs/b.json")], [a, b])

    assert html.count('<section class="tp-trace"') == 2
    assert 'id="trace-0"' in html and 'id="trace-1"' in html
    # Several traces: one picture holding both, one above the other.
    assert html.count('class="tp-timeline"') == 1
    (payload,) = payloads(html)
    assert [t["lanes"]["lanes"] for t in payload["traces"]] == [3, 1]
    assert [t["title"] for t in payload["traces"]] == ["[0] runs/a.json", "[1] runs/b.json"]
    assert "<title>2 traces: a.json, b.json — traceprobe</title>" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "fetch(" not in html
    assert "XMLHttpRequest" not in html and "import(" not in html


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


def test_title_and_header_name_the_trace() -> None:
    r = report_for(two_gpus(), "/data/run7/rank0.pt.trace.json.gz")
    html = render_html([r], [two_gpus()])
    assert "<title>rank0.pt.trace.json.gz — traceprobe</title>" in html
    assert "<h1>rank0.pt.trace.json.gz — traceprobe</h1>" in html
    obj = as_report(r)
    step = replace(obj, window=replace(obj.window, step=2))
    assert page_title([step]) == "rank0.pt.trace.json.gz — ProfilerStep#2 — traceprobe"
    names = [replace(obj, trace=f"r{i}.json") for i in range(5)]
    assert page_title(names) == "5 traces: r0.json, r1.json, r2.json, … — traceprobe"


# ----------------------------------------------------------------------------- events


def unpack(payload: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The page's two event tables, decoded independently of render/events.py's packer:
    gzip, then each column in the order and dtype the payload names, 8-byte aligned."""
    raw = gzip.decompress(base64.b64decode(payload["blob"]))
    types = {"u8": "<u1", "u16": "<u2", "i32": "<i4", "f64": "<f8"}
    out, at = [], 0
    for n, cols in ((payload["gpu_n"], payload["gpu_cols"]),
                    (payload["cpu_n"], payload["cpu_cols"])):
        table = {}
        for name, t in cols:
            a = np.frombuffer(raw, dtype=types[t], count=n, offset=at)
            table[name] = a.astype(np.int64) if t != "f64" else a
            at += -(-a.nbytes // 8) * 8
        df = pd.DataFrame(table)
        df["start"] = df["start"].cumsum()
        df["name"] = [payload["names"][i] for i in df["name"]]
        df["kind"] = [payload["kinds"][i] for i in df["kind"]]
        df["info"] = [payload["infos"][i] for i in df["info"]]
        out.append(df)
    assert at == len(raw)
    return out[0], out[1]


def launches() -> Any:
    """Thread 1: step [0, 100) ⊃ linear [10, 60) ⊃ addmm [12, 40) ⊃ launch [14, 18) (corr 5)
    and linear ⊃ launch [45, 48) (corr 6); thread 2: DataLoader next [0, 30).
    GPU 0 stream 7: gemm [20, 30) (corr 5), Memcpy HtoD [50, 58) of 4000 bytes (corr 6)."""
    return frames.timeline(
        gpu=[frames.kernel(20, 30, "gemm", correlation=5, external_id=11),
             frames.copy(50, 58, "HtoD", correlation=6, bytes=4000)],
        cpu=[frames.op(10, 60, "aten::linear", external_id=10),
             frames.op(12, 40, "aten::addmm", external_id=11),
             frames.runtime(14, 18, correlation=5, external_id=11),
             frames.runtime(45, 48, "cudaMemcpyAsync", correlation=6, external_id=10),
             frames.op(0, 30, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                       tid=2)],
        steps=[(1, 0, 100)],
    )


def test_nesting_by_hand() -> None:
    # one row: [0,100) ⊃ [10,60) ⊃ [12,40) and [45,48); [60,70) after; row 2 starts afresh
    row = np.array([0, 0, 0, 0, 0, 1])
    start = np.array([0, 10, 12, 45, 60, 5])
    end = np.array([100, 60, 40, 48, 70, 6])
    depth, parent = nesting(row, start, end)
    assert depth.tolist() == [0, 1, 2, 2, 1, 0]
    assert parent.tolist() == [-1, 0, 1, 1, 0, -1]


def test_event_tables_hold_every_event_with_true_times() -> None:
    tl = launches()
    payload = event_detail(tl, (5, 100)).payload()  # the window cuts the DataLoader op
    gpu, cpu = unpack(payload)

    assert [r["label"] for r in payload["gpu"]] == ["GPU 0 · stream 7"]
    assert [(r["label"], r["n"], r["depth"]) for r in payload["host"]] == [
        ("thread 1", 5, 4), ("thread 2", 1, 1)]
    assert gpu[["start", "dur", "name", "kind", "corr", "bytes"]].values.tolist() == [
        [15, 10, "gemm", "kernel", 5, -1], [45, 8, "Memcpy HtoD", "memcpy", 6, 4000]]
    got = cpu[["row", "start", "dur", "name", "kind", "depth", "parent", "corr"]]
    assert got.values.tolist() == [
        [0, -5, 100, "ProfilerStep#1", "annotation", 0, -1, -1],
        [0, 5, 50, "aten::linear", "cpu_op", 1, 0, -1],
        [0, 7, 28, "aten::addmm", "cpu_op", 2, 1, -1],
        [0, 9, 4, "cudaLaunchKernel", "runtime", 3, 2, 5],
        [0, 40, 3, "cudaMemcpyAsync", "runtime", 2, 1, 6],
        # not clipped to the window: starts 5 ns before it
        [1, -5, 30, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
         "dataloader", 0, -1, -1],
    ]
    assert set(payload["kinds"]) == set(EVENT_KINDS)


def test_events_outside_the_window_and_other_devices_are_left_out() -> None:
    tl = launches()
    gpu, cpu = unpack(event_detail(tl, (31, 44)).payload())
    assert gpu.empty  # gemm ends at 30, the copy starts at 50
    assert cpu["name"].tolist() == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    gpu, _ = unpack(event_detail(tl, None, devices=[1]).payload())
    assert gpu.empty


def test_too_many_events_keep_the_longest() -> None:
    tl = launches()
    detail = event_detail(tl, None, max_events=3)
    gpu, cpu = unpack(detail.payload())
    # durations: 100 (step), 50, 30 (DataLoader), 28, 10, 8, 4, 3 -> keep the three longest
    assert sorted(cpu["dur"].tolist() + gpu["dur"].tolist()) == [30, 50, 100]
    assert (detail.dropped, detail.shorter_than_ns) == (5, 30)


def test_optional_frame_columns_show_on_hover() -> None:
    tl = launches()
    gpu = tl.gpu.assign(grid=["[128,1,1]", ""], block=["[256,1,1]", ""], occupancy=[50.0, np.nan],
                        registers_per_thread=[32, -1], dur_ns=[10, 8], seq=[1, 2])
    cpu = tl.cpu.assign(input_dims=["[[4,8],[8,16]]", "", "", "", "", ""])
    detail = event_detail(type(tl)(gpu=gpu, cpu=cpu, steps=tl.steps, meta=tl.meta), None)
    g, c = unpack(detail.payload())
    assert g["info"].tolist() == [
        "grid [128,1,1] · block [256,1,1] · registers/thread 32 · est. occupancy 50%", ""]
    assert dict(zip(c["name"], c["info"], strict=True))["aten::linear"] == \
        "input dims [[4,8],[8,16]]"
    assert set(c["info"]) == {"input dims [[4,8],[8,16]]", ""}


def test_critical_path_segments_from_the_window_start() -> None:
    r = {"critical_path": {"length_us": 3.0, "breakdown": {}, "segments": [
        {"start_us": 1.0, "end_us": 2.5, "kind": "gpu", "name": "gemm"},
        {"start_us": 2.5, "end_us": 4.0, "kind": "cpu", "name": "aten::add"},
        {"start_us": 9.0, "end_us": 9.5, "kind": "cpu", "name": "outside"}]}}
    assert critical_segments(as_report(r), 500, 5000) == [[500, 2000, "gpu", "gemm"],
                                                         [2000, 3500, "cpu", "aten::add"]]
    assert critical_segments(as_report({}), 0, 10) is None
    assert critical_segments(as_report({"critical_path": {"segments": []}}), 0, 10) is None


def test_page_carries_events_and_critical_path() -> None:
    tl = launches()
    r = report_for(tl)
    r["critical_path"] = {"length_us": 0.01, "breakdown": {}, "segments": [
        {"start_us": 0.02, "end_us": 0.03, "kind": "gpu", "name": "gemm"}]}
    (payload,) = payloads(render_html([r], [tl]))
    (trace,) = payload["traces"]
    gpu, cpu = unpack(trace["events"])
    assert len(gpu) == len(tl.gpu) and len(cpu) == len(tl.cpu)
    assert trace["critical"] == [[20, 30, "gpu", "gemm"]]
    bare = {**report_for(tl), "critical_path": None}  # a report without a critical path
    html = render_html([bare], [tl])
    assert "DataLoader</span>" in html and "runtime call</span>" in html  # legend
    assert payloads(html)[0]["traces"][0]["critical"] is None


def test_lanes_follow_the_report_window_exactly() -> None:
    """The picture covers the Report's window in exact ns (not re-derived from µs floats),
    whatever the trace's steps; without a report, the whole trace."""
    from traceprobe.report import analyze
    from traceprobe.report.model import Window

    tl = two_gpus()  # span [0, 260), steps [0, 120) and [120, 260)
    whole = analyze(tl)
    for lo, hi in ((0, 260), (50, 200), (121, 259)):
        lanes = lanes_for_report(replace(whole, window=Window(lo, hi, None, "events")), tl)
        assert (lanes.lo, lanes.hi) == (lo, hi)
    lanes = lanes_for_report(None, tl)
    assert (lanes.lo, lanes.hi) == (0, 260)
