"""Expectations on a report: ``utilization[0] >= 0.8``, checked without ``eval``.

The pipeline::

    exps = parse_all(["cross_device_overlap >= 0.9"]) + parse_file("ci.expect")
    results = evaluate(report.to_dict(), exps)      # -> list[Result], one per expectation
    require(results)                                # raises ExpectationFailed if any failed

Grammar (whitespace anywhere between the parts; one expectation per string or line)::

    expectation := NAME [ "[" DEVICE "]" ] OP NUMBER
    NAME        := one of NAMES below
    DEVICE      := integer, the "device" field of the report's rows (the GPU index)
    OP          := ">=" | ">" | "<=" | "<" | "==" | "!="
    NUMBER      := decimal or scientific, e.g. 0.9  2  -1  .5  1e6  2.5E-3

In a file, ``#`` starts a comment and blank lines are ignored. Comparisons are exact
on the report's floats (``==`` is rarely what you want for a time).

Every name reads the report dict of docs/REPORT_SCHEMA.md, for the analysed window
(whole trace, or one ProfilerStep with ``--step N``). ``[d]`` selects the row whose
``device`` is ``d``; without it, the aggregate in the table is used. A value that is
undefined (the report has ``null``, or no row to read) makes the expectation **fail**,
with the reason, never pass. A ``[d]`` naming a device absent from the report fails too.

========================== ===== ================================================================
name                        [d]  how it is read
========================== ===== ================================================================
span_us                      –   ``span_us``
gpu_span_us                  –   ``gpu_span_us``
busy_us                     yes  ``devices[d].busy_us``; no [d]: ``serial.busy_union_us``
                                 (time any device was busy)
idle_us                     yes  ``devices[d].idle_us``; no [d]: max over devices (the idlest)
utilization                 yes  ``devices[d].utilization``; no [d]: min over devices
devices                      –   number of rows in ``devices``
kernels, memcpys, memsets    –   ``counts.kernels`` / ``counts.memcpys`` / ``counts.memsets``
cross_device_overlap         –   max over ``overlap.cross_device`` rows of
                                 ``fraction_of_either``; undefined with fewer than 2 devices
cross_device_overlap_of_min  –   the same with ``fraction_of_min``
multi_device_us              –   ``overlap.multi_device_us``
hidden_copy_fraction        yes  ``hidden_fraction`` of the ``copy_compute`` row with
                                 ``direction == "all"`` for device d; no [d]: min over devices
                                 whose row has one (devices that copied); undefined if none did
exposed_copy_us             yes  ``exposed_us`` of that "all" row; no [d]: sum over devices
                                 (0 when nothing was copied)
hidden_comm_fraction        yes  ``overlap.comm_compute[d].hidden_fraction``; no [d]: min over
                                 devices with communication kernels; undefined if none
exposed_comm_us             yes  ``overlap.comm_compute[d].exposed_us``; no [d]: sum (0 if none)
max_concurrent_streams      yes  ``overlap.streams[d].max_concurrent``; no [d]: max over devices
                                 (0 when there is no GPU activity)
concurrent_streams_us       yes  ``overlap.streams[d].concurrent_us``; no [d]: sum over devices
speedup_vs_span              –   ``serial.speedup_vs_span``
parallelism                  –   ``serial.parallelism``
launch_latency_p50_us        –   ``host.launch_latency.p50_us`` (also ``_mean_us``, ``_p95_us``,
                                 ``_max_us``)
launch_bound_streams         –   number of ``host.kernel_gaps`` rows with ``launch_bound`` true
========================== ===== ================================================================

The table in code is :data:`NAMES`; ``traceprobe check --help`` prints it from there.
"""

from __future__ import annotations

import difflib
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceprobe.errors import ExpectationFailed, UsageError
from traceprobe.render.tables import fmt_time

Report = Mapping[str, Any]

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_EXPECTATION = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"\s*(?:\[\s*(?P<index>[+-]?\d+)\s*\])?"
    r"\s*(?P<op>>=|<=|==|!=|>|<)"
    rf"\s*(?P<number>{_NUMBER})\s*$"
)
GRAMMAR_HINT = (
    "write NAME[DEVICE] OP NUMBER, e.g. 'utilization[0] >= 0.8' or "
    "'cross_device_overlap >= 0.9'; OP is one of >= > <= < == !="
)


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Expectation:
    """One parsed expectation. ``source`` says where it came from (``file:line``) if a file."""

    name: str
    index: int | None
    op: str
    threshold: float
    number: str  # the threshold as written, for messages
    source: str | None = None

    @property
    def subject(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"

    def __str__(self) -> str:
        return f"{self.subject} {self.op} {self.number}"


@dataclass(frozen=True)
class Measured:
    """What a name read from a report: ``value`` (None when undefined) and a short note
    (which device an aggregate came from, or why the value is undefined)."""

    value: float | None
    note: str = ""


@dataclass(frozen=True)
class Result:
    expectation: Expectation
    value: float | None
    passed: bool
    note: str = ""

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def measured_text(self) -> str:
        """The measured value for people: ``0.9123 = 91.2%, GPU 1``, ``1234.5 µs``,
        ``undefined, no copies in the window``."""
        text = format_value(self.expectation.name, self.value)
        return f"{text}, {self.note}" if self.note else text

    def describe(self) -> str:
        """``PASS  utilization[0] >= 0.8  measured 0.9123 = 91.2%``."""
        where = f"  [{self.expectation.source}]" if self.expectation.source else ""
        return f"{self.verdict}  {self.expectation}  measured {self.measured_text()}{where}"

    def to_dict(self) -> dict[str, Any]:
        e = self.expectation
        return {
            "expectation": str(e),
            "name": e.name,
            "device": e.index,
            "op": e.op,
            "threshold": e.threshold,
            "value": self.value,
            "passed": self.passed,
            "note": self.note,
            "source": e.source,
        }


def format_value(name: str, value: float | None) -> str:
    if value is None:
        return "undefined"
    unit = NAMES[name].unit if name in NAMES else ""
    if unit == "fraction":
        return f"{value:.4g} = {value * 100:.1f}%"
    if unit == "us":
        text = f"{value:.10g} µs"
        return f"{text} = {fmt_time(value)}" if abs(value) >= 1000 else text
    if unit == "count":
        return f"{value:g}"
    return f"{value:.4g}"


# ----------------------------------------------------------------------------- readers


def _rows(r: Report, *path: str) -> list[Mapping[str, Any]]:
    obj: Any = r
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return [row for row in (obj or []) if isinstance(row, Mapping)]


def _devices_text(devs: Iterable[Any]) -> str:
    devs = list(devs)
    return ("GPU " if len(devs) == 1 else "GPUs ") + ", ".join(str(d) for d in devs)


def _scalar(*path: str) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        obj: Any = r
        for key in path:
            obj = obj.get(key) if isinstance(obj, Mapping) else None
        if obj is None:
            return Measured(None, f"{'.'.join(path)} is null in the report")
        return Measured(float(obj))

    return read


def _count_rows(*path: str, where: str | None = None) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        rows = _rows(r, *path)
        if where is not None:
            rows = [row for row in rows if row.get(where)]
        return Measured(float(len(rows)))

    return read


def _per_device(
    path: tuple[str, ...],
    field: str,
    aggregate: str,
    *,
    what: str,
    row_filter: Callable[[Mapping[str, Any]], bool] = lambda row: True,
    empty: float | None = None,
    whole: Callable[[Report, int | None], Measured] | None = None,
) -> Callable[[Report, int | None], Measured]:
    """Read ``field`` from the rows at ``path`` (one per device); aggregate without [d].

    ``aggregate`` is "min", "max" or "sum"; ``empty`` is the value when no row has the
    field (None: undefined, with ``what`` as the reason); ``whole`` overrides the aggregate.
    """

    def read(r: Report, index: int | None) -> Measured:
        rows = [row for row in _rows(r, *path) if row_filter(row)]
        if index is not None:
            match = [row for row in rows if row.get("device") == index]
            if not match:
                present = sorted({row.get("device") for row in rows}, key=str)
                if not present:
                    return Measured(None, f"no GPU {index}: {what}")
                return Measured(None, f"no GPU {index} in the report ({_devices_text(present)})")
            value = match[0].get(field)
            if value is None:
                return Measured(None, f"{field} is null for GPU {index}")
            return Measured(float(value))
        if whole is not None:
            return whole(r, None)
        known = [(row.get("device"), float(row[field])) for row in rows
                 if row.get(field) is not None]
        if not known:
            return Measured(empty, "" if empty is not None else what)
        over = _devices_text(d for d, _ in known)
        if aggregate == "sum":
            return Measured(sum(v for _, v in known), f"sum over {over}")
        pick = min if aggregate == "min" else max
        device, value = pick(known, key=lambda dv: dv[1])
        if len(known) == 1:
            return Measured(value, f"GPU {device}")
        return Measured(value, f"{aggregate} over {over}: GPU {device}")

    return read


def _pairs(field: str) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        rows = _rows(r, "overlap", "cross_device")
        if not rows:
            return Measured(None, "fewer than two GPUs in the window")
        known: list[tuple[tuple[Any, ...], float]] = [
            (tuple(row.get("devices") or ()), float(row[field]))
            for row in rows
            if row.get(field) is not None
        ]
        if not known:
            return Measured(None, "no GPU pair was busy")
        pair, value = max(known, key=lambda dv: dv[1])
        label = "GPUs " + " & ".join(str(d) for d in pair)
        return Measured(value, label if len(rows) == 1 else f"max over pairs: {label}")

    return read


@dataclass(frozen=True)
class Name:
    """One expectation name: how it is read, whether it takes [d], its unit and its doc."""

    read: Callable[[Report, int | None], Measured]
    doc: str
    unit: str  # fraction | us | count | ratio
    indexed: bool = False


def _all_row(row: Mapping[str, Any]) -> bool:
    return row.get("direction") == "all"


NAMES: dict[str, Name] = {
    "span_us": Name(_scalar("span_us"), "length of the analysed window", "us"),
    "gpu_span_us": Name(_scalar("gpu_span_us"), "first GPU start to last GPU end", "us"),
    "busy_us": Name(
        _per_device(("devices",), "busy_us", "sum", what="no GPU activity",
                    whole=_scalar("serial", "busy_union_us")),
        "devices[d].busy_us; no [d]: serial.busy_union_us", "us", indexed=True),
    "idle_us": Name(
        _per_device(("devices",), "idle_us", "max", what="no GPU activity"),
        "devices[d].idle_us; no [d]: max over GPUs", "us", indexed=True),
    "utilization": Name(
        _per_device(("devices",), "utilization", "min", what="no GPU activity"),
        "devices[d].utilization; no [d]: min over GPUs", "fraction", indexed=True),
    "devices": Name(_count_rows("devices"), "number of devices in the report", "count"),
    "kernels": Name(_scalar("counts", "kernels"), "counts.kernels", "count"),
    "memcpys": Name(_scalar("counts", "memcpys"), "counts.memcpys", "count"),
    "memsets": Name(_scalar("counts", "memsets"), "counts.memsets", "count"),
    "cross_device_overlap": Name(
        _pairs("fraction_of_either"),
        "max over GPU pairs of cross_device[].fraction_of_either", "fraction"),
    "cross_device_overlap_of_min": Name(
        _pairs("fraction_of_min"),
        "max over GPU pairs of cross_device[].fraction_of_min", "fraction"),
    "multi_device_us": Name(
        _scalar("overlap", "multi_device_us"), "overlap.multi_device_us", "us"),
    "hidden_copy_fraction": Name(
        _per_device(("overlap", "copy_compute"), "hidden_fraction", "min",
                    what="no copies in the window", row_filter=_all_row),
        'copy_compute "all" row hidden_fraction; no [d]: min over GPUs',
        "fraction", indexed=True),
    "exposed_copy_us": Name(
        _per_device(("overlap", "copy_compute"), "exposed_us", "sum",
                    what="no copies in the window", row_filter=_all_row, empty=0.0),
        'copy_compute "all" row exposed_us; no [d]: sum over GPUs', "us", indexed=True),
    "hidden_comm_fraction": Name(
        _per_device(("overlap", "comm_compute"), "hidden_fraction", "min",
                    what="no communication kernels in the window"),
        "comm_compute[d].hidden_fraction; no [d]: min over GPUs",
        "fraction", indexed=True),
    "exposed_comm_us": Name(
        _per_device(("overlap", "comm_compute"), "exposed_us", "sum",
                    what="no communication kernels in the window", empty=0.0),
        "comm_compute[d].exposed_us; no [d]: sum over GPUs", "us", indexed=True),
    "max_concurrent_streams": Name(
        _per_device(("overlap", "streams"), "max_concurrent", "max",
                    what="no GPU activity", empty=0.0),
        "overlap.streams[d].max_concurrent; no [d]: max over GPUs", "count",
        indexed=True),
    "concurrent_streams_us": Name(
        _per_device(("overlap", "streams"), "concurrent_us", "sum",
                    what="no GPU activity", empty=0.0),
        "overlap.streams[d].concurrent_us; no [d]: sum over GPUs", "us", indexed=True),
    "speedup_vs_span": Name(
        _scalar("serial", "speedup_vs_span"), "serial.speedup_vs_span", "ratio"),
    "parallelism": Name(_scalar("serial", "parallelism"), "serial.parallelism", "ratio"),
    **{
        f"launch_latency_{k}_us": Name(
            _scalar("host", "launch_latency", f"{k}_us"), f"host.launch_latency.{k}_us", "us")
        for k in ("mean", "p50", "p95", "max")
    },
    "launch_bound_streams": Name(
        _count_rows("host", "kernel_gaps", where="launch_bound"),
        "host.kernel_gaps rows with launch_bound true", "count"),
}


def names_help() -> str:
    """The names table as plain text lines (for ``--help`` and error messages)."""
    width = max(len(n) for n in NAMES) + 3
    return "\n".join(
        f"{(n + '[d]') if spec.indexed else n:<{width}} {spec.doc}" for n, spec in NAMES.items()
    )


# ----------------------------------------------------------------------------- parsing


def parse(text: str, *, source: str | None = None) -> Expectation:
    """Parse one expectation; UsageError says what is wrong and how to write it."""
    where = f"{source}: " if source else ""
    m = _EXPECTATION.match(text)
    if m is None:
        raise UsageError(f"{where}cannot read expectation {text.strip()!r}: {GRAMMAR_HINT}")
    name = m["name"]
    if name not in NAMES:
        close = difflib.get_close_matches(name, NAMES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(
            f"{where}unknown name {name!r} in {text.strip()!r}{hint}; valid names: "
            + ", ".join(NAMES)
        )
    index = None if m["index"] is None else int(m["index"])
    if index is not None and not NAMES[name].indexed:
        indexed = ", ".join(n for n, s in NAMES.items() if s.indexed)
        raise UsageError(
            f"{where}{name} takes no [device] in {text.strip()!r}; names that do: {indexed}"
        )
    return Expectation(name, index, m["op"], float(m["number"]), m["number"], source)


def parse_all(texts: Iterable[str | Expectation]) -> list[Expectation]:
    return [t if isinstance(t, Expectation) else parse(t) for t in texts]


def parse_lines(lines: Iterable[str], *, source: str = "<expectations>") -> list[Expectation]:
    """One expectation per line; ``#`` starts a comment; blank lines are skipped."""
    out = []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if text:
            out.append(parse(text, source=f"{source}:{number}"))
    return out


def parse_file(path: str | Path) -> list[Expectation]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read expectations file {p}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"expectations file {p} is not UTF-8 text: {e}") from e
    return parse_lines(text.splitlines(), source=str(p))


# ----------------------------------------------------------------------------- evaluating


def measure(report: Report, name: str, index: int | None = None) -> Measured:
    """Read one name (see the table in the module docstring) from a one-trace report dict."""
    if "traces" in report and "trace" not in report:
        raise UsageError(
            "expectations apply to one trace's report; evaluate report['traces'][i] one at a time"
        )
    if name not in NAMES:
        raise UsageError(f"unknown name {name!r}; valid names: " + ", ".join(NAMES))
    return NAMES[name].read(report, index)


def evaluate(report: Report, expectations: Sequence[str | Expectation]) -> list[Result]:
    """Check each expectation against the report; an undefined value fails."""
    results = []
    for e in parse_all(expectations):
        m = measure(report, e.name, e.index)
        passed = m.value is not None and OPS[e.op](m.value, e.threshold)
        results.append(Result(e, m.value, passed, m.note))
    return results


def failure_message(failed: Sequence[Result], *, label: str = "") -> str:
    """``1 expectation failed: hidden_copy_fraction > 0.5 (measured 0.3125 = 31.2%, GPU 1)``."""
    parts = "; ".join(f"{r.expectation} (measured {r.measured_text()})" for r in failed)
    head = f"{label}: " if label else ""
    noun = "expectation" if len(failed) == 1 else "expectations"
    return f"{head}{len(failed)} {noun} failed: {parts}"


def require(results: Sequence[Result], *, label: str = "") -> None:
    """Raise ExpectationFailed (exit 1) naming each failed expectation and its measured value."""
    failed = [r for r in results if not r.passed]
    if failed:
        raise ExpectationFailed(failure_message(failed, label=label))
