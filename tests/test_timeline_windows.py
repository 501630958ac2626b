"""Timeline.windows (many windows at once, for --step all) gives exactly Timeline.window's
frames: same rows, same order, same index, same clipped values."""

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


@settings(max_examples=examples(100), deadline=None)
@given(intervals, intervals, bounds)
def test_windows_are_the_windows(ks, ops, wins) -> None:
    """GIVEN kernels and ops anywhere (zero-length ones, long ones straddling, unsorted)
    WHEN cutting many windows at once THEN each is what window(lo, hi) gives."""
    tl = timeline(gpu=[kernel(s, e, name=f"k{i}") for i, (s, e) in enumerate(ks)],
                  cpu=[op(s, e, name=f"o{i}") for i, (s, e) in enumerate(ops)])
    for (lo, hi), got in zip(wins, tl.windows(wins), strict=True):
        frames_equal(got, tl.window(lo, hi))


def test_windows_on_a_recorded_trace_with_steps() -> None:
    """GIVEN a recorded trace with ProfilerSteps WHEN cutting every step THEN window's frames."""
    from pathlib import Path

    from traceprobe.load.pipeline import load

    trace = next(Path(__file__).parent.parent.glob("sample_traces/h200x2/scheduled/*/*.json.gz"))
    tl = load(trace)
    wins = list(zip(tl.steps["start"].tolist(), tl.steps["end"].tolist(), strict=True))
    assert wins
    for (lo, hi), got in zip(wins, tl.windows(wins), strict=True):
        frames_equal(got, tl.window(lo, hi))
