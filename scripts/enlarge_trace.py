"""Make a k-times larger copy of a real Kineto trace, for the linearity benchmark.

    python scripts/enlarge_trace.py SRC DST -k 10 [--gzip-level 1]

DST is gzipped when its name ends in ``.gz``. The copy holds the source's events k
times over, copy ``c`` (0-based) moved later by ``c * shift_us`` microseconds, where
``shift_us`` is the source's span (first ``ts`` to last ``ts + dur``, metadata events
left out) rounded *up* to the next whole microsecond, so copies never overlap.

Exactness: every JSON float is read as a ``Decimal`` from its own text and written
back as a number, so ``ts`` values like ``1712195495519689.047`` move by a whole
number of microseconds with every digit kept; nothing passes through float64.

Per copy, so the copies are distinct and still linked within themselves:

* ids are offset by ``c * (max + 1)`` of their family: ``args.correlation`` together
  with the ids of ``ac2g`` flow events (they are the same numbers), ``External id``,
  ``Record function id``, ``Sequence number``, ``Python id``/``Python parent id``,
  ``Ev Idx``, and each other flow category's ids; negative ids (sentinels) are kept;
* ``ProfilerStep#N`` becomes ``ProfilerStep#(N + c * (last - first + 1))``;
* metadata events (``ph: "M"``: process and thread names) appear once, not k times.

A top-level ``"traceprobeEnlarged"`` object records the source, k and the shift.
"""

from __future__ import annotations

import argparse
import decimal
import gzip
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

# args keys holding ids that link events; value: the family whose offset they share
ID_FAMILIES: dict[str, str] = {
    "correlation": "correlation",
    "External id": "External id",
    "Record function id": "Record function id",
    "Sequence number": "Sequence number",
    "Python id": "Python id",
    "Python parent id": "Python id",
    "Ev Idx": "Ev Idx",
}
FLOW_PHASES = frozenset({"s", "t", "f"})
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")

_DECODER = msgspec.json.Decoder(float_hook=decimal.Decimal)
_ENCODER = msgspec.json.Encoder(decimal_format="number")
_CTX = decimal.Context(prec=60)  # far more digits than any ts has: additions stay exact


@dataclass(frozen=True)
class Enlarged:
    """What :func:`enlarge` wrote."""

    copies: int
    shift_us: int  # copy c is moved by c * shift_us microseconds
    events_in: int
    events_out: int
    metadata_events: int  # written once
    step_offset: int  # ProfilerStep numbers move by c * step_offset
    id_offsets: dict[str, int]  # family -> per-copy offset


def read_trace(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = _DECODER.decode(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise SystemExit(f"{path}: not a Chrome trace (no traceEvents list)")
    return doc


def _add(a: Any, b: Any) -> Any:
    """Exact sum of two JSON numbers (int or Decimal)."""
    if type(a) is int and type(b) is int:
        return a + b
    return _CTX.add(a, b)


def _family(ev: dict[str, Any]) -> str:
    """The id family of a flow event's ``id``."""
    cat = ev.get("cat")
    return "correlation" if cat == "ac2g" else f"flow:{cat}"


def _plan(events: list[dict[str, Any]]) -> tuple[int, int, dict[str, int]]:
    """(shift_us, step_offset, family -> offset) for these events."""
    lo: Any = None
    hi: Any = None
    steps: list[int] = []
    maxima: dict[str, int] = {}
    for ev in events:
        if ev.get("ph") == "M":
            continue
        ts = ev.get("ts")
        if ts is not None:
            end = _add(ts, ev.get("dur") or 0)
            lo = ts if lo is None or ts < lo else lo
            hi = end if hi is None or end > hi else hi
        name = ev.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            m = STEP_RE.match(name)
            if m:
                steps.append(int(m.group(1)))
        args = ev.get("args")
        if isinstance(args, dict):
            for key, fam in ID_FAMILIES.items():
                v = args.get(key)
                if type(v) is int and v > maxima.get(fam, -1):
                    maxima[fam] = v
        if ev.get("ph") in FLOW_PHASES and type(ev.get("id")) is int:
            fam = _family(ev)
            maxima[fam] = max(maxima.get(fam, -1), ev["id"])
    span = 0 if lo is None else hi - lo
    # next whole microsecond strictly above the span: copies never touch
    shift_us = int(decimal.Decimal(span).to_integral_value(rounding=decimal.ROUND_FLOOR)) + 1
    step_offset = (max(steps) - min(steps) + 1) if steps else 0
    return shift_us, step_offset, {fam: m + 1 for fam, m in maxima.items()}


def _shifted(
    ev: dict[str, Any], c: int, shift: int, step_offset: int, offsets: dict[str, int]
) -> dict[str, Any]:
    out = dict(ev)
    ts = out.get("ts")
    if ts is not None:
        out["ts"] = _add(ts, shift)
    name = out.get("name")
    if step_offset and isinstance(name, str) and name.startswith("ProfilerStep#"):
        m = STEP_RE.match(name)
        if m:
            out["name"] = f"ProfilerStep#{int(m.group(1)) + c * step_offset}"
    args = out.get("args")
    if isinstance(args, dict):
        new_args = None
        for key, fam in ID_FAMILIES.items():
            v = args.get(key)
            if type(v) is int and v >= 0:
                if new_args is None:
                    new_args = dict(args)
                new_args[key] = v + c * offsets[fam]
        if new_args is not None:
            out["args"] = new_args
    if out.get("ph") in FLOW_PHASES:
        fid = out.get("id")
        if type(fid) is int and fid >= 0:
            out["id"] = fid + c * offsets[_family(out)]
    return out


def _write(fh: BinaryIO, doc: dict[str, Any], copies_iter: Any) -> None:
    fh.write(b"{")
    for key, value in doc.items():
        if key == "traceEvents":
            continue
        fh.write(_ENCODER.encode(key) + b":" + _ENCODER.encode(value) + b",\n")
    fh.write(b'"traceEvents":[\n')
    first = True
    for chunk in copies_iter:
        if not chunk:
            continue
        body = _ENCODER.encode(chunk)[1:-1]  # the list's items, without [ ]
        fh.write(body if first else b",\n" + body)
        first = False
    fh.write(b"\n]}\n")


def enlarge(src: Path | str, dst: Path | str, k: int, *, gzip_level: int = 1) -> Enlarged:
    """Write ``dst``: the trace ``src`` repeated ``k`` times (see the module docstring)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    src, dst = Path(src), Path(dst)
    doc = read_trace(src)
    events: list[dict[str, Any]] = doc["traceEvents"]
    shift, step_offset, offsets = _plan(events)
    meta = [e for e in events if e.get("ph") == "M"]
    rest = [e for e in events if e.get("ph") != "M"]
    info = Enlarged(
        copies=k,
        shift_us=shift,
        events_in=len(events),
        events_out=len(meta) + k * len(rest),
        metadata_events=len(meta),
        step_offset=step_offset,
        id_offsets=offsets,
    )
    header = {key: v for key, v in doc.items() if key != "traceprobeEnlarged"}
    header["traceprobeEnlarged"] = {"source": src.name, "copies": k, "shift_us": shift}

    def chunks() -> Any:
        yield meta
        for c in range(k):
            yield [_shifted(e, c, c * shift, step_offset, offsets) for e in rest] if c else rest

    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".partial")
    opener = (
        (lambda p: gzip.open(p, "wb", compresslevel=gzip_level))
        if dst.name.endswith(".gz")
        else (lambda p: open(p, "wb"))
    )
    with opener(tmp) as fh:
        _write(fh, header, chunks())
    tmp.replace(dst)
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path, help="a Kineto trace, .json or .json.gz")
    ap.add_argument("dst", type=Path, help="output; gzipped when it ends in .gz")
    ap.add_argument("-k", "--copies", type=int, required=True, help="how many copies (>= 1)")
    ap.add_argument("--gzip-level", type=int, default=1, help="gzip level for .gz output")
    a = ap.parse_args(argv)
    info = enlarge(a.src, a.dst, a.copies, gzip_level=a.gzip_level)
    per_copy = info.events_in - info.metadata_events
    print(
        f"{a.dst}: {info.events_out} events ({info.copies} x {per_copy}"
        f" + {info.metadata_events} metadata), copies {info.shift_us} us apart",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
