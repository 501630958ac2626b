"""Per-device and per-stream busy time, and how many streams of a device ran at once.

    busy = |∪ activities|       (kernels, memcpys and memsets; half-open ns intervals)
    idle = window - busy        utilization = busy / window

A stream's busy set is the union of its own activities, so two kernels that
overlap on one stream (a profiler artefact or a graph) count once towards
stream concurrency; their double-booking shows up as ``self_overlap_ns`` instead.

Stream concurrency costs one sort of all the streams' busy intervals per device
(a sweep line), whatever the number of streams (CUDA graphs, NCCL channels and many
processes make thousands). The pairwise table lists every pair of a device with at
most ``ALL_PAIRS_UPTO`` streams; above that, only the ``TOP_PAIRS`` most overlapping
pairs (``pairs_omitted`` true), found by the same sweep while the work of
attributing time to pairs stays within ``PAIR_BUDGET`` (else no pairs are listed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import EMPTY, Spans, coverage, max_depth, overlap, spans
from traceprobe.metrics import fraction, groups, internal
from traceprobe.metrics.windows import grouped_unions


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


def _arrays(gpu: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        gpu["kind"].to_numpy(dtype=object),
        gpu["start"].to_numpy(dtype=np.int64),
        gpu["end"].to_numpy(dtype=np.int64),
    )


def device_busy(
    gpu: pd.DataFrame,
    devices: Sequence[int],
    window_ns: int,
    names: Mapping[int, str | None] | None = None,
) -> tuple[DeviceBusy, ...]:
    """Busy, per-kind busy, counts and idle for each of ``devices`` (zeros for one without events).

    ``gpu`` must already be restricted to the analysed window (``Timeline.window``);
    ``window_ns`` is that window's length.
    """
    names = names or {}
    by_dev = groups(gpu, "device")
    kind, start, end = _arrays(gpu)
    stream = gpu["stream"].to_numpy(dtype=np.int64)
    out = []
    for d in devices:
        idx = by_dev.get(d, np.empty(0, np.int64))
        k, s, e = kind[idx], start[idx], end[idx]
        per_kind = {}
        for kname in ("kernel", "memcpy", "memset"):
            m = k == kname
            per_kind[kname] = (int(m.sum()), spans(s[m], e[m]))
        busy = spans(s, e)
        out.append(
            DeviceBusy(
                device=d,
                name=names.get(d),
                busy_ns=busy.length,
                kernel_ns=per_kind["kernel"][1].length,
                memcpy_ns=per_kind["memcpy"][1].length,
                memset_ns=per_kind["memset"][1].length,
                idle_ns=window_ns - busy.length,
                utilization=fraction(busy.length, window_ns),
                active_span_ns=int(e.max() - s.min()) if idx.size else 0,
                kernels=per_kind["kernel"][0],
                memcpys=per_kind["memcpy"][0],
                memsets=per_kind["memset"][0],
                streams=int(np.unique(stream[idx]).size),
                busy=busy,
                kernel=per_kind["kernel"][1],
            )
        )
    return tuple(out)


def stream_busy(gpu: pd.DataFrame, devices: Sequence[int]) -> tuple[StreamBusy, ...]:
    """One row per (device, stream) with activity, ordered by device then stream.

    All streams at once (sorts over the whole frame, no loop over streams in Python
    beyond building the rows), so thousands of streams cost what one does."""
    if gpu.empty:
        return ()
    wanted = np.isin(gpu["device"].to_numpy(np.int64), np.asarray(list(devices), np.int64))
    dev = gpu["device"].to_numpy(np.int64)[wanted]
    st = gpu["stream"].to_numpy(np.int64)[wanted]
    kind, start, end = (a[wanted] for a in _arrays(gpu))
    if not len(dev):
        return ()
    keys, gid = np.unique(np.stack([dev, st]), axis=1, return_inverse=True)
    gid = gid.ravel().astype(np.int64)
    n = keys.shape[1]
    mk, mc, ms = kind == "kernel", kind == "memcpy", kind == "memset"
    busy = grouped_unions(gid, start, end, n)
    kernel = grouped_unions(gid[mk], start[mk], end[mk], n)
    memcpy = grouped_unions(gid[mc], start[mc], end[mc], n)
    self_overlap = _grouped_depth2(gid, start, end, n)
    counts = [np.bincount(gid[m], minlength=n) for m in (mk, mc, ms)]
    return tuple(
        StreamBusy(
            device=int(keys[0, i]),
            stream=int(keys[1, i]),
            busy_ns=busy[i].length,
            kernels=int(counts[0][i]),
            memcpys=int(counts[1][i]),
            memsets=int(counts[2][i]),
            kernel_ns=kernel[i].length,
            memcpy_ns=memcpy[i].length,
            self_overlap_ns=int(self_overlap[i]),
            busy=busy[i],
        )
        for i in range(n)
    )


def _grouped_depth2(gid: np.ndarray, s: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """Per group, the time with >= 2 of its own intervals at once (``coverage(.., 2)``)."""
    keep = e > s
    gid, s, e = gid[keep], s[keep], e[keep]
    out = np.zeros(n, np.int64)
    if not len(s):
        return out
    pts = np.concatenate([s, e])
    delta = np.concatenate([np.ones(len(s), np.int64), -np.ones(len(s), np.int64)])
    g = np.concatenate([gid, gid])
    order = np.lexsort((delta, pts, g))  # by group, then time; ends first at one instant
    pts, delta, g = pts[order], delta[order], g[order]
    depth = np.cumsum(delta)  # each group nets to 0, so this is the depth within the group
    seg = np.zeros(len(pts), np.int64)
    seg[:-1] = np.where((g[1:] == g[:-1]) & (depth[:-1] >= 2), pts[1:] - pts[:-1], 0)
    np.add.at(out, g, seg)
    return out


def stream_concurrency(
    streams: Sequence[StreamBusy], devices: Sequence[int]
) -> tuple[StreamConcurrency, ...]:
    """Per device: time with >= 2 streams busy, the most at once, and the pairs' overlap.

    Works on each stream's busy *union*, so the depth of the sweep is the number
    of distinct streams busy at an instant. Linear in the streams (one sort per device).
    """
    by_device: dict[int, list[StreamBusy]] = {}
    for st in streams:
        by_device.setdefault(st.device, []).append(st)
    out = []
    for d in devices:
        mine = by_device.get(d, [])
        sets = [s.busy for s in mine]
        starts = np.concatenate([x.starts for x in sets]) if sets else EMPTY.starts
        ends = np.concatenate([x.ends for x in sets]) if sets else EMPTY.ends
        omitted = len(mine) > ALL_PAIRS_UPTO
        if omitted:
            pairs = top_pairs(mine, TOP_PAIRS)
        else:
            pairs = tuple(
                StreamPair((a.stream, b.stream), overlap(a.busy, b.busy))
                for i, a in enumerate(mine)
                for b in mine[i + 1 :]
            )
        out.append(
            StreamConcurrency(
                device=d,
                streams=len(mine),
                concurrent_ns=coverage(starts, ends, 2).length,
                max_concurrent=max_depth(starts, ends),
                pairs=pairs,
                pairs_omitted=omitted,
            )
        )
    return tuple(out)


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
