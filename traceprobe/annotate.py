"""A copy of a trace with traceprobe's findings added as tracks, for Perfetto and friends.

    doc = annotate(timeline, "run.pt.trace.json.gz")      # the trace + new events (a dict)
    write_annotated(doc, "run.annotated.json.gz", source="run.pt.trace.json.gz")
    annotate_file("run.pt.trace.json.gz", "out.json.gz")  # both, loading the trace itself

The new events are complete events (``ph: "X"``, ``cat: "traceprobe"``) on two new
processes, named with ``process_name``/``thread_name`` metadata (``ph: "M"``) so that
Perfetto, chrome://tracing and the TensorBoard profiler's trace view show them as rows:

* **traceprobe: overlap** — the bands of the timeline picture
  (:mod:`traceprobe.render.lanes`): GPUs busy at once ("GPU 0 & GPU 1 both busy"
  with two GPUs, "≥2 GPUs busy" with more, plus one thread per pair with three or
  four), and per GPU "copy hidden under kernels" (copy ∩ kernel time) and "≥2
  streams busy": the sets whose lengths the report gives.
* **traceprobe: GPU idle** — per GPU one event per idle gap in the trace's span,
  named after the cause charged most of it by the report's idle partition
  (``host.devices[].causes``, :func:`traceprobe.metrics.idle.gap_causes`: a region, a
  sync or wait, the innermost CPU op or runtime call, or ``Python (untraced)``).
* **traceprobe: critical path** — the whole trace's critical path
  (:mod:`traceprobe.graph`): one event per piece, named ``category: what``
  (``kernel: <kernel name>``, ``sync_wait: cudaDeviceSynchronize``, ...), ``args.kind``
  the category; the pieces tile the trace's span.

Exactness: the original events are copied byte for byte (kept as ``msgspec.Raw``);
other top-level values are decoded with fractions as ``decimal.Decimal``. New
timestamps are written from integer ns as integer µs plus exactly three decimals
(``Decimal``), so nothing passes through float64. Tools other than
:func:`write_annotated` should encode the dict with ``msgspec.json.Encoder(
decimal_format="number")``.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from traceprobe import output
from traceprobe.errors import OutputError, TraceError
from traceprobe.intervals import Spans
from traceprobe.load.read import read_chunks
from traceprobe.metrics.bands import IdleGaps, idle_gaps, overlap_bands
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.host import host_process
from traceprobe.metrics.regions import host_events
from traceprobe.render.lanes import band_label
from traceprobe.timeline import Timeline

CATEGORY = "traceprobe"
OVERLAP_PROCESS = "traceprobe: overlap"
IDLE_PROCESS = "traceprobe: GPU idle"
PATH_PROCESS = "traceprobe: critical path"
SORT_INDEX = 5_100_000  # after Kineto's GPU rows (5000000 + device), before its "Spans"
MAX_PAIR_DEVICES = 4  # 3 or 4 GPUs: a track per pair besides "≥2 GPUs busy"
SUFFIXES = (".json", ".json.gz")

_ENCODER = msgspec.json.Encoder(decimal_format="number")
_EXACT = msgspec.json.Decoder(float_hook=Decimal)  # fractions kept exactly, as Decimal


@dataclass(frozen=True)
class Track:
    """One new row: a thread of one of the two new processes."""

    process: str  # OVERLAP_PROCESS | IDLE_PROCESS | PATH_PROCESS
    name: str  # thread_name
    pieces: Spans
    labels: Sequence[str] | None = None  # per piece event name; None: ``name`` for all
    args: Sequence[dict[str, Any]] | None = None  # per piece extra args


# ----------------------------------------------------------------------------- tracks


def tracks(timeline: Timeline) -> list[Track]:
    """The overlap and idle tracks of ``timeline`` over its whole span (pure).

    The overlap sets are the timeline picture's bands (:mod:`traceprobe.metrics.bands`),
    plus one track per pair of GPUs when there are three or four.
    """
    span = timeline.span
    devices = timeline.devices
    if span is None or not devices:
        return []
    lo, hi = span
    (found,) = overlap_bands(timeline.gpu, devices, Windows.one(lo, hi),
                             pairs_upto=MAX_PAIR_DEVICES)
    # "≥2 GPUs busy" first, then a track per pair (three or four GPUs), then per GPU its bands
    bands = sorted(found, key=lambda b: {"multi_device": 0, "device_pair": 1}.get(b.kind, 2))
    out: list[Track] = []
    for band in bands:
        name = band_label(band.kind, band.device, band.pair)
        if band.kind == "multi_device" and len(devices) == 2:
            name = f"GPU {devices[0]} & GPU {devices[1]} both busy"
        out.append(Track(OVERLAP_PROCESS, name, band.spans))
    ev = host_events(timeline.cpu, host_process(timeline.cpu))
    for idle in idle_gaps(timeline.gpu, devices, ev, lo, hi):
        labels, args = _idle_labels(idle)
        out.append(Track(IDLE_PROCESS, f"GPU {idle.device} idle", idle.gaps, labels, args))
    return out


def path_tracks(timeline: Timeline) -> list[Track]:
    """The critical path of the whole trace as one track (none when nothing replays)."""
    import numpy as np

    from traceprobe.graph import whole_path

    pieces = whole_path(timeline)
    if not pieces:
        return []
    s = np.array([p[0] for p in pieces], np.int64)
    e = np.array([p[1] for p in pieces], np.int64)
    labels = [f"{k}: {n}" for _, _, k, n in pieces]
    args = [{"kind": k} for _, _, k, _ in pieces]
    return [Track(PATH_PROCESS, "critical path", Spans(s, e), labels, args)]


def _idle_labels(idle: IdleGaps) -> tuple[list[str], list[dict[str, Any]]]:
    """Per idle gap its event name and args: the cause of the report's idle partition
    (:func:`traceprobe.metrics.idle.gap_causes`) charged most of it."""
    labels, args = [], []
    for i, cause in enumerate(idle.causes):
        a: dict[str, Any] = {"host_busy_us": us(int(idle.host_busy_ns[i]))}
        if cause is None:
            labels.append("idle")
        else:
            kind, name, ns = cause
            labels.append(f"idle: {name}")
            a.update(cause=name, cause_kind=kind, cause_us=us(ns))
        args.append(a)
    return labels, args


# ----------------------------------------------------------------------------- events


def us(ns: int) -> Decimal:
    """Integer ns as µs with exactly three decimals: 1234567 -> Decimal('1234.567')."""
    return Decimal(int(ns)).scaleb(-3)


def annotation_events(track_list: Sequence[Track], pids: tuple[int, ...],
                      ts0: int = 0) -> list[dict[str, Any]]:
    """Metadata and complete events for ``track_list``; ``pids`` for (overlap, idle[, path])."""
    pid_of = dict(zip((OVERLAP_PROCESS, IDLE_PROCESS, PATH_PROCESS), pids, strict=False))
    out: list[dict[str, Any]] = []
    for i, (name, pid) in enumerate(pid_of.items()):
        if any(t.process == name for t in track_list):
            out.append(_meta("process_name", pid, 0, ts0, name=name))
            out.append(_meta("process_sort_index", pid, 0, ts0, sort_index=SORT_INDEX + i))
    tid_of: dict[str, int] = {}
    for t in track_list:
        tid = tid_of[t.process] = tid_of.get(t.process, 0) + 1
        pid = pid_of[t.process]
        out.append(_meta("thread_name", pid, tid, ts0, name=t.name))
        out.append(_meta("thread_sort_index", pid, tid, ts0, sort_index=tid))
        starts, ends = t.pieces.starts.tolist(), t.pieces.ends.tolist()
        for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
            ev = {
                "ph": "X", "cat": CATEGORY,
                "name": t.labels[j] if t.labels is not None else t.name,
                "pid": pid, "tid": tid, "ts": us(s), "dur": us(e - s),
            }
            if t.args is not None:
                ev["args"] = t.args[j]
            out.append(ev)
    return out


def _meta(kind: str, pid: int, tid: int, ts0: int, **args: Any) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "ts": us(ts0), "pid": pid, "tid": tid, "args": args}


class _Pid(msgspec.Struct):
    pid: Any = None


def annotate(timeline: Timeline, raw_trace_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The trace document at ``raw_trace_path`` with the tracks of ``timeline`` appended.

    ``timeline`` must be that file loaded (``traceprobe.load(raw_trace_path)``). The
    original events come back as ``msgspec.Raw`` (their exact JSON text); the new ones
    as dicts. A bare event list becomes ``{"traceEvents": [...]}``.
    """
    path = Path(raw_trace_path)
    data = b"".join(read_chunks(path))
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    try:
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw] | list[msgspec.Raw])
        if isinstance(top, list):
            body, top = data, {}
        elif "traceEvents" in top:
            body = top["traceEvents"]
        else:
            raise TraceError(path, 'a JSON object without "traceEvents"',
                             "pass a Chrome-trace file")
        events = msgspec.json.decode(body, type=list[msgspec.Raw])
        pids = msgspec.json.decode(body, type=list[_Pid])
    except msgspec.DecodeError as e:
        raise TraceError(path, f"not a valid trace ({e})", "pass a Chrome-trace file") from None
    used = [p.pid for p in pids if isinstance(p.pid, int) and not isinstance(p.pid, bool)]
    first = max([15, *used]) + 1  # Kineto names pids 0..15 for GPUs even when unused
    span = timeline.span
    new = annotation_events(tracks(timeline) + path_tracks(timeline),
                            (first, first + 1, first + 2), span[0] if span else 0)

    doc: dict[str, Any] = {}
    for key, raw in top.items():
        doc[key] = None if key == "traceEvents" else _EXACT.decode(raw)
    doc["traceEvents"] = [*events, *new]
    return doc


# ----------------------------------------------------------------------------- writing


def check_output(path: str | os.PathLike[str], source: str | os.PathLike[str] | None = None,
                 *, force: bool = False) -> None:
    """Raise before any work when ``path`` cannot be the annotated copy of ``source``."""
    p = Path(path)
    if not p.name.endswith(SUFFIXES) and not output.is_device(p):
        raise OutputError(f"Cannot write {p}: name the annotated trace *.json or *.json.gz")
    output.check_outputs([p], [] if source is None else [source], force=force)


def write_annotated(doc: dict[str, Any], path: str | os.PathLike[str], *,
                    source: str | os.PathLike[str] | None = None, force: bool = False) -> int:
    """Write ``doc`` as JSON (gzip for ``*.json.gz``) atomically; return the bytes written.

    Never writes over ``source``; an existing ``path`` only with ``force``.
    """
    check_output(path, source, force=force)
    data = _ENCODER.encode(doc)
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    output.write_bytes(path, data, force=force)
    return len(data)


@dataclass(frozen=True)
class Summary:
    """What :func:`annotate_file` added, for the CLI's one-line message."""

    output: str
    tracks: int
    events: int
    bytes: int
    timeline: Timeline | None = None  # what was loaded: its salvage and lenient-read notes


def annotate_file(trace: str | os.PathLike[str], out: str | os.PathLike[str], *,
                  force: bool = False) -> Summary:
    """Load ``trace``, annotate it and write the copy to ``out``."""
    from traceprobe.load.pipeline import load

    check_output(out, trace, force=force)
    timeline = load(trace)
    doc = annotate(timeline, trace)
    added = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    n = write_annotated(doc, out, source=trace, force=force)
    return Summary(str(out), sum(1 for e in added if e.get("name") == "thread_name"),
                   sum(1 for e in added if e.get("ph") == "X"), n, timeline)


__all__ = ["Summary", "Track", "annotate", "annotate_file", "annotation_events", "check_output",
           "tracks", "write_annotated"]
