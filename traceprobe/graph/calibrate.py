"""The profiler's cost per event removed (:func:`no_profiler`), and calibrated on the host's
measured unprofiled time (:func:`calibrate`).

A trace cannot say how much faster its host would have run unprofiled: part of the
profiler's cost lies inside events (and in a slower host overall), where no interval between
events shows it (:mod:`.overhead` estimates only what the intervals show). A recorder that
also ran the loop *unprofiled* can say: ``traceprobe profile --host-steps N`` (and
scripts/gpu/real_loops.py) time steps each begun on an idle GPU, the host's **issue time**
(the GPU, idle at the start, does not hold the host back unless the step waits for it), and
store the median as ``host_ms`` in the trace's top-level ``traceprobeUnprofiled``
(``traceprobe.load``: ``meta.extra["unprofiled"]``).

The calibrated cost is the NS of ``no-profiler:NS`` at which the replay's host span of a step,
with every GPU op's duration set to 0 (nothing the GPU does holds the host, as on the idle
GPU of the measurement), has the measured median: found by regula falsi, as that span never
grows with NS (and is linear between the NS at which a gap empties). Where the profiled host
is no slower than the measurement, NS is 0; where even :data:`MAX_NS` leaves the span above
it (the host's own work there is longer than the measured step: the trace is of another
run), NS is :data:`MAX_NS` and the note says so.
docs/FIGURES.md ("The profiler's own cost") defines it; docs/WHATIF.md checks it.
"""

from __future__ import annotations

import statistics
import weakref
from dataclasses import dataclass

import numpy as np

from traceprobe.graph.model import GPU, HOST, NO_SYNC, Graph
from traceprobe.graph.replay import Plan, replay
from traceprobe.intervals import sorted_unique
from traceprobe.timeline import Timeline

MAX_NS = 100_000.0  # 100 µs per event: beyond any profiler's cost
TOLERANCE = 1e-4  # stop when the span is within 0.01% of the measured host time
ITERATIONS = 40


@dataclass(frozen=True)
class Calibration:
    ns: float  # per recorded CPU event
    host_ms: float  # the measured unprofiled host time per step
    profiled_ms: float  # the replayed host span at NS = 0 (the GPU instant)
    reached_ms: float  # ... at NS
    capped: bool  # MAX_NS did not bring the span down to host_ms

    def describe(self) -> str:
        text = (f"calibrated on the recorder's unprofiled host time, {self.host_ms:.3g} ms per "
                f"step (traceprobeUnprofiled): the replayed host span with the GPU instant, "
                f"{self.profiled_ms:.3g} ms with the profiler's cost kept, is {self.reached_ms:.3g}"
                " ms with it removed")
        if self.capped:
            text += f" (capped at {MAX_NS:g} ns per event: the trace's host is slower still)"
        return text


def measured_host_ms(tl: Timeline) -> float | None:
    """The recorder's measured unprofiled host time per step, in ms, or None."""
    got = tl.meta.extra.get("unprofiled", {}).get("host_ms")
    return float(got) if got else None


_CACHE: dict[int, dict[float, Calibration]] = {}  # by id(graph), dropped with the graph


def calibrate(g: Graph, host_ms: float) -> Calibration:
    """The calibrated cost of the module docstring for ``g``'s steps (the whole trace's host
    span when it has none); computed once per graph and measurement."""
    if id(g) not in _CACHE:
        weakref.finalize(g, _CACHE.pop, id(g), None)
    done = _CACHE.setdefault(id(g), {})
    if host_ms not in done:
        done[host_ms] = _search(g, host_ms)
    return done[host_ms]


def _search(g: Graph, host_ms: float) -> Calibration:
    target = host_ms * 1e6
    at0 = host_span_ns(g, 0.0)
    if at0 <= target:
        return Calibration(0.0, host_ms, at0 / 1e6, at0 / 1e6, False)
    top = host_span_ns(g, MAX_NS)
    if top > target:
        return Calibration(MAX_NS, host_ms, at0 / 1e6, top / 1e6, True)
    # regula falsi (Illinois): exact on a linear piece of the span, which it is between
    # the NS at which a gap empties
    a, fa, b, fb, side = 0.0, at0 - target, MAX_NS, top - target, 0
    c, span = b, top
    for _ in range(ITERATIONS):
        c = (a * fb - b * fa) / (fb - fa)
        span = host_span_ns(g, c)
        fc = span - target
        if abs(fc) <= TOLERANCE * target:
            break
        if fc > 0:
            a, fa = c, fc
            if side == 1:
                fb /= 2
            side = 1
        else:
            b, fb = c, fc
            if side == -1:
                fa /= 2
            side = -1
    return Calibration(c, host_ms, at0 / 1e6, span / 1e6, False)


def host_span_ns(g: Graph, ns: float) -> float:
    """The median step's replayed host span under ``no-profiler:ns`` with every GPU op's
    duration 0 (the whole trace's host span when it has no steps)."""
    p = Plan.of(g)
    no_profiler(g, p, ns)
    p.dur[g.ntype == GPU] = 0
    rp = replay(g, p)
    if g.steps:
        return float(statistics.median(int(rp.start[e]) - int(rp.start[s])
                                       for _, s, e in g.steps))
    host = np.flatnonzero(g.ntype != GPU)
    return float(rp.end[host].max() - rp.start[host].min()) if len(host) else 0.0


def no_profiler(g: Graph, p: Plan, ns: float) -> None:
    """``no-profiler:ns`` on ``p``: each recorded CPU event costs ``ns``, charged to the gap
    between host calls in which it starts (what the gap cannot hold comes off the call's own
    time, never below 0), and to the delay of a hand-off between threads for the events
    either thread recorded meanwhile (traceprobe/graph/scenarios.py's docstring)."""
    host = np.flatnonzero(g.ntype != GPU)
    counted = 0
    for ln, starts in g.event_starts.items():
        on = host[g.lane[host] == ln]
        if not len(on) or not len(starts):
            continue
        # the events that start in the gap, the call's own included (it starts at its end)
        k = np.searchsorted(starts, g.start[on], side="right") - np.searchsorted(
            starts, g.start[on] - g.gap[on], side="left")
        counted += int(k.sum())
        cost = np.round(k * ns).astype(np.int64)
        left = np.maximum(cost - p.gap[on], 0)  # what the gap could not hold: the call's own
        p.gap[on] = np.maximum(p.gap[on] - cost, 0)
        call = (g.ntype[on] == HOST) & (g.sync[on] == NO_SYNC)
        p.dur[on[call]] = np.maximum(p.dur[on[call]] - left[call], 0)
    if len(p.hand):  # a hand-off's delay: the events either thread recorded meanwhile
        succ, pred = p.hand[:, 0], p.hand[:, 1]
        a, b = g.end[pred], g.start[succ]
        k = np.zeros(len(p.hand), np.int64)
        for side in (succ, pred):
            for ln in sorted_unique(g.lane[side]).tolist():
                if int(ln) not in g.event_starts:
                    continue
                starts = g.event_starts[int(ln)]
                m = g.lane[side] == ln
                k[m] = np.maximum(k[m], np.searchsorted(starts, b[m]) - np.searchsorted(starts,
                                                                                         a[m]))
        counted += int(k.sum())
        p.hand[:, 2] = np.maximum(p.hand[:, 2] - np.round(k * ns).astype(np.int64), 0)
    p.notes.append(f"no-profiler: {counted} recorded CPU events at {ns:g} ns each")
