"""Bytes to decoded events: the first stage of loading a trace.

``read_events(path) -> EventStream`` opens a file (plain or gzip, told apart by
the magic bytes, not the name) and yields the events in batches, decoded by
msgspec into :class:`Event` structs that hold only the fields traceprobe uses.
The file is decompressed and decoded piece by piece: the ``traceEvents`` array
is cut between whole events (``}`` , ``{``) into batches of about
``BATCH_BYTES``, so neither the whole JSON text nor all the structs are in
memory at once. Top-level fields (``deviceProperties``, ``distributedInfo`` ...)
land in ``stream.header`` once the stream is consumed. When the layout is
unusual (no ``"traceEvents"`` key found, a cut that is not between events) the
stream falls back to decoding the whole text at once; results are the same.

Every failure is one :class:`~traceprobe.errors.TraceError` that names the
file, the problem and the fix.

Timestamps stay text: ``ts`` and ``dur`` are ``msgspec.Raw`` (the number
exactly as written); :func:`traceprobe.timestamps.us_to_ns` (re-exported here)
turns a batch of them into exact int64 nanoseconds.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from traceprobe.errors import TraceError
from traceprobe.load.timestamps import us_to_ns

__all__ = [
    "Document",
    "Event",
    "EventStream",
    "decode_document",
    "decode_events",
    "read_chunks",
    "read_events",
    "us_to_ns",
]

GZIP_MAGIC = b"\x1f\x8b"
REEXPORT = (
    "re-export the trace with torch.profiler's export_chrome_trace or tensorboard_trace_handler"
)
BATCH_BYTES = 1 << 20  # JSON text decoded at a time (bounds the memory for structs)
READ_BYTES = 1 << 16  # compressed bytes read at a time (about 1 MB of JSON)

_EMPTY = msgspec.Raw(b"")

try:  # ISA-L inflates about 3x as fast as zlib, with the same interface; optional
    from isal import isal_zlib as _inflate

    _INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _inflate.error)  # type: ignore[assignment]
except ImportError:
    _inflate = zlib  # type: ignore[misc, unused-ignore]
    _INFLATE_ERRORS = (zlib.error,)


class Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` fields traceprobe reads. Values are left untyped (``Any``):
    Kineto writes ``"stream": 7`` on a kernel but ``"stream": "0x0"`` on a HIP call."""

    device: Any = None
    stream: Any = None
    correlation: Any = -1
    external_id: Any = msgspec.field(name="External id", default=-1)
    external_id_2021: Any = msgspec.field(name="external id", default=-1)
    bytes: Any = -1
    kind: Any = None
    from_device: Any = msgspec.field(name="fromDevice", default=None)
    to_device: Any = msgspec.field(name="toDevice", default=None)
    size: Any = None
    # kernel launch figures and CPU op inputs: kept as raw JSON text (cheap to skip over)
    grid: msgspec.Raw = _EMPTY
    block: msgspec.Raw = _EMPTY
    registers: Any = msgspec.field(name="registers per thread", default=None)
    shared_memory: Any = msgspec.field(name="shared memory", default=None)
    blocks_per_sm: Any = msgspec.field(name="blocks per SM", default=None)
    warps_per_sm: Any = msgspec.field(name="warps per SM", default=None)
    occupancy: Any = msgspec.field(name="est. achieved occupancy %", default=None)
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_EMPTY)
    input_types: msgspec.Raw = msgspec.field(name="Input type", default=_EMPTY)


NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    """One trace event; ``ts``/``dur`` as the exact JSON text (empty if absent)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: msgspec.Raw = _EMPTY
    dur: msgspec.Raw = _EMPTY
    args: Args = NO_ARGS


class Document(msgspec.Struct, gc=False):
    """The top-level trace object; a bare event list becomes ``Document(traceEvents=...)``."""

    traceEvents: list[Event] | None = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    schemaVersion: Any = None
    traceName: Any = None
    displayTimeUnit: Any = None


_DOC = msgspec.json.Decoder(Document | list[Event])
_EVENTS = msgspec.json.Decoder(list[Event])
_HEAD = msgspec.json.Decoder(Document)
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"


# --------------------------------------------------------------------------- bytes


def read_chunks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The file's bytes in pieces, gunzipped when they start with the gzip magic."""
    p = Path(path)
    try:
        f = p.open("rb")
    except FileNotFoundError:
        raise TraceError(p, "no such file", "check the path") from None
    except IsADirectoryError:
        raise TraceError(
            p,
            "is a directory, not a trace file",
            "use load_many() or find_traces() for a directory",
        ) from None
    except PermissionError:
        raise TraceError(
            p, "cannot read the file (permission denied)", "check the file's permissions"
        ) from None
    except OSError as e:
        raise TraceError(
            p, f"cannot read the file ({e.strerror or e})", "check the file and the disk"
        ) from None
    with f:
        first = _read(f, p, READ_BYTES)
        if not first:
            raise TraceError(
                p,
                "the file is empty (0 bytes)",
                f"the profiler probably stopped before writing; {REEXPORT}",
            )
        if first[:2] == GZIP_MAGIC:
            yield from _gunzip(first, f, p)
            return
        yield first
        while block := _read(f, p, BATCH_BYTES):
            yield block


def _read(f: Any, p: Path, n: int) -> bytes:
    try:
        return f.read(n)
    except OSError as e:
        raise TraceError(
            p, f"cannot read the file ({e.strerror or e})", "check the file and the disk"
        ) from None


def _gunzip(first: bytes, f: Any, p: Path) -> Iterator[bytes]:
    def corrupt(why: str) -> TraceError:
        return TraceError(
            p,
            f"the gzip data is {why}",
            f"copy the file again or {REEXPORT}; `gzip -t FILE` tests it",
        )

    d = _inflate.decompressobj(wbits=31)
    block, produced = first, 0
    while block:
        try:
            out = d.decompress(block)
            while d.eof and d.unused_data:  # concatenated gzip members
                rest = d.unused_data
                d = _inflate.decompressobj(wbits=31)
                out += d.decompress(rest)
        except _INFLATE_ERRORS as e:
            raise corrupt(f"corrupt ({e})") from None
        if out:
            produced += len(out)
            yield out
        block = _read(f, p, READ_BYTES)
    if not d.eof:
        raise corrupt(f"truncated (it ends after {produced:,} bytes of JSON)")
    if not produced:
        raise TraceError(
            p,
            "the gzip file holds no data",
            f"the profiler probably stopped before writing; {REEXPORT}",
        )


# --------------------------------------------------------------------------- events


class EventStream:
    """Batches of decoded events from JSON text that arrives in chunks.

    Iterate once; afterwards ``header`` holds the top-level fields and
    ``event_count`` the number of events (of every phase).
    """

    def __init__(
        self, chunks: Iterable[bytes], source: str, batch_bytes: int = BATCH_BYTES
    ) -> None:
        self.chunks = chunks
        self.source = source
        self.batch_bytes = batch_bytes
        self.header = Document()
        self.event_count = 0

    def __iter__(self) -> Iterator[list[Event]]:
        it = iter(self.chunks)
        buf = b""
        start: int | None = None
        for chunk in it:
            buf = buf + chunk if buf else chunk
            start, listform = self._events_start(buf)
            if start is not None:
                break
        if start is None or start < 0:  # no event array found: decode the text whole
            yield from self._whole(b"".join([buf, *it]))
            return
        consumed = start
        buf = buf[start:]
        for chunk in it:
            buf = buf + chunk if buf else chunk
            if len(buf) < self.batch_bytes:
                continue
            batch, cut = self._batch(buf, consumed, listform)
            if batch is not None:
                yield self._count(batch)
                buf = buf[cut:]
                consumed += cut
        yield from self._tail(buf, consumed, listform)

    # -- the pieces

    def _count(self, batch: list[Event]) -> list[Event]:
        self.event_count += len(batch)
        return batch

    def _events_start(self, buf: bytes) -> tuple[int | None, bool]:
        """(offset just past the ``[`` of the event array, whether the document is a
        bare list); offset -1: decode the text whole; None: more text is needed."""
        i = _skip_ws(buf, 3 if buf[:3] == b"\xef\xbb\xbf" else 0)
        if i == len(buf):
            return None, False
        if buf[i : i + 1] == b"[":
            return i + 1, True
        if buf[i : i + 1] != b"{":
            return -1, False
        m = _KEY.search(buf, i)
        if m is None:
            return None, False
        try:  # everything before the key, closed: the top-level fields that come first
            self.header = _HEAD.decode(b"".join([buf[i : m.start()], b'"traceEvents":[]}']))
        except msgspec.DecodeError:
            return -1, False  # the key sits somewhere unusual: let the whole decode judge
        return m.end(), False

    def _batch(self, buf: bytes, consumed: int, listform: bool) -> tuple[list[Event] | None, int]:
        """Decode the whole events at the front of ``buf``; (None, 0) if no safe cut.

        A cut inside a nested value or a string shows as JSON that ends too early
        (at the cut); an error before the cut is in the file itself.
        """
        end = len(buf)
        for _ in range(32):
            end = buf.rfind(b"}", 0, end)
            if end < 0:
                break
            j = _skip_ws(buf, end + 1)
            if buf[j : j + 1] != b",":
                continue
            k = _skip_ws(buf, j + 1)
            if buf[k : k + 1] != b"{":
                continue
            data = b"".join([b"[", memoryview(buf)[: end + 1], b"]"])
            try:
                batch = _EVENTS.decode(data)
            except msgspec.ValidationError as e:
                raise _validation_error(self.source, str(e), self.event_count, listform) from None
            except msgspec.DecodeError as e:
                at = re.search(r"\(byte (\d+)\)", str(e))
                if at and int(at.group(1)) < len(data) - 1:
                    raise _decode_error(data, self.source, e, consumed - 1) from None
                continue  # the cut fell inside a nested value or string: try an earlier one
            return batch, k
        return None, 0

    def _tail(self, buf: bytes, consumed: int, listform: bool) -> Iterator[list[Event]]:
        prefix = b"[" if listform else b'{"traceEvents":['
        data = b"".join([prefix, buf])
        try:
            doc = _DOC.decode(data)
        except msgspec.ValidationError as e:
            raise _validation_error(self.source, str(e), self.event_count, listform) from None
        except msgspec.DecodeError as e:
            raise _decode_error(data, self.source, e, consumed - len(prefix)) from None
        if isinstance(doc, list):
            yield self._count(doc)
            return
        events = doc.traceEvents or []
        head = self.header
        self.header = Document(
            **{
                f: getattr(head, f) if getattr(doc, f) is None else getattr(doc, f)
                for f in Document.__struct_fields__
                if f != "traceEvents"
            }
        )
        yield self._count(events)

    def _whole(self, data: bytes) -> Iterator[list[Event]]:
        doc = decode_document(data, self.source)
        events = doc.traceEvents or []
        doc.traceEvents = None
        self.header = doc
        yield self._count(events)


def _skip_ws(buf: bytes, i: int) -> int:
    while i < len(buf) and buf[i] in _WS:
        i += 1
    return i


def read_events(path: str | os.PathLike[str]) -> EventStream:
    """The events of one trace file, in batches (see :class:`EventStream`)."""
    return EventStream(read_chunks(path), str(path))


def decode_events(data: bytes) -> list[Event]:
    """A JSON array of events; msgspec's errors are raised as they are."""
    return _EVENTS.decode(data)


def decode_document(data: bytes, source: str) -> Document:
    """Decode a whole Chrome-trace JSON text (an object with ``traceEvents`` or an event list)."""
    if data[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark, as some editors write
        data = data[3:]
    try:
        doc = _DOC.decode(data)
    except msgspec.ValidationError as e:
        raise _validation_error(source, str(e), 0, data.lstrip()[:1] == b"[") from None
    except msgspec.DecodeError as e:
        raise _decode_error(data, source, e, 0) from None
    if isinstance(doc, list):
        return Document(traceEvents=doc)
    if doc.traceEvents is None:
        raise _no_events_error(data, source)
    return doc


# --------------------------------------------------------------------------- errors


def _decode_error(data: bytes, source: str, e: msgspec.DecodeError, offset: int) -> TraceError:
    msg = str(e)
    if "truncated" in msg:
        return TraceError(
            source,
            "truncated JSON: the text ends mid-document",
            f"the write was probably interrupted; {REEXPORT}",
        )
    if offset == 0 and data.lstrip(b"\xef\xbb\xbf" + _WS)[:1] not in (b"{", b"["):
        return TraceError(
            source,
            "not JSON (it does not start with '{' or '[')",
            f"pass a Chrome-trace .json or .json.gz file; {REEXPORT}",
        )
    msg = re.sub(r"\(byte (\d+)\)", lambda m: f"(byte {int(m.group(1)) + offset})", msg)
    return TraceError(source, f"not valid JSON ({msg})", REEXPORT)


def _validation_error(source: str, msg: str, offset: int, listform: bool) -> TraceError:
    problem, _, where = msg.partition(" - at ")
    where = where.strip("`")
    got = problem.rsplit("got ", 1)[-1].strip("`") if "got " in problem else "other value"
    fix = f"pass a Chrome-trace file; {REEXPORT}"
    m = re.match(r"\$(?:\.traceEvents)?\[(\d+)\](.*)", where)
    if m:  # an event's index, counted in the whole file
        index = int(m.group(1)) + offset
        if not m.group(2):
            if listform:
                return TraceError(
                    source,
                    f"the top-level list holds {_a(got)} at index {index}, not event objects",
                    fix,
                )
            return TraceError(
                source, f"traceEvents[{index}] is {_a(got)}, not an event object", fix
            )
        where = f"traceEvents[{index}]{m.group(2)}"
    if where in ("", "$"):
        return TraceError(
            source,
            f"the top-level JSON value is {_a(got)}, not a trace object or a list of events",
            fix,
        )
    if where == "$.traceEvents":
        return TraceError(source, f'"traceEvents" is {_a(got)}, not a list of events', fix)
    return TraceError(
        source,
        f"unexpected value at {where}: {problem}",
        f"the file does not follow the Chrome trace format; {REEXPORT}",
    )


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _no_events_error(data: bytes, source: str) -> TraceError:
    keys = list(msgspec.json.decode(data, type=dict[str, msgspec.Raw]))
    shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
    return TraceError(
        source,
        f'a JSON object without "traceEvents" (keys: {shown or "none"})',
        f"this is not a Chrome trace; {REEXPORT}",
    )
