"""The tables of one trace's report: one builder per report section, in the order shown.

    tables = trace_tables(report, top=10)   # -> [Table]: GPUs, streams, overlaps, host, ...

Each builder reads one section of the report dict (docs/REPORT_SCHEMA.md) with ``.get``
and returns a :class:`Table` of formatted cells (:mod:`traceprobe.render.units`), or None
when the report has nothing for it. Nothing is computed here but unit conversions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from traceprobe.render.efficiency import efficiency_tables
from traceprobe.render.units import (
    DASH,
    fmt_bytes,
    fmt_count,
    fmt_device,
    fmt_pct,
    fmt_ratio,
    fmt_time,
)

Row = Mapping[str, Any]


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


def trace_tables(report: Mapping[str, Any], *, top: int = 10) -> list[Table]:
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
    ] + [Table(**t) for t in efficiency_tables(report, top)]


def _read_leniently(r: Mapping[str, Any]) -> Table | None:
    """The loader's and the report's warnings (the JSON's ``warnings``), first: every figure
    below rests on them. A cut-short trace is the first headline already."""
    warnings = [str(w) for w in r.get("warnings") or ()]
    return Table("Read leniently", notes=warnings) if warnings else None


def _rows(r: Mapping[str, Any], *path: str) -> list[Row]:
    cur: Any = r
    for key in path:
        cur = (cur or {}).get(key)
    return [x for x in (cur or []) if isinstance(x, Mapping)]


def _devices(r: Mapping[str, Any]) -> Table:
    devs = _rows(r, "devices")
    if not devs:
        return Table("GPUs", notes=["No GPU activity in this window."])
    memsets = any(d.get("memsets") or d.get("memset_us") for d in devs)
    headers = ["GPU", "name", "busy", "util", "idle", "kernel time", "copy time"]
    headers += ["memset time"] if memsets else []
    headers += ["active span", "kernels", "copies"] + (["memsets"] if memsets else []) + ["streams"]
    rows = []
    for d in devs:
        row = [
            fmt_device(d.get("device")),
            str(d.get("name") or DASH),
            fmt_time(d.get("busy_us")),
            fmt_pct(d.get("utilization")),
            fmt_time(d.get("idle_us")),
            fmt_time(d.get("kernel_us")),
            fmt_time(d.get("memcpy_us")),
        ]
        row += [fmt_time(d.get("memset_us"))] if memsets else []
        row += [fmt_time(d.get("active_span_us")), fmt_count(d.get("kernels")),
                fmt_count(d.get("memcpys"))]
        row += [fmt_count(d.get("memsets"))] if memsets else []
        row += [fmt_count(d.get("streams"))]
        rows.append(tuple(row))
    align = "rl" + "r" * (len(headers) - 2)
    notes = ["busy: time with any kernel, copy or memset running; util: busy / window"]
    return Table("GPUs", tuple(headers), align, rows, notes)


def _streams(r: Mapping[str, Any]) -> Table | None:
    streams = _rows(r, "streams")
    if not streams:
        return None
    headers = ("GPU", "stream", "busy", "kernel time", "copy time", "kernels", "copies",
               "memsets", "self-overlap")
    rows = [
        (
            fmt_device(s.get("device")),
            str(s.get("stream", DASH)),
            fmt_time(s.get("busy_us")),
            fmt_time(s.get("kernel_us")),
            fmt_time(s.get("memcpy_us")),
            fmt_count(s.get("kernels")),
            fmt_count(s.get("memcpys")),
            fmt_count(s.get("memsets")),
            fmt_time(s.get("self_overlap_us")),
        )
        for s in streams
    ]
    notes = []
    bad = [s for s in streams if (s.get("self_overlap_us") or 0) > 0]
    if bad:
        where = ", ".join(f"GPU {s.get('device')} stream {s.get('stream')}" for s in bad)
        notes.append(f"activities of one stream overlap each other on {where}: either "
                     "programmatic dependent launch (Hopper and later start a kernel before the "
                     "previous one ends) or skewed timestamps; the trace cannot tell which")
    return Table("Streams", headers, "r" * len(headers), rows, notes)


def _cross_device(r: Mapping[str, Any]) -> Table | None:
    pairs = _rows(r, "overlap", "cross_device")
    if not pairs:
        return None
    headers = ("GPUs", "both busy", "either busy", "of either", "of the less busy")
    rows = [
        (
            " & ".join(str(d) for d in p.get("devices") or []),
            fmt_time(p.get("overlap_us")),
            fmt_time(p.get("either_us")),
            fmt_pct(p.get("fraction_of_either")),
            fmt_pct(p.get("fraction_of_min")),
        )
        for p in pairs
    ]
    notes = []
    multi = (r.get("overlap") or {}).get("multi_device_us")
    if multi is not None:
        notes.append(f"time with two or more GPUs busy at once: {fmt_time(multi)}")
    return Table("GPU vs GPU", headers, "lrrrr", rows, notes)


def _copy_compute(r: Mapping[str, Any]) -> Table | None:
    rows_in = _rows(r, "overlap", "copy_compute")
    if not rows_in:
        return None
    headers = ("GPU", "direction", "copies", "bytes", "copy time", "hidden", "exposed",
               "hidden %", "pageable")
    rows = [
        (
            fmt_device(c.get("device")),
            str(c.get("direction", DASH)),
            fmt_count(c.get("copies")),
            fmt_bytes(c.get("bytes")),
            fmt_time(c.get("memcpy_us")),
            fmt_time(c.get("hidden_us")),
            fmt_time(c.get("exposed_us")),
            fmt_pct(c.get("hidden_fraction")),
            fmt_count(c.get("pageable")),
        )
        for c in rows_in
    ]
    notes = ["hidden: copy time during which a kernel ran on the same GPU; "
             "pageable: copies from or to pageable (not pinned) host memory"]
    return Table("Copies vs compute", headers, "rlrrrrrrr", rows, notes)


def _comm_compute(r: Mapping[str, Any]) -> Table | None:
    rows_in = _rows(r, "overlap", "comm_compute")
    if not rows_in:
        return None
    headers = ("GPU", "communication", "hidden", "exposed", "hidden %")
    rows = [
        (
            fmt_device(c.get("device")),
            fmt_time(c.get("comm_us")),
            fmt_time(c.get("hidden_us")),
            fmt_time(c.get("exposed_us")),
            fmt_pct(c.get("hidden_fraction")),
        )
        for c in rows_in
    ]
    notes = ["hidden: communication-kernel time during which another kernel ran on the same GPU"]
    return Table("Communication vs compute", headers, "rrrrr", rows, notes)


def _stream_concurrency(r: Mapping[str, Any], top: int) -> Table | None:
    rows_in = [s for s in _rows(r, "overlap", "streams") if (s.get("streams") or 0) >= 2]
    if not rows_in:
        return None
    headers = ("GPU", "streams", "2+ busy", "most at once", "most overlapping pair", "pair overlap")
    rows = []
    for s in rows_in:
        pairs = _overlapping_pairs(s)
        best = pairs[0] if pairs else None
        rows.append(
            (
                fmt_device(s.get("device")),
                fmt_count(s.get("streams")),
                fmt_time(s.get("concurrent_us")),
                fmt_count(s.get("max_concurrent")),
                " & ".join(str(x) for x in best.get("streams") or []) if best else DASH,
                fmt_time(best.get("overlap_us")) if best else DASH,
            )
        )
    notes = ["2+ busy: time with at least two of the GPU's streams running at once"]
    for s in rows_in:
        pairs = _overlapping_pairs(s)
        if len(pairs) > 1:
            shown = ", ".join(
                f"{'&'.join(str(x) for x in p.get('streams') or [])} "
                f"{fmt_time(p.get('overlap_us'))}"
                for p in pairs[:top]
            )
            more = f" and {len(pairs) - top} more" if len(pairs) > top else ""
            notes.append(f"GPU {s.get('device')} overlapping stream pairs: {shown}{more}")
    return Table("Stream vs stream", headers, "rrrrlr", rows, notes)


def _overlapping_pairs(s: Row) -> list[Row]:
    """The stream pairs of one GPU that overlapped at all, the most overlapping first."""
    return sorted(
        (p for p in s.get("pairs") or [] if (p.get("overlap_us") or 0) > 0),
        key=lambda p: -float(p.get("overlap_us") or 0),
    )


def _host_idle(r: Mapping[str, Any]) -> Table | None:
    devs = _rows(r, "host", "devices")
    if not devs:
        return None
    headers = ("GPU", "GPU idle", "host busy meanwhile")
    rows = [
        (fmt_device(d.get("device")), fmt_time(d.get("idle_us")),
         fmt_time(d.get("idle_host_busy_us")))
        for d in devs
    ]
    notes = ["host busy meanwhile: GPU idle time during which the host ran runtime calls, "
             "syncs or CPU ops"]
    return Table("Host vs GPU", headers, "rrr", rows, notes)


def _idle_causes(r: Mapping[str, Any]) -> Table | None:
    rows = []
    for d in _rows(r, "host", "devices"):
        for c in d.get("causes") or []:
            rows.append((fmt_device(d.get("device")), str(c.get("name", DASH)),
                         str(c.get("kind", DASH)), fmt_time(c.get("us")),
                         fmt_pct(c.get("share")), fmt_count(c.get("calls"))))
            for k in c.get("children") or []:
                rows.append(("", f"  └ {k.get('name', DASH)}", "", fmt_time(k.get("us")),
                             fmt_pct(k.get("share")), ""))
    if not rows:
        return None
    headers = ("GPU", "cause", "kind", "GPU idle", "share", "calls")
    notes = ["each idle nanosecond has one cause: the innermost region (DataLoader, optimizer, "
             "record_function), else a sync, else the innermost CPU op or runtime call, else "
             "Python (untraced); └ rows split a region by the innermost call inside it"]
    return Table("Why the GPU was idle", headers, "rllrrr", rows, notes, code=frozenset({1}))


def _step_breakdown(r: Mapping[str, Any]) -> Table | None:
    rows_in = _rows(r, "step_breakdown")
    if not rows_in:
        return None
    names = [p.get("name", "") for p in rows_in[0].get("parts") or []]
    nonzero = {p.get("name") for b in rows_in for p in b.get("parts") or []
               if (p.get("us") or 0) > 0}
    used = [n for n in names if n in nonzero]
    headers = ("step", "GPU", "length", *used)
    rows = []
    for b in rows_in:
        parts = {p.get("name"): p for p in b.get("parts") or []}
        length = (b.get("end_us") or 0) - (b.get("start_us") or 0)
        rows.append((str(b.get("step", DASH)), fmt_device(b.get("device")), fmt_time(length),
                     *(f"{fmt_time(parts[n].get('us'))} ({fmt_pct(parts[n].get('share'))})"
                       for n in used)))
    notes = ["each instant of a step goes to the first of kernel, memcpy, memset, "
             "communication, runtime, dataloader, cpu_exec that is active, else other; "
             "the parts sum to the step"]
    return Table("Step-time breakdown", headers, "r" * len(headers), rows, notes)


def _step_regions(r: Mapping[str, Any]) -> Table | None:
    seen: set[Any] = set()
    rows = []
    for b in _rows(r, "step_breakdown"):
        if b.get("step") in seen:  # regions are host-side: the same for every GPU
            continue
        seen.add(b.get("step"))
        for p in b.get("regions") or []:
            rows.append((str(b.get("step", DASH)), str(p.get("name", DASH)),
                         fmt_time(p.get("us")), fmt_pct(p.get("share"))))
    if not rows or all(row[1] == "(no region)" for row in rows):
        return None
    return Table("Step time by region", ("step", "region", "time", "share"), "rlrr", rows,
                 ["the innermost record_function, DataLoader or optimizer range at each instant"],
                 code=frozenset({1}))


def _copy_rates(r: Mapping[str, Any]) -> Table | None:
    rates = _rows(r, "copies")
    if not rates:
        return None
    headers = ("GPU", "direction", "memory", "copies", "bytes", "time", "GB/s", "of link")
    rows = [
        (fmt_device(c.get("device")), str(c.get("direction") or DASH),
         f"{c.get('src_kind') or '?'} -> {c.get('dst_kind') or '?'}", fmt_count(c.get("copies")),
         fmt_bytes(c.get("bytes")), fmt_time(c.get("us")),
         DASH if c.get("gb_per_s") is None else f"{c['gb_per_s']:.3g}",
         DASH if c.get("link_share") is None
         else f"{fmt_pct(c.get('link_share'))} of {c.get('link')} {c.get('link_gb_per_s'):.3g}")
        for c in rates
    ]
    notes = ["GB/s: bytes / summed copy time (10^9 bytes per second)"]
    if any(c.get("pageable") for c in rates):
        notes.append("pageable host memory is staged and blocks the host: pin it "
                     "(tensor.pin_memory(), DataLoader(pin_memory=True))")
    return Table("Copy bandwidth", headers, "rllrrrrr", rows, notes)


def _launch_latency(r: Mapping[str, Any]) -> Table | None:
    lat = (r.get("host") or {}).get("launch_latency")
    if not lat or not lat.get("count"):
        return None
    line = (
        f"from launch call to kernel start, over {fmt_count(lat.get('count'))} kernels: "
        f"mean {fmt_time(lat.get('mean_us'))}, p50 {fmt_time(lat.get('p50_us'))}, "
        f"p95 {fmt_time(lat.get('p95_us'))}, max {fmt_time(lat.get('max_us'))}"
    )
    notes = [line]
    if lat.get("waited_count"):
        notes.append(f"{fmt_count(lat.get('waited_count'))} kernels launched onto an idle "
                     "stream waited on another stream (event wait, NCCL ordering): not overhead")
    if lat.get("unqueued_count"):
        notes.append(
            f"launch overhead (onto an idle stream, no queueing or cross-stream wait), over "
            f"{fmt_count(lat.get('unqueued_count'))} kernels: p50 "
            f"{fmt_time(lat.get('unqueued_p50_us'))}, max {fmt_time(lat.get('unqueued_max_us'))}"
        )
    return Table("Launch latency", notes=notes)


def _kernel_gaps(r: Mapping[str, Any]) -> Table | None:
    gaps = _rows(r, "host", "kernel_gaps")
    if not gaps:
        return None
    headers = ("GPU", "stream", "gaps", "mean gap", "p50 gap", "max gap", "p50 kernel",
               "host-late gaps", "p50 host-late", "launch-bound")
    rows = [
        (
            fmt_device(g.get("device")),
            str(g.get("stream", DASH)),
            fmt_count(g.get("gaps")),
            fmt_time(g.get("mean_us")),
            fmt_time(g.get("p50_us")),
            fmt_time(g.get("max_us")),
            fmt_time(g.get("kernel_p50_us")),
            fmt_count(g.get("host_late_gaps")),
            fmt_time(g.get("host_late_p50_us")),
            "yes" if g.get("launch_bound") else "no",
        )
        for g in gaps
    ]
    notes = ["host-late gap: the whole GPU idle and the next kernel launched after the previous "
             "began; launch-bound: at least 10 of them, longer (median) than the median kernel"]
    return Table("Gaps between kernels", headers, "rrrrrrrrrl", rows, notes)


def _serial(r: Mapping[str, Any]) -> Table | None:
    s = r.get("serial")
    if not s or not s.get("serial_us"):
        return None
    lines = [
        f"work summed over streams: {fmt_time(s.get('serial_us'))}; "
        f"time any GPU was busy: {fmt_time(s.get('busy_union_us'))}; "
        f"GPU span: {fmt_time(s.get('gpu_span_us'))}",
        f"summed work / GPU span: {fmt_ratio(s.get('speedup_vs_span'))}; "
        f"parallelism: {fmt_ratio(s.get('parallelism'))} "
        f"(summed work / busy time: streams at work on average while any was)",
    ]
    return Table("Serial vs parallel", notes=lines)


def _top_kernels(r: Mapping[str, Any], top: int) -> Table | None:
    ks = _rows(r, "top_kernels")[:top]
    if not ks:
        return None
    launch = any(k.get("grid") for k in ks)
    headers: tuple[str, ...] = ("kernel", "GPU", "count", "total", "mean", "share")
    headers += ("grid", "block", "regs", "occupancy") if launch else ()
    rows = []
    for k in ks:
        row: tuple[str, ...] = (
               str(k.get("name", DASH)), fmt_device(k.get("device")), fmt_count(k.get("count")),
               fmt_time(k.get("total_us")), fmt_time(k.get("mean_us")), fmt_pct(k.get("fraction")))
        if launch:
            regs, occ = k.get("registers_per_thread"), k.get("occupancy")
            row += (str(k.get("grid") or DASH), str(k.get("block") or DASH),
                    DASH if regs is None else f"{regs:.0f}",
                    DASH if occ is None else f"{occ:.0f}%")
        rows.append(row)
    return Table("Top kernels", headers, "lrrrrr" + ("llrr" if launch else ""), rows,
                 code=frozenset({0}))


def _top_ops(r: Mapping[str, Any], top: int) -> Table | None:
    ops = _rows(r, "top_ops")[:top]
    if not ops:
        return None
    shapes = any(o.get("input_dims") for o in ops)
    headers = ("CPU op", "count", "self", "total", "mean") + (("input dims",) if shapes else ())
    rows = [
        (str(o.get("name", DASH)), fmt_count(o.get("count")), fmt_time(o.get("self_us")),
         fmt_time(o.get("total_us")), fmt_time(o.get("mean_us")))
        + ((str(o.get("input_dims") or DASH),) if shapes else ())
        for o in ops
    ]
    notes = ["self: time not spent in CPU ops the op called; by self time"
             + ("; one row per input shape" if shapes else "")]
    return Table("Top CPU ops", headers, "lrrrr" + ("l" if shapes else ""), rows, notes,
                 code=frozenset({0}))


def _steps(r: Mapping[str, Any]) -> Table | None:
    steps = _rows(r, "steps")
    if not steps:
        return None
    headers = ("step", "length", "GPU", "busy", "util", "copies hidden")
    rows = []
    for s in steps:
        step = str((s.get("window") or {}).get("step", DASH))
        hidden = {
            c.get("device"): c.get("hidden_fraction")
            for c in _rows(s, "overlap", "copy_compute")
            if c.get("direction") == "all"
        }
        devs = _rows(s, "devices") or [{}]
        for d in devs:
            rows.append((step, fmt_time(s.get("span_us")), fmt_device(d.get("device")),
                         fmt_time(d.get("busy_us")), fmt_pct(d.get("utilization")),
                         fmt_pct(hidden.get(d.get("device")))))
    return Table("Profiler steps", headers, "rrrrrr", rows)


def _critical_path(r: Mapping[str, Any]) -> Table | None:
    """What lies on the window's critical path (traceprobe.graph), and on each step's."""
    rows = []
    for label, cp in [("window", r.get("critical_path"))] + [
        (f"step {(s.get('window') or {}).get('step', DASH)}", s.get("critical_path"))
        for s in _rows(r, "steps")
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
