"""The host's side of GPU idle time: launches, kernel gaps, and the per-gap idle labels.

* **Idle attribution** (the report's ``host.devices[].causes``, and the per-gap labels of
  ``traceprobe annotate``) lives in :mod:`traceprobe.metrics.idle`: a partition of each
  device's idle time. This module keeps the row types (:class:`Cause`, :class:`HostIdle`).
* **Launch latency** — kernel start minus the start of the runtime/driver call with
  the same correlation id; the first kernel of a call only (a graph launch counts
  once); negative or unmatched pairs are ignored. A launch is *launch overhead*
  (``unqueued_*``) only when the kernel's stream had drained before the call began
  (otherwise it *queued*) and the kernel did not *wait on another stream*: it is not a
  communication kernel, and no activity of another stream of its device ended within
  :data:`WAIT_TOLERANCE_NS` before it started, after the call began (an event wait or
  NCCL's ordering behind the compute stream).
* **Kernel gaps** — per stream, kernels sorted by start: gap = next start − latest
  end so far, clamped at 0. A gap is *host-late* when the whole device (every stream)
  was idle through it and the next kernel's launching call began after the previous
  kernel started (so the GPU waited for the host, not for a queue or an event). A
  stream is *launch-bound* when it has at least :data:`MIN_LAUNCH_GAPS` host-late gaps,
  its median kernel is shorter than their median, together they hold at least
  :data:`LAUNCH_BOUND_SHARE` of the window (``host_late_ns``), and more than the host spent
  inside DataLoader ranges in the window (a loop that waits longer for data than for
  launches is DataLoader-bound first).

Both are computed for many windows at once (on frames cut by
:meth:`traceprobe.timeline.Timeline.cut`): every match and search is keyed by the window
as well (the look-ups of :mod:`traceprobe.metrics.grouping`), so window i's figures are
those of its clipped rows alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from traceprobe.intervals import measure_within, spans
from traceprobe.metrics.grouping import (
    Windows,
    first_of_each,
    group_ids,
    grouped_max,
    grouped_quantile,
    key_changes,
    latest_end_before,
    lookup,
    rank,
    win_of,
)
from traceprobe.metrics.regions import classify

RUNTIME_KINDS = ("cuda_runtime", "cuda_sync", "cuda_driver")  # also the tie-break order
LAUNCH_KINDS = ("cuda_runtime", "cuda_driver")
WAIT_TOLERANCE_NS = 10_000  # a kernel starting this soon after another stream's work waited on it
MIN_LAUNCH_GAPS = 10  # host-late gaps needed before a stream is called launch-bound
LAUNCH_BOUND_SHARE = 0.10  # ... and the share of the window they must hold together


@dataclass(frozen=True)
class Cause:
    name: str
    kind: str
    ns: int  # idle time charged to this cause (reported as "us")
    calls: int  # events of this name that own some of that time
    share: float | None = None  # ns / the device's idle time
    children: tuple[Cause, ...] = ()  # a region's time split by the innermost call inside it


@dataclass(frozen=True)
class HostIdle:
    device: int
    idle_ns: int
    idle_host_busy_ns: int
    causes: tuple[Cause, ...]


@dataclass(frozen=True)
class LaunchLatency:
    count: int
    mean_ns: float | None
    p50_ns: float | None
    p95_ns: float | None
    max_ns: int | None
    # Launches onto an idle stream: every earlier activity of the kernel's stream had ended
    # when the launching call began, so the delay is launch overhead, not queueing.
    unqueued_count: int = 0
    unqueued_p50_ns: float | None = None
    unqueued_max_ns: int | None = None
    # Launches onto a drained stream whose kernel waited on another stream (not overhead).
    waited_count: int = 0


@dataclass(frozen=True)
class KernelGaps:
    device: int
    stream: int
    gaps: int
    mean_ns: float | None
    p50_ns: float | None
    max_ns: int | None
    kernel_p50_ns: float | None
    launch_bound: bool
    host_late_gaps: int = 0  # gaps the GPU spent waiting for the host (module docstring)
    host_late_p50_ns: float | None = None
    host_late_ns: int = 0  # the host-late gaps' total


@dataclass(frozen=True)
class Host:
    """The report's ``host`` object."""

    devices: tuple[HostIdle, ...]
    launch_latency: LaunchLatency
    kernel_gaps: tuple[KernelGaps, ...]


def host_process(cpu: pd.DataFrame) -> int | None:
    """The trace's process: the pid with the most runtime/driver calls, else the most CPU ops.

    Ties go to the lowest pid. None for a trace without either.
    """
    for kinds in (LAUNCH_KINDS, ("cpu_op",)):
        pids = cpu.loc[cpu["kind"].isin(kinds), "pid"]
        if not pids.empty:
            counts = pids.value_counts()
            return int(counts[counts == counts.max()].index.min())
    return None


def launch_latency(gpu: pd.DataFrame, cpu: pd.DataFrame, windows: Windows) -> list[LaunchLatency]:
    """Per window of cut frames (a frame that was not cut is window 0): kernel start −
    launching call start, matched by correlation id (see module docstring). A kernel and
    its call are matched by (window, correlation), so each window sees only its own clipped
    rows; the figures are grouped by window (a ``bincount`` or one sort each)."""
    n = windows.n
    la = _launches(gpu, cpu)
    unqueued = _stream_drained_at(gpu, la) <= la.call
    waited = unqueued & _waited(gpu, la)
    idle = unqueued & ~waited
    w, lat = la.win, la.lat
    count = np.bincount(w, minlength=n).tolist()
    total = np.bincount(w, weights=lat, minlength=n).tolist()  # exact: integer sums < 2**53
    p50 = grouped_quantile(lat, w, n, 50).tolist()
    p95 = grouped_quantile(lat, w, n, 95).tolist()
    top = grouped_max(lat, w, n).tolist()
    n_idle = np.bincount(w[idle], minlength=n).tolist()
    idle_p50 = grouped_quantile(lat[idle], w[idle], n, 50).tolist()
    idle_top = grouped_max(lat[idle], w[idle], n).tolist()
    n_waited = np.bincount(w[waited], minlength=n).tolist()
    none = LaunchLatency(0, None, None, None, None)
    return [
        LaunchLatency(
            count=c, mean_ns=t / c, p50_ns=a, p95_ns=b, max_ns=m, unqueued_count=u,
            unqueued_p50_ns=up if u else None, unqueued_max_ns=um if u else None,
            waited_count=wt,
        ) if c else none
        for c, t, a, b, m, u, up, um, wt in zip(
            count, total, p50, p95, top, n_idle, idle_p50, idle_top, n_waited, strict=True)
    ]


class _Launches(NamedTuple):
    """The launches of every window with a latency >= 0, ordered by (window, correlation):
    the launching call's start and the first kernel's device, stream, start, comm flag."""

    win: np.ndarray
    lat: np.ndarray
    call: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    start: np.ndarray
    comm: np.ndarray


def _col(df: pd.DataFrame, name: str, mask: np.ndarray | None = None) -> np.ndarray:
    a = df[name].to_numpy(dtype=bool if name == "comm" else np.int64)
    return a if mask is None else a[mask]


def _first_calls(cpu: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(window, correlation, start) of the first launching call of each (window,
    correlation), in frame order (as ``drop_duplicates``), ordered by (window, correlation)."""
    m = cpu["kind"].isin(LAUNCH_KINDS).to_numpy() & (_col(cpu, "correlation") >= 0)
    w, c, s = win_of(cpu)[m], _col(cpu, "correlation", m), _col(cpu, "start", m)
    first = first_of_each([w, c])
    return w[first], c[first], s[first]


def _launches(gpu: pd.DataFrame, cpu: pd.DataFrame) -> _Launches:
    """Each (window, correlation)'s first kernel (earliest start, then lowest device, then
    stream, then the first recorded) matched with its first launching call."""
    m = (gpu["kind"].to_numpy() == "kernel") & (_col(gpu, "correlation") >= 0)
    w, c, s = win_of(gpu)[m], _col(gpu, "correlation", m), _col(gpu, "start", m)
    d, st = _col(gpu, "device", m), _col(gpu, "stream", m)
    first = first_of_each([w, c], s, d, st)
    cw, cc, cs = _first_calls(cpu)
    hit = lookup([cw, cc], [w[first], c[first]])
    first, call = first[hit >= 0], cs[hit[hit >= 0]]
    lat = s[first] - call
    keep = lat >= 0
    f = first[keep]
    return _Launches(w[f], lat[keep], call[keep], d[f], st[f], s[f], _col(gpu, "comm", m)[f])


def _waited(gpu: pd.DataFrame, la: _Launches) -> np.ndarray:
    """Per launch: did its first kernel wait on another stream? A comm kernel always does;
    otherwise an activity of another stream of its device (in its window) ended in
    ``[max(call, start − WAIT_TOLERANCE_NS), start]``."""
    out = la.comm.copy()
    ask = np.flatnonzero(~out)
    if not len(ask) or gpu.empty:
        return out
    # activities ending in [lo, start]: positions [a, b) of those of the kernel's (window,
    # device) sorted by end; one of them is on another stream when the first is, or when its
    # run of equal streams (consecutive in end order) stops before b
    lo = np.maximum(la.call[ask], la.start[ask] - WAIT_TOLERANCE_NS)
    key = [np.tile(la.win[ask], 2), np.tile(la.device[ask], 2)]
    order, pos = rank([win_of(gpu), _col(gpu, "device")], _col(gpu, "end"), key,
                      np.r_[lo, la.start[ask]], np.r_[np.zeros(len(ask), bool),
                                                      np.ones(len(ask), bool)])
    a, b = pos[: len(ask)], pos[len(ask):]
    streams = _col(gpu, "stream")[order]
    n = len(streams)
    change = key_changes(streams)
    run = np.cumsum(change) - 1
    run_end = np.r_[np.flatnonzero(change)[1:], n]
    first = np.minimum(a, n - 1)
    other = (streams[first] != la.stream[ask]) | (run_end[run[first]] < b)
    out[ask] = (a < b) & other
    return out


def _stream_drained_at(gpu: pd.DataFrame, la: _Launches) -> np.ndarray:
    """Per launch: when everything that started before its first kernel on that kernel's
    stream (in its window) had ended (:data:`lookups.NONE`, the minimum int64, when nothing
    did). "Before" means a strictly earlier start, so an activity that starts at the same
    instant does not queue it. Activities are kernels, copies and memsets."""
    return latest_end_before(
        [win_of(gpu), _col(gpu, "device"), _col(gpu, "stream")], _col(gpu, "start"),
        _col(gpu, "end"), [la.win, la.device, la.stream], la.start)


def kernel_gaps(
    gpu: pd.DataFrame, devices: Sequence[int], cpu: pd.DataFrame | None, windows: Windows
) -> list[tuple[KernelGaps, ...]]:
    """Per window of cut frames, per (device, stream) with at least two kernels: gaps
    between consecutive kernels, which of them were host-late, and whether the stream is
    launch-bound (module docstring; the window's length and DataLoader time enter it).
    ``cpu`` gives the launching calls; without it no gap is host-late. The kernels are
    sorted once by (window, device, stream, start, end), so each (window, device, stream)
    is a run of rows; its gaps are grouped by that run (``bincount`` and
    :func:`~.grouping.grouped_quantile`)."""
    n = windows.n
    length = windows.length.tolist()
    loader = _loader_ns(cpu, windows).tolist()
    m = (gpu["kind"].to_numpy() == "kernel") & gpu["device"].isin(list(devices)).to_numpy()
    if m.sum() < 2:
        return [()] * n
    w, dev, st = win_of(gpu)[m], _col(gpu, "device", m), _col(gpu, "stream", m)
    s, e, corr = _col(gpu, "start", m), _col(gpu, "end", m), _col(gpu, "correlation", m)
    order = np.lexsort((e, s, st, dev, w))
    w, dev, st, s, e, corr = w[order], dev[order], st[order], s[order], e[order], corr[order]
    gid = group_ids([w, dev, st])
    same = gid[1:] == gid[:-1]
    latest_end = pd.Series(e).groupby(gid).cummax().to_numpy(dtype=np.int64)
    gap = np.maximum(s[1:] - latest_end[:-1], 0)[same]
    late = _host_late(gpu, cpu, w[1:][same], dev[1:][same], latest_end[:-1][same],
                      s[1:][same], s[:-1][same], corr[1:][same]) & (gap > 0)
    g, ng = gid[1:][same], int(gid[-1]) + 1
    pairs = np.bincount(g, minlength=ng).tolist()
    positive = np.bincount(g[gap > 0], minlength=ng).tolist()
    total = np.bincount(g, weights=gap, minlength=ng).tolist()  # exact: integer sums < 2**53
    p50 = grouped_quantile(gap, g, ng, 50).tolist()
    top = grouped_max(gap, g, ng).tolist()
    n_late = np.bincount(g[late], minlength=ng).tolist()
    late_ns = np.bincount(g[late], weights=gap[late], minlength=ng).astype(np.int64).tolist()
    late_p50 = grouped_quantile(gap[late], g[late], ng, 50).tolist()
    kernel_p50 = grouped_quantile(e - s, gid, ng, 50).tolist()
    head = np.flatnonzero(key_changes(gid))
    gw, gd, gs = w[head].tolist(), dev[head].tolist(), st[head].tolist()
    out: list[list[KernelGaps]] = [[] for _ in range(n)]
    for i in range(ng):
        if not pairs[i]:
            continue
        lp50 = late_p50[i] if n_late[i] else None
        material = (late_ns[i] >= LAUNCH_BOUND_SHARE * length[gw[i]]
                    and late_ns[i] > loader[gw[i]])
        out[gw[i]].append(KernelGaps(
            device=gd[i],
            stream=gs[i],
            gaps=positive[i],
            mean_ns=total[i] / pairs[i],
            p50_ns=p50[i],
            max_ns=top[i],
            kernel_p50_ns=kernel_p50[i],
            launch_bound=bool(
                n_late[i] >= MIN_LAUNCH_GAPS and lp50 is not None and kernel_p50[i] < lp50
                and material
            ),
            host_late_gaps=n_late[i],
            host_late_p50_ns=lp50,
            host_late_ns=late_ns[i],
        ))
    return [tuple(x) for x in out]


def _loader_ns(cpu: pd.DataFrame | None, windows: Windows) -> np.ndarray:
    """Per window: the time inside DataLoader ranges (:mod:`.regions`' class) of any thread."""
    if cpu is None or cpu.empty:
        return np.zeros(windows.n, np.int64)
    dl = classify(cpu) == "dataloader"
    return measure_within(spans(_col(cpu, "start", dl), _col(cpu, "end", dl)),
                          windows.lo, windows.hi)


def _host_late(
    gpu: pd.DataFrame, cpu: pd.DataFrame | None, win: np.ndarray, dev: np.ndarray,
    gap_lo: np.ndarray, gap_hi: np.ndarray, prev_start: np.ndarray, corr: np.ndarray,
) -> np.ndarray:
    """Per gap ``[gap_lo, gap_hi)`` of device ``dev`` in window ``win``: the device idle
    through it (no activity of that device and window, of positive length, starts before
    ``gap_hi`` and ends after ``gap_lo``), and the next kernel (correlation ``corr``) launched
    by a call (of that window) that began after ``prev_start``."""
    late = np.zeros(len(win), bool)
    if cpu is None or cpu.empty:
        return late
    cw, cc, cs = _first_calls(cpu)
    if not len(cs):
        return late
    hit = lookup([cw, cc], [win, corr])
    # int64 against int64: epoch nanoseconds (~1.7e18) are beyond float64's exact integers
    issued_late = (hit >= 0) & (cs[np.maximum(hit, 0)] > prev_start)
    s, e = _col(gpu, "start"), _col(gpu, "end")
    pos = e > s
    busy_until = latest_end_before([win_of(gpu)[pos], _col(gpu, "device", pos)], s[pos], e[pos],
                                   [win, dev], gap_hi)
    return (busy_until <= gap_lo) & issued_late
