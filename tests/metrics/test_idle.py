"""The idle partition (metrics/idle.py): every idle nanosecond of a GPU charged to one cause.

* hand-built traces with causes worked out by hand (a stream synchronize, the top five causes and
  their call counts) and a DataLoader-bound loop against a 0.5 µs sweep of the written rule;
* a GPU recording of examples/dataloader_loop.py: the DataLoader's idle time against the raw
  JSON, when sample_traces/h200*/examples/dataloader-loop holds one;
* many windows at once (``f(..., windows)`` on a cut timeline) are, window by window, what the
  one-window functions give on that window's own frames (``Timeline.window``): same
  dataclasses, same values, same order (the step-time breakdown too);
* the innermost rule they share, against its definition.

(The one-window functions are also checked against a slow per-nanosecond sweep of every figure
in tests/metrics/test_metrics_property.py; the report's wording of the causes, the headlines, in
tests/report/test_diagnosis.py.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frames import HOST_PID, annotation, comm, copy, kernel, memset, op, runtime, timeline
from hyp import examples
from idletraces import DL, loop_trace, measure, raw, sync_trace, union
from traceprobe.load import load
from traceprobe.metrics.devices import device_busy
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.idle import idle_causes
from traceprobe.metrics.regions import host_events, innermost
from traceprobe.metrics.steps import step_breakdown
from traceprobe.report import analyze, check

SPAN = 60
ROOT = Path(__file__).parents[2]

span = st.tuples(st.integers(-5, SPAN), st.integers(0, 25)).map(lambda t: (t[0], t[0] + t[1]))


@st.composite
def gpu_rows(draw) -> list[dict]:
    rows = []
    for (s, e), what, dev, stream in draw(st.lists(
            st.tuples(span, st.sampled_from(["k", "k", "comm", "copy", "memset"]),
                      st.integers(0, 2), st.integers(1, 3)), max_size=10)):
        make = {"k": kernel, "comm": comm, "copy": copy, "memset": memset}[what]
        rows.append(make(s, e, device=dev, stream=stream))
    return rows


CPU_NAMES = {
    op: ["aten::mm", "aten::item", "Optimizer.step#SGD.step",
         "enumerate(DataLoader)#_Iter.__next__"],
    runtime: ["cudaLaunchKernel", "cudaStreamSynchronize", "cudaMemcpyAsync"],
    annotation: ["forward", "backward", "Optimizer.zero_grad#SGD.zero_grad", "DataLoader"],
}


@st.composite
def cpu_rows(draw) -> list[dict]:
    rows = []
    for (s, e), make, pick, tid, pid in draw(st.lists(
            st.tuples(span, st.sampled_from(list(CPU_NAMES)), st.integers(0, 3),
                      st.integers(1, 2), st.sampled_from([HOST_PID, HOST_PID, HOST_PID, 7])),
            max_size=12)):
        names = CPU_NAMES[make]
        rows.append(make(s, e, names[pick % len(names)], tid=tid, pid=pid))
    return rows


@st.composite
def step_rows(draw) -> list[tuple[int, int, int]]:
    """Steps apart or touching (a timeline's steps never overlap), zero-length ones too,
    sometimes one number twice."""
    cuts = sorted(draw(st.lists(st.integers(-5, SPAN), max_size=5)))
    if draw(st.booleans()):  # touching: each step starts where the previous one ends
        pairs = list(zip(cuts, cuts[1:], strict=False))
    else:
        pairs = [(cuts[2 * n], cuts[2 * n + 1]) for n in range(len(cuts) // 2)]
    pairs = [(a, b) for i, (a, b) in enumerate(pairs) if i == 0 or a > pairs[i - 1][0]]
    return [(draw(st.integers(n, n + 1)), a, b) for n, (a, b) in enumerate(pairs)]


# sorted windows that may touch (the shape of ProfilerSteps), or any (overlapping, unsorted)
touching = st.lists(st.tuples(st.integers(0, 10), st.integers(0, 20)), min_size=1,
                    max_size=6).map(
    lambda gl: [(sum(g + w for g, w in gl[:i]) + gl[i][0] - 5,
                 sum(g + w for g, w in gl[:i]) + gl[i][0] - 5 + gl[i][1])
                for i in range(len(gl))])
anywhere = st.lists(st.tuples(st.integers(-10, SPAN + 5), st.integers(0, 40)).map(
    lambda t: (t[0], t[0] + t[1])), min_size=1, max_size=6)


def per_window_busy(cut, wins, devices) -> list[tuple]:
    """device_busy of each window's own rows (the busy sets the windowed idle takes)."""
    win = cut.gpu["win"].to_numpy()
    return [device_busy(cut.gpu[win == i].drop(columns="win"), devices, Windows.one(lo, hi))[0]
            for i, (lo, hi) in enumerate(wins)]


def alone(w, ev_w, devices, lo, hi) -> tuple:
    """The idle causes and the step breakdown of one window's own frames."""
    one = Windows.one(lo, hi)
    idle = idle_causes(device_busy(w.gpu, devices, one), ev_w, one)[0]
    return idle, step_breakdown(w.gpu, ev_w, w.steps, devices, one)[0]


def assert_windows_agree(tl, wins) -> None:
    devices = list(tl.devices)
    cut = tl.cut(wins)
    ev = host_events(cut.cpu, HOST_PID)
    idle = idle_causes(per_window_busy(cut, wins, devices), ev, Windows.of(wins))
    steps = step_breakdown(cut.gpu, ev, cut.steps, devices, Windows.of(wins))
    assert len(idle) == len(steps) == len(wins)
    for i, (lo, hi) in enumerate(wins):
        w = tl.window(lo, hi)
        assert (idle[i], steps[i]) == alone(w, host_events(w.cpu, HOST_PID), devices, lo, hi), i


@settings(max_examples=examples(80), deadline=None)
@given(gpu_rows(), cpu_rows(), step_rows(), st.one_of(touching, anywhere))
def test_each_window_is_what_the_window_alone_gives(gpu, cpu, steps, wins) -> None:
    """GIVEN random kernels, copies, ops, calls, regions (two threads, another process) and
    steps (apart, touching, zero-length, a number twice), and windows that touch, overlap or are out
    of order WHEN computing the idle causes and the step breakdown of all windows at once
    THEN window i's are those of timeline.window(lo_i, hi_i) alone."""
    assert_windows_agree(timeline(gpu=gpu, cpu=cpu, steps=steps), wins)


def test_a_window_without_events_or_steps_and_an_empty_one() -> None:
    """GIVEN a window holding nothing and a zero-length window WHEN cut with busy ones THEN
    each still equals its own window's result (idle: all of it host idle; no steps: ())."""
    tl = timeline(gpu=[kernel(0, 10), kernel(40, 50, device=1)],
                  cpu=[op(2, 8, "aten::mm"), runtime(30, 35, "cudaStreamSynchronize")],
                  steps=[(1, 0, 20), (2, 20, 50)])
    wins = [(0, 20), (100, 120), (20, 20), (20, 50)]
    assert_windows_agree(tl, wins)
    cut = tl.cut(wins)
    ev = host_events(cut.cpu, HOST_PID)
    idle = idle_causes(per_window_busy(cut, wins, [0, 1]), ev, Windows.of(wins))
    (gpu0, gpu1) = idle[1]
    assert (gpu0.idle_ns, gpu0.idle_host_busy_ns) == (20, 0)
    assert [(c.name, c.ns, c.calls) for c in gpu0.causes] == [("Python (untraced)", 20, 1)]
    assert idle[2][0].causes == () and idle[2][0].idle_ns == 0
    # [20, 50): GPU 0 idle throughout; GPU 1 is idle too while the sync [30, 35) runs, so
    # the sync is "synchronization", not "waiting on another device"
    names = {c.name: c.ns for c in idle[3][0].causes}
    assert names == {"Python (untraced)": 25, "synchronization": 5}
    steps = step_breakdown(cut.gpu, ev, cut.steps, [0, 1], Windows.of(wins))
    assert steps[1] == () and steps[2] == ()
    assert [(b.step, b.device) for b in steps[3]] == [(2, 0), (2, 1)]


def test_every_sample_trace_cut_at_its_steps() -> None:
    """GIVEN each recorded sample trace with ProfilerSteps WHEN cut at its steps THEN every
    step's idle causes and breakdown are those of the step's own window."""
    from traceprobe.load.pipeline import load
    from traceprobe.metrics.host import host_process

    seen = 0
    for trace in sorted(ROOT.glob("sample_traces/**/*.json.gz")):
        tl = load(trace)
        if tl.steps.empty:
            continue
        wins = list(zip(tl.steps["start"].tolist(), tl.steps["end"].tolist(), strict=True))
        devices = list(tl.devices)
        pid = host_process(tl.cpu)
        cut = tl.cut(wins)
        ev = host_events(cut.cpu, pid)
        idle = idle_causes(per_window_busy(cut, wins, devices), ev, Windows.of(wins))
        steps = step_breakdown(cut.gpu, ev, cut.steps, devices, Windows.of(wins))
        for i, (lo, hi) in enumerate(wins):
            w = tl.window(lo, hi)
            assert (idle[i], steps[i]) == alone(w, host_events(w.cpu, pid), devices, lo, hi)
            seen += 1
    assert seen >= 20


def slow_innermost(bounds, starts, ends) -> list[int]:
    """The definition: of the events covering a segment, the one that started last (ties:
    that ends first, then the later one)."""
    out = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        cover = [i for i in range(len(starts)) if starts[i] <= a and ends[i] >= b]
        out.append(max(cover, key=lambda i: (starts[i], -ends[i], i)) if cover else -1)
    return out


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(span, max_size=12), st.lists(st.integers(-10, 90), max_size=6))
def test_innermost_is_its_definition(events, extra) -> None:
    """GIVEN events anywhere (equal ones, nested, crossing, reaching out of the range) and
    extra boundaries WHEN finding the innermost event of each segment THEN it is the slow
    definition's (by the events' own times)."""
    s = np.array([a for a, _ in events], np.int64)
    e = np.array([b for _, b in events], np.int64)
    lo, hi = 3, 50
    pts = np.unique(np.concatenate([s, e, extra, [lo, hi]]).astype(np.int64))
    bounds = pts[(pts >= lo) & (pts <= hi)]
    assert innermost(bounds, s, e).tolist() == slow_innermost(bounds.tolist(), s.tolist(),
                                                              e.tolist())


def test_innermost_by_rank_over_long_runs() -> None:
    """GIVEN 2,000 random events over 3,000 segments (runs of up to 2^11 segments: every
    level of the search) and a random ranking WHEN finding the innermost event by that rank
    THEN each segment's is the covering event of highest rank (a direct scan), in int32."""
    rng = np.random.default_rng(3)
    s = rng.integers(0, 3000, 2000)
    e = s + rng.choice([0, 1, 2, 7, 40, 300, 2500], 2000)
    rank = rng.permutation(2000)
    bounds = np.arange(0, 3001, dtype=np.int64)
    got = innermost(bounds, s, e, rank)
    assert got.dtype == np.int32
    want = np.full(3000, -1)
    best = np.full(3000, -1)
    for i in range(2000):  # a segment [k, k + 1) is covered by events with s <= k < e
        seg = slice(s[i], min(e[i], 3000))
        better = rank[i] > best[seg]
        want[seg][better] = i
        best[seg][better] = rank[i]
    assert got.tolist() == want.tolist()


# ----------------------------------------------------------------------------- the partition
# (moved here from tests/metrics/test_host.py and tests/report/test_diagnosis.py: the tests of
# metrics/idle.py in one home; the diagnosis wording stays in tests/report/test_diagnosis.py)


def test_host_idle_attribution_with_stream_synchronize() -> None:
    r = analyze(sync_trace())
    check(r)
    (h,) = r.host.devices
    # window [-5,60) = 65, busy 20 -> idle [-5,0) + [10,50) = 45
    assert h.idle_ns == 45
    # host calls ∪ = [-5,-1) + [20,45) = 29, all of it in idle time
    assert h.idle_host_busy_ns == 29
    # Partition of the 45 ns (metrics/idle.py): [-5,-3) cudaLaunchKernel (innermost; it starts
    # with aten::mm and is shorter), [-3,-1) aten::mm self, [-1,0) + [10,20) + [45,50) host idle,
    # [20,45) synchronization: cudaStreamSynchronize [22,40) and aten::item (.item()) around it
    (sync, idle, mm, launch) = h.causes
    assert (sync.name, sync.kind, sync.ns, sync.calls) == ("synchronization", "sync", 25, 2)
    assert [(c.name, c.ns) for c in sync.children] == [("cudaStreamSynchronize", 18),
                                                         ("aten::item", 7)]
    assert (idle.name, idle.kind, idle.ns, idle.calls) == ("Python (untraced)", "host_idle", 16, 2)
    assert (mm.name, mm.kind, mm.ns) == ("aten::mm", "cpu_op", 2)  # tie: CPU ops first
    assert (launch.name, launch.kind, launch.ns) == ("cudaLaunchKernel", "runtime", 2)
    assert sum(c.ns for c in h.causes) == h.idle_ns
    assert abs(sync.share - 25 / 45) < 1e-12


def test_causes_keep_top_five_and_count_calls_in_idle_time() -> None:
    # GIVEN GPU busy [0,100); host calls of 7 names after it, in idle time [100, 200)
    cpu = [runtime(100 + 10 * i, 105 + 10 * i, f"cudaCall{i}") for i in range(7)]
    # cudaCall0 is called twice more: once in idle time, once while the GPU is busy
    cpu += [runtime(180, 190, "cudaCall0"), runtime(10, 20, "cudaCall0"), op(0, 200, "outer")]
    r = analyze(timeline(gpu=[kernel(0, 100)], cpu=cpu))
    check(r)
    (h,) = r.host.devices
    # cudaCall0: [100,105) + [180,190) = 15 over 2 calls in idle time (the busy-time call does
    # not count); each other runtime name 5; outer: idle [100,200) minus runtime time
    # (5 * 7 + 10 = 45 of it) = 55
    assert [(c.name, c.ns, c.calls) for c in h.causes] == [
        ("outer", 55, 1),
        ("cudaCall0", 15, 2),
        ("cudaCall1", 5, 1),
        ("cudaCall2", 5, 1),
        ("cudaCall3", 5, 1),
    ]
    assert h.idle_host_busy_ns == 100


def _inner(es: list[dict]) -> dict:
    return max(es, key=lambda x: (x["ts"], -x["dur"]))


def _sweep_causes(doc: dict) -> tuple[dict[str, float], float]:
    """The idle-attribution rule, one 0.5 µs slot at a time (the trace's times are whole µs)."""
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    gpu = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e["cat"] == "kernel"]
    host = [e for e in ev if e["cat"] in ("cpu_op", "cuda_runtime", "user_annotation")
            and not e["name"].startswith("ProfilerStep#")]
    lo = min(e["ts"] for e in ev)
    hi = max(e["ts"] + e["dur"] for e in ev)
    out: dict[str, float] = {}
    idle = 0.0
    t = lo + 0.25
    while t < hi:
        if not any(s <= t < e for s, e in gpu):
            idle += 0.5
            cover = [e for e in host if e["ts"] <= t < e["ts"] + e["dur"]]
            regions = [e for e in cover if e["cat"] == "user_annotation"]
            syncs = [e for e in cover if "Synchronize" in e["name"]]
            if regions:
                cause = _inner(regions)["name"]
            elif syncs:
                cause = "synchronization"
            elif cover:
                cause = _inner(cover)["name"]
            else:
                cause = "Python (untraced)"
            out[cause] = out.get(cause, 0.0) + 0.5
        t += 0.5
    return out, idle


def test_idle_partition_matches_a_slow_sweep(tmp_path: Path) -> None:
    """GIVEN the DataLoader-bound loop THEN the causes are the 5 largest of a 0.5 µs sweep of the
    written rule, the rule partitions the idle time, and the DataLoader's time splits by the
    innermost op inside it."""
    path = loop_trace(tmp_path)
    r = analyze(load(path))
    check(r)
    (h,) = r.host.devices
    want, idle = _sweep_causes(raw(path))
    assert h.idle_ns == idle * 1000
    got = {c.name: c.ns / 1000 for c in h.causes}
    # the report keeps the 5 largest; the sweep's 5 largest must be exactly those
    top = dict(sorted(want.items(), key=lambda kv: -kv[1])[:5])
    assert got == top
    assert sum(want.values()) == idle  # the rule partitions
    first = h.causes[0]
    assert (first.kind, first.name) == ("dataloader", DL)
    assert first.share == pytest.approx(want[DL] / idle)
    # the DataLoader's time split by the innermost op: stack's self time, then cat
    kids = {k.name: k.ns / 1000 for k in first.children}
    assert kids == {"(no CPU op)": 3 * 20.0, "aten::cat": 3 * 30.0, "aten::stack": 3 * 10.0}


SAMPLES = ROOT / "sample_traces"
GPU_LOOPS = sorted(SAMPLES.glob("h200*/examples/dataloader-loop/*.pt.trace.json.gz"))


@pytest.mark.skipif(not GPU_LOOPS, reason="no GPU recording of examples/dataloader_loop.py yet "
                    "(scripts/gpu/diagnosis.sh)")
@pytest.mark.parametrize("path", GPU_LOOPS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_gpu_recording_names_the_dataloader_as_main_idle_cause(path: Path) -> None:
    r = analyze(load(path))
    check(r)
    doc = raw(path)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    busy = [(e["ts"], e["ts"] + e["dur"]) for e in ev
            if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    lo = min(e["ts"] for e in ev)
    hi = max(e["ts"] + e["dur"] for e in ev)
    idle, t = [], lo
    for s, e in union(busy):
        if s > t:
            idle.append((t, s))
        t = max(t, e)
    if hi > t:
        idle.append((t, hi))
    dl = [(e["ts"], e["ts"] + e["dur"]) for e in ev if "DataLoader" in e["name"]]
    want = measure(dl, idle)  # no region nests inside the DataLoader's range
    (h,) = r.host.devices
    first = h.causes[0]
    assert first.kind == "dataloader"
    assert first.ns / 1000 == pytest.approx(want, rel=1e-3)
    assert first.share == pytest.approx(want / (h.idle_ns / 1000), rel=1e-3)
