"""The tables of one trace's report: one builder per report section, in the order shown.

    tables = trace_tables(report, top=10)   # -> [Table]: GPUs, streams, overlaps, host, ...

Each builder reads one section of the :class:`~traceprobe.report.model.Report` (integer
nanoseconds; a report read back leniently by ``Report.from_dict`` may hold None for a
section it lacked) and returns a :class:`Table` of formatted cells
(:mod:`traceprobe.render.units`: ``fmt_time(us(ns))``), or None when the report has nothing
for it. Nothing is computed here but unit conversions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traceprobe.render.efficiency import efficiency_tables
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
    from traceprobe.metrics.devices import DeviceBusy, StreamConcurrency, StreamPair
    from traceprobe.report.model import Report

Row = Mapping[str, Any]  # a row of the several-traces tables (tables.py)


@dataclass(frozen=True)
class Table:
    """A titled table; a table without columns is only its ``notes`` (lines of text)."""

    title: str
    headers: tuple[str, ...] = ()
    align: str = ""  # one of "l"/"r" per column
    rows: Sequence[tuple[str, ...]] = ()
    notes: Sequence[str] = ()
    code: frozenset[int] = frozenset()  # columns holding names (kernels, ops, calls)

    def __post_init__(self) -> None:
        assert len(self.align) == len(self.headers), (self.title, self.align, self.headers)
        for r in self.rows:
            assert len(r) == len(self.headers), (self.title, r)


def trace_tables(report: Report, *, top: int = 10) -> list[Table]:
    """The tables of one trace's report, in the order they are shown; sections the report
    lacks are left out (``top`` caps the top-kernel, top-op and stream-pair rows)."""
    return [
        t
        for t in (
            _read_leniently(report),
            _devices(report),
            _streams(report),
            _cross_device(report),
            _copy_compute(report),
            _comm_compute(report),
            _stream_concurrency(report, top),
            _host_idle(report),
            _idle_causes(report),
            _step_breakdown(report),
            _step_regions(report),
            _copy_rates(report),
            _launch_latency(report),
            _kernel_gaps(report),
            _serial(report),
            _top_kernels(report, top),
            _top_ops(report, top),
            _steps(report),
            _critical_path(report),
        )
        if t is not None
    ] + [Table(**t) for t in efficiency_tables(report.efficiency, top)]


def _read_leniently(r: Report) -> Table | None:
    """The loader's and the report's warnings (the JSON's ``warnings``), first: every figure
    below rests on them. A cut-short trace is the first headline already."""
    warnings = [str(w) for w in r.warnings or ()]
    return Table("Read leniently", notes=warnings) if warnings else None


def _devices(r: Report) -> Table:
    devs = r.devices or ()
    if not devs:
        return Table("GPUs", notes=["No GPU activity in this window."])
    memsets = any(d.memsets or d.memset_ns for d in devs)
    headers = ["GPU", "name", "busy", "util", "idle", "kernel time", "copy time"]
    headers += ["memset time"] if memsets else []
    headers += ["active span", "kernels", "copies"] + (["memsets"] if memsets else []) + ["streams"]
    rows = []
    for d in devs:
        row = [
            fmt_device(d.device),
            str(d.name or DASH),
            fmt_time(us(d.busy_ns)),
            fmt_pct(d.utilization),
            fmt_time(us(d.idle_ns)),
            fmt_time(us(d.kernel_ns)),
            fmt_time(us(d.memcpy_ns)),
        ]
        row += [fmt_time(us(d.memset_ns))] if memsets else []
        row += [fmt_time(us(d.active_span_ns)), fmt_count(d.kernels), fmt_count(d.memcpys)]
        row += [fmt_count(d.memsets)] if memsets else []
        row += [fmt_count(d.streams)]
        rows.append(tuple(row))
    align = "rl" + "r" * (len(headers) - 2)
    notes = ["busy: time with any kernel, copy or memset running; util: busy / window"]
    return Table("GPUs", tuple(headers), align, rows, notes)


def _streams(r: Report) -> Table | None:
    streams = r.streams or ()
    if not streams:
        return None
    headers = ("GPU", "stream", "busy", "kernel time", "copy time", "kernels", "copies",
               "memsets", "self-overlap")
    rows = [
        (
            fmt_device(s.device),
            str(DASH if s.stream is None else s.stream),
            fmt_time(us(s.busy_ns)),
            fmt_time(us(s.kernel_ns)),
            fmt_time(us(s.memcpy_ns)),
            fmt_count(s.kernels),
            fmt_count(s.memcpys),
            fmt_count(s.memsets),
            fmt_time(us(s.self_overlap_ns)),
        )
        for s in streams
    ]
    notes = []
    bad = [s for s in streams if (s.self_overlap_ns or 0) > 0]
    if bad:
        where = ", ".join(f"GPU {s.device} stream {s.stream}" for s in bad)
        notes.append(f"activities of one stream overlap each other on {where}: either "
                     "programmatic dependent launch (Hopper and later start a kernel before the "
                     "previous one ends) or skewed timestamps; the trace cannot tell which")
    return Table("Streams", headers, "r" * len(headers), rows, notes)


def _cross_device(r: Report) -> Table | None:
    pairs = (r.overlap.cross_device if r.overlap is not None else None) or ()
    if not pairs:
        return None
    headers = ("GPUs", "both busy", "either busy", "of either", "of the less busy")
    rows = [
        (
            " & ".join(str(d) for d in p.devices or []),
            fmt_time(us(p.overlap_ns)),
            fmt_time(us(p.either_ns)),
            fmt_pct(p.fraction_of_either),
            fmt_pct(p.fraction_of_min),
        )
        for p in pairs
    ]
    notes = []
    multi = us(r.overlap.multi_device_ns)
    if multi is not None:
        notes.append(f"time with two or more GPUs busy at once: {fmt_time(multi)}")
    return Table("GPU vs GPU", headers, "lrrrr", rows, notes)


def _copy_compute(r: Report) -> Table | None:
    rows_in = (r.overlap.copy_compute if r.overlap is not None else None) or ()
    if not rows_in:
        return None
    headers = ("GPU", "direction", "copies", "bytes", "copy time", "hidden", "exposed",
               "hidden %", "pageable")
    rows = [
        (
            fmt_device(c.device),
            str(DASH if c.direction is None else c.direction),
            fmt_count(c.copies),
            fmt_bytes(c.bytes),
            fmt_time(us(c.memcpy_ns)),
            fmt_time(us(c.hidden_ns)),
            fmt_time(us(c.exposed_ns)),
            fmt_pct(c.hidden_fraction),
            fmt_count(c.pageable),
        )
        for c in rows_in
    ]
    notes = ["hidden: copy time during which a kernel ran on the same GPU; "
             "pageable: copies from or to pageable (not pinned) host memory"]
    return Table("Copies vs compute", headers, "rlrrrrrrr", rows, notes)


def _comm_compute(r: Report) -> Table | None:
    rows_in = (r.overlap.comm_compute if r.overlap is not None else None) or ()
    if not rows_in:
        return None
    headers = ("GPU", "communication", "hidden", "exposed", "hidden %")
    rows = [
        (
            fmt_device(c.device),
            fmt_time(us(c.comm_ns)),
            fmt_time(us(c.hidden_ns)),
            fmt_time(us(c.exposed_ns)),
            fmt_pct(c.hidden_fraction),
        )
        for c in rows_in
    ]
    notes = ["hidden: communication-kernel time during which another kernel ran on the same GPU"]
    return Table("Communication vs compute", headers, "rrrrr", rows, notes)


def _stream_concurrency(r: Report, top: int) -> Table | None:
    rows_in = [s for s in (r.overlap.streams if r.overlap is not None else None) or ()
               if (s.streams or 0) >= 2]
    if not rows_in:
        return None
    headers = ("GPU", "streams", "2+ busy", "most at once", "most overlapping pair", "pair overlap")
    rows = []
    for s in rows_in:
        pairs = _overlapping_pairs(s)
        best = pairs[0] if pairs else None
        rows.append(
            (
                fmt_device(s.device),
                fmt_count(s.streams),
                fmt_time(us(s.concurrent_ns)),
                fmt_count(s.max_concurrent),
                " & ".join(str(x) for x in best.streams or []) if best else DASH,
                fmt_time(us(best.overlap_ns)) if best else DASH,
            )
        )
    notes = ["2+ busy: time with at least two of the GPU's streams running at once"]
    for s in rows_in:
        pairs = _overlapping_pairs(s)
        if len(pairs) > 1:
            shown = ", ".join(
                f"{'&'.join(str(x) for x in p.streams or [])} "
                f"{fmt_time(us(p.overlap_ns))}"
                for p in pairs[:top]
            )
            more = f" and {len(pairs) - top} more" if len(pairs) > top else ""
            notes.append(f"GPU {s.device} overlapping stream pairs: {shown}{more}")
    return Table("Stream vs stream", headers, "rrrrlr", rows, notes)


def _overlapping_pairs(s: StreamConcurrency) -> list[StreamPair]:
    """The stream pairs of one GPU that overlapped at all, the most overlapping first."""
    return sorted(
        (p for p in s.pairs or () if (p.overlap_ns or 0) > 0),
        key=lambda p: -float(us(p.overlap_ns) or 0),
    )


def _host_idle(r: Report) -> Table | None:
    devs = (r.host.devices if r.host is not None else None) or ()
    if not devs:
        return None
    headers = ("GPU", "GPU idle", "host busy meanwhile")
    rows = [
        (fmt_device(d.device), fmt_time(us(d.idle_ns)), fmt_time(us(d.idle_host_busy_ns)))
        for d in devs
    ]
    notes = ["host busy meanwhile: GPU idle time during which the host ran runtime calls, "
             "syncs or CPU ops"]
    return Table("Host vs GPU", headers, "rrr", rows, notes)


def _idle_causes(r: Report) -> Table | None:
    rows = []
    for d in (r.host.devices if r.host is not None else None) or ():
        for c in d.causes or ():
            rows.append((fmt_device(d.device), str(c.name), str(c.kind), fmt_time(us(c.ns)),
                         fmt_pct(c.share), fmt_count(c.calls)))
            for k in c.children or ():
                rows.append(("", f"  └ {k.name}", "", fmt_time(us(k.ns)), fmt_pct(k.share), ""))
    if not rows:
        return None
    headers = ("GPU", "cause", "kind", "GPU idle", "share", "calls")
    notes = ["each idle nanosecond has one cause: the innermost region (DataLoader, optimizer, "
             "record_function), else a sync, else the innermost CPU op or runtime call, else "
             "Python (untraced); └ rows split a region by the innermost call inside it"]
    return Table("Why the GPU was idle", headers, "rllrrr", rows, notes, code=frozenset({1}))


def _step_breakdown(r: Report) -> Table | None:
    rows_in = r.step_breakdown or ()
    if not rows_in:
        return None
    names = [p.name for p in rows_in[0].parts or ()]
    nonzero = {p.name for b in rows_in for p in b.parts or () if (p.ns or 0) > 0}
    used = [n for n in names if n in nonzero]
    headers = ("step", "GPU", "length", *used)
    rows = []
    for b in rows_in:
        parts = {p.name: p for p in b.parts or ()}
        rows.append((str(b.step), fmt_device(b.device), fmt_time(us(b.end_ns - b.start_ns)),
                     *(f"{fmt_time(us(parts[n].ns))} ({fmt_pct(parts[n].share)})"
                       for n in used)))
    notes = ["each instant of a step goes to the first of kernel, memcpy, memset, "
             "communication, runtime, dataloader, cpu_exec that is active, else other; "
             "the parts sum to the step"]
    return Table("Step-time breakdown", headers, "r" * len(headers), rows, notes)


def _step_regions(r: Report) -> Table | None:
    seen: set[Any] = set()
    rows = []
    for b in r.step_breakdown or ():
        if b.step in seen:  # regions are host-side: the same for every GPU
            continue
        seen.add(b.step)
        for p in b.regions or ():
            rows.append((str(b.step), str(p.name), fmt_time(us(p.ns)), fmt_pct(p.share)))
    if not rows or all(row[1] == "(no region)" for row in rows):
        return None
    return Table("Step time by region", ("step", "region", "time", "share"), "rlrr", rows,
                 ["the innermost record_function, DataLoader or optimizer range at each instant"],
                 code=frozenset({1}))


def _copy_rates(r: Report) -> Table | None:
    rates = r.copies or ()
    if not rates:
        return None
    headers = ("GPU", "direction", "memory", "copies", "bytes", "time", "GB/s", "of link")
    rows = [
        (fmt_device(c.device), str(c.direction or DASH),
         f"{c.src_kind or '?'} -> {c.dst_kind or '?'}", fmt_count(c.copies),
         fmt_bytes(c.bytes), fmt_time(us(c.ns)),
         DASH if c.gb_per_s is None else f"{c.gb_per_s:.3g}",
         DASH if c.link_share is None
         else f"{fmt_pct(c.link_share)} of {c.link} {c.link_gb_per_s:.3g}")
        for c in rates
    ]
    notes = ["GB/s: bytes / summed copy time (10^9 bytes per second)"]
    if any(c.pageable for c in rates):
        notes.append("pageable host memory is staged and blocks the host: pin it "
                     "(tensor.pin_memory(), DataLoader(pin_memory=True))")
    return Table("Copy bandwidth", headers, "rllrrrrr", rows, notes)


def _launch_latency(r: Report) -> Table | None:
    lat = r.host.launch_latency if r.host is not None else None
    if not lat or not lat.count:
        return None
    line = (
        f"from launch call to kernel start, over {fmt_count(lat.count)} kernels: "
        f"mean {fmt_time(us(lat.mean_ns))}, p50 {fmt_time(us(lat.p50_ns))}, "
        f"p95 {fmt_time(us(lat.p95_ns))}, max {fmt_time(us(lat.max_ns))}"
    )
    notes = [line]
    if lat.waited_count:
        notes.append(f"{fmt_count(lat.waited_count)} kernels launched onto an idle "
                     "stream waited on another stream (event wait, NCCL ordering): not overhead")
    if lat.unqueued_count:
        notes.append(
            f"launch overhead (onto an idle stream, no queueing or cross-stream wait), over "
            f"{fmt_count(lat.unqueued_count)} kernels: p50 "
            f"{fmt_time(us(lat.unqueued_p50_ns))}, max {fmt_time(us(lat.unqueued_max_ns))}"
        )
    return Table("Launch latency", notes=notes)


def _kernel_gaps(r: Report) -> Table | None:
    gaps = (r.host.kernel_gaps if r.host is not None else None) or ()
    if not gaps:
        return None
    headers = ("GPU", "stream", "gaps", "mean gap", "p50 gap", "max gap", "p50 kernel",
               "host-late gaps", "p50 host-late", "launch-bound")
    rows = [
        (
            fmt_device(g.device),
            str(DASH if g.stream is None else g.stream),
            fmt_count(g.gaps),
            fmt_time(us(g.mean_ns)),
            fmt_time(us(g.p50_ns)),
            fmt_time(us(g.max_ns)),
            fmt_time(us(g.kernel_p50_ns)),
            fmt_count(g.host_late_gaps),
            fmt_time(us(g.host_late_p50_ns)),
            "yes" if g.launch_bound else "no",
        )
        for g in gaps
    ]
    notes = ["host-late gap: the whole GPU idle and the next kernel launched after the previous "
             "began; launch-bound: at least 10 of them, longer (median) than the median kernel"]
    return Table("Gaps between kernels", headers, "rrrrrrrrrl", rows, notes)


def _serial(r: Report) -> Table | None:
    s = r.serial
    if not s or not s.serial_ns:
        return None
    lines = [
        f"work summed over streams: {fmt_time(us(s.serial_ns))}; "
        f"time any GPU was busy: {fmt_time(us(s.busy_union_ns))}; "
        f"GPU span: {fmt_time(us(s.gpu_span_ns))}",
        f"summed work / GPU span: {fmt_ratio(s.speedup_vs_span)}; "
        f"parallelism: {fmt_ratio(s.parallelism)} "
        f"(summed work / busy time: streams at work on average while any was)",
    ]
    return Table("Serial vs parallel", notes=lines)


def _top_kernels(r: Report, top: int) -> Table | None:
    ks = list(r.top_kernels or ())[:top]
    if not ks:
        return None
    launch = any(k.grid for k in ks)
    headers: tuple[str, ...] = ("kernel", "GPU", "count", "total", "mean", "share")
    headers += ("grid", "block", "regs", "occupancy") if launch else ()
    rows = []
    for k in ks:
        row: tuple[str, ...] = (
               str(k.name), fmt_device(k.device), fmt_count(k.count),
               fmt_time(us(k.total_ns)), fmt_time(us(k.mean_ns)), fmt_pct(k.fraction))
        if launch:
            regs, occ = k.registers_per_thread, k.occupancy
            row += (str(k.grid or DASH), str(k.block or DASH),
                    DASH if regs is None else f"{regs:.0f}",
                    DASH if occ is None else f"{occ:.0f}%")
        rows.append(row)
    return Table("Top kernels", headers, "lrrrrr" + ("llrr" if launch else ""), rows,
                 code=frozenset({0}))


def _top_ops(r: Report, top: int) -> Table | None:
    ops = list(r.top_ops or ())[:top]
    if not ops:
        return None
    shapes = any(o.input_dims for o in ops)
    headers = ("CPU op", "count", "self", "total", "mean") + (("input dims",) if shapes else ())
    rows = [
        (str(o.name), fmt_count(o.count), fmt_time(us(o.self_ns)),
         fmt_time(us(o.total_ns)), fmt_time(us(o.mean_ns)))
        + ((str(o.input_dims or DASH),) if shapes else ())
        for o in ops
    ]
    notes = ["self: time not spent in CPU ops the op called; by self time"
             + ("; one row per input shape" if shapes else "")]
    return Table("Top CPU ops", headers, "lrrrr" + ("l" if shapes else ""), rows, notes,
                 code=frozenset({0}))


def _steps(r: Report) -> Table | None:
    steps = r.steps or ()
    if not steps:
        return None
    headers = ("step", "length", "GPU", "busy", "util", "copies hidden")
    rows = []
    for s in steps:
        step = str(s.window.step)
        hidden: dict[int | None, float | None] = {
            c.device: c.hidden_fraction
            for c in (s.overlap.copy_compute if s.overlap is not None else None) or ()
            if c.direction == "all"
        }
        devs: Sequence[DeviceBusy | None] = s.devices or [None]
        for d in devs:
            rows.append((step, fmt_time(us(s.span_ns)),
                         fmt_device(None if d is None else d.device),
                         DASH if d is None else fmt_time(us(d.busy_ns)),
                         DASH if d is None else fmt_pct(d.utilization),
                         fmt_pct(hidden.get(None if d is None else d.device))))
    return Table("Profiler steps", headers, "rrrrrr", rows)


def _critical_path(r: Report) -> Table | None:
    """What lies on the window's critical path (traceprobe.graph), and on each step's."""
    rows = []
    for label, cp in [("window", r.critical_path)] + [
        (f"step {s.window.step}", s.critical_path) for s in r.steps or ()
    ]:
        if not isinstance(cp, Mapping) or not cp.get("length_us"):
            continue
        length = cp["length_us"]
        br = sorted((cp.get("breakdown") or {}).items(), key=lambda kv: -kv[1])
        parts = ", ".join(f"{k} {fmt_pct(v / length)}" for k, v in br[:3] if v > 0)
        rows.append((label, fmt_time(length), str(cp.get("bound_by") or DASH), parts))
    if not rows:
        return None
    headers = ("window", "path length", "bound by", "largest parts")
    return Table("Critical path", headers, "lrll", rows)
