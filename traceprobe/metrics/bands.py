"""The sets of time a picture of a trace draws: each stream's activity and the overlap bands.

The report gives lengths (``overlap.multi_device_ns``, ``copy_compute[].hidden_ns`` …); the
timeline picture (:mod:`traceprobe.render.lanes`) and the annotated trace
(:mod:`traceprobe.annotate`) draw the sets of time those lengths measure. They are computed
here, once, from the same busy sets (:mod:`.devices`), so a band's length is the report's
figure (tested); the renderers only draw them.

* :func:`activity` — per (device, stream): the union of its activities of each kind
  (kernels, communication kernels, copies, memsets).
* :func:`overlap_bands` — per window: time with two or more GPUs busy (``multi_device``),
  per GPU its copy time hidden under its kernels (``copy_hidden``), its time with two or
  more streams busy (``streams_concurrent``) and, when asked, its idle time (``gpu_idle``:
  the window minus its busy set); and, when asked, each pair of GPUs' time both busy
  (``device_pair``).
* :func:`idle_gaps` — per GPU its idle gaps in a window, each with the host's busy time in
  it and the cause the report's idle partition charged most of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import (
    Spans,
    coverage,
    difference,
    gaps,
    intersect,
    measure_within,
    spans,
    union,
    whole,
)
from traceprobe.metrics import groups
from traceprobe.metrics.devices import DeviceBusy, device_busy, stream_busy
from traceprobe.metrics.grouping import Windows, win_of
from traceprobe.metrics.idle import gap_causes
from traceprobe.metrics.regions import HostEvents

LANE_KINDS = ("kernel", "comm", "memcpy", "memset")  # "comm": a kernel with comm=True
BAND_KINDS = ("multi_device", "copy_hidden", "streams_concurrent", "gpu_idle", "device_pair")


@dataclass(frozen=True)
class Activity:
    """One stream of one device: per kind of LANE_KINDS with events, their union."""

    device: int
    stream: int
    events: int  # raw activities
    pieces: dict[str, Spans]


@dataclass(frozen=True)
class OverlapBand:
    """One set of time whose length a report figure gives: ``kind`` of BAND_KINDS,
    ``device`` None for ``multi_device`` and ``device_pair`` (whose GPUs are ``pair``)."""

    kind: str
    device: int | None
    spans: Spans
    pair: tuple[int, int] | None = None

    @property
    def length(self) -> int:
        return self.spans.length


@dataclass(frozen=True)
class IdleGaps:
    """One GPU's idle gaps in a window: ``gaps`` (the window minus its busy set), per gap
    the host's busy time in it and the cause charged most of it (``(kind, name, ns)``, None
    where the partition charged none)."""

    device: int
    gaps: Spans
    host_busy_ns: np.ndarray
    causes: list[tuple[str, str, int] | None]


def activity(gpu: pd.DataFrame) -> tuple[Activity, ...]:
    """Per (device, stream) of ``gpu`` (one window's rows), ordered by device then stream."""
    if gpu.empty:
        return ()
    kind = gpu["kind"].to_numpy(dtype=object)
    comm = gpu["comm"].to_numpy(dtype=bool)
    kind = np.where((kind == "kernel") & comm, "comm", kind)
    start = gpu["start"].to_numpy(dtype=np.int64)
    end = gpu["end"].to_numpy(dtype=np.int64)
    out = []
    for (d, st), idx in groups(gpu, ["device", "stream"]).items():
        pieces = {}
        for k in LANE_KINDS:
            m = kind[idx] == k
            if m.any():
                pieces[k] = spans(start[idx][m], end[idx][m])
        out.append(Activity(device=d, stream=st, events=int(idx.size), pieces=pieces))
    return tuple(out)


def overlap_bands(
    gpu: pd.DataFrame, devices: Sequence[int], windows: Windows, *, idle: bool = False,
    pairs_upto: int = 0,
) -> list[tuple[OverlapBand, ...]]:
    """Per window of a cut ``gpu`` frame (a frame that was not cut: its one window): the
    ``multi_device`` band (two or more of ``devices``), then per device in the order of
    ``devices`` its ``copy_hidden`` band (when it made copies), its ``streams_concurrent``
    band (when it has two or more streams) and, with ``idle``, its ``gpu_idle`` band (a
    window of positive length); then, with ``pairs_upto`` >= the number of devices (and at
    least three of them), one ``device_pair`` band per pair ``a < b`` in that order."""
    busy = device_busy(gpu, devices, windows)
    streams = stream_busy(gpu, devices, windows)
    win = win_of(gpu)
    out = []
    for i in range(windows.n):
        rows = gpu if windows.n == 1 else gpu[win == i]
        lo, hi = int(windows.lo[i]), int(windows.hi[i])
        out.append(_bands(rows, busy[i], [s for s in streams[i]], lo, hi, idle, pairs_upto))
    return out


def _bands(gpu: pd.DataFrame, busy: Sequence[DeviceBusy], streams: Sequence, lo: int, hi: int,
           idle: bool, pairs_upto: int) -> tuple[OverlapBand, ...]:
    bands = []
    if len(busy) >= 2:
        both = coverage(np.concatenate([b.busy.starts for b in busy]),
                        np.concatenate([b.busy.ends for b in busy]), 2)
        bands.append(OverlapBand("multi_device", None, both))
    copies = gpu[gpu["kind"] == "memcpy"] if not gpu.empty else gpu
    by_dev = groups(copies, "device")
    for b in busy:
        if b.device in by_dev:
            rows = copies.iloc[by_dev[b.device]]
            hidden = intersect(spans(rows["start"].to_numpy(), rows["end"].to_numpy()), b.kernel)
            bands.append(OverlapBand("copy_hidden", b.device, hidden))
        mine = [s.busy for s in streams if s.device == b.device]
        if len(mine) >= 2:
            conc = coverage(np.concatenate([x.starts for x in mine]),
                            np.concatenate([x.ends for x in mine]), 2)
            bands.append(OverlapBand("streams_concurrent", b.device, conc))
        if idle and hi > lo:
            bands.append(OverlapBand("gpu_idle", b.device, difference(whole(lo, hi), b.busy)))
    if 3 <= len(busy) <= pairs_upto:
        bands += [OverlapBand("device_pair", None, intersect(a.busy, b.busy), (a.device, b.device))
                  for i, a in enumerate(busy) for b in busy[i + 1 :]]
    return tuple(bands)


def idle_gaps(gpu: pd.DataFrame, devices: Sequence[int], ev: HostEvents, lo: int, hi: int
              ) -> tuple[IdleGaps, ...]:
    """Per device of ``devices``: its idle gaps in ``[lo, hi)`` (``gpu``: the rows of that
    window, not cut), the host's busy time in each (``ev``'s events) and each gap's cause
    (:func:`traceprobe.metrics.idle.gap_causes`, another device's busy time counting as
    "waiting on another device")."""
    (busy,) = device_busy(gpu, devices, Windows.one(lo, hi))
    host = spans(ev.start, ev.end)
    out = []
    for b in busy:
        idle = gaps(b.busy, lo, hi)
        others = union(*(d.busy for d in busy if d.device != b.device))
        out.append(IdleGaps(b.device, idle, measure_within(host, idle.starts, idle.ends),
                            gap_causes(idle, ev, others, lo, hi)))
    return tuple(out)
