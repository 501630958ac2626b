"""One trace file decoded by several processes at once, each taking every n-th batch.

    collect_part(path, part, parts) -> Columns      in a worker: batches k ≡ part (mod parts)
    merge([Columns, ...]) -> Columns                 in the parent: back into file order

A gzip stream cannot be entered in the middle, so every part reads and gunzips
the whole file (the cheap step, about a sixth of the work) and decodes only
its own batches (the expensive step). The parts must agree on where batches
start without decoding each other's, so the cuts are fixed by the text alone:
batch k+1 starts at the first ``}`` , ``{`` (JSON whitespace allowed around the
comma) at least ``BATCH_BYTES`` after the start of batch k.

Such a cut is a guess: ``}, {`` can sit inside a string or a nested value. It
is checked afterwards, by induction: the event array starts at a true element
boundary, and when the text from a true boundary up to the next cut decodes as
a list of whole events, that cut is a true boundary too. So when every part
decoded every one of its batches (and the part with the last batch decoded the
end of the document), the result is exactly what one sequential decode gives.
Anything else (a bad guess, a damaged file, an unusual layout) raises, and
the caller loads the file sequentially instead, which gives the one canonical
error message or the right result.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np

from traceprobe.errors import TraceError
from traceprobe.load.columns import Collector
from traceprobe.load.read import BATCH_BYTES, Event, EventStream, FileChunks, decode_events
from traceprobe.load.schema import Columns

_CUT = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


class Unsplittable(Exception):
    """The parts cannot give the sequential result; load the file sequentially.

    The one expected failure of a split, raised when a guessed cut does not parse
    (a ``}, {`` inside a string or a nested value), the layout is unusual, or the text
    cannot be decoded in parts (a damaged or cut-short file, raw control characters,
    a duplicate key): the sequential read then gives the one canonical result or error.
    Anything else a part raises is a bug and propagates.
    """


class PartStream(EventStream):
    """Batch ``k`` of the events, as ``(k, events)``, for every k ≡ ``part`` (mod ``parts``).

    After iteration ``batches`` is the number of batches in the whole file.
    """

    def __init__(
        self, chunks: Any, source: str, part: int, parts: int, batch_bytes: int = BATCH_BYTES
    ) -> None:
        super().__init__(chunks, source, batch_bytes)
        self.part, self.parts = part, parts
        self.batches = 0

    def __iter__(self) -> Iterator[tuple[int, list[Event]]]:  # type: ignore[override]
        try:
            yield from self._parts()
        except (msgspec.DecodeError, RecursionError) as e:
            raise Unsplittable(f"{self.source}: a part does not parse ({e})") from None
        except TraceError as e:  # its event index counts only this part's events
            raise Unsplittable(f"{self.source}: a part found a problem ({e.problem})") from None
        if self.keys > 1 or self.salvaged is not None or getattr(self.chunks, "cut", None):
            raise Unsplittable(f"{self.source}: a duplicate key or a cut-short file")

    def _parts(self) -> Iterator[tuple[int, list[Event]]]:
        it = self._watch(iter(self.chunks))
        buf = b""
        start: int | None = None
        listform = False
        for chunk in it:
            buf = buf + chunk if buf else chunk
            start, listform = self._events_start(buf)
            if start is not None:
                break
        if start is None or start < 0:
            raise Unsplittable(self.source)
        buf = buf[start:]
        k = 0
        for chunk in it:
            buf = buf + chunk if buf else chunk
            while len(buf) > self.batch_bytes:
                m = _CUT.search(buf, self.batch_bytes)
                if m is None:
                    break  # the next cut is in text still to come
                if k % self.parts == self.part:
                    data = b"".join([b"[", memoryview(buf)[: m.start() + 1], b"]"])
                    yield k, self._count(decode_events(data))
                buf = buf[m.end() - 1 :]
                k += 1
        self.batches = k + 1
        if k % self.parts == self.part:  # the last batch and the rest of the document
            for events in self._tail(buf, 0, listform):
                yield k, events


def collect_part(path: str | os.PathLike[str], part: int, parts: int) -> Columns:
    """The columns of one part of a file (see the module docstring); raises
    :class:`Unsplittable` on any doubt about the text."""
    stream = PartStream(FileChunks(path), str(path), part, parts)
    c = Collector(str(path))
    try:
        for k, batch in stream:
            c.add(batch, k)
    except TraceError as e:  # from the collector: its event index counts only this part
        raise Unsplittable(f"{path}: a part found a problem ({e.problem})") from None
    cols = c.columns(stream)
    cols.batches = stream.batches
    return cols


def merge(parts: list[Columns]) -> Columns:
    """The parts of one file (``parts[i]`` took batches k ≡ i), as one sequential collect."""
    n = parts[0].batches
    if any(p.batches != n for p in parts) or sorted(r[0] for p in parts for r in p.rows) != list(
        range(n)
    ):
        raise Unsplittable(f"{parts[0].source}: the parts do not cover the file's batches")
    cats: dict[str, int] = {}
    names: dict[str, int] = {}
    texts: dict[bytes, int] = {b"": 0}
    recode = {
        "cat": [_codes(p.cats, cats) for p in parts],
        "name": [_codes(p.names, names) for p in parts],
    }
    text_codes = [_codes(p.texts, texts) for p in parts]
    recode.update({k: text_codes for k in ("input_dims", "input_types", "concrete_inputs", "grid",
                                         "block")})
    order = sorted((k, i, j) for i, p in enumerate(parts) for j, (k, _, _) in enumerate(p.rows))
    last = parts[(n - 1) % len(parts)]  # read the end of the document, after the events
    skipped: Counter[str] = Counter()
    sizes: dict[int, tuple[int, int]] = {}  # correlation -> (batch, size): the last batch wins
    for p in parts:
        skipped.update(p.skipped)
        for c, s in p.sizes.items():
            at = p.size_batch.get(c, -1)
            if c not in sizes or at > sizes[c][0]:
                sizes[c] = (at, s)
    lenient: Counter[str] = Counter()
    for p in parts:
        lenient.update(p.notes.get("lenient", {}))
    spans = [p.span for p in parts if p.span]
    return Columns(
        source=parts[0].source,
        cats=list(cats),
        names=list(names),
        texts=list(texts),
        cpu=_interleave(
            [p.cpu for p in parts], [[r[1] for r in p.rows] for p in parts], order, recode
        ),
        gpu=_interleave(
            [p.gpu for p in parts], [[r[2] for r in p.rows] for p in parts], order, recode
        ),
        header=last.header,
        event_count=sum(p.event_count for p in parts),
        complete=sum(p.complete for p in parts),
        clamped=sum(p.clamped for p in parts),
        skipped=dict(skipped),
        span=[min(s[0] for s in spans), max(s[1] for s in spans)] if spans else [],
        sizes={c: s for c, (_, s) in sizes.items()},
        size_batch={c: at for c, (at, _) in sizes.items()},
        rows=[(k, *parts[i].rows[j][1:]) for k, i, j in order],
        batches=n,
        notes={"lenient": dict(lenient)} if lenient else {},
        warnings=list(dict.fromkeys(w for p in parts for w in p.warnings)),
    )


def _codes(values: list[Any], table: dict[Any, int]) -> np.ndarray:
    """For each local code, the code of the same string (or text) in the merged ``table``."""
    return np.array([table.setdefault(v, len(table)) for v in values], np.int32)


def _interleave(
    cols: list[dict[str, Any]],
    counts: list[list[int]],
    order: list[tuple[int, int, int]],
    recode: dict[str, list[np.ndarray]],
) -> dict[str, Any]:
    """The parts' rows of one kind (CPU or GPU) in batch order, string codes made common."""
    keys = next((list(c) for c in cols if c), None)
    if keys is None:
        return {}
    base = np.cumsum([0] + [len(c["start"]) if c else 0 for c in cols])
    first = [np.cumsum([0, *cs]) for cs in counts]  # where each batch starts in its part
    pieces = [
        np.arange(base[i] + first[i][j], base[i] + first[i][j + 1])
        for _, i, j in order
        if counts[i][j]
    ]
    take = np.concatenate(pieces) if pieces else np.empty(0, np.int64)
    out: dict[str, Any] = {}
    for key in keys:
        values = []
        for i, c in enumerate(cols):
            if not c:
                continue
            v = c.pop(key)
            values.append(recode[key][i][v] if key in recode else v)
        if isinstance(values[0], np.ndarray):
            out[key] = np.concatenate(values)[take]
        else:
            flat = [x for v in values for x in v]
            out[key] = [flat[t] for t in take.tolist()]
        del values
    return out
