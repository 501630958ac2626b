"""The interval operations the metrics added to traceprobe.intervals, against per-tick sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from traceprobe import intervals as iv

raw = st.lists(st.tuples(st.integers(-20, 60), st.integers(0, 15)), max_size=25)



def grouped_spans(keys, starts, ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`traceprobe.intervals.unions` of each key's intervals, as (the key of each
    piece, starts, ends), keys ascending."""
    uniq, gid = np.unique(np.asarray(keys, np.int64), return_inverse=True)
    g = iv.unions(gid.astype(np.int64).ravel(), np.asarray(starts, np.int64),
                  np.asarray(ends, np.int64), len(uniq))
    return np.repeat(uniq, np.diff(g.off)).astype(np.int64), g.starts, g.ends


def ticks(pairs) -> set[int]:
    out: set[int] = set()
    for s, e in pairs:
        out.update(range(s, e))
    return out


def test_grouped_spans_example() -> None:
    # key 1: [0,5) [5,8) touch -> [0,8), [10,12) apart; key 0: only a zero-length interval
    k, s, e = grouped_spans([1, 1, 0, 1, 2], [0, 5, 3, 10, 4], [5, 8, 3, 12, 9])
    assert (k.tolist(), s.tolist(), e.tolist()) == ([1, 1, 2], [0, 10, 4], [8, 12, 9])
    k, s, e = grouped_spans([], [], [])
    assert k.size == s.size == e.size == 0


def test_measure_within_example() -> None:
    a = iv.spans([0, 10], [5, 20])
    got = iv.measure_within(a, [0, 3, 6, 4, 25, 15, -5], [100, 12, 9, 3, 30, 18, 1])
    assert got.tolist() == [15, 4, 0, 0, 0, 3, 1]
    assert iv.measure_within(iv.EMPTY, [0], [10]).tolist() == [0]


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-20, 60), st.integers(0, 15)), max_size=30)
)
def test_grouped_spans_match_per_key_spans(rows: list[tuple[int, int, int]]) -> None:
    keys = [k for k, _, _ in rows]
    starts = [s for _, s, _ in rows]
    ends = [s + d for _, s, d in rows]
    gk, gs, ge = grouped_spans(keys, starts, ends)
    assert (np.diff(gk) >= 0).all()
    for key in range(4):
        mine = [(s, s + d) for k, s, d in rows if k == key]
        want = iv.spans([p[0] for p in mine], [p[1] for p in mine])
        m = gk == key
        assert gs[m].tolist() == want.starts.tolist()
        assert ge[m].tolist() == want.ends.tolist()


@given(raw, st.lists(st.tuples(st.integers(-30, 70), st.integers(-5, 30)), max_size=20))
def test_measure_within_matches_ticks(a_raw, queries) -> None:
    a = iv.spans([s for s, _ in a_raw], [s + d for s, d in a_raw])
    ta = ticks((s, s + d) for s, d in a_raw)
    got = iv.measure_within(a, [s for s, _ in queries], [s + d for s, d in queries])
    assert got.tolist() == [len(ta & set(range(s, s + d))) for s, d in queries]
