"""Look-ups and searches among rows keyed by several integer columns, for all keys at once.

The windowed metrics (:mod:`traceprobe.metrics.windows`) ask the same question of many
groups at once: "the call with this (window, correlation)", "the activities of this (window,
device, stream) that started before t". Each helper here answers it for every query with one
``np.lexsort`` of the rows and the queries together, instead of one ``searchsorted`` per
group. Keys are given most significant first, as a list of equal-length int arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

Keys = Sequence[np.ndarray]
NONE = np.iinfo(np.int64).min  # "no such row" for int64 results


def _sort(keys: Keys, *minor: np.ndarray) -> np.ndarray:
    """Stable order by ``keys`` (most significant first), then by ``minor`` (in order)."""
    return np.lexsort((*reversed(minor), *reversed(keys)))


def _new_key(sorted_keys: Keys) -> np.ndarray:
    """True where a row's key differs from the previous row's (the first row included)."""
    n = len(sorted_keys[0])
    new = np.ones(n, bool)
    if n:
        new[1:] = False
        for k in sorted_keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def group_ids(sorted_keys: Keys) -> np.ndarray:
    """Dense ids ``0, 1, ...`` of the runs of equal keys of rows sorted by them."""
    return np.cumsum(_new_key(sorted_keys)) - 1


def first_of_each(keys: Keys, *minor: np.ndarray) -> np.ndarray:
    """Position of the first row of each distinct key, ordered by key: the row with the
    smallest ``minor`` values (in order), then the earliest in the frame."""
    if not len(keys[0]):
        return np.zeros(0, np.int64)
    order = _sort(keys, *minor)
    return order[_new_key([k[order] for k in keys])]


def lookup(table: Keys, query: Keys) -> np.ndarray:
    """For each query key: the position of the row of ``table`` (distinct keys) with that
    key, or -1."""
    nt, nq = len(table[0]), len(query[0])
    out = np.full(nq, -1, np.int64)
    if not nt or not nq:
        return out
    keys = [np.concatenate([t, q]) for t, q in zip(table, query, strict=True)]
    is_query = np.r_[np.zeros(nt, bool), np.ones(nq, bool)]
    order = _sort(keys, is_query)  # a table row sorts just before the queries of its key
    pos = np.arange(len(order))
    last_row = np.maximum.accumulate(np.where(is_query[order], -1, pos))
    at = np.flatnonzero(is_query[order])
    cand = last_row[at]
    ok = cand >= 0
    for k in keys:
        ok &= k[order[np.maximum(cand, 0)]] == k[order[at]]
    out[order[at] - nt] = np.where(ok, order[np.maximum(cand, 0)], -1)
    return out


def rank(rows: Keys, values: np.ndarray, query: Keys, at: np.ndarray,
         inclusive: bool | np.ndarray = False) -> tuple[np.ndarray, np.ndarray]:
    """``(order, before)``: ``order`` sorts the rows by (key, value), stably; ``before[j]`` is
    how many rows sort before query ``j`` in it: rows of a smaller key, and rows of its key
    whose value is below ``at[j]`` (or equal to it where ``inclusive``). So the rows of
    query j's key with a value below ``at[j]`` are ``order[g:before[j]]`` for the key's first
    position ``g``, and ``searchsorted`` within the key is ``before[j] - g``."""
    nr, nq = len(values), len(at)
    keys = [np.concatenate([r, q]) for r, q in zip(rows, query, strict=True)]
    v = np.concatenate([np.asarray(values, np.int64), np.asarray(at, np.int64)])
    # on equal values: strict queries first (0), then the rows (1), then inclusive queries (2)
    inc = np.full(nq, inclusive) if isinstance(inclusive, bool) else inclusive
    tie = np.r_[np.ones(nr, np.int8), np.where(inc, 2, 0).astype(np.int8)]
    order = _sort(keys, v, tie)
    is_row = order < nr
    count = np.cumsum(is_row)
    before = np.zeros(nq, np.int64)
    q_at = np.flatnonzero(~is_row)
    before[order[q_at] - nr] = count[q_at]
    return order[is_row], before


def latest_end_before(rows: Keys, start: np.ndarray, end: np.ndarray, query: Keys,
                      at: np.ndarray) -> np.ndarray:
    """For each query: the latest ``end`` among the rows of its key that start strictly before
    ``at`` (:data:`NONE` where none does)."""
    out = np.full(len(at), NONE, np.int64)
    if not len(start) or not len(at):
        return out
    order, before = rank(rows, start, query, at)
    keys = [k[order] for k in rows]
    running = pd.Series(end[order]).groupby(group_ids(keys)).cummax().to_numpy(np.int64)
    prev = np.maximum(before - 1, 0)
    ok = before > 0
    for k, q in zip(keys, query, strict=True):
        ok &= k[prev] == q
    out[ok] = running[prev[ok]]
    return out
