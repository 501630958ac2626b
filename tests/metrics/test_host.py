"""Launch latency, kernel gaps and launch-bound streams (metrics/host.py); GPU idle attributed to
host calls, the idle partition of metrics/idle.py, is tested in tests/metrics/test_idle.py."""

from __future__ import annotations

from frames import HOST_PID, driver, kernel, op, runtime, timeline
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.host import host_process, kernel_gaps
from traceprobe.report import analyze, check


def test_host_process_is_the_one_making_runtime_calls() -> None:
    tl = timeline(cpu=[op(0, 1, pid=5), op(0, 1, pid=5), runtime(0, 1, pid=7)])
    assert host_process(tl.cpu) == 7
    assert host_process(timeline(cpu=[op(0, 1, pid=9), op(0, 1, pid=3)]).cpu) == 3
    assert host_process(timeline().cpu) is None


def test_launch_latency_by_correlation() -> None:
    tl = timeline(
        gpu=[
            kernel(10, 20, correlation=1),
            kernel(30, 35, correlation=2),
            kernel(38, 39, correlation=3),  # starts before its launch: ignored
            kernel(45, 46, correlation=4),  # no launching call: ignored
            kernel(56, 60, correlation=5),  # launched by a driver call
            kernel(70, 72, correlation=6),  # a graph launch: first kernel only
            kernel(72, 80, correlation=6),
            kernel(90, 91),  # correlation -1
        ],
        cpu=[
            runtime(0, 2, correlation=1),
            runtime(5, 6, correlation=2),
            runtime(40, 41, correlation=3),
            driver(50, 51, correlation=5),
            runtime(60, 61, "cudaGraphLaunch", correlation=6),
            op(0, 100, correlation=-1),
        ],
    )
    r = analyze(tl)
    check(r)
    lat = r.host.launch_latency
    # latencies 10, 25, 6, 10 -> sorted 6 10 10 25; p95 = 10 + 0.85 * 15 = 22.75 (linear)
    assert (lat.count, lat.mean_ns, lat.p50_ns, lat.max_ns) == (4, 12.75, 10.0, 25)
    assert abs(lat.p95_ns - 22.75) < 1e-9
    assert r.to_dict()["host"]["launch_latency"] == {
        "count": 4,
        "mean_us": 0.01275,
        "p50_us": 0.01,
        "p95_us": lat.p95_ns / 1000,
        "max_us": 0.025,
        # onto an idle stream: corr 1 (first), 5 (stream drained at 46 <= 50), 6 (60 <= 60);
        # corr 2 waited behind the kernel running until 20
        "unqueued_count": 3,
        "unqueued_p50_us": 0.01,
        "unqueued_max_us": 0.01,
        "waited_count": 0,
    }


def test_launch_latency_without_launches_is_null() -> None:
    lat = analyze(timeline(gpu=[kernel(0, 5)])).host.launch_latency
    assert (lat.count, lat.mean_ns, lat.p50_ns, lat.p95_ns, lat.max_ns) == (
        0,
        None,
        None,
        None,
        None,
    )


def test_kernel_gaps_and_launch_bound_stream() -> None:
    tl = timeline(
        gpu=[
            # stream 7: kernels 2, 2, 3, 1 ns long with gaps 8, 8, 7 -> launch-bound
            kernel(0, 2),
            kernel(10, 12),
            kernel(20, 23),
            kernel(30, 31),
            # stream 20: [0,10) [5,8) [10,20) [25,26): the gap after [5,8) is measured from the
            # latest end so far (10), so gaps 0, 0, 5; kernels 10, 3, 10, 1 -> median 6.5
            kernel(0, 10, stream=20),
            kernel(5, 8, stream=20),
            kernel(10, 20, stream=20),
            kernel(25, 26, stream=20),
            # stream 21: one kernel -> no row
            kernel(0, 1, stream=21),
        ]
    )
    r = analyze(tl)
    check(r)
    g7, g20 = r.host.kernel_gaps
    assert (g7.device, g7.stream, g7.gaps, g7.mean_ns, g7.p50_ns, g7.max_ns) == (
        0,
        7,
        3,
        23 / 3,
        8.0,
        8,
    )
    # no launching calls in this trace: no gap is host-late, so nothing is launch-bound
    assert (g7.kernel_p50_ns, g7.host_late_gaps, g7.launch_bound) == (2.0, 0, False)
    assert (g20.stream, g20.gaps, g20.mean_ns, g20.p50_ns, g20.max_ns) == (20, 1, 5 / 3, 0.0, 5)
    assert (g20.kernel_p50_ns, g20.launch_bound) == (6.5, False)


def test_kernel_gaps_ignore_copies_and_other_devices() -> None:
    tl = timeline(gpu=[kernel(0, 1), kernel(5, 6), kernel(0, 1, device=1)])
    one = Windows.one(0, 6)
    assert [(g.device, g.stream) for g in kernel_gaps(tl.gpu, [0], None, one)[0]] == [(0, 7)]
    assert kernel_gaps(tl.gpu, [1], None, one) == [()]


def test_host_figures_of_a_cpu_only_trace() -> None:
    r = analyze(timeline(cpu=[op(0, 10), runtime(2, 3, pid=HOST_PID)]))
    check(r)
    assert r.host.devices == ()
    assert r.host.kernel_gaps == ()
    assert r.host.launch_latency.count == 0


def test_launch_latency_separates_launches_onto_an_idle_stream_from_queued_ones():
    """GIVEN three kernels on one stream: A launched at 0 runs [2, 10); B launched at 1 waits
    behind A and runs [10, 12); C launched at 20 onto the drained stream runs [23, 25)
    WHEN launch latency is measured
    THEN all three count (2, 9, 3 ns), but only A and C were launched onto an idle stream."""
    tl = timeline(
        gpu=[kernel(2, 10, "A", correlation=1), kernel(10, 12, "B", correlation=2),
             kernel(23, 25, "C", correlation=3)],
        cpu=[runtime(0, 1, correlation=1), runtime(1, 2, correlation=2),
             runtime(20, 21, correlation=3)],
    )
    r = analyze(tl)
    check(r)
    lat = r.host.launch_latency
    assert (lat.count, lat.p50_ns, lat.max_ns) == (3, 3.0, 9)
    assert (lat.unqueued_count, lat.unqueued_p50_ns, lat.unqueued_max_ns) == (2, 2.5, 3)
    assert "Launch overhead 3 ns at most (n = 2)" in r.headlines  # too few for a median


def _late_loop(n: int, kernel_ns: int = 2, period: int = 10):
    """n kernels of ``kernel_ns`` each, launched one per ``period`` ns, each call starting after
    the previous kernel began: every gap is host-late."""
    gpu = [kernel(period * i + 3, period * i + 3 + kernel_ns, correlation=i + 1) for i in range(n)]
    cpu = [runtime(period * i, period * i + 1, correlation=i + 1) for i in range(n)]
    return gpu, cpu


def test_launch_bound_needs_enough_host_late_gaps() -> None:
    """GIVEN kernels of 2 ns launched every 10 ns (gaps of 8 ns, the host late each time)
    THEN 11 kernels (10 host-late gaps) make a launch-bound stream and 10 kernels (9) do not."""
    for n, bound in ((11, True), (10, False)):
        gpu, cpu = _late_loop(n)
        r = analyze(timeline(gpu=gpu, cpu=cpu))
        check(r)
        (g,) = r.host.kernel_gaps
        assert (g.gaps, g.host_late_gaps, g.host_late_p50_ns) == (n - 1, n - 1, 8.0)
        assert g.launch_bound is bound


def test_gap_while_another_stream_runs_is_not_host_late() -> None:
    """GIVEN the loop above, but a long kernel on stream 9 covers the whole time
    THEN the GPU was never idle in a gap: no host-late gap, not launch-bound."""
    gpu, cpu = _late_loop(12)
    gpu.append(kernel(0, 200, "long", stream=9))
    r = analyze(timeline(gpu=gpu, cpu=cpu))
    check(r)
    g = next(g for g in r.host.kernel_gaps if g.stream == 7)
    assert (g.gaps, g.host_late_gaps, g.launch_bound) == (11, 0, False)


def test_gap_behind_an_early_launch_is_not_host_late() -> None:
    """GIVEN 12 kernels all launched at t=0..11 (long before they run) with 8 ns gaps between
    them (waiting on something else) THEN no gap is host-late."""
    gpu = [kernel(100 + 10 * i, 102 + 10 * i, correlation=i + 1) for i in range(12)]
    cpu = [runtime(i, i + 1, correlation=i + 1) for i in range(12)]
    (g,) = analyze(timeline(gpu=gpu, cpu=cpu)).host.kernel_gaps
    assert (g.gaps, g.host_late_gaps, g.launch_bound) == (11, 0, False)


def test_launch_that_waited_on_another_stream_is_not_launch_overhead() -> None:
    """GIVEN an NCCL kernel launched at 0 onto an idle stream that starts at 1000 (when the
    compute kernel [0,1000) on stream 7 ends), a plain kernel on stream 9 launched at 0 that
    starts at 1003 (an event wait on stream 7) and one launched at 2000 that starts at 2005
    THEN only the last is launch overhead (5 ns); the other two waited on another stream."""
    tl = timeline(
        gpu=[kernel(0, 1000, "compute", correlation=1),
             kernel(1000, 1500, "ncclKernel_AllReduce", stream=20, comm=True, correlation=2),
             kernel(1003, 1010, "after_event", stream=9, correlation=3),
             kernel(2005, 2010, "plain", stream=9, correlation=4)],
        cpu=[runtime(-10, -5, correlation=1), runtime(0, 1, correlation=2),
             runtime(0, 2, correlation=3), runtime(2000, 2001, correlation=4)],
    )
    r = analyze(tl)
    check(r)
    lat = r.host.launch_latency
    assert (lat.count, lat.waited_count, lat.unqueued_count, lat.unqueued_p50_ns) == (4, 2, 2, 7.5)
    # the compute kernel (10 ns after its call) and the plain one (5 ns) were overhead
    assert lat.unqueued_max_ns == 10


def test_host_late_compares_epoch_nanoseconds_exactly() -> None:
    """GIVEN the host-late loop at epoch scale (t ≈ 1.7e18 ns, beyond float64's exact
    integers) with each launching call 1 ns after the previous kernel began, and the same
    loop with each call 1 ns before it THEN the first has every gap host-late, the second
    none (a float comparison rounds both to 'equal')."""
    from traceprobe.metrics.host import kernel_gaps

    base = 1_700_000_000_000_000_000
    for offset, late in ((1, 11), (-1, 0)):
        gpu = [kernel(base + 100 * i, base + 100 * i + 2, correlation=i + 1) for i in range(12)]
        cpu = [runtime(base + 100 * (i - 1) + offset, base + 100 * (i - 1) + offset + 1,
                       correlation=i + 1) for i in range(12)]
        tl = timeline(gpu=gpu, cpu=cpu)
        ((g,),) = kernel_gaps(tl.gpu, [0], tl.cpu, Windows.one(*tl.span))
        assert (g.gaps, g.host_late_gaps) == (11, late)


def test_launch_bound_needs_a_material_share_of_the_window() -> None:
    """GIVEN the 11-kernel loop (10 host-late gaps of 8 ns: 80 ns) THEN launch-bound in its own
    window (102 ns: 78% of it), not once a long host-only tail makes the window 1,000 ns (80 ns,
    8% < 10%); the headline says k of N gaps, their time and share."""
    gpu, cpu = _late_loop(11)
    r = analyze(timeline(gpu=gpu, cpu=cpu))
    (g,) = r.host.kernel_gaps
    assert (g.host_late_ns, g.launch_bound) == (80, True)
    assert any("10 of 10 gaps waited for the host, 80 ns" in h for h in r.headlines)
    r = analyze(timeline(gpu=gpu, cpu=[*cpu, op(200, 1000, "aten::tail")]))
    (g,) = r.host.kernel_gaps
    assert r.span_ns == 1000 and (g.host_late_ns, g.launch_bound) == (80, False)
    assert not any("launch-bound" in h for h in r.headlines)


def test_a_loop_waiting_longer_for_data_is_not_launch_bound() -> None:
    """GIVEN the loop, then a DataLoader range of 90 ns (more than the 80 ns of host-late gaps,
    which are 80/192 = 42% of the window) THEN not launch-bound; with 70 ns of DataLoader it is."""
    gpu, cpu = _late_loop(11)
    for dl, bound in ((90, False), (70, True)):
        loader = op(102, 102 + dl, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
        r = analyze(timeline(gpu=gpu, cpu=[*cpu, loader]))
        (g,) = r.host.kernel_gaps
        assert (g.host_late_ns, g.launch_bound) == (80, bound), dl
