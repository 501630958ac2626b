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
exactly as written) and :func:`us_to_ns` turns a batch of them into int64
nanoseconds with integer arithmetic; float64 cannot hold
``1712195495519689.047`` µs to the nanosecond. Rounding rule (one rule
everywhere): digits beyond the nanosecond round half away from zero
(``decimal.ROUND_HALF_UP``). Kineto writes at most three fraction digits, so
real traces convert without rounding.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from traceprobe.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
REEXPORT = (
    "re-export the trace with torch.profiler's export_chrome_trace or tensorboard_trace_handler"
)
BATCH_BYTES = 1 << 20  # JSON text decoded at a time (bounds the memory for structs)
READ_BYTES = 1 << 16  # compressed bytes read at a time (about 1 MB of JSON)

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

    d = zlib.decompressobj(wbits=31)
    block, produced = first, 0
    while block:
        try:
            out = d.decompress(block)
            while d.eof and d.unused_data:  # concatenated gzip members
                rest = d.unused_data
                d = zlib.decompressobj(wbits=31)
                out += d.decompress(rest)
        except zlib.error as e:
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


# --------------------------------------------------------------------------- timestamps

_MAX_INT_DIGITS = 18  # fits int64 before scaling; larger values are range-checked
_MAX_US = (2**63 - 1 - 999) // 1000
_CHUNK = 1 << 16
_NS_MIN, _NS_MAX = -(2**63) + 1, 2**63 - 1


def us_to_ns(tokens: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Exact microsecond JSON numbers (as text) to int64 nanoseconds.

    ``tokens`` are bytes-like (``msgspec.Raw``, ``bytes``) holding one JSON value
    each. Returns ``(ns, status)``: status 0 = converted, 1 = absent (empty or
    ``null``), 2 = not a number (then ns is 0). Plain decimals (digits with an
    optional fraction) are parsed with numpy in bulk; anything else (signs,
    exponents, quoted numbers, values beyond int64 ns) goes through
    ``decimal.Decimal`` one by one. Beyond-ns digits round half away from zero.
    """
    n = len(tokens)
    ns = np.zeros(n, np.int64)
    status = np.zeros(n, np.int8)
    if n == 0:
        return ns, status
    buf = b"\n".join(tokens)
    u = np.frombuffer(buf, np.uint8)
    nl = np.flatnonzero(u == 10)
    if len(nl) != n - 1:  # a token with a newline inside (an object or array value)
        for i in range(n):
            ns[i], status[i] = _slow(bytes(tokens[i]))
        return ns, status
    starts = np.empty(n, np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    lens = np.empty(n, np.int64)
    lens[:-1] = nl
    lens[-1] = len(u)
    lens -= starts
    slow = lens == 0
    # a byte other than a digit, '.' or the separator sends its token to the slow path
    other = np.flatnonzero(((u - np.uint8(48)) > 9) & (u != 46) & (u != 10))
    slow[np.searchsorted(starts, other, "right") - 1] = True
    dotpos = lens.copy()  # offset of the '.' in each token, or its length if none
    dots = np.flatnonzero(u == 46)
    if len(dots):
        owner = np.searchsorted(starts, dots, "right") - 1
        slow |= np.bincount(owner, minlength=n) > 1
        dotpos[owner] = dots - starts[owner]
    slow |= (dotpos > _MAX_INT_DIGITS) | (dotpos == 0)
    fast = np.flatnonzero(~slow)
    if len(fast):
        width = int(dotpos[fast].max())
        padded = np.concatenate([np.full(width, 48, np.uint8), u, np.full(5, 48, np.uint8)])
        windows = np.lib.stride_tricks.sliding_window_view(padded, width + 5)
        for lo in range(0, len(fast), _CHUNK):
            rows = fast[lo : lo + _CHUNK]
            ns[rows], big = _fast(windows, width, starts[rows], lens[rows], dotpos[rows])
            slow[rows[big]] = True
    for i in np.flatnonzero(slow).tolist():
        ns[i], status[i] = _slow(bytes(tokens[i]))
    return ns, status


def _fast(
    windows: np.ndarray, width: int, starts: np.ndarray, lens: np.ndarray, dotpos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Plain decimals, aligned on the dot: ``width`` integer digits, the dot, 4 fraction digits.

    Returns the ns and a mask of values too large for int64 ns (left to the slow path).
    """
    digits = windows[starts + dotpos] - np.uint8(48)  # row i: the bytes around token i's dot
    col = np.arange(width + 5)
    int_digits = (col >= width - np.arange(width + 1)[:, None]) & (col < width)  # by dotpos
    frac_digits = (col > width) & (col - width <= np.arange(5)[:, None])  # by fraction length
    digits *= int_digits[dotpos] | frac_digits[np.clip(lens - dotpos - 1, 0, 4)]
    value = np.zeros(len(starts), np.int64)
    for j in range(width):  # Horner, column by column
        value *= 10
        value += digits[:, j]
    frac = digits[:, width + 1] * np.int64(100) + digits[:, width + 2] * np.int64(10)
    frac += digits[:, width + 3]
    big = value > _MAX_US
    value[big] = 0
    return value * 1000 + frac + (digits[:, width + 4] >= 5), big


def _slow(text: bytes) -> tuple[int, int]:
    t = text.strip()
    if not t or t == b"null":
        return 0, 1
    if t[:1] == b'"' and t[-1:] == b'"':  # a number written as a JSON string
        t = t[1:-1].strip()
    try:
        d = Decimal(t.decode("ascii"))
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        return 0, 2
    if not d.is_finite():
        return 0, 2
    v = int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    if not _NS_MIN <= v <= _NS_MAX:
        return 0, 2
    return v, 0
