"""Device vs device, copy vs compute, comm vs compute, serial-equivalent, across traces."""

from __future__ import annotations

from dataclasses import replace

from frames import comm, copy, kernel, op, timeline
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.overlap import CopyCompute, cross_device, multi_device_ns
from traceprobe.report import analyze, analyze_many, check


def _two_devices():
    # device 0: [0,10) [20,30); device 1: [5,25)
    return timeline(
        gpu=[kernel(0, 10, device=0), kernel(20, 30, device=0), kernel(5, 25, device=1)]
    )


def test_two_devices_partly_overlapping() -> None:
    r = analyze(_two_devices())
    check(r)
    (p,) = r.overlap.cross_device
    # busy 20 and 20; both on [5,10) + [20,25) = 10; either = 20 + 20 - 10 = 30
    assert p.devices == (0, 1)
    assert (p.overlap_ns, p.either_ns) == (10, 30)
    assert (p.fraction_of_either, p.fraction_of_min) == (10 / 30, 0.5)
    assert r.overlap.multi_device_ns == 10
    assert "GPU 0 and GPU 1 were both busy 33.3% of the time either was" in r.headlines


def test_multi_device_counts_each_device_once() -> None:
    # GIVEN device 2 [8,22) as well, and device 1 has two overlapping kernels on [5,25)
    tl = timeline(
        gpu=[
            kernel(0, 10, device=0),
            kernel(20, 30, device=0),
            kernel(5, 25, device=1),
            kernel(6, 9, device=1, stream=8),
            kernel(8, 22, device=2),
        ]
    )
    r = analyze(tl)
    check(r)
    # depth: [0,5) 1, [5,8) 2, [8,10) 3, [10,20) 2, [20,22) 3, [22,25) 2, [25,30) 1 -> >=2 on [5,25)
    assert r.overlap.multi_device_ns == 20
    pairs = {p.devices: p.overlap_ns for p in r.overlap.cross_device}
    # 0&1: [5,10)+[20,25) = 10; 0&2: [8,10)+[20,22) = 4; 1&2: [8,22) = 14
    assert pairs == {(0, 1): 10, (0, 2): 4, (1, 2): 14}
    one = Windows.one(r.window.start_ns, r.window.end_ns)
    assert multi_device_ns([r.devices[:1]], one) == [0]
    assert len(cross_device([r.devices], one)[0]) == 3


def test_copy_partly_hidden_per_direction() -> None:
    # GIVEN kernels [0,10) [25,27); copies HtoD [5,15) from pageable memory (100 B),
    #       DtoH [20,30) (200 B) and DtoH [22,24) of unknown size
    tl = timeline(
        gpu=[
            kernel(0, 10),
            kernel(25, 27),
            copy(5, 15, "HtoD", stream=20, bytes=100, src_kind="Pageable"),
            copy(20, 30, "DtoH", stream=21, bytes=200),
            copy(22, 24, "DtoH", stream=21, bytes=-1),
        ]
    )
    r = analyze(tl)
    check(r)
    # all: ∪ = [5,15)+[20,30) = 20; hidden [5,10)+[25,27) = 7; exposed 13
    # HtoD: 10, hidden 5; DtoH: ∪ [20,30) = 10, hidden 2
    assert r.overlap.copy_compute == (
        CopyCompute(0, "all", 20, 7, 13, 0.35, copies=3, bytes=300, pageable=1),
        CopyCompute(0, "HtoD", 10, 5, 5, 0.5, copies=1, bytes=100, pageable=1),
        CopyCompute(0, "DtoH", 10, 2, 8, 0.2, copies=2, bytes=200, pageable=0),
    )
    assert "Copies on GPU 0: 35.0% hidden under compute (13 ns exposed)" in r.headlines


def test_copy_fully_exposed_and_fully_hidden() -> None:
    hidden = analyze(timeline(gpu=[kernel(0, 100), copy(10, 20, "DtoD", stream=3)]))
    exposed = analyze(timeline(gpu=[kernel(0, 10), copy(10, 20, "PtoP", stream=3, peer=1)]))
    (h_all, h_dir) = hidden.overlap.copy_compute
    assert (h_all.hidden_ns, h_all.exposed_ns, h_all.hidden_fraction) == (10, 0, 1.0)
    assert h_dir.direction == "DtoD"
    (e_all, e_dir) = exposed.overlap.copy_compute
    # the copy starts where the kernel ends: touching is not overlapping
    assert (e_all.hidden_ns, e_all.exposed_ns, e_all.hidden_fraction) == (0, 10, 0.0)
    assert e_dir.direction == "PtoP"


def test_comm_compute() -> None:
    # GIVEN device 0: NCCL kernel [0,10) on stream 30, compute [5,8) and [9,20) on stream 7;
    #       device 1 has no communication kernels
    tl = timeline(gpu=[comm(0, 10, stream=30), kernel(5, 8), kernel(9, 20), kernel(0, 5, device=1)])
    r = analyze(tl)
    check(r)
    (c,) = r.overlap.comm_compute
    # comm 10; hidden [5,8)+[9,10) = 4; exposed 6
    assert (c.device, c.comm_ns, c.hidden_ns, c.exposed_ns, c.hidden_fraction) == (0, 10, 4, 6, 0.4)
    assert "Communication on GPU 0: 40.0% hidden under compute (6 ns exposed)" in r.headlines


def test_serial_equivalent() -> None:
    # GIVEN device 0: stream 7 [0,10), stream 20 [5,15); device 1: stream 7 [100,110)
    tl = timeline(gpu=[kernel(0, 10), kernel(5, 15, stream=20), kernel(100, 110, device=1)])
    r = analyze(tl)
    check(r)
    s = r.serial
    # Σ stream busy 30; union [0,15)+[100,110) = 25; GPU span [0,110) = 110
    assert (s.serial_ns, s.busy_union_ns, s.gpu_span_ns) == (30, 25, 110)
    assert (s.speedup_vs_span, s.parallelism) == (30 / 110, 30 / 25)
    assert "30 ns of stream work ran in 25 ns of GPU busy time (1.20x parallelism)" in r.headlines


def test_serial_of_no_gpu_work_is_undefined() -> None:
    s = analyze(timeline(cpu=[op(0, 10)])).serial
    assert (s.serial_ns, s.busy_union_ns, s.gpu_span_ns, s.speedup_vs_span, s.parallelism) == (
        0,
        0,
        0,
        None,
        None,
    )


def test_cross_trace_pairs_and_skips_disjoint_windows() -> None:
    # GIVEN trace 0: device 0 [0,10); trace 1: device 1 [5,25) and device 2 [0,2);
    #       trace 2 runs much later [1000,1010): its window meets neither
    #       (ranks 0-2 of one job: only ranks are compared, see metrics/runs.py)
    t0 = timeline(gpu=[kernel(0, 10)], source="r0.json")
    t1 = timeline(gpu=[kernel(5, 25, device=1), kernel(0, 2, device=2)], source="r1.json")
    t2 = timeline(gpu=[kernel(1000, 1010)], source="r2.json")
    t0, t1, t2 = (replace(t, meta=replace(t.meta, rank=i, world_size=3))
                  for i, t in enumerate((t0, t1, t2)))
    m = analyze_many([t0, t1, t2])
    check(m)
    rows = [
        (
            (p.a.trace, p.a.device),
            (p.b.trace, p.b.device),
            p.overlap_ns,
            p.either_ns,
            p.fraction_of_either,
        )
        for p in m.cross_trace.pairs
    ]
    # 0/0 vs 1/1: [5,10) = 5 of 10 + 20 - 5 = 25; 0/0 vs 1/2: [0,2) = 2 of 10 + 2 - 2 = 10
    assert rows == [((0, 0), (1, 1), 5, 25, 0.2), ((0, 0), (1, 2), 2, 10, 0.2)]
    assert [s.traces for s in m.cross_trace.skipped] == [(0, 2), (1, 2)]
    d = m.to_dict()
    assert d["schema"] == "traceprobe.reports/1"
    assert [t["trace"] for t in d["traces"]] == ["r0.json", "r1.json", "r2.json"]
    assert d["cross_trace"]["pairs"][0] == {
        "a": {"trace": 0, "device": 0},
        "b": {"trace": 1, "device": 1},
        "overlap_us": 0.005,
        "either_us": 0.025,
        "fraction_of_either": 0.2,
    }
    assert d["cross_trace"]["skipped"][0]["traces"] == [0, 2]
    assert "one host clock" in d["cross_trace"]["clock"]
