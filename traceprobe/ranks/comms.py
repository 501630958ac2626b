"""Collective calls out of one trace file, and NCCL's bandwidth conventions.

    calls, header = read_calls(path)    # -> list[Call] in trace order, Header

Which events are a rank's collective calls, in order of preference (the first family
the trace has is used, so a call is never counted twice):

1. ``record_param_comms`` CPU ops (kineto writes them for every c10d collective): the
   collective name, process group name, in/out element counts, dtype, group size and a
   sequence number (``Seq``) where present. The call's time is its GPU kernel's (the NCCL
   kernel with the same ``External id``) when there is one, else the CPU op's own.
2. NCCL kernels with a ``Collective name`` argument (kineto ≥ 2.x writes the same fields
   on the kernel) when the trace has no ``record_param_comms``.
3. The backend annotations ``nccl:<op>`` / ``gloo:<op>`` (older traces, CPU/gloo runs): the
   name only; size from ``Input Dims``/``Input type`` when recorded, else unknown.

Sizes follow nccl-tests (``doc/PERFORMANCE.md``): the message size S is the larger of the
input and output buffers in bytes; ``algbw = S / t``; ``busbw = algbw × factor(n)`` with
all-reduce ``2(n−1)/n``, all-gather, reduce-scatter and all-to-all ``(n−1)/n``, broadcast,
reduce, send/recv ``1``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from traceprobe.load.read import read_chunks
from traceprobe.load.timestamps import us_to_ns

DTYPE_BYTES = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8,
    "float64": 8, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2,
    "byte": 1, "uint8": 1, "char": 1, "int8": 1, "bool": 1, "complexfloat": 8,
    "complexdouble": 16, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}

_FACTORS = {
    "allreduce": "2(n-1)/n",
    "allgather": "(n-1)/n",
    "reducescatter": "(n-1)/n",
    "alltoall": "(n-1)/n",
    "broadcast": "1",
    "reduce": "1",
    "send": "1",
    "recv": "1",
}


def canonical(name: str) -> str:
    """``all_reduce``, ``AllReduce``, ``allreduce_coalesced`` -> ``allreduce``-style keys."""
    key = re.sub(r"[^a-z]", "", name.lower())
    for k in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"):
        if key.startswith(k) or key.startswith("_" + k):
            return k
    return key


def bus_factor(name: str, n: int) -> float | None:
    """NCCL's bus-bandwidth factor for collective ``name`` over ``n`` ranks (None: unknown)."""
    rule = _FACTORS.get(canonical(name))
    if rule is None or n < 1:
        return None
    if rule == "2(n-1)/n":
        return 2 * (n - 1) / n
    if rule == "(n-1)/n":
        return (n - 1) / n
    return 1.0


def dtype_bytes(dtype: Any) -> int | None:
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.strip().lower().removeprefix("torch."))


class _Args(msgspec.Struct, gc=False):
    external_id: Any = msgspec.field(name="External id", default=None)
    collective: Any = msgspec.field(name="Collective name", default=None)
    in_nelems: Any = msgspec.field(name="In msg nelems", default=None)
    out_nelems: Any = msgspec.field(name="Out msg nelems", default=None)
    dtype: Any = None
    group_size: Any = msgspec.field(name="Group size", default=None)
    pg_name: Any = msgspec.field(name="Process Group Name", default=None)
    seq: Any = msgspec.field(name="Seq", default=None)
    input_dims: Any = msgspec.field(name="Input Dims", default=None)
    input_type: Any = msgspec.field(name="Input type", default=None)


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: Any = ""
    name: Any = ""
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")
    args: _Args | None = None


_EVENT = msgspec.json.Decoder(_Event)
# text that only a collective's event holds: a pre-filter, so that only those are decoded
_MARKERS = (b'"record_param_comms"', b'"Collective name"', b'"nccl:', b'"gloo:', b'"rccl:')
_HOST = re.compile(rb'"host_name"\s*:\s*"((?:[^"\\]|\\.)*)"')
MAX_EVENT = 1 << 22  # an event longer than this is not one (the marker sits in something else)
CARRY = 64  # text kept between chunks when no event starts in it (a '{ "ph"' cut in two)


@dataclass(frozen=True)
class Header:
    """What a trace says about where it ran (rank etc. come from the loader's metadata)."""

    host: str | None


@dataclass(frozen=True)
class Call:
    """One collective call on one rank (times in ns on the rank's own clock)."""

    name: str  # canonical: allreduce, allgather, ...
    group: str  # process group name ("" where the trace does not say)
    seq: int | None  # the trace's own sequence number, where present
    start_ns: int
    end_ns: int
    nbytes: int | None  # nccl-tests' message size S
    group_size: int | None
    source: str  # "record_param_comms" | "kernel" | "annotation"


def read_calls(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> tuple[list[Call], Header]:
    """The collective calls of one trace file, in start order, and its host name.

    Streams the (decompressed) text: only events holding a collective's markers
    (``record_param_comms``, ``Collective name``, ``nccl:``/``gloo:`` names) are cut out
    and decoded, so memory stays at about one chunk whatever the file's size. An event is
    found from its marker back to the ``{"ph":`` that opens it (kineto writes ``ph``
    first); events written otherwise are not seen.
    """
    events, host = scan(read_chunks(path, storage_options))
    return _calls(events), Header(host)


def scan(chunks: Iterable[bytes]) -> tuple[list[_Event], str | None]:
    """The collective events in ``chunks`` of JSON text, and the first ``host_name``."""
    events: list[_Event] = []
    host: bytes | None = None
    buf = b""
    for chunk in chunks:
        buf = buf + chunk if buf else chunk
        if host is None and (m := _HOST.search(buf)):
            host = m.group(1)
        buf = buf[_take(buf, events):]
    _take(buf, events)
    name = None
    if host is not None:
        try:
            name = msgspec.json.decode(b'"' + host + b'"')
        except msgspec.DecodeError:
            name = None
    return events, name if isinstance(name, str) else None


def _take(buf: bytes, events: list[_Event]) -> int:
    """Decode the complete collective events of ``buf`` into ``events``; returns where the
    text to keep for the next chunk begins (an event left incomplete, or a short tail)."""
    done = 0
    for hit in _hits(buf):
        if hit < done:
            continue  # a second marker inside an event already taken
        s = _open_before(buf, done, hit)
        if s is None:
            continue
        found = _decode_from(buf, s, hit)
        if found is None:
            return s  # the event goes on in the next chunk
        event, e = found
        if event is not None:
            events.append(event)
        done = e
    last = _open_before(buf, done, len(buf))  # the event still open holds later markers
    return last if last is not None else max(done, len(buf) - CARRY)


def _open_before(buf: bytes, lo: int, hi: int) -> int | None:
    """Offset of the ``{`` of the last ``{ "ph"`` that begins in ``buf[lo:hi]``."""
    while True:
        i = buf.rfind(b'"ph"', lo, hi)
        if i < 0:
            return None
        j = i - 1
        while j >= lo and buf[j] in b" \t\r\n":
            j -= 1
        if j >= lo and buf[j] == 0x7B:  # "{"
            return j
        hi = i


def _hits(buf: bytes) -> list[int]:
    """Offsets of the markers in ``buf`` (bytes.find: memchr-fast, unlike a regex)."""
    out = []
    for marker in _MARKERS:
        i = buf.find(marker)
        while i >= 0:
            out.append(i)
            i = buf.find(marker, i + 1)
    return sorted(out)


def _decode_from(buf: bytes, start: int, hit: int) -> tuple[_Event | None, int] | None:
    """The event whose ``{`` is at ``start``: (event, offset past it); (None, offset past
    the marker) when no object around the marker decodes as an event; None when ``buf``
    ends first. Tries each ``}`` after the marker as the event's end: a ``}`` too early
    leaves the text unclosed (a decode error), so the first that decodes is the end."""
    end = hit
    while True:
        end = buf.find(b"}", end + 1)
        if end < 0:
            return None
        try:
            return _EVENT.decode(buf[start : end + 1]), end + 1
        except msgspec.ValidationError:
            return None, end + 1  # valid JSON but not an event: skip it
        except msgspec.DecodeError:
            if end - start > MAX_EVENT:
                return None, hit + 1
            continue


def _calls(events: list[_Event]) -> list[Call]:
    xs = [e for e in events if e.ph == "X"]
    params = [e for e in xs if e.name == "record_param_comms" and e.args is not None]
    kernels = [
        e for e in xs if e.cat == "kernel" and e.args is not None and e.args.collective is not None
    ]
    if params:
        by_id = {_int(k.args.external_id): k for k in kernels if k.args is not None}
        chosen = [(p, by_id.get(_int(p.args.external_id))) for p in params if p.args]
        family = "record_param_comms"
    elif kernels:
        chosen = [(k, k) for k in kernels]
        family = "kernel"
    else:
        chosen = [
            (e, None) for e in xs
            if isinstance(e.name, str) and re.match(r"^(nccl|gloo|rccl):[a-z_]+$", e.name)
        ]
        family = "annotation"
    if not chosen:
        return []
    timed = [k or p for p, k in chosen]
    start, st0 = us_to_ns([e.ts for e in timed])
    dur, st1 = us_to_ns([e.dur for e in timed])
    out = []
    for i, (p, _kernel) in enumerate(chosen):
        if st0[i] != 0 or st1[i] == 2:
            continue
        a = p.args or _Args()
        name = a.collective if family != "annotation" else str(p.name).split(":", 1)[1]
        out.append(
            Call(
                name=canonical(str(name)),
                group=str(a.pg_name) if a.pg_name is not None else "",
                seq=_int(a.seq),
                start_ns=int(start[i]),
                end_ns=int(start[i] + max(0, dur[i])),
                nbytes=_nbytes(a),
                group_size=_int(a.group_size),
                source=family,
            )
        )
    out.sort(key=lambda c: c.start_ns)
    return out


def _nbytes(a: _Args) -> int | None:
    width = dtype_bytes(a.dtype)
    counts = [n for n in (_int(a.in_nelems), _int(a.out_nelems)) if n is not None]
    if width is None and isinstance(a.input_type, list) and a.input_type:
        width = dtype_bytes(a.input_type[0])
    if not counts and isinstance(a.input_dims, list) and a.input_dims:
        dims = a.input_dims[0]
        if isinstance(dims, list) and all(isinstance(d, int) for d in dims):
            n = 1
            for d in dims:
                n *= d
            counts = [n]
    if width is None or not counts:
        return None
    return max(counts) * width


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None
