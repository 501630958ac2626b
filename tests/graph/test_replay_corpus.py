"""The unchanged replay reproduces every measured step of every committed trace (within 2%),
and analyze's report carries the critical path in the shape the HTML timeline reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from traceprobe.graph import whatif
from traceprobe.graph.path import CATEGORIES
from traceprobe.load import load
from traceprobe.report import analyze

REPO = Path(__file__).resolve().parents[2]
TRACES = sorted(p for p in (REPO / "sample_traces").rglob("*.pt.trace.json.gz"))
BENCH = REPO / "bench" / "transformer-h200.pt.trace.json.gz"


def _check_replay(path: Path) -> None:
    tl = load(path)
    res = whatif(tl, [])
    steps = tl.steps.drop_duplicates("step")
    assert len(res.windows) == max(len(steps), 1)
    measured = dict(zip(steps["step"], (steps["end"] - steps["start"]) / 1000, strict=True))
    for w in res.windows:
        if w.step is not None:  # against the trace itself, not the replay's own figure
            assert w.measured_us == pytest.approx(measured[w.step])
        assert w.replayed_us == pytest.approx(w.measured_us, rel=0.02), (path.name, w.step)
        assert w.predicted_us == w.replayed_us  # no scenario: the prediction is the replay


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(REPO / "sample_traces")))
def test_replay_reproduces_each_step(path):
    _check_replay(path)


def test_replay_reproduces_the_bench_trace():
    if not BENCH.exists():
        pytest.skip("bench trace absent")
    _check_replay(BENCH)


def test_report_critical_path_shape():
    path = next(p for p in TRACES if "h200x2/scheduled" in str(p))
    rep = analyze(load(path), step="all").to_dict()
    for window in [rep] + rep["steps"]:
        cp = window["critical_path"]
        assert set(cp) >= {"length_us", "breakdown", "segments"}
        assert set(cp["breakdown"]) == set(CATEGORIES)
        assert cp["length_us"] == pytest.approx(window["span_us"], rel=1e-9)
        segs = cp["segments"]
        lo, hi = window["window"]["start_us"], window["window"]["end_us"]
        assert segs[0]["start_us"] == pytest.approx(lo) and segs[-1]["end_us"] == pytest.approx(hi)
        for s in segs:
            assert set(s) == {"start_us", "end_us", "kind", "name"}
            assert s["kind"] in CATEGORIES and s["start_us"] < s["end_us"]
        for a, b in zip(segs, segs[1:], strict=False):
            assert a["end_us"] == pytest.approx(b["start_us"])
        # kernels on the path are kernels of the trace, at their measured times
        kernels = [s for s in segs if s["kind"] == "kernel"]
        assert kernels and all(s["name"] for s in kernels)


@pytest.mark.parametrize("path", TRACES[::3], ids=lambda p: p.parent.name)
def test_fixed_point_shortcut_is_the_replay(path, monkeypatch):
    """The unchanged replay skips its loop when the measured times satisfy every equation;
    the loop itself gives the same times and the same binding constraints."""
    import numpy as np

    import traceprobe.graph.replay as rp
    from traceprobe.graph.build import build

    g = build(load(path))
    fast = rp.replay(g, rp.Plan.of(g))
    monkeypatch.setattr(rp, "_measured_fixed_point", lambda *a: None)
    slow = rp.replay(g, rp.Plan.of(g))
    for k in ("start", "end", "bind", "ebind"):
        assert np.array_equal(getattr(fast, k), getattr(slow, k)), k
    assert np.array_equal(slow.start, g.start) and np.array_equal(slow.end, g.end)
