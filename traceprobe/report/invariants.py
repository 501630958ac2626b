"""The invariants every report must satisfy, checked in integer nanoseconds.

:func:`check` takes either kind of report; tests call it on every report they build.
Each failed assertion names the figure and the values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from traceprobe.metrics.devices import TOP_PAIRS
from traceprobe.metrics.host import LAUNCH_BOUND_SHARE, MIN_LAUNCH_GAPS
from traceprobe.report.model import MultiReport, Report

_EPS = 1e-9


def _le(a: float, b: float, what: str) -> None:
    assert a <= b, f"{what}: {a} > {b}"


def _fraction(value: float | None, num: float, den: float, what: str) -> None:
    if den == 0:
        assert value is None, f"{what}: {value} for a fraction of zero time, want None"
        return
    assert value is not None, f"{what}: None but the denominator is {den}"
    assert 0.0 <= value <= 1.0 + _EPS, f"{what}: {value} outside [0, 1]"
    assert abs(value - num / den) <= _EPS, f"{what}: {value} != {num}/{den}"


def check_report(r: Report) -> None:
    span = r.span_ns
    assert span == r.window.end_ns - r.window.start_ns >= 0, f"span {span} vs window {r.window}"
    _le(0, r.gpu_span_ns, "gpu_span")
    _le(r.gpu_span_ns, span, "gpu_span <= span")
    _check_devices(r)
    _check_overlap(r)
    _check_host(r)
    _check_serial_and_top(r)
    _check_efficiency(r)
    for s in r.steps:
        assert not s.steps, "a step report holds steps of its own"
        check_report(s)
    _check_steps(r)


def _check_devices(r: Report) -> None:
    span = r.span_ns
    ids = [d.device for d in r.devices]
    assert ids == sorted(set(ids)), f"devices not unique and sorted: {ids}"
    streams_of = Counter(s.device for s in r.streams)
    for d in r.devices:
        tag = f"device {d.device}"
        kinds = (d.kernel_ns, d.memcpy_ns, d.memset_ns)
        _le(0, min(kinds), f"{tag} kind busy")
        _le(max(kinds), d.busy_ns, f"{tag} kind busy <= busy")
        _le(d.busy_ns, sum(kinds), f"{tag} busy <= kernel + memcpy + memset")
        _le(d.busy_ns, d.active_span_ns, f"{tag} busy <= active span")
        _le(d.active_span_ns, r.gpu_span_ns, f"{tag} active span <= gpu span")
        _le(d.busy_ns, span, f"{tag} busy <= span")
        assert d.idle_ns == span - d.busy_ns, f"{tag} idle {d.idle_ns} != span - busy"
        _fraction(d.utilization, d.busy_ns, span, f"{tag} utilization")
        assert d.busy.length == d.busy_ns, f"{tag} busy set disagrees with busy_ns"
        assert d.streams == streams_of[d.device], f"{tag} streams {d.streams}"
        assert min(d.kernels, d.memcpys, d.memsets) >= 0, f"{tag} negative count"
    c = r.counts
    for name in ("kernels", "memcpys", "memsets"):
        total = sum(getattr(d, name) for d in r.devices)
        assert total == getattr(c, name), f"counts.{name} {getattr(c, name)} != Σ devices {total}"
    by_dev = {d.device: d for d in r.devices}
    stream_sum: Counter[int] = Counter()
    for s in r.streams:
        tag = f"device {s.device} stream {s.stream}"
        assert s.device in by_dev, f"{tag}: device not listed"
        _le(s.kernel_ns, s.busy_ns, f"{tag} kernel <= busy")
        _le(s.memcpy_ns, s.busy_ns, f"{tag} memcpy <= busy")
        _le(s.self_overlap_ns, s.busy_ns, f"{tag} self overlap <= busy")
        _le(s.busy_ns, by_dev[s.device].busy_ns, f"{tag} busy <= device busy")
        stream_sum[s.device] += s.busy_ns
    for d in r.devices:
        _le(d.busy_ns, stream_sum[d.device], f"device {d.device} busy <= Σ stream busy")


def _check_overlap(r: Report) -> None:
    o = r.overlap
    busy = {d.device: d for d in r.devices}
    n = len(r.devices)
    assert len(o.cross_device) == n * (n - 1) // 2, "cross_device: not one row per pair"
    for p in o.cross_device:
        a, b = busy[p.devices[0]].busy_ns, busy[p.devices[1]].busy_ns
        tag = f"devices {p.devices}"
        assert p.devices[0] < p.devices[1], f"{tag} not ordered"
        _le(0, p.overlap_ns, f"{tag} overlap")
        _le(p.overlap_ns, min(a, b), f"{tag} overlap <= min busy")
        assert p.either_ns == a + b - p.overlap_ns, f"{tag} either != a + b - both"
        _fraction(p.fraction_of_either, p.overlap_ns, p.either_ns, f"{tag} fraction_of_either")
        _fraction(p.fraction_of_min, p.overlap_ns, min(a, b), f"{tag} fraction_of_min")
    pair_max = max((p.overlap_ns for p in o.cross_device), default=0)
    _le(pair_max, o.multi_device_ns, "max pair overlap <= multi_device")
    _le(o.multi_device_ns, sum(p.overlap_ns for p in o.cross_device), "multi_device <= Σ pairs")
    _le(o.multi_device_ns, r.span_ns, "multi_device <= span")

    all_rows = [c for c in o.copy_compute if c.direction == "all"]
    assert [c.device for c in all_rows] == list(busy), "copy_compute: one 'all' row per device"
    for c in o.copy_compute:
        tag = f"copies device {c.device} {c.direction}"
        d = busy[c.device]
        assert c.hidden_ns + c.exposed_ns == c.memcpy_ns, f"{tag}: hidden + exposed != memcpy"
        _le(0, c.hidden_ns, f"{tag} hidden")
        _le(c.hidden_ns, min(c.memcpy_ns, d.kernel_ns), f"{tag} hidden <= memcpy, kernels")
        _le(c.memcpy_ns, d.memcpy_ns, f"{tag} memcpy <= device memcpy")
        _le(c.pageable, c.copies, f"{tag} pageable <= copies")
        _fraction(c.hidden_fraction, c.hidden_ns, c.memcpy_ns, f"{tag} hidden_fraction")
        if c.direction == "all":
            assert c.memcpy_ns == d.memcpy_ns, f"{tag}: memcpy != devices[].memcpy"
            assert c.copies == d.memcpys, f"{tag}: copies != devices[].memcpys"
    for cc in o.comm_compute:
        tag = f"comm device {cc.device}"
        assert cc.hidden_ns + cc.exposed_ns == cc.comm_ns, f"{tag}: hidden + exposed != comm"
        _le(0, cc.hidden_ns, f"{tag} hidden")
        _le(cc.comm_ns, busy[cc.device].kernel_ns, f"{tag} comm <= kernels")
        _fraction(cc.hidden_fraction, cc.hidden_ns, cc.comm_ns, f"{tag} hidden_fraction")

    assert [s.device for s in o.streams] == list(busy), "overlap.streams: one row per device"
    stream_busy = {(s.device, s.stream): s.busy_ns for s in r.streams}
    for sc in o.streams:
        tag = f"streams device {sc.device}"
        assert sc.streams == busy[sc.device].streams, f"{tag}: stream count"
        _le(sc.concurrent_ns, busy[sc.device].busy_ns, f"{tag} concurrent <= busy")
        _le(sc.max_concurrent, sc.streams, f"{tag} max_concurrent <= streams")
        assert (sc.max_concurrent >= 2) == (sc.concurrent_ns > 0), f"{tag}: max vs concurrent"
        if not sc.pairs_omitted:
            assert len(sc.pairs) == sc.streams * (sc.streams - 1) // 2, f"{tag}: not every pair"
        else:
            assert len(sc.pairs) <= TOP_PAIRS, f"{tag}: more than the top pairs"
        for sp in sc.pairs:
            a = stream_busy[(sc.device, sp.streams[0])]
            b = stream_busy[(sc.device, sp.streams[1])]
            _le(sp.overlap_ns, min(a, b), f"{tag} pair {sp.streams} overlap <= min busy")
            _le(sp.overlap_ns, sc.concurrent_ns, f"{tag} pair {sp.streams} <= concurrent")
        if not sc.pairs_omitted:
            _le(sc.concurrent_ns, sum(sp.overlap_ns for sp in sc.pairs), f"{tag} concurrent <= Σ")


def _check_host(r: Report) -> None:
    busy = {d.device: d for d in r.devices}
    assert [h.device for h in r.host.devices] == list(busy), "host.devices: one row per device"
    for h in r.host.devices:
        tag = f"host device {h.device}"
        assert h.idle_ns == busy[h.device].idle_ns, f"{tag}: idle differs from devices[]"
        _le(0, h.idle_host_busy_ns, f"{tag} idle_host_busy")
        _le(h.idle_host_busy_ns, h.idle_ns, f"{tag} idle_host_busy <= idle")
        _le(len(h.causes), 5, f"{tag} causes")
        ns = [c.ns for c in h.causes]
        assert ns == sorted(ns, reverse=True), f"{tag}: causes not ranked"
        _le(sum(ns), h.idle_ns, f"{tag}: causes sum <= idle (they partition it)")
        for c in h.causes:
            cap = h.idle_ns - h.idle_host_busy_ns if c.kind == "host_idle" else h.idle_host_busy_ns
            assert 0 < c.ns <= cap, f"{tag} cause {c.name}: {c.ns}"
            assert c.calls >= 1, f"{tag} cause {c.name}: no calls"
            _le(sum(k.ns for k in c.children), c.ns, f"{tag} cause {c.name}: children <= cause")
    lat = r.host.launch_latency
    stats = (lat.mean_ns, lat.p50_ns, lat.p95_ns, lat.max_ns)
    if lat.count == 0:
        assert stats == (None,) * 4, f"launch latency without launches: {stats}"
    else:
        assert None not in stats, f"launch latency: {stats}"
        _le(0, lat.p50_ns, "launch latency p50")  # type: ignore[arg-type]
        _le(lat.p50_ns, lat.p95_ns, "launch latency p50 <= p95")  # type: ignore[arg-type]
        _le(lat.p95_ns, lat.max_ns, "launch latency p95 <= max")  # type: ignore[arg-type]
        _le(lat.mean_ns, lat.max_ns, "launch latency mean <= max")  # type: ignore[arg-type]
        _le(lat.unqueued_count + lat.waited_count, lat.count, "unqueued + waited <= launches")
        if lat.unqueued_count:
            _le(lat.unqueued_p50_ns, lat.unqueued_max_ns, "unqueued p50 <= max")  # type: ignore[arg-type]
            _le(lat.unqueued_max_ns, lat.max_ns, "unqueued max <= max")  # type: ignore[arg-type]
    kernels = {(s.device, s.stream): s.kernels for s in r.streams}
    for g in r.host.kernel_gaps:
        tag = f"gaps device {g.device} stream {g.stream}"
        n = kernels[(g.device, g.stream)]
        assert n >= 2, f"{tag}: fewer than two kernels"
        _le(0, g.gaps, f"{tag} gaps")
        _le(g.gaps, n - 1, f"{tag} gaps <= kernels - 1")
        for v in (g.mean_ns, g.p50_ns):
            _le(0, v, f"{tag} stat")  # type: ignore[arg-type]
            _le(v, g.max_ns, f"{tag} stat <= max")  # type: ignore[arg-type]
        _le(g.host_late_gaps, g.gaps, f"{tag} host-late gaps <= gaps")
        _le(0, g.host_late_ns, f"{tag} host-late time")
        if g.launch_bound:  # the DataLoader test needs the frames; the others the report has
            assert g.host_late_gaps >= MIN_LAUNCH_GAPS, f"{tag}: launch_bound on few gaps"
            assert g.kernel_p50_ns < g.host_late_p50_ns, f"{tag}: launch_bound"  # type: ignore[operator]
            assert g.host_late_ns >= LAUNCH_BOUND_SHARE * r.span_ns, f"{tag}: launch_bound share"


def _check_serial_and_top(r: Report) -> None:
    s = r.serial
    assert s.serial_ns == sum(x.busy_ns for x in r.streams), "serial != Σ stream busy"
    assert s.gpu_span_ns == r.gpu_span_ns, "serial.gpu_span differs"
    _le(max((d.busy_ns for d in r.devices), default=0), s.busy_union_ns, "device busy <= union")
    _le(s.busy_union_ns, sum(d.busy_ns for d in r.devices), "busy union <= Σ device busy")
    _le(s.busy_union_ns, s.serial_ns, "busy union <= serial")
    _le(s.busy_union_ns, s.gpu_span_ns, "busy union <= gpu span")
    for name, v, den in (
        ("speedup_vs_span", s.speedup_vs_span, s.gpu_span_ns),
        ("parallelism", s.parallelism, s.busy_union_ns),
    ):
        if den == 0:
            assert v is None, f"serial.{name}: {v} over zero time"
        else:
            assert v is not None and abs(v - s.serial_ns / den) <= _EPS, f"serial.{name}: {v}"
    totals = [k.total_ns for k in r.top_kernels]
    assert totals == sorted(totals, reverse=True), "top_kernels not ranked"
    fr = [k.fraction for k in r.top_kernels]
    if sum(totals) > 0:  # else every kernel has zero length: fractions of no time are None
        assert all(f is not None and 0 <= f <= 1 + _EPS for f in fr), f"top_kernels {fr}"
    _le(sum(f or 0.0 for f in fr), 1 + _EPS, "Σ top kernel fractions")
    selfs = [o.self_ns for o in r.top_ops]
    assert selfs == sorted(selfs, reverse=True), "top_ops not ranked by self time"
    for o in r.top_ops:
        _le(o.self_ns, o.total_ns, f"top op {o.name}: self <= total")


def _check_steps(r: Report) -> None:
    """Steps are disjoint windows over the same events: their figures sum to at most the whole."""
    if not r.steps:
        return
    prev_end = None
    for s in r.steps:
        assert s.window.step is not None, "a step report without a step number"
        if prev_end is not None:
            _le(prev_end, s.window.start_ns, f"step {s.window.step} starts before the last ends")
        prev_end = s.window.end_ns

    def add_up(what: str, get: Callable[[Report], dict[Any, int]]) -> None:
        acc: Counter[Any] = Counter()
        for s in r.steps:
            acc.update(get(s))
        whole = get(r)
        for key, v in acc.items():
            _le(v, whole.get(key, 0), f"Σ over steps of {what} {key} <= whole")

    add_up("device busy", lambda x: {d.device: d.busy_ns for d in x.devices})
    add_up(
        "hidden copies",
        lambda x: {(c.device, c.direction): c.hidden_ns for c in x.overlap.copy_compute},
    )
    add_up("device overlap", lambda x: {p.devices: p.overlap_ns for p in x.overlap.cross_device})
    add_up("concurrent streams", lambda x: {c.device: c.concurrent_ns for c in x.overlap.streams})
    add_up("serial", lambda x: {"all": x.serial.serial_ns})


def _check_efficiency(r: Report) -> None:
    """The categories split the window's kernel time; shares are shares; a row's rate is its
    FLOPs over its time."""
    e = r.efficiency
    if not e:
        return
    cats = e["categories"]
    total = sum(c["time_us"] for c in cats)
    assert abs(total - e["kernel_us"]) <= 1e-6 * max(1.0, total), (
        f"efficiency: Σ category time {total} != kernel_us {e['kernel_us']}")
    tc = sum(c["tensor_core_us"] for c in cats)
    _fraction(e["tensor_core_fraction"], tc, e["kernel_us"], "tensor_core_fraction")
    for c in cats:
        _le(c["tensor_core_us"], c["time_us"] * (1 + _EPS), f"{c['category']} tensor-core time")
        _le(c["known_us"], c["time_us"] * (1 + _EPS), f"{c['category']} known time")
    for row in e["rows"]:
        if row["tflops"] is not None and row["time_us"]:
            want = row["flops"] / (row["time_us"] * 1e-6) / 1e12
            assert abs(row["tflops"] - want) <= 1e-9 * max(1.0, want), f"tflops of {row['op']}"


def check_multi(m: MultiReport) -> None:
    for r in m.reports:
        check_report(r)
    busy = [{d.device: d.busy_ns for d in r.devices} for r in m.reports]
    for p in m.cross_trace.pairs if m.cross_trace is not None else ():
        a = busy[p.a.trace][p.a.device]
        b = busy[p.b.trace][p.b.device]
        tag = f"cross trace {p.a} {p.b}"
        assert p.a.trace < p.b.trace, f"{tag}: traces not ordered"
        _le(0, p.overlap_ns, f"{tag} overlap")
        _le(p.overlap_ns, min(a, b), f"{tag} overlap <= min busy")
        assert p.either_ns == a + b - p.overlap_ns, f"{tag}: either != a + b - both"
        _fraction(p.fraction_of_either, p.overlap_ns, p.either_ns, f"{tag} fraction_of_either")


def check(report: Report | MultiReport) -> None:
    """Assert every invariant of the figures; AssertionError names the one that broke."""
    if isinstance(report, MultiReport):
        check_multi(report)
    else:
        check_report(report)
