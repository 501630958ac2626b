"""What a human-readable report shows: the Report laid out as titled tables.

The text and Markdown renderers present the same content; this module decides the
content once (which sections, which columns, units) and they only draw it::

    doc = trace_document(report, top=10)   # -> Document: title, headlines, facts, tables
    table = cross_trace_table(multi)       # -> Table | None

Cells are already-formatted strings. Every figure is read from the
:class:`~traceprobe.report.model.Report` (integer ns, written in display units only in the
cell); a saved report dict is read back by ``Report.from_dict`` first (leniently: a report
with fields missing (older) or added (newer) still renders). Nothing is computed here but
unit conversions.

The parts: :mod:`traceprobe.render.units` writes the figures (``fmt_time``, ``fmt_pct``,
...), :mod:`traceprobe.render.sections` builds one :class:`Table` per report section;
this module puts one trace's into a :class:`Document`, adds the table across traces,
and names them all for the renderers (``from traceprobe.render import tables as tb``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traceprobe.render.sections import Row, Table, trace_tables
from traceprobe.render.units import (
    DASH,
    fmt_bytes,
    fmt_count,
    fmt_device,
    fmt_pct,
    fmt_ratio,
    fmt_time,
    us,
)

if TYPE_CHECKING:
    from traceprobe.metrics.overlap import TraceDevice
    from traceprobe.report.model import MultiReport, Report

__all__ = [
    "DASH", "Document", "Row", "Table", "cross_trace_table", "fmt_bytes",
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


def is_multi(report: Any) -> bool:
    """True for several traces' report (:class:`~traceprobe.report.model.MultiReport`)."""
    from traceprobe.report.model import MultiReport

    return isinstance(report, MultiReport)


def trace_document(report: Report, *, top: int = 10, label: str = "") -> Document:
    """Lay out one trace's report; ``label`` (e.g. ``[1]``) numbers it among several."""
    tables = trace_tables(report, top=top)
    headlines = [str(h) for h in report.headlines or ()]
    return Document(str(report.trace), label, headlines, _facts(report), tables)


def _facts(r: Report) -> list[str]:
    first = f"format {r.format}"
    if r.rank is not None:
        first += f", rank {r.rank}"
    step = r.window.step
    basis = r.window.basis
    where = (
        f"ProfilerStep#{step}" if step is not None
        else {"steps": "the profiled steps", "profiler": "the profiler's recording span"}.get(
            str(basis), "whole trace")
    )
    line = f"window: {where}, {fmt_time(us(r.span_ns))} long"
    if r.gpu_span_ns:
        line += f"; GPU activity spans {fmt_time(us(r.gpu_span_ns))}"
    c = r.counts
    parts = [
        (c.kernels, "kernel"),
        (c.memcpys, "memcpy"),
        (c.memsets, "memset"),
        (c.cpu_ops, "CPU op"),
        (c.runtime_calls, "runtime call"),
        (c.steps, "profiler step"),
    ]
    counts = "events: " + ", ".join(
        f"{fmt_count(n)} {what}{'' if n == 1 else 's'}" for n, what in parts if n is not None
    )
    return [first, line, counts]


def runs_table(multi: MultiReport) -> Table | None:
    """Which traces are ranks of one job and which are separate runs, by folder."""
    runs = list(multi.runs or ())
    if not runs or all(not r.job for r in runs) and len(runs) <= 1:
        return None
    rows = [
        (str(r.folder or DASH), " ".join(f"[{i}]" for i in r.traces or ()),
         f"ranks of one job (world size {r.world_size})" if r.job
         else "separate run" + ("s" if len(r.traces or ()) > 1 else ""))
        for r in runs
    ]
    notes = ["ranks of one job: the traces' distributedInfo says so (rank, world size, one "
             "folder); separate runs are not compared with each other"]
    return Table("Runs", ("folder", "traces", "what"), "lll", rows, notes)


PAIRS_SHOWN = 20  # cross-trace pairs a human-readable report lists (JSON: all of them)


def cross_trace_table(multi: MultiReport, *, limit: int | None = PAIRS_SHOWN
                      ) -> Table | None:
    """The pairs table; of more than ``limit`` pairs only those that overlapped most
    (64 ranks x 8 GPUs make 129,024 pairs), with a note saying how many were left out."""
    ct = multi.cross_trace
    rows_in = list(ct.pairs or ()) if ct is not None else []
    notes = []
    if limit is not None and len(rows_in) > limit:
        total = len(rows_in)
        rows_in = sorted(rows_in, key=lambda p: -(us(p.overlap_ns) or 0))[:limit]
        notes.append(f"the {limit} of {total:,} pairs that overlapped longest; "
                     "--format json lists every pair")
    if ct is not None:
        for s in ct.skipped or ():
            pair = " and ".join(f"[{i}]" for i in s.traces or ())
            notes.append(f"{pair} not compared: {s.reason}")
        if ct.clock and (rows_in or notes):
            notes.append(f"the comparison {ct.clock}")
    if not rows_in and not notes:
        return None

    def side(x: TraceDevice | None) -> str:
        return "[?] GPU ?" if x is None else f"[{x.trace}] GPU {x.device}"

    headers: tuple[str, ...] = ("trace a", "trace b", "both busy", "either busy", "of either")
    rows = [
        (side(p.a), side(p.b), fmt_time(us(p.overlap_ns)),
         fmt_time(us(p.either_ns)), fmt_pct(p.fraction_of_either))
        for p in rows_in
    ]
    if not rows:
        headers = ()
    return Table("Across traces", headers, "llrrr" if rows else "", rows, notes)
