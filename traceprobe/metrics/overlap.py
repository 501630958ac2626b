"""What ran at the same time as what: devices, copies vs kernels, comm vs compute.

    overlap(a, b)  = |busy(a) ∩ busy(b)|            either(a, b) = |busy(a) ∪ busy(b)|
    hidden copy    = |∪ copies ∩ ∪ kernels|  (same device)   exposed = |∪ copies| - hidden
    serial         = Σ over streams of |busy(stream)|  (the work, one stream after another)

Across traces (:func:`cross_trace`) the busy sets of different files are compared
on their raw clocks: that is only meaningful when the files share one host clock
(one trace per rank of a job on one machine), and it is only done when the two
analysed windows intersect.

Many windows at once: each figure but :func:`cross_trace` takes a frame cut by
:meth:`traceprobe.timeline.Timeline.cut`, the per-window results of :mod:`.devices` and
the :class:`~.grouping.Windows`, and returns one result per window (the grouped sweeps of
:mod:`traceprobe.intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import Grouped, Spans, depths, offsets, overlap, overlaps, unions
from traceprobe.metrics import fraction
from traceprobe.metrics.devices import DeviceBusy, StreamBusy, StreamConcurrency
from traceprobe.metrics.grouping import (
    Windows,
    cut,
    grouped_sum,
    pairs_within,
    per_window,
    positions,
    report_rows,
    rows_of,
    win_of,
)
from traceprobe.timeline import COPY_KINDS


@dataclass(frozen=True)
class DevicePair:
    devices: tuple[int, int]
    overlap_ns: int
    either_ns: int
    fraction_of_either: float | None
    fraction_of_min: float | None


@dataclass(frozen=True)
class CopyCompute:
    device: int
    direction: str  # "all" | one of COPY_KINDS
    memcpy_ns: int
    hidden_ns: int
    exposed_ns: int
    hidden_fraction: float | None
    copies: int
    bytes: int
    pageable: int


@dataclass(frozen=True)
class CommCompute:
    device: int
    comm_ns: int
    hidden_ns: int
    exposed_ns: int
    hidden_fraction: float | None


@dataclass(frozen=True)
class Overlap:
    """The report's ``overlap`` object."""

    cross_device: tuple[DevicePair, ...]
    multi_device_ns: int
    copy_compute: tuple[CopyCompute, ...]
    comm_compute: tuple[CommCompute, ...]
    streams: tuple[StreamConcurrency, ...]


@dataclass(frozen=True)
class Serial:
    serial_ns: int
    busy_union_ns: int
    gpu_span_ns: int
    speedup_vs_span: float | None
    parallelism: float | None


def _pair(a: Spans, b: Spans) -> tuple[int, int, float | None, float | None]:
    both = overlap(a, b)
    either = a.length + b.length - both
    return both, either, fraction(both, either), fraction(both, min(a.length, b.length))


def _busy_pieces(busy: Sequence[Sequence[DeviceBusy]]) -> tuple[list[DeviceBusy], np.ndarray,
                                                                 Grouped, np.ndarray]:
    """Every window's devices in one list, with each one's window, their busy sets grouped
    (one group per device row) and the window of each of their pieces."""
    members = [d for row in busy for d in row]
    win = np.repeat(np.arange(len(busy), dtype=np.int64), [len(row) for row in busy])
    flat = Grouped.of([d.busy for d in members])
    return members, win, flat, np.repeat(win, np.diff(flat.off))


def cross_device(
    busy: Sequence[Sequence[DeviceBusy]], windows: Windows
) -> list[tuple[DevicePair, ...]]:
    """Per window (``busy[i]``: window i's devices): one row per pair of devices ``a < b``
    (in the order given); every pair of every window, their overlaps in one sweep."""
    members, win, flat, _ = _busy_pieces(busy)
    a, b, poff = pairs_within(offsets(win, windows.n))
    both = overlaps(flat, a, flat, b).tolist()
    size = flat.lengths().tolist()
    rows = []
    for p, (i, j) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        x, la, lb = both[p], size[i], size[j]
        either = la + lb - x
        rows.append(DevicePair((members[i].device, members[j].device), x, either,
                               fraction(x, either), fraction(x, min(la, lb))))
    return cut(rows, poff)


def multi_device_ns(busy: Sequence[Sequence[DeviceBusy]], windows: Windows) -> list[int]:
    """Per window: time with at least two devices busy (each device's busy set counts
    once); one sweep over all windows' busy pieces."""
    _, _, flat, piece_win = _busy_pieces(busy)
    two = depths(piece_win, flat.starts, flat.ends, windows.n).cover2.tolist()
    return [two[w] if len(row) >= 2 else 0 for w, row in enumerate(busy)]


_DIRECTIONS = ("all", *COPY_KINDS)


def copy_compute(
    gpu: pd.DataFrame, busy: Sequence[Sequence[DeviceBusy]], windows: Windows
) -> list[tuple[CopyCompute, ...]]:
    """Per window of a cut ``gpu`` frame (``busy[i]``: window i's devices, from
    :func:`~traceprobe.metrics.devices.device_busy`), per device: a row ``"all"``, then one
    per copy direction present (in ``COPY_KINDS`` order). Every device in ``busy`` gets its
    ``"all"`` row, with zeros when it made no copies.

    Copies are grouped by (window, device, direction), where direction 0 is ``"all"`` (every
    copy) and 1.. are ``COPY_KINDS`` (each copy counted again under its own): one sort for
    the unions, bincounts for the counts, one sweep for every row's overlap with its
    device's kernels."""
    n = windows.n
    members = [d for row in busy for d in row]
    copies = gpu[gpu["kind"] == "memcpy"]
    pos, uniq = positions(copies["device"].to_numpy(np.int64), (d.device for d in members))
    keep = pos >= 0
    nd, kinds = len(_DIRECTIONS), len(uniq)
    base = (win_of(copies)[keep] * kinds + pos[keep]) * nd
    direction = np.zeros(keep.sum(), np.int64)
    ck = copies["copy_kind"].to_numpy(dtype=object)[keep]
    for c, name in enumerate(COPY_KINDS, start=1):
        direction[ck == name] = c
    own = direction > 0
    g = np.concatenate([base, base[own] + direction[own]])
    s = copies["start"].to_numpy(np.int64)[keep]
    e = copies["end"].to_numpy(np.int64)[keep]
    size = n * kinds * nd
    pageable = ((copies["src_kind"] == "Pageable") | (copies["dst_kind"] == "Pageable")
                ).to_numpy(bool)[keep]
    nbytes = np.maximum(copies["bytes"].to_numpy(np.int64)[keep], 0)
    sets = unions(g, np.concatenate([s, s[own]]), np.concatenate([e, e[own]]), size)
    count = np.bincount(g, minlength=size)
    n_pageable = np.bincount(g[np.concatenate([pageable, pageable[own]])], minlength=size)
    total_bytes = grouped_sum(np.concatenate([nbytes, nbytes[own]]), g, size)
    # every device row gets its "all" row, then one per direction it has copies of
    per_member = len(members)
    index = {d: i for i, d in enumerate(uniq)}
    slot = np.fromiter((index[d.device] for d in members), np.int64, len(members))
    member_win = np.repeat(np.arange(n, dtype=np.int64), [len(row) for row in busy])
    first = (member_win * kinds + slot) * nd
    has = np.zeros((per_member, nd), bool)
    has[:, 0] = True
    if per_member:
        has[:, 1:] = count[first[:, None] + np.arange(1, nd)] > 0
    member, direction = np.nonzero(has)  # member by member, "all" then COPY_KINDS order
    group = first[member] + direction
    hidden = overlaps(sets, group, Grouped.of([d.kernel for d in members]), member)
    copy_ns = sets.lengths()[group]
    rows = rows_of(
        CopyCompute, device=[members[i].device for i in member.tolist()],
        direction=[_DIRECTIONS[c] for c in direction.tolist()], memcpy_ns=copy_ns.tolist(),
        hidden_ns=hidden.tolist(), exposed_ns=(copy_ns - hidden).tolist(),
        hidden_fraction=[fraction(h, c) for h, c in zip(hidden.tolist(), copy_ns.tolist(),
                                                         strict=True)],
        copies=count[group].tolist(), bytes=total_bytes[group].tolist(),
        pageable=n_pageable[group].tolist(),
    )
    return per_window(rows, member_win[member], windows)


def comm_compute(
    gpu: pd.DataFrame, devices: Sequence[int], windows: Windows
) -> list[tuple[CommCompute, ...]]:
    """Per window of a cut ``gpu`` frame, per device with communication kernels: how much
    of them ran under other kernels.

    Kernels grouped by (window, device, comm or not): one sort for the unions, one sweep for
    every group's comm ∩ other kernels."""
    n = windows.n
    kernels = gpu[gpu["kind"] == "kernel"]
    pos, uniq = positions(kernels["device"].to_numpy(np.int64), devices)
    keep = pos >= 0
    m = len(uniq)
    g = win_of(kernels)[keep] * m + pos[keep]
    is_comm = kernels["comm"].to_numpy(bool)[keep]
    size = n * m
    has = np.bincount(g[is_comm], minlength=size)
    sets = unions(g * 2 + is_comm, kernels["start"].to_numpy(np.int64)[keep],
                  kernels["end"].to_numpy(np.int64)[keep], size * 2)
    every = np.arange(size, dtype=np.int64)
    hidden = overlaps(sets, every * 2 + 1, sets, every * 2)
    comm_ns = sets.lengths()[1::2]
    wanted = list(devices)
    at = report_rows(n, uniq, wanted)
    k = max(len(wanted), 1)
    sel = np.flatnonzero(has[at] > 0)  # rows of the (window, device) table with communication
    c, h = comm_ns[at[sel]], hidden[at[sel]]
    rows = rows_of(
        CommCompute, device=[wanted[j] for j in (sel % k).tolist()], comm_ns=c.tolist(),
        hidden_ns=h.tolist(), exposed_ns=(c - h).tolist(),
        hidden_fraction=[fraction(x, y) for x, y in zip(h.tolist(), c.tolist(), strict=True)],
    )
    return per_window(rows, sel // k, windows)


def serial(
    busy: Sequence[Sequence[DeviceBusy]],
    streams: Sequence[Sequence[StreamBusy]],
    gpu_span_ns: Sequence[int] | np.ndarray,
    windows: Windows,
) -> list[Serial]:
    """Per window (``busy[i]``, ``streams[i]``, ``gpu_span_ns[i]``: window i's): Σ stream
    busy against the GPU span and against the union of all devices' busy; the union of
    each window's device busy sets by one sweep over all windows."""
    _, _, flat, piece_win = _busy_pieces(busy)
    n = windows.n
    union_ns = depths(piece_win, flat.starts, flat.ends, n).cover1.tolist()
    per_stream = np.fromiter((s.busy_ns for mine in streams for s in mine), np.int64)
    stream_win = np.repeat(np.arange(len(streams), dtype=np.int64), [len(x) for x in streams])
    serial_ns = grouped_sum(per_stream, stream_win, n).tolist()
    span = [int(x) for x in gpu_span_ns]
    return rows_of(
        Serial, serial_ns=serial_ns, busy_union_ns=union_ns, gpu_span_ns=span,
        speedup_vs_span=[fraction(s, g) for s, g in zip(serial_ns, span, strict=True)],
        parallelism=[fraction(s, u) for s, u in zip(serial_ns, union_ns, strict=True)],
    )


# -- across traces -------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceDevice:
    trace: int
    device: int


@dataclass(frozen=True)
class CrossPair:
    a: TraceDevice
    b: TraceDevice
    overlap_ns: int
    either_ns: int
    fraction_of_either: float | None


@dataclass(frozen=True)
class SkippedPair:
    traces: tuple[int, int]
    reason: str


@dataclass(frozen=True)
class CrossTrace:
    """``cross_trace`` of a multi-trace report. Assumes the traces share one host clock."""

    pairs: tuple[CrossPair, ...]
    skipped: tuple[SkippedPair, ...]
    clock: str = "assumes all traces share one host clock"


def cross_trace(
    busy: Sequence[Sequence[DeviceBusy]], windows: Sequence[tuple[int, int]]
) -> CrossTrace:
    """Pairwise device busy overlap between traces ``i < j`` whose analysed windows intersect.

    ``busy[i]`` are trace i's devices, ``windows[i]`` its analysed ``[start, end)``.
    """
    pairs, skipped = [], []
    for i in range(len(busy)):
        for j in range(i + 1, len(busy)):
            (lo_i, hi_i), (lo_j, hi_j) = windows[i], windows[j]
            if max(lo_i, lo_j) >= min(hi_i, hi_j):
                skipped.append(
                    SkippedPair((i, j), "their windows do not intersect on the shared clock")
                )
                continue
            for a in busy[i]:
                for b in busy[j]:
                    both, either, f_either, _ = _pair(a.busy, b.busy)
                    pairs.append(
                        CrossPair(
                            TraceDevice(i, a.device),
                            TraceDevice(j, b.device),
                            both,
                            either,
                            f_either,
                        )
                    )
    return CrossTrace(tuple(pairs), tuple(skipped))
