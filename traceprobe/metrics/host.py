"""The host's side of GPU idle time: what the CPU was doing, how long launches took.

* **Idle attribution** — a device's idle time (the window minus its busy set)
  intersected with the host calls of the trace's process: CUDA runtime, sync and
  driver calls, and CPU ops. A *cause* is one call name. Runtime, sync and driver
  calls are first-class: a runtime-like name is charged ``|idle ∩ ∪ calls of that
  name|``; a CPU op is charged only the idle time that it covers *and no
  runtime/sync/driver call covers*, so ``aten::item`` does not take credit for the
  ``cudaStreamSynchronize`` inside it. Ties in the charged time are broken by
  kind (``cuda_runtime``, ``cuda_sync``, ``cuda_driver``, ``cpu_op``), then by name.
  :func:`idle_attribution` charges a device's whole idle time (the report's causes);
  :func:`gap_causes` each idle gap on its own (``traceprobe annotate``'s idle track).
* **Launch latency** — kernel start minus the start of the runtime/driver call with
  the same correlation id; the first kernel of a call only (a graph launch counts
  once); negative or unmatched pairs are ignored.
* **Kernel gaps** — per stream, kernels sorted by start: gap = next start − latest
  end so far, clamped at 0. A stream is *launch-bound* when its median kernel is
  shorter than its median gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import (
    Spans,
    difference,
    gaps,
    grouped_spans,
    measure_within,
    overlap,
    spans,
)
from traceprobe.metrics import groups
from traceprobe.metrics.devices import DeviceBusy

RUNTIME_KINDS = ("cuda_runtime", "cuda_sync", "cuda_driver")  # also the tie-break order
HOST_KINDS = (*RUNTIME_KINDS, "cpu_op")
LAUNCH_KINDS = ("cuda_runtime", "cuda_driver")
TOP_CAUSES = 5


@dataclass(frozen=True)
class Cause:
    name: str
    kind: str
    ns: int  # idle time charged to this name (reported as "us")
    calls: int  # calls of this name that overlap the time it is charged for


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


def host_calls(cpu: pd.DataFrame, pid: int | None) -> pd.DataFrame:
    """Runtime, sync and driver calls and CPU ops of process ``pid`` (none if pid is None)."""
    if pid is None:
        return cpu.iloc[0:0]
    return cpu[cpu["kind"].isin(HOST_KINDS) & (cpu["pid"] == pid)]


@dataclass(frozen=True)
class CallNames:
    """Host calls grouped by name: the candidate causes of idle time.

    One code per (kind, name), numbered in the tie-break order (kind as in HOST_KINDS,
    then name), so that among equal charges the lower code wins.
    """

    starts: np.ndarray  # per call
    ends: np.ndarray
    code: np.ndarray
    kinds: np.ndarray  # per code
    names: np.ndarray
    runtime_like: np.ndarray  # charged idle time; a CPU op only what no runtime call covers
    pieces: tuple[np.ndarray, np.ndarray, np.ndarray]  # per code its calls' union (grouped_spans)
    everything: Spans  # all the calls
    runtime: Spans  # the runtime, sync and driver calls

    def targets(self, idle: Spans) -> tuple[Spans, Spans]:
        """The time a runtime-like name, and a CPU op, can be charged: see the module docstring."""
        return idle, difference(idle, self.runtime)


def call_names(calls: pd.DataFrame) -> CallNames:
    """Group ``calls`` (see :func:`host_calls`) by (kind, name)."""
    s = calls["start"].to_numpy(dtype=np.int64)
    e = calls["end"].to_numpy(dtype=np.int64)
    is_rt = calls["kind"].isin(RUNTIME_KINDS).to_numpy()
    code = calls.groupby(["kind", "name"], sort=False).ngroup().to_numpy(dtype=np.int64)
    _, first = np.unique(code, return_index=True)
    kinds = calls["kind"].to_numpy(dtype=object)[first]
    names = calls["name"].to_numpy(dtype=object)[first]
    rank = {k: i for i, k in enumerate(HOST_KINDS)}
    order = np.array(
        sorted(range(len(names)), key=lambda c: (rank.get(kinds[c], len(rank)), names[c])),
        dtype=np.int64,
    )
    renumber = np.empty(len(order), np.int64)
    renumber[order] = np.arange(len(order))
    code = renumber[code]
    kinds, names = kinds[order], names[order]
    return CallNames(
        starts=s,
        ends=e,
        code=code,
        kinds=kinds,
        names=names,
        runtime_like=np.isin(kinds, RUNTIME_KINDS),
        pieces=grouped_spans(code, s, e),
        everything=spans(s, e),
        runtime=spans(s[is_rt], e[is_rt]),
    )


def idle_attribution(
    busy: Sequence[DeviceBusy], calls: pd.DataFrame, lo: int, hi: int, top: int = TOP_CAUSES
) -> tuple[HostIdle, ...]:
    """Per device: idle time in ``[lo, hi)``, how much the host spent in ``calls``, and why."""
    cn = call_names(calls)
    s, e, code = cn.starts, cn.ends, cn.code
    # Per-name unions computed once for all devices.
    gk, gs, ge = cn.pieces
    in_time = np.argsort(gs, kind="stable")  # sorted queries make searchsorted much faster
    gk, gs, ge = gk[in_time], gs[in_time], ge[in_time]

    piece_rt = cn.runtime_like[gk]
    rt_pieces, op_pieces = np.flatnonzero(piece_rt), np.flatnonzero(~piece_rt)
    by_code = np.argsort(code, kind="stable")  # rows of code c: by_code[bounds[c]:bounds[c + 1]]
    bounds = np.searchsorted(code[by_code], np.arange(len(cn.names) + 1))
    out = []
    for dev in busy:
        idle = gaps(dev.busy, lo, hi)
        rt_target, op_target = cn.targets(idle)
        # Charged time per code: Σ over that name's union pieces of |its target ∩ piece|.
        charged = np.zeros(len(cn.names), np.int64)
        for target, pieces in ((rt_target, rt_pieces), (op_target, op_pieces)):
            np.add.at(charged, gk[pieces], measure_within(target, gs[pieces], ge[pieces]))
        hit = np.flatnonzero(charged > 0)
        chosen = sorted(hit, key=lambda c: (-charged[c], c))[:top]  # codes: tie-break order
        causes = []
        for c in chosen:  # calls: those of the name that overlap its target at all
            rows = by_code[bounds[c] : bounds[c + 1]]
            target = rt_target if cn.runtime_like[c] else op_target
            n = int((measure_within(target, s[rows], e[rows]) > 0).sum())
            causes.append(Cause(str(cn.names[c]), str(cn.kinds[c]), int(charged[c]), n))
        out.append(HostIdle(dev.device, idle.length, overlap(idle, cn.everything), tuple(causes)))
    return tuple(out)


def gap_causes(cn: CallNames, idle: Spans) -> tuple[np.ndarray, np.ndarray]:
    """Per piece (gap) of ``idle``: the code charged most of it (-1: none) and the ns charged.

    The rule of :func:`idle_attribution`, applied to each gap on its own.
    """
    n = len(idle)
    best = np.zeros(n, np.int64)
    best_code = np.full(n, -1, np.int64)
    _, op_target = cn.targets(idle)
    # A CPU op is measured on the pieces of its target, each summed into the gap that holds it.
    owner = np.searchsorted(idle.starts, op_target.starts, side="right") - 1
    gk, gs, ge = cn.pieces
    cut = np.flatnonzero(np.diff(gk)) + 1
    for a, z in zip(np.r_[0, cut], np.r_[cut, gk.size], strict=True):
        if z <= a:
            continue
        c, u = int(gk[a]), Spans(gs[a:z], ge[a:z])
        if cn.runtime_like[c]:
            charged = measure_within(u, idle.starts, idle.ends)
        else:
            per_piece = measure_within(u, op_target.starts, op_target.ends)
            charged = np.bincount(owner, weights=per_piece, minlength=n).astype(np.int64)
        better = charged > best  # codes ascend in tie-break order: a later one must do better
        best[better] = charged[better]
        best_code[better] = c
    return best_code, best


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
    before = _stream_drained_at(gpu).reindex(both.index[keep]).to_numpy(dtype=np.int64)
    idle = lat[before <= both["r"].to_numpy(dtype=np.int64)[keep]]
    return LaunchLatency(
        count=int(lat.size),
        mean_ns=float(lat.mean()),
        p50_ns=float(np.median(lat)),
        p95_ns=float(np.percentile(lat, 95)),
        max_ns=int(lat.max()),
        unqueued_count=int(idle.size),
        unqueued_p50_ns=float(np.median(idle)) if idle.size else None,
        unqueued_max_ns=int(idle.max()) if idle.size else None,
    )


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


def kernel_gaps(gpu: pd.DataFrame, devices: Sequence[int]) -> tuple[KernelGaps, ...]:
    """Per (device, stream) with at least two kernels: gaps between consecutive kernels."""
    k = gpu[(gpu["kind"] == "kernel") & gpu["device"].isin(list(devices))]
    if len(k) < 2:
        return ()
    dev = k["device"].to_numpy(dtype=np.int64)
    st = k["stream"].to_numpy(dtype=np.int64)
    s = k["start"].to_numpy(dtype=np.int64)
    e = k["end"].to_numpy(dtype=np.int64)
    order = np.lexsort((e, s, st, dev))
    dev, st, s, e = dev[order], st[order], s[order], e[order]
    same = (dev[1:] == dev[:-1]) & (st[1:] == st[:-1])
    group = np.concatenate([[0], np.cumsum(~same)])
    latest_end = pd.Series(e).groupby(group).cummax().to_numpy(dtype=np.int64)
    gap = np.maximum(s[1:] - latest_end[:-1], 0)[same]
    gap_frame = pd.DataFrame(
        {"device": dev[1:][same], "stream": st[1:][same], "gap": gap, "positive": gap > 0}
    )
    stats = gap_frame.groupby(["device", "stream"], sort=True).agg(
        gaps=("positive", "sum"), mean=("gap", "mean"), p50=("gap", "median"), max=("gap", "max")
    )
    dur = pd.Series(e - s, index=pd.MultiIndex.from_arrays([dev, st], names=["device", "stream"]))
    kernel_p50 = dur.groupby(level=[0, 1]).median()
    out = []
    for (d, stream), row in stats.iterrows():
        kp50 = float(kernel_p50.loc[(d, stream)])
        out.append(
            KernelGaps(
                device=int(d),
                stream=int(stream),
                gaps=int(row["gaps"]),
                mean_ns=float(row["mean"]),
                p50_ns=float(row["p50"]),
                max_ns=int(row["max"]),
                kernel_p50_ns=kp50,
                launch_bound=bool(kp50 < float(row["p50"])),
            )
        )
    return tuple(out)
