"""Decoded Kineto events to flat columns: the second stage of loading.

``collect(stream, source) -> Columns`` turns each batch of events from
:mod:`.read` into compact numpy columns as it arrives (strings
become int32 codes into one table of distinct values); :mod:`.frames`
then assembles the Timeline's frames from them. Collecting needs numpy and
msgspec only, not pandas, and :class:`Columns` pickles cheaply, so a worker
process can collect while its parent imports the analysis stack.
(:func:`traceprobe.load.pipeline.build` does both steps.)

It understands three dialects of the PyTorch Profiler's Chrome trace:

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
(``"stream 7"`` -> 7); external_id = ``args["External id"]``, else the 2021
spelling ``args["external id"]``; CPU ``pid``/``tid`` strings that are not numbers become
a stable hash (see :mod:`.coerce`). The rules for copies, ``comm``
and ``steps`` are in :mod:`.frames`; the categories and :class:`Columns` in :mod:`.schema`.

"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter
from typing import Any

import numpy as np

from traceprobe.errors import TraceError
from traceprobe.load import coerce
from traceprobe.load.read import REEXPORT, Event, EventStream
from traceprobe.load.schema import (
    GPU_CATEGORIES,
    SKIPPED_CATEGORIES,
    Columns,
)
from traceprobe.load.timestamps import us_to_ns

_GPU, _CPU, _SKIP = 0, 1, 2
# the Trace Event Format's phases besides "X"; any other (or none) is named in a warning
KNOWN_PHASES = frozenset("BEiInstfPCMObeNDTRcpSF()")
_NONE = b""  # an absent raw text


# --------------------------------------------------------------------------- public


def collect(stream: EventStream, source: str) -> Columns:
    """Consume ``stream`` batch by batch into :class:`Columns`."""
    c = Collector(source)
    for batch in stream:
        c.add(batch)
    cols = c.columns(stream)
    cols.batches = len(cols.rows)
    return cols


# --------------------------------------------------------------------------- collecting


class Collector:
    """Per-batch extraction into arrays; strings become codes into lookup tables.

    ``add(batch, k)`` takes batch number ``k`` of the file (by default the next
    one); :mod:`traceprobe.split` feeds it every n-th batch and merges the parts
    back into file order by ``Columns.rows``.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.cats: dict[str, int] = {}
        self.cat_group = np.empty(0, np.int8)  # _GPU, _CPU or _SKIP per category code
        self.names: dict[str, int] = {}
        self.texts: dict[bytes, int] = {_NONE: 0}  # raw JSON texts (input dims, grid ...)
        self.gpu: list[dict[str, Any]] = []
        self.cpu: list[dict[str, Any]] = []
        self.seen = 0  # events in earlier batches, to name an event's index
        self.complete = 0
        self.clamped = 0
        self.skipped: Counter[str] = Counter()
        self.span: list[int] = []
        self.sizes: dict[int, int] = {}
        self.size_batch: dict[int, int] = {}  # correlation -> the batch its size came from
        self.rows: list[tuple[int, int, int]] = []  # (batch, CPU rows, GPU rows) per batch
        self.lenient: Counter[str] = Counter()  # events read by a lenient rule, by rule

    def add(self, batch: list[Event], k: int | None = None) -> None:
        k = len(self.rows) if k is None else k
        xs = [e for e in batch if e.ph == "X"]
        if len(xs) < len(batch):
            phases = Counter(e.ph for e in batch if e.ph != "X")
            begin_end = phases["B"] + phases["E"]
            if begin_end:
                self.lenient["begin_end"] += begin_end
            for ph, n in phases.items():
                if ph not in KNOWN_PHASES:  # "", "Z", "x": not a phase traceprobe knows
                    self.lenient[f"ph:{ph[:20]}"] += n
        start, end = self._times(xs, batch)
        cat = coerce.encode([e.cat for e in xs], self.cats, self._new_cat)
        name = coerce.encode([e.name for e in xs], self.names)
        args = [e.args for e in xs]  # one attribute pass; the args' fields are read from it
        corr = coerce.int64([a.correlation for a in args])
        ext = coerce.int64([a.external_id for a in args])
        ext_2021 = [a.external_id_2021 for a in args]  # on GPU rows of 2021 traces
        if ext_2021.count(-1) != len(ext_2021):
            ext = np.where(ext < 0, coerce.int64(ext_2021), ext)
        group = self.cat_group[cat]
        no_cat = self.cats.get("")
        if no_cat is not None:
            self.lenient["no_cat"] += int((cat == no_cat).sum())
        self.complete += len(xs)
        self.seen += len(batch)

        ci = np.flatnonzero(group == _CPU)
        if len(ci):
            every = len(ci) == len(xs)
            evs = xs if every else _pick(xs, ci)
            cargs = args if every else _pick(args, ci)
            self.cpu.append(
                {
                    "cat": cat[ci],
                    "name": name[ci],
                    "pid": coerce.ids([e.pid for e in evs]),
                    "tid": coerce.ids([e.tid for e in evs]),
                    "start": start[ci],
                    "end": end[ci],
                    "correlation": corr[ci],
                    "external_id": ext[ci],
                }
            )
            self.cpu[-1].update(self._inputs(cargs))
            sizes = [a.size for a in cargs]
            if sizes.count(None) != len(sizes):  # ROCm: hipMemcpy* calls carry "size"
                for i, s in enumerate(sizes):
                    if s is not None:
                        c = coerce.to_int(cargs[i].correlation)
                        self.sizes[c] = coerce.to_int(s)
                        self.size_batch[c] = k
        gi = np.flatnonzero(group == _GPU)
        if len(gi):
            evs = _pick(xs, gi)
            gargs = _pick(args, gi)
            frm = [a.from_device for a in gargs]
            self.gpu.append(
                {
                    "cat": cat[gi],
                    "name": name[gi],
                    "start": start[gi],
                    "end": end[gi],
                    "correlation": corr[gi],
                    "external_id": ext[gi],
                    "device": self._devices(gargs, frm, evs),
                    "stream": coerce.with_fallback([a.stream for a in gargs],
                                                   [e.tid for e in evs]),
                    "bytes": _bytes([a.bytes for a in gargs]),
                    "from": coerce.int64(frm),
                    "to": coerce.int64([a.to_device for a in gargs]),
                    "kind_arg": [a.kind for a in gargs],
                    **self._launch(gargs),
                }
            )
        si = np.flatnonzero(group == _SKIP)
        if len(si):
            self._skip(cat[si], start[si], end[si])
        self.rows.append((k, len(ci), len(gi)))

    def _devices(self, args: list[Any], frm: list[Any], evs: list[Event]) -> np.ndarray:
        """args.device, else args.fromDevice, else the number in pid; a device that is
        given but is no whole number (``0.9``, a list) is unknown (-1), not a guess."""
        given = [a.device for a in args]
        device = coerce.with_fallback(given, frm, [e.pid for e in evs])
        if given.count(None) != len(given):
            junk = ((coerce.without_bools(given, coerce.int64(given)) < 0)
                    & np.array([d is not None for d in given]))
            if junk.any():
                device[junk] = -1
        return device

    def _raw(self, values: list[Any]) -> np.ndarray:
        """Raw JSON texts as codes into ``texts`` (0: absent). The batch's texts are joined
        into one buffer and split there, so no text outlives the batch unless it is new:
        the same few shapes repeat hundreds of thousands of times, and one object per event
        kept ~50 MB alive until the frames were built (:func:`traceprobe.load.frames._texts`
        decodes each distinct text once)."""
        # no NUL in JSON; an absent text (an empty Raw, or b"") joins as _NONE
        parts = b"\x00".join(values).split(b"\x00")
        table = self.texts
        try:  # after the first batches every text is known: one pass
            return np.fromiter(map(table.__getitem__, parts), np.int32, len(parts))
        except KeyError:
            for t in dict.fromkeys(parts):  # the batch's distinct texts, in order of appearance
                if t not in table:
                    table[t] = len(table)
            return np.fromiter(map(table.__getitem__, parts), np.int32, len(parts))

    def _inputs(self, args: list[Any]) -> dict[str, Any]:
        """CPU op inputs (``Input Dims``, ``Input type``, ``Concrete Inputs``) as raw JSON
        text, when recorded."""
        dims = [a.input_dims for a in args]
        if not any(dims):
            none = np.zeros(len(args), np.int32)
            return {"input_dims": none, "input_types": none.copy(),
                    "concrete_inputs": none.copy()}
        return {"input_dims": self._raw(dims),
                "input_types": self._raw([a.input_types for a in args]),
                "concrete_inputs": self._raw([a.concrete_inputs for a in args])}

    def _launch(self, args: list[Any]) -> dict[str, Any]:
        """Kernel launch figures (grid, block, registers, shared memory, occupancy)."""
        n = len(args)
        if not any(a.grid for a in args):
            nan = np.full(n, np.nan)
            return {"grid": np.zeros(n, np.int32), "block": np.zeros(n, np.int32),
                    "registers_per_thread": np.full(n, -1, np.int64),
                    "shared_memory": np.full(n, -1, np.int64), "blocks_per_sm": nan,
                    "warps_per_sm": nan.copy(), "occupancy": nan.copy()}
        return {
            "grid": self._raw([a.grid for a in args]),
            "block": self._raw([a.block for a in args]),
            "registers_per_thread": coerce.int64([a.registers for a in args]),
            "shared_memory": coerce.int64([a.shared_memory for a in args]),
            "blocks_per_sm": _floats([a.blocks_per_sm for a in args]),
            "warps_per_sm": _floats([a.warps_per_sm for a in args]),
            "occupancy": _floats([a.occupancy for a in args]),
        }

    def _new_cat(self, c: str) -> None:
        g = _GPU if c in GPU_CATEGORIES else _SKIP if c in SKIPPED_CATEGORIES else _CPU
        self.cat_group = np.append(self.cat_group, np.int8(g))

    def _skip(self, cat: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        names = list(self.cats)
        for c, k in zip(*np.unique(cat, return_counts=True), strict=True):
            self.skipped[names[int(c)]] += int(k)
        trace = cat == self.cats.get("Trace", -1)
        if trace.any():
            lo, hi = int(start[trace].min()), int(end[trace].max())
            if self.span:
                lo, hi = min(lo, self.span[0]), max(hi, self.span[1])
            self.span = [lo, hi]

    def _times(self, xs: list[Event], batch: list[Event]) -> tuple[np.ndarray, np.ndarray]:
        n = len(xs)
        tokens = [e.ts for e in xs]
        tokens += [e.dur for e in xs]
        ns, status = us_to_ns(tokens)  # ts and dur in one go: one buffer, one numpy pass
        del tokens
        start, st, dur, dst = ns[:n], status[:n], ns[n:], status[n:]
        if st.any():
            bad = np.flatnonzero(st)
            ev = xs[int(bad[0])]
            missing = int((st == 1).sum())
            what = (
                f"{missing} complete ('X') event(s) have no ts"
                if missing == len(bad)
                else f"{len(bad)} complete ('X') event(s) have a missing, non-numeric or "
                "out-of-range ts (beyond ±9.2e15 µs)"
            )
            raise TraceError(
                self.source,
                f"{what} (first: traceEvents[{self._index(batch, ev)}] {ev.name!r})",
                f"the trace is damaged; {REEXPORT}",
            )
        if (dst == 2).any():
            ev = xs[int(np.flatnonzero(dst == 2)[0])]
            raise TraceError(
                self.source,
                f"{int((dst == 2).sum())} event(s) have a non-numeric or out-of-range "
                f"dur (first: traceEvents[{self._index(batch, ev)}] "
                f"dur={bytes(ev.dur).decode(errors='replace')})",
                f"the trace is damaged; {REEXPORT}",
            )
        no_dur = int((dst == 1).sum())
        if no_dur:  # absent or null: zero-length, and the report says so
            self.lenient["no_dur"] += no_dur
        neg = dur < 0
        if neg.any():
            self.clamped += int(neg.sum())
            dur[neg] = 0
        over = start > np.iinfo(np.int64).max - dur
        if over.any():
            ev = xs[int(np.flatnonzero(over)[0])]
            raise TraceError(
                self.source,
                f"{int(over.sum())} event(s) end beyond the int64 nanosecond range "
                f"(first: traceEvents[{self._index(batch, ev)}] {ev.name!r})",
                f"the trace is damaged; {REEXPORT}",
            )
        return start, start + dur

    def _index(self, batch: list[Event], ev: Event) -> int:
        return self.seen + next(i for i, e in enumerate(batch) if e is ev)

    def columns(self, stream: EventStream) -> Columns:
        return Columns(
            source=self.source,
            cats=list(self.cats),
            names=list(self.names),
            texts=list(self.texts),
            cpu=_concat(self.cpu),
            gpu=_concat(self.gpu),
            header=stream.header,
            event_count=stream.event_count,
            complete=self.complete,
            clamped=self.clamped,
            skipped=dict(self.skipped),
            span=self.span,
            sizes=self.sizes,
            size_batch=self.size_batch,
            rows=self.rows,
            salvaged=stream.salvaged,
            warnings=list(stream.warnings),
            notes={"lenient": dict(self.lenient)} if self.lenient else {},
        )


def _pick(items: list[Any], at: np.ndarray) -> list[Any]:
    """``[items[i] for i in at]``, the loop in C (``operator.itemgetter``)."""
    if len(at) == 1:
        return [items[int(at[0])]]
    return list(itemgetter(*at.tolist())(items))


def _bytes(values: list[Any]) -> np.ndarray:
    return coerce.without_bools(values, coerce.int64(values))


def _floats(values: list[Any]) -> np.ndarray:
    """Numbers to float64; None and anything else become NaN."""
    try:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                         for v in values], dtype=np.float64)


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
