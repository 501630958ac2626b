"""Top kernels, top CPU ops and copy rates of many windows at once (``f(..., windows)`` on a cut
timeline) are, window by window, what the plain functions give on ``Timeline.window``; and
the vectorised self time is the stack sweep it replaces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from frames import copy, kernel, op, timeline
from hyp import examples
from test_timeline import bounds, steps_like
from traceprobe.metrics.copies import copy_rates
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.nesting import self_times
from traceprobe.metrics.top import top_kernels, top_ops

SAMPLES = Path(__file__).parents[2] / "sample_traces"
NAMES = {0: "NVIDIA H200", 1: None}


def stack_sweep(s: list[int], e: list[int], thread: list[tuple]) -> list[int]:
    """The reference: sort by (thread, start, longer first, row), keep a stack of open ops;
    an op's parent is the top left after popping the ops that ended by its start, when the
    top encloses its end."""
    own = [b - a for a, b in zip(s, e, strict=True)]
    order = sorted(range(len(s)), key=lambda i: (thread[i], s[i], -e[i], i))
    stack: list[int] = []
    last = None
    for i in order:
        if thread[i] != last:
            stack, last = [], thread[i]
        while stack and e[stack[-1]] <= s[i]:
            stack.pop()
        if stack and e[i] <= e[stack[-1]]:
            own[stack[-1]] -= e[i] - s[i]
        stack.append(i)
    return [max(x, 0) for x in own]


spans = st.tuples(st.integers(0, 60), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(spans, st.integers(0, 2), st.integers(0, 1)), max_size=40))
def test_self_times_are_the_stack_sweep(rows) -> None:
    """GIVEN ops anywhere (nested, partly overlapping, equal, zero-length) on a few threads
    WHEN computing self times vectorised THEN each is the stack sweep's."""
    s = [a for (a, _), _, _ in rows]
    e = [b for (_, b), _, _ in rows]
    win = [w for _, w, _ in rows]
    tid = [t for _, _, t in rows]
    got = self_times(np.array(s, np.int64), np.array(e, np.int64),
                     [np.array(win, np.int64), np.array(tid, np.int64)])
    assert got.tolist() == stack_sweep(s, e, list(zip(win, tid, strict=True)))


def test_self_times_of_a_deep_thread() -> None:
    """GIVEN thousands of ops on two threads (deep nesting, long runs of siblings: skips of
    every size) THEN the stack sweep's self times."""
    rng = np.random.default_rng(7)
    n = 5000
    s = np.sort(rng.integers(0, 200_000, n))
    e = s + rng.geometric(0.002, n)
    tid = rng.integers(0, 2, n)
    got = self_times(s, e, [tid])
    assert got.tolist() == stack_sweep(s.tolist(), e.tolist(), [(t,) for t in tid.tolist()])
    assert (got < e - s).any()  # some ops do have children here


grids = st.sampled_from(["", "[1, 1, 1]", "[8, 1, 1]"])
gpu_rows = st.lists(
    st.tuples(spans, st.sampled_from(["a", "b", "c"]), st.integers(0, 2), grids,
              st.sampled_from([-1, 32, 64, 255]), st.sampled_from([-1.0, np.nan, 12.5, 50.0])),
    max_size=14,
)
copy_rows = st.lists(
    st.tuples(spans, st.sampled_from(["HtoD", "DtoH", "DtoD"]), st.integers(0, 1),
              st.sampled_from([-1, 0, 1024, 4096]), st.booleans()),
    max_size=8,
)
op_rows = st.lists(
    st.tuples(spans, st.sampled_from(["aten::mm", "aten::add", "x"]), st.integers(0, 1),
              st.sampled_from(["", "[[2,2]]", "[[4]]", None]), st.sampled_from(["", "float"])),
    max_size=16,
)


def build(ks, cs, os_):
    """A timeline with kernels (grid, block, registers, occupancy), copies (some pageable,
    some of unknown size) and ops (dims, some missing: such a row belongs to no group)."""
    tl = timeline(
        gpu=[kernel(s, e, name=n, device=d) for (s, e), n, d, *_ in ks]
        + [copy(s, e, di, device=d, bytes=b, **({"dst_kind": "Pageable"} if pg else {}))
           for (s, e), di, d, b, pg in cs],
        cpu=[op(s, e, name=n, tid=t) for (s, e), n, t, _, _ in os_],
    )
    g = len(ks)
    pad = [""] * len(cs)
    tl.gpu["grid"] = [grid for _, _, _, grid, _, _ in ks] + pad
    tl.gpu["block"] = [grid[::-1] for _, _, _, grid, _, _ in ks] + pad
    tl.gpu["registers_per_thread"] = np.array([r for *_, r, _ in ks] + [-1] * len(cs), np.int64)
    tl.gpu["occupancy"] = np.array([o for *_, o in ks] + [-1.0] * len(cs), np.float64)
    tl.cpu["input_dims"] = pd.Series([d for *_, d, _ in os_], dtype=object)
    tl.cpu["input_types"] = [t for *_, t in os_]
    assert len(tl.gpu) == g + len(cs)
    return tl


def assert_windows_match(tl, wins, devices) -> None:
    """Every table of window i of the cut timeline is the plain function's on window i; the
    first ``n`` rows are the first ``n`` of the full table."""
    cut = tl.cut(wins)
    n = Windows.of(wins)
    kernels = top_kernels(cut.gpu, devices, n)
    kernels_1 = top_kernels(cut.gpu, devices, n, top=1)
    ops = top_ops(cut.cpu, n)
    ops_2 = top_ops(cut.cpu, n, top=2)
    rates = copy_rates(cut.gpu, devices, NAMES, n)
    for got in (kernels, kernels_1, ops, ops_2, rates):
        assert len(got) == len(wins)
    for i, (lo, hi) in enumerate(wins):
        w = tl.window(lo, hi)
        one = Windows.one(lo, hi)
        assert kernels[i] == top_kernels(w.gpu, devices, one)[0], (i, lo, hi)
        assert ops[i] == top_ops(w.cpu, one)[0], (i, lo, hi)
        assert rates[i] == copy_rates(w.gpu, devices, NAMES, one)[0], (i, lo, hi)
        assert (kernels_1[i], ops_2[i]) == (kernels[i][:1], ops[i][:2])


@settings(max_examples=examples(50), deadline=None)
@given(gpu_rows, copy_rows, op_rows, st.one_of(steps_like, bounds),
       st.sampled_from([[0, 1], [0], [1, 2]]))
def test_by_window_is_each_window(ks, cs, os_, wins, devices) -> None:
    """GIVEN kernels, copies and ops anywhere and windows that touch, overlap or come out of
    order WHEN computing every window at once THEN window i's rows are window(lo, hi)'s."""
    assert_windows_match(build(ks, cs, os_), wins, devices)


def test_by_window_by_hand() -> None:
    """GIVEN two touching windows [0, 10) [10, 20) and ops/kernels straddling them
    THEN each window counts its clipped part only, and self time does not cross windows."""
    tl = timeline(gpu=[kernel(5, 15, "a"), kernel(12, 14, "b")],
                  cpu=[op(0, 20, "outer"), op(8, 12, "inner")])
    cut = tl.cut([(0, 10), (10, 20)])
    two = Windows.of([(0, 10), (10, 20)])
    k0, k1 = top_kernels(cut.gpu, [0], two)
    assert [(k.name, k.total_ns, k.fraction) for k in k0] == [("a", 5, 1.0)]
    assert [(k.name, k.total_ns, k.fraction) for k in k1] == [("a", 5, 5 / 7), ("b", 2, 2 / 7)]
    o0, o1 = top_ops(cut.cpu, two)
    # window 0: outer [0,10) holds inner [8,10): self 8 and 2; window 1: [10,20) holds [10,12)
    assert [(o.name, o.total_ns, o.self_ns) for o in o0] == [("outer", 10, 8), ("inner", 2, 2)]
    assert [(o.name, o.total_ns, o.self_ns) for o in o1] == [("outer", 10, 8), ("inner", 2, 2)]
    # a window with nothing in it
    assert top_ops(cut.cpu, Windows.of([(0, 10), (10, 20), (20, 20)]))[2] == ()


def test_recorded_steps() -> None:
    """GIVEN every recorded sample trace with ProfilerSteps WHEN cut at its steps THEN each
    step's tables are the plain functions' on that step's window."""
    from traceprobe.load.pipeline import load

    several = 0
    for path in sorted(SAMPLES.glob("**/*.json.gz")):
        tl = load(path)
        wins = list(zip(tl.steps["start"].tolist(), tl.steps["end"].tolist(), strict=True))
        if not wins:
            continue
        several += len(wins) > 1
        cut = tl.cut(wins)
        names = {d: tl.meta.device_name(d) for d in tl.devices}
        windows = Windows.of(wins)
        kernels = top_kernels(cut.gpu, tl.devices, windows)
        ops = top_ops(cut.cpu, windows)
        rates = copy_rates(cut.gpu, tl.devices, names, windows)
        for i, (lo, hi) in enumerate(wins):
            w = tl.window(lo, hi)
            one = Windows.one(lo, hi)
            assert kernels[i] == top_kernels(w.gpu, tl.devices, one)[0], (path, i)
            assert ops[i] == top_ops(w.cpu, one)[0], (path, i)
            assert rates[i] == copy_rates(w.gpu, tl.devices, names, one)[0], (path, i)
    assert several >= 3
