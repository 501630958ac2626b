"""Per-device and per-stream busy time and stream concurrency, on hand-built timelines.

Every expected number is worked out by hand in the comments (times in ns).
"""

from __future__ import annotations

from frames import copy, kernel, memset, op, timeline
from traceprobe.metrics.devices import StreamPair, device_busy, stream_busy, stream_concurrency
from traceprobe.metrics.grouping import Windows
from traceprobe.report import analyze, check


def _one_device_mix():
    # stream 7: kernels [0,10) [5,12) overlap on one stream, a zero-length kernel at 20,
    #           a memset [30,35); stream 20: a copy [8,15). A CPU op [-10,50) sets the window.
    return timeline(
        gpu=[
            kernel(0, 10),
            kernel(5, 12),
            kernel(20, 20),
            memset(30, 35),
            copy(8, 15, "HtoD", stream=20),
        ],
        cpu=[op(-10, 50)],
        names={0: "NVIDIA H200"},
    )


def test_device_busy_unions_kinds_and_counts_zero_length_events() -> None:
    # GIVEN one device with overlapping kernels, a zero-length kernel, a memset and a copy
    r = analyze(_one_device_mix())
    check(r)
    # THEN kernels ∪ = [0,12) = 12; copy 7; memset 5; busy = [0,15) ∪ [30,35) = 20
    (d,) = r.devices
    assert (d.device, d.name) == (0, "NVIDIA H200")
    assert (d.kernel_ns, d.memcpy_ns, d.memset_ns, d.busy_ns) == (12, 7, 5, 20)
    # window [-10, 50) = 60; idle 40; first activity 0, last end 35
    assert (r.span_ns, d.idle_ns, d.utilization, d.active_span_ns) == (60, 40, 20 / 60, 35)
    # the zero-length kernel covers no time but is counted
    assert (d.kernels, d.memcpys, d.memsets, d.streams) == (3, 1, 1, 2)
    assert r.gpu_span_ns == 35


def test_stream_busy_and_self_overlap() -> None:
    r = analyze(_one_device_mix())
    s7, s20 = r.streams
    # stream 7: [0,12) ∪ [30,35) = 17; the two kernels overlap on [5,10) -> self overlap 5
    assert (s7.device, s7.stream, s7.busy_ns, s7.self_overlap_ns) == (0, 7, 17, 5)
    assert (s7.kernels, s7.memcpys, s7.memsets, s7.kernel_ns, s7.memcpy_ns) == (3, 0, 1, 12, 0)
    # stream 20: one copy [8,15)
    assert (s20.stream, s20.busy_ns, s20.self_overlap_ns) == (20, 7, 0)
    assert (s20.kernels, s20.memcpys, s20.memsets, s20.kernel_ns, s20.memcpy_ns) == (0, 1, 0, 0, 7)


def test_overlapping_kernels_on_one_stream_count_as_one_stream() -> None:
    # GIVEN at [8,10) two kernels of stream 7 and the copy of stream 20 run: raw depth 3
    r = analyze(_one_device_mix())
    (c,) = r.overlap.streams
    # THEN only 2 *streams* are busy: max 2; concurrent = [8,12) = 4 (stream 7's union ∩ [8,15))
    assert (c.device, c.streams, c.max_concurrent, c.concurrent_ns) == (0, 2, 2, 4)
    assert c.pairs == (StreamPair((7, 20), 4),)


def test_three_streams_max_concurrent_three() -> None:
    # GIVEN streams 1 [0,10)+[9,12), 2 [5,15), 3 [8,20)
    tl = timeline(
        gpu=[
            kernel(0, 10, stream=1),
            kernel(9, 12, stream=1),
            kernel(5, 15, stream=2),
            kernel(8, 20, stream=3),
        ]
    )
    r = analyze(tl)
    check(r)
    (c,) = r.overlap.streams
    # depth over stream unions [0,12) [5,15) [8,20): 1 on [0,5), 2 on [5,8), 3 on [8,12),
    # 2 on [12,15), 1 on [15,20) -> >= 2 on [5,15) = 10, max 3
    assert (c.streams, c.concurrent_ns, c.max_concurrent) == (3, 10, 3)
    # pairs: 1&2 [5,12) = 7, 1&3 [8,12) = 4, 2&3 [8,15) = 7
    assert [(p.streams, p.overlap_ns) for p in c.pairs] == [((1, 2), 7), ((1, 3), 4), ((2, 3), 7)]
    # stream 1 self overlap [9,10) = 1
    assert [s.self_overlap_ns for s in r.streams] == [1, 0, 0]


def test_touching_streams_are_not_concurrent() -> None:
    # GIVEN stream 1 [0,5) and stream 2 [5,10): they touch at 5 (half-open intervals)
    r = analyze(timeline(gpu=[kernel(0, 5, stream=1), kernel(5, 10, stream=2)]))
    (c,) = r.overlap.streams
    assert (c.concurrent_ns, c.max_concurrent) == (0, 1)
    assert "Streams on GPU 0 never ran concurrently" in r.headlines


def test_requested_device_without_events_has_zero_rows() -> None:
    # GIVEN events on device 0 only; WHEN devices 0 and 1 are requested
    tl = timeline(gpu=[kernel(0, 10), copy(2, 4)], cpu=[op(0, 20)])
    r = analyze(tl, devices=[1, 0])
    check(r)
    # THEN device 1 is listed with zeros everywhere, and nothing crashes
    assert [d.device for d in r.devices] == [0, 1]
    d1 = r.device(1)
    assert (d1.busy_ns, d1.idle_ns, d1.utilization, d1.active_span_ns, d1.streams) == (
        0,
        20,
        0.0,
        0,
        0,
    )
    assert (d1.kernels, d1.memcpys, d1.memsets, d1.name) == (0, 0, 0, None)
    c1 = r.overlap.streams[1]
    assert (c1.device, c1.streams, c1.concurrent_ns, c1.max_concurrent, c1.pairs) == (
        1,
        0,
        0,
        0,
        (),
    )
    all1 = [c for c in r.overlap.copy_compute if c.device == 1]
    assert [(c.direction, c.memcpy_ns, c.hidden_fraction, c.copies) for c in all1] == [
        ("all", 0, None, 0)
    ]
    (pair,) = r.overlap.cross_device
    # busy(0) = 10, busy(1) = 0: overlap 0 of either 10; fraction of min is of zero time -> None
    assert (pair.overlap_ns, pair.either_ns, pair.fraction_of_either, pair.fraction_of_min) == (
        0,
        10,
        0.0,
        None,
    )
    h1 = r.host.devices[1]
    assert (h1.device, h1.idle_ns) == (1, 20)


def test_devices_filter_drops_other_devices() -> None:
    tl = timeline(gpu=[kernel(0, 10, device=0), kernel(0, 10, device=1)])
    r = analyze(tl, devices=[1])
    check(r)
    assert [d.device for d in r.devices] == [1]
    assert r.counts.kernels == 1
    # the window is still the whole trace's, so idle time does not depend on the filter
    assert r.span_ns == 10


def test_metric_functions_work_on_frames_directly() -> None:
    tl = _one_device_mix()
    one = Windows.one(0, 100)
    (busy,) = device_busy(tl.gpu, [0, 5], one)
    assert [(b.device, b.busy_ns, b.idle_ns, b.utilization) for b in busy] == [
        (0, 20, 80, 0.2),
        (5, 0, 100, 0.0),
    ]
    assert device_busy(tl.gpu, [0], Windows.one(0, 0))[0][0].utilization is None
    (streams,) = stream_busy(tl.gpu, [0], one)
    assert [(s.stream, s.busy_ns) for s in streams] == [(7, 17), (20, 7)]
    ((c,),) = stream_concurrency([streams], [0], one)
    assert c.concurrent_ns == 4
