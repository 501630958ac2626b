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
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

from traceprobe.errors import TraceError
from traceprobe.load.files import (  # re-exported: the bytes stage, in its own module
    BATCH_BYTES,
    GZIP_MAGIC,
    READ_BYTES,
    REEXPORT,
    FileChunks,
    read_chunks,
)
from traceprobe.load.timestamps import us_to_ns

__all__ = [
    "BATCH_BYTES",
    "GZIP_MAGIC",
    "READ_BYTES",
    "REEXPORT",
    "FileChunks",
    "Document",
    "Event",
    "EventStream",
    "decode_document",
    "decode_events",
    "read_chunks",
    "read_events",
    "us_to_ns",
]

_EMPTY = msgspec.Raw(b"")


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
    concrete_inputs: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=_EMPTY)


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
    traceprobeUnprofiled: Any = None  # the recorder's unprofiled timing (graph/calibrate.py)


_DOC = msgspec.json.Decoder(Document | list[Event])
_EVENTS = msgspec.json.Decoder(list[Event])
_HEAD = msgspec.json.Decoder(Document)
_SKIP_LIST = msgspec.json.Decoder(list[msgspec.Raw])  # finds where a list ends, cheaply
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"
_ANY_KEY = re.compile(rb'(?<!\\)"traceEvents"\s*:')
# raw control characters (JSON allows them only escaped) -> spaces; outside strings they
# are whitespace (tab, CR, LF) or invalid anyway
_CONTROLS = bytes(b if b >= 0x20 else 0x20 for b in range(256))
_CONTROLS_NOTE = "raw control characters (or line breaks) inside strings were read as spaces"
_SALVAGE_TRIES = 256  # cuts tried backwards from the end of a cut-short text


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
        self.salvaged: dict[str, Any] | None = None  # set when the text ends mid-document
        self.warnings: list[str] = []  # what was read leniently, for the report
        self.keys = 0  # top-level "traceEvents" keys seen (more than one is refused)
        self._kept_to = 0  # offset just past the last event of the batches yielded

    def __iter__(self) -> Iterator[list[Event]]:
        yield from self._events()
        self._finish()

    def _events(self) -> Iterator[list[Event]]:
        # the "traceEvents" keys are counted in the text before the event array and after
        # it (in the tail), not in the batches between: those lie inside the array, and
        # scanning all of the text cost 3% of a whole analysis
        it = iter(self.chunks)
        buf = b""
        start: int | None = None
        skipped = 0  # leading whitespace dropped as it arrives: each byte is scanned once
        for chunk in it:
            buf = buf + chunk if buf else chunk
            buf, skipped = _drop_leading_ws(buf, skipped)
            start, listform = self._events_start(buf)
            if start is not None:
                break
        if start is None or start < 0:  # no event array found: decode the text whole
            data = b"".join([buf, *it])
            self.keys += _count_keys(data)
            yield from self._whole(data)
            return
        self.keys += _count_keys(buf[:start])
        consumed = skipped + start
        buf = buf[start:]
        wait_for = self.batch_bytes  # a failed try waits for twice the text: linear time
        for chunk in it:
            if len(buf) + len(chunk) < wait_for:
                buf = buf + chunk if buf else chunk
                continue
            # the cut is looked for in the new chunk first, so that the batch's text is
            # copied once (into the decoded text), not also into a joined buffer
            batch, cut = self._batch(buf, chunk, consumed, listform)
            if batch is None and buf:  # none there: in the whole text, joined
                buf, chunk = b"", buf + chunk
                batch, cut = self._batch(buf, chunk, consumed, listform)
            if batch is not None:
                yield self._count(batch)
                buf = chunk[cut - len(buf) :]
                consumed += cut
                wait_for = self.batch_bytes
            else:  # no cut found (a long string, a run of whitespace): not again per chunk
                buf = buf + chunk if buf else chunk
                wait_for = 2 * len(buf)
        yield from self._tail(buf, consumed, listform)

    # -- the pieces

    def _watch(self, it: Iterator[bytes]) -> Iterator[bytes]:
        """The chunks, counting the ``"traceEvents":`` keys on the way (one pass, cheap)."""
        tail = b""
        for chunk in it:
            # a fast scan of the chunk, and of the seam with the previous one, first: the
            # regex's lookbehind is slow, and joining every chunk to the tail copies it all
            seam = tail + chunk[:24]
            if b'"traceEvents"' in chunk or b'"traceEvents"' in seam:
                text = tail + chunk
                self.keys += sum(1 for m in _ANY_KEY.finditer(text) if m.end() > len(tail))
            tail = (tail + chunk)[-24:] if len(chunk) < 24 else chunk[-24:]
            yield chunk

    def _finish(self) -> None:
        if self.keys > 1:
            raise TraceError(
                self.source,
                f'the key "traceEvents" appears {self.keys} times; which list is the trace is '
                "ambiguous (JSON readers disagree)",
                f"keep one event list; {REEXPORT}",
            )
        cut = getattr(self.chunks, "cut", None)
        if cut is not None and self.salvaged is None:  # the JSON inside was whole
            self.warnings.append(
                "the gzip stream lacks its end (trailer), but the JSON inside is complete"
            )
        trailing = getattr(self.chunks, "trailing", 0)
        if trailing:
            self.warnings.append(f"{trailing:,} bytes after the gzip data were ignored")

    def _decode(self, decoder: Any, data: bytes) -> Any:
        """``decoder.decode(data)``; raw control characters in strings (which Kineto
        writes in some names, pytorch#136180) become spaces and are counted."""
        try:
            return decoder.decode(data)
        except msgspec.DecodeError as e:
            fixed = _without_controls(data, e)
            if fixed is None:
                raise
            if _CONTROLS_NOTE not in self.warnings:
                self.warnings.append(_CONTROLS_NOTE)
            return decoder.decode(fixed)

    def _salvage(self, buf: bytes, consumed: int, listform: bool) -> list[Event]:
        """The complete events at the front of ``buf`` (the text after the last whole
        batch, cut short). ``[`` + a prefix + ``]`` parses only when the prefix ends
        just after a whole element (inside a string or a nested value the added ``]``
        cannot close it), so the events kept are exactly those that end before the cut.
        """
        reason = (
            "the gzip stream ends early (the file is cut short)"
            if getattr(self.chunks, "cut", None) is not None
            else "the JSON text ends mid-document (the file is cut short)"
        )
        kept: list[Event] = []
        end = len(buf)
        for _ in range(_SALVAGE_TRIES):
            end = buf.rfind(b"}", 0, end)
            if end < 0:
                break
            j = _skip_ws(buf, end + 1)
            if j < len(buf) and buf[j : j + 1] not in (b",", b"]"):
                continue
            try:
                kept = self._decode(_EVENTS, b"".join([b"[", memoryview(buf)[: end + 1], b"]"]))
            except msgspec.ValidationError as e:
                raise _validation_error(self.source, str(e), self.event_count, listform) from None
            except (msgspec.DecodeError, RecursionError):
                continue
            self._kept_to = consumed + end + 1
            break
        if not kept and not self.event_count:
            cut = getattr(self.chunks, "cut", None)
            if cut is not None:
                raise cut
            raise TraceError(
                self.source,
                "truncated JSON: the text ends mid-document, before any complete event",
                f"the write was probably interrupted; {REEXPORT}",
            )
        self.salvaged = {
            "events_kept": self.event_count + len(kept),
            "bytes_read": self._kept_to,
            "reason": reason,
        }
        return kept

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
        except (msgspec.DecodeError, RecursionError):
            return -1, False  # the key sits somewhere unusual: let the whole decode judge
        return m.end(), False

    def _batch(
        self, head: bytes, buf: bytes, consumed: int, listform: bool
    ) -> tuple[list[Event] | None, int]:
        """Decode the whole events at the front of ``head + buf``, cut inside ``buf``;
        (None, 0) if no safe cut there. The cut is an offset into ``head + buf``.

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
            data = b"".join([b"[", head, memoryview(buf)[: end + 1], b"]"])
            try:
                batch = self._decode(_EVENTS, data)
            except msgspec.ValidationError as e:
                raise _validation_error(self.source, str(e), self.event_count, listform) from None
            except msgspec.DecodeError as e:
                at = re.search(r"\(byte (\d+)\)", str(e))
                if at and int(at.group(1)) < len(data) - 1:
                    raise _decode_error(data, self.source, e, consumed - 1) from None
                continue  # the cut fell inside a nested value or string: try an earlier one
            except RecursionError:
                raise _nesting_error(self.source) from None
            self._kept_to = consumed + len(head) + end + 1
            return batch, len(head) + k
        return None, 0

    def _tail(self, buf: bytes, consumed: int, listform: bool) -> Iterator[list[Event]]:
        self.keys += _keys_after_events(buf)
        prefix = b"[" if listform else b'{"traceEvents":['
        data = b"".join([prefix, buf])
        try:
            doc = self._decode(_DOC, data)
        except msgspec.ValidationError as e:
            raise _validation_error(self.source, str(e), self.event_count, listform) from None
        except msgspec.DecodeError as e:
            if _is_cut(data, e):
                yield self._count(self._salvage(buf, consumed, listform))
                return
            raise _decode_error(data, self.source, e, consumed - len(prefix)) from None
        except RecursionError:
            raise _nesting_error(self.source) from None
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
        try:
            _DOC.decode(data)
        except msgspec.DecodeError as e:
            fixed = _without_controls(data, e)
            if fixed is not None:
                data = fixed
                self.warnings.append(_CONTROLS_NOTE)
        except (msgspec.ValidationError, RecursionError):
            pass  # decode_document says what is wrong
        doc = decode_document(data, self.source)
        events = doc.traceEvents or []
        doc.traceEvents = None
        self.header = doc
        yield self._count(events)


def _count_keys(text: bytes) -> int:
    """``"traceEvents":`` keys in ``text`` (one not after a backslash: not in a string)."""
    return sum(1 for _ in _ANY_KEY.finditer(text)) if b'"traceEvents"' in text else 0


def _keys_after_events(tail: bytes) -> int:
    """The ``"traceEvents":`` keys in the text after the event array that ``tail`` (the
    array's last events, the ``]`` and the rest of the document) closes; where that end
    cannot be told (a text cut short, control characters), in all of ``tail``."""
    if b'"traceEvents"' not in tail:
        return 0
    try:
        _SKIP_LIST.decode(b"".join([b"[", tail]))
    except msgspec.DecodeError as e:
        at = re.search(r"trailing characters \(byte (\d+)\)", str(e))
        if at is not None:  # the byte just after the array's "]", counted from the "["
            return _count_keys(tail[int(at.group(1)) - 1 :])
    except RecursionError:
        pass
    else:
        return 0  # the tail ends with the array: a document that is a bare list
    return _count_keys(tail)


def _is_cut(data: bytes, e: msgspec.DecodeError) -> bool:
    """Whether a decode error means the text stops early (rather than a wrong byte):
    msgspec's "truncated", or a number that the end of the text cut (``"ts":1.``)."""
    msg = str(e)
    if "truncated" in msg:
        return True
    at = re.search(r"\(byte (\d+)\)", msg)
    return "invalid number" in msg and at is not None and int(at.group(1)) >= len(data) - 1


def _without_controls(data: bytes, e: msgspec.DecodeError) -> bytes | None:
    """``data`` with raw control characters as spaces, when ``e`` is about one."""
    at = re.search(r"invalid character \(byte (\d+)\)", str(e))
    if at is None or int(at.group(1)) >= len(data) or data[int(at.group(1))] >= 0x20:
        return None
    return data.translate(_CONTROLS)


def _nesting_error(source: str) -> TraceError:
    return TraceError(
        source,
        "JSON nested too deeply to read (thousands of levels)",
        f"the file is not a profiler trace or is damaged; {REEXPORT}",
    )


_NON_WS = re.compile(rb"[^ \t\r\n]")
_BOM = b"\xef\xbb\xbf"


def _skip_ws(buf: bytes, i: int) -> int:
    """The offset of the first byte from ``i`` on that is not JSON whitespace (C speed)."""
    m = _NON_WS.search(buf, i)
    return m.start() if m else len(buf)


def _drop_leading_ws(buf: bytes, skipped: int) -> tuple[bytes, int]:
    """``buf`` without the whitespace at its front (after a byte-order mark at the file's
    start), and the count of bytes dropped so far: megabytes of leading spaces cost one
    pass, not one per chunk."""
    head = 3 if skipped == 0 and buf[:3] == _BOM else 0
    end = _skip_ws(buf, head)
    if end == head:
        return buf, skipped
    return (buf[:head] + buf[end:]), skipped + end - head


def read_events(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> EventStream:
    """The events of one trace file (or fsspec URL), in batches (see :class:`EventStream`);
    a file cut short keeps its complete events (``stream.salvaged`` says so)."""
    return EventStream(FileChunks(path, storage_options), str(path))


def decode_events(data: bytes) -> list[Event]:
    """A JSON array of events; msgspec's errors are raised as they are."""
    return _EVENTS.decode(data)


def decode_document(data: bytes, source: str) -> Document:
    """Decode a whole Chrome-trace JSON text (an object with ``traceEvents`` or an event list)."""
    if data[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark, as some editors write
        data = data[3:]
    try:
        doc = _DOC.decode(data)
    except RecursionError:
        raise _nesting_error(source) from None
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
