"""Launch latency and kernel gaps of many windows at once (``f(..., windows)`` on a cut timeline)
are, window by window, exactly the figures of ``timeline.window(lo, hi)`` alone: same
dataclasses, same field values to the last bit (compared by ``repr``, which spells every float
exactly and tells NaN from None), same order of streams.

Windows are drawn sorted and touching (ProfilerSteps) or anywhere (overlapping, out of order,
empty); kernels, copies and calls straddle them, share correlation ids, wait on other streams,
or form a launch-bound train (enough host-late gaps to set ``launch_bound``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frames import comm, copy, driver, kernel, runtime, timeline
from hyp import examples
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.host import MIN_LAUNCH_GAPS, kernel_gaps, launch_latency

SPAN = 80
CORR = st.sampled_from([-1, 1, 2, 3, 4, 5, 6])

gpu_rows = st.lists(
    st.tuples(st.sampled_from(["kernel", "kernel", "comm", "copy"]), st.integers(0, SPAN),
              st.integers(0, 12), st.integers(0, 1), st.integers(1, 3), CORR),
    max_size=14,
)
cpu_rows = st.lists(
    st.tuples(st.sampled_from(["runtime", "driver", "op"]), st.integers(-5, SPAN),
              st.integers(0, 10), CORR),
    max_size=10,
)
# sorted windows that may touch but never overlap (the shape of ProfilerSteps) ...
steps_like = st.lists(st.tuples(st.integers(0, 10), st.integers(0, 30)), min_size=1,
                      max_size=6).map(
    lambda gl: [(sum(g + w for g, w in gl[:i]) + gl[i][0] - 5,
                 sum(g + w for g, w in gl[:i]) + gl[i][0] - 5 + gl[i][1]) for i in range(len(gl))]
)
# ... and windows anywhere: overlapping, out of order, empty
anywhere = st.lists(
    st.tuples(st.integers(-5, SPAN + 5), st.integers(0, 90)).map(lambda t: (t[0], t[0] + t[1])),
    min_size=1, max_size=6,
)


def _gpu(kind: str, s: int, d: int, dev: int, stream: int, corr: int) -> dict:
    make = {"kernel": kernel, "comm": comm, "copy": copy}[kind]
    return make(s, s + d, device=dev, stream=stream, correlation=corr)


def _cpu(kind: str, s: int, d: int, corr: int) -> dict:
    if kind == "op":
        return {"kind": "cpu_op", "name": "aten::op", "start": s, "end": s + d,
                "correlation": corr}
    return (runtime if kind == "runtime" else driver)(s, s + d, correlation=corr)


def _train(at: int, gaps: list[int]) -> tuple[list[dict], list[dict]]:
    """Short kernels on device 0, stream 9, each launched after the previous one started,
    with the given idle gaps between them: host-late gaps (correlations from 100)."""
    gpu, cpu, t = [], [], at
    for i, g in enumerate(gaps):
        gpu.append(kernel(t, t + 1, device=0, stream=9, correlation=100 + i))
        cpu.append(runtime(t - 1, t, correlation=100 + i))
        t += 1 + g
    return gpu, cpu


@st.composite
def timelines(draw):
    gpu = [_gpu(*r) for r in draw(gpu_rows)]
    cpu = [_cpu(*r) for r in draw(cpu_rows)]
    if draw(st.booleans()):
        g, c = _train(draw(st.integers(0, SPAN)),
                      draw(st.lists(st.integers(0, 4), min_size=MIN_LAUNCH_GAPS + 1,
                                    max_size=MIN_LAUNCH_GAPS + 3)))
        gpu, cpu = gpu + g, cpu + c
    return timeline(gpu=gpu, cpu=cpu)


def assert_windows_alone(tl, wins, devices) -> None:
    """Every window of the cut equals the window computed alone, for both figures."""
    cut = tl.cut(wins)
    windows = Windows.of(wins)
    latency = launch_latency(cut.gpu, cut.cpu, windows)
    gaps = kernel_gaps(cut.gpu, devices, cut.cpu, windows)
    no_cpu = kernel_gaps(cut.gpu, devices, None, windows)
    assert len(latency) == len(gaps) == len(no_cpu) == len(wins)
    for i, (lo, hi) in enumerate(wins):
        w = tl.window(lo, hi)
        one = Windows.one(lo, hi)
        assert repr(latency[i]) == repr(launch_latency(w.gpu, w.cpu, one)[0]), (i, lo, hi)
        assert repr(gaps[i]) == repr(kernel_gaps(w.gpu, devices, w.cpu, one)[0]), (i, lo, hi)
        assert repr(no_cpu[i]) == repr(kernel_gaps(w.gpu, devices, None, one)[0]), (i, lo, hi)


@settings(max_examples=examples(150), deadline=None)
@given(timelines(), st.one_of(steps_like, anywhere), st.sampled_from([[0], [1], [0, 1]]))
def test_each_window_is_the_window_alone(tl, wins, devices) -> None:
    """GIVEN kernels, copies and calls anywhere, and windows that touch, overlap or are out of
    order WHEN computing every window at once THEN window i is window(lo_i, hi_i)'s figures."""
    assert_windows_alone(tl, wins, devices)


def test_the_train_is_launch_bound_in_its_window_only() -> None:
    """GIVEN a launch-bound train in the second of two windows (and a lone kernel in the first)
    WHEN computing both at once THEN the second is launch-bound with its 11 host-late gaps, the
    first has no gaps, and its only launch (latency 3) is the first's."""
    g, c = _train(100, [5] * (MIN_LAUNCH_GAPS + 2))  # 12 kernels, 11 gaps
    tl = timeline(gpu=[kernel(10, 12, stream=9, correlation=1), *g],
                  cpu=[runtime(7, 8, correlation=1), *c])
    cut = tl.cut([(0, 50), (50, 400)])
    two = Windows.of([(0, 50), (50, 400)])
    first, second = kernel_gaps(cut.gpu, [0], cut.cpu, two)
    assert first == ()
    (train,) = second
    assert (train.gaps, train.host_late_gaps, train.host_late_p50_ns) == (11, 11, 5.0)
    assert train.kernel_p50_ns == 1.0 and train.launch_bound
    lat = launch_latency(cut.gpu, cut.cpu, two)
    assert (lat[0].count, lat[0].max_ns, lat[1].count, lat[1].p50_ns) == (1, 3, 12, 1.0)
    assert_windows_alone(tl, [(0, 50), (50, 400)], [0])


def test_a_launch_split_by_a_boundary_counts_in_the_window_of_its_kernel_and_call() -> None:
    """GIVEN a call [40, 60) and its kernel [70, 80) WHEN the windows are [0, 50) and [50, 100)
    THEN the second window matches the clipped call start 50 (latency 20) and the first, which
    holds the call but not the kernel, has no launch."""
    tl = timeline(gpu=[kernel(70, 80, correlation=1)], cpu=[runtime(40, 60, correlation=1)])
    cut = tl.cut([(0, 50), (50, 100)])
    a, b = launch_latency(cut.gpu, cut.cpu, Windows.of([(0, 50), (50, 100)]))
    assert a.count == 0 and a.mean_ns is None
    assert (b.count, b.max_ns, b.unqueued_count) == (1, 20, 1)


def _stepped_traces() -> list[Path]:
    root = Path(__file__).resolve().parents[2] / "sample_traces"
    return sorted(root.glob("**/*.json.gz"))


@pytest.mark.parametrize("trace", _stepped_traces(), ids=lambda p: p.parent.name)
def test_every_sample_trace_cut_at_its_steps(trace: Path) -> None:
    """GIVEN a recorded trace WHEN cut at its ProfilerSteps THEN each step's figures are those
    of the step alone (every device, and the first device alone)."""
    from traceprobe.load.pipeline import load

    tl = load(trace)
    wins = list(zip(tl.steps["start"].tolist(), tl.steps["end"].tolist(), strict=True))
    if not wins:
        pytest.skip("no ProfilerSteps")
    for devices in ({*tl.devices}, set(tl.devices[:1])):
        assert_windows_alone(tl, wins, sorted(devices))


# -- the keyed searches underneath, against a plain loop ----------------------------------------

keyed_rows = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 9),
                                st.integers(0, 5)), max_size=12)


@settings(max_examples=examples(100), deadline=None)
@given(keyed_rows, keyed_rows, st.lists(st.booleans(), min_size=12, max_size=12))
def test_keyed_searches_are_the_plain_loops(rows, queries, inclusive) -> None:
    """GIVEN rows (a, b, start, length) and queries (a, b, t) WHEN searching all at once THEN
    each answer is what a loop over the rows of the query's key gives."""
    import numpy as np

    from traceprobe.metrics.grouping import NONE, first_of_each, latest_end_before, lookup, rank

    def cols(xs, i):
        return np.array([x[i] for x in xs], np.int64)

    ka, kb, s, e = cols(rows, 0), cols(rows, 1), cols(rows, 2), cols(rows, 2) + cols(rows, 3)
    qa, qb, t = cols(queries, 0), cols(queries, 1), cols(queries, 2)
    inc = np.array(inclusive[: len(queries)], bool)
    # the first row of each key (smallest start, then the earliest), ordered by key
    first = first_of_each([ka, kb], s).tolist() if rows else []
    keys = sorted({(a, b) for a, b, _, _ in rows})
    assert first == [min((r[2], i) for i, r in enumerate(rows) if r[:2] == k)[1] for k in keys]
    # lookup among the distinct keys
    table = [ka[first], kb[first]] if rows else [cols([], 0), cols([], 0)]
    hit = lookup(table, [qa, qb]).tolist()
    assert hit == [keys.index((a, b)) if (a, b) in keys else -1 for a, b, _, _ in queries]
    # rank: rows of a smaller key, or of the query's key with start < t (<= t where inclusive)
    order, before = rank([ka, kb], s, [qa, qb], t, inc)
    assert sorted(order.tolist()) == list(range(len(rows)))
    assert [(ka[i], kb[i], s[i]) for i in order] == sorted(zip(ka, kb, s, strict=True))
    assert before.tolist() == [
        sum((r[0], r[1]) < (a, b) or ((r[0], r[1]) == (a, b) and (r[2] <= x if i else r[2] < x))
            for r in rows)
        for (a, b, x, _), i in zip(queries, inc, strict=True)
    ]
    # the latest end among the rows of the key that start before t
    got = latest_end_before([ka, kb], s, e, [qa, qb], t).tolist()
    assert got == [max((r[2] + r[3] for r in rows if r[:2] == (a, b) and r[2] < x), default=NONE)
                   for a, b, x, _ in queries]
