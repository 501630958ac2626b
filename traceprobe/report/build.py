"""Build a report from a timeline: the metrics over the window, then the headlines.

    report = analyze(timeline)                 # whole trace
    report = analyze(timeline, step=3)         # only ProfilerStep#3's window
    report = analyze(timeline, step="all")     # whole trace plus one sub-report per step
    report = analyze(timeline, window="events")  # every event, not only the profiled steps
    many = analyze_many([tl0, tl1])            # adds cross_trace (one shared host clock assumed)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from traceprobe.efficiency import efficiency
from traceprobe.errors import GraphCycle, UsageError
from traceprobe.graph import critical_paths
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.host import host_process
from traceprobe.metrics.overlap import CrossTrace, cross_trace
from traceprobe.metrics.runs import runs
from traceprobe.report.blocks import StepReports
from traceprobe.report.headlines import headlines
from traceprobe.report.model import MultiReport, Report, Step
from traceprobe.report.windows import window_reports
from traceprobe.timeline import Timeline

# -- analysis -------------------------------------------------------------------------------


def analyze(
    timeline: Timeline, *, step: Step = None, devices: Sequence[int] | None = None,
    window: str = "steps",
) -> Report:
    """Analyse one timeline.

    ``step``: None for the whole window (``window``: see :func:`default_window`); N (an
    int, or a string of digits) for ProfilerStep#N's window only; ``"all"`` for the whole
    window plus one sub-report per step. ``devices``: analyse only these GPUs, each listed
    even without events; None lists every GPU with activity.
    Raises UsageError for a step the trace does not have (naming the ones it has), or a
    ``window`` not in :data:`WINDOWS`.
    (:func:`check_devices` refuses devices the traces lack, as ``--device`` does.)
    """
    return _analyze_one(timeline, step, _devices(timeline, devices), _window(window))


WINDOWS = ("steps", "profiler", "events")  # what a whole-trace report may cover, by choice


def _window(window: str) -> str:
    if window not in WINDOWS:
        raise UsageError(f"window must be one of {', '.join(WINDOWS)}, not {window!r}")
    return window


def _analyze_one(timeline: Timeline, step: Step, devs: list[int], window: str) -> Report:
    pid = host_process(timeline.cpu)
    extra = timeline.meta.extra
    warnings: tuple[str, ...] = tuple(extra.get("warnings", ()))
    note = time_windows(timeline)
    if note is not None:
        warnings += (note,)
    salvaged: dict[str, Any] | None = extra.get("salvaged")
    if step is None or step == "all":
        lo, hi, basis = default_window(timeline, window)
        gap = stray_gap(timeline, lo, hi)
        if gap is not None:
            warnings += (gap,)
        span = timeline.span
        covers = basis == "events" and (span is None or (lo <= span[0] and span[1] <= hi))
        paths = _critical_paths(timeline, (lo, hi), steps=step == "all")  # before the window's
        whole = _one_report(timeline if covers else timeline.window(lo, hi), lo, hi, None, devs,
                            pid, basis)  # copy is made, which lives only as long as this call
        whole = replace(whole, critical_path=paths["window"],
                        efficiency=_efficiency(timeline, (lo, hi)))
        steps: Sequence[Report] = ()
        if step == "all":  # built when read, a block of steps at a time
            steps = StepReports(timeline, _step_rows(timeline), devs, pid, paths["steps"])
        whole = replace(whole, steps=steps, warnings=warnings, salvaged=salvaged)
        return replace(whole, headlines=headlines(whole))
    n = _step_number(step, timeline)
    s, e = next((s, e) for m, s, e in _step_rows(timeline) if m == n)
    rep = _one_report(timeline.window(s, e), s, e, n, devs, pid, "step")
    rep = replace(
        rep,
        warnings=warnings,
        salvaged=salvaged,
        critical_path=_critical_paths(timeline, steps=[n], whole=False)["steps"].get(n),
        efficiency=_efficiency(timeline, (s, e)),
    )
    return replace(rep, headlines=headlines(rep))


def _critical_paths(
    timeline: Timeline, window: tuple[int, int] | None = None, **which: Any
) -> dict[str, Any]:
    """The replayed critical path of the report's window and of the steps asked for
    (``which``: see :func:`traceprobe.graph.critical_paths`); null ones when the inferred
    graph has a cycle (:class:`~traceprobe.errors.GraphCycle`: an inference failed, not the
    trace; any other error is a bug and goes up)."""
    try:
        return critical_paths(timeline, window, **which)
    except GraphCycle:
        return {"window": None, "steps": {}}


STARTUP_NAMES = frozenset({"Activity Buffer Request"})  # the profiler's own start-up work
STARTUP_KINDS = frozenset({"overhead"})


def _efficiency(timeline: Timeline, window: tuple[int, int]) -> dict[str, Any] | None:
    """The kernel-efficiency section of the window's ops (None without GPU kernels or ops)."""
    if timeline.gpu.empty and timeline.cpu.empty:
        return None
    return efficiency(timeline, window).to_dict()


def default_window(timeline: Timeline, prefer: str = "steps") -> tuple[int, int, str]:
    """``(start_ns, end_ns, basis)`` of what a whole-trace report analyses.

    ``prefer="steps"`` (the default): the profiled steps (first ProfilerStep start to last
    step end, counting steps that repeat a number or lie inside another) when there are
    any; else the profiler's own recording span (its ``Trace`` event), tightened to the
    events inside it; else first event start to last event end. ``prefer="profiler"``
    starts that list at the profiler's span, ``prefer="events"`` at the events (every
    event of the trace, as HTA and older reports measured). The profiler's start-up
    (``Activity Buffer Request``, category ``overhead``) never opens
    a ``steps`` or ``profiler`` window. ``basis`` says which one was taken.
    """
    if prefer == "events":
        whole = timeline.span or (0, 0)
        return int(whole[0]), int(whole[1]), "events"
    rows = _step_rows(timeline) if prefer == "steps" else []
    if rows:
        first, last = min(s for _, s, _ in rows), max(e for _, _, e in rows)
        extent = timeline.meta.extra.get("steps_extent_ns")  # steps repeated or nested
        if extent:
            first, last = min(first, int(extent[0])), max(last, int(extent[1]))
        return first, last, "steps"
    lo, hi = _event_span(timeline)
    span = timeline.meta.extra.get("profiler_span_ns")
    if span and lo is not None and hi is not None:
        plo, phi = max(lo, int(span[0])), min(hi, int(span[1]))
        if plo < phi:
            return plo, phi, "profiler"
    if lo is None or hi is None:
        return 0, 0, "events"
    return lo, hi, "events"


WINDOW_MARK = "traceprobe.time_window: "  # written by traceprobe profile (record/profile/steps)


def time_windows(timeline: Timeline) -> str | None:
    """A warning when the trace's ``ProfilerStep#N`` are time windows, not training steps:
    ``traceprobe profile`` stepped by ``--window-ms`` (no optimizer, or asked to) and marked
    each window with a zero-length ``traceprobe.time_window: <ms> ms`` range."""
    cpu = timeline.cpu
    if cpu.empty or timeline.steps.empty:
        return None
    marks = cpu["name"][cpu["kind"] == "user_annotation"]
    marks = marks[marks.str.startswith(WINDOW_MARK)]
    if marks.empty:
        return None
    length = str(marks.iloc[0])[len(WINDOW_MARK):]
    return (f"the ProfilerStep#N of this trace are time windows of {length} (traceprobe "
            "profile --window-ms), not training steps: every per-step figure is per window")


STRAY_GAP = 0.9  # a gap without events this share of the window: a stray timestamp?
STRAY_MIN_NS = 1_000_000_000  # only in windows over a second


def stray_gap(timeline: Timeline, lo: int, hi: int) -> str | None:
    """A warning when one gap with no event at all covers most of the window (> 90%
    of a window over 1 s): typically one stray timestamp (``ts: 0`` among epoch-scale
    ones) stretching the window, so that every utilization looks near zero."""
    if hi - lo < STRAY_MIN_NS:
        return None
    import numpy as np

    from traceprobe.intervals import spans

    starts, ends = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for df in (timeline.gpu, timeline.cpu):
        if not df.empty:
            starts.append(df["start"].to_numpy(np.int64).clip(lo, hi))
            ends.append(df["end"].to_numpy(np.int64).clip(lo, hi))
    union = spans(np.concatenate(starts), np.concatenate(ends))
    t = np.concatenate([[lo], union.ends])  # where each gap starts
    gaps = np.concatenate([union.starts, [hi]]) - t
    i = int(gaps.argmax())
    if gaps[i] <= STRAY_GAP * (hi - lo):
        return None
    return (
        f"{gaps[i] / (hi - lo):.1%} of the window ({gaps[i] / 1e9:,.3f} s, from "
        f"{(int(t[i]) - lo) / 1e3:,.1f} µs into it) holds no event at all: probably a stray "
        "timestamp; the figures count that gap as idle (analyse a --step, or fix the trace)"
    )


def _event_span(timeline: Timeline) -> tuple[int | None, int | None]:
    """First start and last end over GPU activities and CPU events, start-up left out."""
    cpu = timeline.cpu
    if not cpu.empty:
        startup = cpu["name"].isin(STARTUP_NAMES) | cpu["kind"].isin(STARTUP_KINDS)
        if startup.any():
            cpu = cpu[~startup]
    lo, hi = [], []
    for df in (timeline.gpu, cpu):
        if not df.empty:
            lo.append(int(df["start"].min()))
            hi.append(int(df["end"].max()))
    if not lo:
        return None, None
    return min(lo), max(hi)


def analyze_many(
    timelines: Sequence[Timeline], *, step: Step = None, devices: Sequence[int] | None = None,
    window: str = "steps",
) -> MultiReport:
    """Analyse each timeline, then compare device busy time across the ranks of each job
    (one host clock assumed); separate runs are not compared (metrics/runs.py)."""
    only = None if devices is None else sorted({int(d) for d in devices})
    win = _window(window)
    reports = tuple(_analyze_one(t, step, t.devices if only is None else only, win)
                    for t in timelines)
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


def analyze_with_steps(
    timelines: Sequence[Timeline], *, step: Step = None, devices: Sequence[int] | None = None,
    window: str = "steps",
) -> tuple[Report | MultiReport, list[Report]]:
    """The report of ``timelines`` asked for (:func:`analyze` of one, :func:`analyze_many` of
    several) and each trace's report with every step (``step="all"``, every GPU, the default
    window), as ``--tensorboard`` needs both: one analysis per trace gives both unless one
    step, some GPUs or another window were asked for."""
    once = step in (None, "all") and devices is None and window == "steps"
    want = "all" if once else step
    if len(timelines) == 1:
        one = analyze(timelines[0], step=want, devices=devices, window=window)
        rep: Report | MultiReport = one
        stepped = [one] if once else [analyze(timelines[0], step="all")]
    else:
        many = analyze_many(timelines, step=want, devices=devices, window=window)
        rep = many
        stepped = list(many.reports) if once else [analyze(t, step="all") for t in timelines]
    return (without_steps(rep) if want != step else rep), stepped


def without_steps(report: Report | MultiReport) -> Report | MultiReport:
    """The report ``analyze(step=None)`` (or ``analyze_many``) gives, from the one made with
    ``step="all"``: the whole-trace figures do not depend on the step sub-reports (tested),
    so a caller that needs both (``--tensorboard``) analyses each trace once."""
    if isinstance(report, MultiReport):
        return replace(report, reports=tuple(replace(r, steps=()) for r in report.reports))
    return replace(report, steps=())


def _devices(timeline: Timeline, devices: Sequence[int] | None) -> list[int]:
    if devices is None:
        return timeline.devices
    return sorted({int(d) for d in devices})


def check_devices(timelines: Sequence[Timeline], devices: Sequence[int]) -> None:
    """Raise UsageError for a device none of ``timelines`` has (no activity, not in
    ``deviceProperties``), naming the devices they do have: what ``--device`` checks
    (the library itself lists any device asked for, with zeros when it has no events)."""
    have: set[int] = set()
    for tl in timelines:
        have.update(tl.devices)
        have.update(
            p["id"] for p in tl.meta.device_properties if isinstance(p.get("id"), int)
        )
    missing = [d for d in devices if d not in have]
    if missing:
        where = timelines[0].source if len(timelines) == 1 else f"{len(timelines)} traces"
        listed = ", ".join(str(d) for d in sorted(have)) if have else "none"
        raise UsageError(
            f"{where}: no GPU {', '.join(map(str, missing))} (GPUs in the trace: {listed}); "
            "pick one of those with --device"
        )


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


def _one_report(
    tl: Timeline, lo: int, hi: int, step: int | None, devices: list[int], pid: int | None,
    basis: str,
) -> Report:
    """All figures for ``tl`` (already clipped to ``[lo, hi)``) on ``devices``."""
    return window_reports(tl, Windows.one(lo, hi), [(step, basis)], devices, pid)[0]
