"""What ran at the same time as what: devices, copies vs kernels, comm vs compute.

    overlap(a, b)  = |busy(a) ∩ busy(b)|            either(a, b) = |busy(a) ∪ busy(b)|
    hidden copy    = |∪ copies ∩ ∪ kernels|  (same device)   exposed = |∪ copies| - hidden
    serial         = Σ over streams of |busy(stream)|  (the work, one stream after another)

Across traces (:func:`cross_trace`) the busy sets of different files are compared
on their raw clocks: that is only meaningful when the files share one host clock
(one trace per rank of a job on one machine), and it is only done when the two
analysed windows intersect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import Spans, coverage, overlap, spans, union
from traceprobe.metrics import fraction, groups
from traceprobe.metrics.devices import DeviceBusy, StreamBusy, StreamConcurrency
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


def cross_device(busy: Sequence[DeviceBusy]) -> tuple[DevicePair, ...]:
    """One row per pair of devices ``a < b`` (in the order given)."""
    out = []
    for i, a in enumerate(busy):
        for b in busy[i + 1 :]:
            both, either, f_either, f_min = _pair(a.busy, b.busy)
            out.append(DevicePair((a.device, b.device), both, either, f_either, f_min))
    return tuple(out)


def multi_device_ns(busy: Sequence[DeviceBusy]) -> int:
    """Time with at least two devices busy (each device's busy set counts once)."""
    if len(busy) < 2:
        return 0
    starts = np.concatenate([d.busy.starts for d in busy])
    ends = np.concatenate([d.busy.ends for d in busy])
    return coverage(starts, ends, 2).length


def _copy_row(device: int, direction: str, rows: pd.DataFrame, kernels: Spans) -> CopyCompute:
    copies = spans(rows["start"].to_numpy(), rows["end"].to_numpy())
    hidden = overlap(copies, kernels)
    pageable = (rows["src_kind"] == "Pageable") | (rows["dst_kind"] == "Pageable")
    return CopyCompute(
        device=device,
        direction=direction,
        memcpy_ns=copies.length,
        hidden_ns=hidden,
        exposed_ns=copies.length - hidden,
        hidden_fraction=fraction(hidden, copies.length),
        copies=len(rows),
        bytes=int(rows["bytes"].clip(lower=0).sum()),
        pageable=int(pageable.sum()),
    )


def copy_compute(gpu: pd.DataFrame, busy: Sequence[DeviceBusy]) -> tuple[CopyCompute, ...]:
    """Per device: a row ``"all"``, then one per copy direction present (in ``COPY_KINDS`` order).

    Every device in ``busy`` gets its ``"all"`` row, with zeros when it made no copies.
    """
    copies = gpu[gpu["kind"] == "memcpy"]
    by_dev = groups(copies, "device")
    out = []
    for dev in busy:
        rows = copies.iloc[by_dev.get(dev.device, np.empty(0, np.int64))]
        out.append(_copy_row(dev.device, "all", rows, dev.kernel))
        present = set(rows["copy_kind"].unique())
        for direction in COPY_KINDS:
            if direction in present:
                sub = rows[rows["copy_kind"] == direction]
                out.append(_copy_row(dev.device, direction, sub, dev.kernel))
    return tuple(out)


def comm_compute(gpu: pd.DataFrame, devices: Sequence[int]) -> tuple[CommCompute, ...]:
    """Per device with communication kernels: how much of them ran under other kernels."""
    kernels = gpu[gpu["kind"] == "kernel"]
    comm_devices = set(int(d) for d in kernels.loc[kernels["comm"], "device"].unique())
    by_dev = groups(kernels, "device")
    out = []
    for d in devices:
        if d not in comm_devices:
            continue
        rows = kernels.iloc[by_dev[d]]
        is_comm = rows["comm"].to_numpy(dtype=bool)
        s, e = rows["start"].to_numpy(), rows["end"].to_numpy()
        comm = spans(s[is_comm], e[is_comm])
        hidden = overlap(comm, spans(s[~is_comm], e[~is_comm]))
        out.append(
            CommCompute(d, comm.length, hidden, comm.length - hidden, fraction(hidden, comm.length))
        )
    return tuple(out)


def serial(busy: Sequence[DeviceBusy], streams: Sequence[StreamBusy], gpu_span_ns: int) -> Serial:
    """Σ stream busy against the GPU span and against the union of all devices' busy."""
    serial_ns = sum(s.busy_ns for s in streams)
    union_ns = union(*(d.busy for d in busy)).length
    return Serial(
        serial_ns=serial_ns,
        busy_union_ns=union_ns,
        gpu_span_ns=gpu_span_ns,
        speedup_vs_span=fraction(serial_ns, gpu_span_ns),
        parallelism=fraction(serial_ns, union_ns),
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
