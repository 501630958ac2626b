"""Scenarios on tiny traces, against predictions computed by hand (docs/FIGURES.md,
"Critical path and what-if", gives the delays these computations use)."""

from __future__ import annotations

import pytest
from tiny import H200, Trace

from traceprobe.errors import UsageError
from traceprobe.graph import whatif


def _predict(t: Trace, scenarios: list[str], props=None) -> float:
    w = whatif(t.timeline(props), scenarios).windows[0]
    assert w.replayed_us == pytest.approx(w.measured_us)  # the unchanged replay is exact
    return w.predicted_us


def _two_devices() -> Trace:
    # A on GPU 0 (5..105); a device sync waits for it (returns at 106); B on GPU 1
    # (110..210); the final sync returns at 211; the step ends at 212.
    t = Trace().step(1, 0, 212)
    t.launch("A", 0, 5, 100, device=0)
    t.call("cudaDeviceSynchronize", 2, 104)
    t.launch("B", 107, 110, 100, device=1)
    t.call("cudaDeviceSynchronize", 109, 102)
    return t


def test_no_host_sync_runs_the_devices_together():
    # Dropping the middle sync: it costs the typical non-waiting call (none here: 2 µs), so
    # the host reaches B's launch at 2+2+1 = 5; B starts 3 µs later (its own launch delay)
    # at 8 and ends at 108; the final sync waits for the later of A+1 and B+1 (109), the
    # step ends 1 µs after it: 110.
    assert _predict(_two_devices(), ["no-host-sync"]) == pytest.approx(110)


def test_faster_kernels():
    t = Trace().step(1, 0, 115).launch("big_gemm", 0, 10, 100).launch("small", 1, 110, 0)
    t.call("cudaDeviceSynchronize", 20, 92)
    # the gemm 2x faster: 50 µs saved on a GPU-bound step
    assert _predict(t, ["kernels:gemm=2"]) == pytest.approx(65)
    assert _predict(t, ["kernels:nomatch=2"]) == pytest.approx(115)


def _compute_then_copy() -> Trace:
    # K1 5..105, K2 105..205 queued; then the copies of their results C1 205..255, C2 255..305,
    # all on stream 7; a device sync returns at 306; the step ends at 307.
    t = Trace().step(1, 0, 307)
    t.launch("K1", 0, 5, 100).launch("K2", 1, 105, 100)
    t.call("cudaMemcpyAsync", 2, 1).copy(205, 50)
    t.call("cudaMemcpyAsync", 3, 1).copy(255, 50)
    t.call("cudaDeviceSynchronize", 4, 302)
    return t


def test_copies_on_side_stream_overlap_the_next_kernel():
    # C1 waits only for K1 (ends 105; the typical queue gap here is 0): 105..155; C2 for K2
    # (205): 205..255. The sync waits for K2 and C2: 256; the step ends at 257.
    assert _predict(_compute_then_copy(), ["copies-on-side-stream"]) == pytest.approx(257)


def _two_kernels(grid=None) -> Trace:
    t = Trace().step(1, 0, 207)
    t.launch("k_a", 0, 5, 100, grid=grid).launch("k_b", 1, 105, 100, grid=grid)
    t.call("cudaDeviceSynchronize", 2, 204)
    return t


def test_spread_small_kernels_run_together():
    # k_b on its own stream starts at its launch (1) + the typical launch latency (5): 6..106;
    # the sync returns at 107, the step ends at 108.
    assert _predict(_two_kernels(grid=64), ["spread:k_=2"], [H200]) == pytest.approx(108)


def test_spread_gpu_filling_kernels_gain_nothing():
    # 132 SMs x 8 resident blocks of 256 threads: a grid of 2000 blocks fills the GPU
    assert _predict(_two_kernels(grid=2000), ["spread:k_=2"], [H200]) == pytest.approx(207)


def test_no_launch_overhead_is_a_cuda_graph():
    # two aten::mm ops, each launching one 1 µs kernel (launch latency 6 µs), then a sync
    t = Trace().step(1, 0, 25).op("aten::mm", 0, 10).op("aten::mm", 10, 10)
    t.launch("mm1", 6, 12, 1).launch("mm2", 16, 22, 1)
    t.call("cudaDeviceSynchronize", 20, 4)
    # launches and the host time inside the launching ops cost nothing: the host is at the
    # sync at 0; mm1 starts the default queue gap (1 µs) after its launch: 1..2; mm2 after mm1
    # plus 1 µs: 3..4; the sync ends 1 µs (its measured post) after mm2: 5; the gap after the
    # sync (1 µs, outside any op) stays: 6.
    assert _predict(t, ["no-launch-overhead"]) == pytest.approx(6)


def test_scenarios_compose_in_order():
    t = _compute_then_copy()
    both = _predict(t, ["copies-on-side-stream", "kernels:K=2"])
    # K1 5..55, K2 55..105, C1 55..105, C2 105..155 -> sync 156 -> step 157
    assert both == pytest.approx(157)


@pytest.mark.parametrize("bad", ["nope", "kernels:gemm=0", "spread:x=", "kernels:(=2"])
def test_bad_scenarios_are_usage_errors(bad):
    with pytest.raises(UsageError, match="scenario"):
        whatif(_two_kernels().timeline(), [bad])


def test_a_copy_on_a_side_stream_is_issued_with_its_producer():
    # K1 5..105; the host computes until 150 (aten::mm on the CPU), then copies K1's result
    # (155..205) and synchronizes (returns at 206); the step ends at 207.
    t = Trace().step(1, 0, 207).launch("K1", 0, 5, 100).op("aten::mm", 1, 149)
    t.call("cudaMemcpyAsync", 150, 1).copy(155, 50)
    t.call("cudaDeviceSynchronize", 151, 55)
    # moved, the copy is issued with K1 and waits only for it: 105 + the default queue gap
    # (1 µs; nothing was queued here) -> 106..156; the sync (host still at 151) ends 1 µs
    # after the copy: 157; the step 1 µs later: 158.
    assert _predict(t, ["copies-on-side-stream"]) == pytest.approx(158)


def test_a_step_bound_by_a_collective_gets_no_prediction():
    """GIVEN a step whose path is mostly an NCCL kernel (100 of 115 µs) THEN the replay says its
    model does not hold there (the collective waits for other ranks) instead of a speedup."""
    from tiny import Trace

    from traceprobe.graph import whatif
    from traceprobe.render.whatif import render

    t = Trace().step(1, 0, 115).launch("ncclDevKernel_AllReduce_Sum_f32", 0, 10, 100)
    t.call("cudaDeviceSynchronize", 20, 92)
    res = whatif(t.timeline(), ["kernels:gemm=2"])
    (w,) = res.windows
    assert not w.holds and "collectives" in w.why
    d = res.to_dict()["windows"][0]
    assert d["speedup"] is None and d["model_holds"] is False
    text = render(res.to_dict())
    assert "does not hold" in text and "1.00x" not in text


def test_dataloader_workers_follow_the_documented_rule():
    """GIVEN one step of 100 µs: a multi-process DataLoader wait of 60 µs, then 40 µs of other
    host work around a launch THEN workers=N gives max(C, W x T / N) with C = 40, W = 1, T = 100:
    N = 2 -> 50 µs, N = 4 -> 40 µs (the rest bounds it); `dataloader` alone -> 40 µs."""
    from tiny import Trace

    from traceprobe.graph import whatif

    t = Trace().step(1, 0, 100)
    t.op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 60)
    t.op("aten::add", 60, 40).launch("k", 70, 75, 2)
    tl = t.timeline()
    for scen, want in (("dataloader:workers=2", 50), ("dataloader:workers=4", 40),
                       ("dataloader", 40), ("dataloader:workers=4/2", 50)):
        (w,) = whatif(tl, [scen]).windows
        assert w.predicted_period_us == pytest.approx(want, abs=0.01), scen


def test_dataloader_workers_compose_with_the_scenarios_before_them():
    """GIVEN the step above (a 60 µs multi-process DataLoader wait, then 40 µs around a
    launch) under no-profiler:2000 first: 4 events start in the gap before the launch call
    (the step, __next__, add and the call), so 8 µs come off it and the step's host span is
    T = 92 µs, its DataLoader wait still D = 60, the rest C = 32. THEN workers=N gives
    max(C, W x T / N) on those: N = 2 -> 46 µs, N = 4 -> 32 µs (before, the measured T = 100
    and C = 40 set the kept wait, and the step came out 42 µs, under both)."""
    from tiny import Trace

    from traceprobe.graph import whatif

    t = Trace().step(1, 0, 100)
    t.op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 60)
    t.op("aten::add", 60, 40).launch("k", 70, 75, 2)
    tl = t.timeline()
    (alone,) = whatif(tl, ["no-profiler:2000"]).windows
    assert alone.predicted_period_us == pytest.approx(92, abs=0.01)
    for n, want in ((2, 46), (4, 32)):
        (w,) = whatif(tl, ["no-profiler:2000", f"dataloader:workers={n}"]).windows
        assert w.predicted_period_us == pytest.approx(want, abs=0.01), n
