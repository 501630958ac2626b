"""Timeline.cut (many windows at once, for --step all) gives, for each window, exactly
Timeline.window's frames: same rows, same order, same clipped values."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from frames import kernel, op, timeline
from hyp import examples

SPAN = 60


def frames_equal(a, b) -> None:
    for x, y in ((a.gpu, b.gpu), (a.cpu, b.cpu), (a.steps, b.steps)):
        pd.testing.assert_frame_equal(x, y)


intervals = st.lists(
    st.tuples(st.integers(0, SPAN), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)
bounds = st.lists(
    st.tuples(st.integers(-5, SPAN + 5), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1])),
    min_size=1, max_size=8,
)


def cut_part(cut, i: int):
    """Window ``i`` of a cut timeline, as plain frames (no ``win``, a fresh index)."""
    from dataclasses import replace

    def part(df):
        return df[df["win"] == i].drop(columns="win").reset_index(drop=True)

    return replace(cut, gpu=part(cut.gpu), cpu=part(cut.cpu), steps=part(cut.steps))


def reindexed(tl):
    from dataclasses import replace

    return replace(tl, gpu=tl.gpu.reset_index(drop=True), cpu=tl.cpu.reset_index(drop=True),
                   steps=tl.steps.reset_index(drop=True))


# sorted windows that may touch but never overlap (the shape of ProfilerSteps)
steps_like = st.lists(st.tuples(st.integers(0, 10), st.integers(0, 15)), min_size=1,
                      max_size=8).map(
    lambda gl: [(sum(g + w for g, w in gl[:i]) + gl[i][0] - 5,
                 sum(g + w for g, w in gl[:i]) + gl[i][0] - 5 + gl[i][1]) for i in range(len(gl))]
)


@settings(max_examples=examples(150), deadline=None)
@given(intervals, intervals, st.one_of(steps_like, bounds))
def test_cut_holds_each_window(ks, ops, wins) -> None:
    """GIVEN kernels and ops anywhere, and windows that touch, overlap or are out of order
    WHEN cutting them all at once THEN the rows of window i are window(lo, hi)'s rows, in its
    order, clipped as it clips, and every row belongs to a window."""
    tl = timeline(gpu=[kernel(s, e, name=f"k{i}") for i, (s, e) in enumerate(ks)],
                  cpu=[op(s, e, name=f"o{i}") for i, (s, e) in enumerate(ops)])
    cut = tl.cut(wins)
    for df in (cut.gpu, cut.cpu, cut.steps):
        assert str(df["win"].dtype) == "int64"
        assert (df["win"].to_numpy()[1:] >= df["win"].to_numpy()[:-1]).all()
    for i, (lo, hi) in enumerate(wins):
        frames_equal(cut_part(cut, i), reindexed(tl.window(lo, hi)))


def test_cut_on_a_recorded_trace_with_steps() -> None:
    """GIVEN a recorded trace's ProfilerSteps WHEN cut at once THEN each step is window's."""
    from pathlib import Path

    from traceprobe.load.pipeline import load

    trace = next(Path(__file__).parent.parent.glob("sample_traces/h200x2/scheduled/*/*.json.gz"))
    tl = load(trace)
    wins = list(zip(tl.steps["start"].tolist(), tl.steps["end"].tolist(), strict=True))
    cut = tl.cut(wins)
    for i, (lo, hi) in enumerate(wins):
        frames_equal(cut_part(cut, i), reindexed(tl.window(lo, hi)))
