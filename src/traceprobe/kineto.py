"""Decoded Kineto events to a :class:`~traceprobe.timeline.Timeline`.

``build(stream, source) -> Timeline`` is the second stage of loading (after
:mod:`traceprobe.reader`): it turns each batch of events into compact columns
as it arrives, then assembles the frames. It understands three dialects of the
PyTorch Profiler's Chrome trace:

* current Kineto: categories ``kernel``, ``gpu_memcpy``, ``gpu_memset`` (GPU
  work), ``cuda_runtime``, ``cuda_driver``, ``cuda_sync``, ``cpu_op``,
  ``user_annotation``, ``python_function`` ... (host side);
* the 2021 names (``Kernel``, ``Memcpy``, ``Memset``, ``Runtime``,
  ``Operator``; GPU ``tid`` like ``"stream 7"``; sparse args), renamed to the
  current ones in the frames;
* ROCm/HIP traces (``hip*`` runtime calls, copy direction in ``args.kind``).

Only complete (``ph == "X"``) events become rows. ``gpu_user_annotation`` (a
label on the GPU timeline, not GPU work) and the profiler's own ``Trace`` span
get no rows; their counts are in ``meta.extra["skipped"]``. Rows keep the
file's order (sort when you need to). Negative durations are clamped to zero
and counted in ``meta.extra["clamped_durations"]``.

Column rules: device = ``args.device``, else ``args.fromDevice``, else the
number in ``pid``; stream = ``args.stream``, else the number in ``tid``
(``"stream 7"`` -> 7). A copy's direction and memory kinds come from its name
(``"Memcpy HtoD (Pageable -> Device)"``), else ``args.kind``; a copy whose
``fromDevice`` and ``toDevice`` differ is ``"PtoP"`` with ``peer`` the other
device. ROCm copies that lack ``bytes`` take ``size`` from the hipMemcpy* call
with the same correlation. ``comm`` marks kernels whose name contains ``nccl``
or ``rccl`` (any case). ``steps`` come from ``ProfilerStep#N`` events
(``user_annotation``, or ``cpu_op`` in older traces) of the thread that has
the most of them; a repeated N keeps its first window, and a window is cut at
the next one's start. CPU ``pid``/``tid`` strings that are not numbers become
a stable hash (``2**32 + crc32``). String columns are ``object`` dtype, as the
Timeline contract says, and every row shares the one ``str`` object of its
value, so they are compact and ``.astype("category")`` is cheap.

For tests and notebooks, :func:`from_document` and :func:`from_events` build a
Timeline from Python objects by encoding them to JSON and taking the same path
as a file. Pass ``decimal.Decimal`` timestamps to keep sub-µs digits exact.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from traceprobe.errors import TraceError
from traceprobe.reader import REEXPORT, Event, EventStream, us_to_ns
from traceprobe.timeline import (
    COPY_KINDS,
    CPU_COLUMNS,
    GPU_COLUMNS,
    STEP_COLUMNS,
    Timeline,
    TraceMeta,
    empty_frame,
)

GPU_CATEGORIES = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "Kernel": "kernel",
    "Memcpy": "memcpy",
    "Memset": "memset",  # 2021 names
}
RENAMED_2021 = {"Runtime": "cuda_runtime", "Operator": "cpu_op"}
LEGACY_CATEGORIES = frozenset({"Kernel", "Memcpy", "Memset", "Runtime", "Operator"})
SKIPPED_CATEGORIES = frozenset({"gpu_user_annotation", "Trace"})
STEP_KINDS = frozenset({"user_annotation", "cpu_op"})
STEP_PREFIX = "ProfilerStep#"
AMD_MARKS = ("AMD", "Radeon", "Instinct")

_GPU, _CPU, _SKIP = 0, 1, 2
_COPY_NAME = re.compile(r"Memcpy\s+([A-Za-z])to([A-Za-z])\b(?:\s*\(\s*(\w+)\s*->\s*(\w+)\s*\))?")
_TRAILING_INT = re.compile(r"(-?\d+)\s*$")
_COMM = re.compile(r"nccl|rccl", re.IGNORECASE)
_ENCODER = msgspec.json.Encoder(decimal_format="number")


# --------------------------------------------------------------------------- public


def build(stream: EventStream, source: str) -> Timeline:
    """Turn a stream of decoded events into a Timeline (frames as in :mod:`traceprobe.timeline`)."""
    cols = _Columns(source)
    for batch in stream:
        cols.add(batch)
    return cols.timeline(stream)


def from_document(doc: Mapping[str, Any] | list[Any], source: str = "<memory>") -> Timeline:
    """A Timeline from a trace given as Python objects (``{"traceEvents": [...]}`` or a list).

    Encodes to JSON and decodes it like a file, so there is one loading path.
    """
    try:
        data = _ENCODER.encode(doc)
    except (TypeError, msgspec.EncodeError) as e:
        raise TraceError(
            source,
            f"cannot encode the document as JSON ({e})",
            "pass only dicts, lists, str, int, float and Decimal",
        ) from None
    return build(EventStream([data], source), source)


def from_events(
    events: Iterable[Mapping[str, Any]], source: str = "<memory>", **top: Any
) -> Timeline:
    """A Timeline from a list of event dicts; ``top`` adds top-level keys
    (``distributedInfo=...``, ``deviceProperties=...``)."""
    return from_document({**top, "traceEvents": list(events)}, source)


# --------------------------------------------------------------------------- columns


class _Columns:
    """Per-batch extraction into arrays; strings become codes into lookup tables."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.cats: dict[str, int] = {}
        self.cat_group: list[int] = []
        self.names: dict[str, int] = {}
        self.gpu: list[dict[str, Any]] = []
        self.cpu: list[dict[str, Any]] = []
        self.seen = 0  # events in earlier batches, to name an event's index
        self.complete = 0
        self.clamped = 0
        self.skipped: Counter[str] = Counter()
        self.span: list[int] = []  # the profiler's own "Trace" span: [start, end]
        self.sizes: dict[int, int] = {}  # correlation -> args.size (ROCm copies)

    def add(self, batch: list[Event]) -> None:
        xs = [e for e in batch if e.ph == "X"]
        start, end = self._times(xs, batch)
        cat = _encode([e.cat for e in xs], self.cats, self._new_cat)
        name = _encode([e.name for e in xs], self.names)
        corr = _int64([e.args.correlation for e in xs])
        ext = _int64([e.args.external_id for e in xs])
        if any(c in LEGACY_CATEGORIES for c in self.cats):  # 2021: "external id" on GPU rows
            ext = np.where(ext < 0, _int64([e.args.external_id_2021 for e in xs]), ext)
        group = np.array(self.cat_group, np.int8)[cat]
        self.complete += len(xs)
        self.seen += len(batch)

        ci = np.flatnonzero(group == _CPU)
        if len(ci):
            evs = [xs[i] for i in ci.tolist()]
            self.cpu.append(
                {
                    "cat": cat[ci],
                    "name": name[ci],
                    "pid": _ids([e.pid for e in evs]),
                    "tid": _ids([e.tid for e in evs]),
                    "start": start[ci],
                    "end": end[ci],
                    "correlation": corr[ci],
                    "external_id": ext[ci],
                }
            )
            sizes = [e.args.size for e in evs]
            if sizes.count(None) != len(sizes):  # ROCm: hipMemcpy* calls carry "size"
                self.sizes.update(
                    (_to_int(evs[i].args.correlation), _to_int(s))
                    for i, s in enumerate(sizes)
                    if s is not None
                )
        gi = np.flatnonzero(group == _GPU)
        if len(gi):
            evs = [xs[i] for i in gi.tolist()]
            args = [e.args for e in evs]
            frm = [a.from_device for a in args]
            self.gpu.append(
                {
                    "cat": cat[gi],
                    "name": name[gi],
                    "start": start[gi],
                    "end": end[gi],
                    "correlation": corr[gi],
                    "external_id": ext[gi],
                    "device": _with_fallback([a.device for a in args], frm, [e.pid for e in evs]),
                    "stream": _with_fallback([a.stream for a in args], [e.tid for e in evs]),
                    "bytes": _int64([a.bytes for a in args]),
                    "from": _int64(frm),
                    "to": _int64([a.to_device for a in args]),
                    "kind_arg": [a.kind for a in args],
                }
            )
        si = np.flatnonzero(group == _SKIP)
        if len(si):
            for c, k in zip(*np.unique(cat[si], return_counts=True), strict=True):
                self.skipped[self._cat_name(int(c))] += int(k)
            trace = si[cat[si] == self.cats.get("Trace", -1)]
            if len(trace):
                lo, hi = int(start[trace].min()), int(end[trace].max())
                if self.span:
                    lo, hi = min(lo, self.span[0]), max(hi, self.span[1])
                self.span = [lo, hi]

    def _new_cat(self, c: str) -> None:
        self.cat_group.append(
            _GPU if c in GPU_CATEGORIES else _SKIP if c in SKIPPED_CATEGORIES else _CPU
        )

    def _cat_name(self, code: int) -> str:
        return list(self.cats)[code]

    def _times(self, xs: list[Event], batch: list[Event]) -> tuple[np.ndarray, np.ndarray]:
        start, st = us_to_ns([e.ts for e in xs])
        if st.any():
            bad = np.flatnonzero(st)
            ev = xs[int(bad[0])]
            missing = int((st == 1).sum())
            what = (
                f"{missing} complete ('X') event(s) have no ts"
                if missing == len(bad)
                else f"{len(bad)} complete ('X') event(s) have a missing or non-numeric ts"
            )
            raise TraceError(
                self.source,
                f"{what} (first: traceEvents[{self._index(batch, ev)}] {ev.name!r})",
                f"the trace is damaged; {REEXPORT}",
            )
        dur, dst = us_to_ns([e.dur for e in xs])
        if (dst == 2).any():
            ev = xs[int(np.flatnonzero(dst == 2)[0])]
            raise TraceError(
                self.source,
                f"{int((dst == 2).sum())} event(s) have a non-numeric "
                f"dur (first: traceEvents[{self._index(batch, ev)}] "
                f"dur={bytes(ev.dur).decode(errors='replace')})",
                f"the trace is damaged; {REEXPORT}",
            )
        neg = dur < 0
        if neg.any():
            self.clamped += int(neg.sum())
            dur[neg] = 0
        return start, start + dur

    def _index(self, batch: list[Event], ev: Event) -> int:
        return self.seen + next(i for i, e in enumerate(batch) if e is ev)

    # -- assembly

    def timeline(self, stream: EventStream) -> Timeline:
        cats = list(self.cats)
        kind_u = np.array(
            [GPU_CATEGORIES.get(c) or RENAMED_2021.get(c, c) for c in cats] or [""], object
        )
        names_u = np.empty(len(self.names), object)
        names_u[:] = list(self.names)
        cpu = _concat(self.cpu)
        gpu = _concat(self.gpu)
        cpu_df = self._cpu_frame(cpu, kind_u, names_u)
        gpu_df = self._gpu_frame(gpu, kind_u, names_u)
        steps, thread = _steps(cpu, kind_u, names_u)
        extra: dict[str, Any] = {"complete_events": self.complete, "skipped": dict(self.skipped)}
        if self.span:
            extra["profiler_span_ns"] = self.span
        if self.clamped:
            extra["clamped_durations"] = self.clamped
        if thread:
            extra["steps_thread"] = thread
        if stream.header.displayTimeUnit is not None:
            extra["display_time_unit"] = stream.header.displayTimeUnit
        legacy = any(c in LEGACY_CATEGORIES for c in cats)
        meta = _meta(stream, self.source, gpu_df, cpu_df, legacy, extra)
        return Timeline(gpu=gpu_df, cpu=cpu_df, steps=steps, meta=meta)

    def _cpu_frame(
        self, c: dict[str, np.ndarray], kind_u: np.ndarray, names_u: np.ndarray
    ) -> pd.DataFrame:
        if not c:
            return empty_frame(CPU_COLUMNS)
        return pd.DataFrame(
            {
                "kind": _obj(kind_u[c["cat"]]),
                "name": _obj(names_u[c["name"]]),
                "pid": c["pid"],
                "tid": c["tid"],
                "start": c["start"],
                "end": c["end"],
                "correlation": c["correlation"],
                "external_id": c["external_id"],
            },
            copy=False,
        )

    def _gpu_frame(
        self, g: dict[str, np.ndarray], kind_u: np.ndarray, names_u: np.ndarray
    ) -> pd.DataFrame:
        if not g:
            return empty_frame(GPU_COLUMNS)
        kind = kind_u[g["cat"]]
        codes = g["name"]
        # copy direction, memory kinds and the comm flag: parsed once per distinct name
        per_name = np.full((len(names_u), 4), "", object)
        for c in np.unique(codes).tolist():
            name = str(names_u[c])
            per_name[c] = (*_copy_info(name), bool(_COMM.search(name)))
        copy_kind, src_kind, dst_kind = (per_name[codes, j] for j in range(3))
        comm = per_name[codes, 3].astype(bool) & (kind == "kernel")
        not_copy = kind != "memcpy"
        copy_kind[not_copy] = src_kind[not_copy] = dst_kind[not_copy] = ""
        for i in np.flatnonzero(~not_copy & (copy_kind == "")).tolist():
            k = g["kind_arg"][i]  # ROCm and unusual names: the direction is in args.kind
            copy_kind[i] = k if isinstance(k, str) and k in COPY_KINDS else ""
        f, t, device = g["from"], g["to"], g["device"]
        p2p = (f >= 0) & (t >= 0) & (f != t)  # peer-to-peer copies name both ends
        peer = np.where(p2p, np.where(t != device, t, f), -1)
        copy_kind[p2p & ~not_copy] = "PtoP"
        nbytes = g["bytes"]
        for i in np.flatnonzero(
            (kind != "kernel") & (nbytes < 0) & (g["correlation"] >= 0)
        ).tolist():
            nbytes[i] = self.sizes.get(int(g["correlation"][i]), -1)  # ROCm: from hipMemcpy*
        return pd.DataFrame(
            {
                "kind": _obj(kind),
                "name": _obj(names_u[codes]),
                "device": device,
                "stream": g["stream"],
                "start": g["start"],
                "end": g["end"],
                "correlation": g["correlation"],
                "external_id": g["external_id"],
                "bytes": nbytes,
                "copy_kind": _obj(copy_kind),
                "src_kind": _obj(src_kind),
                "dst_kind": _obj(dst_kind),
                "peer": peer,
                "comm": comm,
            },
            copy=False,
        )


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One array (or list) per column from the batches' pieces, freeing pieces as it goes."""
    out: dict[str, Any] = {}
    for k in list(parts[0]) if parts else []:
        pieces = [p.pop(k) for p in parts]
        if isinstance(pieces[0], np.ndarray):
            out[k] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        else:
            out[k] = [v for piece in pieces for v in piece]
        del pieces
    parts.clear()
    return out


def _encode(values: list[Any], lut: dict[Any, int], on_new: Any = None) -> np.ndarray:
    """Codes of ``values`` in ``lut``, extending it with values not seen before."""
    try:
        return np.fromiter(map(lut.__getitem__, values), np.int32, len(values))
    except KeyError:
        for v in dict.fromkeys(values):
            if v not in lut:
                lut[v] = len(lut)
                if on_new is not None:
                    on_new(v)
        return np.fromiter(map(lut.__getitem__, values), np.int32, len(values))


def _int64(values: list[Any], missing: int = -1) -> np.ndarray:
    """Ints (or numeric strings) to int64; None and junk become ``missing``."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        pass
    absent = values.count(None)
    if absent == len(values):
        return np.full(len(values), missing, np.int64)
    if absent:
        values = [missing if v is None else v for v in values]
        try:
            return np.array(values, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            pass
    return np.array([_to_int(v, missing) for v in values], dtype=np.int64)


def _to_int(v: Any, missing: int = -1) -> int:
    if isinstance(v, bool) or v is None:
        return missing
    if isinstance(v, int):
        return v if -(2**63) < v < 2**63 else missing
    if isinstance(v, float):
        return int(v) if v == v and abs(v) < 2**63 else missing
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s, 0)  # "7", "0x0"
        except ValueError:
            m = _TRAILING_INT.search(s)  # "stream 7", "GPU 0"
            return int(m.group(1)) if m else missing
    return missing


def _with_fallback(first: list[Any], *others: list[Any]) -> np.ndarray:
    """Per row, the first of several sources that holds a number (else -1)."""
    out = _int64(first)
    for other in others:
        gap = np.flatnonzero(out < 0)
        if not len(gap):
            break
        out[gap] = _int64([other[i] for i in gap.tolist()])
    return out


def _ids(values: list[Any]) -> np.ndarray:
    """pid/tid: ints stay, digit strings become ints, other strings a stable hash."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        memo: dict[Any, int] = {}

        def one(v: Any) -> int:
            if v not in memo:
                memo[v] = _str_id(v)
            return memo[v]

        return np.array([v if type(v) is int else one(v) for v in values], dtype=np.int64)


def _str_id(v: Any) -> int:
    s = str(v).strip()
    if re.fullmatch(r"-?\d{1,18}", s):
        return int(s)
    return (1 << 32) + zlib.crc32(s.encode())  # stable across runs, unlike hash()


def _obj(values: np.ndarray) -> pd.Series:
    return pd.Series(values, dtype=object, copy=False)


def _copy_info(name: str) -> tuple[str, str, str]:
    m = _COPY_NAME.search(name)
    if not m:
        return "", "", ""
    kind = f"{m.group(1).upper()}to{m.group(2).upper()}"
    return (kind if kind in COPY_KINDS else ""), (m.group(3) or ""), (m.group(4) or "")


def _step_number(name: Any) -> int:
    if isinstance(name, str) and name.startswith(STEP_PREFIX):
        n = name[len(STEP_PREFIX) :]
        if n.isdigit():
            return int(n)
    return -1


def _steps(
    cpu: dict[str, np.ndarray], kind_u: np.ndarray, names_u: np.ndarray
) -> tuple[pd.DataFrame, list[int] | None]:
    """``ProfilerStep#N`` windows of the thread that has the most of them."""
    if not cpu:
        return empty_frame(STEP_COLUMNS), None
    step_u = np.array([_step_number(n) for n in names_u], np.int64)
    step = step_u[cpu["name"]]
    rows = np.flatnonzero((step >= 0) & np.array([k in STEP_KINDS for k in kind_u])[cpu["cat"]])
    if not len(rows):
        return empty_frame(STEP_COLUMNS), None
    threads = list(zip(cpu["pid"][rows].tolist(), cpu["tid"][rows].tolist(), strict=True))
    count = Counter(threads)
    best = max(count, key=lambda k: (count[k], -k[0], -k[1]))
    rows = rows[np.array([t == best for t in threads])]
    start, end = cpu["start"], cpu["end"]
    rows = rows[np.lexsort((end[rows], start[rows]))]  # by start, then end
    _, first = np.unique(step[rows], return_index=True)  # each N once: its first window
    rows = rows[np.sort(first)]
    s, e = start[rows], end[rows].copy()
    e[:-1] = np.minimum(e[:-1], s[1:])
    return pd.DataFrame({"step": step[rows], "start": s, "end": e}), list(best)


def _opt_int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
        return int(v)
    return None


def _meta(
    stream: EventStream,
    source: str,
    gpu: pd.DataFrame,
    cpu: pd.DataFrame,
    legacy: bool,
    extra: dict[str, Any],
) -> TraceMeta:
    doc = stream.header
    dist = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {}
    props = tuple(p for p in doc.deviceProperties or () if isinstance(p, dict))
    amd = any(
        any(m in str(p.get("name", "")) for m in AMD_MARKS) or "gcnArchName" in p for p in props
    )
    hip = (not cpu.empty) and bool(
        cpu.loc[cpu["kind"] == "cuda_runtime", "name"]
        .drop_duplicates()
        .map(lambda n: str(n).startswith("hip"))
        .any()
    )
    if gpu.empty:
        fmt = "cpu-only"
    elif hip or amd:
        fmt = "rocm"
    elif legacy:
        fmt = "kineto-2021"
    else:
        fmt = "kineto"
    backend = dist.get("backend")
    return TraceMeta(
        source=source,
        format=fmt,
        rank=_opt_int(dist.get("rank")),
        world_size=_opt_int(dist.get("world_size")),
        backend=str(backend) if backend is not None else None,
        device_properties=props,
        base_time_ns=_opt_int(doc.baseTimeNanoseconds),
        schema_version=_opt_int(doc.schemaVersion),
        trace_name=str(doc.traceName) if doc.traceName is not None else None,
        event_count=stream.event_count,
        extra=extra,
    )
