"""What a timeline picture shows: lanes of activity and the overlap between them.

Pure data, shared by the HTML report's zoomable canvas and the static PNG::

    lanes = build_lanes(timeline)                  # whole trace; or window=(lo, hi) in ns
    lanes = lanes_for_report(report, timeline)       # the report's window and GPUs
    lanes.rows()                                   # the rows to draw, top to bottom
    lanes.to_payload()                             # compact JSON-able form for timeline.js
    raster(row, lo, hi, width)                     # one row on `width` pixels (the PNG)

One :class:`Lane` per (device, stream) holds the activities of each kind (kernels,
communication kernels, copies, memsets) as :class:`~traceprobe.intervals.Spans`.
:class:`Band` rows hold the overlap the report measures: time with two or more GPUs busy,
copy time hidden under kernels (per GPU), time with two or more of a GPU's streams busy,
and (``idle=True``) each GPU's idle time (the window minus its busy time). Both are
computed by :mod:`traceprobe.metrics.bands` (whose bands' lengths are the report's
figures); this module only lays them out and downsamples them. Step boundaries come from
the timeline's ``ProfilerStep`` windows. With ``hosts=True`` one :class:`HostLane` per host thread
shows what the thread was doing at each moment: the kind of the innermost event
running (an op, a runtime call, an annotation, the DataLoader); the PNG draws them,
the HTML page draws host threads from every event instead (:mod:`.events`).

Drawing rule (canvas and PNG alike): each pixel column of a row shows the kind
that ran longest in it, more opaque the more of the pixel was busy, so a thousand
1 µs memsets among long kernels cannot paint a lane brown.

Big traces are downsampled: pieces of one row closer than ``merge_ns`` are joined
and each merged piece keeps the fraction of it that was busy (``Row.density``), so
the drawing rule still holds. Without ``width_px`` the finest ``merge_ns`` (the
window over a power of two) that keeps all rows under ``max_pieces`` pieces is
chosen: a 300k-event trace's payload stays near 1 MB; a trace that fits is exact
(``merge_ns == 0``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from traceprobe.intervals import (
    EMPTY,
    Spans,
    covered_within,
    difference,
    measure_within,
    merge_close,
    spans,
    union,
)
from traceprobe.metrics.bands import LANE_KINDS, OverlapBand, activity, overlap_bands
from traceprobe.metrics.grouping import Windows
from traceprobe.render.events import host_kinds, nesting
from traceprobe.report.model import Report
from traceprobe.timeline import Timeline

# Kinds of a lane (LANE_KINDS, from metrics.bands; "comm" is a kernel with comm=True) and of a
# band. A pixel shows the kind that ran longest in it.
BAND_KINDS = ("multi_device", "copy_hidden", "streams_concurrent", "gpu_idle")
# Kinds of a host lane (the innermost event running), as render/events.py names them.
HOST_KINDS = ("cpu_op", "runtime", "sync", "annotation", "dataloader", "python", "other")
ALL_KINDS = LANE_KINDS + BAND_KINDS + HOST_KINDS
# One colour and legend entry per kind, used by the HTML report (as CSS variables) and the PNG.
COLORS = {
    "kernel": "#4c78a8",
    "comm": "#b279a2",
    "memcpy": "#f58518",
    "memset": "#9d755d",
    "multi_device": "#7b4fc9",
    "copy_hidden": "#54a24b",
    "streams_concurrent": "#e45756",
    "gpu_idle": "#bdbdbd",
    "cpu_op": "#72b7b2",
    "runtime": "#eeca3b",
    "sync": "#d62728",
    "annotation": "#8c6d31",
    "dataloader": "#ff9da6",
    "python": "#a0cbe8",
    "other": "#9e9e9e",
    "critical": "#222222",
    "step": "#444444",
}
LEGEND = {
    "kernel": "kernel",
    "comm": "communication kernel",
    "memcpy": "memory copy",
    "memset": "memset",
    "multi_device": "≥2 GPUs busy at once",
    "copy_hidden": "copy hidden under a kernel",
    "streams_concurrent": "≥2 streams of a GPU busy",
    "gpu_idle": "GPU idle",
    "cpu_op": "op",
    "runtime": "runtime call",
    "sync": "synchronisation",
    "annotation": "user annotation",
    "dataloader": "DataLoader",
    "python": "Python function",
    "other": "other host event",
    "critical": "critical path",
    "step": "ProfilerStep boundary",
}
MAX_PIECES = 100_000  # ~1.5 MB of payload at worst
FINEST = 1 << 20  # finest merge step tried: window / 2**20


@dataclass(frozen=True)
class Row:
    """One row of the picture: sets of pieces by kind (kinds without pieces absent).

    ``density[kind]`` (after downsampling only) holds, per merged piece, the fraction
    of it that was really busy; a kind without an entry is exact (density 1).
    """

    pieces: dict[str, Spans]
    density: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.pieces.values())

    @property
    def label(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class Lane(Row):
    """One stream of one device: its activities by kind (LANE_KINDS)."""

    device: int = -1
    stream: int = -1
    events: int = 0  # raw activities in the window

    @property
    def label(self) -> str:
        return f"GPU {self.device} · stream {self.stream}"


@dataclass(frozen=True)
class Band(Row):
    """Overlap time: one kind of BAND_KINDS; ``device`` None for ``multi_device``."""

    kind: str = ""
    device: int | None = None
    total_ns: int = 0  # exact length before downsampling

    @property
    def spans(self) -> Spans:
        return self.pieces.get(self.kind, EMPTY)

    @property
    def label(self) -> str:
        return band_label(self.kind, self.device)


def band_label(kind: str, device: int | None, pair: tuple[int, int] | None = None) -> str:
    """A band's row name (the picture's, and the annotated trace's track)."""
    if kind == "multi_device":
        return "≥2 GPUs busy"
    if kind == "device_pair" and pair is not None:
        return f"GPU {pair[0]} & GPU {pair[1]} both busy"
    if kind == "copy_hidden":
        return f"GPU {device} copy hidden under kernels"
    if kind == "gpu_idle":
        return f"GPU {device} idle"
    return f"GPU {device} ≥2 streams busy"


@dataclass(frozen=True)
class HostLane(Row):
    """One host thread: per kind of HOST_KINDS, the time it was the innermost event running."""

    pid: int = -1
    tid: int = -1
    events: int = 0

    @property
    def label(self) -> str:
        return f"host thread {self.tid}"


@dataclass(frozen=True)
class Lanes:
    """Everything a timeline picture needs, times in int ns on the trace clock."""

    lo: int
    hi: int
    lanes: tuple[Lane, ...]
    bands: tuple[Band, ...]
    steps: tuple[tuple[int, int, int], ...]  # (step number, start, end), clipped to the window
    devices: tuple[tuple[int, str | None], ...]  # (device, name)
    merge_ns: int = 0  # pieces closer than this were joined; 0 = exact
    hosts: tuple[HostLane, ...] = ()

    def kinds(self) -> list[str]:
        """The legend entries this picture needs, in LEGEND order."""
        present = {k for x in (*self.lanes, *self.hosts) for k in x.pieces}
        present |= {b.kind for b in self.bands}
        if self.steps:
            present.add("step")
        return [k for k in LEGEND if k in present]

    @property
    def size(self) -> int:
        """Number of pieces over all rows."""
        return sum(r.size for r in self.rows())

    def rows(self) -> Iterator[Lane | Band | HostLane]:
        """Rows top to bottom: the all-GPU band, per device its bands and its lanes, then
        the host threads (when built with ``hosts=True``)."""
        for b in self.bands:
            if b.device is None:
                yield b
        for d, _ in self.devices:
            for b in self.bands:
                if b.device == d:
                    yield b
            for lane in self.lanes:
                if lane.device == d:
                    yield lane
        yield from self.hosts

    def merged(self, merge_ns: int) -> Lanes:
        """These (exact) rows with pieces closer than ``merge_ns`` joined, and each merged
        piece's busy fraction kept in ``density``."""
        if merge_ns <= 0:
            return self
        if self.merge_ns:
            raise ValueError("merge the exact lanes, not merged ones")

        def merge(row: Row) -> Row:
            pieces, density = {}, {}
            for k, p in row.pieces.items():
                m = merge_close(p, merge_ns)
                pieces[k] = m
                if len(m) < len(p):
                    density[k] = measure_within(p, m.starts, m.ends) / (m.ends - m.starts)
            return replace(row, pieces=pieces, density=density)

        return replace(
            self,
            lanes=tuple(merge(x) for x in self.lanes),  # type: ignore[misc]
            bands=tuple(merge(b) for b in self.bands),  # type: ignore[misc]
            hosts=tuple(merge(h) for h in self.hosts),  # type: ignore[misc]
            merge_ns=merge_ns,
        )

    def to_payload(self) -> dict[str, Any]:
        """JSON-able form read by ``assets/timeline.js``.

        Times are int ns relative to ``lo``. A set of pieces is one flat list
        ``[gap0, len0, gap1, len1, ...]``: ``gap0`` from the window start, each later
        gap from the previous piece's end (delta coding keeps the numbers short).
        ``density[kind]``, where present, is each merged piece's busy fraction in ‰.
        Host lanes are left out: the page draws host threads from their events.
        """
        rows: list[dict[str, Any]] = []
        for r in self.rows():
            if isinstance(r, HostLane):
                continue
            row: dict[str, Any] = {
                "kinds": {k: _encode(p, self.lo) for k, p in r.pieces.items()},
                "density": {k: np.rint(d * 1000).astype(np.int64).tolist()
                            for k, d in r.density.items()},
                "label": r.label,
            }
            if isinstance(r, Lane):
                row.update(type="lane", device=r.device, stream=r.stream, events=r.events)
            else:
                row.update(type="band", kind=r.kind, device=r.device, total_ns=r.total_ns)
            rows.append(row)
        return {
            "span_ns": self.hi - self.lo,
            "merge_ns": self.merge_ns,
            "devices": [{"device": d, "name": n} for d, n in self.devices],
            "kinds": list(ALL_KINDS),
            "rows": rows,
            "steps": [[n, s - self.lo, e - self.lo] for n, s, e in self.steps],
            "lanes": len(self.lanes),
        }


def raster(row: Row, lo: int, hi: int, width: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``row`` on ``width`` pixels over ``[lo, hi)``, as the HTML canvas draws it.

    Returns ``(kinds, dominant, busy)``: per pixel the index into ``kinds`` of the kind
    that ran longest in it (-1: nothing) and the fraction of the pixel that was busy
    (any kind). Exact rows only (no ``density``).
    """
    if row.density:
        raise ValueError("raster() needs exact rows; build the lanes without merging")
    kinds = [k for k in ALL_KINDS if k in row.pieces]
    edges = lo + (np.arange(width + 1, dtype=np.int64) * (hi - lo)) // max(1, width)
    a, b = edges[:-1], edges[1:]
    per_kind = np.array([measure_within(row.pieces[k], a, b) for k in kinds]).reshape(
        len(kinds), width
    )
    width_ns = np.maximum(b - a, 1)
    busy = covered_within(list(row.pieces.values()), a, b) / width_ns
    dominant = np.where(busy > 0, per_kind.argmax(axis=0) if kinds else -1, -1)
    return kinds, dominant, busy


def build_lanes(
    timeline: Timeline,
    window: tuple[int, int] | None = None,
    *,
    width_px: int | None = None,
    max_pieces: int = MAX_PIECES,
    hosts: bool = False,
    idle: bool = False,
) -> Lanes:
    """Lanes, bands and steps of ``timeline`` in ``window`` (default: the whole trace);
    ``hosts``: also one :class:`HostLane` per host thread; ``idle``: also a ``gpu_idle``
    band per GPU (the HTML page and the PNG draw them).

    ``width_px``: merge pieces closer than one pixel of a picture that wide. Without
    it, the finest merge step that keeps the rows under ``max_pieces`` pieces.
    """
    if window is None:
        window = timeline.span or (0, 0)
    lo, hi = int(window[0]), int(window[1])
    tl = timeline.window(lo, hi) if hi > lo else timeline
    exact = _exact(tl, lo, hi, hosts=hosts, idle=idle)
    length = hi - lo
    if length <= 0:
        return exact
    if width_px is not None:
        return exact.merged(max(1, length // max(1, int(width_px))))
    if exact.size <= max_pieces:
        return exact
    # Coarsen until it fits; merging merged sets gives the same pieces as merging the
    # exact ones (a coarser step only joins more), so count on the running result.
    sets = [p for r in exact.rows() for p in r.pieces.values()]
    steps = FINEST
    while steps > 1:
        merge_ns = -(-length // steps)
        sets = [merge_close(p, merge_ns) for p in sets]
        if sum(len(p) for p in sets) <= max_pieces:
            break
        steps //= 2
    return exact.merged(-(-length // steps))


def lanes_for_report(report: Report | None, timeline: Timeline, **kw: Any) -> Lanes:
    """:func:`build_lanes` for what a report analysed: its window (exact ns) and its GPUs;
    without a report, the whole trace."""
    if report is None:
        return build_lanes(timeline, timeline.span, **kw)
    window: tuple[int, int] | None = (report.window.start_ns, report.window.end_ns)
    devices = [d.device for d in report.devices]
    if devices and devices != timeline.devices:
        timeline = timeline.only_devices(devices)
    return build_lanes(timeline, window, **kw)


def _exact(tl: Timeline, lo: int, hi: int, *, hosts: bool = False, idle: bool = False) -> Lanes:
    devices = tl.devices
    names = {d: tl.meta.device_name(d) for d in devices}
    lanes = [Lane(a.pieces, device=a.device, stream=a.stream, events=a.events)
             for a in activity(tl.gpu)]
    (found,) = overlap_bands(tl.gpu, devices, Windows.one(lo, max(hi, lo)), idle=idle)
    bands = [_band(b) for b in found]

    steps: tuple[tuple[int, int, int], ...] = ()
    if not tl.steps.empty:
        st = tl.steps.sort_values("start")
        steps = tuple(
            (int(n), int(s), int(e))
            for n, s, e in zip(st["step"], st["start"], st["end"], strict=True)
        )
    return Lanes(
        lo=lo,
        hi=hi,
        lanes=tuple(lanes),
        bands=tuple(bands),
        steps=steps,
        devices=tuple((d, names[d]) for d in devices),
        hosts=host_lanes(tl.cpu) if hosts else (),
    )


def host_lanes(cpu: Any) -> tuple[HostLane, ...]:
    """One :class:`HostLane` per (pid, tid) of the ``cpu`` frame: for each kind, the time an
    event of that kind was the innermost one running on the thread (nesting as
    :func:`traceprobe.render.events.nesting` finds it)."""
    if cpu.empty:
        return ()
    cpu = cpu.assign(_neg_end=-cpu["end"]).sort_values(
        ["pid", "tid", "start", "_neg_end"], kind="stable")
    keys = cpu["pid"].to_numpy(np.int64) * (1 << 32) + cpu["tid"].to_numpy(np.int64)
    _, row = np.unique(keys, return_inverse=True)
    order = np.argsort(row, kind="stable")  # rows contiguous, start order kept
    cpu, row = cpu.iloc[order], row[order]
    start = cpu["start"].to_numpy(np.int64)
    end = cpu["end"].to_numpy(np.int64)
    depth, _ = nesting(row, start, end)
    kind = host_kinds(cpu)
    out = []
    for r in np.unique(row):
        m = row == r
        d, s, e, k = depth[m], start[m], end[m], kind[m]
        deeper = EMPTY
        pieces: dict[str, Spans] = {}
        for level in range(int(d.max()), -1, -1):
            at = d == level
            for kk in np.unique(k[at]):
                sel = at & (k == kk)
                own = difference(spans(s[sel], e[sel]), deeper)
                pieces[str(kk)] = union(pieces.get(str(kk), EMPTY), own)
            deeper = union(deeper, spans(s[at], e[at]))
        first = cpu.iloc[int(np.flatnonzero(m)[0])]
        out.append(HostLane({kk: p for kk, p in pieces.items() if not p.empty},
                            pid=int(first["pid"]), tid=int(first["tid"]), events=int(m.sum())))
    return tuple(out)


def _band(b: OverlapBand) -> Band:
    return Band({b.kind: b.spans}, kind=b.kind, device=b.device, total_ns=b.length)


def _encode(a: Spans, lo: int) -> list[int]:
    if a.empty:
        return []
    prev_end = np.concatenate([[lo], a.ends[:-1]]).astype(np.int64)
    out = np.empty(2 * len(a), np.int64)
    out[0::2] = a.starts - prev_end
    out[1::2] = a.ends - a.starts
    return out.tolist()


__all__ = [
    "BAND_KINDS", "COLORS", "LANE_KINDS", "LEGEND",
    "ALL_KINDS", "HOST_KINDS",
    "Band", "HostLane", "Lane", "Lanes", "Row",
    "build_lanes", "host_lanes", "lanes_for_report", "merge_close", "raster",
]
