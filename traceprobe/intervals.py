"""Interval algebra on integer nanoseconds, vectorised with numpy.

Every figure traceprobe reports is the length of some set of time, built from
event intervals by the operations here. Conventions:

* An interval is half-open ``[start, end)`` in int64 nanoseconds.
  Zero-length and negative-length intervals cover no time and are dropped.
* An :class:`Spans` is a *normalised* set: sorted, disjoint, non-touching
  intervals (touching ones are merged). Every function returns normalised sets.
* ``coverage(starts, ends, k)`` counts *raw* intervals (with multiplicity),
  so "time with at least k intervals active" is well defined for overlapping
  kernels on one stream as well as for one interval per stream.

Nothing here loops over events in Python; all operations are sorts, cumulative
sums and ``searchsorted``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_I64 = np.int64


class Spans(NamedTuple):
    """A normalised set of half-open intervals: sorted, disjoint, non-touching."""

    starts: np.ndarray
    ends: np.ndarray

    @property
    def length(self) -> int:
        """Total covered time, in ns."""
        return int((self.ends - self.starts).sum())

    def __len__(self) -> int:  # number of disjoint pieces
        return int(self.starts.shape[0])

    @property
    def empty(self) -> bool:
        return self.starts.shape[0] == 0

    @property
    def first(self) -> int | None:
        return int(self.starts[0]) if self.starts.shape[0] else None

    @property
    def last(self) -> int | None:
        return int(self.ends[-1]) if self.ends.shape[0] else None


EMPTY = Spans(np.empty(0, _I64), np.empty(0, _I64))


def _arrays(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(starts, dtype=_I64).ravel()
    e = np.asarray(ends, dtype=_I64).ravel()
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in length: {s.shape[0]} vs {e.shape[0]}")
    keep = e > s
    if not keep.all():
        s, e = s[keep], e[keep]
    return s, e


def spans(starts, ends) -> Spans:
    """Union of raw intervals ``[starts[i], ends[i])`` as a normalised set."""
    s, e = _arrays(starts, ends)
    if s.shape[0] == 0:
        return EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # A new piece starts where an interval begins strictly after everything before it ended.
    new = np.empty(s.shape[0], dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    out_s = s[idx]
    last = np.append(idx[1:] - 1, s.shape[0] - 1)
    out_e = run_end[last]
    return Spans(out_s, out_e)


def union(*sets: Spans) -> Spans:
    """Union of normalised sets."""
    sets = tuple(x for x in sets if not x.empty)
    if not sets:
        return EMPTY
    if len(sets) == 1:
        return sets[0]
    return spans(np.concatenate([x.starts for x in sets]), np.concatenate([x.ends for x in sets]))


def _boundaries(a: Spans, b: Spans) -> tuple[np.ndarray, np.ndarray]:
    """Sweep both sets; return (points, depth after each point) with depth in {0,1,2}."""
    pts = np.concatenate([a.starts, a.ends, b.starts, b.ends])
    delta = np.concatenate(
        [
            np.ones(len(a), _I64),
            -np.ones(len(a), _I64),
            np.ones(len(b), _I64),
            -np.ones(len(b), _I64),
        ]
    )
    return _sweep(pts, delta)


def _sweep(pts: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Collapse equal points, then return the unique points and the depth right after each."""
    order = np.argsort(pts, kind="stable")
    pts, delta = pts[order], delta[order]
    uniq, first = np.unique(pts, return_index=True)
    summed = np.add.reduceat(delta, first) if pts.shape[0] else delta
    depth = np.cumsum(summed)
    return uniq, depth


def _where_depth(points: np.ndarray, depth: np.ndarray, k: int) -> Spans:
    """Normalised set of time where depth >= k, from a sweep's output."""
    if points.shape[0] == 0:
        return EMPTY
    on = depth >= k
    # Piece i runs from points[i] to points[i+1] when on[i].
    if not on.any():
        return EMPTY
    seg_s = points[:-1][on[:-1]]
    seg_e = points[1:][on[:-1]]
    return spans(seg_s, seg_e)


def intersect(a: Spans, b: Spans) -> Spans:
    """Time in both ``a`` and ``b``."""
    if a.empty or b.empty:
        return EMPTY
    pts, depth = _boundaries(a, b)
    return _where_depth(pts, depth, 2)


def difference(a: Spans, b: Spans) -> Spans:
    """Time in ``a`` but not in ``b``."""
    if a.empty or b.empty:
        return a
    pts = np.concatenate([a.starts, a.ends, b.starts, b.ends])
    # Weight a by +1/-1 and b by -2/+2 (well, "in a and not in b" <=> da==1 and db==0).
    da = np.concatenate([np.ones(len(a), _I64), -np.ones(len(a), _I64), np.zeros(2 * len(b), _I64)])
    db = np.concatenate([np.zeros(2 * len(a), _I64), np.ones(len(b), _I64), -np.ones(len(b), _I64)])
    order = np.argsort(pts, kind="stable")
    pts, da, db = pts[order], da[order], db[order]
    uniq, first = np.unique(pts, return_index=True)
    in_a = np.cumsum(np.add.reduceat(da, first)) > 0
    in_b = np.cumsum(np.add.reduceat(db, first)) > 0
    on = in_a & ~in_b
    if not on[:-1].any():
        return EMPTY
    return spans(uniq[:-1][on[:-1]], uniq[1:][on[:-1]])


def overlap(a: Spans, b: Spans) -> int:
    """``|a ∩ b|`` in ns.

    Sums :func:`measure_within` over ``b``'s pieces (they are disjoint): two
    ``searchsorted`` calls instead of a sort of both sets, about 4x faster.
    """
    if a.empty or b.empty:
        return 0
    return int(measure_within(a, b.starts, b.ends).sum())


def coverage(starts, ends, k: int) -> Spans:
    """Time during which at least ``k`` of the raw intervals are active (k >= 1)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    s, e = _arrays(starts, ends)
    if s.shape[0] == 0:
        return EMPTY
    pts = np.concatenate([s, e])
    delta = np.concatenate([np.ones(s.shape[0], _I64), -np.ones(s.shape[0], _I64)])
    points, depth = _sweep(pts, delta)
    return _where_depth(points, depth, k)


def max_depth(starts, ends) -> int:
    """The largest number of raw intervals active at one instant (0 if none)."""
    s, e = _arrays(starts, ends)
    if s.shape[0] == 0:
        return 0
    pts = np.concatenate([s, e])
    delta = np.concatenate([np.ones(s.shape[0], _I64), -np.ones(s.shape[0], _I64)])
    _, depth = _sweep(pts, delta)
    return int(depth.max())


def clip(a: Spans, lo: int, hi: int) -> Spans:
    """``a ∩ [lo, hi)``."""
    if a.empty or hi <= lo:
        return EMPTY
    i = int(np.searchsorted(a.ends, lo, side="right"))
    j = int(np.searchsorted(a.starts, hi, side="left"))
    if j <= i:
        return EMPTY
    s = a.starts[i:j].copy()
    e = a.ends[i:j].copy()
    s[0] = max(s[0], lo)
    e[-1] = min(e[-1], hi)
    return spans(s, e)


def gaps(a: Spans, lo: int, hi: int) -> Spans:
    """The complement of ``a`` within ``[lo, hi)``: idle time."""
    if hi <= lo:
        return EMPTY
    return difference(Spans(np.array([lo], _I64), np.array([hi], _I64)), a)


def whole(lo: int, hi: int) -> Spans:
    """The single interval ``[lo, hi)`` (empty if hi <= lo)."""
    return spans([lo], [hi])


def grouped_spans(keys, starts, ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of raw intervals separately for each integer key, all groups at once.

    Returns ``(keys, starts, ends)``: for every key, its normalised pieces (sorted,
    disjoint, non-touching), groups in ascending key order. Zero-length intervals
    are dropped, so a key whose intervals all have zero length is absent.

    One sweep over ``(key, time)``-sorted ±1 marks: each group's marks sum to zero,
    so the running depth returns to 0 at every group boundary and pieces never
    join across keys.
    """
    k = np.asarray(keys, dtype=_I64).ravel()
    s = np.asarray(starts, dtype=_I64).ravel()
    e = np.asarray(ends, dtype=_I64).ravel()
    if not (k.shape == s.shape == e.shape):
        n = (k.shape[0], s.shape[0], e.shape[0])
        raise ValueError(f"keys, starts, ends differ in length: {n[0]}, {n[1]}, {n[2]}")
    keep = e > s
    k, s, e = k[keep], s[keep], e[keep]
    if k.shape[0] == 0:
        return np.empty(0, _I64), np.empty(0, _I64), np.empty(0, _I64)
    pk = np.concatenate([k, k])
    pt = np.concatenate([s, e])
    delta = np.concatenate([np.ones(k.shape[0], _I64), -np.ones(k.shape[0], _I64)])
    order = np.lexsort((pt, pk))
    pk, pt, delta = pk[order], pt[order], delta[order]
    new = np.empty(pk.shape[0], dtype=bool)
    new[0] = True
    new[1:] = (pk[1:] != pk[:-1]) | (pt[1:] != pt[:-1])
    first = np.flatnonzero(new)
    uk, ut = pk[first], pt[first]
    on = np.cumsum(np.add.reduceat(delta, first)) > 0
    was_on = np.concatenate([[False], on[:-1]])
    begin = np.flatnonzero(on & ~was_on)
    finish = np.flatnonzero(~on & was_on)
    return uk[begin], ut[begin], ut[finish]


def measure_within(a: Spans, starts, ends) -> np.ndarray:
    """``|a ∩ [starts[i], ends[i])|`` for every i, in ns (int64 array; 0 where end <= start).

    Uses the cumulative length of ``a`` up to each boundary, so it costs two
    ``searchsorted`` calls whatever the number of intervals.
    """
    s = np.asarray(starts, dtype=_I64).ravel()
    e = np.asarray(ends, dtype=_I64).ravel()
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in length: {s.shape[0]} vs {e.shape[0]}")
    if a.empty or s.shape[0] == 0:
        return np.zeros(s.shape[0], _I64)
    cum = np.concatenate([[0], np.cumsum(a.ends - a.starts)]).astype(_I64)

    def upto(t: np.ndarray) -> np.ndarray:  # |a ∩ (-inf, t)|
        j = np.searchsorted(a.starts, t, side="right")  # pieces starting at or before t
        over = np.where(j > 0, a.ends[np.maximum(j - 1, 0)] - t, 0)
        return cum[j] - np.maximum(over, 0)

    return np.maximum(upto(e) - upto(s), 0)
