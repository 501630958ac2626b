"""The profiler's cost calibrated on a measured unprofiled host time
(traceprobe/graph/calibrate.py; docs/FIGURES.md, "The profiler's own cost"): by hand on a
tiny trace, on the real loops that carry the measurement, and the loader's reading of it."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest
from tiny import Trace, nested

from traceprobe.graph import HOST_SET_NOTE, whatif
from traceprobe.graph.build import build
from traceprobe.graph.calibrate import MAX_NS, calibrate, host_span_ns, measured_host_ms
from traceprobe.graph.overhead import profiler_cost
from traceprobe.load import from_events, load

REPO = Path(__file__).resolve().parents[2]
THIRD = REPO / "sample_traces" / "h200" / "real-loops-3"


def _nested(groups: int) -> Trace:
    """``groups`` times: linear (b+2 .. b+8.5) > addmm (b+4 .. b+8) > cudaLaunchKernel
    (b+6 .. b+7) and its 1 µs kernel, b = 10 µs x group; one step 0 .. 10 x groups - 0.5.

    The host's gaps between launch calls: the first 6 µs (from the step's start; the step,
    linear, addmm and the call start in it: 4 events), then 24 of 9 µs (previous call's end
    b-3 to b+6; 3 events each), then the 2.5 µs tail to the step's end (none). NS per event
    comes off each gap, and what the gap cannot hold off its call's own 1 µs (never below 0),
    so the step's host span is 249.5 - min(7, 4 NS) - 24 min(10, 3 NS) µs: at NS = 1 µs,
    249.5 - 4 - 72 = 173.5 µs."""
    return nested(groups)


def _with_host(t: Trace, host_ms: object, **more: object) -> object:
    return from_events(t.events, "tiny.json", traceprobeUnprofiled={"host_ms": host_ms, **more})


@pytest.mark.parametrize(("ns", "span_us"), [(0, 249.5), (500, 211.5), (1000, 173.5),
                                              (2000, 98.5), (3000, 26.5), (4000, 2.5)])
def test_the_host_span_by_hand(ns: float, span_us: float) -> None:
    # 249.5 - min(7, 4 NS) - 24 min(10, 3 NS), NS in µs
    by_hand = 249.5 - min(7, 4 * ns / 1000) - 24 * min(10, 3 * ns / 1000)
    assert by_hand == span_us
    assert host_span_ns(build(_nested(25).timeline()), ns) == pytest.approx(span_us * 1000)


def test_the_calibration_finds_the_cost_by_hand() -> None:
    """GIVEN the tiny trace and a measured host time of 173.5 µs THEN NS = 1000 (the
    docstring's formula), and whatif's default no-profiler removes it: the same prediction
    as no-profiler:1000, and the note says it was calibrated."""
    tl = _with_host(_nested(25), 0.1735)
    cal = calibrate(build(tl), 0.1735)
    assert cal.ns == pytest.approx(1000, rel=1e-3) and not cal.capped
    assert (cal.profiled_ms, cal.reached_ms) == (pytest.approx(0.2495), pytest.approx(0.1735))
    default, given = whatif(tl, ["no-profiler"]), whatif(tl, ["no-profiler:1000"])
    assert default.windows[0].predicted_us == pytest.approx(given.windows[0].predicted_us,
                                                            abs=0.1)
    (note,) = default.notes
    assert "calibrated on the recorder's unprofiled host time, 0.173 ms per step" in note
    # without the measurement the same trace gets the estimate (3000 ns, by hand in
    # tests/graph/test_profiler_cost.py)
    (est,) = whatif(_nested(25).timeline(), ["no-profiler"]).notes
    assert "at 3000 ns each, estimated from the trace" in est


def test_a_host_no_slower_than_measured_removes_nothing_and_one_too_fast_is_capped() -> None:
    g = build(_nested(25).timeline())
    none = calibrate(g, 0.3)  # above the profiled 249.5 µs
    assert (none.ns, none.capped) == (0.0, False)
    floor = host_span_ns(g, MAX_NS)  # the step's tail and the calls stay
    capped = calibrate(g, floor / 2e6)
    assert capped.capped and capped.ns == MAX_NS and "capped" in capped.describe()


@pytest.mark.parametrize("bad", ["12", -1.0, 0, True, None, float("nan"), float("inf"), [3]])
def test_the_loader_keeps_only_a_positive_finite_host_time(bad: object) -> None:
    tl = _with_host(_nested(2), bad, step_ms=4.5)
    assert measured_host_ms(tl) is None
    assert tl.meta.extra["unprofiled"] == {"step_ms": 4.5}
    assert "unprofiled" not in _nested(2).timeline().meta.extra


def _raw_host_ms(path: Path) -> float:
    return float(json.loads(gzip.decompress(path.read_bytes()))["traceprobeUnprofiled"]
                 ["host_ms"])


@pytest.mark.skipif(not THIRD.is_dir(), reason="the third real-loop recording is not here")
@pytest.mark.parametrize(("variant", "above"), [("mlp-eager", True), ("resnet-fp32", True),
                                               ("transformer-fp32", False)])
def test_the_real_loops_calibrate_on_their_measurement(variant: str, above: bool) -> None:
    """The trace's measurement (read from the raw JSON) is timing.json's; at the calibrated
    NS the replayed host span, GPU instant, is that time; the NS is above the events'
    estimate on the loops the host bounds (what the estimate misses there) and below it on
    the GPU-bound transformer (whose host the estimate would have made too fast: neither is
    a constant); whatif's default uses it."""
    path = next((THIRD / variant).glob("*.pt.trace.json*"))
    timing = json.loads((THIRD / variant / "timing.json").read_text())
    assert _raw_host_ms(path) == timing["host_ms_per_step_median"]
    assert timing["host_ms_per_step_median"] == statistics.median(timing["host_ms_per_step"])
    tl = load(path)
    g = build(tl)
    cal = calibrate(g, measured_host_ms(tl))
    assert host_span_ns(g, cal.ns) == pytest.approx(_raw_host_ms(path) * 1e6, rel=2e-4)
    assert host_span_ns(g, 0.9 * cal.ns) > _raw_host_ms(path) * 1e6  # the crossing, not a floor
    assert (cal.ns > profiler_cost(tl).ns) is above
    res = whatif(tl, ["no-profiler"], step="all")
    given = whatif(tl, [f"no-profiler:{cal.ns!r}"], step="all")
    assert [w.predicted_us for w in res.windows] == pytest.approx(
        [w.predicted_us for w in given.windows], abs=0.01)
    assert not any(n.startswith(HOST_SET_NOTE[:40]) for n in res.notes)
