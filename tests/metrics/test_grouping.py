"""The grouping of many windows at once (traceprobe.metrics.grouping) and the grouped interval
sweeps (traceprobe.intervals), each against a slow simple loop over the groups written here."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from hyp import examples
from traceprobe import intervals as iv
from traceprobe.metrics import grouping as gr

I64 = np.int64
rows = st.lists(st.tuples(st.integers(0, 4), st.integers(-2**62, 2**62)), max_size=40)
small = st.lists(st.tuples(st.integers(0, 4), st.integers(-50, 50)), max_size=40)
intervals = st.lists(st.tuples(st.integers(0, 3), st.integers(-20, 60), st.integers(0, 15)),
                     max_size=30)


def split(xs, *cols):
    return [np.array([x[c] for x in xs], I64) for c in cols]


def test_windows_one_is_a_window_of_its_bounds() -> None:
    w = gr.Windows.one(10, 25)
    assert (w.n, w.lo.tolist(), w.hi.tolist(), w.length.tolist()) == (1, [10], [25], [15])
    many = gr.Windows.of([(0, 5), (5, 5), (3, 9)])
    assert (many.n, many.length.tolist()) == (3, [5, 0, 6])
    assert gr.win_of(pd.DataFrame({"start": [1, 2]})).tolist() == [0, 0]
    assert gr.win_of(pd.DataFrame({"win": [2, 0]})).tolist() == [2, 0]


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=20))
def test_key_changes_is_where_a_key_differs_from_the_row_before(keys) -> None:
    keys = sorted(keys)
    a, b = split(keys, 0, 1)
    want = [i == 0 or keys[i] != keys[i - 1] for i in range(len(keys))]
    assert gr.key_changes(a, b).tolist() == want
    ids, seen = [], -1
    for flag in want:
        seen += flag
        ids.append(seen)
    assert gr.group_ids([a, b]).tolist() == ids


@given(rows)
def test_grouped_sum_is_exact_where_floats_are_not(xs) -> None:
    gid, v = split(xs, 0, 1)
    want = [0] * 5
    for g, x in xs:
        want[g] += x
    # the true sums are Python ints; int64 wraps the same way numpy's add does
    got = gr.grouped_sum(v, gid, 5).tolist()
    assert got == [((w + 2**63) % 2**64) - 2**63 for w in want]
    marked = np.where(gid == 0, -1, gid)  # group -1 belongs to none
    assert gr.grouped_sum(v, marked, 5).tolist()[1:] == got[1:]


@given(small, st.sampled_from([0, 25, 50, 95, 100]))
def test_grouped_max_and_quantile_are_those_of_each_group(xs, q) -> None:
    xs = sorted(xs)
    gid, v = split(xs, 0, 1)
    top = gr.grouped_max(v, gid, 5).tolist()
    quant = gr.grouped_quantile(v, gid, 5, q)
    for g in range(5):
        mine = [x for k, x in xs if k == g]
        assert top[g] == (max(mine) if mine else 0)
        if mine:
            assert quant[g] == np.percentile(mine, q)
        else:
            assert np.isnan(quant[g])


@given(st.lists(st.integers(0, 3), max_size=20).map(sorted), st.none() | st.integers(0, 3))
def test_the_per_window_cut_keeps_each_windows_rows_in_order(win, head) -> None:
    rows_ = [f"r{i}" for i in range(len(win))]
    windows = gr.Windows.of([(0, 1)] * 4)
    got = gr.per_window(rows_, np.array(win, I64), windows, head)
    want = [tuple([r for r, w in zip(rows_, win, strict=True) if w == i][:head]) for i in range(4)]
    assert got == want
    assert gr.cut(rows_, gr.offsets(np.array(win, I64), 4), head) == want
    assert gr.chunks(list(range(8)), 2, windows) == [(0, 1), (2, 3), (4, 5), (6, 7)]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", None]),
                          st.integers(0, 2), st.integers(0, 9)), max_size=30))
def test_key_groups_are_pandas_groupby(xs) -> None:
    df = pd.DataFrame(xs, columns=["win", "name", "dev", "x"], dtype=object)
    win = df["win"].to_numpy(I64)
    g = gr.key_groups(win, [df["name"], df["dev"].to_numpy(I64)])
    got = {(int(w), n, int(d)): (int(c), int(s)) for w, n, d, c, s in zip(
        g.win, g.values[0], g.values[1], g.size(), g.sum(df["x"].to_numpy(I64)), strict=True)}
    ref = df.dropna().astype({"x": I64}).groupby(["win", "name", "dev"])["x"].agg(["size", "sum"])
    assert got == {k: (int(r["size"]), int(r["sum"])) for k, r in ref.iterrows()}
    order = g.order(*g.codes)  # by window, then the key columns' order
    keys = [(int(g.win[i]), g.values[0][i], int(g.values[1][i])) for i in order]
    assert keys == sorted(keys)


@given(st.lists(st.integers(0, 5), max_size=12), st.lists(st.integers(0, 5), min_size=1,
                                                          max_size=4, unique=True))
def test_positions_and_report_rows(values, keys) -> None:
    pos, uniq = gr.positions(np.array(values, I64), keys)
    assert uniq == sorted(keys)
    assert pos.tolist() == [uniq.index(v) if v in uniq else -1 for v in values]
    wanted = list(reversed(keys))
    assert gr.report_rows(2, uniq, wanted).tolist() == [
        w * len(uniq) + uniq.index(k) for w in range(2) for k in wanted]


@given(st.lists(st.integers(0, 5), max_size=6), st.none() | st.integers(0, 4))
def test_pairs_within_are_every_pair_of_each_group(sizes, upto) -> None:
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(I64)
    a, b, poff = gr.pairs_within(off, upto)
    for g, k in enumerate(sizes):
        want = [] if upto is not None and k > upto else list(
            combinations(range(off[g], off[g + 1]), 2))
        got = list(zip(a[poff[g]:poff[g + 1]].tolist(), b[poff[g]:poff[g + 1]].tolist(),
                       strict=True))
        assert got == want


@given(st.lists(st.integers(-5, 5), max_size=20), st.lists(st.text("ab", max_size=3),
                                                            max_size=8))
def test_sorted_unique_and_string_ranks(a, names) -> None:
    assert gr.sorted_unique(np.array(a, I64)).tolist() == sorted(set(a))
    r = gr.string_ranks(names).tolist()
    assert all((r[i] < r[j]) == (names[i] < names[j]) for i in range(len(names))
               for j in range(len(names)))


@given(st.lists(st.tuples(st.integers(-30, 30), st.integers(0, 20)), min_size=1, max_size=4),
       intervals)
def test_windows_laid_on_one_axis_union_as_each_window_alone(wins, raw) -> None:
    """GIVEN windows (overlapping or not) and intervals of each THEN one union on the axis is,
    window by window, the union of the window's clipped intervals alone."""
    lo = np.array([w[0] for w in wins], I64)
    hi = lo + np.array([w[1] for w in wins], I64)
    axis = gr.Axis.of(lo, hi)
    raw = [(k % len(wins), s, s + d) for k, s, d in raw]
    w, s, e = split(raw, 0, 1, 2)
    u = iv.spans(axis.put(s, w), axis.put(e, w))
    for i in range(len(wins)):
        mine = [(a, b) for k, a, b in raw if k == i]
        alone = iv.clip(iv.spans([a for a, _ in mine], [b for _, b in mine]), int(lo[i]),
                        int(hi[i]))
        there = axis.win_at(u.starts) == i
        assert (u.starts[there] - axis.base[i] + lo[i]).tolist() == alone.starts.tolist()
        assert (u.ends[there] - axis.base[i] + lo[i]).tolist() == alone.ends.tolist()
    assert axis.windows().length == int((hi - lo).sum())


@given(intervals)
def test_grouped_sweeps_are_each_groups_own(raw) -> None:
    """unions, depths and overlaps of many groups are the one-set functions of each."""
    g, s, d = split(raw, 0, 1, 2)
    e = s + d
    u = iv.unions(g, s, e, 4)
    dep = iv.depths(g, s, e, 4)
    sets = u.spans()
    for k in range(4):
        m = g == k
        alone = iv.spans(s[m], e[m])
        assert (sets[k].starts.tolist(), sets[k].ends.tolist()) == (alone.starts.tolist(),
                                                                    alone.ends.tolist())
        assert u.lengths()[k] == iv.spans(s[m], e[m]).length
        assert dep.cover1[k] == iv.coverage(s[m], e[m], 1).length
        assert dep.cover2[k] == iv.coverage(s[m], e[m], 2).length
        assert dep.max_depth[k] == iv.max_depth(s[m], e[m])
    a, b = np.array([0, 1, 2, 3, 0], I64), np.array([1, 2, 3, 0, 0], I64)
    got = iv.overlaps(u, a, u, b).tolist()
    assert got == [iv.overlap(sets[i], sets[j]) for i, j in zip(a, b, strict=True)]


def test_factorized_in_chunks_is_pandas_factorize() -> None:
    """GIVEN object values with repeats, missing ones and more rows than a chunk WHEN
    factorizing them a chunk at a time THEN codes and distinct values are pd.factorize's."""
    from traceprobe.metrics.grouping import factorized

    rng = np.random.default_rng(5)
    pool = np.array(["a", "b", "aten::mm", "", None, "é", "b"], dtype=object)
    values = pool[rng.integers(0, len(pool), 1000)]
    want_codes, want_uniques = pd.factorize(pd.Series(values, dtype=object))
    for chunk in (1, 7, 64, 5000):
        codes, uniques = factorized(values, chunk)
        assert codes.tolist() == want_codes.tolist()
        assert uniques == list(want_uniques)
