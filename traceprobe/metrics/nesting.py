"""Self time of nested CPU ops: an op's duration minus its direct children's.

Ops of one thread nest. Sorted by start (longer first on ties, then row order), a stack of
open ops gives each op its parent::

    for each op i in that order:
        pop the stack while its top ends at or before i starts
        if the top encloses i's end: the top is i's parent (its self time loses i's duration)
        push i

:func:`self_times` computes exactly that, without the Python loop. Every op ``j`` before
``i`` that ends after ``i`` starts is still on the stack when ``i`` comes (an op is popped
only by a later op starting at or after its end, and starts only grow), and everything above
the top that remains ends at or before ``i``'s start. So the top after popping is the
**last op j before i (same thread) with end[j] > start[i]**. That is found for all ops at
once by binary lifting over a sparse table of running maxima of ``end`` (restricted to the
thread): skip back over blocks of 2^l ops whose ends are all ``<= start[i]``, largest blocks
first. O(n log n) numpy work instead of a Python loop per op.

A "thread" is any key tuple: (window, pid, tid) for cut frames, so that nesting never
crosses windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from traceprobe.metrics.grouping import key_changes


def self_times(start: np.ndarray, end: np.ndarray, thread: Sequence[np.ndarray]) -> np.ndarray:
    """Per op: ``end - start`` minus the durations of its direct children (ops of the same
    ``thread`` key tuple that it encloses), floored at 0 (int64, in the input's row order)."""
    s0 = np.asarray(start, dtype=np.int64)
    e0 = np.asarray(end, dtype=np.int64)
    if len(s0) == 0:
        return np.zeros(0, np.int64)
    parent = parents(s0, e0, thread)
    dur = e0 - s0
    own = dur.copy()
    child = parent >= 0
    np.subtract.at(own, parent[child], dur[child])
    return np.maximum(own, 0)


def parents(start: np.ndarray, end: np.ndarray, thread: Sequence[np.ndarray]) -> np.ndarray:
    """Per op: the row (input order) of its direct parent, the innermost op of the same
    ``thread`` key tuple that encloses it, or -1 (the same rule as :func:`self_times`)."""
    s0 = np.asarray(start, dtype=np.int64)
    e0 = np.asarray(end, dtype=np.int64)
    rows = len(s0)
    if rows == 0:
        return np.zeros(0, np.int64)
    keys = [np.asarray(k, dtype=np.int64) for k in thread]
    order = np.lexsort((-e0, s0, *reversed(keys)))
    s, e = s0[order], e0[order]
    new = key_changes(np.zeros(rows, np.int64), *(k[order] for k in keys))
    parent = _last_open(s, e, new)
    child = parent >= 0
    child[child] = e[child] <= e[parent[child]]
    out = np.full(rows, -1, np.int64)
    out[order[child]] = order[parent[child]]
    return out


def _last_open(s: np.ndarray, e: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Per position i: the last position j < i of i's thread with ``e[j] > s[i]``, or -1.

    ``new`` marks each thread's first position. Each thread is preceded by a sentinel that
    ends at +inf (never skipped), so that no block crosses into the thread before it.

    The search compares ends with starts only, so it runs on their ranks in one order
    (``e[j] > s[i]`` exactly when ``1 + #{ends < e[j]} > #{ends <= s[i]}``): int32 where the
    rows allow, as are the positions, and the sparse table keeps its even levels only (an
    odd one is two reads of the level below): a quarter of the int64 table's memory, which
    was top ops' peak."""
    rows = len(s)
    dtype: Any = np.int32 if 2 * rows + 2 < 2**31 else np.int64
    by_end = np.sort(e)
    e_rank = (np.searchsorted(by_end, e, side="left") + 1).astype(dtype)
    s_rank = np.searchsorted(by_end, s, side="right").astype(dtype)
    del by_end
    thread = np.cumsum(new, dtype=dtype) - 1
    at_ = np.arange(1, rows + 1, dtype=dtype) + thread  # each op's place after the sentinels
    size = rows + int(thread[-1]) + 1
    ends = np.full(size, np.iinfo(dtype).max, dtype)
    ends[at_] = e_rank
    del e_rank
    op_at = np.full(size, -1, dtype)
    op_at[at_] = np.arange(rows, dtype=dtype)
    sentinels = np.flatnonzero(op_at < 0)
    longest = int(np.diff(np.append(sentinels, size)).max())  # a thread and its sentinel
    del thread, sentinels
    levels = max(longest.bit_length() - 1, 0)
    # table[l][j] = max(ends[max(0, j - 2^l + 1) .. j]), kept for even l only
    table = {0: ends}
    prev = ends
    for lvl in range(1, levels + 1):
        h = 1 << (lvl - 1)
        cur = np.empty_like(prev)
        cur[:h] = prev[:h]
        np.maximum(prev[h:], prev[:-h], out=cur[h:])
        if lvl % 2 == 0:
            table[lvl] = cur
        prev = cur
    del prev
    # ops whose predecessor is still open need no search
    look = at_ - 1
    del at_
    todo = np.flatnonzero(ends[look] <= s_rank)
    at, thr = look[todo], s_rank[todo]
    del s_rank
    for lvl in range(levels, -1, -1):
        if lvl % 2 == 0:
            block_max = table[lvl][at]
        else:  # [j - 2^l + 1, j] is [j - h + 1, j] and [j - 2h + 1, j - h], h = 2^(l-1)
            below, h = table[lvl - 1], 1 << (lvl - 1)
            block_max = np.maximum(below[at], below[np.maximum(at - h, 0)])
        at -= (block_max <= thr).astype(dtype) << lvl
    look[todo] = at
    return op_at[look].astype(np.int64)


def enclosing(start: np.ndarray, end: np.ndarray,
              thread: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per event (input order): the index of the event directly enclosing it (-1: none) and
    its depth (0 outermost), events of one ``thread`` key tuple nesting as a stack does: the
    parent is the last event before it (start order, longer first) still open when it starts
    — an event that starts inside another is its child even if it outlives it — so events of
    one depth never overlap. The same search as :func:`self_times`; the depth by pointer
    doubling over the parents (one numpy pass per level of the deepest event)."""
    s0 = np.asarray(start, dtype=np.int64)
    e0 = np.asarray(end, dtype=np.int64)
    rows = len(s0)
    if rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = [np.asarray(k, dtype=np.int64) for k in thread]
    order = np.lexsort((-e0, s0, *reversed(keys)))
    new = key_changes(np.zeros(rows, np.int64), *(k[order] for k in keys))
    parent_sorted = _last_open(s0[order], e0[order], new)
    parent = np.full(rows, -1, np.int64)
    has = parent_sorted >= 0
    parent[order[has]] = order[parent_sorted[has]]
    depth = np.zeros(rows, np.int64)
    up = parent.copy()
    while (up >= 0).any():
        depth += up >= 0
        up = np.where(up >= 0, parent[np.maximum(up, 0)], -1)
    return parent, depth
