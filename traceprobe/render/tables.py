"""What a human-readable report shows: the report dict laid out as titled tables.

The text and Markdown renderers present the same content; this module decides the
content once (which sections, which columns, units) and they only draw it::

    doc = trace_document(report, top=10)   # -> Document: title, headlines, facts, tables
    table = cross_trace_table(multi)       # -> Table | None

Cells are already-formatted strings. Every figure is read from the report dict
(see docs/REPORT_SCHEMA.md) with ``.get``, so a report with fields missing (older)
or added (newer) still renders; nothing is computed here but unit conversions.

The parts: :mod:`traceprobe.render.units` writes the figures (``fmt_time``, ``fmt_pct``,
...), :mod:`traceprobe.render.sections` builds one :class:`Table` per report section;
this module puts one trace's into a :class:`Document`, adds the table across traces,
and names them all for the renderers (``from traceprobe.render import tables as tb``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from traceprobe.render.sections import Row, Table, trace_tables
from traceprobe.render.units import (
    DASH,
    fmt_bytes,
    fmt_count,
    fmt_device,
    fmt_pct,
    fmt_ratio,
    fmt_time,
)

__all__ = [
    "DASH", "Document", "Row", "Table", "cross_trace_rows", "cross_trace_table", "fmt_bytes",
    "runs_table",
    "fmt_count", "fmt_device", "fmt_pct", "fmt_ratio", "fmt_time", "is_multi",
    "trace_document", "trace_tables",
]


@dataclass(frozen=True)
class Document:
    """One trace's report, ready to draw; ``label`` (e.g. ``[1]``) numbers it among several."""

    trace: str
    label: str
    headlines: list[str]
    facts: list[str]
    tables: list[Table]


def is_multi(report: Mapping[str, Any]) -> bool:
    """True for the several-traces object ``{"schema", "traces", "cross_trace"}``."""
    return "traces" in report and "trace" not in report


def trace_document(report: Mapping[str, Any], *, top: int = 10, label: str = "") -> Document:
    """Lay out one trace's report; ``label`` (e.g. ``[1]``) numbers it among several."""
    tables = trace_tables(report, top=top)
    headlines = [str(h) for h in report.get("headlines") or []]
    return Document(str(report.get("trace", "?")), label, headlines, _facts(report), tables)


def _facts(r: Mapping[str, Any]) -> list[str]:
    first = f"format {r.get('format', '?')}"
    if r.get("rank") is not None:
        first += f", rank {r['rank']}"
    window = r.get("window") or {}
    step = window.get("step")
    basis = window.get("basis")
    where = (
        f"ProfilerStep#{step}" if step is not None
        else {"steps": "the profiled steps", "profiler": "the profiler's recording span"}.get(
            str(basis), "whole trace")
    )
    line = f"window: {where}, {fmt_time(r.get('span_us'))} long"
    if r.get("gpu_span_us"):
        line += f"; GPU activity spans {fmt_time(r['gpu_span_us'])}"
    c = r.get("counts") or {}
    parts = [
        (c.get("kernels"), "kernel"),
        (c.get("memcpys"), "memcpy"),
        (c.get("memsets"), "memset"),
        (c.get("cpu_ops"), "CPU op"),
        (c.get("runtime_calls"), "runtime call"),
        (c.get("steps"), "profiler step"),
    ]
    counts = "events: " + ", ".join(
        f"{fmt_count(n)} {what}{'' if n == 1 else 's'}" for n, what in parts if n is not None
    )
    return [first, line, counts]


def cross_trace_rows(multi: Mapping[str, Any]) -> list[Row]:
    """The pair rows of ``cross_trace``: ``{"pairs": [...], ...}``, or a bare list of rows."""
    ct = multi.get("cross_trace")
    if isinstance(ct, Mapping):
        ct = ct.get("pairs")
    if isinstance(ct, Sequence) and not isinstance(ct, str):
        return [x for x in ct if isinstance(x, Mapping)]
    return []


def runs_table(multi: Mapping[str, Any]) -> Table | None:
    """Which traces are ranks of one job and which are separate runs, by folder."""
    runs = [r for r in multi.get("runs") or [] if isinstance(r, Mapping)]
    if not runs or all(not r.get("job") for r in runs) and len(runs) <= 1:
        return None
    rows = [
        (str(r.get("folder") or DASH), " ".join(f"[{i}]" for i in r.get("traces") or []),
         f"ranks of one job (world size {r.get('world_size')})" if r.get("job")
         else "separate run" + ("s" if len(r.get("traces") or []) > 1 else ""))
        for r in runs
    ]
    notes = ["ranks of one job: the traces' distributedInfo says so (rank, world size, one "
             "folder); separate runs are not compared with each other"]
    return Table("Runs", ("folder", "traces", "what"), "lll", rows, notes)


PAIRS_SHOWN = 20  # cross-trace pairs a human-readable report lists (JSON: all of them)


def cross_trace_table(multi: Mapping[str, Any], *, limit: int | None = PAIRS_SHOWN
                      ) -> Table | None:
    """The pairs table; of more than ``limit`` pairs only those that overlapped most
    (64 ranks x 8 GPUs make 129,024 pairs), with a note saying how many were left out."""
    ct = multi.get("cross_trace")
    rows_in = cross_trace_rows(multi)
    notes = []
    if limit is not None and len(rows_in) > limit:
        total = len(rows_in)
        rows_in = sorted(rows_in, key=lambda p: -(p.get("overlap_us") or 0))[:limit]
        notes.append(f"the {limit} of {total:,} pairs that overlapped longest; "
                     "--format json lists every pair")
    if isinstance(ct, Mapping):
        for s in ct.get("skipped") or []:
            pair = " and ".join(f"[{i}]" for i in s.get("traces") or [])
            notes.append(f"{pair} not compared: {s.get('reason', 'no reason given')}")
        if ct.get("clock") and (rows_in or notes):
            notes.append(f"the comparison {ct['clock']}")
    if not rows_in and not notes:
        return None

    def side(x: Any) -> str:
        x = x if isinstance(x, Mapping) else {}
        return f"[{x.get('trace', '?')}] GPU {x.get('device', '?')}"

    headers: tuple[str, ...] = ("trace a", "trace b", "both busy", "either busy", "of either")
    rows = [
        (side(p.get("a")), side(p.get("b")), fmt_time(p.get("overlap_us")),
         fmt_time(p.get("either_us")), fmt_pct(p.get("fraction_of_either")))
        for p in rows_in
    ]
    if not rows:
        headers = ()
    return Table("Across traces", headers, "llrrr" if rows else "", rows, notes)
