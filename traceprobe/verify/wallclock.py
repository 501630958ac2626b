"""The trace against the wall clock: how the trace's spans compare with the metadata's times.

    figures, note = wall_figures(v)   # note: a few sentences, each with its numbers

The metadata holds unprofiled and profiled step times (and CUDA event times) measured
independently of the trace; the note says what explains each gap (profiler overhead,
host time outside GPU activity, events outside the timed steps).
"""

from __future__ import annotations

from traceprobe.verify.clauses import dur, times
from traceprobe.verify.figures import Figures
from traceprobe.verify.recorded import Recorded
from traceprobe.verify.thresholds import WALL_SPAN_MISMATCH


def wall_figures(v: Recorded) -> tuple[Figures, str]:
    """The trace's spans against the metadata's wall-clock times, and what explains the gap."""
    steps, span, gpu_span = v.steps, v.span_us(), v.span_us("gpu_span_us")
    plain, prof = v.plain_step_us, v.profiled_step_us
    walls = [w * 1e6 for w in (v.timing.get("plain") or {}).get("step_wall_s") or []]
    spread = (f" (the plain steps ranged from {dur(min(walls))} to {dur(max(walls))})"
              if walls and min(walls) > 0 and max(walls) > WALL_SPAN_MISMATCH * min(walls)
              else "")
    active_us = None if prof is None else prof * steps  # the traced steps' wall time
    events = (v.timing.get("profiled") or {}).get("cuda_event_ms") or {}
    per_dev = [sum(ms) / len(ms) * 1000.0 for ms in events.values() if ms]
    event_us = max(per_dev) if per_dev else None
    figs: Figures = {
        "steps_profiled": steps,
        "span_us": span,
        "gpu_span_us": gpu_span,
        "host_outside_gpu_us": span - gpu_span if gpu_span else None,
        "plain_step_wall_us": plain,
        "profiled_step_wall_us": prof,
        "profiler_overhead_us": None if plain is None or prof is None else prof - plain,
        "profiled_wall_us": active_us,
        "cuda_event_step_us": event_us,
    }
    s = "" if steps == 1 else "s"
    parts = []
    if plain is not None and prof is not None:
        if prof >= plain:
            parts.append(f"Unprofiled a step took {dur(plain)} on the wall clock{spread}, "
                         f"profiled {dur(prof)}: the profiler added {dur(prof - plain)} "
                         f"({times(prof / plain)}).")
        else:
            parts.append(f"Unprofiled a step took {dur(plain)} on the wall clock{spread}, "
                         f"profiled {dur(prof)}: {dur(plain - prof)} less, which is timing "
                         "noise (other load on the machine, or a short step), not a profiler "
                         "speed-up.")
    if gpu_span:
        parts.append(f"The trace spans {dur(span)} ({steps} step{s}); GPU activity spans "
                     f"{dur(gpu_span)} of it, and the other {dur(span - gpu_span)} is host time "
                     "outside GPU activity (issuing work before the first kernel, synchronizing "
                     "and step bookkeeping after the last).")
    else:
        parts.append(f"The trace spans {dur(span)} ({steps} step{s}) of host activity only: "
                     "it holds no GPU activity.")
    if active_us and span:
        r = active_us / span
        if r > WALL_SPAN_MISMATCH:
            parts.append(f"The profiled steps took {dur(active_us)} on the wall clock, "
                         f"{r:.1f}x the span: that time went outside the traced events "
                         "(setup, the profiler's own bookkeeping, waiting).")
        elif r < 1 / WALL_SPAN_MISMATCH:
            parts.append(f"The span is {1 / r:.1f}x the profiled steps' wall time "
                         f"({dur(active_us)}): the trace also holds events outside the timed "
                         "steps (the profiler's start and stop, other threads or processes).")
        else:
            parts.append(f"The profiled steps' wall time, {dur(active_us)}, matches the span "
                         f"within {abs(r - 1) * 100:.0f}%.")
    if event_us is not None and gpu_span:
        parts.append(f"CUDA events timed {dur(event_us)} of GPU time per profiled step, "
                     f"against {dur(gpu_span / steps)} of GPU span per step in the trace.")
    return figs, " ".join(parts)
