"""The top-level Python API on a timeline small enough to work out by hand.

GPU 0, stream 7: kernels [0, 10) and [5, 20) µs; stream 20: a DtoH copy [15, 30) µs.
Host: one runtime call [-10, -5) µs. So, by hand:
  window -10 .. 30 = 40 µs; GPU 0 busy |[0, 30)| = 30 µs, utilization 30/40 = 0.75;
  kernels |[0, 20)| = 20 µs; the copy is hidden under kernels for [15, 20) = 5 µs, exposed 10 µs;
  stream 7 busy 20 µs, stream 20 busy 15 µs; streams 7 and 20 both busy [15, 20) = 5 µs.
"""

from __future__ import annotations

import pytest

import traceprobe
from frames import copy, kernel, runtime, timeline

US = 1000


@pytest.fixture
def tl():
    return timeline(
        gpu=[kernel(0, 10 * US), kernel(5 * US, 20 * US),
             copy(15 * US, 30 * US, "DtoH", stream=20)],
        cpu=[runtime(-10 * US, -5 * US)],
        source="hand.json",
    )


def test_frames_are_the_json_rows_in_microseconds(tl) -> None:
    report = traceprobe.analyze(tl)
    dev = report.devices_frame().set_index("device")
    assert dev.loc[0, "busy_us"] == 30.0
    assert dev.loc[0, "kernel_us"] == 20.0 and dev.loc[0, "memcpy_us"] == 15.0
    assert dev.loc[0, "utilization"] == pytest.approx(0.75)
    streams = report.streams_frame().set_index("stream")
    assert streams.loc[7, "busy_us"] == 20.0 and streams.loc[20, "busy_us"] == 15.0
    copies = report.copies_frame().set_index("direction")
    dtoh = copies.loc["DtoH", ["memcpy_us", "hidden_us", "exposed_us"]]
    assert dtoh.tolist() == [15.0, 5.0, 10.0]
    assert report.stream_overlap_frame().loc[0, "concurrent_us"] == 5.0
    # same names as the JSON, row for row
    d = report.to_dict()
    assert report.devices_frame().to_dict("records") == d["devices"]
    assert list(report.copies_frame().columns) == list(d["overlap"]["copy_compute"][0])
    assert report.cross_device_frame().empty and report.steps_frame().empty


def test_reprs_say_counts_and_span_not_every_row(tl) -> None:
    assert repr(tl) == ("Timeline of hand.json (kineto)\n"
                        "  2 kernels, 1 memcpy, 0 memsets on GPU 0; 1 CPU event; steps 0;"
                        " span 0.040 ms")
    html = tl._repr_html_()
    assert "<table>" in html and "hand.json" in html and "0.040 ms" in html
    text = repr(traceprobe.analyze(tl))
    assert text.startswith("Report of hand.json (kineto)\n  window 0.040 ms (the whole trace);"
                           " GPU span 0.030 ms; GPU 0\n  2 kernels, 1 memcpy, 0 memsets,")
    assert len(text.splitlines()) < 15


def test_check_and_compare_take_reports_dicts_and_timelines(tl) -> None:
    results = traceprobe.check(tl, ["utilization[0] >= 0.75", "hidden_copy_fraction[0] > 0.5"])
    assert [r.passed for r in results] == [True, False]  # 0.75; 5/15 = 0.333
    assert results[1].value == pytest.approx(5 / 15)
    single = traceprobe.check(traceprobe.analyze(tl).to_dict(), "utilization[0] > 0.75")
    assert [r.passed for r in single] == [False]

    # the same work without the host call: window 0 .. 30 µs, so a 40/30 speedup of the span
    b = timeline(gpu=[kernel(0, 10 * US), kernel(5 * US, 20 * US),
                      copy(15 * US, 30 * US, "DtoH", stream=20)])
    diff = traceprobe.compare(traceprobe.analyze(tl), b)
    assert diff["speedup"]["span"] == pytest.approx(40 / 30)
    assert diff["speedup"]["gpu_span"] == pytest.approx(1.0)
