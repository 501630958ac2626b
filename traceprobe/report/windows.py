"""Every figure of many windows at once: one :class:`Report` per window.

    reports = window_reports(timeline.cut(bounds), Windows.of(bounds), labels, devices, pid)

The timeline is *cut* (:meth:`traceprobe.timeline.Timeline.cut`): each frame holds every
event once per window it falls in, clipped to it, with the window's index in ``win``. Each
metric then runs once over all windows (``f(..., windows)``, grouped by ``win``) and gives one
result per window, so ``--step all`` on 10,000 steps costs a few sorts of the trace, not
10,000 rounds of pandas calls. A frame that was not cut is one window: the whole-trace
report and ``--step N`` come through here too, so every report has one implementation.

Report ``i`` holds exactly the figures of ``timeline.window(lo[i], hi[i])`` analysed alone
(tests/test_report_windows.py checks this against one window at a time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from traceprobe.metrics.copies import copy_rates
from traceprobe.metrics.devices import (
    device_busy,
    stream_busy,
    stream_concurrency,
)
from traceprobe.metrics.grouping import Windows, offsets, win_of
from traceprobe.metrics.host import (
    LAUNCH_KINDS,
    Host,
    kernel_gaps,
    launch_latency,
)
from traceprobe.metrics.idle import idle_causes
from traceprobe.metrics.overlap import (
    Overlap,
    comm_compute,
    copy_compute,
    cross_device,
    multi_device_ns,
    serial,
)
from traceprobe.metrics.regions import host_events
from traceprobe.metrics.steps import step_breakdown
from traceprobe.metrics.top import top_kernels, top_ops
from traceprobe.report.model import Counts, Report, Window, paused_gc
from traceprobe.timeline import Timeline


def window_reports(
    tl: Timeline,
    windows: Windows,
    labels: Sequence[tuple[int | None, str]],
    devices: list[int],
    pid: int | None,
    critical_paths: Sequence[dict[str, Any] | None] | None = None,
) -> list[Report]:
    """One report per window of ``windows`` over ``tl`` (cut at those windows, or one window
    with plain frames). ``labels[i]``: window ``i``'s step number (or None) and basis;
    ``critical_paths[i]`` its critical path (traceprobe.graph), when computed.

    Python's cyclic garbage collector is paused while the reports are built: they are
    trees of new objects (no cycles to collect), and with 10,000 steps its passes over
    them took a third of the time."""
    with paused_gc():
        return _reports(tl, windows, labels, devices, pid, critical_paths)


def _reports(
    tl: Timeline,
    windows: Windows,
    labels: Sequence[tuple[int | None, str]],
    devices: list[int],
    pid: int | None,
    critical_paths: Sequence[dict[str, Any] | None] | None,
) -> list[Report]:
    n = windows.n
    paths = critical_paths if critical_paths is not None else [None] * n
    gpu = tl.gpu if set(tl.devices) <= set(devices) else tl.gpu[tl.gpu["device"].isin(devices)]
    cpu = tl.cpu
    names = {d: tl.meta.device_name(d) for d in devices}
    busy = device_busy(gpu, devices, windows, names)
    streams = stream_busy(gpu, devices, windows)
    gpu_span = _gpu_spans(gpu, n)
    counts = _counts(gpu, cpu, tl.steps, n)
    concurrency = stream_concurrency(streams, devices, windows)
    pairs = cross_device(busy, windows)
    multi = multi_device_ns(busy, windows)
    copies_hidden = copy_compute(gpu, busy, windows)
    comm = comm_compute(gpu, devices, windows)
    # the host events live only while their two readers run (the metrics are independent:
    # their order is memory's, each one's peak over fewer held arrays)
    host = host_events(cpu, pid, threads=False)
    idle = idle_causes(busy, host, windows)
    breakdown = step_breakdown(gpu, host, tl.steps, devices, windows)
    del host
    latency = launch_latency(gpu, cpu, windows)
    gaps = kernel_gaps(gpu, devices, cpu, windows)
    serials = serial(busy, streams, gpu_span, windows)
    kernels = top_kernels(gpu, devices, windows)
    ops = top_ops(cpu, windows)
    rates = copy_rates(gpu, devices, names, windows)
    return [
        Report(
            trace=tl.source,
            format=tl.meta.format,
            rank=tl.meta.rank,
            window=Window(int(windows.lo[i]), int(windows.hi[i]), labels[i][0], labels[i][1]),
            span_ns=int(windows.hi[i] - windows.lo[i]),
            gpu_span_ns=int(gpu_span[i]),
            counts=Counts(*(int(c[i]) for c in counts)),
            devices=busy[i],
            streams=streams[i],
            overlap=Overlap(
                cross_device=pairs[i],
                multi_device_ns=int(multi[i]),
                copy_compute=copies_hidden[i],
                comm_compute=comm[i],
                streams=concurrency[i],
            ),
            host=Host(devices=idle[i], launch_latency=latency[i], kernel_gaps=gaps[i]),
            serial=serials[i],
            top_kernels=kernels[i],
            top_ops=ops[i],
            copies=rates[i],
            step_breakdown=breakdown[i],
            critical_path=paths[i],
        )
        for i in range(n)
    ]


def _gpu_spans(gpu, n: int) -> np.ndarray:
    """Per window: last GPU end minus first GPU start (0 without GPU activity)."""
    out = np.zeros(n, np.int64)
    if gpu.empty:
        return out
    win = win_of(gpu)
    o = offsets(win, n)
    has = np.flatnonzero(np.diff(o) > 0)
    s = gpu["start"].to_numpy(np.int64)
    e = gpu["end"].to_numpy(np.int64)
    out[has] = np.maximum.reduceat(e, o[has]) - np.minimum.reduceat(s, o[has])
    return out


def _counts(gpu, cpu, steps, n: int) -> list[np.ndarray]:
    """Per window, in :class:`Counts` order: kernels, memcpys, memsets, CPU ops, runtime
    calls, steps."""
    def count(df, mask) -> np.ndarray:
        return np.bincount(win_of(df)[np.asarray(mask, bool)], minlength=n)[:n]

    kind = gpu["kind"].to_numpy(object)
    ck = cpu["kind"].to_numpy(object)
    return [
        count(gpu, kind == "kernel"),
        count(gpu, kind == "memcpy"),
        count(gpu, kind == "memset"),
        count(cpu, ck == "cpu_op"),
        count(cpu, np.isin(ck, LAUNCH_KINDS)),
        count(steps, np.ones(len(steps), bool)),
    ]
