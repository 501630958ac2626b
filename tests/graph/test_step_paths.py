"""critical_paths' steps (traceprobe.graph.StepPaths): each step's critical_path object made
when it is read, the same as the objects made at once (the code it replaced), and held as
walked pieces, far smaller than the objects."""

from __future__ import annotations

import copy
import tracemalloc

from tracebuild import TraceBuilder
from traceprobe.graph import StepPaths, _step, _walk_steps, critical_paths
from traceprobe.graph.build import build
from traceprobe.graph.path import walker
from traceprobe.graph.replay import Plan, replay
from traceprobe.load import load


def _steps_trace(tmp_path, n: int):  # type: ignore[no-untyped-def]
    t = TraceBuilder()
    for i in range(n):
        at = i * 100.0
        t.step(i, ts=at, dur=100)
        t.op("aten::mm", ts=at + 1, dur=8)
        c = t.runtime("cudaLaunchKernel", ts=at + 2, dur=5)["args"]["correlation"]
        t.kernel("gemm", ts=at + 10, dur=50 + i % 7, correlation=c)
        t.op("aten::add", ts=at + 40, dur=30)
    return load(t.write(tmp_path / "steps.json"))


def test_step_paths_are_the_objects_made_at_once(tmp_path) -> None:
    tl = _steps_trace(tmp_path, 40)
    lazy = critical_paths(tl)["steps"]
    assert isinstance(lazy, StepPaths) and len(lazy) == 40
    # the replaced code: every step's object made at once, from a fresh walk
    g = build(tl)
    rp = replay(g, Plan.of(g))
    lists = walker(g, rp)
    _walk_steps(g, rp, [(s, e) for _, s, e in g.steps], lists)
    eager = {n: _step(g, rp, s, e, lists) for n, s, e in g.steps}
    assert sorted(lazy) == sorted(eager)
    for n in eager:
        assert lazy[n] == eager[n]
        assert lazy.get(n) == eager[n]
    assert lazy[3] is not lazy[3]  # made on each read, not kept
    assert lazy.get(10_000) is None


def test_step_paths_hold_far_less_than_their_objects(tmp_path) -> None:
    tl = _steps_trace(tmp_path, 2000)
    paths = critical_paths(tl)["steps"]

    def cost(make):  # type: ignore[no-untyped-def]
        tracemalloc.start()
        got = make()
        used = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return got, used

    made, objects = cost(lambda: {n: paths[n] for n in paths})  # what was held before
    kept, pieces = cost(lambda: copy.deepcopy(paths._walked))  # what is held now
    assert len(made) == len(kept) == 2000
    assert objects > 3 * pieces, (objects, pieces)
