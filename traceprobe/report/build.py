"""Build a report from a timeline: the metrics over the window, then the headlines.

    report = analyze(timeline)                 # whole trace
    report = analyze(timeline, step=3)         # only ProfilerStep#3's window
    report = analyze(timeline, step="all")     # whole trace plus one sub-report per step
    many = analyze_many([tl0, tl1])            # adds cross_trace (one shared host clock assumed)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from traceprobe.errors import UsageError
from traceprobe.metrics.copies import copy_rates
from traceprobe.metrics.devices import device_busy, stream_busy, stream_concurrency
from traceprobe.metrics.host import (
    LAUNCH_KINDS,
    Host,
    host_process,
    kernel_gaps,
    launch_latency,
)
from traceprobe.metrics.idle import idle_causes
from traceprobe.metrics.overlap import (
    CrossTrace,
    Overlap,
    comm_compute,
    copy_compute,
    cross_device,
    cross_trace,
    multi_device_ns,
    serial,
)
from traceprobe.metrics.regions import host_events
from traceprobe.metrics.runs import runs
from traceprobe.metrics.steps import step_breakdown
from traceprobe.metrics.top import top_kernels, top_ops
from traceprobe.report.headlines import headlines
from traceprobe.report.model import Counts, MultiReport, Report, Step, Window
from traceprobe.timeline import Timeline

# -- analysis -------------------------------------------------------------------------------


def analyze(
    timeline: Timeline, *, step: Step = None, devices: Sequence[int] | None = None
) -> Report:
    """Analyse one timeline.

    ``step``: None for the whole trace (first event start → last event end, CPU and
    GPU); N (an int, or a string of digits) for ProfilerStep#N's window only; ``"all"``
    for the whole trace plus one sub-report per step. ``devices``: analyse only these
    GPUs, each listed even without events; None lists every GPU with activity.
    Raises UsageError for a step the trace does not have (naming the ones it has).
    """
    devs = _devices(timeline, devices)
    pid = host_process(timeline.cpu)
    if step is None or step == "all":
        lo, hi = timeline.span or (0, 0)
        whole = _window_report(timeline, lo, hi, None, devs, pid)
        steps: tuple[Report, ...] = ()
        if step == "all":
            steps = tuple(
                _window_report(timeline.window(s, e), s, e, n, devs, pid)
                for n, s, e in _step_rows(timeline)
            )
        whole = replace(whole, steps=steps)
        return replace(whole, headlines=headlines(whole))
    n = _step_number(step, timeline)
    s, e = next((s, e) for m, s, e in _step_rows(timeline) if m == n)
    rep = _window_report(timeline.window(s, e), s, e, n, devs, pid)
    return replace(rep, headlines=headlines(rep))


def analyze_many(
    timelines: Sequence[Timeline], *, step: Step = None, devices: Sequence[int] | None = None
) -> MultiReport:
    """Analyse each timeline, then compare device busy time across the ranks of each job
    (one host clock assumed); separate runs are not compared (metrics/runs.py)."""
    reports = tuple(analyze(t, step=step, devices=devices) for t in timelines)
    windows = [(r.window.start_ns, r.window.end_ns) for r in reports]
    groups = runs([t.meta for t in timelines])
    pairs: list[Any] = []
    skipped: list[Any] = []
    for g in groups:
        if not g.job:
            continue
        part = cross_trace([reports[i].devices for i in g.traces], [windows[i] for i in g.traces])
        at = g.traces
        pairs += [
            replace(p, a=replace(p.a, trace=at[p.a.trace]), b=replace(p.b, trace=at[p.b.trace]))
            for p in part.pairs
        ]
        skipped += [replace(s, traces=(at[s.traces[0]], at[s.traces[1]])) for s in part.skipped]
    return MultiReport(reports, CrossTrace(tuple(pairs), tuple(skipped)), groups)


def _devices(timeline: Timeline, devices: Sequence[int] | None) -> list[int]:
    if devices is None:
        return timeline.devices
    return sorted({int(d) for d in devices})


def _step_rows(timeline: Timeline) -> list[tuple[int, int, int]]:
    st = timeline.steps.sort_values("start", kind="stable")
    rows = zip(st["step"].tolist(), st["start"].tolist(), st["end"].tolist(), strict=True)
    seen: set[int] = set()
    out = []
    for n, s, e in rows:  # one row per step number: the first window wins
        if n not in seen:
            seen.add(n)
            out.append((int(n), int(s), int(e)))
    return out


def _step_number(step: Any, timeline: Timeline) -> int:
    if isinstance(step, str) and step.strip().isdigit():
        step = int(step)
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise UsageError(f"step must be a ProfilerStep number or 'all', not {step!r}")
    have = [n for n, _, _ in _step_rows(timeline)]
    if int(step) not in have:
        if not have:
            raise UsageError(
                f"{timeline.source}: no ProfilerStep#{step}: the trace has no ProfilerStep "
                "windows; analyse the whole trace instead (no step)"
            )
        raise UsageError(
            f"{timeline.source}: no ProfilerStep#{step}; the trace has steps {_ranges(have)}"
        )
    return int(step)


def _ranges(numbers_: list[int]) -> str:
    """'1-3, 7' for [1, 2, 3, 7]."""
    nums = sorted(set(numbers_))
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(parts)


def _window_report(
    tl: Timeline, lo: int, hi: int, step: int | None, devices: list[int], pid: int | None
) -> Report:
    """All figures for ``tl`` (already clipped to ``[lo, hi)``) on ``devices``."""
    gpu = tl.gpu if set(tl.devices) <= set(devices) else tl.gpu[tl.gpu["device"].isin(devices)]
    cpu = tl.cpu
    span = hi - lo
    gpu_span = int(gpu["end"].max() - gpu["start"].min()) if not gpu.empty else 0
    names = {d: tl.meta.device_name(d) for d in devices}
    busy = device_busy(gpu, devices, span, names)
    streams = stream_busy(gpu, devices)
    kind = gpu["kind"]
    host = host_events(cpu, pid)
    return Report(
        trace=tl.source,
        format=tl.meta.format,
        rank=tl.meta.rank,
        window=Window(lo, hi, step),
        span_ns=span,
        gpu_span_ns=gpu_span,
        counts=Counts(
            kernels=int((kind == "kernel").sum()),
            memcpys=int((kind == "memcpy").sum()),
            memsets=int((kind == "memset").sum()),
            cpu_ops=int((cpu["kind"] == "cpu_op").sum()),
            runtime_calls=int(cpu["kind"].isin(LAUNCH_KINDS).sum()),
            steps=len(tl.steps),
        ),
        devices=busy,
        streams=streams,
        overlap=Overlap(
            cross_device=cross_device(busy),
            multi_device_ns=multi_device_ns(busy),
            copy_compute=copy_compute(gpu, busy),
            comm_compute=comm_compute(gpu, devices),
            streams=stream_concurrency(streams, devices),
        ),
        host=Host(
            devices=idle_causes(busy, host, lo, hi),
            launch_latency=launch_latency(gpu, cpu),
            kernel_gaps=kernel_gaps(gpu, devices, cpu),
        ),
        serial=serial(busy, streams, gpu_span),
        top_kernels=top_kernels(gpu, devices),
        top_ops=top_ops(cpu),
        copies=copy_rates(gpu, devices, names),
        step_breakdown=step_breakdown(gpu, host, tl.steps, devices),
    )
