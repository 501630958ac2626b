"""Dependency graph of a trace, critical path per step, replay, what-if scenarios.

One narrow entry point each way; both read a :class:`~traceprobe.timeline.Timeline` (one
rank) and return plain data (µs on the trace's clock), never a renderer's object::

    cp = critical_paths(timeline)        # {"window": {...}, "steps": {N: {...}}}
    res = whatif(timeline, ["no-host-sync"], step="all")   # WhatIf; res.to_dict()

The graph is :mod:`.model` (its measured delays :mod:`.delays`, kernels that fill a GPU
:mod:`.resources`), the simulator :mod:`.replay`, the path :mod:`.path`, the
scenarios :mod:`.scenarios`. Definitions of every figure: docs/FIGURES.md, "Critical path
and what-if".
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from traceprobe.errors import GraphCycle, TraceError, UsageError

if TYPE_CHECKING:
    from traceprobe.graph.model import Graph
    from traceprobe.graph.replay import Replay
    from traceprobe.timeline import Timeline

SCHEMA = "traceprobe.whatif/1"
GPU_NEAR = 0.9  # a step whose GPU span is this share of its host span is walked on the GPU
GPU_IDLE_SLACK = 0.05  # ... unless its walk is more idle than the host walk by this share of it


@dataclass(frozen=True)
class StepResult:
    step: int | None  # None: the whole trace
    measured_us: float
    replayed_us: float
    predicted_us: float
    critical_path: dict[str, Any]  # of the predicted replay
    measured_path: dict[str, Any]  # of the unchanged replay
    period_us: float | None = None  # the unchanged replay's period (:mod:`.period`)
    predicted_period_us: float | None = None
    gpu_bound: bool = False  # the GPU span sets the measured period
    holds: bool = True  # False: the step's path waits on something the model does not see
    why: str = ""  # what, when it does not hold
    host_span_us: float = 0.0  # the unchanged replay's host span and GPU span (:mod:`.period`)
    gpu_span_us: float = 0.0

    @property
    def speedup(self) -> float | None:
        if self.period_us is not None and self.predicted_period_us:
            return self.period_us / self.predicted_period_us
        return self.measured_us / self.predicted_us if self.predicted_us > 0 else None


@dataclass(frozen=True)
class WhatIf:
    trace: str
    scenarios: tuple[str, ...]
    windows: tuple[StepResult, ...]
    notes: tuple[str, ...] = field(default=())
    baseline: tuple[str, ...] = field(default=())  # applied to both sides (:func:`whatif`)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "trace": self.trace,
            "windows": [
                {
                    "step": w.step,
                    "measured_us": w.measured_us,
                    "replayed_us": w.replayed_us,
                    "predicted_us": w.predicted_us,
                    "period_us": w.period_us,
                    "predicted_period_us": w.predicted_period_us,
                    "speedup": w.speedup if w.holds else None,
                    "model_holds": w.holds,
                    "why_not": w.why or None,
                    "critical_path": w.critical_path,
                    "measured_critical_path": w.measured_path,
                }
                for w in self.windows
            ],
            "scenarios": list(self.scenarios),
            "baseline": list(self.baseline),
            "notes": list(self.notes),
        }


def critical_paths(
    tl: Timeline, window: tuple[int, int] | None = None, *,
    steps: bool | Collection[int] = True, whole: bool = True,
) -> dict[str, Any]:
    """The critical path of the whole trace and of each step (replay with no change).

    ``window`` (ns): the report's window when it is not the whole trace. When it runs from
    the first step's start to the last step's end, the path is walked back from the last
    step's end marker to the first step's start; otherwise the whole trace's path is cut
    to the window (the pieces still tile it exactly). ``steps``: every step's path (True),
    none (False) or those of these step numbers; ``whole=False`` leaves the window's out
    (None): a whole-trace report needs no step's path, one step's report only its own.
    """
    from traceprobe.graph.build import build
    from traceprobe.graph.path import walker
    from traceprobe.graph.replay import Plan, replay

    g = build(tl)
    if not len(g):
        return {"window": None, "steps": {}}
    rp = replay(g, Plan.of(g))
    lists = walker(g, rp)
    wanted = g.steps if steps is True else [] if steps is False else [
        r for r in g.steps if r[0] in set(steps)]
    path = _windowed(g, rp, lists, window) if whole else None
    _walk_steps(g, rp, [(s, e) for _, s, e in wanted], lists)
    return {"window": path, "steps": StepPaths(
        {n: _step_walk(g, rp, s, e, lists) for n, s, e in wanted})}


class StepPaths(Mapping[int, dict[str, Any]]):
    """Each step's ``critical_path`` object by step number, made when it is read (the walked
    pieces are kept, not the objects: a report of thousands of steps builds its steps'
    objects a block at a time, :class:`traceprobe.report.blocks.StepReports`)."""

    def __init__(self, walked: dict[int, tuple[list[Any], int, int, int]]) -> None:
        self._walked = walked

    def __getitem__(self, n: int) -> dict[str, Any]:
        from traceprobe.graph.path import summary

        pieces, lo, hi, shift = self._walked[n]
        return summary(pieces, lo, hi, shift)

    def __iter__(self) -> Iterator[int]:
        return iter(self._walked)

    def __len__(self) -> int:
        return len(self._walked)


def _windowed(g: Graph, rp: Replay, lists: Any, window: tuple[int, int] | None) -> dict[str, Any]:
    from traceprobe.graph.path import clip, summary, walk, window_end

    if window is None:
        return _whole(g, rp, lists)
    lo, hi = window
    if g.steps:
        first = min(g.steps, key=lambda r: int(g.start[r[1]]))
        last = max(g.steps, key=lambda r: int(g.start[r[2]]))
        if (int(g.start[first[1]]), int(g.start[last[2]])) == (lo, hi):
            return _steps_end_to_end(g, rp, lists) or _step(g, rp, first[1], last[2], lists)
    i, end = window_end(g, rp)
    pieces = [clip(p, lo, hi) for p in walk(g, rp, i, end, g.origin, lists)
              if p[1] > lo and p[0] < hi]
    if not pieces or pieces[0][0] > lo or pieces[-1][1] < hi:  # the path does not cover it
        return _whole(g, rp, lists) if (lo, hi) == (g.origin, end) else None  # type: ignore[return-value]
    return summary(pieces, lo, hi)


def whole_path(tl: Timeline) -> list[tuple[int, int, str, str]]:
    """The whole trace's critical path as (start ns, end ns, category, name) pieces."""
    from traceprobe.graph.build import build
    from traceprobe.graph.path import walk, window_end
    from traceprobe.graph.replay import Plan, replay

    g = build(tl)
    if not len(g):
        return []
    rp = replay(g, Plan.of(g))
    i, hi = window_end(g, rp)
    return [(s, e, k, n) for s, e, k, n, _ in walk(g, rp, i, hi, g.origin)]


def whatif(tl: Timeline, scenarios: Sequence[str], step: int | str | None = "all",
           baseline: Sequence[str] = ()) -> WhatIf:
    """Replay ``tl`` unchanged and under ``scenarios`` (composed in order).

    ``step``: ``"all"`` (every ProfilerStep; the whole trace when it has none), N, or None
    (the whole trace). ``baseline``: scenarios applied to both sides, the base replay and
    the prediction (``["no-profiler"]``: both as if run unprofiled, so that the speedup is
    the change's alone); the base is then that replay, not the unchanged one.
    """
    from traceprobe.graph.build import build
    from traceprobe.graph.path import walker
    from traceprobe.graph.period import unmodelled
    from traceprobe.graph.replay import Plan, replay
    from traceprobe.graph.scenarios import parse, plan

    parsed = [parse(s, tl) for s in scenarios]
    under = [parse(s, tl) for s in baseline]
    g = build(tl)
    if not len(g):
        raise UsageError(f"{tl.source}: no runtime calls or GPU activity to replay")
    try:
        base = replay(g, plan(g, under) if under else Plan.of(g))
        p = plan(g, under + parsed)
        pred = replay(g, p)
    except GraphCycle as err:  # an inferred dependency contradicts the others
        raise TraceError(tl.source, f"cannot replay it: {err}",
                         "report it with the trace; `traceprobe analyze` still works") from None
    rows = g.steps
    if step not in (None, "all"):
        try:
            n = int(step)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise UsageError(f"step must be a ProfilerStep number or 'all', not {step!r}") from None
        rows = [r for r in g.steps if r[0] == n]
        if not rows:
            have = ", ".join(str(r[0]) for r in g.steps) or "none"
            raise UsageError(f"{tl.source}: no ProfilerStep#{n}; the trace has steps {have}")
    out: list[StepResult] = []
    host_set: list[int] = []  # steps whose predicted period the host sets
    lb, lp = walker(g, base), walker(g, pred)
    if step is None or not rows:
        whole_b, whole_p = _whole(g, base, lb), _whole(g, pred, lp)
        out.append(StepResult(None, (g.span_end - g.origin) / 1000, whole_b["length_us"],
                              whole_p["length_us"], whole_p, whole_b))
    else:
        _walk_steps(g, base, [(s, e) for _, s, e in rows], lb)
        _walk_steps(g, pred, [(s, e) for _, s, e in rows], lp)
        for n, s, e in rows:
            cb, cp = _step(g, base, s, e, lb), _step(g, pred, s, e, lp)
            measured = (int(g.start[e]) - int(g.start[s])) / 1000
            hb, gb = _facts(g, base, s, e, lb)[:2]
            hp, gp = _facts(g, pred, s, e, lp)[:2]
            why = unmodelled(cb, gb > hb)
            if hp >= gp:
                host_set.append(n)
            out.append(StepResult(n, measured, cb["length_us"], cp["length_us"], cp, cb,
                                  max(hb, gb) / 1000, max(hp, gp) / 1000, gb > hb,
                                  not why, why, hb / 1000, gb / 1000))
    notes = list(p.notes)
    if host_set and _estimated(tl, [*under, *parsed]):
        notes.append(HOST_SET_NOTE.format(steps=_steps_text(host_set)))
    return WhatIf(tl.source, tuple(s.text for s in parsed), tuple(out), tuple(notes),
                  tuple(s.text for s in under))


HOST_SET_NOTE = (
    "no-profiler: the host sets the predicted period of {steps}; the profiler's cost inside "
    "events (such as CUPTI's work in each runtime call), which no interval between events "
    "shows, stays in it, so the loop run unprofiled may be faster than predicted "
    "(docs/WHATIF.md, \"The profiler's cost measured on micro-loops\"); record the loop with "
    "`traceprobe profile --host-steps 10` to store its unprofiled host time in the trace, and "
    "the cost is calibrated on it")


def _estimated(tl: Timeline, scenarios: Sequence[Any]) -> bool:
    """Whether a no-profiler among ``scenarios`` removes a cost not calibrated on a measured
    unprofiled host time (:mod:`.calibrate`): given as NS, or estimated from the events."""
    from traceprobe.graph.calibrate import measured_host_ms

    texts = [s.text for s in scenarios if s.text.startswith("no-profiler")]
    return any(t != "no-profiler" for t in texts) or (bool(texts) and
                                                      measured_host_ms(tl) is None)


def _steps_text(steps: list[int]) -> str:
    if len(steps) == 1:
        return f"step {steps[0]}"
    shown = ", ".join(str(n) for n in steps[:8]) + (", ..." if len(steps) > 8 else "")
    return f"{len(steps)} steps ({shown})"


def _steps_end_to_end(g: Graph, rp: Replay, lists: Any) -> dict[str, Any] | None:
    """The profiled steps' window as its steps' paths end to end (each walked by its own
    rule, :func:`_step`), the time between two steps the step thread's host account; None
    when steps overlap."""
    from traceprobe.graph.path import HOST_PIECE, merge, resolve, summary

    rows = sorted(g.steps, key=lambda r: int(rp.start[r[1]]))
    if any(int(rp.start[a[2]]) > int(rp.start[b[1]]) for a, b in zip(rows, rows[1:],
                                                                     strict=False)):
        return None
    _walk_steps(g, rp, [(s, e) for _, s, e in rows], lists)
    between = resolve([(int(rp.start[a[2]]), int(rp.start[b[1]]), HOST_PIECE,
                        str(int(g.lane[b[1]]))) for a, b in zip(rows, rows[1:], strict=False)],
                      g.accounts)  # the step thread's time between two steps
    pieces: list[Any] = []
    for k, (_, s, e) in enumerate(rows):
        if k:
            pieces.append(between[k - 1])
        pieces += _step_pieces(g, rp, s, e, lists)
    return summary(merge(pieces), int(rp.start[rows[0][1]]), int(rp.start[rows[-1][2]]))


def _step(g: Graph, rp: Replay, s: int, e: int, lists: Any) -> dict[str, Any]:
    from traceprobe.graph.path import summary

    return summary(*_step_walk(g, rp, s, e, lists))


def _step_walk(g: Graph, rp: Replay, s: int, e: int, lists: Any
               ) -> tuple[list[Any], int, int, int]:
    """(pieces, start, end, shift) of the step with markers ``s``..``e``: what its
    ``critical_path`` object is made of (:func:`traceprobe.graph.path.summary`)."""
    lo, hi = int(rp.start[s]), int(rp.start[e])
    shift = int(g.start[s]) - lo  # replayed times onto the measured clock, at the step's start
    pieces = _step_pieces(g, rp, s, e, lists)
    lists.steps.pop((s, e), None)  # read for the last time (the window's path came first)
    return pieces, lo, hi, shift


def _step_pieces(g: Graph, rp: Replay, s: int, e: int, lists: Any) -> list[Any]:
    """The path of the step with markers ``s``..``e`` (:func:`_walk_steps`), walked once."""
    if (s, e) not in lists.steps:
        _walk_steps(g, rp, [(s, e)], lists)
    got: list[Any] = lists.steps[s, e]
    return got


def _facts(g: Graph, rp: Replay, s: int, e: int, lists: Any) -> tuple[int, int, int]:
    """(host span, GPU span, the GPU op at the end marker) of a step, made for every step of
    the graph (and this one) at once, on first use."""
    from traceprobe.graph.period import gpu_end_nodes, periods

    if lists.facts is None or (s, e) not in lists.facts:
        rows = sorted({(int(a), int(b)) for _, a, b in g.steps} | {(s, e)})
        ends = gpu_end_nodes(g, rp, [int(rp.start[b]) for _, b in rows], [b for _, b in rows])
        lists.facts = {r: (h, gp, n) for r, (h, gp), n in zip(rows, periods(g, rp, rows), ends,
                                                              strict=True)}
    got: tuple[int, int, int] = lists.facts[s, e]
    return got


STEP_BLOCK = 4  # steps walked together, their host pieces cut in one pass (4: a low peak)


def _walk_steps(g: Graph, rp: Replay, rows: Sequence[tuple[int, int]], lists: Any) -> None:
    """The path of each step ``(s, e)`` of ``rows`` (markers) into ``lists.steps``, walked
    back from its end marker; when the GPU's work is at least :data:`GPU_NEAR` of the step's
    host span (it sets the period, :mod:`.period`, or nearly: the host ran ahead of it, or
    just kept it fed), from the GPU op still running at the end marker instead (the last to
    end before it if none runs), staying on the GPU, so that the path follows what bounds
    the step — unless that path is more idle than the host's by over :data:`GPU_IDLE_SLACK` of
    the step (the GPU waited, on what the graph does not see: then it did not bound the step;
    a GPU path with a few short gaps, such as the backlog of kernels launched before the
    recording began, still bounds it). :data:`STEP_BLOCK` steps at a
    time, their walks' host pieces resolved together (one numpy pass per thread)."""
    from traceprobe.graph.path import merge, resolve, trace_back

    todo = [r for r in dict.fromkeys(rows) if r not in lists.steps]
    for at in range(0, len(todo), STEP_BLOCK):
        block = todo[at : at + STEP_BLOCK]
        flat: list[Any] = []
        cuts: list[list[int]] = []  # per step: where its walks start and end in ``flat``
        for s, e in block:
            lo, hi = int(rp.start[s]), int(rp.start[e])
            host, gpu, gpu_end = _facts(g, rp, s, e, lists)
            walks = [trace_back(g, rp, e, hi, lo, lists)]
            if gpu >= GPU_NEAR * host:
                walks.append(trace_back(g, rp, gpu_end, hi, lo, lists, gpu_first=True))
            cuts.append([len(flat)])
            for w in walks:
                flat += w
                cuts[-1].append(len(flat))
        done = resolve(flat, lists.accounts)
        for (s, e), c in zip(block, cuts, strict=True):
            on_host = done[c[0] : c[1]]
            if len(c) == 2:
                lists.steps[s, e] = merge(on_host)
                continue
            on_gpu = done[c[1] : c[2]]
            # a GPU that waited (on what the graph does not see) does not bound it
            lists.steps[s, e] = merge(on_gpu if _gpu_bounds(on_gpu, on_host, int(rp.start[e])
                                                            - int(rp.start[s])) else on_host)


def _gpu_bounds(on_gpu: list[Any], on_host: list[Any], length: int) -> bool:
    """Whether a GPU-near step's path is its GPU walk rather than its host walk: when it is
    no more idle; or when it is GPU work for at least :data:`GPU_NEAR` of the step (the GPU
    was saturated along it), at least :data:`GPU_IDLE_SLACK` of the step more than the host
    walk shows, for at most that much more idle (short gaps, such as those between kernels
    launched before the recording began, whose launches the trace lacks, do not hand a
    saturated GPU's step to the host; a GPU that also waited for launches does not take a
    busy host's step)."""
    gpu, host = _shares(on_gpu), _shares(on_host)
    if gpu["idle"] <= host["idle"]:
        return True
    slack = GPU_IDLE_SLACK * length
    return (gpu["gpu"] >= GPU_NEAR * length and gpu["gpu"] - host["gpu"] >= slack
            and gpu["idle"] - host["idle"] <= slack)


def _shares(pieces: list[Any]) -> dict[str, int]:
    from traceprobe.graph.path import GPU_CATEGORIES, parts

    out = {"idle": 0, "gpu": 0}
    for p in pieces:
        for k, v in parts(p):
            if k == "idle":
                out["idle"] += v
            elif k in GPU_CATEGORIES:
                out["gpu"] += v
    return out


def _whole(g: Graph, rp: Replay, lists: Any) -> dict[str, Any]:
    from traceprobe.graph.path import summary, walk, window_end

    i, hi = window_end(g, rp)
    return summary(walk(g, rp, i, hi, g.origin, lists), g.origin, hi)
