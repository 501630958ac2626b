"""Phases of a step: forward, backward, optimizer, DataLoader, other — from the trace's markers.

    ns = phase_ns(ev, ev_s, ev_e, s, e)   # (steps, 5) int64, columns in PHASES order

Reads only the host account (:class:`~.regions.HostEvents`: the trace process's classified
events, every thread) and the steps' windows; the times are those of one axis (the caller's:
:mod:`.steps` puts every analysis window on one :class:`~.axis.Axis`). Every instant of a step
``[s, e)`` goes to the first phase below that holds then, so the phases sum to the step:

1. ``dataloader`` — inside a DataLoader range (class ``dataloader``);
2. ``backward`` — inside a *backward pass*: autograd engine work,
   ``autograd::engine::evaluate_function: *`` events on any thread of the process, joined into
   one pass from the first such event to the last while no other CPU op starts between them
   outside the engine's events (the caller's thread is blocked in ``backward()`` meanwhile);
3. ``optimizer`` (zero_grad) — inside an ``Optimizer.zero_grad*`` range;
4. ``forward`` — the time leading up to each backward pass: from the end of the step's previous
   pass (or the step's start) to the pass's start; so an LBFGS closure's forward, inside
   ``Optimizer.step``, is forward, and its backward is backward;
5. ``optimizer`` — inside any other ``Optimizer.*`` range (``Optimizer.step#SGD.step``);
6. ``other`` — the rest: after the last pass outside the optimizer, a step without any
   backward pass (an inference loop: no forward either, as nothing marks one).

Limits: an optimizer's own work between two closure calls (LBFGS's line search) is counted as
forward (it leads up to the next backward); a trace without autograd events (a CUDA graph
replay, an inference loop) has no forward or backward.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceprobe.intervals import EMPTY, Spans, measure_within, spans, union
from traceprobe.metrics.regions import HostEvents

PHASES = ("forward", "backward", "optimizer", "dataloader", "other")
ENGINE_PREFIX = "autograd::engine::evaluate_function"
ZERO_GRAD_PREFIX = "Optimizer.zero_grad"


def phase_ns(ev: HostEvents, ev_s: np.ndarray, ev_e: np.ndarray, s: np.ndarray,
             e: np.ndarray) -> np.ndarray:
    """Per step ``i`` (``[s[i], e[i])``, sorted by start, disjoint): ns of each phase, in
    :data:`PHASES` order (see the module docstring). ``ev_s``/``ev_e``: the events' times on
    the steps' axis."""
    n = len(s)
    out = np.zeros((n, len(PHASES)), np.int64)
    if n == 0:
        return out
    engine, zero_grad = _starting_with(ev.name, ENGINE_PREFIX, ZERO_GRAD_PREFIX)
    optimizer, dataloader = ev.cls == "optimizer", ev.cls == "dataloader"  # each class once
    zero_grad &= optimizer
    loader = spans(ev_s[dataloader], ev_e[dataloader])
    passes = _passes(ev_s[engine], ev_e[engine], ev_s[(ev.cls == "cpu_op") & ~engine])
    backward = passes
    forward = _leading_up(passes, s, e)
    layers = [
        ("dataloader", loader),
        ("backward", backward),
        ("optimizer", spans(ev_s[zero_grad], ev_e[zero_grad])),
        ("forward", forward),
        ("optimizer", spans(ev_s[optimizer], ev_e[optimizer])),
    ]
    covered, before = EMPTY, np.zeros(n, np.int64)
    col = {p: i for i, p in enumerate(PHASES)}
    for name, layer in layers:  # what each layer adds to those before it, per step
        covered = union(covered, layer)
        now = measure_within(covered, s, e)
        out[:, col[name]] += now - before
        before = now
    out[:, col["other"]] = (e - s) - before
    return out


def _starting_with(names: np.ndarray, *prefixes: str) -> list[np.ndarray]:
    """Per prefix, per name (an object array): whether the name's text starts with it,
    tested once per distinct name. (``names.astype(str)`` made a fixed-width copy as wide as
    the longest name, 60 MB on the benchmark trace, and ``np.char`` tested every row.)"""
    if names.size == 0:
        return [np.zeros(0, bool) for _ in prefixes]
    codes, uniques = pd.factorize(names)
    texts = [str(u) for u in uniques]
    # code -1 (a missing name) reads the appended False
    return [np.array([t.startswith(p) for t in texts] + [False], bool)[codes] for p in prefixes]


def _passes(es: np.ndarray, ee: np.ndarray, other_starts: np.ndarray) -> Spans:
    """Backward passes: the engine's events joined from first to last while no other CPU op
    starts between one event's end (all before it, the running max) and the next's start,
    outside every engine event."""
    if es.size == 0:
        return EMPTY
    order = np.argsort(es, kind="stable")
    es, ee = es[order], ee[order]
    run_end = np.maximum.accumulate(ee)
    engine = spans(es, ee)
    foreign = np.sort(other_starts)
    if foreign.size:  # an op nested in an engine event is the engine's own work
        j = np.searchsorted(engine.starts, foreign, side="right") - 1
        inside = (j >= 0) & (foreign < engine.ends[np.maximum(j, 0)])
        foreign = foreign[~inside]
    new = np.ones(es.size, bool)
    if es.size > 1:
        lo, hi = run_end[:-1], es[1:]
        between = (np.searchsorted(foreign, hi, side="left")
                   - np.searchsorted(foreign, lo, side="right"))
        new[1:] = between > 0
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, es.size - 1)
    return spans(es[first], run_end[last])


def _leading_up(passes: Spans, s: np.ndarray, e: np.ndarray) -> Spans:
    """Forward: for each pass, from the end of its step's previous pass (or the step's
    start) to the pass's start; passes that start outside every step lead nowhere."""
    if passes.empty:
        return EMPTY
    step = np.searchsorted(s, passes.starts, side="right") - 1
    inside = (step >= 0) & (passes.starts < e[np.maximum(step, 0)])
    ps, pe, st = passes.starts[inside], passes.ends[inside], step[inside]
    if ps.size == 0:
        return EMPTY
    prev = np.empty_like(ps)
    prev[0] = s[st[0]]
    if ps.size > 1:
        same = st[1:] == st[:-1]
        prev[1:] = np.where(same, pe[:-1], s[st[1:]])
    return spans(np.maximum(prev, s[st]), ps)
