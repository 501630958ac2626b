"""Critical paths of hand-built traces, computed by hand."""

from __future__ import annotations

import pytest
from tiny import Trace

from traceprobe.graph import critical_paths, whatif


def _tiles(cp: dict, lo: float, hi: float) -> None:
    segs = cp["segments"]
    assert segs[0]["start_us"] == pytest.approx(lo)
    assert segs[-1]["end_us"] == pytest.approx(hi)
    for a, b in zip(segs, segs[1:], strict=False):
        assert a["end_us"] == pytest.approx(b["start_us"])  # contiguous, in time order
    assert sum(cp["breakdown"].values()) == pytest.approx(hi - lo)
    assert cp["length_us"] == pytest.approx(hi - lo)


def test_launch_bound_step_is_host_time():
    # three 5 µs launches, a cpu_op around the second one, a sync that does not wait
    t = Trace().step(1, 0, 32).op("aten::mul", 5, 11)
    t.call("cudaLaunchKernel", 0, 5).kernel("k1", 5, 2)
    t.call("cudaLaunchKernel", 10, 5).kernel("k2", 15, 2)
    t.call("cudaLaunchKernel", 20, 5).kernel("k3", 25, 2)
    t.call("cudaDeviceSynchronize", 30, 1)
    cp = critical_paths(t.timeline())["steps"][1]
    _tiles(cp, 0, 32)
    b = cp["breakdown"]
    # launches 5+5+5 (runtime); the sync call's own 1 µs (sync); aten::mul [5,16) holds
    # the second launch: its self time [5,10) + [15,16) is cpu_op; [16,20), [25,30),
    # [31,32): no event -> Python (untraced)
    assert b["runtime"] == pytest.approx(15)
    assert b["sync"] == pytest.approx(1)
    assert b["cpu_op"] == pytest.approx(6)
    assert b["python"] == pytest.approx(10)
    assert b["idle"] == 0 and b["kernel"] == 0
    assert cp["bound_by"] == "runtime"


def test_gpu_bound_step_goes_through_the_kernel_and_the_wait():
    t = Trace().step(1, 0, 115).launch("big", 0, 10, 100)
    t.call("cudaDeviceSynchronize", 20, 92)  # returns 2 µs after the kernel's end (110)
    cp = critical_paths(t.timeline())["steps"][1]
    _tiles(cp, 0, 115)
    b = cp["breakdown"]
    assert b["kernel"] == pytest.approx(100)
    assert b["runtime"] == pytest.approx(10)  # the launch call's start -> the kernel's start
    assert b["sync_wait"] == pytest.approx(2)
    assert b["python"] == pytest.approx(3)  # the host's tail after the wait: no event
    assert b["idle"] == 0
    kinds = [s["kind"] for s in cp["segments"]]
    assert kinds == ["runtime", "kernel", "sync_wait", "python"]
    assert cp["bound_by"] == "GPU"
    assert cp["segments"][1]["name"] == "big"


def test_cross_stream_wait_is_inferred_and_on_the_path():
    # k2 on stream 8 launched at 1 but starts only when k1 (stream 7) ends: an event wait
    t = Trace().step(1, 0, 230).launch("k1", 0, 5, 100, stream=7)
    t.launch("k2", 1, 105, 100, stream=8)
    t.call("cudaDeviceSynchronize", 3, 204)
    cp = critical_paths(t.timeline())["steps"][1]
    _tiles(cp, 0, 230)
    names = [s["name"] for s in cp["segments"] if s["kind"] == "kernel"]
    assert names == ["k1", "k2"]


def test_unchanged_replay_reproduces_the_tiny_steps():
    t = Trace().step(1, 0, 115).launch("big", 0, 10, 100)
    t.call("cudaDeviceSynchronize", 20, 92)
    w = whatif(t.timeline(), []).windows[0]
    assert w.replayed_us == pytest.approx(115)
    assert w.predicted_us == pytest.approx(115)
