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
  stream is *launch-bound* when it has at least :data:`MIN_LAUNCH_GAPS` host-late gaps
  and its median kernel is shorter than their median.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import (
    measure_within,
    spans,
)
from traceprobe.metrics import groups

RUNTIME_KINDS = ("cuda_runtime", "cuda_sync", "cuda_driver")  # also the tie-break order
LAUNCH_KINDS = ("cuda_runtime", "cuda_driver")
WAIT_TOLERANCE_NS = 10_000  # a kernel starting this soon after another stream's work waited on it
MIN_LAUNCH_GAPS = 10  # host-late gaps needed before a stream is called launch-bound


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


def launch_latency(gpu: pd.DataFrame, cpu: pd.DataFrame) -> LaunchLatency:
    """Kernel start − launching call start, matched by correlation id (see module docstring)."""
    k = gpu[(gpu["kind"] == "kernel") & (gpu["correlation"] >= 0)]
    first = k.groupby("correlation", sort=False)["start"].min()
    calls = cpu[cpu["kind"].isin(LAUNCH_KINDS) & (cpu["correlation"] >= 0)]
    launch = calls.drop_duplicates("correlation").set_index("correlation")["start"]
    both = pd.concat([first.rename("k"), launch.rename("r")], axis=1, join="inner")
    lat = (both["k"] - both["r"]).to_numpy(dtype=np.int64)
    keep = lat >= 0
    lat = lat[keep]
    if lat.size == 0:
        return LaunchLatency(0, None, None, None, None)
    corr = both.index[keep]
    call = both["r"].to_numpy(dtype=np.int64)[keep]
    before = _stream_drained_at(gpu).reindex(corr).to_numpy(dtype=np.int64)
    unqueued = before <= call
    waited = unqueued & _waited(gpu, corr, call)
    idle = lat[unqueued & ~waited]
    return LaunchLatency(
        count=int(lat.size),
        mean_ns=float(lat.mean()),
        p50_ns=float(np.median(lat)),
        p95_ns=float(np.percentile(lat, 95)),
        max_ns=int(lat.max()),
        unqueued_count=int(idle.size),
        unqueued_p50_ns=float(np.median(idle)) if idle.size else None,
        unqueued_max_ns=int(idle.max()) if idle.size else None,
        waited_count=int(waited.sum()),
    )


def _waited(gpu: pd.DataFrame, corr: pd.Index, call: np.ndarray) -> np.ndarray:
    """Per launch (correlation ``corr``, call start ``call``): did its first kernel wait on
    another stream? A comm kernel always does; otherwise an activity of another stream of its
    device ended in ``[max(call, start − WAIT_TOLERANCE_NS), start]``."""
    k = gpu[(gpu["kind"] == "kernel") & (gpu["correlation"] >= 0)]
    # the first kernel as in _stream_drained_at: earliest start, then lowest device, stream,
    # then the first recorded
    k = k.sort_values(["start", "device", "stream"], kind="stable").drop_duplicates(
        "correlation").set_index("correlation")
    k = k.reindex(corr)
    dev = k["device"].to_numpy(dtype=np.int64)
    st = k["stream"].to_numpy(dtype=np.int64)
    start = k["start"].to_numpy(dtype=np.int64)
    out = k["comm"].to_numpy(dtype=bool).copy()
    call = np.asarray(call, dtype=np.int64)
    for d in np.unique(dev).tolist():
        acts = gpu[gpu["device"] == d].sort_values("end", kind="stable")
        ends = acts["end"].to_numpy(dtype=np.int64)
        streams = acts["stream"].to_numpy(dtype=np.int64)
        n = len(ends)
        idx = np.flatnonzero((dev == d) & ~out)
        if n == 0 or not len(idx):
            continue
        # activities ending in [lo, start]: positions [a, b) of the end-sorted ones; one of
        # them is on another stream when the first is, or when its run of equal streams
        # (consecutive in end order) stops before b
        lo = np.maximum(call[idx], start[idx] - WAIT_TOLERANCE_NS)
        a = np.searchsorted(ends, lo, side="left")
        b = np.searchsorted(ends, start[idx], side="right")
        change = np.r_[True, streams[1:] != streams[:-1]]
        run = np.cumsum(change) - 1
        run_end = np.r_[np.flatnonzero(change)[1:], n]
        first = np.minimum(a, n - 1)
        other = (streams[first] != st[idx]) | (run_end[run[first]] < b)
        out[idx] = (a < b) & other
    return out


def _stream_drained_at(gpu: pd.DataFrame) -> pd.Series:
    """For each kernel correlation: when everything that started before its first kernel on
    that kernel's stream had ended (the minimum int64 when nothing did).

    The first kernel is the earliest-starting one with that id (ties: lowest device, then
    stream); "before" means a strictly earlier start, so an activity that starts at the same
    instant does not queue it. Activities are kernels, copies and memsets.
    """
    k = gpu[(gpu["kind"] == "kernel") & (gpu["correlation"] >= 0)]
    if k.empty:
        return pd.Series(dtype=np.int64)
    first = k.sort_values(["start", "device", "stream"], kind="stable").drop_duplicates(
        "correlation"
    )
    out = np.full(len(first), np.iinfo(np.int64).min, dtype=np.int64)
    on_stream = groups(gpu, ["device", "stream"])
    for key, rows in groups(first, ["device", "stream"]).items():
        acts = gpu.iloc[on_stream[key]]
        order = np.argsort(acts["start"].to_numpy(dtype=np.int64), kind="stable")
        starts = acts["start"].to_numpy(dtype=np.int64)[order]
        latest = np.maximum.accumulate(acts["end"].to_numpy(dtype=np.int64)[order])
        n_before = np.searchsorted(starts, first["start"].to_numpy(dtype=np.int64)[rows], "left")
        has = n_before > 0
        out[rows[has]] = latest[n_before[has] - 1]
    return pd.Series(out, index=first["correlation"].to_numpy())


def kernel_gaps(
    gpu: pd.DataFrame, devices: Sequence[int], cpu: pd.DataFrame | None = None
) -> tuple[KernelGaps, ...]:
    """Per (device, stream) with at least two kernels: gaps between consecutive kernels,
    which of them were host-late, and whether the stream is launch-bound (module docstring).
    ``cpu`` gives the launching calls; without it no gap is host-late."""
    k = gpu[(gpu["kind"] == "kernel") & gpu["device"].isin(list(devices))]
    if len(k) < 2:
        return ()
    dev = k["device"].to_numpy(dtype=np.int64)
    st = k["stream"].to_numpy(dtype=np.int64)
    s = k["start"].to_numpy(dtype=np.int64)
    e = k["end"].to_numpy(dtype=np.int64)
    corr = k["correlation"].to_numpy(dtype=np.int64)
    order = np.lexsort((e, s, st, dev))
    dev, st, s, e, corr = dev[order], st[order], s[order], e[order], corr[order]
    same = (dev[1:] == dev[:-1]) & (st[1:] == st[:-1])
    group = np.concatenate([[0], np.cumsum(~same)])
    latest_end = pd.Series(e).groupby(group).cummax().to_numpy(dtype=np.int64)
    gap = np.maximum(s[1:] - latest_end[:-1], 0)[same]
    late = _host_late(gpu, cpu, dev[1:][same], latest_end[:-1][same], s[1:][same],
                      s[:-1][same], corr[1:][same]) & (gap > 0)
    gap_frame = pd.DataFrame(
        {"device": dev[1:][same], "stream": st[1:][same], "gap": gap, "positive": gap > 0,
         "late": late, "late_gap": np.where(late, gap, np.nan)}
    )
    stats = gap_frame.groupby(["device", "stream"], sort=True).agg(
        gaps=("positive", "sum"), mean=("gap", "mean"), p50=("gap", "median"), max=("gap", "max"),
        late=("late", "sum"), late_p50=("late_gap", "median"),
    )
    dur = pd.Series(e - s, index=pd.MultiIndex.from_arrays([dev, st], names=["device", "stream"]))
    kernel_p50 = dur.groupby(level=[0, 1]).median()
    out = []
    for (d, stream), row in stats.iterrows():
        kp50 = float(kernel_p50.loc[(d, stream)])
        n_late = int(row["late"])
        late_p50 = float(row["late_p50"]) if n_late else None
        out.append(
            KernelGaps(
                device=int(d),
                stream=int(stream),
                gaps=int(row["gaps"]),
                mean_ns=float(row["mean"]),
                p50_ns=float(row["p50"]),
                max_ns=int(row["max"]),
                kernel_p50_ns=kp50,
                launch_bound=bool(
                    n_late >= MIN_LAUNCH_GAPS and late_p50 is not None and kp50 < late_p50
                ),
                host_late_gaps=n_late,
                host_late_p50_ns=late_p50,
            )
        )
    return tuple(out)


def _host_late(
    gpu: pd.DataFrame, cpu: pd.DataFrame | None, dev: np.ndarray, gap_lo: np.ndarray,
    gap_hi: np.ndarray, prev_start: np.ndarray, corr: np.ndarray,
) -> np.ndarray:
    """Per gap ``[gap_lo, gap_hi)`` of device ``dev``: the device idle through it, and the next
    kernel (correlation ``corr``) launched by a call that began after ``prev_start``."""
    if cpu is None or cpu.empty:
        return np.zeros(len(dev), bool)
    calls = cpu[cpu["kind"].isin(LAUNCH_KINDS) & (cpu["correlation"] >= 0)]
    launch = calls.drop_duplicates("correlation").set_index("correlation")["start"]
    call = launch.reindex(corr).to_numpy(dtype=np.float64)
    issued_late = ~np.isnan(call) & (call > prev_start)
    idle = np.zeros(len(dev), bool)
    for d in np.unique(dev).tolist():
        g = gpu[gpu["device"] == d]
        busy = spans(g["start"].to_numpy(dtype=np.int64), g["end"].to_numpy(dtype=np.int64))
        m = dev == d
        idle[m] = measure_within(busy, gap_lo[m], gap_hi[m]) == 0
    return idle & issued_late
