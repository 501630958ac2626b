"""Tests for traceprobe.intervals: exact examples, then properties against a slow oracle.

The oracle is the obvious one: with integer endpoints, a set of half-open intervals
``[s, e)`` is exactly the set of integer ticks ``t`` with ``s <= t < e``, and a
normalised set (sorted, disjoint, non-touching, positive length) is the unique run
decomposition of that tick set. So every function is checked by comparing tick sets
(and, for coverage/max_depth, per-tick counts) computed with Python sets and loops.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyp import examples
from traceprobe import intervals as iv
from traceprobe.intervals import EMPTY, Spans

# --------------------------------------------------------------------------- helpers

LO, HI = -8, 40  # generated endpoints live here; small, so collisions are common
BIG = 1_700_000_000_000_000_000  # an epoch-ns offset: float64 would lose the low digits



def grouped_spans(keys, starts, ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`traceprobe.intervals.unions` of each key's intervals, as (the key of each
    piece, starts, ends), keys ascending."""
    uniq, gid = np.unique(np.asarray(keys, np.int64), return_inverse=True)
    g = iv.unions(gid.astype(np.int64).ravel(), np.asarray(starts, np.int64),
                  np.asarray(ends, np.int64), len(uniq))
    return np.repeat(uniq, np.diff(g.off)).astype(np.int64), g.starts, g.ends


def make(pairs: list[tuple[int, int]]) -> Spans:
    """A Spans straight from pairs, with no normalisation (for exact expectations)."""
    return Spans(
        np.array([p[0] for p in pairs], dtype=np.int64),
        np.array([p[1] for p in pairs], dtype=np.int64),
    )


def pairs(sp: Spans) -> list[tuple[int, int]]:
    return [(int(s), int(e)) for s, e in zip(sp.starts, sp.ends, strict=True)]


def check_normalised(sp: Spans) -> None:
    """The invariant every function promises on its output."""
    assert isinstance(sp, Spans)
    assert sp.starts.dtype == np.int64 and sp.ends.dtype == np.int64
    assert sp.starts.ndim == 1 and sp.starts.shape == sp.ends.shape
    assert (sp.ends > sp.starts).all(), f"non-positive piece in {pairs(sp)}"
    # sorted, disjoint and non-touching: each piece starts strictly after the previous ended
    assert (sp.starts[1:] > sp.ends[:-1]).all(), f"unsorted/overlapping/touching: {pairs(sp)}"


def ticks_of_raw(raw: list[tuple[int, int]]) -> set[int]:
    out: set[int] = set()
    for s, e in raw:
        out.update(range(s, e))
    return out


def ticks(sp: Spans) -> set[int]:
    return ticks_of_raw(pairs(sp))


def counts(raw: list[tuple[int, int]]) -> Counter[int]:
    c: Counter[int] = Counter()
    for s, e in raw:
        for t in range(s, e):
            c[t] += 1
    return c


def from_ticks(ts: set[int]) -> Spans:
    """The normalised set with exactly these ticks, built without the module under test."""
    out: list[tuple[int, int]] = []
    for t in sorted(ts):
        if out and out[-1][1] == t:
            out[-1] = (out[-1][0], t + 1)
        else:
            out.append((t, t + 1))
    return make(out) if out else EMPTY


def assert_is(sp: Spans, expected_ticks: set[int]) -> None:
    """`sp` is normalised and covers exactly `expected_ticks` (hence is *the* normal form)."""
    check_normalised(sp)
    assert ticks(sp) == expected_ticks
    assert pairs(sp) == pairs(from_ticks(expected_ticks))
    assert sp.length == len(expected_ticks)


def split(raw: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    return [s for s, _ in raw], [e for _, e in raw]


# --------------------------------------------------------------------------- strategies

coord = st.integers(LO, HI)


@st.composite
def raw_interval(draw: st.DrawFn) -> tuple[int, int]:
    """Any pair: positive, zero or negative length, with a bias to short and equal ends."""
    s = draw(coord)
    kind = draw(st.sampled_from(["short", "any", "zero", "negative"]))
    if kind == "short":
        e = s + draw(st.integers(1, 4))
    elif kind == "zero":
        e = s
    elif kind == "negative":
        e = s - draw(st.integers(1, 4))
    else:
        e = draw(coord)
    return s, e


@st.composite
def raw_intervals(draw: st.DrawFn, max_size: int = 12) -> list[tuple[int, int]]:
    base = draw(st.lists(raw_interval(), max_size=max_size))
    # duplicates, nested and touching copies of what is already there
    extra: list[tuple[int, int]] = []
    for s, e in draw(st.lists(st.sampled_from(base), max_size=4)) if base else []:
        how = draw(st.sampled_from(["dup", "touch_after", "touch_before", "nested"]))
        if how == "dup":
            extra.append((s, e))
        elif how == "touch_after":
            extra.append((e, e + draw(st.integers(1, 3))))
        elif how == "touch_before":
            extra.append((s - draw(st.integers(1, 3)), s))
        elif e - s >= 2:
            extra.append((s + 1, e - 1))
    out = base + extra
    return draw(st.permutations(out)) if out else out


tick_sets = st.sets(coord, max_size=30)
normalised = tick_sets.map(from_ticks)
window = st.tuples(st.integers(LO - 4, HI + 4), st.integers(LO - 4, HI + 4))


# --------------------------------------------------------------------------- exact examples


class TestExamples:
    def test_spans_merges_overlapping_touching_nested_and_drops_empty(self) -> None:
        # GIVEN overlapping, touching, nested, duplicate, zero- and negative-length intervals
        starts = [10, 0, 5, 12, 30, 30, 40, 50, 7]
        ends = [20, 5, 8, 15, 35, 35, 40, 45, 9]
        # WHEN merged
        sp = iv.spans(starts, ends)
        # THEN [0,5)+[5,8)+[7,9) touch/overlap -> [0,9); [10,20) swallows [12,15); dup once;
        # [40,40) and [50,45) cover nothing
        assert pairs(sp) == [(0, 9), (10, 20), (30, 35)]
        assert sp.length == 24
        assert len(sp) == 3
        assert sp.first == 0 and sp.last == 35
        assert not sp.empty

    def test_empty_inputs(self) -> None:
        assert iv.spans([], []).empty
        assert iv.spans([3], [3]).empty
        assert iv.spans([3], [1]).empty
        assert EMPTY.length == 0 and len(EMPTY) == 0
        assert EMPTY.first is None and EMPTY.last is None
        assert iv.union().empty
        assert iv.union(EMPTY, EMPTY).empty
        assert iv.max_depth([], []) == 0
        assert iv.max_depth([5], [5]) == 0
        assert iv.coverage([], [], 1).empty
        assert iv.intersect(EMPTY, iv.whole(0, 5)).empty
        assert iv.difference(EMPTY, iv.whole(0, 5)).empty
        assert pairs(iv.difference(iv.whole(0, 5), EMPTY)) == [(0, 5)]
        assert iv.overlap(EMPTY, EMPTY) == 0

    def test_union(self) -> None:
        a = make([(0, 10), (20, 30)])
        b = make([(10, 15), (25, 40), (50, 60)])
        assert pairs(iv.union(a, b)) == [(0, 15), (20, 40), (50, 60)]
        assert pairs(iv.union(a, EMPTY)) == [(0, 10), (20, 30)]
        assert pairs(iv.union(a, b, make([(15, 20)]))) == [(0, 40), (50, 60)]

    def test_intersect_and_overlap(self) -> None:
        a = make([(0, 10), (20, 30)])
        b = make([(5, 25), (30, 40)])
        # [5,10) and [20,25); [30,40) only touches a's [20,30) and shares no time
        assert pairs(iv.intersect(a, b)) == [(5, 10), (20, 25)]
        assert iv.overlap(a, b) == 10
        assert iv.overlap(make([(0, 10)]), make([(10, 20)])) == 0

    def test_difference(self) -> None:
        a = make([(0, 10), (20, 30)])
        b = make([(5, 25)])
        assert pairs(iv.difference(a, b)) == [(0, 5), (25, 30)]
        assert pairs(iv.difference(b, a)) == [(10, 20)]
        assert iv.difference(a, make([(-5, 40)])).empty
        # b strictly inside a splits it
        assert pairs(iv.difference(make([(0, 10)]), make([(3, 4)]))) == [(0, 3), (4, 10)]

    def test_coverage_counts_multiplicity(self) -> None:
        # three kernels on one stream overlapping: [0,10) [5,15) [5,8) ; [20,30) twice
        s = [0, 5, 5, 20, 20]
        e = [10, 15, 8, 30, 30]
        assert pairs(iv.coverage(s, e, 1)) == [(0, 15), (20, 30)]
        assert pairs(iv.coverage(s, e, 2)) == [(5, 10), (20, 30)]
        assert pairs(iv.coverage(s, e, 3)) == [(5, 8)]
        assert iv.coverage(s, e, 4).empty
        assert iv.max_depth(s, e) == 3

    def test_coverage_pieces_that_touch_merge(self) -> None:
        # depth 2 on [5,10) by one pair and on [10,12) by another: one piece [5,12)
        s = [0, 5, 8, 10]
        e = [10, 12, 20, 12]
        assert pairs(iv.coverage(s, e, 2)) == [(5, 12)]
        assert pairs(iv.coverage(s, e, 3)) == [(8, 12)]

    def test_coverage_rejects_k_below_one(self) -> None:
        with pytest.raises(ValueError, match="k must be >= 1"):
            iv.coverage([0], [1], 0)

    def test_touching_intervals_are_not_concurrent(self) -> None:
        assert iv.max_depth([0, 10, 20], [10, 20, 30]) == 1
        assert iv.coverage([0, 10], [10, 20], 2).empty

    def test_clip(self) -> None:
        a = make([(0, 10), (20, 30), (40, 50)])
        assert pairs(iv.clip(a, 5, 45)) == [(5, 10), (20, 30), (40, 45)]
        assert pairs(iv.clip(a, 10, 20)) == []
        assert pairs(iv.clip(a, 25, 26)) == [(25, 26)]
        assert pairs(iv.clip(a, -100, 100)) == [(0, 10), (20, 30), (40, 50)]
        assert iv.clip(a, 30, 30).empty
        assert iv.clip(a, 45, 5).empty
        # the input is not modified
        assert pairs(a) == [(0, 10), (20, 30), (40, 50)]

    def test_gaps(self) -> None:
        a = make([(0, 10), (20, 30)])
        assert pairs(iv.gaps(a, -5, 35)) == [(-5, 0), (10, 20), (30, 35)]
        assert pairs(iv.gaps(a, 0, 30)) == [(10, 20)]
        assert pairs(iv.gaps(EMPTY, 3, 7)) == [(3, 7)]
        assert iv.gaps(a, 2, 8).empty
        assert iv.gaps(a, 8, 2).empty

    def test_whole(self) -> None:
        assert pairs(iv.whole(3, 9)) == [(3, 9)]
        assert iv.whole(9, 9).empty
        assert iv.whole(9, 3).empty

    def test_mismatched_lengths_name_both(self) -> None:
        with pytest.raises(ValueError, match="3 vs 2"):
            iv.spans([0, 1, 2], [5, 6])

    def test_epoch_nanoseconds_are_exact(self) -> None:
        # 1.7e18 ns: a float64 round trip would move these by up to 128 ns
        s = [BIG + 1, BIG + 3]
        e = [BIG + 2, BIG + 7]
        sp = iv.spans(s, e)
        assert pairs(sp) == [(BIG + 1, BIG + 2), (BIG + 3, BIG + 7)]
        assert sp.length == 5
        assert pairs(iv.gaps(sp, BIG, BIG + 8)) == [
            (BIG, BIG + 1),
            (BIG + 2, BIG + 3),
            (BIG + 7, BIG + 8),
        ]
        assert iv.max_depth(s + [BIG + 4], e + [BIG + 5]) == 2

    def test_grouped_spans(self) -> None:
        # GIVEN two streams (keys 7 and 3) with overlapping and touching kernels, and a
        # stream (9) whose only kernel has zero length
        keys = [7, 3, 7, 3, 7, 9]
        starts = [0, 5, 8, 10, 20, 4]
        ends = [10, 10, 12, 15, 25, 4]
        # WHEN merged per key
        k, s, e = grouped_spans(keys, starts, ends)
        # THEN keys ascend, [5,10)+[10,15) on stream 3 join, stream 9 is absent
        assert k.tolist() == [3, 7, 7]
        assert s.tolist() == [5, 0, 20]
        assert e.tolist() == [15, 12, 25]
        assert k.dtype == s.dtype == e.dtype == np.int64

    def test_grouped_spans_empty_and_mismatched(self) -> None:
        k, s, e = grouped_spans([], [], [])
        assert k.shape == s.shape == e.shape == (0,)
        k, s, e = grouped_spans([1, 2], [3, 5], [3, 4])
        assert k.shape == (0,)

    def test_measure_within(self) -> None:
        a = make([(0, 10), (20, 30)])
        got = iv.measure_within(a, [5, 0, 10, -5, 25, 30, 8, 15], [25, 30, 20, 0, 26, 40, 2, 15])
        # [5,25): 5+5; [0,30): 20; gap: 0; before: 0; [25,26): 1; after: 0; reversed: 0; empty: 0
        assert got.tolist() == [10, 20, 0, 0, 1, 0, 0, 0]
        assert got.dtype == np.int64
        assert iv.measure_within(EMPTY, [0], [5]).tolist() == [0]
        assert iv.measure_within(a, [], []).shape == (0,)
        with pytest.raises(ValueError, match="2 vs 1"):
            iv.measure_within(a, [0, 1], [5])

    def test_accepts_numpy_and_lists_of_other_int_types(self) -> None:
        s = np.array([0, 5], dtype=np.int32)
        e = np.array([[5], [9]], dtype=np.uint16)  # any shape is ravelled
        sp = iv.spans(s, e)
        assert pairs(sp) == [(0, 9)]
        assert sp.starts.dtype == np.int64


# --------------------------------------------------------------------------- properties vs oracle


@given(raw_intervals())
def test_spans_matches_ticks(raw: list[tuple[int, int]]) -> None:
    s, e = split(raw)
    sp = iv.spans(s, e)
    assert_is(sp, ticks_of_raw(raw))
    assert sp.first == (min(ticks_of_raw(raw)) if raw and sp.length else None)


@given(raw_intervals())
def test_spans_is_idempotent_and_does_not_touch_inputs(raw: list[tuple[int, int]]) -> None:
    s, e = (np.array(x, dtype=np.int64) for x in split(raw))
    s0, e0 = s.copy(), e.copy()
    sp = iv.spans(s, e)
    assert np.array_equal(s, s0) and np.array_equal(e, e0)
    again = iv.spans(sp.starts, sp.ends)
    assert pairs(again) == pairs(sp)


@given(st.lists(raw_intervals(max_size=6), max_size=4))
def test_union_matches_ticks(raws: list[list[tuple[int, int]]]) -> None:
    sets = [iv.spans(*split(r)) for r in raws]
    want: set[int] = set()
    for r in raws:
        want |= ticks_of_raw(r)
    assert_is(iv.union(*sets), want)


@given(normalised, normalised)
def test_intersect_difference_overlap_match_ticks(a: Spans, b: Spans) -> None:
    ta, tb = ticks(a), ticks(b)
    assert_is(iv.intersect(a, b), ta & tb)
    assert_is(iv.difference(a, b), ta - tb)
    assert iv.overlap(a, b) == len(ta & tb)


@given(raw_intervals(), st.integers(1, 6))
def test_coverage_matches_per_tick_count(raw: list[tuple[int, int]], k: int) -> None:
    c = counts(raw)
    assert_is(iv.coverage(*split(raw), k), {t for t, n in c.items() if n >= k})


@given(raw_intervals())
def test_max_depth_matches_per_tick_count(raw: list[tuple[int, int]]) -> None:
    c = counts(raw)
    assert iv.max_depth(*split(raw)) == max(c.values(), default=0)


@given(normalised, window)
def test_clip_and_gaps_match_ticks(a: Spans, w: tuple[int, int]) -> None:
    lo, hi = w
    inside = set(range(lo, hi))
    before = pairs(a)
    assert_is(iv.clip(a, lo, hi), ticks(a) & inside)
    assert_is(iv.gaps(a, lo, hi), inside - ticks(a))
    assert pairs(a) == before  # clip works on copies


@given(window)
def test_whole_matches_ticks(w: tuple[int, int]) -> None:
    lo, hi = w
    assert_is(iv.whole(lo, hi), set(range(lo, hi)))


@st.composite
def keyed_intervals(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    raw = draw(raw_intervals())
    return [(draw(st.integers(-2, 3)), s, e) for s, e in raw]


@given(keyed_intervals())
def test_grouped_spans_matches_per_key_ticks(raw: list[tuple[int, int, int]]) -> None:
    keys, starts, ends = grouped_spans(
        [k for k, _, _ in raw], [s for _, s, _ in raw], [e for _, _, e in raw]
    )
    assert keys.dtype == starts.dtype == ends.dtype == np.int64
    assert keys.shape == starts.shape == ends.shape
    assert (keys[1:] >= keys[:-1]).all(), "groups not in ascending key order"
    want_keys: list[int] = []
    want: list[tuple[int, int]] = []
    for key in sorted({k for k, _, _ in raw}):
        pieces = pairs(from_ticks(ticks_of_raw([(s, e) for k, s, e in raw if k == key])))
        want_keys += [key] * len(pieces)
        want += pieces
    assert keys.tolist() == want_keys
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == want
    for key in set(keys.tolist()):
        sel = keys == key
        check_normalised(Spans(starts[sel], ends[sel]))


@given(normalised, st.lists(window, max_size=8))
def test_measure_within_matches_ticks(a: Spans, ws: list[tuple[int, int]]) -> None:
    got = iv.measure_within(a, [lo for lo, _ in ws], [hi for _, hi in ws])
    assert got.dtype == np.int64 and got.shape == (len(ws),)
    ta = ticks(a)
    assert got.tolist() == [len(ta & set(range(lo, hi))) for lo, hi in ws]
    assert got.tolist() == [iv.clip(a, lo, hi).length for lo, hi in ws]


# --------------------------------------------------------------------------- algebraic identities


@given(normalised, normalised)
def test_inclusion_exclusion(a: Spans, b: Spans) -> None:
    assert iv.union(a, b).length == a.length + b.length - iv.intersect(a, b).length


@given(normalised, normalised)
def test_difference_and_intersection_partition_a(a: Spans, b: Spans) -> None:
    d, i = iv.difference(a, b), iv.intersect(a, b)
    assert pairs(iv.union(d, i)) == pairs(a)
    assert iv.intersect(d, i).empty
    assert iv.intersect(d, b).empty
    assert d.length + i.length == a.length


@given(normalised, normalised)
def test_commutativity(a: Spans, b: Spans) -> None:
    assert pairs(iv.union(a, b)) == pairs(iv.union(b, a))
    assert pairs(iv.intersect(a, b)) == pairs(iv.intersect(b, a))
    assert iv.overlap(a, b) == iv.overlap(b, a)


@given(normalised, normalised, normalised)
def test_associativity_and_distributivity(a: Spans, b: Spans, c: Spans) -> None:
    assert pairs(iv.union(iv.union(a, b), c)) == pairs(iv.union(a, iv.union(b, c)))
    assert pairs(iv.intersect(iv.intersect(a, b), c)) == pairs(iv.intersect(a, iv.intersect(b, c)))
    assert pairs(iv.intersect(a, iv.union(b, c))) == pairs(
        iv.union(iv.intersect(a, b), iv.intersect(a, c))
    )
    assert pairs(iv.difference(a, iv.union(b, c))) == pairs(iv.difference(iv.difference(a, b), c))


@given(normalised)
def test_identities_with_self_and_empty(a: Spans) -> None:
    assert pairs(iv.union(a, a)) == pairs(a)
    assert pairs(iv.intersect(a, a)) == pairs(a)
    assert iv.difference(a, a).empty
    assert pairs(iv.union(a, EMPTY)) == pairs(a)
    assert iv.intersect(a, EMPTY).empty
    assert iv.overlap(a, a) == a.length


@given(normalised, window)
def test_clip_and_gaps_partition_the_window(a: Spans, w: tuple[int, int]) -> None:
    lo, hi = w
    c, g = iv.clip(a, lo, hi), iv.gaps(a, lo, hi)
    assert iv.intersect(c, g).empty
    assert pairs(iv.union(c, g)) == pairs(iv.whole(lo, hi))
    assert pairs(c) == pairs(iv.intersect(a, iv.whole(lo, hi)))
    assert c.length + g.length == max(hi - lo, 0)


@given(raw_intervals())
def test_coverage_levels_nest_and_end_at_max_depth(raw: list[tuple[int, int]]) -> None:
    s, e = split(raw)
    assert pairs(iv.coverage(s, e, 1)) == pairs(iv.spans(s, e))
    d = iv.max_depth(s, e)
    prev = iv.coverage(s, e, 1)
    for k in range(2, d + 2):
        cur = iv.coverage(s, e, k)
        assert iv.difference(cur, prev).empty  # coverage(k) is inside coverage(k-1)
        prev = cur
    assert not iv.coverage(s, e, max(d, 1)).empty or d == 0
    assert iv.coverage(s, e, d + 1).empty
    # the integral of depth over time is the sum of lengths
    total = sum(max(b - a, 0) for a, b in raw)
    assert sum(iv.coverage(s, e, k).length for k in range(1, d + 1)) == total


@settings(max_examples=examples(50))
@given(raw_intervals(), raw_intervals(), st.integers(-BIG, BIG))
def test_translation_invariance_at_epoch_scale(
    raw_a: list[tuple[int, int]], raw_b: list[tuple[int, int]], shift: int
) -> None:
    """Shifting every endpoint by ~1e18 ns shifts every result exactly (no float on the way)."""

    def sh(raw: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return [(s + shift, e + shift) for s, e in raw]

    def unshift(sp: Spans) -> list[tuple[int, int]]:
        return [(s - shift, e - shift) for s, e in pairs(sp)]

    a, b = iv.spans(*split(raw_a)), iv.spans(*split(raw_b))
    a2, b2 = iv.spans(*split(sh(raw_a))), iv.spans(*split(sh(raw_b)))
    assert unshift(a2) == pairs(a)
    assert unshift(iv.union(a2, b2)) == pairs(iv.union(a, b))
    assert unshift(iv.intersect(a2, b2)) == pairs(iv.intersect(a, b))
    assert unshift(iv.difference(a2, b2)) == pairs(iv.difference(a, b))
    assert unshift(iv.coverage(*split(sh(raw_a + raw_b)), 2)) == pairs(
        iv.coverage(*split(raw_a + raw_b), 2)
    )
    assert iv.max_depth(*split(sh(raw_a))) == iv.max_depth(*split(raw_a))
    assert unshift(iv.clip(a2, shift + 3, shift + 20)) == pairs(iv.clip(a, 3, 20))
    assert unshift(iv.gaps(a2, shift - 2, shift + 20)) == pairs(iv.gaps(a, -2, 20))
    assert iv.overlap(a2, b2) == iv.overlap(a, b)
    assert iv.measure_within(a2, [shift - 3], [shift + 17]).tolist() == (
        iv.measure_within(a, [-3], [17]).tolist()
    )
    _, gs, ge = grouped_spans([1] * len(raw_a), *split(sh(raw_a)))
    assert [(s - shift, e - shift) for s, e in zip(gs.tolist(), ge.tolist(), strict=True)] == (
        pairs(a)
    )
