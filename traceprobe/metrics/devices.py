"""Per-device and per-stream busy time, and how many streams of a device ran at once.

    busy = |∪ activities|       (kernels, memcpys and memsets; half-open ns intervals)
    idle = window - busy        utilization = busy / window

A stream's busy set is the union of its own activities, so two kernels that
overlap on one stream (a profiler artefact or a graph) count once towards
stream concurrency; their double-booking shows up as ``self_overlap_ns`` instead.

Stream concurrency costs one sort of all the streams' busy intervals (a sweep line),
whatever the number of streams (CUDA graphs, NCCL channels and many processes make
thousands). The pairwise table lists every pair of a device with at
most ``ALL_PAIRS_UPTO`` streams; above that, only the ``TOP_PAIRS`` most overlapping
pairs (``pairs_omitted`` true), found by the same sweep while the work of
attributing time to pairs stays within ``PAIR_BUDGET`` (else no pairs are listed).

Many windows at once: each function takes a frame cut by
:meth:`traceprobe.timeline.Timeline.cut` (or the per-window results of another) and the
:class:`~.grouping.Windows`, and returns one result per window, grouping by (window,
device[, stream]) in a few sorts (:mod:`traceprobe.intervals`' grouped sweeps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import EMPTY, Grouped, Spans, depths, offsets, overlaps, unions
from traceprobe.metrics import fraction, internal
from traceprobe.metrics.grouping import (
    Windows,
    chunks,
    key_changes,
    pairs_within,
    per_window,
    positions,
    report_rows,
    rows_of,
    win_of,
)


@dataclass(frozen=True)
class DeviceBusy:
    """One GPU's activity in the window (``devices[]`` in the report)."""

    device: int
    name: str | None
    busy_ns: int
    kernel_ns: int
    memcpy_ns: int
    memset_ns: int
    idle_ns: int
    utilization: float | None
    active_span_ns: int
    kernels: int
    memcpys: int
    memsets: int
    streams: int
    busy: Spans = internal()
    kernel: Spans = internal()


@dataclass(frozen=True)
class StreamBusy:
    """One stream's activity (``streams[]`` in the report)."""

    device: int
    stream: int
    busy_ns: int
    kernels: int
    memcpys: int
    memsets: int
    kernel_ns: int
    memcpy_ns: int
    self_overlap_ns: int
    busy: Spans = internal()


@dataclass(frozen=True)
class StreamPair:
    streams: tuple[int, int]
    overlap_ns: int


@dataclass(frozen=True)
class StreamConcurrency:
    """How the streams of one device overlapped (``overlap.streams[]``)."""

    device: int
    streams: int
    concurrent_ns: int
    max_concurrent: int
    pairs: tuple[StreamPair, ...]
    pairs_omitted: bool = False  # not every pair is listed (more than ALL_PAIRS_UPTO streams)


ALL_PAIRS_UPTO = 32  # streams on a device up to which every pair is listed
TOP_PAIRS = 10  # pairs listed above that
PAIR_BUDGET = 200_000  # pair-time updates the sweep may spend on the top pairs (~0.5 s)


_KINDS = ("kernel", "memcpy", "memset")


def _kind_codes(kind: np.ndarray) -> np.ndarray:
    """0 kernel, 1 memcpy, 2 memset, 3 anything else."""
    code = np.full(len(kind), 3, np.int64)
    for i, name in enumerate(_KINDS):
        code[kind == name] = i
    return code


def _sorted_runs(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort rows by ``keys`` (first key most significant); return the order and, in it, where
    a new distinct key starts."""
    order = np.lexsort(keys[::-1])
    return order, key_changes(*(k[order] for k in keys))


def device_busy(
    gpu: pd.DataFrame,
    devices: Sequence[int],
    windows: Windows,
    names: Mapping[int, str | None] | None = None,
) -> list[tuple[DeviceBusy, ...]]:
    """Per window of a cut ``gpu`` frame (item i: window i, whose length is
    ``windows.length[i]``): busy, per-kind busy, counts and idle for each of ``devices``
    (zeros for one without events). A frame that was not cut must already be restricted to
    the window (``Timeline.window``).

    Grouped by (window, device): one sort for the busy unions, one for the per-kind unions
    (group × kind), one for the extent of each group's rows and one for its distinct streams."""
    names = names or {}
    n = windows.n
    pos, uniq = positions(gpu["device"].to_numpy(np.int64), devices)
    m = len(uniq)
    keep = pos >= 0
    g = (win_of(gpu)[keep] * m + pos[keep]).astype(np.int64)
    kc = _kind_codes(gpu["kind"].to_numpy(dtype=object)[keep])
    s = gpu["start"].to_numpy(np.int64)[keep]
    e = gpu["end"].to_numpy(np.int64)[keep]
    stream = gpu["stream"].to_numpy(np.int64)[keep]
    size = n * m
    counts = np.bincount(g * 4 + kc, minlength=size * 4).reshape(size, 4)
    busy = unions(g, s, e, size)
    k3 = kc < 3
    by_kind = unions(g[k3] * 3 + kc[k3], s[k3], e[k3], size * 3)
    kind_ns = by_kind.lengths().reshape(size, 3)
    order, new = _sorted_runs(g, stream)
    distinct = np.bincount(g[order][new], minlength=size)
    extent = np.zeros(size, np.int64)
    if len(g):
        first = np.flatnonzero(key_changes(g[order]))
        extent[g[order][first]] = (np.maximum.reduceat(e[order], first)
                                   - np.minimum.reduceat(s[order], first))
    wanted = list(devices)
    at = report_rows(n, uniq, wanted)
    busy_ns = busy.lengths()[at]
    span = np.repeat(windows.length, len(wanted))
    rows = rows_of(
        DeviceBusy, device=wanted * n, name=[names.get(d) for d in wanted] * n,
        busy_ns=busy_ns.tolist(), kernel_ns=kind_ns[at, 0].tolist(),
        memcpy_ns=kind_ns[at, 1].tolist(), memset_ns=kind_ns[at, 2].tolist(),
        idle_ns=(span - busy_ns).tolist(),
        utilization=[fraction(b, w) for b, w in zip(busy_ns.tolist(), span.tolist(),
                                                     strict=True)],
        active_span_ns=extent[at].tolist(), kernels=counts[at, 0].tolist(),
        memcpys=counts[at, 1].tolist(), memsets=counts[at, 2].tolist(),
        streams=distinct[at].tolist(), busy=busy.spans(at),
        kernel=by_kind.spans(at * 3),
    )
    return chunks(rows, len(wanted), windows)


def stream_busy(
    gpu: pd.DataFrame, devices: Sequence[int], windows: Windows
) -> list[tuple[StreamBusy, ...]]:
    """Per window of a cut ``gpu`` frame: one row per (device, stream) with activity,
    ordered by device then stream.

    All (window, device, stream) groups at once: one sort finds the groups, then one sort
    each for the busy, kernel and memcpy unions and for the self-overlap sweep, so thousands
    of streams or windows cost what one does (no loop in Python beyond building the rows)."""
    n = windows.n
    pos, _ = positions(gpu["device"].to_numpy(np.int64), devices)
    keep = pos >= 0
    if not keep.any():
        return [()] * n
    win = win_of(gpu)[keep]
    dev = gpu["device"].to_numpy(np.int64)[keep]
    st = gpu["stream"].to_numpy(np.int64)[keep]
    kind = _kind_codes(gpu["kind"].to_numpy(dtype=object)[keep])
    start = gpu["start"].to_numpy(np.int64)[keep]
    end = gpu["end"].to_numpy(np.int64)[keep]
    order, new = _sorted_runs(win, dev, st)
    gid = np.empty(len(order), np.int64)
    gid[order] = np.cumsum(new) - 1
    first = order[new]
    k = len(first)
    mk, mc = kind == 0, kind == 1
    busy = unions(gid, start, end, k)
    kernel_ns = unions(gid[mk], start[mk], end[mk], k).lengths().tolist()
    memcpy_ns = unions(gid[mc], start[mc], end[mc], k).lengths().tolist()
    self_overlap = depths(gid, start, end, k).cover2.tolist()
    counts = np.bincount(gid * 4 + kind, minlength=k * 4).reshape(k, 4)
    rows = rows_of(
        StreamBusy, device=dev[first].tolist(), stream=st[first].tolist(),
        busy_ns=busy.lengths().tolist(), kernels=counts[:, 0].tolist(),
        memcpys=counts[:, 1].tolist(), memsets=counts[:, 2].tolist(), kernel_ns=kernel_ns,
        memcpy_ns=memcpy_ns, self_overlap_ns=self_overlap, busy=busy.spans(),
    )
    return per_window(rows, win[first], windows)


def stream_concurrency(
    streams: Sequence[Sequence[StreamBusy]], devices: Sequence[int], windows: Windows
) -> list[tuple[StreamConcurrency, ...]]:
    """Per window (``streams[i]``: window i's streams), per device: time with >= 2 streams
    busy, the most at once, and the pairs' overlap.

    Works on each stream's busy *union*, so the depth of the sweep is the number of
    distinct streams busy at an instant. Grouped by (window, device), the streams of a group
    in the order given: one sweep over all their busy pieces gives each group's time with
    >= 2 streams and the most at once;
    one more over the pieces of every pair (groups of at most ``ALL_PAIRS_UPTO`` streams)
    gives each pair's overlap. Larger groups list their :func:`top_pairs`."""
    n = windows.n
    everyone = [sb for mine in streams for sb in mine]
    pos, uniq = positions(np.fromiter((sb.device for sb in everyone), np.int64, len(everyone)),
                          devices)
    m = len(uniq)
    win = np.repeat(np.arange(n, dtype=np.int64), [len(mine) for mine in streams])
    keep = np.flatnonzero(pos >= 0)
    g = win[keep] * m + pos[keep]
    order = np.argsort(g, kind="stable")  # a group's members contiguous, in the order given
    members = [everyone[i] for i in keep[order].tolist()]
    moff = offsets(g[order], n * m)
    flat = Grouped.of([sb.busy for sb in members])
    sweep = depths(np.repeat(g[order], np.diff(flat.off)), flat.starts, flat.ends, n * m)
    a, b, poff = pairs_within(moff, ALL_PAIRS_UPTO)
    ids = [sb.stream for sb in members]
    pairs = rows_of(StreamPair, streams=[(ids[i], ids[j]) for i, j in zip(a.tolist(), b.tolist(),
                                                                         strict=True)],
                    overlap_ns=overlaps(flat, a, flat, b).tolist())
    wanted = list(devices)
    at = report_rows(n, uniq, wanted)
    size = np.diff(moff)[at].tolist()
    lo, hi = poff[at].tolist(), poff[at + 1].tolist()
    listed = [tuple(pairs[i:j]) for i, j in zip(lo, hi, strict=True)]
    for r, k in enumerate(size):
        if k > ALL_PAIRS_UPTO:
            i = int(at[r])
            listed[r] = top_pairs(members[moff[i] : moff[i + 1]], TOP_PAIRS)
    rows = rows_of(
        StreamConcurrency, device=wanted * n, streams=size,
        concurrent_ns=sweep.cover2[at].tolist(), max_concurrent=sweep.max_depth[at].tolist(),
        pairs=listed, pairs_omitted=[k > ALL_PAIRS_UPTO for k in size],
    )
    return chunks(rows, len(wanted), windows)


def top_pairs(
    streams: Sequence[StreamBusy], n: int, budget: int = PAIR_BUDGET
) -> tuple[StreamPair, ...]:
    """The ``n`` most overlapping pairs of ``streams`` (|busy(a) ∩ busy(b)| > 0), by a
    sweep over all their busy intervals: each stretch with k streams busy adds its
    length to the k(k-1)/2 pairs busy in it. Stops (no pairs) past ``budget`` such
    additions, so that many streams busy at once cannot make it quadratic."""
    ids = [s.stream for s in streams]
    sid = np.concatenate(
        [np.full(len(s.busy.starts), i, np.int64) for i, s in enumerate(streams)]
        or [np.empty(0, np.int64)]
    )
    starts = np.concatenate([s.busy.starts for s in streams] or [EMPTY.starts])
    ends = np.concatenate([s.busy.ends for s in streams] or [EMPTY.ends])
    times = np.concatenate([ends, starts])
    delta = np.concatenate([np.full(len(ends), -1), np.full(len(starts), 1)])
    who = np.concatenate([sid, sid])
    order = np.lexsort((delta, times))  # at one instant, ends before starts (half-open)
    acc: dict[tuple[int, int], int] = {}
    active: set[int] = set()
    spent, prev = 0, 0
    for t, dl, w in zip(times[order].tolist(), delta[order].tolist(), who[order].tolist(),
                        strict=True):
        k = len(active)
        if k >= 2 and t > prev:
            spent += k * (k - 1) // 2
            if spent > budget:
                return ()
            members = sorted(active)
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    acc[(a, b)] = acc.get((a, b), 0) + (t - prev)
        prev = t
        if dl > 0:
            active.add(w)
        else:
            active.discard(w)
    best = sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return tuple(StreamPair((ids[a], ids[b]), ns) for (a, b), ns in best)
